/* reference/op-qlinearmatmul.c — QLinearMatMul's exact `spec` computation and the
 * per-element explanation (docs/semantics.md §2.3): the exact accumulator, then
 * sa*sb*acc/sy requantized on exact GMP rationals, rounded half to even, then the zero point
 * added and the result saturated. The profiles' forms are reference/profiles.c.
 */
#include <gmp.h>

#include "reference/ref_internal.h"

/* rq->value = sa*sb*acc/sy exactly; scales are doubles holding their exact values. */
static void scaled_value(qmm_ref_exact *rq, double sa, double sb, double sy, int64_t acc)
{
    qmm_ref_exact_tmp_i64(rq, acc);
    mpq_set(rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sa);
    mpq_mul(rq->value, rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sb);
    mpq_mul(rq->value, rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sy);
    mpq_div(rq->value, rq->value, rq->tmp);
}

static void q8_range(int32_t dtype, int64_t *qmin, int64_t *qmax)
{
    if (dtype == QMM_DTYPE_INT8) {
        *qmin = -128;
        *qmax = 127;
    } else {
        *qmin = 0;
        *qmax = 255;
    }
}

/* Everything about one QLinearMatMul element; rq->value is left holding sa*sb*acc/sy. */
typedef struct qlm_result {
    int64_t acc, expected, wrapped;
} qlm_result;

static void qlm_element(const qmm_qlinearmatmul *c, const qmm_geometry *g,
                        const qmm_param_map *maps, qmm_ref_exact *rq, int64_t bi, int64_t i,
                        int64_t j, qlm_result *out)
{
    int64_t za = qmm_ref_zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
    int64_t zb = qmm_ref_zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
    int64_t zy = qmm_ref_zero_point(&c->y_zero_point, &maps[QMM_MAP_Y_ZERO_POINT], g, bi, i, j);
    double sa = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_A_SCALE], g, bi, i, j));
    double sb = qmm_scale_decode(c->b_scale.dtype, c->b_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_B_SCALE], g, bi, i, j));
    double sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_Y_SCALE], g, bi, i, j));
    int64_t qmin, qmax;
    q8_range(c->y.dtype, &qmin, &qmax);

    out->acc = qmm_ref_matmul_acc(&c->a, &c->b, g, bi, i, j, za, zb);
    out->wrapped = 0;
    if (!qmm_ref_fits_int32(out->acc)) {
        scaled_value(rq, sa, sb, sy, qmm_wrap_int32(out->acc));
        out->wrapped = qmm_ref_round_saturate(rq, zy, qmin, qmax);
    }
    scaled_value(rq, sa, sb, sy, out->acc);
    out->expected = qmm_ref_round_saturate(rq, zy, qmin, qmax);
    if (qmm_ref_fits_int32(out->acc))
        out->wrapped = out->expected;
}

static qmm_status_code qlm_compute(qmm_call *call, qmm_tensor *yw, int *any_overflow,
                                   qmm_status *st)
{
    qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    qmm_plan plan;
    QMM_TRY(qmm_validate_qlinearmatmul(c, &plan, st));
    const qmm_geometry *g = &plan.g;
    const qmm_param_map *maps = plan.maps;
    if (yw && qmm_ref_check_wrapped(yw, &c->y, "y", st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    qmm_ref_exact rq;
    qmm_ref_exact_init(&rq);
    int overflow = 0;
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                qlm_result r;
                qlm_element(c, g, maps, &rq, bi, i, j, &r);
                int64_t idx = (bi * g->m + i) * g->n + j;
                qmm_ref_store_q8(&c->y, idx, r.expected);
                if (yw)
                    qmm_ref_store_q8(yw, idx, r.wrapped);
                overflow |= !qmm_ref_fits_int32(r.acc);
            }
    qmm_ref_exact_clear(&rq);
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_status_ok(st);
}

static qmm_status_code qlm_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    qmm_plan plan;
    int64_t bi, i, j;
    QMM_TRY(qmm_validate_qlinearmatmul(c, &plan, st));
    QMM_TRY(qmm_ref_element_at(&plan.g, index, &bi, &i, &j, st));
    qmm_ref_exact rq;
    qmm_ref_exact_init(&rq);
    qlm_result r;
    qlm_element(c, &plan.g, plan.maps, &rq, bi, i, j, &r);
    qmm_ref_decimal(rq.value, e->scaled, sizeof e->scaled);
    qmm_ref_exact_clear(&rq);
    e->acc = r.acc;
    e->expected = r.expected;
    e->wrapped = r.wrapped;
    e->overflow = !qmm_ref_fits_int32(r.acc);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_qlinearmatmul = {QMM_OP_QLINEARMATMUL, qlm_compute, qlm_explain};
