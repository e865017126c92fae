/* reference/op-matmulinteger.c — MatMulInteger's exact computation and the per-element
 * explanation (docs/semantics.md §3): the exact accumulator, wrapped to int32. There is no
 * requantization, so the wrapped sum is the only result (y_wrapped equals y).
 */
#include "reference/ref_internal.h"

/* The exact accumulator of output element (bi, i, j). */
static int64_t mmi_acc(const qmm_matmulinteger *c, const qmm_plan *plan, int64_t bi, int64_t i,
                       int64_t j)
{
    const qmm_geometry *g = &plan->g;
    const qmm_param_map *maps = plan->maps;
    int64_t za = qmm_ref_zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
    int64_t zb = qmm_ref_zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
    return qmm_ref_matmul_acc(&c->a, &c->b, g, bi, i, j, za, zb);
}

static qmm_status_code mmi_compute(qmm_call *call, const qmm_ref_part *part, qmm_tensor *yw,
                                   int *any_overflow, qmm_status *st)
{
    qmm_matmulinteger *c = &call->u.matmulinteger;
    qmm_plan plan;
    QMM_TRY(qmm_validate_matmulinteger(c, &plan, st));
    const qmm_geometry *g = &plan.g;
    if (yw && qmm_ref_check_wrapped(yw, &c->y, "y", st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 0, st));
    int overflow = 0;
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        int64_t acc = mmi_acc(c, &plan, w.bi, w.i, w.j);
        int64_t idx = qmm_ref_walk_slot(&w, w.idx);
        qmm_store_i32(c->y.data, idx, qmm_wrap_int32(acc));
        if (yw)
            qmm_store_i32(yw->data, idx, qmm_wrap_int32(acc));
        overflow |= !qmm_ref_fits_int32(acc);
    }
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_ref_walk_end(&w, st);
}

static qmm_status_code mmi_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_matmulinteger *c = &call->u.matmulinteger;
    qmm_plan plan;
    int64_t bi, i, j;
    QMM_TRY(qmm_validate_matmulinteger(c, &plan, st));
    QMM_TRY(qmm_ref_element_at(&plan.g, index, &bi, &i, &j, st));
    e->acc = mmi_acc(c, &plan, bi, i, j);
    e->expected = qmm_wrap_int32(e->acc);
    e->wrapped = e->expected;
    e->overflow = !qmm_ref_fits_int32(e->acc);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_matmulinteger = {QMM_OP_MATMULINTEGER, mmi_compute, mmi_explain, 0,
                                             NULL};
