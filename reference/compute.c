/* reference/compute.c — the exact `spec` computation (docs/semantics.md §2.3, §3) and the
 * per-element explanation the harness prints.
 *
 * The accumulator is an exact int64: each term is at most 255*255 in magnitude, so it cannot
 * overflow before K reaches 2^47, and such an operand would not fit in any memory. The
 * requantization is done on exact GMP rationals.
 */
#include <gmp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference/ref_internal.h"

static void mpz_set_i64(mpz_t z, int64_t v)
{
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    mpz_import(z, 1, 1, sizeof mag, 0, 0, &mag);
    if (v < 0)
        mpz_neg(z, z);
}

static int fits_int32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

/* Scratch rationals for one requantization, reused across elements. */
typedef struct requant {
    mpq_t value, tmp;
    mpz_t q, r, twice;
} requant;

static void requant_init(requant *rq)
{
    mpq_inits(rq->value, rq->tmp, NULL);
    mpz_inits(rq->q, rq->r, rq->twice, NULL);
}

static void requant_clear(requant *rq)
{
    mpq_clears(rq->value, rq->tmp, NULL);
    mpz_clears(rq->q, rq->r, rq->twice, NULL);
}

/* rq->value = sa*sb*acc/sy exactly; scales are doubles holding their exact values. */
static void scaled_value(requant *rq, double sa, double sb, double sy, int64_t acc)
{
    mpz_set_i64(rq->q, acc);
    mpq_set_z(rq->value, rq->q);
    mpq_set_d(rq->tmp, sa);
    mpq_mul(rq->value, rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sb);
    mpq_mul(rq->value, rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sy);
    mpq_div(rq->value, rq->value, rq->tmp);
}

/* clamp(RNE(value) + zy, qmin, qmax): round first, then add the zero point (docs/semantics.md
 * §2.3). */
static int64_t round_and_saturate(requant *rq, int64_t zy, int64_t qmin, int64_t qmax)
{
    /* floor division: value = q + r/den with 0 <= r < den (den > 0 in canonical form) */
    mpz_fdiv_qr(rq->q, rq->r, mpq_numref(rq->value), mpq_denref(rq->value));
    mpz_mul_2exp(rq->twice, rq->r, 1);
    int c = mpz_cmp(rq->twice, mpq_denref(rq->value));
    if (c > 0 || (c == 0 && mpz_odd_p(rq->q)))
        mpz_add_ui(rq->q, rq->q, 1);
    /* the rounded value may be astronomically large; saturate before leaving mpz */
    if (zy >= 0)
        mpz_add_ui(rq->q, rq->q, (unsigned long)zy);
    else
        mpz_sub_ui(rq->q, rq->q, (unsigned long)-zy);
    if (mpz_cmp_si(rq->q, (long)qmin) < 0)
        return qmin;
    if (mpz_cmp_si(rq->q, (long)qmax) > 0)
        return qmax;
    return (int64_t)mpz_get_si(rq->q);
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

/* Zero point `name` at output element (bi, i, j); 0 for an absent optional one. */
static int64_t zero_point(const qmm_tensor *zp, const qmm_param_map *map, const qmm_geometry *g,
                          int64_t bi, int64_t i, int64_t j)
{
    if (!qmm_tensor_present(zp))
        return 0;
    return qmm_load_q8(zp, qmm_param_offset(map, g, bi, i, j));
}

static int64_t exact_acc(const qmm_tensor *a, const qmm_tensor *b, const qmm_geometry *g,
                         int64_t bi, int64_t i, int64_t j, int64_t za, int64_t zb)
{
    int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
    int64_t bo = qmm_geometry_b_offset(g, bi) + j;
    int64_t acc = 0;
    for (int64_t k = 0; k < g->k; k++)
        acc += (qmm_load_q8(a, ao + k) - za) * (qmm_load_q8(b, bo + k * g->n) - zb);
    return acc;
}

/* Everything about one QLinearMatMul element; rq->value is left holding sa*sb*acc/sy. */
typedef struct qlm_result {
    int64_t acc, expected, wrapped;
} qlm_result;

static void qlm_element(const qmm_qlinearmatmul *c, const qmm_geometry *g,
                        const qmm_param_map *maps, requant *rq, int64_t bi, int64_t i,
                        int64_t j, qlm_result *out)
{
    int64_t za = zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
    int64_t zb = zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
    int64_t zy = zero_point(&c->y_zero_point, &maps[QMM_MAP_Y_ZERO_POINT], g, bi, i, j);
    double sa = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_A_SCALE], g, bi, i, j));
    double sb = qmm_scale_decode(c->b_scale.dtype, c->b_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_B_SCALE], g, bi, i, j));
    double sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_Y_SCALE], g, bi, i, j));
    int64_t qmin, qmax;
    q8_range(c->y.dtype, &qmin, &qmax);

    out->acc = exact_acc(&c->a, &c->b, g, bi, i, j, za, zb);
    out->wrapped = 0;
    if (!fits_int32(out->acc)) {
        scaled_value(rq, sa, sb, sy, qmm_wrap_int32(out->acc));
        out->wrapped = round_and_saturate(rq, zy, qmin, qmax);
    }
    scaled_value(rq, sa, sb, sy, out->acc);
    out->expected = round_and_saturate(rq, zy, qmin, qmax);
    if (fits_int32(out->acc))
        out->wrapped = out->expected;
}

static void store_q8(const qmm_tensor *y, int64_t index, int64_t v)
{
    unsigned char *p = y->data;
    p[index] = (unsigned char)(v & 0xff);
}

static qmm_status_code check_wrapped_output(const qmm_tensor *yw, const qmm_tensor *y,
                                            qmm_status *st)
{
    int same = yw->dtype == y->dtype && yw->rank == y->rank;
    for (int32_t d = 0; same && d < y->rank; d++)
        same = yw->dims[d] == y->dims[d];
    if (!same)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "y_wrapped: dtype and shape must equal y's");
    if (qmm_tensor_numel(y) > 0 && yw->data == NULL)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y_wrapped: data is NULL");
    return QMM_OK;
}

static qmm_status_code compute_qlm(qmm_qlinearmatmul *c, qmm_tensor *yw, int *any_overflow,
                                   qmm_status *st)
{
    qmm_plan plan;
    qmm_status_code rc = qmm_validate_qlinearmatmul(c, &plan, st);
    if (rc != QMM_OK)
        return rc;
    const qmm_geometry *g = &plan.g;
    const qmm_param_map *maps = plan.maps;
    if (yw && check_wrapped_output(yw, &c->y, st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    requant rq;
    requant_init(&rq);
    int overflow = 0;
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                qlm_result r;
                qlm_element(c, g, maps, &rq, bi, i, j, &r);
                int64_t idx = (bi * g->m + i) * g->n + j;
                store_q8(&c->y, idx, r.expected);
                if (yw)
                    store_q8(yw, idx, r.wrapped);
                overflow |= !fits_int32(r.acc);
            }
    requant_clear(&rq);
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_status_ok(st);
}

static qmm_status_code compute_mmi(qmm_matmulinteger *c, qmm_tensor *yw, int *any_overflow,
                                   qmm_status *st)
{
    qmm_plan plan;
    qmm_status_code rc = qmm_validate_matmulinteger(c, &plan, st);
    if (rc != QMM_OK)
        return rc;
    const qmm_geometry *g = &plan.g;
    const qmm_param_map *maps = plan.maps;
    if (yw && check_wrapped_output(yw, &c->y, st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    int overflow = 0;
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                int64_t za = zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
                int64_t zb = zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
                int64_t acc = exact_acc(&c->a, &c->b, g, bi, i, j, za, zb);
                int64_t idx = (bi * g->m + i) * g->n + j;
                qmm_store_i32(c->y.data, idx, qmm_wrap_int32(acc));
                if (yw)
                    qmm_store_i32(yw->data, idx, qmm_wrap_int32(acc));
                overflow |= !fits_int32(acc);
            }
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_status_ok(st);
}

qmm_status_code qmm_ref_compute(qmm_call *call, qmm_tensor *y_wrapped, int *any_overflow,
                                qmm_status *st)
{
    if (any_overflow)
        *any_overflow = 0;
    switch (call->op) {
    case QMM_OP_QLINEARMATMUL:
        return compute_qlm(&call->u.qlinearmatmul, y_wrapped, any_overflow, st);
    case QMM_OP_MATMULINTEGER:
        return compute_mmi(&call->u.matmulinteger, y_wrapped, any_overflow, st);
    case QMM_OP_QORDEREDMATMUL:
        return qmm_ref_qom_compute(&call->u.qorderedmatmul, y_wrapped, any_overflow, st);
    case QMM_OP_NONE:
        break;
    }
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "call: unknown operator %d", (int)call->op);
}

/* ---- decimal rendering of an exact rational ---- */

#define QMM_REF_SIG_DIGITS 30

/* Decimal digits of the non-negative integer z, in a malloc'd string (NULL on failure). */
static char *mpz_decimal(const mpz_t z)
{
    char *s = malloc(mpz_sizeinbase(z, 10) + 2);
    if (s)
        mpz_get_str(s, 10, z);
    return s;
}

/* Is v's (canonical) denominator made of 2s and 5s only? Returns the number of fractional
 * digits its decimal expansion has, or -1 when it does not terminate. */
static long terminating_digits(const mpq_t v)
{
    mpz_t d, f;
    mpz_init_set(d, mpq_denref(v));
    mpz_init_set_ui(f, 2);
    long twos = (long)mpz_remove(d, d, f);
    mpz_set_ui(f, 5);
    long fives = (long)mpz_remove(d, d, f);
    int terminates = mpz_cmp_ui(d, 1) == 0;
    mpz_clears(d, f, NULL);
    return terminates ? (twos > fives ? twos : fives) : -1;
}

/* Splits |v| into integer digits and fractional digits. A terminating decimal is given in
 * full; otherwise the fraction stops after 30 significant digits (leading zeros of a value
 * below 1 do not count) and *truncated is set. Digits are cut, never rounded, so what is
 * shown is a true prefix of the exact expansion. Returns 0 on allocation failure. */
static int rational_digits(const mpq_t v, char **ints, char **frac, int *truncated)
{
    mpz_t q, r;
    mpz_inits(q, r, NULL);
    long nfrac = terminating_digits(v);
    *truncated = nfrac < 0;
    *frac = NULL;
    mpz_abs(q, mpq_numref(v));
    mpz_fdiv_qr(q, r, q, mpq_denref(v));
    *ints = mpz_decimal(q);
    int int_zero = mpz_sgn(q) == 0;
    size_t cap = nfrac >= 0 ? (size_t)nfrac + 1 : 4096;
    *frac = malloc(cap);
    if (!*ints || !*frac) {
        mpz_clears(q, r, NULL);
        return 0;
    }
    size_t len = 0;
    int significant = 0;
    /* long division, one digit at a time: slow but plainly exact */
    while (mpz_sgn(r) != 0 && len + 1 < cap) {
        if (nfrac < 0 && significant == QMM_REF_SIG_DIGITS)
            break;
        mpz_mul_ui(r, r, 10);
        mpz_fdiv_qr(q, r, r, mpq_denref(v));
        unsigned long digit = mpz_get_ui(q);
        (*frac)[len++] = (char)('0' + digit);
        if (digit != 0 || !int_zero || significant > 0)
            significant++;
    }
    (*frac)[len] = '\0';
    mpz_clears(q, r, NULL);
    return 1;
}

/* Writes v as a decimal into out[n]: "3.5", "-12", "0.333...". When the fixed form does not
 * fit, a truncated scientific form is written instead ("1.2345...e+136"). */
static void rational_to_decimal(const mpq_t v, char *out, size_t n)
{
    char *ints = NULL, *frac = NULL;
    int truncated = 0;
    const char *sign = mpq_sgn(v) < 0 ? "-" : "";
    if (!rational_digits(v, &ints, &frac, &truncated)) {
        snprintf(out, n, "(out of memory)");
        free(ints);
        free(frac);
        return;
    }
    size_t fixed = strlen(sign) + strlen(ints) + 1 + strlen(frac) + 3;
    if (fixed < n) {
        snprintf(out, n, "%s%s%s%s%s", sign, ints, frac[0] ? "." : "", frac,
                 truncated ? "..." : "");
    } else {
        /* significant digits and the exponent of the first one */
        int int_zero = strcmp(ints, "0") == 0;
        const char *sig;
        long exp10;
        char *all = malloc(strlen(ints) + strlen(frac) + 1);
        if (!all) {
            snprintf(out, n, "(out of memory)");
            free(ints);
            free(frac);
            return;
        }
        if (int_zero) {
            size_t lead = strspn(frac, "0");
            exp10 = -(long)lead - 1;
            strcpy(all, frac + lead);
        } else {
            exp10 = (long)strlen(ints) - 1;
            strcpy(all, ints);
            strcat(all, frac);
        }
        sig = all;
        size_t siglen = strlen(sig);
        size_t shown = siglen < QMM_REF_SIG_DIGITS ? siglen : QMM_REF_SIG_DIGITS;
        /* drop trailing zeros of an exact tail so "1.000e+200" reads "1e+200" */
        int cut = truncated || siglen > shown;
        if (!cut)
            while (shown > 1 && sig[shown - 1] == '0')
                shown--;
        snprintf(out, n, "%s%c%s%.*s%se%+ld", sign, sig[0], shown > 1 ? "." : "",
                 (int)(shown - 1), sig + 1, cut ? "..." : "", exp10);
        free(all);
    }
    free(ints);
    free(frac);
}

void qmm_ref_decimal(mpq_srcptr v, char *out, size_t n)
{
    rational_to_decimal(v, out, n);
}

qmm_status_code qmm_ref_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                qmm_status *st)
{
    memset(e, 0, sizeof *e);
    if (call->op == QMM_OP_QORDEREDMATMUL)
        return qmm_ref_qom_explain(&call->u.qorderedmatmul, index, e, st);
    qmm_plan plan;
    qmm_status_code rc;
    if (call->op == QMM_OP_QLINEARMATMUL)
        rc = qmm_validate_qlinearmatmul(&call->u.qlinearmatmul, &plan, st);
    else if (call->op == QMM_OP_MATMULINTEGER)
        rc = qmm_validate_matmulinteger(&call->u.matmulinteger, &plan, st);
    else
        return qmm_status_set(st, QMM_UNSUPPORTED, "%s: not explained by the reference",
                              qmm_op_name(call->op));
    if (rc != QMM_OK)
        return rc;
    const qmm_geometry *g = &plan.g;
    const qmm_param_map *maps = plan.maps;
    int64_t count = g->batch * g->m * g->n;
    if (index < 0 || index >= count)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "index: %" PRId64 " is outside y (%" PRId64 " elements)", index,
                              count);
    /* y is row-major over (batch..., i, j); promoted 1-D dims have size 1 and do not change
     * the offsets. */
    int64_t j = index % g->n, i = (index / g->n) % g->m, bi = index / g->n / g->m;
    if (call->op == QMM_OP_QLINEARMATMUL) {
        requant rq;
        requant_init(&rq);
        qlm_result r;
        qlm_element(&call->u.qlinearmatmul, g, maps, &rq, bi, i, j, &r);
        rational_to_decimal(rq.value, e->scaled, sizeof e->scaled);
        requant_clear(&rq);
        e->acc = r.acc;
        e->expected = r.expected;
        e->wrapped = r.wrapped;
    } else {
        const qmm_matmulinteger *c = &call->u.matmulinteger;
        int64_t za = zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
        int64_t zb = zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
        e->acc = exact_acc(&c->a, &c->b, g, bi, i, j, za, zb);
        e->expected = qmm_wrap_int32(e->acc);
        e->wrapped = e->expected;
    }
    e->overflow = !fits_int32(e->acc);
    return qmm_status_ok(st);
}
