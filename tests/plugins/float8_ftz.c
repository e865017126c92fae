/* tests/plugins/float8_ftz.c — a plugin that computes QLinearMatMul-21's float8 forms the
 * way a float pipeline on hardware with flush-to-zero would: dequantize to float32, a float32
 * dot product, one float32 multiplier sa·sb/sy, the zero point added in float32, and a float8
 * result below the smallest normal value flushed to a zero of its sign instead of kept as a
 * subnormal (docs/semantics.md §2.6 keeps them). Every other call goes to the reference.
 * test_edge.c's diff test must catch it on diff's float8 problems. */
#include <math.h>
#include <string.h>

#include "qmm/qmm.h"
#include "ops/qmm_ops.h"
#include "over_reference.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

typedef struct f32 {
    qmm_backend *ref;
} f32;

/* Element `i` of a uint8/int8/float8 tensor as a float (exact: every such value is one). */
static float value(const qmm_tensor *t, int64_t i)
{
    uint8_t code = ((const uint8_t *)t->data)[i];
    return qmm_is_float8(t->dtype) ? (float)qmm_float8_decode(t->dtype, code)
                                   : (float)qmm_load_q8(t, i);
}

static float scale(const qmm_tensor *s, const qmm_param_map *m, const qmm_geometry *g,
                   int64_t bi, int64_t i, int64_t j)
{
    return (float)qmm_scale_decode(s->dtype, s->data, qmm_param_offset(m, g, bi, i, j));
}

static qmm_status_code float8_in_float32(qmm_qlinearmatmul *c, const qmm_plan *plan,
                                         qmm_status *st)
{
    const qmm_geometry *g = &plan->g;
    const qmm_param_map *mp = plan->maps;
    unsigned char *y = c->y.data;
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                float za = value(&c->a_zero_point,
                                 qmm_param_offset(&mp[QMM_MAP_A_ZERO_POINT], g, bi, i, j));
                float zb = value(&c->b_zero_point,
                                 qmm_param_offset(&mp[QMM_MAP_B_ZERO_POINT], g, bi, i, j));
                float zy = value(&c->y_zero_point,
                                 qmm_param_offset(&mp[QMM_MAP_Y_ZERO_POINT], g, bi, i, j));
                float acc = 0.0f;
                int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
                int64_t bo = qmm_geometry_b_offset(g, bi) + j;
                for (int64_t k = 0; k < g->k; k++)
                    acc += (value(&c->a, ao + k) - za) * (value(&c->b, bo + k * g->n) - zb);
                float mult = scale(&c->a_scale, &mp[QMM_MAP_A_SCALE], g, bi, i, j) *
                             scale(&c->b_scale, &mp[QMM_MAP_B_SCALE], g, bi, i, j) /
                             scale(&c->y_scale, &mp[QMM_MAP_Y_SCALE], g, bi, i, j);
                float x = acc * mult + zy;
                int64_t o = (bi * g->m + i) * g->n + j;
                if (qmm_is_float8(c->y.dtype)) {
                    const qmm_float8_format *f = qmm_float8_format_of(c->y.dtype);
                    uint8_t q = qmm_float8_encode(c->y.dtype, (double)x);
                    if ((q & 0x7fu) >> f->mbits == 0) /* exponent field 0: a subnormal */
                        q = qmm_float8_signed(c->y.dtype, q & 0x80u, 0);
                    y[o] = q;
                } else {
                    float lo = c->y.dtype == QMM_DTYPE_INT8 ? -128.0f : 0.0f;
                    float q = nearbyintf(x - zy) + zy;
                    q = q < lo ? lo : q > lo + 255.0f ? lo + 255.0f : q;
                    y[o] = (unsigned char)((int)q & 0xff);
                }
            }
    return qmm_status_ok(st);
}

static qmm_status_code f_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const qmm_backend *ref = ((const f32 *)self->impl)->ref;
    return ref->query(ref, call, st);
}

static qmm_status_code f_call(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    qmm_plan plan;
    if (call->op == QMM_OP_QLINEARMATMUL &&
        qmm_qlinearmatmul_float8(&call->u.qlinearmatmul) &&
        qmm_validate_qlinearmatmul(&call->u.qlinearmatmul, &plan, st) == QMM_OK)
        return float8_in_float32(&call->u.qlinearmatmul, &plan, st);
    return qmm_backend_run(((const f32 *)self->impl)->ref, call, st);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("float8-ftz", harness_abi, st))
        return NULL;
    if (strcmp(options, "") != 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "float8-ftz: unknown option '%s'", options);
        return NULL;
    }
    qmm_backend *be = over_reference_table(harness_abi, "float8-ftz",
                                           "float8 QLinearMatMul in float32, subnormal results "
                                           "flushed",
                                           sizeof(f32), st);
    if (!be)
        return NULL;
    be->query = f_query;
    be->call = f_call;
    return be;
}
