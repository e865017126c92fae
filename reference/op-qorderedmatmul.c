/* reference/op-qorderedmatmul.c — QOrderedMatMul (com.microsoft, docs/semantics.md §4,
 * docs/qorderedmatmul.md): the exact `spec` computation, the `ort-fp32` form and the
 * per-element explanation. The layouts and the input rules are ops/qordered_layout.c.
 *
 * Like the other operators the accumulator is an exact int64 and requantization is done on exact GMP
 * rationals; the ort-fp32 form rounds every step to float32 through
 * qmm_round_to_scale_type(), so it depends neither on the FP environment nor on the
 * compiler's float evaluation (this file is compiled with -ffp-contract=off as well).
 */
#include <gmp.h>
#include <inttypes.h>
#include <math.h>

#include "reference/ref_internal.h"

/* The validation plan (ops/qmm_ops.h) under the short name the helpers here use. */
typedef qmm_qordered_plan qom_geom;

/* ---- element access ----------------------------------------------------------------- */

static int64_t a_offset(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                        int64_t k)
{
    return bi * g->m * g->k + qmm_order_offset(c->order_a, g->m, g->k, i, k);
}

/* B is logically [K,N]. In COL order it is the K x N matrix column-major; in the COL32
 * combination it is transposed first (an N x K matrix) and then laid out. */
static int64_t b_offset(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t k,
                        int64_t j)
{
    int64_t base = (g->b_batch == 1 ? 0 : bi) * g->k * g->n;
    if (c->order_b == QMM_ORDER_COL)
        return base + qmm_order_offset(QMM_ORDER_COL, g->k, g->n, k, j);
    return base + qmm_order_offset(c->order_b, g->n, g->k, j, k);
}

/* Y and C share order_Y (ORT lays C out as order_A, which equals order_Y in both allowed
 * combinations). */
static int64_t y_offset(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                        int64_t j)
{
    return bi * g->m * g->n + qmm_order_offset(c->order_y, g->m, g->n, i, j);
}

static int64_t c_value(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                       int64_t j)
{
    int64_t off = (g->c_batch == 1 ? 0 : bi) * g->m * g->n +
                  qmm_order_offset(c->order_y, g->m, g->n, i, j);
    return qmm_load_q8(&c->c, off);
}

static int64_t exact_acc(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                         int64_t j)
{
    int64_t acc = 0;
    for (int64_t k = 0; k < g->k; k++)
        acc += qmm_load_q8(&c->a, a_offset(c, g, bi, i, k)) *
               qmm_load_q8(&c->b, b_offset(c, g, bi, k, j));
    return acc;
}

static double scale_b_at(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t j)
{
    return qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_b.data, g->scalar_b ? 0 : j);
}

/* ---- spec: exact rationals ---------------------------------------------------------- */

/* x->value = sA*sB_j*acc/sY + bias_j + sC*C/sY, exactly: every float is the binary fraction
 * it encodes (mpq_set_d is exact). */
static void exact_value(qmm_ref_exact *x, const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi,
                        int64_t i, int64_t j, int64_t acc)
{
    double sa = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_a.data, 0);
    double sy = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_y.data, 0);
    qmm_ref_exact_tmp_i64(x, acc);
    mpq_set(x->value, x->tmp);
    mpq_set_d(x->tmp, sa);
    mpq_mul(x->value, x->value, x->tmp);
    mpq_set_d(x->tmp, scale_b_at(c, g, j));
    mpq_mul(x->value, x->value, x->tmp);
    if (qmm_tensor_present(&c->c)) {
        /* (sA*sB*acc + sC*C) / sY, with one division at the end */
        double sc = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_c.data, 0);
        mpq_t cv;
        mpq_init(cv);
        qmm_ref_exact_tmp_i64(x, c_value(c, g, bi, i, j));
        mpq_set(cv, x->tmp);
        mpq_set_d(x->tmp, sc);
        mpq_mul(cv, cv, x->tmp);
        mpq_add(x->value, x->value, cv);
        mpq_clear(cv);
    }
    mpq_set_d(x->tmp, sy);
    mpq_div(x->value, x->value, x->tmp);
    if (qmm_tensor_present(&c->bias)) {
        mpq_set_d(x->tmp, qmm_scale_decode(QMM_DTYPE_FLOAT, c->bias.data, j));
        mpq_add(x->value, x->value, x->tmp);
    }
}

/* sat_int8(RNE(x->value)). */
static int64_t exact_round(qmm_ref_exact *x)
{
    return qmm_ref_round_saturate(x, 0, -128, 127);
}

typedef struct qom_result {
    int64_t acc, expected, wrapped;
} qom_result;

/* Leaves x->value holding the exact value from the exact accumulator. */
static void spec_element(qmm_ref_exact *x, const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi,
                         int64_t i, int64_t j, qom_result *out)
{
    out->acc = exact_acc(c, g, bi, i, j);
    out->wrapped = 0;
    if (!qmm_ref_fits_int32(out->acc)) {
        exact_value(x, c, g, bi, i, j, qmm_wrap_int32(out->acc));
        out->wrapped = exact_round(x);
    }
    exact_value(x, c, g, bi, i, j, out->acc);
    out->expected = exact_round(x);
    if (qmm_ref_fits_int32(out->acc))
        out->wrapped = out->expected;
}

static qmm_status_code qom_compute(qmm_call *call, const qmm_ref_part *part, qmm_tensor *yw,
                                   int *any_overflow, qmm_status *st)
{
    qmm_qorderedmatmul *c = &call->u.qorderedmatmul;
    qom_geom g;
    QMM_TRY(qmm_validate_qorderedmatmul(c, &g, st));
    if (yw)
        QMM_TRY(qmm_ref_check_wrapped(yw, &c->y, "Y", st));
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g.batch, g.m, g.n, part, 1, st));
    qmm_ref_exact x;
    qmm_ref_exact_init(&x);
    int overflow = 0;
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        qom_result r;
        spec_element(&x, c, &g, w.bi, w.i, w.j, &r);
        int64_t idx = qmm_ref_walk_slot(&w, y_offset(c, &g, w.bi, w.i, w.j));
        qmm_ref_store_q8(&c->y, idx, r.expected);
        if (yw)
            qmm_ref_store_q8(yw, idx, r.wrapped);
        overflow |= !qmm_ref_fits_int32(r.acc);
    }
    qmm_ref_exact_clear(&x);
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_ref_walk_end(&w, st);
}

/* ---- ort-fp32: ONNX Runtime's cublasLt epilogue in float32 -------------------------- */

static double fl32(double v)
{
    return qmm_round_to_scale_type(QMM_DTYPE_FLOAT, v);
}

static qmm_status_code compute_ort_fp32(qmm_qorderedmatmul *c, const qom_geom *g,
                                        const qmm_ref_part *part, qmm_status *st)
{
    double sa = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_a.data, 0);
    double sy = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_y.data, 0);
    /* ORT: a scalar scale_B gives alpha = sA*sB/sY in float; a vector one is scaled
     * element-wise by float(double(sA)/sY) (cublasSscal). Division in double then rounding
     * to float equals the correctly rounded float quotient (53 >= 2*24 + 2). */
    double rescale = fl32(sa / sy);
    double beta = 0;
    if (qmm_tensor_present(&c->c))
        beta = fl32(qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_c.data, 0) / sy);
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 1, st));
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        int64_t bi = w.bi, i = w.i, j = w.j;
        double sb = scale_b_at(c, g, j);
        double alpha = g->scalar_b ? fl32(fl32(sa * sb) / sy) : fl32(sb * rescale);
        int32_t acc = qmm_wrap_int32(exact_acc(c, g, bi, i, j));
        double t = fl32(alpha * fl32((double)acc));
        if (qmm_tensor_present(&c->bias))
            t = fl32(t + qmm_scale_decode(QMM_DTYPE_FLOAT, c->bias.data, j));
        if (qmm_tensor_present(&c->c))
            t = fl32(t + fl32(beta * (double)c_value(c, g, bi, i, j)));
        int64_t r;
        if (isnan(t))
            r = 0; /* a saturating float->int8 conversion (cvt.sat) gives 0 for NaN */
        else if (t <= -128.0)
            r = -128;
        else if (t >= 127.0)
            r = 127;
        else
            r = (int64_t)qmm_round_half_even(t) /* nearbyintf: ties to even */;
        qmm_ref_store_q8(&c->y, qmm_ref_walk_slot(&w, y_offset(c, g, bi, i, j)), r);
    }
    return qmm_ref_walk_end(&w, st);
}

qmm_status_code qmm_ref_qom_compute_ort_fp32(qmm_qorderedmatmul *c, const qmm_ref_part *part,
                                             qmm_status *st)
{
    qom_geom g;
    QMM_TRY(qmm_validate_qorderedmatmul(c, &g, st));
    return compute_ort_fp32(c, &g, part, st);
}

/* ---- explanation -------------------------------------------------------------------- */

/* The (i, j) whose offset in an m x n matrix laid out in `order` is `want`. */
static int locate(int32_t order, int64_t m, int64_t n, int64_t want, int64_t *pi, int64_t *pj)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            if (qmm_order_offset(order, m, n, i, j) == want) {
                *pi = i;
                *pj = j;
                return 1;
            }
    return 0;
}

static qmm_status_code qom_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_qorderedmatmul *c = &call->u.qorderedmatmul;
    qom_geom g;
    QMM_TRY(qmm_validate_qorderedmatmul(c, &g, st));
    int64_t count = g.batch * g.m * g.n;
    if (index < 0 || index >= count)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "index: %" PRId64 " is outside Y (%" PRId64 " elements)", index,
                              count);
    /* `index` is a position in Y's buffer, which is laid out in order_Y: find the (i, j) it
     * holds. Validation made the layout a bijection, so the search always succeeds. */
    int64_t bi = index / (g.m * g.n), i = 0, j = 0;
    if (!locate(c->order_y, g.m, g.n, index % (g.m * g.n), &i, &j))
        return qmm_status_set(st, QMM_INTERNAL, "index: %" PRId64 " is no element of Y's layout",
                              index);
    qmm_ref_exact x;
    qmm_ref_exact_init(&x);
    qom_result r;
    spec_element(&x, c, &g, bi, i, j, &r);
    qmm_ref_decimal(x.value, e->scaled, sizeof e->scaled);
    qmm_ref_exact_clear(&x);
    e->acc = r.acc;
    e->expected = r.expected;
    e->wrapped = r.wrapped;
    e->overflow = !qmm_ref_fits_int32(r.acc);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_qorderedmatmul = {QMM_OP_QORDEREDMATMUL, qom_compute, qom_explain, 1,
                                              NULL};
