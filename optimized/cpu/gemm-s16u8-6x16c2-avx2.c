/* optimized/cpu/gemm-s16u8-6x16c2-avx2.c — AVX2 microkernels (this file alone is built with
 * -mavx2).
 *
 * Exactness: vpmaddubsw's int16 pair sums saturate (255*127*2 > 32767), so they are not used.
 * Operands are widened to int16 instead and multiplied with vpmaddwd, whose pair sums
 * (|a-za| <= 255, B in unsigned form 0..255: at most 2*255*255 = 130050) are exact in int32;
 * the int32 accumulation wraps modulo 2^32 like the contract's accumulator. B is widened by
 * masking/shifting 16-bit words ("unsigned words" packed layout) or by in-lane byte unpacks
 * (small M on an unpacked B), never by vpmovsxbw (slow on Zen 3).
 *
 * Why widening rather than splitting u8 a into (a & 0x7f) + 128*(a >> 7) for two exact
 * vpmaddubsw: the split needs two vpmaddubsw plus a vpmaddwd to widen for every 32 MACs
 * (3 multiply-port ops), widening needs two vpmaddwd (2 ops) — and it also lets A carry
 * a - za exactly, which removes one zero-point correction term.
 */
#include <immintrin.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/cpu/unroll.h"

enum { MR = 6, NR = 16 };

/* Selects the low byte of every 16-bit word (the "unsigned words" layout, pack.c). */
static const uint16_t lo_bytes[16] __attribute__((aligned(32))) = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* One k pair of the 6x16 tile (the loop of qmm_gemm_s16u8_6x16c2__avx2): A's six pair words at
 * byte offset OA (a string: an assembler expression) from %[a], B's 32 bytes at OB from %[b] */
#define QMM_AVX2_PAIR(OA, OB) \
        "vmovdqu " OB "(%[b]), %%ymm13\n\t" \
        "vpand %[mask], %%ymm13, %%ymm12\n\t" \
        "vpsrlw $8, %%ymm13, %%ymm13\n\t" \
        "vbroadcastss " OA "+0(%[a]), %%ymm14\n\t" \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm0, %%ymm0\n\t" \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm1, %%ymm1\n\t" \
        "vbroadcastss " OA "+4(%[a]), %%ymm14\n\t" \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm2, %%ymm2\n\t" \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm3, %%ymm3\n\t" \
        "vbroadcastss " OA "+8(%[a]), %%ymm14\n\t" \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm4, %%ymm4\n\t" \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm5, %%ymm5\n\t" \
        "vbroadcastss " OA "+12(%[a]), %%ymm14\n\t" \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm6, %%ymm6\n\t" \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm7, %%ymm7\n\t" \
        "vbroadcastss " OA "+16(%[a]), %%ymm14\n\t" \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm8, %%ymm8\n\t" \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm9, %%ymm9\n\t" \
        "vbroadcastss " OA "+20(%[a]), %%ymm14\n\t" \
        "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm10, %%ymm10\n\t" \
        "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t" \
        "vpaddd %%ymm15, %%ymm11, %%ymm11\n\t"

qmm_opt_kernel_ft qmm_gemm_s16u8_6x16c2__avx2; /* kernels.c */
void qmm_gemm_s16u8_6x16c2__avx2(size_t rows, size_t kgroups, const int32_t *a, const int8_t *b,
                                 int32_t *c, size_t ldc, int accumulate)
{
    (void)rows; /* the full tile always: it is the partial-rows kernel too (opt_internal.h) */
    /* The loop is assembly because compilers spill some of the 12 accumulators when the 16
     * ymm registers are exactly enough (12 accumulators ymm0-11, 2 B vectors ymm12-13, a
     * broadcast ymm14, a product ymm15). Per k pair: one 32-byte load of the "unsigned words"
     * B panel (pack.c); `vpand 0x00ff` gives columns 0-7 and `vpsrlw 8` columns 8-15 as
     * (k, k+1) int16 pairs of B'' in 0..255 (no vpmovsxbw: ~0.8/cycle on Zen 3 and in the
     * multiply pipes' way); each row's (a0 - za, a1 - za) int16 pair broadcast. Pair sums
     * <= 2*255*255: exact in int32. */
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
        "test $1, %[k]\n\t"
        "jz 1f\n\t"
        QMM_AVX2_PAIR("0", "0")
        "add $24, %[a]\n\t"
        "add $32, %[b]\n\t"
        "dec %[k]\n\t"
        "jz 2f\n\t"
        ".p2align 5\n"
        "1:\n\t"
        QMM_AVX2_PAIR("0", "0")
        QMM_AVX2_PAIR("24", "32")
        "add $48, %[a]\n\t"
        "add $64, %[b]\n\t"
        "sub $2, %[k]\n\t"
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
        : [t] "r"(tile), [mask] "m"(lo_bytes)
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

/* ---- small M on an unpacked B (row-major [K, N], read in place) ----
 *
 * B is streamed row by row: a pass takes GEMV_PP pairs of k rows (2*GEMV_PP rows) and walks
 * them from the first to the last column of the call, so every row is read sequentially
 * (hardware prefetch, one TLB entry per page); the int32 sums of the call's columns (rows x n,
 * at most 16 KB for the widths the driver uses) stay in L1 between passes.
 *
 * B is taken in "unsigned form" u = b (uint8) or b ^ 0x80 = b + 128 (int8), 0..255; the
 * driver corrects with zbp = zb (+128 for int8). Per 32 columns and k pair: the two rows'
 * 32-byte loads are interleaved in-lane (vpunpck{l,h}bw) and zero-extended in-lane
 * (vpunpck{l,h}bw with 0) into four vectors of (u[k][j], u[k+1][j]) int16 pairs — six cheap
 * in-lane shuffles, no vpmovsxbw (slow on Zen 3) — and multiplied by each row's broadcast
 * (a[k] - za, a[k+1] - za) pair with vpmaddwd: pair sums <= 2*255*255, exact in int32; the
 * int32 sums wrap like the contract's accumulator. The in-lane order leaves the four
 * accumulators of a 32-column block holding columns {0-3,16-19}, {4-7,20-23}, {8-11,24-27},
 * {12-15,28-31}; they stay so in c between passes and are put in order at the end.
 * The loops over rows, pairs and vectors here and in gemvp_block are unrolled by pragma: at
 * -O2 GCC 12 kept them rolled, the accumulators in memory (1x4096x4096, B input: 1.58 against
 * 0.40 ms; with isa=avx2 and a prepacked B 0.71 against 0.26 ms; Zen 5, 5 alternating
 * rounds). tests/kernel_unrolled.sh checks the instruction counts. */
enum { GEMV_PP = 4 };

static inline __attribute__((always_inline)) void
gemv_stream_rows(size_t rows, size_t np, int odd, const int32_t *a, size_t lda, size_t t0,
                 const uint8_t *const *rp, int b_signed, size_t n32, int32_t *c, size_t ldc)
{
    /* np pairs (np <= GEMV_PP) starting at k pair t0; rp[2q], rp[2q+1] the rows of pair q;
     * odd (np 1 only): the last k row alone, paired with zeros (a's pad half is 0 too) */
    const __m256i flip = _mm256_set1_epi8(b_signed ? (char)0x80 : 0);
    const __m256i zero = _mm256_setzero_si256();
    __m256i av[4][GEMV_PP];
    QMM_UNROLL
    for (size_t r = 0; r < rows; r++)
        QMM_UNROLL
        for (size_t q = 0; q < np; q++)
            av[r][q] = _mm256_set1_epi32(a[r * lda + t0 + q]);
    for (size_t j = 0; j < n32; j += 32) {
        __m256i acc[4][4];
        QMM_UNROLL
        for (size_t r = 0; r < rows; r++)
            QMM_UNROLL
            for (size_t v = 0; v < 4; v++)
                acc[r][v] =
                    _mm256_loadu_si256((const __m256i *)(const void *)(c + r * ldc + j + 8 * v));
        QMM_UNROLL
        for (size_t q = 0; q < np; q++) {
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(rp[2 * q] + j));
            __m256i x1 = odd ? flip
                             : _mm256_loadu_si256(
                                   (const __m256i *)(const void *)(rp[2 * q + 1] + j));
            if (b_signed) {
                x0 = _mm256_xor_si256(x0, flip);
                x1 = _mm256_xor_si256(x1, flip); /* odd: 0 */
            }
            __m256i plo = _mm256_unpacklo_epi8(x0, x1), phi = _mm256_unpackhi_epi8(x0, x1);
            __m256i w[4] = {_mm256_unpacklo_epi8(plo, zero), _mm256_unpackhi_epi8(plo, zero),
                            _mm256_unpacklo_epi8(phi, zero), _mm256_unpackhi_epi8(phi, zero)};
            QMM_UNROLL
            for (size_t r = 0; r < rows; r++)
                QMM_UNROLL
                for (size_t v = 0; v < 4; v++)
                    acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(av[r][q], w[v]));
        }
        QMM_UNROLL
        for (size_t r = 0; r < rows; r++)
            QMM_UNROLL
            for (size_t v = 0; v < 4; v++)
                _mm256_storeu_si256((__m256i *)(void *)(c + r * ldc + j + 8 * v), acc[r][v]);
    }
}

static inline __attribute__((always_inline)) void
gemv_rows(size_t rows, size_t k, const int32_t *a, size_t lda, const uint8_t *b, size_t ldb,
          int b_signed, size_t n, int32_t *c, size_t ldc)
{
    size_t n32 = n / 32 * 32;
    uint8_t flip = b_signed ? 0x80 : 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < n32; j++)
            c[r * ldc + j] = 0;
    const uint8_t *rp[2 * GEMV_PP];
    size_t kk = 0;
    if (n32) {
        for (; kk + 2 * GEMV_PP <= k; kk += 2 * GEMV_PP) {
            for (size_t i = 0; i < 2 * GEMV_PP; i++)
                rp[i] = b + (kk + i) * ldb;
            gemv_stream_rows(rows, GEMV_PP, 0, a, lda, kk / 2, rp, b_signed, n32, c, ldc);
        }
        for (; kk + 2 <= k; kk += 2) {
            rp[0] = b + kk * ldb;
            rp[1] = b + (kk + 1) * ldb;
            gemv_stream_rows(rows, 1, 0, a, lda, kk / 2, rp, b_signed, n32, c, ldc);
        }
        if (kk < k) {
            rp[0] = b + kk * ldb;
            rp[1] = NULL;
            gemv_stream_rows(rows, 1, 1, a, lda, kk / 2, rp, b_signed, n32, c, ldc);
        }
        /* the in-lane column order back to 0..31 */
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < n32; j += 32) {
                __m256i *p = (__m256i *)(void *)(c + r * ldc + j);
                __m256i v0 = _mm256_loadu_si256(p), v1 = _mm256_loadu_si256(p + 1);
                __m256i v2 = _mm256_loadu_si256(p + 2), v3 = _mm256_loadu_si256(p + 3);
                _mm256_storeu_si256(p, _mm256_permute2x128_si256(v0, v1, 0x20));
                _mm256_storeu_si256(p + 1, _mm256_permute2x128_si256(v2, v3, 0x20));
                _mm256_storeu_si256(p + 2, _mm256_permute2x128_si256(v0, v1, 0x31));
                _mm256_storeu_si256(p + 3, _mm256_permute2x128_si256(v2, v3, 0x31));
            }
    }
    /* fewer than 32 columns left: the same sums (unsigned form), one element at a time */
    for (size_t j = n32; j < n; j++)
        for (size_t r = 0; r < rows; r++) {
            uint32_t s = 0;
            for (size_t q = 0; q < k; q++) {
                uint32_t w = (uint32_t)a[r * lda + q / 2];
                int32_t av = (int32_t)(int16_t)(uint16_t)((q & 1) ? w >> 16 : w & 0xffffu);
                int32_t bv = (int32_t)(uint8_t)(b[q * ldb + j] ^ flip);
                s += (uint32_t)(av * bv);
            }
            c[r * ldc + j] = (int32_t)s;
        }
}

qmm_opt_gemv_ft qmm_gemv_s16u8_r4__avx2; /* kernels.c */
void qmm_gemv_s16u8_r4__avx2(size_t rows, size_t k, const int32_t *a, size_t lda, const uint8_t *b,
                             size_t ldb, int b_signed, size_t n, int32_t *c, size_t ldc)
{
#define QMM_CASE(R)                                                                         \
    case R:                                                                                 \
        if (b_signed)                                                                       \
            gemv_rows(R, k, a, lda, b, ldb, 1, n, c, ldc);                                  \
        else                                                                                \
            gemv_rows(R, k, a, lda, b, ldb, 0, n, c, ldc);                                  \
        break;
    switch (rows) {
        QMM_CASE(1)
        QMM_CASE(2)
        QMM_CASE(3)
        QMM_CASE(4)
    default: break;
    }
#undef QMM_CASE
}

/* ---- small M on the packed B (the 6x16 kernel's "unsigned words" panels) ----
 *
 * The packed panels are bytes (16 columns x 2 k per 32 bytes, all K of a panel contiguous), so
 * a 4096 x 4096 B is 16 MB and stays in a 32 MB L3; per 32 bytes one load, a vpand, a vpsrlw
 * and two vpmaddwd per row. Each panel is read once, sequentially,
 * with the row sums in registers over all of K; `pp` panels are walked side by side so that
 * rows * pp * 2 accumulators hide vpmaddwd + vpaddd latency. */
static inline __attribute__((always_inline)) void
gemvp_block(size_t rows, size_t pp, size_t kpairs, const int32_t *a, size_t lda,
            const int8_t *b, size_t pstride, int32_t *c, size_t ldc)
{
    const __m256i lo = _mm256_set1_epi16(0xff);
    __m256i acc[4][4][2];
    QMM_UNROLL
    for (size_t r = 0; r < rows; r++)
        QMM_UNROLL
        for (size_t p = 0; p < pp; p++)
            acc[r][p][0] = acc[r][p][1] = _mm256_setzero_si256();
    for (size_t t = 0; t < kpairs; t++) {
        __m256i w[4][2];
        QMM_UNROLL
        for (size_t p = 0; p < pp; p++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(b + p * pstride +
                                                                            t * 32));
            w[p][0] = _mm256_and_si256(x, lo);
            w[p][1] = _mm256_srli_epi16(x, 8);
        }
        QMM_UNROLL
        for (size_t r = 0; r < rows; r++) {
            __m256i av = _mm256_set1_epi32(a[r * lda + t]);
            QMM_UNROLL
            for (size_t p = 0; p < pp; p++) {
                acc[r][p][0] = _mm256_add_epi32(acc[r][p][0], _mm256_madd_epi16(av, w[p][0]));
                acc[r][p][1] = _mm256_add_epi32(acc[r][p][1], _mm256_madd_epi16(av, w[p][1]));
            }
        }
    }
    QMM_UNROLL
    for (size_t r = 0; r < rows; r++)
        QMM_UNROLL
        for (size_t p = 0; p < pp; p++) {
            _mm256_storeu_si256((__m256i *)(void *)(c + r * ldc + 16 * p), acc[r][p][0]);
            _mm256_storeu_si256((__m256i *)(void *)(c + r * ldc + 16 * p + 8), acc[r][p][1]);
        }
}

static inline __attribute__((always_inline)) void
gemvp_rows(size_t rows, size_t pp, size_t kpairs, const int32_t *a, size_t lda,
           const int8_t *b, size_t pstride, size_t npanels, int32_t *c, size_t ldc)
{
    size_t p = 0;
    for (; p + pp <= npanels; p += pp)
        gemvp_block(rows, pp, kpairs, a, lda, b + p * pstride, pstride, c + 16 * p, ldc);
    for (; p < npanels; p++)
        gemvp_block(rows, 1, kpairs, a, lda, b + p * pstride, pstride, c + 16 * p, ldc);
}

qmm_opt_gemv_packed_ft qmm_gemv_s16u8_r4x16c2__avx2; /* kernels.c */
void qmm_gemv_s16u8_r4x16c2__avx2(size_t rows, size_t kpairs, const int32_t *a, size_t lda,
                                  const int8_t *b, size_t pstride, size_t npanels, int32_t *c,
                                  size_t ldc)
{
    switch (rows) {
    case 1: gemvp_rows(1, 4, kpairs, a, lda, b, pstride, npanels, c, ldc); break;
    case 2: gemvp_rows(2, 2, kpairs, a, lda, b, pstride, npanels, c, ldc); break;
    case 3: gemvp_rows(3, 2, kpairs, a, lda, b, pstride, npanels, c, ldc); break;
    case 4: gemvp_rows(4, 1, kpairs, a, lda, b, pstride, npanels, c, ldc); break;
    default: break;
    }
}

/* Peak loop: the kernel's arithmetic (vpmaddwd + vpaddd pairs) with no loads, 12 independent
 * accumulators so latency never limits; 12 vpmaddwd = 12*16 int8 MACs per iteration. */
qmm_opt_peak_ft qmm_peak_s16s16__avx2; /* kernels.c */
uint64_t qmm_peak_s16s16__avx2(uint64_t iters)
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
