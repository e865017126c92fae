/* reference/op-dynamicquantizematmul.c — DynamicQuantizeMatMul (com.microsoft),
 * docs/semantics.md §10: A quantized per tensor to uint8 as DynamicQuantizeLinear does (the
 * float steps below, each one IEEE float32 rounding), the exact integer product with B, then
 * the float epilogue (reference/accept.c). Judged exactly against the epilogue's set.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reference/ref_internal.h"

/* A's quantization: scale, zero point, and whether it is undetermined (nonfinite: 1 when A
 * holds a non-finite value, 2 when the scale underflows to 0). */
typedef struct dyn_quant {
    float scale;
    int64_t zp;
    int nonfinite;
} dyn_quant;

static dyn_quant dyn_quantize(const qmm_tensor *a)
{
    dyn_quant d = {1.0f, 0, 0};
    volatile float mn = 0.0f, mx = 0.0f;
    int64_t n = qmm_tensor_numel(a);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)qmm_scale_decode(QMM_DTYPE_FLOAT, a->data, i);
        if (!isfinite(v))
            d.nonfinite = 1;
        if (v < mn)
            mn = v;
        if (v > mx)
            mx = v;
    }
    if (d.nonfinite)
        return d;
    if (mx != mn) {
        volatile float range = mx - mn;
        d.scale = range / 255.0f;
        /* A range below 255 * 2^-150 gives a scale of 0: the quantization then divides by zero
         * (0/0 for the zero point), so the result is not determined; judged like a non-finite
         * A (inconclusive), never a code from a NaN cast to an integer */
        if (d.scale == 0.0f) {
            d.nonfinite = 2;
            return d;
        }
    }
    volatile float ratio = mn / d.scale;
    float zp = 0.0f - ratio;
    zp = zp < 0.0f ? 0.0f : zp > 255.0f ? 255.0f : zp;
    d.zp = (int64_t)qmm_round_half_even((double)zp);
    return d;
}

static int64_t dyn_code(const dyn_quant *d, const qmm_tensor *a, int64_t i)
{
    volatile float v = (float)qmm_scale_decode(QMM_DTYPE_FLOAT, a->data, i);
    volatile float r = v / d->scale;
    double q = qmm_round_half_even((double)r) + (double)d->zp;
    return q < 0 ? 0 : q > 255 ? 255 : (int64_t)q;
}

static qmm_ref_i2f_elem dqm_at(const qmm_dynamicquantizematmul *c, const qmm_i2f_plan *p,
                               const dyn_quant *d, int64_t bi, int64_t i, int64_t j)
{
    const qmm_geometry *g = &p->g;
    qmm_ref_i2f_elem e;
    int64_t zb = qmm_ref_i2f_b_side(&e, &c->b_zero_point, &c->b_scale, &c->bias,
                                    QMM_DTYPE_FLOAT, p->b_per_column ? j : 0, j);
    int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
    int64_t bo = qmm_geometry_b_offset(g, bi) + j;
    e.acc = 0;
    for (int64_t k = 0; k < g->k; k++)
        e.acc += (dyn_code(d, &c->a, ao + k) - d->zp) * (qmm_load_q8(&c->b, bo + k * g->n) - zb);
    e.sa = d->scale;
    return e;
}

static qmm_status_code dqm_walk(qmm_dynamicquantizematmul *c, const qmm_ref_part *part,
                                qmm_ref_accept *out, qmm_status *st)
{
    qmm_i2f_plan p;
    QMM_TRY(qmm_validate_dynamicquantizematmul(c, &p, st));
    dyn_quant d = dyn_quantize(&c->a);
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, p.g.batch, p.g.m, p.g.n, part, 0, st));
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        int64_t slot = qmm_ref_walk_slot(&w, w.idx);
        if (d.nonfinite) {
            if (out) {
                out[slot].n = 1;
                qmm_ref_interval_any(&out[slot].iv[0], d.nonfinite == 2
                                                           ? "A's dynamic scale underflows to 0"
                                                           : "non-finite A");
            } else {
                qmm_ref_store_float(&c->y, slot, NAN);
            }
            continue;
        }
        qmm_ref_i2f_elem e = dqm_at(c, &p, &d, w.bi, w.i, w.j);
        qmm_ref_i2f_put(out, &c->y, slot, &e);
    }
    return qmm_ref_walk_end(&w, st);
}

static qmm_status_code dqm_accept(const qmm_call *call, const qmm_ref_part *part,
                                  qmm_ref_accept *out, qmm_status *st)
{
    return dqm_walk((qmm_dynamicquantizematmul *)&call->u.dynamicquantizematmul, part, out, st);
}

static qmm_status_code dqm_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_dynamicquantizematmul *c = &call->u.dynamicquantizematmul;
    qmm_i2f_plan p;
    int64_t bi, i, j;
    QMM_TRY(qmm_validate_dynamicquantizematmul(c, &p, st));
    QMM_TRY(qmm_ref_element_at(&p.g, index, &bi, &i, &j, st));
    dyn_quant d = dyn_quantize(&c->a);
    if (d.nonfinite) {
        e->expected = e->wrapped = qmm_ref_float_bits(QMM_DTYPE_FLOAT, NAN);
        snprintf(e->scaled, sizeof e->scaled, "%s",
                 d.nonfinite == 2 ? "A's dynamic scale (max - min)/255 underflows to 0"
                                  : "A holds a non-finite value");
        return qmm_status_ok(st);
    }
    qmm_ref_i2f_elem el = dqm_at(c, &p, &d, bi, i, j);
    double v = qmm_ref_i2f_explain(e, &el, QMM_DTYPE_FLOAT);
    snprintf(e->scaled, sizeof e->scaled, "a_scale %.9g a_zero_point %lld; %.9g", d.scale,
             (long long)d.zp, v);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_dynamicquantizematmul = {QMM_OP_DYNAMICQUANTIZEMATMUL, NULL,
                                                     dqm_explain, 0, dqm_accept};
