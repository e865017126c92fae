/* reference/op-matmul_integer_to_float.c — MatMulIntegerToFloat (com.microsoft),
 * docs/semantics.md §10: the exact integer product of A and B with their zero points, then the
 * float epilogue of reference/accept.c. Judged exactly against the epilogue's set (a float16
 * output: inconclusive, not modelled yet).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reference/ref_internal.h"

static qmm_ref_i2f_elem mif_at(const qmm_matmul_integer_to_float *c, const qmm_i2f_plan *p,
                               int64_t bi, int64_t i, int64_t j)
{
    qmm_ref_i2f_elem e;
    int32_t ft = c->a_scale.dtype;
    int64_t zb = qmm_ref_i2f_b_side(&e, &c->b_zero_point, &c->b_scale, &c->bias, ft,
                                    p->b_per_column ? j : 0, j);
    int64_t za = qmm_tensor_present(&c->a_zero_point) ? qmm_load_q8(&c->a_zero_point, 0) : 0;
    e.acc = qmm_ref_matmul_acc(&c->a, &c->b, &p->g, bi, i, j, za, zb);
    e.sa = qmm_scale_decode(ft, c->a_scale.data, 0);
    return e;
}

static qmm_status_code mif_walk(qmm_matmul_integer_to_float *c, const qmm_ref_part *part,
                                qmm_ref_accept *out, qmm_status *st)
{
    qmm_i2f_plan p;
    QMM_TRY(qmm_validate_matmul_integer_to_float(c, &p, st));
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, p.g.batch, p.g.m, p.g.n, part, 0, st));
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        int64_t slot = qmm_ref_walk_slot(&w, w.idx);
        qmm_ref_i2f_elem e = mif_at(c, &p, w.bi, w.i, w.j);
        qmm_ref_i2f_put(out, &c->y, slot, &e);
    }
    return qmm_ref_walk_end(&w, st);
}

static qmm_status_code mif_accept(const qmm_call *call, const qmm_ref_part *part,
                                  qmm_ref_accept *out, qmm_status *st)
{
    return mif_walk((qmm_matmul_integer_to_float *)&call->u.matmul_integer_to_float, part, out,
                    st);
}

static qmm_status_code mif_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_matmul_integer_to_float *c = &call->u.matmul_integer_to_float;
    qmm_i2f_plan p;
    int64_t bi, i, j;
    QMM_TRY(qmm_validate_matmul_integer_to_float(c, &p, st));
    QMM_TRY(qmm_ref_element_at(&p.g, index, &bi, &i, &j, st));
    qmm_ref_i2f_elem el = mif_at(c, &p, bi, i, j);
    double v = qmm_ref_i2f_explain(e, &el, c->y.dtype);
    snprintf(e->scaled, sizeof e->scaled, "%.9g", v);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_matmul_integer_to_float = {
    QMM_OP_MATMUL_INTEGER_TO_FLOAT, NULL, mif_explain, 0, mif_accept};
