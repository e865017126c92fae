/* optimized/cpu/requant.c — exact requantization: y = clamp(RNE(acc*sa*sb/sy) + zy).
 *
 * Fast path and its error bound. Scales are float/float16/bfloat16 values decoded exactly to
 * doubles. The fast path computes v = fl(acc * fl(sa * fl(sb / sy))) (per-tensor y_scale, the
 * column factor sb/sy precomputed) or v = fl(acc * fl(fl(sa * sb) / sy)) (any y_scale). Every
 * intermediate stays a normal double (scale quotients and products lie within 2^-426 .. 2^436,
 * far from double's limits), so each operation has relative error <= u = 2^-53 and, with at
 * most three roundings,
 *     |v - x| <= ((1+u)^3 - 1) |x| <= 3.01 u |x| <= 2^-51 |v|          (x = the exact value).
 * - If |v| >= 2^21 then |x| > 2^21 - 1, so RNE(x) + zy lies outside [-2^20, 2^20] and the
 *   result saturates by the sign of v (acc != 0 and scales > 0 make the signs agree).
 * - Else |v - x| < 2^-30. Let r = RNE(v) (v - r is exact: Sterbenz). If |v - r| < 1/2 - 2^-28
 *   then |x - r| < 1/2 - 2^-28 + 2^-30 < 1/2, so x rounds to r as well, ties included (x is
 *   strictly closer to r than to any other integer).
 * - Otherwise v is within 2^-28 of a half-integer and the exact integer path decides.
 * Single-precision first try (requant-avx512.c, 16 lanes a vector): the caller makes
 * mf = fl32(fl(sa * cm)) and uses it only when fl(sa * cm) lies in [2^-100, 2^100], so mf is a
 * normal float; then v = fl32(fl32(x) * mf), every operation rounding to nearest even. Each of
 * the three float roundings has relative error <= 2^-24 (a product that underflows adds at
 * most 2^-150 absolute) and fl(sa * cm) <= 2^-52, so
 *     |v - x| <= 3.01 * 2^-24 |x| <= 2^-22.4 |v|                       (+ 2^-149 at most).
 * - If |v| >= 2^9 then |x| > 511.9, so |RNE(x)| >= 512 and RNE(x) + zy (|zy| <= 255)
 *   lies outside every 8-bit range: the result saturates by the sign of v. The code clamps v
 *   to +-2^9, which rounds to +-512 and saturates the same way.
 * - Else |v - x| < 2^-13, and with r = RNE(v): |v - r| < 1/2 - 2^-12 gives |x - r| < 1/2,
 *   so x rounds to r. Otherwise (x within about 2^-12 of a half-integer: ~1 lane in 2000)
 *   the block of 16 goes to the double path above, which decides exactly.
 * The exact path writes each scale as an integer mantissa times a power of two
 * (x = acc*ma*mb / my * 2^s, with ma, mb, my < 2^24 after dropping trailing zero bits) and
 * rounds the quotient with __int128 arithmetic (|acc*ma*mb| < 2^79).
 */
#include <math.h>

#include "optimized/cpu/opt_internal.h"

typedef unsigned __int128 u128;

/* s = m * 2^e with m an odd integer (s > 0, finite). */
static void split_scale(double s, uint64_t *m, int *e)
{
    int ex;
    double f = frexp(s, &ex); /* s = f * 2^ex, f in [0.5, 1) */
    uint64_t mant = (uint64_t)ldexp(f, 53);
    ex -= 53;
    while (mant && !(mant & 1)) {
        mant >>= 1;
        ex++;
    }
    *m = mant;
    *e = ex;
}

#define QMM_REQ_SAT ((int64_t)1 << 40)

int64_t qmm_opt_requant_exact(int32_t acc, double sa, double sb, double sy)
{
    if (acc == 0)
        return 0;
    uint64_t ma, mb, my;
    int ea, eb, ey;
    split_scale(sa, &ma, &ea);
    split_scale(sb, &mb, &eb);
    split_scale(sy, &my, &ey);
    int negative = acc < 0;
    uint64_t mag_acc = negative ? (uint64_t)0 - (uint64_t)(int64_t)acc : (uint64_t)acc;
    u128 num = (u128)mag_acc * ma * mb; /* < 2^32 * 2^24 * 2^24 */
    u128 den = my;
    int s = ea + eb - ey;
    /* x = num * 2^s / den; keep both sides below 2^127 */
    if (s > 0) {
        /* num >= 1 and den < 2^24: s >= 64 already puts |x| beyond 2^40 */
        if (s >= 64 || (num >> (126 - s)) != 0)
            return negative ? -QMM_REQ_SAT : QMM_REQ_SAT;
        num <<= s;
    } else if (s < 0) {
        /* num < 2^80: with -s > 100 |x| < 2^-20, which rounds to 0 */
        if (-s > 100)
            return 0;
        den <<= -s;
    }
    u128 q = num / den, r = num % den;
    u128 twice = r << 1;
    if (twice > den || (twice == den && (q & 1)))
        q++;
    int64_t mag = q > (u128)QMM_REQ_SAT ? QMM_REQ_SAT : (int64_t)q;
    return negative ? -mag : mag;
}

static inline int32_t clamp_add(int64_t q, int32_t zy, int32_t qmin, int32_t qmax)
{
    int64_t v = q + zy;
    return v < qmin ? qmin : v > qmax ? qmax : (int32_t)v;
}

/* The decision of the fast path: returns 1 with *out set when v decides the result. */
static inline int fast_round(double v, int32_t zy, int32_t qmin, int32_t qmax, int32_t *out)
{
    /* 1.5 * 2^52: adding and subtracting it rounds |v| < 2^51 to an integer, ties to even */
    const double magic = 6755399441055744.0;
    if (!(fabs(v) < 2097152.0)) { /* 2^21 */
        *out = v > 0 ? qmax : qmin;
        return 1;
    }
    double r = (v + magic) - magic;
    if (fabs(v - r) < 0.5 - 0x1p-28) {
        *out = clamp_add((int64_t)r, zy, qmin, qmax);
        return 1;
    }
    return 0;
}

int32_t qmm_opt_requant_one(int32_t acc, double sa, double sb, double sy, int32_t zy,
                            int32_t qmin, int32_t qmax)
{
    int32_t out;
    double v = (double)acc * ((sa * sb) / sy);
    if (acc == 0)
        return clamp_add(0, zy, qmin, qmax);
    if (fast_round(v, zy, qmin, qmax, &out))
        return out;
    return clamp_add(qmm_opt_requant_exact(acc, sa, sb, sy), zy, qmin, qmax);
}

void qmm_opt_requant_row(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                         const float *mf, double sa, const double *sb, const double *cm,
                         double sy, int32_t zy, int32_t qmin, int32_t qmax, uint8_t *out)
{
    (void)mf; /* no float first try here */
    for (size_t j = 0; j < n; j++) {
        int32_t q;
        int32_t x = qmm_opt_wrap_u32((uint32_t)acc[j] - zr - (zc ? (uint32_t)zc[j] : 0u));
        double v = (double)x * (sa * cm[j]);
        if (x == 0)
            q = clamp_add(0, zy, qmin, qmax);
        else if (!fast_round(v, zy, qmin, qmax, &q))
            q = clamp_add(qmm_opt_requant_exact(x, sa, sb[j], sy), zy, qmin, qmax);
        out[j] = (uint8_t)((uint32_t)q & 0xffu);
    }
}

int qmm_opt_requant_mults_none(double sa, const double *cm, size_t n, float *mf)
{
    (void)sa, (void)cm, (void)n, (void)mf;
    return 0;
}

/* The single-precision bound above holds for multipliers in [2^-100, 2^100]. */
int qmm_opt_requant_mults_f32(double sa, const double *cm, size_t n, float *mf)
{
    for (size_t j = 0; j < n; j++) {
        double m = sa * cm[j];
        if (!(m >= 0x1p-100 && m <= 0x1p100))
            return 0;
        mf[j] = (float)m;
    }
    return 1;
}
