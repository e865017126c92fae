/* reference/qordered.c — QOrderedMatMul (com.microsoft, docs/semantics.md §4,
 * docs/qorderedmatmul.md): the exact `spec` computation, the `ort-fp32` form and the
 * per-element explanation. The layouts and the input rules are ops/qordered_layout.c.
 *
 * Like compute.c the accumulator is an exact int64 and requantization is done on exact GMP
 * rationals; the ort-fp32 form rounds every step to float32 through
 * qmm_round_to_scale_type(), so it depends neither on the FP environment nor on the
 * compiler's float evaluation (this file is compiled with -ffp-contract=off as well).
 */
#include <gmp.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

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

static int fits_int32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

static void store_i8(const qmm_tensor *y, int64_t index, int64_t v)
{
    unsigned char *p = y->data;
    p[index] = (unsigned char)(v & 0xff);
}

/* ---- spec: exact rationals ---------------------------------------------------------- */

typedef struct exact {
    mpq_t value, tmp;
    mpz_t z, q, r;
} exact;

static void exact_init(exact *x)
{
    mpq_inits(x->value, x->tmp, NULL);
    mpz_inits(x->z, x->q, x->r, NULL);
}

static void exact_clear(exact *x)
{
    mpq_clears(x->value, x->tmp, NULL);
    mpz_clears(x->z, x->q, x->r, NULL);
}

/* x->tmp = v for an int64 v, exactly (mpz_set_si takes a long, which may be 32 bits). */
static void tmp_set_i64(exact *x, int64_t v)
{
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    mpz_import(x->z, 1, 1, sizeof mag, 0, 0, &mag);
    if (v < 0)
        mpz_neg(x->z, x->z);
    mpq_set_z(x->tmp, x->z);
}

/* x->value = sA*sB_j*acc/sY + bias_j + sC*C/sY, exactly: every float is the binary fraction
 * it encodes (mpq_set_d is exact). */
static void exact_value(exact *x, const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi,
                        int64_t i, int64_t j, int64_t acc)
{
    double sa = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_a.data, 0);
    double sy = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_y.data, 0);
    tmp_set_i64(x, acc);
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
        tmp_set_i64(x, c_value(c, g, bi, i, j));
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
static int64_t exact_round(exact *x)
{
    /* floor division: value = q + r/den with 0 <= r < den */
    mpz_fdiv_qr(x->q, x->r, mpq_numref(x->value), mpq_denref(x->value));
    mpz_mul_2exp(x->r, x->r, 1);
    int cmp = mpz_cmp(x->r, mpq_denref(x->value));
    if (cmp > 0 || (cmp == 0 && mpz_odd_p(x->q)))
        mpz_add_ui(x->q, x->q, 1);
    if (mpz_cmp_si(x->q, -128) < 0)
        return -128;
    if (mpz_cmp_si(x->q, 127) > 0)
        return 127;
    return (int64_t)mpz_get_si(x->q);
}

typedef struct qom_result {
    int64_t acc, expected, wrapped;
} qom_result;

/* Leaves x->value holding the exact value from the exact accumulator. */
static void spec_element(exact *x, const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi,
                         int64_t i, int64_t j, qom_result *out)
{
    out->acc = exact_acc(c, g, bi, i, j);
    out->wrapped = 0;
    if (!fits_int32(out->acc)) {
        exact_value(x, c, g, bi, i, j, qmm_wrap_int32(out->acc));
        out->wrapped = exact_round(x);
    }
    exact_value(x, c, g, bi, i, j, out->acc);
    out->expected = exact_round(x);
    if (fits_int32(out->acc))
        out->wrapped = out->expected;
}

qmm_status_code qmm_ref_qom_compute(qmm_qorderedmatmul *c, qmm_tensor *yw, int *any_overflow,
                                    qmm_status *st)
{
    if (any_overflow)
        *any_overflow = 0;
    qom_geom g;
    QMM_TRY(qmm_validate_qorderedmatmul(c, &g, st));
    if (yw) {
        int same = yw->dtype == c->y.dtype && yw->rank == c->y.rank;
        for (int32_t d = 0; same && d < c->y.rank; d++)
            same = yw->dims[d] == c->y.dims[d];
        if (!same)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "y_wrapped: dtype and shape must equal Y's");
        if (qmm_tensor_numel(yw) > 0 && yw->data == NULL)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y_wrapped: data is NULL");
    }
    exact x;
    exact_init(&x);
    int overflow = 0;
    for (int64_t bi = 0; bi < g.batch; bi++)
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                qom_result r;
                spec_element(&x, c, &g, bi, i, j, &r);
                int64_t idx = y_offset(c, &g, bi, i, j);
                store_i8(&c->y, idx, r.expected);
                if (yw)
                    store_i8(yw, idx, r.wrapped);
                overflow |= !fits_int32(r.acc);
            }
    exact_clear(&x);
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_status_ok(st);
}

/* ---- ort-fp32: ONNX Runtime's cublasLt epilogue in float32 -------------------------- */

static double fl32(double v)
{
    return qmm_round_to_scale_type(QMM_DTYPE_FLOAT, v);
}

static qmm_status_code compute_ort_fp32(qmm_qorderedmatmul *c, const qom_geom *g,
                                        qmm_status *st)
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
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
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
                store_i8(&c->y, y_offset(c, g, bi, i, j), r);
            }
    return qmm_status_ok(st);
}

qmm_status_code qmm_ref_qom_compute_ort_fp32(qmm_qorderedmatmul *c, qmm_status *st)
{
    qom_geom g;
    QMM_TRY(qmm_validate_qorderedmatmul(c, &g, st));
    return compute_ort_fp32(c, &g, st);
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

qmm_status_code qmm_ref_qom_explain(const qmm_qorderedmatmul *c, int64_t index,
                                    qmm_ref_element *e, qmm_status *st)
{
    memset(e, 0, sizeof *e);
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
    exact x;
    exact_init(&x);
    qom_result r;
    spec_element(&x, c, &g, bi, i, j, &r);
    qmm_ref_decimal(x.value, e->scaled, sizeof e->scaled);
    exact_clear(&x);
    e->acc = r.acc;
    e->expected = r.expected;
    e->wrapped = r.wrapped;
    e->overflow = !fits_int32(r.acc);
    return qmm_status_ok(st);
}
