/* reference/accept.c — the operators whose float output is judged by accepted values rather
 * than bit for bit (docs/semantics.md §8.4): rounding an exact rational once to a float type,
 * the error bound of a summation whose order the implementation chooses, the intervals it
 * gives, and the judgement of one answer against them.
 *
 * Every quantity here is exact (GMP) until it is rounded into y's type for the interval's
 * ends; r and e are doubles only for reports.
 */
#include <gmp.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "reference/ref_internal.h"

qmm_ref_fmt qmm_ref_fmt_of(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_FLOAT16: return (qmm_ref_fmt){11, -14, 15};
    case QMM_DTYPE_BFLOAT16: return (qmm_ref_fmt){8, -126, 127};
    default: return (qmm_ref_fmt){24, -126, 127};
    }
}

static double max_finite(qmm_ref_fmt f)
{
    return ldexp(ldexp(1.0, f.p) - 1.0, f.emax - f.p + 1);
}

/* floor(log2(a)) of a positive rational. */
static long floor_log2(mpq_srcptr a)
{
    long e = (long)mpz_sizeinbase(mpq_numref(a), 2) - (long)mpz_sizeinbase(mpq_denref(a), 2);
    /* 2^(e-1) < a < 2^(e+1): a >= 2^e decides */
    mpz_t l, r;
    mpz_init(l);
    mpz_init(r);
    if (e >= 0) {
        mpz_set(l, mpq_numref(a));
        mpz_mul_2exp(r, mpq_denref(a), (mp_bitcnt_t)e);
    } else {
        mpz_mul_2exp(l, mpq_numref(a), (mp_bitcnt_t)-e);
        mpz_set(r, mpq_denref(a));
    }
    if (mpz_cmp(l, r) < 0)
        e--;
    mpz_clear(l);
    mpz_clear(r);
    return e;
}

double qmm_ref_round_q(mpq_srcptr v, qmm_ref_fmt f)
{
    return qmm_ref_round_q_dir(v, f, 0);
}

double qmm_ref_round_q_dir(mpq_srcptr v, qmm_ref_fmt f, int dir)
{
    int sign = mpq_sgn(v);
    if (sign == 0)
        return 0.0;
    mpq_t a;
    mpq_init(a);
    mpq_abs(a, v);
    long e = floor_log2(a);
    if (e > f.emax + 1)
        e = f.emax + 1; /* far beyond the range: overflows below whatever the quantum */
    if (e < f.emin)
        e = f.emin; /* subnormal: the least normal exponent's quantum */
    long qe = e - (f.p - 1);
    /* m = a / 2^qe = num / den', rounded to an integer, ties to even */
    mpz_t num, den, q, r;
    mpz_init(num);
    mpz_init(den);
    mpz_init(q);
    mpz_init(r);
    if (qe < 0) {
        mpz_mul_2exp(num, mpq_numref(a), (mp_bitcnt_t)-qe);
        mpz_set(den, mpq_denref(a));
    } else {
        mpz_set(num, mpq_numref(a));
        mpz_mul_2exp(den, mpq_denref(a), (mp_bitcnt_t)qe);
    }
    mpz_fdiv_qr(q, r, num, den);
    /* dir: towards +inf (1) or -inf (-1) on the signed value, i.e. on |v| away from or
     * towards zero by the sign */
    int away = dir == 0 ? 0 : (dir > 0) == (sign > 0);
    if (dir != 0) {
        if (away && mpz_sgn(r) != 0)
            mpz_add_ui(q, q, 1);
    } else {
        mpz_mul_2exp(r, r, 1);
        int c = mpz_cmp(r, den);
        if (c > 0 || (c == 0 && mpz_odd_p(q)))
            mpz_add_ui(q, q, 1);
    }
    double m = mpz_get_d(q); /* q <= 2^p: exact */
    double out;
    /* largest finite: (2^p - 1) * 2^(emax - p + 1) */
    if (mpz_sgn(q) != 0 && qe + (long)mpz_sizeinbase(q, 2) - 1 > f.emax)
        /* directed towards zero stops at the largest finite value */
        out = dir != 0 && !away ? max_finite(f) : INFINITY;
    else
        out = ldexp(m, (int)qe);
    mpz_clear(num);
    mpz_clear(den);
    mpz_clear(q);
    mpz_clear(r);
    mpq_clear(a);
    return sign < 0 ? -out : out;
}

void qmm_ref_mpz_scaled(mpz_t z, double x, int sh)
{
    int e;
    double m = frexp(x, &e); /* x = m * 2^e, |m| in [0.5, 1), at most 53 bits */
    mpz_set_d(z, ldexp(m, 53));
    long shift = (long)e - 53 + sh; /* x * 2^sh = (m * 2^53) * 2^shift */
    if (shift >= 0)
        mpz_mul_2exp(z, z, (mp_bitcnt_t)shift);
    else
        mpz_tdiv_q_2exp(z, z, (mp_bitcnt_t)-shift); /* exact by the contract */
}

void qmm_ref_interval_value(qmm_ref_interval *iv, double v, const char *model)
{
    memset(iv, 0, sizeof *iv);
    iv->lo = iv->hi = iv->r = v;
    iv->model = model;
}

void qmm_ref_interval_any(qmm_ref_interval *iv, const char *model)
{
    memset(iv, 0, sizeof *iv);
    iv->lo = -INFINITY;
    iv->hi = INFINITY;
    iv->r = NAN;
    iv->e = INFINITY;
    iv->inconclusive = 1;
    iv->model = model;
}

void qmm_ref_interval_bound(qmm_ref_interval *iv, const mpz_t r, const mpz_t s, int sh,
                            int64_t n, int64_t n_under, qmm_ref_fmt acc, qmm_ref_fmt y,
                            const char *model)
{
    memset(iv, 0, sizeof *iv);
    iv->model = model;
    mpq_t R, E, t;
    mpq_init(R);
    mpq_init(E);
    mpq_init(t);
    mpz_set(mpq_numref(R), r);
    mpz_set_ui(mpq_denref(R), 1);
    mpz_mul_2exp(mpq_denref(R), mpq_denref(R), (mp_bitcnt_t)sh);
    mpq_canonicalize(R);
    iv->r = mpq_get_d(R);
    /* gamma_n = n u / (1 - n u) = n / (2^p - n) */
    mpz_t two_p;
    mpz_init(two_p);
    mpz_setbit(two_p, (mp_bitcnt_t)acc.p);
    mpz_t nz;
    mpz_init(nz);
    mpz_set_d(nz, (double)n);
    /* n u >= 1/2: n >= 2^(p-1) */
    int useless = mpz_sizeinbase(nz, 2) >= (size_t)acc.p;
    if (!useless) {
        /* E = n S / (2^p - n) ... */
        mpz_mul(mpq_numref(E), s, nz);
        mpz_sub(mpq_denref(E), two_p, nz);
        mpz_mul_2exp(mpq_denref(E), mpq_denref(E), (mp_bitcnt_t)sh);
        mpq_canonicalize(E);
        /* ... + 2 n_under eta, eta = 2^(emin - p) */
        mpz_set_d(mpq_numref(t), (double)(2 * n_under));
        mpz_set_ui(mpq_denref(t), 1);
        mpz_mul_2exp(mpq_denref(t), mpq_denref(t), (mp_bitcnt_t)(acc.p - acc.emin));
        mpq_canonicalize(t);
        mpq_add(E, E, t);
        /* no partial sum overflows while (1 + gamma) S + E < the largest finite value: the
         * partial sums are bounded by (1 + gamma) S plus their underflow errors */
        mpq_t lim;
        mpq_init(lim);
        mpz_set(mpq_numref(lim), s);
        mpz_set_ui(mpq_denref(lim), 1);
        mpz_mul_2exp(mpq_denref(lim), mpq_denref(lim), (mp_bitcnt_t)sh);
        mpq_canonicalize(lim);
        mpq_add(lim, lim, E);
        mpq_add(lim, lim, E); /* S + gamma S + (E >= gamma S + underflow) */
        mpq_set_d(t, max_finite(acc));
        useless = mpq_cmp(lim, t) >= 0;
        mpq_clear(lim);
    }
    if (useless) {
        qmm_ref_interval_any(iv, model);
        iv->r = mpq_get_d(R);
    } else {
        double e = mpq_get_d(E); /* truncated: report nextafter upwards */
        iv->e = e == 0.0 ? 0.0 : nextafter(e, INFINITY);
        /* y in the accumulation's own format: y itself is within E of R, so the interval is
         * the format's values in [R - E, R + E]; a narrower y is the nearest value to such a
         * sum: [RN(R - E), RN(R + E)] */
        int same = y.p == acc.p && y.emin == acc.emin && y.emax == acc.emax;
        mpq_sub(t, R, E);
        iv->lo = qmm_ref_round_q_dir(t, y, same ? 1 : 0);
        mpq_add(t, R, E);
        iv->hi = qmm_ref_round_q_dir(t, y, same ? -1 : 0);
    }
    mpz_clear(nz);
    mpz_clear(two_p);
    mpq_clear(R);
    mpq_clear(E);
    mpq_clear(t);
}

double qmm_ref_float_at(int32_t dtype, const void *data, int64_t index)
{
    return qmm_scale_decode(dtype, data, index);
}

void qmm_ref_store_float(const qmm_tensor *y, int64_t index, double v)
{
    uint32_t bits = qmm_scale_encode(y->dtype, v);
    unsigned char *p = y->data;
    size_t size = qmm_dtype_size(y->dtype);
    for (size_t b = 0; b < size; b++)
        p[(size_t)index * size + b] = (unsigned char)(bits >> (8 * b));
}

int64_t qmm_ref_float_bits(int32_t dtype, double v)
{
    return (int64_t)qmm_scale_encode(dtype, v);
}

int qmm_ref_judged_by_accept(qmm_op_kind op)
{
    const qmm_ref_op *o = qmm_ref_op_of(op);
    return o && o->accept;
}

qmm_status_code qmm_ref_accept_part(const qmm_call *call, const qmm_ref_part *part,
                                    qmm_ref_accept *out, qmm_status *st)
{
    const qmm_ref_op *o = qmm_ref_op_of(call->op);
    if (!o || !o->accept)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "%s: judged bit for bit, not by accepted values",
                              qmm_op_name(call->op));
    return o->accept(call, part, out, st);
}

qmm_ref_verdict qmm_ref_accept_judge(const qmm_ref_accept *a, double y, double *units,
                                     int *model)
{
    qmm_ref_verdict v = QMM_REF_FAIL;
    double best = INFINITY;
    int which = -1;
    for (int i = 0; i < a->n; i++) {
        const qmm_ref_interval *iv = &a->iv[i];
        int in;
        if (isnan(iv->lo))
            in = isnan(y);
        else if (iv->inconclusive && iv->lo == -INFINITY && iv->hi == INFINITY)
            in = 1; /* no usable bound: whatever was answered, a NaN included (the reference's
                     * own answer for a non-finite input) */
        else
            in = !isnan(y) && iv->lo <= y && y <= iv->hi;
        if (in && !iv->inconclusive)
            v = QMM_REF_PASS;
        else if (in && v == QMM_REF_FAIL)
            v = QMM_REF_INCONCLUSIVE;
        if (iv->inconclusive)
            continue;
        double u;
        if (isnan(iv->r) || isnan(y))
            u = isnan(iv->r) && isnan(y) ? 0.0 : INFINITY;
        else if (iv->e == 0.0)
            u = y == iv->r ? 0.0 : INFINITY;
        else
            u = fabs(y - iv->r) / iv->e;
        if (which < 0 || u < best) {
            best = u;
            which = i;
        }
    }
    if (units)
        *units = best;
    if (model)
        *model = which;
    return v;
}

/* ---- the integer product's float epilogue (docs/semantics.md §10.2) ---- */

/* RN32(RN32(float(acc) * RN32(sa * sb)) + bias) without FMA, and with bias fused in. */
static void epilogue(int64_t acc, const qmm_ref_i2f_elem *e, float *plain, float *fused)
{
    volatile float fa = (float)acc; /* RN32: exact below 2^24 */
    volatile float mul = (float)e->sa * (float)e->sb;
    volatile float prod = fa * mul;
    volatile float y = e->has_bias ? prod + (float)e->bias : prod;
    *plain = y;
    *fused = e->has_bias ? fmaf(fa, mul, (float)e->bias) : y;
}

int64_t qmm_ref_i2f_b_side(qmm_ref_i2f_elem *e, const qmm_tensor *b_zero_point,
                           const qmm_tensor *b_scale, const qmm_tensor *bias, int32_t ft,
                           int64_t pj, int64_t j)
{
    e->sb = qmm_scale_decode(ft, b_scale->data, pj);
    e->has_bias = qmm_tensor_present(bias);
    e->bias = e->has_bias ? qmm_scale_decode(ft, bias->data, j) : 0.0;
    return qmm_tensor_present(b_zero_point) ? qmm_load_q8(b_zero_point, pj) : 0;
}

double qmm_ref_i2f_value(int64_t acc, const qmm_ref_i2f_elem *e)
{
    float plain, fused;
    epilogue(acc, e, &plain, &fused);
    return plain;
}

void qmm_ref_i2f_accept(qmm_ref_accept *out, const qmm_ref_i2f_elem *e, int32_t y_dtype)
{
    static const char *const names[4] = {"exact-acc", "exact-acc-fma", "int32-wrapped-acc",
                                         "int32-wrapped-acc-fma"};
    int64_t accs[2] = {e->acc, qmm_wrap_int32(e->acc)};
    int n_acc = accs[1] != e->acc ? 2 : 1;
    out->n = 0;
    for (int i = 0; i < n_acc; i++) {
        float plain, fused;
        epilogue(accs[i], e, &plain, &fused);
        float v[2] = {plain, fused};
        for (int f = 0; f < (e->has_bias ? 2 : 1); f++) {
            qmm_ref_interval *iv = &out->iv[out->n++];
            qmm_ref_interval_value(iv, (double)v[f], names[2 * i + f]);
            if (y_dtype != QMM_DTYPE_FLOAT) {
                /* a float16 tail is not modelled yet: the float32 value, inconclusively */
                iv->lo = -INFINITY;
                iv->hi = INFINITY;
                iv->inconclusive = 1;
            }
        }
    }
}

double qmm_ref_i2f_explain(qmm_ref_element *out, const qmm_ref_i2f_elem *e, int32_t y_dtype)
{
    out->acc = e->acc;
    out->overflow = !qmm_ref_fits_int32(e->acc);
    double v = qmm_ref_i2f_value(e->acc, e);
    out->expected = qmm_ref_float_bits(y_dtype, v);
    out->wrapped = qmm_ref_float_bits(y_dtype, qmm_ref_i2f_value(qmm_wrap_int32(e->acc), e));
    return v;
}

void qmm_ref_copy_wrapped(qmm_tensor *yw, const qmm_tensor *y, const qmm_ref_part *part)
{
    if (yw)
        memcpy(yw->data, y->data,
               (size_t)(part ? part->count : qmm_tensor_numel(y)) * qmm_dtype_size(y->dtype));
}

void qmm_ref_i2f_put(qmm_ref_accept *out, const qmm_tensor *y, int64_t slot,
                     const qmm_ref_i2f_elem *e)
{
    if (out)
        qmm_ref_i2f_accept(&out[slot], e, y->dtype);
    else
        qmm_ref_store_float(y, slot, qmm_ref_i2f_value(e->acc, e));
}
