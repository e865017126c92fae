/* optimized/cpu/nbits-avx512.c — MatMulNBits kernels (nbits_internal.h) with AVX-512: float
 * dot products 16 lanes wide with FMA, dequantization 16 codes at a time, exact u8·s8 block
 * sums with vpdpbusd (AVX-512 VNNI: four products per int32 lane, no saturation), several
 * small blocks per vector. Built with -mavx512f -mavx512bw -mavx512vl -mavx512vnni. */
#include <immintrin.h>

#include "optimized/cpu/nbits_internal.h"
#include "optimized/cpu/unroll.h"

static inline __attribute__((always_inline)) void dot_rows(size_t R, size_t kp,
                                                           const float *const a[4],
                                                           const float *const b[4],
                                                           float out[16])
{
    __m512 acc[4][4];
    QMM_UNROLL
    for (size_t r = 0; r < R; r++)
        QMM_UNROLL
        for (size_t c = 0; c < 4; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (size_t k = 0; k < kp; k += 16) {
        __m512 bv[4];
        QMM_UNROLL
        for (size_t c = 0; c < 4; c++)
            bv[c] = _mm512_loadu_ps(b[c] + k);
        QMM_UNROLL
        for (size_t r = 0; r < R; r++) {
            __m512 av = _mm512_loadu_ps(a[r] + k);
            QMM_UNROLL
            for (size_t c = 0; c < 4; c++)
                acc[r][c] = _mm512_fmadd_ps(av, bv[c], acc[r][c]);
        }
    }
    QMM_UNROLL
    for (size_t r = 0; r < R; r++)
        QMM_UNROLL
        for (size_t c = 0; c < 4; c++)
            out[r * 4 + c] = _mm512_reduce_add_ps(acc[r][c]);
}

static void dot_f32_avx512(size_t rows, size_t kp, const float *const a[4],
                           const float *const b[4], float out[16])
{
    switch (rows) {
    case 1: dot_rows(1, kp, a, b, out); break;
    case 2: dot_rows(2, kp, a, b, out); break;
    case 3: dot_rows(3, kp, a, b, out); break;
    default: dot_rows(4, kp, a, b, out); break;
    }
}

static void deq_avx512(const uint8_t *codes, size_t len, int32_t zp, float s, float *b)
{
    const __m512i z = _mm512_set1_epi32(zp);
    const __m512 sv = _mm512_set1_ps(s);
    for (size_t k = 0; k < len; k += 16) {
        __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes + k)));
        __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(q, z));
        _mm512_storeu_ps(b + k, _mm512_mul_ps(d, sv));
    }
}

static void bsum_avx512(const int8_t *qa, const uint8_t *codes, size_t nblk, size_t ab,
                        int32_t *isum)
{
    size_t g = 0;
    if (ab == 16) {
        /* four blocks per vector: each 128-bit lane's four int32 summed, lanes 0, 4, 8, 12 */
        for (; g + 4 <= nblk; g += 4) {
            __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                            _mm512_loadu_si512(codes + g * 16),
                                            _mm512_loadu_si512(qa + g * 16));
            d = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_CDAB));
            d = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_BADC));
            _mm_storeu_si128((__m128i *)(isum + g), _mm512_castsi512_si128(
                                                        _mm512_maskz_compress_epi32(0x1111, d)));
        }
    } else if (ab == 32) {
        for (; g + 2 <= nblk; g += 2) {
            __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                            _mm512_loadu_si512(codes + g * 32),
                                            _mm512_loadu_si512(qa + g * 32));
            d = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_CDAB));
            d = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_BADC));
            d = _mm512_add_epi32(d, _mm512_shuffle_i64x2(d, d, _MM_SHUFFLE(2, 3, 0, 1)));
            isum[g] = _mm512_cvtsi512_si32(d);
            isum[g + 1] = _mm_cvtsi128_si32(_mm512_extracti32x4_epi32(d, 2));
        }
    } else {
        for (; g < nblk; g++) {
            __m512i acc = _mm512_setzero_si512();
            for (size_t t = g * ab; t < (g + 1) * ab; t += 64)
                acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(codes + t),
                                          _mm512_loadu_si512(qa + t));
            isum[g] = _mm512_reduce_add_epi32(acc);
        }
    }
    for (; g < nblk; g++) {
        __m128i acc = _mm_setzero_si128();
        for (size_t t = g * ab; t < (g + 1) * ab; t += 16)
            acc = _mm_dpbusd_epi32(acc, _mm_loadu_si128((const __m128i *)(codes + t)),
                                   _mm_loadu_si128((const __m128i *)(qa + t)));
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4e));
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xb1));
        isum[g] = _mm_cvtsi128_si32(acc);
    }
}

const qmm_nb_kernels qmm_nb_avx512 = {"avx512", dot_f32_avx512, deq_avx512, bsum_avx512};
