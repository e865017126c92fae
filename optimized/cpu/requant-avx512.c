/* optimized/cpu/requant-avx512.c — qmm_opt_requant_row sixteen elements at a time (this file
 * alone is built with AVX-512 F/VL/BW; no FMA contraction: every operation is an intrinsic).
 *
 * Lane for lane the decision of requant-avx2.c (and so of requant.c's scalar fast path,
 * whose error bound decides): v = fl(x * fl(sa * cm[j])) clamped to +-2^21, r = RNE(v) (here
 * vreducepd gives v - r exactly and vcvtpd2dq with embedded round-to-nearest-even gives r), r
 * decides when |v - r| < 1/2 - 2^-28; a block with an undecided lane goes to the scalar row
 * function and its exact fallback.
 */
#include <immintrin.h>

#include "optimized/cpu/opt_internal.h"

/* Eight lanes: RNE(v) + zy as int32 in *q (|q| <= 2^21 + 255, not yet clamped); returns the
 * mask of decided lanes. */
static inline __mmask8 lanes8(__m256i acc, __m512d m, __m256i zy, __m256i *q)
{
    const __m512d lim = _mm512_set1_pd(2097152.0), nlim = _mm512_set1_pd(-2097152.0); /* 2^21 */
    __m512d v = _mm512_mul_pd(_mm512_cvtepi32_pd(acc), m);
    v = _mm512_min_pd(_mm512_max_pd(v, nlim), lim);
    /* vreducepd with imm 0: v - RNE(v), exact; vcvtpd2dq rounds by MXCSR, which is RNE
     * (C's default environment; the magic-number form of requant-avx2.c costs one more
     * operation) */
    __m512d d = _mm512_abs_pd(_mm512_reduce_pd(v, _MM_FROUND_TO_NEAREST_INT));
    __mmask8 decided = _mm512_cmp_pd_mask(d, _mm512_set1_pd(0.5 - 0x1p-28), _CMP_LT_OQ);
    *q = _mm256_add_epi32(_mm512_cvt_roundpd_epi32(v, _MM_FROUND_TO_NEAREST_INT |
                                                          _MM_FROUND_NO_EXC),
                          zy);
    return decided;
}

/* Sixteen results (RNE + zy, |q| <= 2^21 + 255) clamped to [qmin, qmax], as bytes. int8 y
 * spans the whole of vpmovsdb's saturation range, and uint8 y with a floor of 0 the whole of
 * vpmovusdb's: then the saturating narrowings are the clamp. */
static inline __m128i narrow16(__m512i q, int32_t qmin, int32_t qmax)
{
    if (qmin == -128 && qmax == 127)
        return _mm512_cvtsepi32_epi8(q);
    if (qmin == 0 && qmax == 255)
        return _mm512_cvtusepi32_epi8(_mm512_max_epi32(q, _mm512_setzero_si512()));
    /* a narrower range: clamp, then keep each value's low byte */
    q = _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(qmin)), _mm512_set1_epi32(qmax));
    return _mm512_cvtepi32_epi8(q);
}

/* Sixteen accumulators at acc + j less the corrections (qmm_opt_requant_row's x). */
static inline __m512i corrected16(const int32_t *acc, const int32_t *zc, __m512i vzr, size_t j)
{
    __m512i x = _mm512_sub_epi32(_mm512_loadu_si512((const void *)(acc + j)), vzr);
    if (zc)
        x = _mm512_sub_epi32(x, _mm512_loadu_si512((const void *)(zc + j)));
    return x;
}

/* The double path: lanes8 on every block of 16, undecided blocks to the scalar row function
 * (its exact fallback), a tail of fewer than 16 to the 8-lane one. */
static void requant_row_f64(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                            double sa, const double *sb, const double *cm, double sy, int32_t zy,
                            int32_t qmin, int32_t qmax, uint8_t *out)
{
    const __m512d vsa = _mm512_set1_pd(sa);
    const __m512i vzr = _mm512_set1_epi32((int32_t)zr);
    const __m256i vzy = _mm256_set1_epi32(zy);
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256i q0, q1;
        __m512i x = corrected16(acc, zc, vzr, j);
        __m512d m0 = _mm512_mul_pd(vsa, _mm512_loadu_pd(cm + j));
        __m512d m1 = _mm512_mul_pd(vsa, _mm512_loadu_pd(cm + j + 8));
        __mmask8 d0 = lanes8(_mm512_castsi512_si256(x), m0, vzy, &q0);
        __mmask8 d1 = lanes8(_mm512_extracti64x4_epi64(x, 1), m1, vzy, &q1);
        if ((d0 & d1) != 0xff) {
            qmm_opt_requant_row(acc + j, zc ? zc + j : NULL, zr, 16, NULL, sa, sb + j, cm + j, sy,
                                zy, qmin, qmax, out + j);
            continue;
        }
        __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
        _mm_storeu_si128((__m128i *)(void *)(out + j), narrow16(q, qmin, qmax));
    }
    if (j < n)
        qmm_opt_requant_row_avx2(acc + j, zc ? zc + j : NULL, zr, n - j, NULL, sa, sb + j, cm + j,
                                 sy, zy, qmin, qmax, out + j);
}

/* With mf, the float first try (requant.c: the single-precision bound). Per 16 lanes:
 * v = fl32(fl32(x) * mf[j]) with round-to-nearest-even on every operation (embedded, so the
 * MXCSR does not matter), clamped to +-2^9, r = RNE(v); r decides when |v - r| < 1/2 - 2^-12.
 * Blocks it cannot decide, and the tail, take the double path. */
void qmm_opt_requant_row_avx512(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                                const float *mf, double sa, const double *sb, const double *cm,
                                double sy, int32_t zy, int32_t qmin, int32_t qmax, uint8_t *out)
{
    enum { RNE = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC };
    const __m512i vzr = _mm512_set1_epi32((int32_t)zr), vzy = _mm512_set1_epi32(zy);
    const __m512 lim = _mm512_set1_ps(QMM_OPT_F32_SAT), nlim = _mm512_set1_ps(-QMM_OPT_F32_SAT);
    const __m512 half = _mm512_set1_ps(QMM_OPT_F32_HALF);
    size_t j = 0;
    for (; mf && j + 16 <= n; j += 16) {
        __m512i x = corrected16(acc, zc, vzr, j);
        __m512 v = _mm512_mul_round_ps(_mm512_cvt_roundepi32_ps(x, RNE), _mm512_loadu_ps(mf + j),
                                       RNE);
        v = _mm512_min_ps(_mm512_max_ps(v, nlim), lim);
        __m512 d = _mm512_abs_ps(_mm512_reduce_ps(v, _MM_FROUND_TO_NEAREST_INT));
        if (_mm512_cmp_ps_mask(d, half, _CMP_LT_OQ) != 0xffff) {
            requant_row_f64(acc + j, zc ? zc + j : NULL, zr, 16, sa, sb + j, cm + j, sy, zy, qmin,
                            qmax, out + j);
            continue;
        }
        __m512i q = _mm512_add_epi32(_mm512_cvt_roundps_epi32(v, RNE), vzy);
        _mm_storeu_si128((__m128i *)(void *)(out + j), narrow16(q, qmin, qmax));
    }
    if (j < n)
        requant_row_f64(acc + j, zc ? zc + j : NULL, zr, n - j, sa, sb + j, cm + j, sy, zy, qmin,
                        qmax, out + j);
}
