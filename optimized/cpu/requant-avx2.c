/* optimized/cpu/requant-avx2.c — qmm_opt_requant_row eight elements at a time (this file alone
 * is built with -mavx2; no FMA, so every product and sum rounds exactly as in requant.c).
 *
 * The same decision as the scalar fast path (requant.c, where the error bound is proved):
 * v = fl(acc * fl(sa * cm[j])); |v| >= 2^21 saturates by the sign of v; otherwise r = RNE(v)
 * by the 1.5*2^52 trick, and r is the answer when |v - r| < 1/2 - 2^-28. The lanes run the
 * scalar operations in the same order on the same doubles, so each computes bit for bit what
 * the scalar code computes (acc = 0 included: v = 0 decides 0 there too). A block of eight in
 * which any lane is undecided (within 2^-28 of a half-integer) goes to the scalar row
 * function, whose exact fallback decides it.
 *
 * With mf (qmm_opt_requant_mults_f32's multipliers) each block of eight is tried in single
 * precision first, lane for lane requant-avx512.c's float first try (requant.c proves its
 * bound): v = fl32(fl32(x) * mf[j]) clamped to +-2^9, r = RNE(v) (vroundps, its rounding
 * given), r decides when |v - r| < 1/2 - 2^-12; a block it cannot decide takes the double
 * path. Like the double path's 1.5*2^52 trick, the conversion and product round by the MXCSR,
 * round-to-nearest-even in C's default environment (requant-avx512.c embeds it instead).
 * Zen 5 running the avxvnni variant, 1024^3 T = 1: the double path was 8.7% of the samples.
 */
#include <immintrin.h>

#include "optimized/cpu/opt_internal.h"

/* Four lanes: the clamped results in *q; returns the 4-bit mask of decided lanes. v is first
 * clamped to +-2^21: a saturating lane then rounds to +-2^21 exactly (decided, and clamped to
 * qmax or qmin below, as the scalar code saturates it), the others are unchanged. */
static inline int lanes4(__m128i acc, __m256d m, __m128i zy, __m128i qmin, __m128i qmax,
                         __m128i *q)
{
    const __m256d magic = _mm256_set1_pd(6755399441055744.0); /* 1.5 * 2^52 */
    const __m256d lim = _mm256_set1_pd(2097152.0);            /* 2^21 */
    __m256d v = _mm256_mul_pd(_mm256_cvtepi32_pd(acc), m);
    v = _mm256_min_pd(_mm256_max_pd(v, _mm256_sub_pd(_mm256_setzero_pd(), lim)), lim);
    __m256d r = _mm256_sub_pd(_mm256_add_pd(v, magic), magic);
    __m256d d = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(v, r));
    int decided =
        _mm256_movemask_pd(_mm256_cmp_pd(d, _mm256_set1_pd(0.5 - 0x1p-28), _CMP_LT_OQ));
    __m128i ri = _mm256_cvtpd_epi32(r); /* an integer within +-2^21: exact */
    *q = _mm_min_epi32(_mm_max_epi32(_mm_add_epi32(ri, zy), qmin), qmax);
    return decided;
}

/* Four accumulators at acc + j less the corrections (qmm_opt_requant_row's x). */
static inline __m128i corrected4(const int32_t *acc, const int32_t *zc, __m128i vzr, size_t j)
{
    __m128i x = _mm_sub_epi32(_mm_loadu_si128((const __m128i *)(const void *)(acc + j)), vzr);
    if (zc)
        x = _mm_sub_epi32(x, _mm_loadu_si128((const __m128i *)(const void *)(zc + j)));
    return x;
}

/* Eight int32 results in [qmin, qmax] as bytes at out (the saturating packs keep them, and
 * their low bytes). */
static inline void store8(__m128i q0, __m128i q1, int is_signed, uint8_t *out)
{
    __m128i w = _mm_packs_epi32(q0, q1);
    __m128i b = is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64((__m128i *)(void *)out, b);
}

/* The double path over n elements. */
static void rows_f64(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n, double sa,
                     const double *sb, const double *cm, double sy, int32_t zy, int32_t qmin,
                     int32_t qmax, uint8_t *out)
{
    const __m256d vsa = _mm256_set1_pd(sa);
    const __m128i vzr = _mm_set1_epi32((int32_t)zr);
    const __m128i vzy = _mm_set1_epi32(zy), vmin = _mm_set1_epi32(qmin),
                  vmax = _mm_set1_epi32(qmax);
    int is_signed = qmin < 0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m128i q0, q1;
        __m256d m0 = _mm256_mul_pd(vsa, _mm256_loadu_pd(cm + j));
        __m256d m1 = _mm256_mul_pd(vsa, _mm256_loadu_pd(cm + j + 4));
        int d0 = lanes4(corrected4(acc, zc, vzr, j), m0, vzy, vmin, vmax, &q0);
        int d1 = lanes4(corrected4(acc, zc, vzr, j + 4), m1, vzy, vmin, vmax, &q1);
        if ((d0 & d1) != 0xf) {
            qmm_opt_requant_row(acc + j, zc ? zc + j : NULL, zr, 8, NULL, sa, sb + j, cm + j, sy,
                                zy, qmin, qmax, out + j);
            continue;
        }
        store8(q0, q1, is_signed, out + j);
    }
    if (j < n)
        qmm_opt_requant_row(acc + j, zc ? zc + j : NULL, zr, n - j, NULL, sa, sb + j, cm + j,
                            sy, zy, qmin, qmax, out + j);
}

void qmm_opt_requant_row_avx2(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                              const float *mf, double sa, const double *sb, const double *cm,
                              double sy, int32_t zy, int32_t qmin, int32_t qmax, uint8_t *out)
{
    const __m256i vzr = _mm256_set1_epi32((int32_t)zr), vzy = _mm256_set1_epi32(zy);
    const __m256i vmin = _mm256_set1_epi32(qmin), vmax = _mm256_set1_epi32(qmax);
    const __m256 lim = _mm256_set1_ps(QMM_OPT_F32_SAT), nlim = _mm256_set1_ps(-QMM_OPT_F32_SAT);
    const __m256 half = _mm256_set1_ps(QMM_OPT_F32_HALF), sign = _mm256_set1_ps(-0.0f);
    int is_signed = qmin < 0;
    /* y's whole uint8 or int8 range: the saturating packs below are the clamp (|q| <= 2^9 +
     * 255 fits int16) */
    int full = (qmin == 0 && qmax == 255) || (qmin == -128 && qmax == 127);
    size_t j = 0;
    for (; mf && j + 8 <= n; j += 8) {
        __m256i x = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(acc + j)),
                                     vzr);
        if (zc)
            x = _mm256_sub_epi32(x, _mm256_loadu_si256((const __m256i *)(const void *)(zc + j)));
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(x), _mm256_loadu_ps(mf + j));
        v = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
        __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 d = _mm256_andnot_ps(sign, _mm256_sub_ps(v, r));
        if (_mm256_movemask_ps(_mm256_cmp_ps(d, half, _CMP_LT_OQ)) != 0xff) {
            rows_f64(acc + j, zc ? zc + j : NULL, zr, 8, sa, sb + j, cm + j, sy, zy, qmin, qmax,
                     out + j);
            continue;
        }
        __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(r), vzy); /* r within +-2^9: exact */
        if (!full)
            q = _mm256_min_epi32(_mm256_max_epi32(q, vmin), vmax);
        /* int16s in 64-bit pieces [q0-3 q0-3 | q4-7 q4-7], then q0-7 in order */
        __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(q, q), 0xd8);
        __m128i w8 = _mm256_castsi256_si128(w);
        __m128i b = is_signed ? _mm_packs_epi16(w8, w8) : _mm_packus_epi16(w8, w8);
        _mm_storel_epi64((__m128i *)(void *)(out + j), b);
    }
    if (j < n)
        rows_f64(acc + j, zc ? zc + j : NULL, zr, n - j, sa, sb + j, cm + j, sy, zy, qmin, qmax,
                 out + j);
}
