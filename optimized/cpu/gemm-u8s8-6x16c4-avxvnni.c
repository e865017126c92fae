/* optimized/cpu/gemm-u8s8-6x16c4-avxvnni.c — AVX-VNNI microkernel (built with -mavx2 -mavxvnni).
 *
 * vpdpbusd multiplies uint8 A' by int8 B' in quads and adds to int32 without saturation
 * (the "s" form saturates and is not used), so every product is exact and the sum wraps
 * modulo 2^32. The layout is the one pack.c's generic loop defines.
 */
#include <immintrin.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/cpu/unroll.h"

enum { MR = 6, NR = 16 };

/* The tile's first R rows (R a constant after inlining); A advances by MR words per group.
 * The loops over r are unrolled by pragma: at -O2 GCC 12 kept them rolled, with the
 * accumulators in memory (a load and a store around every vpdpbusd), for every R, the full
 * 6-row tile included: 1024^3 and 128x768x768 ran 2.6x slower (isa=avxvnni on a Zen 5, one
 * thread, 5 alternating rounds). */
static inline __attribute__((always_inline)) void tile(int R, size_t kgroups, const int32_t *a,
                                                      const int8_t *b, int32_t *c, size_t ldc,
                                                      int accumulate)
{
    __m256i acc[MR][2];
    QMM_UNROLL
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (size_t t = 0; t < kgroups; t++) {
        /* columns 0-7 then 8-15, four k per column */
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 32));
        QMM_UNROLL
        for (int r = 0; r < R; r++) {
            __m256i av = _mm256_set1_epi32(a[r]);
            acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
        }
        a += MR;
        b += NR * 4;
    }
    QMM_UNROLL
    for (int r = 0; r < R; r++) {
        __m256i *p0 = (__m256i *)(void *)(c + (size_t)r * ldc);
        __m256i *p1 = (__m256i *)(void *)(c + (size_t)r * ldc + 8);
        if (accumulate) {
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_loadu_si256(p0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_loadu_si256(p1));
        }
        _mm256_storeu_si256(p0, acc[r][0]);
        _mm256_storeu_si256(p1, acc[r][1]);
    }
}

qmm_opt_kernel_ft qmm_gemm_u8s8_6x16c4__avxvnni; /* kernels.c */
void qmm_gemm_u8s8_6x16c4__avxvnni(size_t rows, size_t kgroups, const int32_t *a,
                                   const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    (void)rows; /* MR: partial groups take qmm_gemm_u8s8_rx16c4__avxvnni */
    tile(MR, kgroups, a, b, c, ldc, accumulate);
}

/* Partial groups: the last rows of M, and M < 6 with a prepacked B. */
qmm_opt_kernel_ft qmm_gemm_u8s8_rx16c4__avxvnni; /* kernels.c */
void qmm_gemm_u8s8_rx16c4__avxvnni(size_t rows, size_t kgroups, const int32_t *a,
                                   const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    switch (rows) {
    case 1: tile(1, kgroups, a, b, c, ldc, accumulate); break;
    case 2: tile(2, kgroups, a, b, c, ldc, accumulate); break;
    case 3: tile(3, kgroups, a, b, c, ldc, accumulate); break;
    case 4: tile(4, kgroups, a, b, c, ldc, accumulate); break;
    case 5: tile(5, kgroups, a, b, c, ldc, accumulate); break;
    default: tile(MR, kgroups, a, b, c, ldc, accumulate); break;
    }
}

/* Column sums of packed panels (16 columns x kgroups each, panel p at b + p*pstride), as
 * qmm_colsum_s8_32c4__avx512vnni: vpdpbusd with all-ones uint8, wrapping modulo 2^32. */
qmm_opt_colsum_ft qmm_colsum_s8_16c4__avxvnni; /* kernels.c */
void qmm_colsum_s8_16c4__avxvnni(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                                 int32_t *colsum)
{
    const __m256i ones = _mm256_set1_epi8(1);
    for (size_t p = 0; p < npanels; p++) {
        const int8_t *bp = b + p * pstride;
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        for (size_t t = 0; t < kgroups; t++) {
            s0 = _mm256_dpbusd_avx_epi32(
                s0, ones, _mm256_loadu_si256((const __m256i *)(const void *)(bp + t * 64)));
            s1 = _mm256_dpbusd_avx_epi32(
                s1, ones, _mm256_loadu_si256((const __m256i *)(const void *)(bp + t * 64 + 32)));
        }
        _mm256_storeu_si256((__m256i *)(void *)(colsum + p * NR), s0);
        _mm256_storeu_si256((__m256i *)(void *)(colsum + p * NR + 8), s1);
    }
}

/* Peak loop: 12 independent ymm vpdpbusd chains, no loads, in assembly (as the AVX-512 one:
 * in C the loop's shape was the compiler's); {vex}: the AVX-VNNI encoding, never the EVEX one
 * a CPU without AVX-512 faults on. 12 x 32 int8 MACs per iteration. */
qmm_opt_peak_ft qmm_peak_u8s8__avxvnni; /* kernels.c */
uint64_t qmm_peak_u8s8__avxvnni(uint64_t iters)
{
    __m256i x = _mm256_set1_epi32(0x01020304), y = _mm256_set1_epi32(0x05060708);
    for (uint64_t i = 0; i < iters; i++)
        __asm__ volatile(
            "%{vex%} vpdpbusd %[y], %[x], %%ymm0\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm1\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm2\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm3\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm4\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm5\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm6\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm7\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm8\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm9\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm10\n\t"
            "%{vex%} vpdpbusd %[y], %[x], %%ymm11\n\t"
            :
            : [x] "x"(x), [y] "x"(y)
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
              "xmm10", "xmm11");
    __asm__ volatile("vzeroupper" ::: "memory");
    return iters * 12u * 32u;
}
