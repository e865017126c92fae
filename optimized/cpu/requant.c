/* optimized/cpu/requant.c — exact requantization: y = clamp(RNE(acc*sa*sb/sy) + zy).
 *
 * The double fast path, its error bound and the exact fallback are optimized/requant_exact.h,
 * shared with the CUDA backend's epilogue; this file has the CPU's entry points on it and the
 * single-precision first try's multipliers. The vector rows (requant-avx2.c, requant-avx512.c)
 * take the same decisions lane for lane and hand undecided blocks to qmm_opt_requant_row.
 *
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
 *   the block of 16 goes to the double path, which decides exactly.
 */
#include "optimized/cpu/opt_internal.h"

int32_t qmm_opt_requant_one(int32_t acc, double sa, double sb, double sy, int32_t zy,
                            int32_t qmin, int32_t qmax)
{
    return qmm_rq_requant(acc, (sa * sb) / sy, sa, sb, sy, zy, qmin, qmax);
}

void qmm_opt_requant_row(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                         const float *mf, double sa, const double *sb, const double *cm,
                         double sy, int32_t zy, int32_t qmin, int32_t qmax, uint8_t *out)
{
    (void)mf; /* no float first try here */
    for (size_t j = 0; j < n; j++) {
        int32_t x = qmm_rq_wrap((uint32_t)acc[j] - zr - (zc ? (uint32_t)zc[j] : 0u));
        int32_t q = qmm_rq_requant(x, sa * cm[j], sa, sb[j], sy, zy, qmin, qmax);
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
