/* optimized/cpu/gemm-u8s8-6x16c4-avxvnni.c — AVX-VNNI microkernel (built with -mavx2 -mavxvnni).
 *
 * vpdpbusd multiplies uint8 A' by int8 B' in quads and adds to int32 without saturation
 * (the "s" form saturates and is not used), so every product is exact and the sum wraps
 * modulo 2^32. The layout is the one pack.c's generic loop defines.
 */
#include <immintrin.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/cpu/unroll.h"

enum { MR = 6, NR = 16 };

/* The tile's first R rows (R a constant after inlining); A advances by MR words per group,
 * or, with RAW (a constant after inlining), the four bytes of each row of araw (a uint8 A as
 * it is, row stride lda) are broadcast from the row itself (the packed word is those bytes).
 * The loops over r are unrolled by pragma: at -O2 GCC 12 kept them rolled, with the
 * accumulators in memory (a load and a store around every vpdpbusd), for every R, the full
 * 6-row tile included: 1024^3 and 128x768x768 ran 2.6x slower (isa=avxvnni on a Zen 5, one
 * thread, 5 alternating rounds). */
static inline __attribute__((always_inline)) void tile(int R, int RAW, size_t kgroups,
                                                      const int32_t *a, const uint8_t *araw,
                                                      size_t lda,
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
            int32_t w;
            if (RAW)
                memcpy(&w, araw + (size_t)r * lda, 4);
            else
                w = a[r];
            __m256i av = _mm256_set1_epi32(w);
            acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
        }
        if (RAW)
            araw += 4;
        else
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
    tile(MR, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate);
}

/* The 6x16 kernel on a uint8 A as it is (row stride lda): no packing pass over A's full row
 * groups (the driver's raw A, matmul.c). */
qmm_opt_kernel_raw_a_ft qmm_gemm_u8s8_6x16c4_rawa__avxvnni; /* kernels.c */
void qmm_gemm_u8s8_6x16c4_rawa__avxvnni(size_t kgroups, const uint8_t *a, size_t lda,
                                        const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    tile(MR, 1, kgroups, NULL, a, lda, b, c, ldc, accumulate);
}

/* Partial groups: the last rows of M, and M < 6 with a prepacked B. */
qmm_opt_kernel_ft qmm_gemm_u8s8_rx16c4__avxvnni; /* kernels.c */
void qmm_gemm_u8s8_rx16c4__avxvnni(size_t rows, size_t kgroups, const int32_t *a,
                                   const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    switch (rows) {
    case 1: tile(1, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate); break;
    case 2: tile(2, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate); break;
    case 3: tile(3, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate); break;
    case 4: tile(4, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate); break;
    case 5: tile(5, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate); break;
    default: tile(MR, 0, kgroups, a, NULL, 0, b, c, ldc, accumulate); break;
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

/* Row q of two K groups of a 16-column panel: group t's in the low 128-bit lane (src + q *
 * ldb), group t + 1's in the high one (4 rows further), each in B' form (flipped), or 0 past
 * the group's `left0` / `left1` rows. */
static inline __attribute__((always_inline)) __m256i packb_rows2(const uint8_t *src, size_t ldb,
                                                                 size_t q, size_t left0,
                                                                 size_t left1, __m128i flip)
{
    __m128i lo = q < left0 ? _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(
                                               src + q * ldb)), flip)
                           : _mm_setzero_si128();
    __m128i hi = q < left1 ? _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(
                                               src + (4 + q) * ldb)), flip)
                           : _mm_setzero_si128();
    return _mm256_setr_m128i(lo, hi);
}

/* Rows in K group t of k rows: 4, then k's remainder, then 0. */
static inline size_t group_rows(size_t k, size_t t)
{
    return 4 * t >= k ? 0 : k - 4 * t < 4 ? k - 4 * t : 4;
}

/* B packing for the nr-16 quads layout with its column sums in one pass (qmm_opt_pack_b's
 * layout and sums, bit for bit; colsum must not be NULL, as with every quads layout). Two K
 * groups at a time: each 256-bit row holds the panel's 16 bytes of a row of group t (low
 * lane) and of group t + 1 (high lane), so the in-lane byte and word unpacks form both groups'
 * column quads at once, and two lane permutes put each group's 64 bytes together (group t + 1
 * follows group t in the panel). vpdpbusd with an all-ones uint8 operand adds each column's
 * values into its sum (wrapping, as every accumulator). Edge panels take qmm_opt_pack_b and
 * qmm_colsum_s8_16c4__avxvnni. Before: the layout's scalar packer and a separate column-sum
 * pass, 5.4% and 1.6% of the samples of a 128x768x768 T = 1 call, Zen 5. */
qmm_opt_pack_b_ft qmm_packb_s8_16c4__avxvnni; /* kernels.c */
void qmm_packb_s8_16c4__avxvnni(const qmm_opt_variant *var, const uint8_t *b, size_t ldb,
                                int b_signed, size_t k, size_t kgroups, size_t j0, size_t j1,
                                int8_t *dst, int32_t *colsum)
{
    const __m128i flip = _mm_set1_epi8(b_signed ? 0 : (char)0x80);
    const __m256i ones = _mm256_set1_epi8(1);
    size_t pstride = kgroups * NR * 4, j = j0;
    for (; j + NR <= j1 && j + NR <= ldb; j += NR) {
        int8_t *o = dst + (j - j0) / NR * pstride;
        const uint8_t *src = b + j;
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        for (size_t t = 0; t < kgroups; t += 2, o += 2 * NR * 4, src += 8 * ldb) {
            size_t left0 = group_rows(k, t), left1 = t + 1 < kgroups ? group_rows(k, t + 1) : 0;
            __m256i r0 = packb_rows2(src, ldb, 0, left0, left1, flip);
            __m256i r1 = packb_rows2(src, ldb, 1, left0, left1, flip);
            __m256i r2 = packb_rows2(src, ldb, 2, left0, left1, flip);
            __m256i r3 = packb_rows2(src, ldb, 3, left0, left1, flip);
            __m256i lo01 = _mm256_unpacklo_epi8(r0, r1), hi01 = _mm256_unpackhi_epi8(r0, r1);
            __m256i lo23 = _mm256_unpacklo_epi8(r2, r3), hi23 = _mm256_unpackhi_epi8(r2, r3);
            /* per lane (group): columns 0-3, 4-7, 8-11, 12-15 */
            __m256i e0 = _mm256_unpacklo_epi16(lo01, lo23), e1 = _mm256_unpackhi_epi16(lo01, lo23);
            __m256i e2 = _mm256_unpacklo_epi16(hi01, hi23), e3 = _mm256_unpackhi_epi16(hi01, hi23);
            __m256i v0 = _mm256_permute2x128_si256(e0, e1, 0x20); /* group t: columns 0-7 */
            __m256i v1 = _mm256_permute2x128_si256(e2, e3, 0x20); /* ... 8-15 */
            _mm256_storeu_si256((__m256i *)(void *)o, v0);
            _mm256_storeu_si256((__m256i *)(void *)(o + 32), v1);
            s0 = _mm256_dpbusd_avx_epi32(s0, ones, v0);
            s1 = _mm256_dpbusd_avx_epi32(s1, ones, v1);
            if (t + 1 < kgroups) {
                __m256i v2 = _mm256_permute2x128_si256(e0, e1, 0x31); /* group t + 1 */
                __m256i v3 = _mm256_permute2x128_si256(e2, e3, 0x31);
                _mm256_storeu_si256((__m256i *)(void *)(o + 64), v2);
                _mm256_storeu_si256((__m256i *)(void *)(o + 96), v3);
                s2 = _mm256_dpbusd_avx_epi32(s2, ones, v2);
                s3 = _mm256_dpbusd_avx_epi32(s3, ones, v3);
            }
        }
        _mm256_storeu_si256((__m256i *)(void *)(colsum + (j - j0)), _mm256_add_epi32(s0, s2));
        _mm256_storeu_si256((__m256i *)(void *)(colsum + (j - j0) + 8), _mm256_add_epi32(s1, s3));
    }
    if (j < j1) {
        int8_t *o = dst + (j - j0) / NR * pstride;
        qmm_opt_pack_b(var->layout, b, ldb, b_signed, k, kgroups, j, j1, o);
        qmm_colsum_s8_16c4__avxvnni(o, kgroups, (j1 - j + NR - 1) / NR, pstride,
                                    colsum + (j - j0));
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
