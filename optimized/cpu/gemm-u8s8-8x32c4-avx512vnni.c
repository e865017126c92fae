/* optimized/cpu/gemm-u8s8-8x32c4-avx512vnni.c — AVX-512 VNNI microkernel (built with -mavx512f
 * -mavx512bw -mavx512vl -mavx512vnni). 8 rows x 32 columns: 16 zmm accumulators, 2 B
 * registers, one broadcast. vpdpbusd (non-saturating) as in gemm-u8s8-6x16c4-avxvnni.c.
 */
#include <immintrin.h>
#include <stddef.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/cpu/rq-row-avx512vnni.h"
#include "optimized/cpu/unroll.h"

enum { MR = 8, NR = 32 };

/* The tile's first R rows (R a constant after inlining, so the accumulators stay in
 * registers); A holds AS words a K group (MR: the packed A, whatever R is; R: the dense A
 * matmul.c packs for an A of fewer than MR rows). With R <= 4 the
 * k groups alternate between two sets of accumulators (summed at the end: the same sums
 * modulo 2^32): one set would leave only 2R vpdpbusd dependency chains, too few to hide
 * its latency when B streams from cache (M = 1 on a prepacked B).
 * Every loop over r is unrolled by pragma: at -O2 (the RelWithDebInfo build) GCC 12 left the
 * loops of R = 2..7 rolled and kept the accumulators in memory, a load and a store around
 * every vpdpbusd (1x32 ... 7x32 tiles: M = 4 and 7 on a prepacked 4096x4096 B ran 1.6 and
 * 2.3x slower, Zen 5, 7 alternating rounds). */
static inline __attribute__((always_inline)) void tile(int R, int AS, size_t kgroups,
                                                      const int32_t *a, const int8_t *b,
                                                      int32_t *c, size_t ldc, int accumulate)
{
    __m512i acc[MR][2], alt[4][2];
    const int two = R <= 4;
    QMM_UNROLL
    for (int r = 0; r < R; r++) {
        acc[r][0] = acc[r][1] = _mm512_setzero_si512();
        if (two)
            alt[r][0] = alt[r][1] = _mm512_setzero_si512();
    }
    size_t t = 0;
    if (two) {
        for (; t + 2 <= kgroups; t += 2) {
            __m512i b0 = _mm512_loadu_si512((const void *)b);
            __m512i b1 = _mm512_loadu_si512((const void *)(b + 64));
            __m512i b2 = _mm512_loadu_si512((const void *)(b + 128));
            __m512i b3 = _mm512_loadu_si512((const void *)(b + 192));
            QMM_UNROLL
            for (int r = 0; r < R; r++) {
                __m512i av = _mm512_set1_epi32(a[r]), aw = _mm512_set1_epi32(a[AS + r]);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
                acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
                alt[r][0] = _mm512_dpbusd_epi32(alt[r][0], aw, b2);
                alt[r][1] = _mm512_dpbusd_epi32(alt[r][1], aw, b3);
            }
            a += 2 * (size_t)AS;
            b += 2 * NR * 4;
        }
        QMM_UNROLL
        for (int r = 0; r < R; r++) {
            acc[r][0] = _mm512_add_epi32(acc[r][0], alt[r][0]);
            acc[r][1] = _mm512_add_epi32(acc[r][1], alt[r][1]);
        }
    }
    for (; t < kgroups; t++) {
        /* columns 0-15 then 16-31, four k per column */
        __m512i b0 = _mm512_loadu_si512((const void *)b);
        __m512i b1 = _mm512_loadu_si512((const void *)(b + 64));
        QMM_UNROLL
        for (int r = 0; r < R; r++) {
            __m512i av = _mm512_set1_epi32(a[r]);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
        }
        a += AS;
        b += NR * 4;
    }
    QMM_UNROLL
    for (int r = 0; r < R; r++) {
        int32_t *p0 = c + (size_t)r * ldc, *p1 = c + (size_t)r * ldc + 16;
        if (accumulate) {
            acc[r][0] = _mm512_add_epi32(acc[r][0], _mm512_loadu_si512((const void *)p0));
            acc[r][1] = _mm512_add_epi32(acc[r][1], _mm512_loadu_si512((const void *)p1));
        }
        _mm512_storeu_si512((void *)p0, acc[r][0]);
        _mm512_storeu_si512((void *)p1, acc[r][1]);
    }
}

/* The kernels' shared assembly, as string pieces. Registers: accumulators zmm0-15 (row r:
 * columns 0-15 in zmm 2r, 16-31 in zmm 2r+1), the K group's B in zmm16-17, row broadcasts
 * alternating zmm18-19. Operands: %[a] the packed A (advanced by the caller's loop), %[c]
 * and %[t] the tile and a scratch pointer, %[ldcb] c's row stride in bytes, %[acc] nonzero to
 * add c's values. */
#define QMM_ZERO_ACCUMULATORS \
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t" \
        "vpxord %%zmm1, %%zmm1, %%zmm1\n\t" \
        "vpxord %%zmm2, %%zmm2, %%zmm2\n\t" \
        "vpxord %%zmm3, %%zmm3, %%zmm3\n\t" \
        "vpxord %%zmm4, %%zmm4, %%zmm4\n\t" \
        "vpxord %%zmm5, %%zmm5, %%zmm5\n\t" \
        "vpxord %%zmm6, %%zmm6, %%zmm6\n\t" \
        "vpxord %%zmm7, %%zmm7, %%zmm7\n\t" \
        "vpxord %%zmm8, %%zmm8, %%zmm8\n\t" \
        "vpxord %%zmm9, %%zmm9, %%zmm9\n\t" \
        "vpxord %%zmm10, %%zmm10, %%zmm10\n\t" \
        "vpxord %%zmm11, %%zmm11, %%zmm11\n\t" \
        "vpxord %%zmm12, %%zmm12, %%zmm12\n\t" \
        "vpxord %%zmm13, %%zmm13, %%zmm13\n\t" \
        "vpxord %%zmm14, %%zmm14, %%zmm14\n\t" \
        "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
/* one K group: the 16 vpdpbusd of the tile on B in zmm16-17, A's words at byte offset O (a
 * string: an assembler expression) from the group's */
#define QMM_GROUP_PRODUCTS_AT(O) \
        "vpbroadcastd " O "+0(%[a]), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm0\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm1\n\t" \
        "vpbroadcastd " O "+4(%[a]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm2\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm3\n\t" \
        "vpbroadcastd " O "+8(%[a]), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm4\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm5\n\t" \
        "vpbroadcastd " O "+12(%[a]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm6\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm7\n\t" \
        "vpbroadcastd " O "+16(%[a]), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm8\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm9\n\t" \
        "vpbroadcastd " O "+20(%[a]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm10\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm11\n\t" \
        "vpbroadcastd " O "+24(%[a]), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm12\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm13\n\t" \
        "vpbroadcastd " O "+28(%[a]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm14\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm15\n\t"
#define QMM_GROUP_PRODUCTS QMM_GROUP_PRODUCTS_AT("0")
/* ... with row r's word read from A as it is: rows 0-3 at %[a] + r * %[lda], 4-7 at %[a4] */
#define QMM_GROUP_PRODUCTS_RAW_A_AT(O) \
        "vpbroadcastd " O "(%[a]), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm0\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm1\n\t" \
        "vpbroadcastd " O "(%[a],%[lda]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm2\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm3\n\t" \
        "vpbroadcastd " O "(%[a],%[lda],2), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm4\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm5\n\t" \
        "vpbroadcastd " O "(%[a],%[lda3]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm6\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm7\n\t" \
        "vpbroadcastd " O "(%[a4]), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm8\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm9\n\t" \
        "vpbroadcastd " O "(%[a4],%[lda]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm10\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm11\n\t" \
        "vpbroadcastd " O "(%[a4],%[lda],2), %%zmm18\n\t" \
        "vpdpbusd %%zmm16, %%zmm18, %%zmm12\n\t" \
        "vpdpbusd %%zmm17, %%zmm18, %%zmm13\n\t" \
        "vpbroadcastd " O "(%[a4],%[lda3]), %%zmm19\n\t" \
        "vpdpbusd %%zmm16, %%zmm19, %%zmm14\n\t" \
        "vpdpbusd %%zmm17, %%zmm19, %%zmm15\n\t"
/* B's K group at byte offset O from %[b] into zmm16-17 */
#define QMM_B_AT(O) \
        "vmovdqu64 " O "(%[b]), %%zmm16\n\t" \
        "vmovdqu64 " O "+64(%[b]), %%zmm17\n\t"
/* The K loop over %[k] groups, two a turn (one first when %[k] is odd; labels 8 and, after
 * the loop, 9: an asm statement may hold several such loops, each jump finds its own):
 * GROUP(O) the products with A's words O bytes on, A_STEP(N) A's pointers moved N groups.
 * Two groups a turn: the run of overlapped tiles at 1024^3 (eight stretches of 32
 * groups a tile) ran 1.2-1.6% faster than with one, the plain raw-A kernel 0.5% (Zen 5, the
 * kernels alone in the driver's order, alternating in one process) */
#define QMM_K_LOOP(GROUP, A_STEP, ONE, TWO) \
        "test %[k], %[k]\n\t" \
        "jz 9f\n\t" \
        "test $1, %[k]\n\t" \
        "jz 8f\n\t" \
        QMM_B_AT("0") \
        GROUP("0") \
        A_STEP(ONE) \
        "add $128, %[b]\n\t" \
        "dec %[k]\n\t" \
        "jz 9f\n\t" \
        ".p2align 5\n" \
        "8:\n\t" \
        QMM_B_AT("0") \
        GROUP("0") \
        QMM_B_AT("128") \
        GROUP(ONE) \
        A_STEP(TWO) \
        "add $256, %[b]\n\t" \
        "sub $2, %[k]\n\t" \
        "jnz 8b\n" \
        "9:\n\t"
#define QMM_RAW_A_STEP(N) \
        "add $" N ", %[a]\n\t" \
        "add $" N ", %[a4]\n\t"
#define QMM_PACKED_A_STEP(N) "add $" N ", %[a]\n\t"
/* the raw-A K loop over %[k] groups */
#define QMM_RAW_A_LOOP \
        QMM_K_LOOP(QMM_GROUP_PRODUCTS_RAW_A_AT, QMM_RAW_A_STEP, "4", "8")
/* ... over packed A words at %[a] */
#define QMM_PACKED_A_LOOP \
        QMM_K_LOOP(QMM_GROUP_PRODUCTS_AT, QMM_PACKED_A_STEP, "32", "64")
/* the tile to c */
#define QMM_STORE_TILE_ONLY \
        "vmovdqu64 %%zmm0, (%[c])\n\t" \
        "vmovdqu64 %%zmm1, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm2, (%[c])\n\t" \
        "vmovdqu64 %%zmm3, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm4, (%[c])\n\t" \
        "vmovdqu64 %%zmm5, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm6, (%[c])\n\t" \
        "vmovdqu64 %%zmm7, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm8, (%[c])\n\t" \
        "vmovdqu64 %%zmm9, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm10, (%[c])\n\t" \
        "vmovdqu64 %%zmm11, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm12, (%[c])\n\t" \
        "vmovdqu64 %%zmm13, 64(%[c])\n\t" \
        "add %[ldcb], %[c]\n\t" \
        "vmovdqu64 %%zmm14, (%[c])\n\t" \
        "vmovdqu64 %%zmm15, 64(%[c])\n\t"
/* the tile to c (added to it when %[acc] is nonzero) */
#define QMM_STORE_TILE \
        "test %[acc], %[acc]\n\t" \
        "jz 3f\n\t" \
        "mov %[c], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm0, %%zmm0\n\t" \
        "vpaddd 64(%[t]), %%zmm1, %%zmm1\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm2, %%zmm2\n\t" \
        "vpaddd 64(%[t]), %%zmm3, %%zmm3\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm4, %%zmm4\n\t" \
        "vpaddd 64(%[t]), %%zmm5, %%zmm5\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm6, %%zmm6\n\t" \
        "vpaddd 64(%[t]), %%zmm7, %%zmm7\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm8, %%zmm8\n\t" \
        "vpaddd 64(%[t]), %%zmm9, %%zmm9\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm10, %%zmm10\n\t" \
        "vpaddd 64(%[t]), %%zmm11, %%zmm11\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm12, %%zmm12\n\t" \
        "vpaddd 64(%[t]), %%zmm13, %%zmm13\n\t" \
        "add %[ldcb], %[t]\n\t" \
        "vpaddd (%[t]), %%zmm14, %%zmm14\n\t" \
        "vpaddd 64(%[t]), %%zmm15, %%zmm15\n\t" \
        "3:\n\t" \
        QMM_STORE_TILE_ONLY
#define QMM_ACCUMULATOR_CLOBBERS                                                                \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19"

qmm_opt_kernel_ft qmm_gemm_u8s8_8x32c4__avx512vnni; /* kernels.c */
void qmm_gemm_u8s8_8x32c4__avx512vnni(size_t rows, size_t kgroups, const int32_t *a,
                                      const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    (void)rows; /* MR: partial groups take qmm_gemm_u8s8_rx32c4__avx512vnni */
    /* Assembly, as for the AVX2 kernel: GCC keeps the 16 accumulators of tile() in
     * registers but copies them around the loop (30 register moves per 16 vpdpbusd, enough
     * to make the loop front-end bound). */
    size_t kt = kgroups, ldcb = ldc * sizeof(int32_t);
    int32_t *cp = c, *t;
    long acc = accumulate;
    __asm__ volatile(
        QMM_ZERO_ACCUMULATORS
        QMM_PACKED_A_LOOP
        QMM_STORE_TILE
        : [a] "+r"(a), [b] "+r"(b), [k] "+r"(kt), [c] "+r"(cp), [t] "=&r"(t)
        : [ldcb] "r"(ldcb), [acc] "r"(acc)
        : "memory", "cc", QMM_ACCUMULATOR_CLOBBERS);
}

qmm_opt_kernel_raw_a_ft qmm_gemm_u8s8_8x32c4_rawa__avx512vnni; /* kernels.c */
void qmm_gemm_u8s8_8x32c4_rawa__avx512vnni(size_t kgroups, const uint8_t *a, size_t lda,
                                           const int8_t *b, int32_t *c, size_t ldc,
                                           int accumulate)
{
    /* The 8x32 kernel with each row's four bytes broadcast from A's rows themselves (uint8
     * A: the packed word is the row's four bytes as they are), so that A needs no packing
     * pass: eight streams of 4 bytes a group, each line of a row read for 16 groups. */
    size_t kt = kgroups, ldcb = ldc * sizeof(int32_t), lda3 = 3 * lda;
    const uint8_t *a4 = a + 4 * lda;
    int32_t *cp = c, *t;
    long acc = accumulate;
    __asm__ volatile(
        QMM_ZERO_ACCUMULATORS
        QMM_RAW_A_LOOP
        QMM_STORE_TILE
        : [a] "+r"(a), [a4] "+r"(a4), [b] "+r"(b), [k] "+r"(kt), [c] "+r"(cp), [t] "=&r"(t)
        : [ldcb] "r"(ldcb), [acc] "r"(acc), [lda] "r"(lda), [lda3] "r"(lda3)
        : "memory", "cc", QMM_ACCUMULATOR_CLOBBERS);
}

/* The whole kernel: constants; then per tile (label 6): the requantized tile's zr copied in,
 * kgroups % 8 groups, 8 x (one row step, kgroups / 8 groups): each step's few dozen
 * instructions issue beside the following multiplies; its masks copied out, the tile stored,
 * and A, B and c moved to the next tile (ANEXT: A's step; s and y have moved 8 rows with the
 * row steps). */
#define QMM_RQ_BODY(LOOP, NARROW, ANEXT) \
        "vbroadcastss %[lim], %%zmm26\n\t" \
        "vbroadcastss %[nlim], %%zmm27\n\t" \
        "vbroadcastss %[half], %%zmm28\n\t" \
        "vpbroadcastd %[absmask], %%zmm29\n\t" \
        "vpbroadcastd 88(%[q]), %%zmm30\n\t" \
        "vpxord %%zmm31, %%zmm31, %%zmm31\n" \
        "6:\n\t" \
        "mov 112(%[q]), %[k]\n\t" \
        "vmovdqu32 (%[k]), %%ymm20\n\t" \
        "vmovdqu32 %%ymm20, (%[q])\n\t" \
        "addq $32, 112(%[q])\n\t" \
        "kxnord %%k4, %%k4, %%k4\n\t" \
        QMM_ZERO_ACCUMULATORS \
        "mov 80(%[q]), %[k]\n\t" \
        LOOP \
        "xor %[i], %[i]\n" \
        "5:\n\t" \
        QMM_RQ_ROW(NARROW) \
        "mov 72(%[q]), %[k]\n\t" \
        LOOP \
        "inc %[i]\n\t" \
        "cmp $8, %[i]\n\t" \
        "jne 5b\n\t" \
        "mov 120(%[q]), %[k]\n\t" \
        "vmovdqu32 32(%[q]), %%ymm20\n\t" \
        "vmovdqu32 %%ymm20, (%[k])\n\t" \
        "kmovd %%k4, 32(%[k])\n\t" \
        "addq $64, 120(%[q])\n\t" \
        QMM_STORE_TILE_ONLY \
        "add %[ldcb], %[c]\n\t" \
        ANEXT \
        "mov 128(%[q]), %[b]\n\t" \
        "decq 96(%[q])\n\t" \
        "jnz 6b\n\t"

#define QMM_RQ_CONSTANTS                                                                        \
    [lim] "m"(rq_const.lim), [nlim] "m"(rq_const.nlim), [half] "m"(rq_const.half),           \
        [absmask] "m"(rq_const.absmask)
#define QMM_RQ_CLOBBERS                                                                         \
    "memory", "cc", QMM_ACCUMULATOR_CLOBBERS, "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",      \
        "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4"
#define QMM_RAW_A_NEXT                                                                          \
        "add 104(%[q]), %[a]\n\t"                                                               \
        "add 104(%[q]), %[a4]\n\t"

/* The run's working fields: the K loop's eight stretches (one row step before each) and the
 * groups run first, the tiles, A's step, and where the zr and masks of each tile are. */
static inline void rq_begin(qmm_opt_rq_tile *rq, size_t tiles, size_t kgroups, int64_t astep,
                            const int8_t *b)
{
    rq->seg = (int64_t)(kgroups / 8);
    rq->rem = (int64_t)(kgroups % 8);
    rq->tiles_left = (int64_t)tiles;
    rq->astep = astep;
    rq->zr_next = rq->zr_rows;
    rq->dec_next = rq->decided_out;
    rq->b0 = b;
}

/* the offsets the assembly reads */
_Static_assert(offsetof(qmm_opt_rq_tile, decided) == 32 && offsetof(qmm_opt_rq_tile, ldy) == 64 &&
                   offsetof(qmm_opt_rq_tile, seg) == 72 && offsetof(qmm_opt_rq_tile, rem) == 80 &&
                   offsetof(qmm_opt_rq_tile, zy) == 88 &&
                   offsetof(qmm_opt_rq_tile, tiles_left) == 96 &&
                   offsetof(qmm_opt_rq_tile, astep) == 104 &&
                   offsetof(qmm_opt_rq_tile, zr_next) == 112 &&
                   offsetof(qmm_opt_rq_tile, dec_next) == 120 &&
                   offsetof(qmm_opt_rq_tile, b0) == 128,
               "qmm_opt_rq_tile's layout is the assembly's");

/* The float first try's constants (opt_internal.h, the same as requant-avx512.c's): the
 * clamp, the decision's threshold and the absolute value's mask, read by the assembly. */
static const struct {
    float lim, nlim, half;
    uint32_t absmask;
} rq_const = {QMM_OPT_F32_SAT, -QMM_OPT_F32_SAT, QMM_OPT_F32_HALF, 0x7fffffffu};

qmm_opt_kernel_raw_a_rq_ft qmm_gemm_u8s8_8x32c4_rawa_rq__avx512vnni; /* kernels.c */
void qmm_gemm_u8s8_8x32c4_rawa_rq__avx512vnni(size_t tiles, size_t kgroups, const uint8_t *a,
                                              size_t lda, const int8_t *b, int32_t *c,
                                              size_t ldc, const int32_t *cp, uint8_t *y,
                                              qmm_opt_rq_tile *rq, int sat_u8)
{
    if (tiles == 0)
        return;
    size_t kt = 0, ldcb = ldc * sizeof(int32_t), lda3 = 3 * lda, i = 0;
    const uint8_t *a4 = a + 4 * lda;
    int32_t *cc = c;
    const int32_t *s = c - 8 * ldc;
    rq_begin(rq, tiles, kgroups, (int64_t)(8 * lda) - (int64_t)(4 * kgroups), b);
#define RAW_A_RQ(NARROW)                                                                        \
    __asm__ volatile(QMM_RQ_BODY(QMM_RAW_A_LOOP, NARROW, QMM_RAW_A_NEXT)                       \
                     : [a] "+r"(a), [a4] "+r"(a4), [b] "+r"(b), [k] "+r"(kt), [c] "+r"(cc),    \
                       [s] "+r"(s), [y] "+r"(y), [i] "+r"(i)                                    \
                     : [ldcb] "r"(ldcb), [lda] "r"(lda), [lda3] "r"(lda3), [p] "r"(cp),        \
                       [q] "r"(rq), QMM_RQ_CONSTANTS                                            \
                     : QMM_RQ_CLOBBERS)
    if (sat_u8)
        RAW_A_RQ(QMM_NARROW_U8);
    else
        RAW_A_RQ(QMM_NARROW_S8);
#undef RAW_A_RQ
}

qmm_opt_kernel_rq_ft qmm_gemm_u8s8_8x32c4_rq__avx512vnni; /* kernels.c */
void qmm_gemm_u8s8_8x32c4_rq__avx512vnni(size_t tiles, size_t kgroups, const int32_t *a,
                                         const int8_t *b, int32_t *c, size_t ldc,
                                         const int32_t *cp, uint8_t *y, qmm_opt_rq_tile *rq,
                                         int sat_u8)
{
    if (tiles == 0)
        return;
    size_t kt = 0, ldcb = ldc * sizeof(int32_t), i = 0;
    int32_t *cc = c;
    const int32_t *s = c - 8 * ldc;
    /* the packed A's next tile follows the K loop's last group */
    rq_begin(rq, tiles, kgroups, 0, b);
#define PACKED_A_RQ(NARROW)                                                                     \
    __asm__ volatile(QMM_RQ_BODY(QMM_PACKED_A_LOOP, NARROW, "")                                \
                     : [a] "+r"(a), [b] "+r"(b), [k] "+r"(kt), [c] "+r"(cc), [s] "+r"(s),      \
                       [y] "+r"(y), [i] "+r"(i)                                                 \
                     : [ldcb] "r"(ldcb), [p] "r"(cp), [q] "r"(rq), QMM_RQ_CONSTANTS          \
                     : QMM_RQ_CLOBBERS)
    if (sat_u8)
        PACKED_A_RQ(QMM_NARROW_U8);
    else
        PACKED_A_RQ(QMM_NARROW_S8);
#undef PACKED_A_RQ
}

/* vpermi2b indices: byte 4c + q of B's register h (columns 16h..16h+15) is row q's byte of
 * column 16h + c, where the rows sit as r0|r1 (table bytes 0-63) and r2|r3 (64-127) */
static const uint8_t pack_index[2][64] = {
#define QMM_QUAD(h, c) 16 * (h) + (c), 32 + 16 * (h) + (c), 64 + 16 * (h) + (c), 96 + 16 * (h) + (c)
#define QMM_HALF(h)                                                                             \
    {QMM_QUAD(h, 0),  QMM_QUAD(h, 1),  QMM_QUAD(h, 2),  QMM_QUAD(h, 3),  QMM_QUAD(h, 4),       \
     QMM_QUAD(h, 5),  QMM_QUAD(h, 6),  QMM_QUAD(h, 7),  QMM_QUAD(h, 8),  QMM_QUAD(h, 9),       \
     QMM_QUAD(h, 10), QMM_QUAD(h, 11), QMM_QUAD(h, 12), QMM_QUAD(h, 13), QMM_QUAD(h, 14),      \
     QMM_QUAD(h, 15)}
    QMM_HALF(0), QMM_HALF(1)
#undef QMM_HALF
#undef QMM_QUAD
};

/* kernel_pack's pieces. Registers beyond the kernel's: zmm20-21 panel 0's rows, zmm30-31 panel
 * 1's, zmm24-25 the indices, zmm26 ones, zmm27-28 panel 0's column sums, zmm22-23 panel 1's,
 * zmm29 the flip; panel 1's packed registers pass through zmm19 (free until the products'
 * first broadcast into it). */
#define QMM_PACK_SETUP \
        QMM_ZERO_ACCUMULATORS \
        "vpxord %%zmm27, %%zmm27, %%zmm27\n\t" \
        "vpxord %%zmm28, %%zmm28, %%zmm28\n\t" \
        "vpxord %%zmm22, %%zmm22, %%zmm22\n\t" \
        "vpxord %%zmm23, %%zmm23, %%zmm23\n\t" \
        "vmovdqu64 %[idx0], %%zmm24\n\t" \
        "vmovdqu64 %[idx1], %%zmm25\n\t" \
        "vpbroadcastd %[one], %%zmm26\n\t" \
        "vpbroadcastd %[flip], %%zmm29\n\t" \
        "test %[k], %[k]\n\t" \
        "jz 2f\n\t" \
        ".p2align 5\n" \
        "1:\n\t"
/* rows r0|r1 and r2|r3 of the 32 bytes at OFF (0: panel 0, 32: panel 1) into R0, R1, flipped */
#define QMM_PACK_ROWS(OFF, R0, R1) \
        "vmovdqu64 " OFF "(%[s]), %%ymm" R0 "\n\t" \
        "vinserti64x4 $1, " OFF "(%[s],%[ldb]), %%zmm" R0 ", %%zmm" R0 "\n\t" \
        "vmovdqu64 " OFF "(%[s],%[ldb],2), %%ymm" R1 "\n\t" \
        "vinserti64x4 $1, " OFF "(%[s],%[ldb3]), %%zmm" R1 ", %%zmm" R1 "\n\t" \
        "vpxorq %%zmm29, %%zmm" R0 ", %%zmm" R0 "\n\t" \
        "vpxorq %%zmm29, %%zmm" R1 ", %%zmm" R1 "\n\t"
/* panel 1's group: zmm30-31 permuted through zmm19, stored at %[o] + %[ps], summed */
#define QMM_PACK_PANEL1 \
        QMM_PACK_ROWS("32", "30", "31") \
        "vmovdqa64 %%zmm24, %%zmm19\n\t" \
        "vpermi2b %%zmm31, %%zmm30, %%zmm19\n\t" \
        "vmovdqu64 %%zmm19, (%[o],%[ps])\n\t" \
        "vpdpbusd %%zmm19, %%zmm26, %%zmm22\n\t" \
        "vmovdqa64 %%zmm25, %%zmm19\n\t" \
        "vpermi2b %%zmm31, %%zmm30, %%zmm19\n\t" \
        "vmovdqu64 %%zmm19, 64(%[o],%[ps])\n\t" \
        "vpdpbusd %%zmm19, %%zmm26, %%zmm23\n\t"
/* panel 0's group into zmm16-17 (the products' B), stored at %[o], summed; then the
 * products and the next group */
#define QMM_PACK_PANEL0_AND_PRODUCTS \
        QMM_PACK_ROWS("0", "20", "21") \
        "vmovdqa64 %%zmm24, %%zmm16\n\t" \
        "vpermi2b %%zmm21, %%zmm20, %%zmm16\n\t" \
        "vmovdqa64 %%zmm25, %%zmm17\n\t" \
        "vpermi2b %%zmm21, %%zmm20, %%zmm17\n\t" \
        "vmovdqu64 %%zmm16, (%[o])\n\t" \
        "vmovdqu64 %%zmm17, 64(%[o])\n\t" \
        "vpdpbusd %%zmm16, %%zmm26, %%zmm27\n\t" \
        "vpdpbusd %%zmm17, %%zmm26, %%zmm28\n\t" \
        QMM_GROUP_PRODUCTS \
        "add $32, %[a]\n\t" \
        "add $128, %[o]\n\t" \
        "lea (%[s],%[ldb],4), %[s]\n\t" \
        "dec %[k]\n\t" \
        "jnz 1b\n" \
        "2:\n\t"
/* panel P's column sums (registers R0, R1) to %[cs] + OFF, added to what is there with acc */
#define QMM_PACK_SUMS(OFF0, OFF1, R0, R1) \
        "test %[acc], %[acc]\n\t" \
        "jz 4f\n\t" \
        "vpaddd " OFF0 "(%[cs]), %%zmm" R0 ", %%zmm" R0 "\n\t" \
        "vpaddd " OFF1 "(%[cs]), %%zmm" R1 ", %%zmm" R1 "\n\t" \
        "4:\n\t" \
        "vmovdqu64 %%zmm" R0 ", " OFF0 "(%[cs])\n\t" \
        "vmovdqu64 %%zmm" R1 ", " OFF1 "(%[cs])\n\t"

qmm_opt_kernel_pack_ft qmm_gemm_pack_u8s8_8x32c4__avx512vnni; /* kernels.c */
void qmm_gemm_pack_u8s8_8x32c4__avx512vnni(size_t kgroups, const int32_t *a, const uint8_t *braw,
                                           size_t ldb, int b_signed, size_t panels,
                                           int8_t *bpack, size_t pstride, int32_t *colsum,
                                           int32_t *c, size_t ldc, int accumulate)
{
    /* Each K group forms B's two registers (the byte order of qmm_packb_s8_32c4__avx512vnni)
     * from four rows of 32 bytes: rows r0|r1 and r2|r3 in two zmm (the uint8 flip applied),
     * then one vpermi2b per register picks each column's four bytes from the two tables
     * (pack_index). The permutes run on the vector pipes that vpdpbusd leaves idle (Zen 4:
     * FP1/FP2 beside the multiply pipes FP0/FP3); vpdpbusd with an all-ones operand adds the
     * column sums. (A first form with byte and word unpacks, two lane shuffles and vpermi2q
     * cost 1.42-1.53x the kernel's time per group; this one 1.20-1.26x, operands in L2.)
     * Two panels: the next 32 columns of the same rows are packed too (not multiplied), so
     * that each 64-byte line of B is read once, where one panel reads it twice, a pass apart.
     * Zen 5, per panel of a K = 4096 x N = 4096 B as it is: 13.5 us for a pair (then the
     * plain kernel on the second) against 22.4 for kernel_pack on each panel; at 768 x 768 no
     * faster (0.67 against 0.69 us, B in L2). */
    size_t kt = kgroups, ldcb = ldc * sizeof(int32_t), ldb3 = 3 * ldb;
    int32_t *cp = c, *t;
    long acc = accumulate;
    const uint8_t *s = braw;
    int8_t *o = bpack;
    const int32_t flip = b_signed ? 0 : (int32_t)0x80808080u, one = 0x01010101;
#define PACK_ASM(BODY)                                                                          \
    __asm__ volatile(BODY                                                                      \
                     : [a] "+r"(a), [s] "+r"(s), [o] "+r"(o), [k] "+r"(kt), [c] "+r"(cp),     \
                       [t] "=&r"(t)                                                             \
                     : [ldcb] "r"(ldcb), [acc] "r"(acc), [ldb] "r"(ldb), [ldb3] "r"(ldb3),    \
                       [ps] "r"(pstride), [cs] "r"(colsum), [idx0] "m"(pack_index[0]),         \
                       [idx1] "m"(pack_index[1]), [one] "m"(one), [flip] "m"(flip)             \
                     : "memory", "cc", QMM_ACCUMULATOR_CLOBBERS, "xmm19", "xmm20", "xmm21",     \
                       "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29",  \
                       "xmm30", "xmm31")
    if (panels == 2)
        PACK_ASM(QMM_PACK_SETUP QMM_PACK_PANEL1 QMM_PACK_PANEL0_AND_PRODUCTS
                 QMM_PACK_SUMS("0", "64", "27", "28") QMM_PACK_SUMS("128", "192", "22", "23")
                 QMM_STORE_TILE);
    else
        PACK_ASM(QMM_PACK_SETUP QMM_PACK_PANEL0_AND_PRODUCTS QMM_PACK_SUMS("0", "64", "27", "28")
                 QMM_STORE_TILE);
#undef PACK_ASM
}

/* Partial groups (the last rows of M, and M < 8 with a prepacked B: a gemv streams B once
 * instead of multiplying seven rows of padding). */
qmm_opt_kernel_ft qmm_gemm_u8s8_rx32c4__avx512vnni; /* kernels.c */
void qmm_gemm_u8s8_rx32c4__avx512vnni(size_t rows, size_t kgroups, const int32_t *a,
                                      const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    switch (rows) {
    case 1: tile(1, MR, kgroups, a, b, c, ldc, accumulate); break;
    case 2: tile(2, MR, kgroups, a, b, c, ldc, accumulate); break;
    case 3: tile(3, MR, kgroups, a, b, c, ldc, accumulate); break;
    case 4: tile(4, MR, kgroups, a, b, c, ldc, accumulate); break;
    case 5: tile(5, MR, kgroups, a, b, c, ldc, accumulate); break;
    case 6: tile(6, MR, kgroups, a, b, c, ldc, accumulate); break;
    case 7: tile(7, MR, kgroups, a, b, c, ldc, accumulate); break;
    default: tile(MR, MR, kgroups, a, b, c, ldc, accumulate); break;
    }
}

/* The same on dense rows: A holds `rows` words a K group (1 <= rows < MR; matmul.c packs an A
 * of fewer than MR rows so). M = 1 on a prepacked 4096x4096 B then reads 4 bytes of A per 128
 * of B instead of 32: 1.11x faster on one thread (quartiles 1.04-1.16), 1.10x on two
 * (1.08-1.12); M = 4 the same (Zen 5, 15 alternating rounds of qmmcheck bench, medians of
 * the per-round ratios). */
qmm_opt_kernel_ft qmm_gemm_u8s8_rx32c4_dense__avx512vnni; /* kernels.c */
void qmm_gemm_u8s8_rx32c4_dense__avx512vnni(size_t rows, size_t kgroups, const int32_t *a,
                                            const int8_t *b, int32_t *c, size_t ldc,
                                            int accumulate)
{
    switch (rows) {
    case 1: tile(1, 1, kgroups, a, b, c, ldc, accumulate); break;
    case 2: tile(2, 2, kgroups, a, b, c, ldc, accumulate); break;
    case 3: tile(3, 3, kgroups, a, b, c, ldc, accumulate); break;
    case 4: tile(4, 4, kgroups, a, b, c, ldc, accumulate); break;
    case 5: tile(5, 5, kgroups, a, b, c, ldc, accumulate); break;
    case 6: tile(6, 6, kgroups, a, b, c, ldc, accumulate); break;
    default: tile(7, 7, kgroups, a, b, c, ldc, accumulate); break;
    }
}

/* Column sums of packed panels (pack.c's quads layout, 32 columns x kgroups each, panel p at
 * b + p*pstride): vpdpbusd with an all-ones uint8 operand adds each column's four k values;
 * the sums wrap modulo 2^32, like every accumulator. */
qmm_opt_colsum_ft qmm_colsum_s8_32c4__avx512vnni; /* kernels.c */
void qmm_colsum_s8_32c4__avx512vnni(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                                    int32_t *colsum)
{
    const __m512i ones = _mm512_set1_epi8(1);
    for (size_t p = 0; p < npanels; p++) {
        const int8_t *bp = b + p * pstride;
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
        for (size_t t = 0; t < kgroups; t++) {
            s0 = _mm512_dpbusd_epi32(s0, ones, _mm512_loadu_si512((const void *)(bp + t * 128)));
            s1 = _mm512_dpbusd_epi32(s1, ones,
                                     _mm512_loadu_si512((const void *)(bp + t * 128 + 64)));
        }
        _mm512_storeu_si512((void *)(colsum + p * NR), s0);
        _mm512_storeu_si512((void *)(colsum + p * NR + 16), s1);
    }
}

/* Peak loop: 12 independent zmm vpdpbusd chains, no loads, in assembly: written in C, the
 * loop's shape was the compiler's (GCC -O2 kept the 12 accumulators in memory and ran at half
 * the rate, -O3 at full: the peak moved with the build type). 12 x 64 int8 MACs per iteration;
 * the accumulators' values are never read. */
qmm_opt_peak_ft qmm_peak_u8s8__avx512vnni; /* kernels.c */
uint64_t qmm_peak_u8s8__avx512vnni(uint64_t iters)
{
    __m512i x = _mm512_set1_epi32(0x01020304), y = _mm512_set1_epi32(0x05060708);
    for (uint64_t i = 0; i < iters; i++)
        __asm__ volatile(
            "vpdpbusd %[y], %[x], %%zmm0\n\t"
            "vpdpbusd %[y], %[x], %%zmm1\n\t"
            "vpdpbusd %[y], %[x], %%zmm2\n\t"
            "vpdpbusd %[y], %[x], %%zmm3\n\t"
            "vpdpbusd %[y], %[x], %%zmm4\n\t"
            "vpdpbusd %[y], %[x], %%zmm5\n\t"
            "vpdpbusd %[y], %[x], %%zmm6\n\t"
            "vpdpbusd %[y], %[x], %%zmm7\n\t"
            "vpdpbusd %[y], %[x], %%zmm8\n\t"
            "vpdpbusd %[y], %[x], %%zmm9\n\t"
            "vpdpbusd %[y], %[x], %%zmm10\n\t"
            "vpdpbusd %[y], %[x], %%zmm11\n\t"
            :
            : [x] "v"(x), [y] "v"(y)
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
              "xmm10", "xmm11");
    __asm__ volatile("vzeroupper" ::: "memory");
    return iters * 12u * 64u;
}

/* One K group of one panel: four rows of 32 bytes (rows past `left` read as 0) interleaved
 * into the panel's 128 bytes at o, and the four values of each column added into its sum
 * (vpdpbusd with an all-ones uint8 operand; wrapping, as every accumulator). */
typedef struct packb_acc {
    __m256i s[4];
} packb_acc;

static inline __attribute__((always_inline)) void packb_group(const uint8_t *src, size_t ldb,
                                                               size_t left, __m256i flip,
                                                               int8_t *o, packb_acc *acc)
{
    const __m256i zero = _mm256_setzero_si256(), ones = _mm256_set1_epi8(1);
#define QMM_ROW(q)                                                                             \
    ((size_t)(q) < left                                                                        \
         ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(src + (q) * ldb)), \
                            flip)                                                              \
         : zero)
    __m256i r0 = QMM_ROW(0), r1 = QMM_ROW(1), r2 = QMM_ROW(2), r3 = QMM_ROW(3);
#undef QMM_ROW
    __m256i lo01 = _mm256_unpacklo_epi8(r0, r1), hi01 = _mm256_unpackhi_epi8(r0, r1);
    __m256i lo23 = _mm256_unpacklo_epi8(r2, r3), hi23 = _mm256_unpackhi_epi8(r2, r3);
    /* per 128-bit lane: columns 0-3, 4-7, 8-11, 12-15 of the lane's 16 */
    __m256i e0 = _mm256_unpacklo_epi16(lo01, lo23), e1 = _mm256_unpackhi_epi16(lo01, lo23);
    __m256i e2 = _mm256_unpacklo_epi16(hi01, hi23), e3 = _mm256_unpackhi_epi16(hi01, hi23);
    __m256i v0 = _mm256_permute2x128_si256(e0, e1, 0x20);
    __m256i v1 = _mm256_permute2x128_si256(e2, e3, 0x20);
    __m256i v2 = _mm256_permute2x128_si256(e0, e1, 0x31);
    __m256i v3 = _mm256_permute2x128_si256(e2, e3, 0x31);
    _mm256_storeu_si256((__m256i *)(void *)o, v0);
    _mm256_storeu_si256((__m256i *)(void *)(o + 32), v1);
    _mm256_storeu_si256((__m256i *)(void *)(o + 64), v2);
    _mm256_storeu_si256((__m256i *)(void *)(o + 96), v3);
    acc->s[0] = _mm256_dpbusd_epi32(acc->s[0], ones, v0);
    acc->s[1] = _mm256_dpbusd_epi32(acc->s[1], ones, v1);
    acc->s[2] = _mm256_dpbusd_epi32(acc->s[2], ones, v2);
    acc->s[3] = _mm256_dpbusd_epi32(acc->s[3], ones, v3);
}

static inline void packb_store(int32_t *colsum, const packb_acc *acc)
{
    for (int u = 0; u < 4; u++)
        _mm256_storeu_si256((__m256i *)(void *)(colsum + 8 * u), acc->s[u]);
}

/* B packing for the nr-32 quads layout with its column sums in one pass (the driver's
 * pack_b for avx512vnni and amx, whose layouts share these panels; qmm_opt_pack_b's layout
 * and sums, bit for bit; colsum must not be NULL, as with every quads layout). A full
 * panel's K group is four rows of 32 bytes interleaved into 128: byte unpacks pair the rows
 * within 128-bit lanes, and a lane permute puts the column quads in order. vpdpbusd with an
 * all-ones uint8 operand adds each column's four values into its sum (wrapping, as every
 * accumulator). Edge panels take qmm_opt_pack_b and qmm_colsum_s8_32c4__avx512vnni. */
qmm_opt_pack_b_ft qmm_packb_s8_32c4__avx512vnni; /* kernels.c */
void qmm_packb_s8_32c4__avx512vnni(const qmm_opt_variant *var, const uint8_t *b, size_t ldb,
                                   int b_signed, size_t k, size_t kgroups, size_t j0, size_t j1,
                                   int8_t *dst, int32_t *colsum)
{
    const __m256i flip = _mm256_set1_epi8(b_signed ? 0 : (char)0x80);
    const __m256i zero = _mm256_setzero_si256();
    size_t n = ldb, pstride = kgroups * NR * 4;
    size_t j = j0;
    /* Named registers, not arrays: GCC at -O2 kept arrays indexed in loops on the stack, and
     * the 64-byte reloads of 32-byte stores missed store forwarding (packing B was 15% of the
     * samples of bench 128x768x768 T=1, 9% after; perf record/annotate, Zen 4). Two panels a
     * pass (each 64-byte line read once) measured no better. */
    for (; j + NR <= j1 && j + NR <= n; j += NR) {
        int8_t *o = dst + (j - j0) / NR * pstride;
        packb_acc acc = {{zero, zero, zero, zero}};
        const uint8_t *src = b + j;
        /* rows left in group t: 4, then k's remainder, then 0 (the padding groups of a
         * kalign > 1 layout, AMX's, which read nothing) */
        for (size_t t = 0; t < kgroups; t++, o += NR * 4, src += 4 * ldb)
            packb_group(src, ldb, 4 * t >= k ? 0 : k - 4 * t < 4 ? k - 4 * t : 4, flip, o, &acc);
        packb_store(colsum + (j - j0), &acc);
    }
    if (j < j1) {
        int8_t *o = dst + (j - j0) / NR * pstride;
        qmm_opt_pack_b(var->layout, b, ldb, b_signed, k, kgroups, j, j1, o);
        qmm_colsum_s8_32c4__avx512vnni(o, kgroups, (j1 - j + NR - 1) / NR, pstride, colsum + (j - j0));
    }
}
