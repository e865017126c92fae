/* optimized/cpu/gemm-avx2.c — AVX2 microkernels (this file alone is built with -mavx2).
 *
 * Exactness: vpmaddubsw's int16 pair sums saturate (255*127*2 > 32767), so they are not used.
 * Operands are widened to int16 instead and multiplied with vpmaddwd, whose pair sums
 * (|a-za| <= 255, |b'| <= 128: at most 2*255*128 = 65280) are exact in int32; the int32
 * accumulation wraps modulo 2^32 like the contract's accumulator.
 *
 * Why widening rather than splitting u8 a into (a & 0x7f) + 128*(a >> 7) for two exact
 * vpmaddubsw: the split needs two vpmaddubsw plus a vpmaddwd to widen for every 32 MACs
 * (3 multiply-port ops), widening needs two vpmaddwd (2 ops) — and it also lets A carry
 * a - za exactly, which removes one zero-point correction term.
 */
#include <immintrin.h>

#include "optimized/cpu/opt_internal.h"

enum { MR = 6, NR = 16 };

void qmm_opt_kernel_avx2_6x16(size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,
                              size_t ldc, int accumulate)
{
    /* The loop is assembly because compilers spill some of the 12 accumulators when the 16
     * ymm registers are exactly enough (12 accumulators ymm0-11, 2 B vectors ymm12-13, a
     * broadcast ymm14, a product ymm15). Per k pair: 16 columns x 2 k of int8 B sign-extended
     * to int16 pairs; each row's (a0, a1) int16 pair broadcast. */
    int32_t tile[MR * NR] __attribute__((aligned(32)));
    size_t kt = kgroups;
    __asm__ volatile(
        "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
        "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
        "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"
        "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"
        "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
        "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"
        "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"
        "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"
        "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"
        "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"
        "vpxor %%xmm10, %%xmm10, %%xmm10\n\t"
        "vpxor %%xmm11, %%xmm11, %%xmm11\n\t"
        "test %[k], %[k]\n\t"
        "jz 2f\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "vpmovsxbw (%[b]), %%ymm12\n\t"
        "vpmovsxbw 16(%[b]), %%ymm13\n\t"
        "vbroadcastss (%[a]), %%ymm14\n\t"
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm0, %%ymm0\n\t"
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm1, %%ymm1\n\t"
        "vbroadcastss 4(%[a]), %%ymm14\n\t"
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm2, %%ymm2\n\t"
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm3, %%ymm3\n\t"
        "vbroadcastss 8(%[a]), %%ymm14\n\t"
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm4, %%ymm4\n\t"
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm5, %%ymm5\n\t"
        "vbroadcastss 12(%[a]), %%ymm14\n\t"
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm6, %%ymm6\n\t"
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm7, %%ymm7\n\t"
        "vbroadcastss 16(%[a]), %%ymm14\n\t"
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm8, %%ymm8\n\t"
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm9, %%ymm9\n\t"
        "vbroadcastss 20(%[a]), %%ymm14\n\t"
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm10, %%ymm10\n\t"
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"
        "vpaddd %%ymm15, %%ymm11, %%ymm11\n\t"
        "add $24, %[a]\n\t"
        "add $32, %[b]\n\t"
        "dec %[k]\n\t"
        "jnz 1b\n"
        "2:\n\t"
        "vmovdqa %%ymm0, 0(%[t])\n\t"
        "vmovdqa %%ymm1, 32(%[t])\n\t"
        "vmovdqa %%ymm2, 64(%[t])\n\t"
        "vmovdqa %%ymm3, 96(%[t])\n\t"
        "vmovdqa %%ymm4, 128(%[t])\n\t"
        "vmovdqa %%ymm5, 160(%[t])\n\t"
        "vmovdqa %%ymm6, 192(%[t])\n\t"
        "vmovdqa %%ymm7, 224(%[t])\n\t"
        "vmovdqa %%ymm8, 256(%[t])\n\t"
        "vmovdqa %%ymm9, 288(%[t])\n\t"
        "vmovdqa %%ymm10, 320(%[t])\n\t"
        "vmovdqa %%ymm11, 352(%[t])\n\t"
        : [a] "+r"(a), [b] "+r"(b), [k] "+r"(kt)
        : [t] "r"(tile)
        : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    for (int r = 0; r < MR; r++) {
        __m256i *p0 = (__m256i *)(void *)(c + (size_t)r * ldc);
        __m256i *p1 = (__m256i *)(void *)(c + (size_t)r * ldc + 8);
        __m256i x0 = _mm256_load_si256((const __m256i *)(const void *)(tile + r * NR));
        __m256i x1 = _mm256_load_si256((const __m256i *)(const void *)(tile + r * NR + 8));
        if (accumulate) {
            x0 = _mm256_add_epi32(x0, _mm256_loadu_si256(p0));
            x1 = _mm256_add_epi32(x1, _mm256_loadu_si256(p1));
        }
        _mm256_storeu_si256(p0, x0);
        _mm256_storeu_si256(p1, x1);
    }
}

/* Widens 8 interleaved byte pairs to int16 pairs, by b's signedness. */
static inline __m256i widen(__m128i x, int b_signed)
{
    return b_signed ? _mm256_cvtepi8_epi16(x) : _mm256_cvtepu8_epi16(x);
}

/* One k pair (rows kk and kk+1, or kk and zeros when x1z) of a 16*cb-column block. */
static inline __attribute__((always_inline)) void
gemv_step(size_t rows, size_t cb, const int32_t *a, size_t lda, size_t t, const uint8_t *r0,
          const uint8_t *r1, int b_signed, __m256i acc[4][8])
{
    __m256i w[8];
    for (size_t q = 0; q < cb; q++) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(r0 + 16 * q));
        __m128i x1 = r1 ? _mm_loadu_si128((const __m128i *)(const void *)(r1 + 16 * q))
                        : _mm_setzero_si128();
        w[2 * q] = widen(_mm_unpacklo_epi8(x0, x1), b_signed);
        w[2 * q + 1] = widen(_mm_unpackhi_epi8(x0, x1), b_signed);
    }
    for (size_t r = 0; r < rows; r++) {
        __m256i av = _mm256_set1_epi32(a[r * lda + t]);
        for (size_t q = 0; q < 2 * cb; q++)
            acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(av, w[q]));
    }
}

/* The small-M kernel body for a fixed row count, column-block width (cb groups of 16) and
 * signedness (constants after inlining, so the accumulators stay in registers). K is walked
 * in blocks of GEMV_KB rows with the partial sums parked in c between blocks: a block of B
 * (GEMV_KB rows x the task's columns) then stays in L2 and in the TLB while every column
 * block passes over it, instead of each column block walking all K rows (one page each). */
enum { GEMV_KB = 256 };

static inline __attribute__((always_inline)) void
gemv_rows(size_t rows, size_t cb, size_t k, const int32_t *a, size_t lda, const uint8_t *b,
          size_t ldb, int b_signed, size_t n, int32_t *c, size_t ldc)
{
    size_t width = 16 * cb, nfull = n / width * width;
    for (size_t k0 = 0; k0 < k || (k0 == 0 && k == 0); k0 += GEMV_KB) {
        size_t k1 = k0 + GEMV_KB < k ? k0 + GEMV_KB : k; /* even except at the end of K */
        for (size_t j = 0; j < nfull; j += width) {
            __m256i acc[4][8];
            for (size_t r = 0; r < rows; r++)
                for (size_t q = 0; q < 2 * cb; q++)
                    acc[r][q] = k0 == 0 ? _mm256_setzero_si256()
                                        : _mm256_loadu_si256((const __m256i *)(const void *)(
                                              c + r * ldc + j + 8 * q));
            const uint8_t *bp = b + j;
            size_t kk = k0;
            for (; kk + 1 < k1; kk += 2)
                gemv_step(rows, cb, a, lda, kk / 2, bp + kk * ldb, bp + (kk + 1) * ldb,
                          b_signed, acc);
            if (kk < k1) /* the odd last k pairs with zeros; a's pad half is 0 too */
                gemv_step(rows, cb, a, lda, kk / 2, bp + kk * ldb, NULL, b_signed, acc);
            for (size_t r = 0; r < rows; r++)
                for (size_t q = 0; q < 2 * cb; q++)
                    _mm256_storeu_si256((__m256i *)(void *)(c + r * ldc + j + 8 * q),
                                        acc[r][q]);
        }
        if (k == 0)
            break;
    }
    /* fewer than `width` columns left: the same sums, one element at a time */
    for (size_t j = nfull; j < n; j++)
        for (size_t r = 0; r < rows; r++) {
            uint32_t s = 0;
            for (size_t kk = 0; kk < k; kk++) {
                uint32_t w = (uint32_t)a[r * lda + kk / 2];
                int32_t av = (int32_t)(int16_t)(uint16_t)((kk & 1) ? w >> 16 : w & 0xffffu);
                int32_t bv = b_signed ? (int32_t)(int8_t)b[kk * ldb + j] : (int32_t)b[kk * ldb + j];
                s += (uint32_t)(av * bv);
            }
            c[r * ldc + j] = (int32_t)s;
        }
}

void qmm_opt_gemv_avx2(size_t rows, size_t k, const int32_t *a, size_t lda, const uint8_t *b,
                       size_t ldb, int b_signed, size_t n, int32_t *c, size_t ldc)
{
#define QMM_CASE(R, CB)                                                                     \
    case R:                                                                                 \
        if (b_signed)                                                                       \
            gemv_rows(R, CB, k, a, lda, b, ldb, 1, n, c, ldc);                              \
        else                                                                                \
            gemv_rows(R, CB, k, a, lda, b, ldb, 0, n, c, ldc);                              \
        break;
    switch (rows) {
        QMM_CASE(1, 4)
        QMM_CASE(2, 2)
        QMM_CASE(3, 1)
        QMM_CASE(4, 1)
    default: break;
    }
#undef QMM_CASE
}

/* Peak loop: the kernel's arithmetic (vpmaddwd + vpaddd pairs) with no loads, 12 independent
 * accumulators so latency never limits; 12 vpmaddwd = 12*16 int8 MACs per iteration. */
uint64_t qmm_opt_peak_avx2(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++) {
        __asm__ volatile(
            "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\t"
            "vpaddd %%ymm12, %%ymm0, %%ymm0\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm13\n\t"
            "vpaddd %%ymm13, %%ymm1, %%ymm1\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\t"
            "vpaddd %%ymm12, %%ymm2, %%ymm2\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm13\n\t"
            "vpaddd %%ymm13, %%ymm3, %%ymm3\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\t"
            "vpaddd %%ymm12, %%ymm4, %%ymm4\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm13\n\t"
            "vpaddd %%ymm13, %%ymm5, %%ymm5\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\t"
            "vpaddd %%ymm12, %%ymm6, %%ymm6\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm13\n\t"
            "vpaddd %%ymm13, %%ymm7, %%ymm7\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\t"
            "vpaddd %%ymm12, %%ymm8, %%ymm8\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm13\n\t"
            "vpaddd %%ymm13, %%ymm9, %%ymm9\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm12\n\t"
            "vpaddd %%ymm12, %%ymm10, %%ymm10\n\t"
            "vpmaddwd %%ymm14, %%ymm15, %%ymm13\n\t"
            "vpaddd %%ymm13, %%ymm11, %%ymm11\n\t"
            :
            :
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
              "xmm10", "xmm11", "xmm12", "xmm13");
    }
    __asm__ volatile("vzeroupper" ::: "memory");
    return iters * 12u * 16u;
}
