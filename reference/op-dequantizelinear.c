/* reference/op-dequantizelinear.c — DequantizeLinear (ai.onnx, opset 21 on), docs/semantics.md
 * §9: y = RN_y((x - x_zero_point) * x_scale), one rounding of the exact product into y's type
 * (the schema: "the output type also determines the precision of the multiplication"). Judged
 * exactly: the accepted value is that one (a NaN: any NaN).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reference/ref_internal.h"

/* Element `index`'s value; q is scratch. */
static double dql_value(const qmm_dequantizelinear *c, const qmm_dql_plan *p, int64_t index,
                        mpq_t q, mpz_t x, mpz_t s)
{
    int64_t off = qmm_dql_param_offset(p, index);
    double xv = qmm_dql_x_value(&c->x, index);
    double zp = qmm_tensor_present(&c->x_zero_point) ? qmm_dql_x_value(&c->x_zero_point, off)
                                                     : 0.0;
    double sv = qmm_scale_decode(c->x_scale.dtype, c->x_scale.data, off);
    double d = xv - zp; /* exact: integers below 2^33, or a float8 value minus 0 */
    if (!isfinite(d) || !isfinite(sv)) {
        double v = d * sv; /* IEEE: inf, NaN (inf * 0) */
        return isnan(v) ? NAN : v;
    }
    qmm_ref_mpz_scaled(x, d, 150);
    qmm_ref_mpz_scaled(s, sv, 150);
    mpz_mul(mpq_numref(q), x, s);
    mpz_set_ui(mpq_denref(q), 1);
    mpz_mul_2exp(mpq_denref(q), mpq_denref(q), 300);
    mpq_canonicalize(q);
    return qmm_ref_round_q(q, qmm_ref_fmt_of(p->y_dtype));
}

typedef struct dql_scratch {
    mpq_t q;
    mpz_t x, s;
} dql_scratch;

static void scratch_init(dql_scratch *w)
{
    mpq_init(w->q);
    mpz_init(w->x);
    mpz_init(w->s);
}

static void scratch_clear(dql_scratch *w)
{
    mpq_clear(w->q);
    mpz_clear(w->x);
    mpz_clear(w->s);
}

/* Visits the part's elements: y written (out NULL) or their accepted values. */
static qmm_status_code dql_walk(qmm_dequantizelinear *c, const qmm_ref_part *part,
                                qmm_ref_accept *out, qmm_status *st)
{
    qmm_dql_plan p;
    QMM_TRY(qmm_validate_dequantizelinear(c, &p, st));
    qmm_ref_walk wk;
    QMM_TRY(qmm_ref_walk_start(&wk, 1, 1, p.numel, part, 0, st));
    dql_scratch w;
    scratch_init(&w);
    for (; qmm_ref_walk_more(&wk); qmm_ref_walk_next(&wk)) {
        double v = dql_value(c, &p, wk.idx, w.q, w.x, w.s);
        int64_t slot = qmm_ref_walk_slot(&wk, wk.idx);
        if (out) {
            out[slot].n = 1;
            qmm_ref_interval_value(&out[slot].iv[0], v, "exact");
        } else {
            qmm_ref_store_float(&c->y, slot, v);
        }
    }
    scratch_clear(&w);
    return qmm_ref_walk_end(&wk, st);
}

static qmm_status_code dql_accept(const qmm_call *call, const qmm_ref_part *part,
                                  qmm_ref_accept *out, qmm_status *st)
{
    return dql_walk((qmm_dequantizelinear *)&call->u.dequantizelinear, part, out, st);
}

static qmm_status_code dql_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_dequantizelinear *c = &call->u.dequantizelinear;
    qmm_dql_plan p;
    QMM_TRY(qmm_validate_dequantizelinear(c, &p, st));
    if (index < 0 || index >= p.numel)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "element %lld is outside y",
                              (long long)index);
    dql_scratch w;
    scratch_init(&w);
    double v = dql_value(c, &p, index, w.q, w.x, w.s);
    e->expected = e->wrapped = qmm_ref_float_bits(p.y_dtype, v);
    if (isfinite(v) && isfinite(mpq_get_d(w.q)))
        qmm_ref_decimal(w.q, e->scaled, sizeof e->scaled);
    else
        snprintf(e->scaled, sizeof e->scaled, "%g", v);
    scratch_clear(&w);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_dequantizelinear = {QMM_OP_DEQUANTIZELINEAR, NULL,
                                                dql_explain, 0, dql_accept};
