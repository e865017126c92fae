/* optimized/requant_exact.h — the exact requantization y = clamp(RNE(acc * sa * sb / sy) + zy)
 * that the CPU backend (optimized/cpu/requant.c, and through it the vector rows of
 * requant-avx2.c / requant-avx512.c) and the CUDA backend's epilogue (optimized/cuda/epilogue.h,
 * on the device and in its host emulation) share: one implementation of the double fast path's
 * decision and of the exact fallback, compiled by the C compiler and by nvcc alike (plain C11:
 * no __int128, no long double, nothing a device lacks).
 *
 * Fast path and its error bound. Scales are float/float16/bfloat16 values decoded exactly to
 * doubles. The caller makes a multiplier m = fl(sa * fl(sb / sy)) (per-tensor y_scale, the
 * column factor sb/sy precomputed) or m = fl(fl(sa * sb) / sy) (any y_scale), and
 * v = fl(acc * m). Every intermediate stays a normal double (scale quotients and products lie
 * within 2^-426 .. 2^436, far from double's limits), so each operation has relative error
 * <= u = 2^-53 and, with at most three roundings,
 *     |v - x| <= ((1+u)^3 - 1) |x| <= 3.01 u |x| <= 2^-51 |v|          (x = the exact value).
 * - If |v| >= 2^21 then |x| > 2^21 - 1, so RNE(x) + zy lies outside [-2^20, 2^20] and the
 *   result saturates by the sign of v (acc != 0 and scales > 0 make the signs agree).
 * - Else |v - x| < 2^-30. Let r = RNE(v) (v - r is exact: Sterbenz). If |v - r| < 1/2 - 2^-28
 *   then |x - r| < 1/2 - 2^-28 + 2^-30 < 1/2, so x rounds to r as well, ties included (x is
 *   strictly closer to r than to any other integer).
 * - Otherwise v is within 2^-28 of a half-integer and the exact integer path decides.
 * The exact path writes each scale as an odd integer mantissa times a power of two
 * (x = acc*ma*mb / my * 2^s, with ma, mb, my < 2^24 after dropping trailing zero bits) and
 * rounds the quotient of two-word integers (|acc*ma*mb| < 2^80): one word division when both
 * fit a word, else shift and subtract.
 *
 * On the device every double operation here is an explicitly rounded intrinsic, never
 * contracted into a fused multiply-add, which would change the bound's operation count.
 */
#ifndef QMM_OPTIMIZED_REQUANT_EXACT_H
#define QMM_OPTIMIZED_REQUANT_EXACT_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define QMM_RQ_FN static __host__ __device__ inline
#else
#define QMM_RQ_FN static inline
#endif

#if defined(__CUDA_ARCH__)
#define QMM_RQ_MUL(x, y) __dmul_rn((x), (y))
#define QMM_RQ_DIV(x, y) __ddiv_rn((x), (y))
#define QMM_RQ_ADD(x, y) __dadd_rn((x), (y))
#define QMM_RQ_SUB(x, y) __dsub_rn((x), (y))
#else
#define QMM_RQ_MUL(x, y) ((x) * (y))
#define QMM_RQ_DIV(x, y) ((x) / (y))
#define QMM_RQ_ADD(x, y) ((x) + (y))
#define QMM_RQ_SUB(x, y) ((x) - (y))
#endif

/* |RNE(x)| is clamped here: far outside any 8-bit result, so clamping never changes output */
#define QMM_RQ_SAT ((int64_t)1 << 40)
/* the fast path: |v| at or past this saturates (2^21) ... */
#define QMM_RQ_FAST_LIMIT 2097152.0
/* ... and r = RNE(v) decides when |v - r| is below this (1/2 - 2^-28) */
#define QMM_RQ_FAST_MARGIN (0.5 - 1.0 / 268435456.0)

/* A sum computed modulo 2^32 as the int32 it stands for (without a signed overflow). */
QMM_RQ_FN int32_t qmm_rq_wrap(uint32_t u)
{
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

QMM_RQ_FN int32_t qmm_rq_clamp_add(int64_t q, int32_t zy, int32_t qmin, int32_t qmax)
{
    int64_t v = q + zy;
    return v < qmin ? qmin : v > qmax ? qmax : (int32_t)v;
}

/* ---- the exact path ---- */

typedef struct qmm_rq_u128 {
    uint64_t hi, lo;
} qmm_rq_u128;

QMM_RQ_FN int qmm_rq_u128_bits(qmm_rq_u128 x)
{
    int n = 0;
    uint64_t w = x.hi ? x.hi : x.lo;
    while (w) {
        n++;
        w >>= 1;
    }
    return x.hi ? n + 64 : n;
}

/* x << s for 0 <= s < 128 (bits shifted out are lost; callers check the length first) */
QMM_RQ_FN qmm_rq_u128 qmm_rq_u128_shl(qmm_rq_u128 x, int s)
{
    qmm_rq_u128 r;
    if (s == 0)
        return x;
    if (s >= 64) {
        r.hi = x.lo << (s - 64);
        r.lo = 0;
    } else {
        r.hi = (x.hi << s) | (x.lo >> (64 - s));
        r.lo = x.lo << s;
    }
    return r;
}

QMM_RQ_FN qmm_rq_u128 qmm_rq_u128_shr1(qmm_rq_u128 x)
{
    qmm_rq_u128 r;
    r.lo = (x.lo >> 1) | (x.hi << 63);
    r.hi = x.hi >> 1;
    return r;
}

QMM_RQ_FN int qmm_rq_u128_cmp(qmm_rq_u128 a, qmm_rq_u128 b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return a.lo < b.lo ? -1 : a.lo > b.lo;
}

QMM_RQ_FN qmm_rq_u128 qmm_rq_u128_sub(qmm_rq_u128 a, qmm_rq_u128 b)
{
    qmm_rq_u128 r;
    r.lo = a.lo - b.lo;
    r.hi = a.hi - b.hi - (a.lo < b.lo);
    return r;
}

/* s = m * 2^e with m an odd integer (s > 0, finite); m < 2^24 for float-representable s. */
QMM_RQ_FN void qmm_rq_split_scale(double s, uint64_t *m, int *e)
{
    int ex;
    double f = frexp(s, &ex); /* s = f * 2^ex, f in [0.5, 1): exact */
    uint64_t mant = (uint64_t)ldexp(f, 53);
    ex -= 53;
    while (mant && !(mant & 1)) {
        mant >>= 1;
        ex++;
    }
    *m = mant;
    *e = ex;
}

/* RNE(acc * sa * sb / sy) exactly, clamped to +-QMM_RQ_SAT (scales positive, finite, each
 * holding a float, float16 or bfloat16 value). */
QMM_RQ_FN int64_t qmm_rq_exact(int32_t acc, double sa, double sb, double sy)
{
    if (acc == 0)
        return 0;
    uint64_t ma, mb, my;
    int ea, eb, ey;
    qmm_rq_split_scale(sa, &ma, &ea);
    qmm_rq_split_scale(sb, &mb, &eb);
    qmm_rq_split_scale(sy, &my, &ey);
    int negative = acc < 0;
    uint64_t mag_acc = negative ? (uint64_t)0 - (uint64_t)(int64_t)acc : (uint64_t)acc;
    /* num = |acc| * ma * mb < 2^32 * 2^24 * 2^24: the first product fits 64 bits, the second
     * is formed from the 32-bit halves of the first */
    uint64_t x = mag_acc * ma;
    uint64_t plo = (x & 0xffffffffu) * mb, phi = (x >> 32) * mb;
    qmm_rq_u128 num, den;
    num.lo = plo + (phi << 32);
    num.hi = (phi >> 32) + (num.lo < plo);
    den.hi = 0;
    den.lo = my;
    int s = ea + eb - ey;
    const int64_t sat = negative ? -QMM_RQ_SAT : QMM_RQ_SAT;
    /* x = num * 2^s / den; keep both sides below 2^127 */
    if (s > 0) {
        /* num >= 1 and den < 2^24: a result this long is beyond 2^40 anyway */
        if (s >= 64 || qmm_rq_u128_bits(num) + s > 126)
            return sat;
        num = qmm_rq_u128_shl(num, s);
    } else if (s < 0) {
        /* num < 2^80: with -s > 100, |x| < 2^-20, which rounds to 0 */
        if (-s > 100)
            return 0;
        den = qmm_rq_u128_shl(den, -s);
    }
    /* q = num / den: one word division when both fit a word (the common case, a native
     * instruction on the host), else shift-subtract; a quotient past 2^40 saturates */
    uint64_t q = 0;
    qmm_rq_u128 r = num;
    if (num.hi == 0 && den.hi == 0) {
        q = num.lo / den.lo;
        r.lo = num.lo % den.lo;
        if (q > (uint64_t)QMM_RQ_SAT)
            return sat;
    } else if (qmm_rq_u128_cmp(num, den) >= 0) {
        int sh = qmm_rq_u128_bits(num) - qmm_rq_u128_bits(den);
        if (sh >= 42)
            return sat;
        qmm_rq_u128 d = qmm_rq_u128_shl(den, sh);
        for (int t = sh; t >= 0; t--) {
            q <<= 1;
            if (qmm_rq_u128_cmp(r, d) >= 0) {
                r = qmm_rq_u128_sub(r, d);
                q |= 1;
            }
            d = qmm_rq_u128_shr1(d);
        }
    }
    /* round half to even: r < den < 2^124, so 2r fits */
    int c = qmm_rq_u128_cmp(qmm_rq_u128_shl(r, 1), den);
    if (c > 0 || (c == 0 && (q & 1)))
        q++;
    int64_t mag = q > (uint64_t)QMM_RQ_SAT ? QMM_RQ_SAT : (int64_t)q;
    return negative ? -mag : mag;
}

/* ---- the fast path, and the whole rule ---- */

/* The fast path's decision on v = fl(acc * m) (the header comment): 1 with *out =
 * clamp(RNE(x) + zy) when v decides it, else 0. */
QMM_RQ_FN int qmm_rq_decide(double v, int32_t zy, int32_t qmin, int32_t qmax, int32_t *out)
{
    /* 1.5 * 2^52: adding and subtracting it rounds |v| < 2^51 to an integer, ties to even
     * (round-to-nearest, the default on the host and every device operation here) */
    const double magic = 6755399441055744.0;
    if (!(fabs(v) < QMM_RQ_FAST_LIMIT)) {
        *out = v > 0 ? qmax : qmin;
        return 1;
    }
    double r = QMM_RQ_SUB(QMM_RQ_ADD(v, magic), magic);
    if (fabs(QMM_RQ_SUB(v, r)) < QMM_RQ_FAST_MARGIN) {
        *out = qmm_rq_clamp_add((int64_t)r, zy, qmin, qmax);
        return 1;
    }
    return 0;
}

/* The fast path of the whole rule (acc = 0 included): 1 with *out when it decides, 0 when
 * qmm_rq_exact must (qmm_rq_requant; a caller may also keep the exact path out of line). */
QMM_RQ_FN int qmm_rq_fast(int32_t acc, double m, int32_t zy, int32_t qmin, int32_t qmax,
                          int32_t *out)
{
    if (acc == 0) {
        *out = qmm_rq_clamp_add(0, zy, qmin, qmax);
        return 1;
    }
    return qmm_rq_decide(QMM_RQ_MUL((double)acc, m), zy, qmin, qmax, out);
}

/* clamp(RNE(acc * sa * sb / sy) + zy, qmin, qmax) exactly, given m: fl(sa * fl(sb / sy)) or
 * fl(fl(sa * sb) / sy) (the header comment's multipliers). */
QMM_RQ_FN int32_t qmm_rq_requant(int32_t acc, double m, double sa, double sb, double sy,
                                 int32_t zy, int32_t qmin, int32_t qmax)
{
    int32_t out;
    if (qmm_rq_fast(acc, m, zy, qmin, qmax, &out))
        return out;
    return qmm_rq_clamp_add(qmm_rq_exact(acc, sa, sb, sy), zy, qmin, qmax);
}

#endif /* QMM_OPTIMIZED_REQUANT_EXACT_H */
