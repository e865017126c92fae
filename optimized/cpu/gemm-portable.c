/* optimized/cpu/gemm-portable.c — the portable C microkernels, one per packing layout
 * (opt_internal.h, pack.c; the layouts' `kernel` in kernels.c): the scalar variant's 6x16
 * kernel on the "pairs" layout, and plain loops on the layouts the SIMD kernels read
 * ("unsigned words", quads with nr 16 and 32, the AMX "tiles" A), plus the small-M forms and
 * the quads layouts' column sums. They are the specification tests/test_ukernel.c checks
 * every registered kernel against, so they are written for clarity, one element at a time;
 * their sums run in uint32 so that wrapping is defined. Each computes every row of its tile
 * (`rows` only says which ones the caller reads: the others are the group's padding). */
#include "optimized/cpu/opt_internal.h"

enum { MR = 6, NR = 16 };

qmm_opt_kernel_ft qmm_gemm_s16s8_6x16c2__portable; /* kernels.c */
void qmm_gemm_s16s8_6x16c2__portable(size_t rows, size_t kgroups, const int32_t *a,
                                     const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    (void)rows;
    uint32_t acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            acc[r][j] = accumulate ? (uint32_t)c[(size_t)r * ldc + (size_t)j] : 0u;
    for (size_t t = 0; t < kgroups; t++) {
        const int32_t *ag = a + t * MR;
        const int8_t *bg = b + t * NR * 2;
        for (int r = 0; r < MR; r++) {
            uint32_t w = (uint32_t)ag[r];
            int32_t lo = (int32_t)(int16_t)(uint16_t)(w & 0xffffu);
            int32_t hi = (int32_t)(int16_t)(uint16_t)(w >> 16);
            for (int j = 0; j < NR; j++) {
                /* |lo*b0 + hi*b1| <= 2*255*128: exact in int32 */
                int32_t p = lo * bg[2 * j] + hi * bg[2 * j + 1];
                acc[r][j] += (uint32_t)p;
            }
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            c[(size_t)r * ldc + (size_t)j] = (int32_t)acc[r][j];
}

/* ---- the SIMD layouts, one element at a time ---- */

/* Where a layout keeps its values: A's value of tile row r for k value q of K group t, and
 * B's of tile column j, as the integers the kernel multiplies. */
typedef struct portable_layout {
    int mr, nr, kg;
    int32_t (*a_at)(const int32_t *a, int mr, size_t t, int r, int q);
    int32_t (*b_at)(const int8_t *b, int nr, size_t t, int j, int q);
} portable_layout;

/* int16 half q of the pair word (a - za for k = 2t + q) */
static int32_t a_pairs(const int32_t *a, int mr, size_t t, int r, int q)
{
    uint32_t w = (uint32_t)a[t * (size_t)mr + (size_t)r];
    return (int32_t)(int16_t)(uint16_t)(w >> (16 * q));
}

/* uint8 byte q of the quad word (a' for k = 4t + q) */
static int32_t a_quads(const int32_t *a, int mr, size_t t, int r, int q)
{
    uint32_t w = (uint32_t)a[t * (size_t)mr + (size_t)r];
    return (int32_t)((w >> (8 * q)) & 0xffu);
}

/* the "tiles" layout: K tile T = t / 16 holds the group's rows in order, 16 words each */
static int32_t a_tiles(const int32_t *a, int mr, size_t t, int r, int q)
{
    size_t word = (t / 16 * (size_t)mr + (size_t)r) * 16 + t % 16;
    return (int32_t)(((uint32_t)a[word] >> (8 * q)) & 0xffu);
}

/* "unsigned words" (nr 16, kg 2): byte 2q + j / 8 of dword j % 8 of k pair t, 0..255 */
static int32_t b_uwords(const int8_t *b, int nr, size_t t, int j, int q)
{
    (void)nr;
    return (int32_t)(uint8_t)b[32 * t + 4 * (size_t)(j % 8) + (size_t)(2 * q + j / 8)];
}

/* quads: column j's four int8 B' of group t together */
static int32_t b_quads(const int8_t *b, int nr, size_t t, int j, int q)
{
    return (int32_t)b[(t * (size_t)nr + (size_t)j) * 4 + (size_t)q];
}

static void portable_tile(const portable_layout *L, size_t kgroups, const int32_t *a,
                          const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    for (int r = 0; r < L->mr; r++)
        for (int j = 0; j < L->nr; j++) {
            int32_t *out = c + (size_t)r * ldc + (size_t)j;
            uint32_t s = accumulate ? (uint32_t)*out : 0u;
            for (size_t t = 0; t < kgroups; t++)
                for (int q = 0; q < L->kg; q++) /* |a| <= 255 or 32767, |b| <= 255: exact */
                    s += (uint32_t)(L->a_at(a, L->mr, t, r, q) * L->b_at(b, L->nr, t, j, q));
            *out = (int32_t)s;
        }
}

/* One qmm_opt_kernel_ft per layout: NAME's tile is MR x NR with KG values per K group. */
#define QMM_PORTABLE_KERNEL(NAME, MR_, NR_, KG_, A_AT, B_AT)                                 \
    void NAME(size_t rows, size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,     \
              size_t ldc, int accumulate)                                                     \
    {                                                                                         \
        static const portable_layout L = {MR_, NR_, KG_, A_AT, B_AT};                         \
        (void)rows;                                                                           \
        portable_tile(&L, kgroups, a, b, c, ldc, accumulate);                                 \
    }

qmm_opt_kernel_ft qmm_gemm_s16u8_6x16c2__portable; /* kernels.c */
QMM_PORTABLE_KERNEL(qmm_gemm_s16u8_6x16c2__portable, 6, 16, 2, a_pairs, b_uwords)
qmm_opt_kernel_ft qmm_gemm_u8s8_6x16c4__portable; /* kernels.c */
QMM_PORTABLE_KERNEL(qmm_gemm_u8s8_6x16c4__portable, 6, 16, 4, a_quads, b_quads)
qmm_opt_kernel_ft qmm_gemm_u8s8_8x32c4__portable; /* kernels.c */
QMM_PORTABLE_KERNEL(qmm_gemm_u8s8_8x32c4__portable, 8, 32, 4, a_quads, b_quads)
qmm_opt_kernel_ft qmm_gemm_u8s8_32x32c4_tiles__portable; /* kernels.c */
QMM_PORTABLE_KERNEL(qmm_gemm_u8s8_32x32c4_tiles__portable, 32, 32, 4, a_tiles, b_quads)
#undef QMM_PORTABLE_KERNEL

/* ---- the quads layouts' column sums: qmm_opt_colsum_ft ---- */

static void portable_colsum(int nr, const int8_t *b, size_t kgroups, size_t npanels,
                            size_t pstride, int32_t *colsum)
{
    for (size_t p = 0; p < npanels; p++)
        for (int j = 0; j < nr; j++) {
            uint32_t s = 0;
            for (size_t t = 0; t < kgroups; t++)
                for (int q = 0; q < 4; q++)
                    s += (uint32_t)b_quads(b + p * pstride, nr, t, j, q);
            colsum[p * (size_t)nr + (size_t)j] = (int32_t)s;
        }
}

qmm_opt_colsum_ft qmm_colsum_s8_16c4__portable; /* kernels.c */
void qmm_colsum_s8_16c4__portable(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                                  int32_t *colsum)
{
    portable_colsum(16, b, kgroups, npanels, pstride, colsum);
}

qmm_opt_colsum_ft qmm_colsum_s8_32c4__portable; /* kernels.c */
void qmm_colsum_s8_32c4__portable(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                                  int32_t *colsum)
{
    portable_colsum(32, b, kgroups, npanels, pstride, colsum);
}

/* ---- small M: qmm_opt_gemv_ft and qmm_opt_gemv_packed_ft ---- */

qmm_opt_gemv_ft qmm_gemv_s16u8_r4__portable; /* kernels.c */
void qmm_gemv_s16u8_r4__portable(size_t rows, size_t k, const int32_t *a, size_t lda,
                                 const uint8_t *b, size_t ldb, int b_signed, size_t n, int32_t *c,
                                 size_t ldc)
{
    uint8_t flip = b_signed ? 0x80 : 0; /* the unsigned form: int8 b + 128 */
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < n; j++) {
            uint32_t s = 0;
            for (size_t kk = 0; kk < k; kk++) {
                int32_t av = a_pairs(a + r * lda, 1, kk / 2, 0, (int)(kk % 2));
                s += (uint32_t)(av * (int32_t)(uint8_t)(b[kk * ldb + j] ^ flip));
            }
            c[r * ldc + j] = (int32_t)s;
        }
}

qmm_opt_gemv_packed_ft qmm_gemv_s16u8_r4x16c2__portable; /* kernels.c */
void qmm_gemv_s16u8_r4x16c2__portable(size_t rows, size_t kpairs, const int32_t *a, size_t lda,
                                      const int8_t *b, size_t pstride, size_t npanels, int32_t *c,
                                      size_t ldc)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < 16 * npanels; j++) {
            const int8_t *panel = b + j / 16 * pstride;
            uint32_t s = 0;
            for (size_t t = 0; t < kpairs; t++)
                for (int q = 0; q < 2; q++)
                    s += (uint32_t)(a_pairs(a + r * lda, 1, t, 0, q) *
                                    b_uwords(panel, 16, t, (int)(j % 16), q));
            c[r * ldc + j] = (int32_t)s;
        }
}
