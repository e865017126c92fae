/* reference/compute.c — the reference's entry points over its operators (qmm_ref_compute,
 * qmm_ref_explain: each operator's file, found in the generated registry), and what the
 * operators' exact computations share: the exact accumulator of a row-major matmul, the zero
 * points through their maps, the checks on y_wrapped and on an element index, and the decimal
 * rendering of an exact rational (docs/semantics.md §2.3, §3).
 *
 * The accumulator is an exact int64: each term is at most 255*255 in magnitude, so it cannot
 * overflow before K reaches 2^47, and such an operand would not fit in any memory.
 */
#include <gmp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference/ref_internal.h"

const qmm_ref_op *qmm_ref_op_of(qmm_op_kind kind)
{
    for (const qmm_ref_op *const *op = qmm_ref_ops; *op; op++)
        if ((*op)->kind == kind)
            return *op;
    return NULL;
}

qmm_status_code qmm_ref_spec_part(qmm_call *call, const qmm_ref_part *part,
                                  qmm_tensor *y_wrapped, int *any_overflow, qmm_status *st)
{
    if (any_overflow)
        *any_overflow = 0;
    const qmm_ref_op *op = qmm_ref_op_of(call->op);
    if (!op)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "call: unknown operator %d",
                              (int)call->op);
    if (op->compute)
        return op->compute(call, part, y_wrapped, any_overflow, st);
    /* the accept walk, given no intervals, stores the spec's value itself; no accumulator
     * wraps, so y_wrapped is a copy */
    qmm_tensor *y = qmm_call_output(call);
    if (y_wrapped && qmm_ref_check_wrapped(y_wrapped, y, qmm_op_desc_of(call->op)->output_name,
                                           st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    QMM_TRY(op->accept(call, part, NULL, st));
    qmm_ref_copy_wrapped(y_wrapped, y, part);
    return QMM_OK;
}

qmm_status_code qmm_ref_compute(qmm_call *call, qmm_tensor *y_wrapped, int *any_overflow,
                                qmm_status *st)
{
    return qmm_ref_spec_part(call, NULL, y_wrapped, any_overflow, st);
}

int64_t qmm_ref_part_unit(const qmm_call *call)
{
    const qmm_ref_op *op = qmm_ref_op_of(call->op);
    const qmm_tensor *y = qmm_call_output_c(call);
    if (!op || !op->whole_matrices || !y || y->rank < 2)
        return 1;
    int64_t unit = y->dims[y->rank - 2] * y->dims[y->rank - 1];
    return unit > 0 ? unit : 1;
}

/* ---- walking the output ---- */

const volatile sig_atomic_t *qmm_ref_stop;

void qmm_ref_set_stop_flag(const volatile sig_atomic_t *flag)
{
    qmm_ref_stop = flag;
}

qmm_status_code qmm_ref_walk_start(qmm_ref_walk *w, int64_t batch, int64_t m, int64_t n,
                                   const qmm_ref_part *part, int whole_matrices, qmm_status *st)
{
    memset(w, 0, sizeof *w);
    w->m = m;
    w->n = n;
    int64_t total = batch * m * n; /* validated: fits int64 */
    w->end = total;
    if (!part)
        return QMM_OK;
    int64_t unit = whole_matrices && m * n > 0 ? m * n : 1;
    if (part->first < 0 || part->count < 0 || part->first > total ||
        part->count > total - part->first)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "part: elements [%" PRId64 ", +%" PRId64 ") are not within y (%"
                              PRId64 " elements)", part->first, part->count, total);
    if (part->first % unit != 0 ||
        (part->count % unit != 0 && part->first + part->count != total))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "part: elements [%" PRId64 ", +%" PRId64 ") are not whole "
                              "matrices of y (%" PRId64 " elements each)", part->first,
                              part->count, unit);
    w->first = w->idx = part->first;
    w->end = part->first + part->count;
    if (m > 0 && n > 0) {
        w->j = w->first % n;
        w->i = w->first / n % m;
        w->bi = w->first / n / m;
    }
    return QMM_OK;
}

qmm_status_code qmm_ref_walk_end(const qmm_ref_walk *w, qmm_status *st)
{
    if (w->stopped)
        return qmm_status_set(st, QMM_INTERNAL,
                              "interrupted: the computation stopped at element %" PRId64
                              " of %" PRId64, w->idx, w->end);
    return qmm_status_ok(st);
}

qmm_status_code qmm_ref_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                qmm_status *st)
{
    memset(e, 0, sizeof *e);
    const qmm_ref_op *op = qmm_ref_op_of(call->op);
    if (!op)
        return qmm_status_set(st, QMM_UNSUPPORTED, "%s: not explained by the reference",
                              qmm_op_name(call->op));
    return op->explain(call, index, e, st);
}

/* ---- shared by the exact computations ---- */

void qmm_ref_exact_init(qmm_ref_exact *x)
{
    mpq_inits(x->value, x->tmp, x->kept, NULL);
    mpz_inits(x->z, x->q, x->r, NULL);
}

void qmm_ref_exact_clear(qmm_ref_exact *x)
{
    mpq_clears(x->value, x->tmp, x->kept, NULL);
    mpz_clears(x->z, x->q, x->r, NULL);
}

void qmm_ref_exact_tmp_i64(qmm_ref_exact *x, int64_t v)
{
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    mpz_import(x->z, 1, 1, sizeof mag, 0, 0, &mag);
    if (v < 0)
        mpz_neg(x->z, x->z);
    mpq_set_z(x->tmp, x->z);
}

/* rq->value *= sa*sb/sy exactly; scales are doubles holding their exact values. */
void qmm_ref_scale_rational(qmm_ref_exact *rq, double sa, double sb, double sy)
{
    mpq_set_d(rq->tmp, sa);
    mpq_mul(rq->value, rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sb);
    mpq_mul(rq->value, rq->value, rq->tmp);
    mpq_set_d(rq->tmp, sy);
    mpq_div(rq->value, rq->value, rq->tmp);
}

/* rq->value = sa*sb*acc/sy exactly. */
void qmm_ref_scaled_value(qmm_ref_exact *rq, double sa, double sb, double sy, int64_t acc)
{
    qmm_ref_exact_tmp_i64(rq, acc);
    mpq_set(rq->value, rq->tmp);
    qmm_ref_scale_rational(rq, sa, sb, sy);
}

int64_t qmm_ref_round_saturate(qmm_ref_exact *x, int64_t zy, int64_t qmin, int64_t qmax)
{
    /* floor division: value = q + r/den with 0 <= r < den (den > 0 in canonical form) */
    mpz_fdiv_qr(x->q, x->r, mpq_numref(x->value), mpq_denref(x->value));
    mpz_mul_2exp(x->r, x->r, 1);
    int c = mpz_cmp(x->r, mpq_denref(x->value));
    if (c > 0 || (c == 0 && mpz_odd_p(x->q)))
        mpz_add_ui(x->q, x->q, 1);
    /* the rounded value may be astronomically large; saturate before leaving mpz */
    if (zy >= 0)
        mpz_add_ui(x->q, x->q, (unsigned long)zy);
    else
        mpz_sub_ui(x->q, x->q, (unsigned long)-zy);
    if (mpz_cmp_si(x->q, (long)qmin) < 0)
        return qmin;
    if (mpz_cmp_si(x->q, (long)qmax) > 0)
        return qmax;
    return (int64_t)mpz_get_si(x->q);
}

int64_t qmm_ref_zero_point(const qmm_tensor *zp, const qmm_param_map *map,
                           const qmm_geometry *g, int64_t bi, int64_t i, int64_t j)
{
    if (!qmm_tensor_present(zp))
        return 0;
    return qmm_load_q8(zp, qmm_param_offset(map, g, bi, i, j));
}

int64_t qmm_ref_matmul_acc(const qmm_tensor *a, const qmm_tensor *b, const qmm_geometry *g,
                           int64_t bi, int64_t i, int64_t j, int64_t za, int64_t zb)
{
    int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
    int64_t bo = qmm_geometry_b_offset(g, bi) + j;
    int64_t acc = 0;
    for (int64_t k = 0; k < g->k; k++)
        acc += (qmm_load_q8(a, ao + k) - za) * (qmm_load_q8(b, bo + k * g->n) - zb);
    return acc;
}

qmm_status_code qmm_ref_check_wrapped(const qmm_tensor *yw, const qmm_tensor *y,
                                      const char *y_name, qmm_status *st)
{
    int same = yw->dtype == y->dtype && yw->rank == y->rank;
    for (int32_t d = 0; same && d < y->rank; d++)
        same = yw->dims[d] == y->dims[d];
    if (!same)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "y_wrapped: dtype and shape must equal %s's", y_name);
    if (qmm_tensor_numel(y) > 0 && yw->data == NULL)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y_wrapped: data is NULL");
    return QMM_OK;
}

qmm_status_code qmm_ref_element_at(const qmm_geometry *g, int64_t index, int64_t *bi,
                                   int64_t *i, int64_t *j, qmm_status *st)
{
    int64_t count = g->batch * g->m * g->n;
    if (index < 0 || index >= count)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "index: %" PRId64 " is outside y (%" PRId64 " elements)", index,
                              count);
    /* y is row-major over (batch..., i, j); promoted 1-D dims have size 1 and do not change
     * the offsets. */
    *j = index % g->n;
    *i = (index / g->n) % g->m;
    *bi = index / g->n / g->m;
    return QMM_OK;
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
