/* optimized/cpu/nbits-avx2.c — MatMulNBits kernels (nbits_internal.h) with AVX2, no FMA (the
 * avx2 variant's CPUs need not have it): float dot products 8 lanes wide, dequantization 8
 * codes at a time, exact u8·s8 block sums as int16 words through vpmaddwd (every pair sum of
 * two 255·127 products fits int32: no saturating step). Built with -mavx2 only. */
#include <immintrin.h>

#include "optimized/cpu/nbits_internal.h"
#include "optimized/cpu/unroll.h"

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline int32_t hsum8i(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

static inline __attribute__((always_inline)) void dot_rows(size_t R, size_t kp,
                                                           const float *const a[4],
                                                           const float *const b[4],
                                                           float out[16])
{
    __m256 acc[4][4];
    QMM_UNROLL
    for (size_t r = 0; r < R; r++)
        QMM_UNROLL
        for (size_t c = 0; c < 4; c++)
            acc[r][c] = _mm256_setzero_ps();
    for (size_t k = 0; k < kp; k += 8) {
        __m256 bv[4];
        QMM_UNROLL
        for (size_t c = 0; c < 4; c++)
            bv[c] = _mm256_loadu_ps(b[c] + k);
        QMM_UNROLL
        for (size_t r = 0; r < R; r++) {
            __m256 av = _mm256_loadu_ps(a[r] + k);
            QMM_UNROLL
            for (size_t c = 0; c < 4; c++)
                acc[r][c] = _mm256_add_ps(acc[r][c], _mm256_mul_ps(av, bv[c]));
        }
    }
    QMM_UNROLL
    for (size_t r = 0; r < R; r++)
        QMM_UNROLL
        for (size_t c = 0; c < 4; c++)
            out[r * 4 + c] = hsum8(acc[r][c]);
}

static void dot_f32_avx2(size_t rows, size_t kp, const float *const a[4],
                         const float *const b[4], float out[16])
{
    switch (rows) {
    case 1: dot_rows(1, kp, a, b, out); break;
    case 2: dot_rows(2, kp, a, b, out); break;
    case 3: dot_rows(3, kp, a, b, out); break;
    default: dot_rows(4, kp, a, b, out); break;
    }
}

static void deq_avx2(const uint8_t *codes, size_t len, int32_t zp, float s, float *b)
{
    const __m256i z = _mm256_set1_epi32(zp);
    const __m256 sv = _mm256_set1_ps(s);
    for (size_t k = 0; k < len; k += 8) {
        __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(codes + k)));
        __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, z));
        _mm256_storeu_ps(b + k, _mm256_mul_ps(d, sv));
    }
}

static void bsum_avx2(const int8_t *qa, const uint8_t *codes, size_t nblk, size_t ab,
                      int32_t *isum)
{
    for (size_t g = 0; g < nblk; g++) {
        __m256i acc = _mm256_setzero_si256();
        for (size_t t = g * ab; t < (g + 1) * ab; t += 16) {
            __m256i q = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(codes + t)));
            __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(qa + t)));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(q, x));
        }
        isum[g] = hsum8i(acc);
    }
}

const qmm_nb_kernels qmm_nb_avx2 = {"avx2", dot_f32_avx2, deq_avx2, bsum_avx2};
