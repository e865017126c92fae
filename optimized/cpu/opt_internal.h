/* optimized/cpu/opt_internal.h — what the optimized backend's own files share. Nothing here is
 * part of the operator interface or of qmm_optimized.h.
 *
 * The arithmetic every path shares (docs/semantics.md §6): an element's accumulator is
 *     acc = dot - zap_i * colsum_j - zbp_j * rowsum_i          (mod 2^32)
 * where `dot` is what a microkernel sums over the packed operands and the other terms undo
 * whatever the packing changed:
 * - "pairs" layout (scalar, AVX2): A holds a - za as int16 (exact: -255..255), so zap = 0;
 *   B holds b as int8 (uint8 b is shifted by -128), so zbp = zb - 128 for uint8 b, zb else.
 * - "quads" layout (VNNI): A holds a as uint8 (int8 a shifted by +128), so zap = za (+128);
 *   B as in "pairs"; colsum_j = sum_k B'[k][j] is made when B is packed.
 * rowsum_i = sum_k (a - za) in both. All of it is computed modulo 2^32, which gives the exact
 * accumulator wrapped to int32 — the accepted overflow result.
 */
#ifndef QMM_OPT_INTERNAL_H
#define QMM_OPT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "optimized/qmm_optimized.h"
#include "qmm/qmm.h"

/* A sum computed modulo 2^32 as the int32 it stands for (without a signed overflow). */
static inline int32_t qmm_opt_wrap_u32(uint32_t u)
{
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

/* ---- ISAs and CPU features (cpuid.c) ---- */

typedef enum qmm_opt_isa {
    QMM_OPT_ISA_SCALAR = 0,
    QMM_OPT_ISA_AVX2 = 1,
    QMM_OPT_ISA_AVXVNNI = 2,
    QMM_OPT_ISA_AVX512VNNI = 3,
    QMM_OPT_ISA_AMX = 4,
    QMM_OPT_ISA_COUNT = 5,
} qmm_opt_isa;

typedef struct qmm_opt_cpu {
    int avx2;       /* AVX2 and the OS saves YMM state */
    int avxvnni;    /* AVX-VNNI (VEX vpdpbusd) with AVX2 */
    int avx512vnni; /* AVX-512 F/DQ/BW/VL/VNNI and the OS saves ZMM and opmask state */
    int amx;        /* AMX-TILE and AMX-INT8 with AVX-512 VNNI, the OS saves tile state and
                       granted this process its use (Linux: arch_prctl ARCH_REQ_XCOMP_PERM) */
    const char *amx_missing; /* why amx is 0 */
} qmm_opt_cpu;

/* Detected once (pthread_once); the pointer is to read-only data afterwards. */
const qmm_opt_cpu *qmm_opt_cpu_features(void);

/* NULL when the CPU can run `isa`, else why not ("this CPU has no AVX2"). */
const char *qmm_opt_isa_missing(qmm_opt_isa isa);
const char *qmm_opt_isa_name(qmm_opt_isa isa);

/* ---- microkernels ---- */

/* c[MR][NR] (row stride ldc) = (accumulate ? c : 0) + sum over `kgroups` groups of
 * a-group x b-group. `a` holds MR 32-bit words per group (a pair of int16 or a quad of uint8
 * per row), `b` holds NR*kg int8 per group (column j's kg values together). Sums wrap. */
typedef void (*qmm_opt_kernel_fn)(size_t kgroups, const int32_t *a, const int8_t *b,
                                  int32_t *c, size_t ldc, int accumulate);

/* Small-M kernel on an unpacked B: for r in 0..rows-1 (rows <= 4), j in 0..n-1:
 *   c[r*ldc + j] = sum_k apair_r(k) * u(b[k*ldb + j])
 * where `a` is row r's int16 pairs (a - za) at a + r*lda (kpairs = ceil(k/2) words; the pad
 * half of an odd k is 0) and u is b's "unsigned form": b for uint8, b + 128 for int8
 * (b_signed), so the caller corrects with zb + 128 for int8 b. Sums wrap. */
typedef void (*qmm_opt_gemv_fn)(size_t rows, size_t k, const int32_t *a, size_t lda,
                                const uint8_t *b, size_t ldb, int b_signed, size_t n,
                                int32_t *c, size_t ldc);

/* Small-M kernel on the packed "pairs" B: for r < rows (rows <= 4), j < 16 * npanels:
 *   c[r*ldc + j] = sum_t apair_r(t) . bpair(t, j)
 * where `a` is as for qmm_opt_gemv_fn (kpairs words per row, row r at a + r*lda) and panel p
 * of B'' (16 columns x kpairs, the "unsigned words" layout of qmm_opt_pack_b, uw 1)
 * starts at b + p*pstride. Sums wrap. */
typedef void (*qmm_opt_gemv_packed_fn)(size_t rows, size_t kpairs, const int32_t *a,
                                       size_t lda, const int8_t *b, size_t pstride,
                                       size_t npanels, int32_t *c, size_t ldc);

/* One output row's requantization (qmm_opt_requant_row's contract, below). */
typedef void (*qmm_opt_requant_row_fn)(const int32_t *acc, const int32_t *zc, uint32_t zr,
                                       size_t n, double sa, const double *sb, const double *cm,
                                       double sy, int32_t zy, int32_t qmin, int32_t qmax,
                                       uint8_t *out);

/* The kernel on the first `rows` rows of a group only (rows < mr; the packed A keeps its mr
 * stride). The tile's other rows of c are the group's padding: a kernel may leave them alone
 * or fill them with their (zero-row) products, as AMX does for a 16-row slice. */
typedef void (*qmm_opt_kernel_rows_fn)(size_t rows, size_t kgroups, const int32_t *a,
                                       const int8_t *b, int32_t *c, size_t ldc, int accumulate);

/* Column sums sum_k B'[k][j] (mod 2^32) of `npanels` packed quads panels (nr columns,
 * kgroups groups each, panel p at b + p*pstride) into colsum[p*nr + c]. */
typedef void (*qmm_opt_colsum_fn)(const int8_t *b, size_t kgroups, size_t npanels,
                                  size_t pstride, int32_t *colsum);

/* requant_row with a single-precision first try (qmm_opt_requant_row_f32_avx512). */
typedef void (*qmm_opt_requant_row_f32_fn)(const int32_t *acc, const int32_t *zc, uint32_t zr,
                                           size_t n, const float *mf, double sa,
                                           const double *sb, const double *cm, double sy,
                                           int32_t zy, int32_t qmin, int32_t qmax,
                                           uint8_t *out);

typedef struct qmm_opt_isa_ops {
    qmm_opt_isa isa;
    int mr, nr, kg;          /* tile rows, tile columns, k values per group (2 or 4) */
    qmm_opt_kernel_fn kernel;
    qmm_opt_kernel_fn portable; /* the plain-C kernel on the same layout (gemm-portable.c): what
                                   `kernel` and `kernel_rows` must compute; tests only */
    qmm_opt_kernel_rows_fn kernel_rows; /* NULL: partial groups run the full kernel */
    qmm_opt_gemv_fn gemv;    /* NULL: small M goes through the packed path */
    qmm_opt_gemv_packed_fn gemv_packed; /* NULL: small M with a prepacked B uses `kernel` */
    int uw;                  /* B packed in the "unsigned words" layout (qmm_opt_pack_b) */
    qmm_opt_requant_row_fn requant_row;
    qmm_opt_requant_row_f32_fn requant_row_f32; /* NULL: requant_row only */
    qmm_opt_colsum_fn colsum; /* column sums from the packed panels: required with kg 4
                                 (the quads layouts' correction term), NULL with kg 2 */
    /* packs columns [j0, j1) of B as qmm_opt_pack_b (uw 0) does and writes their column
     * sums (colsum[j - j0]) as `colsum` would, in one pass; NULL: those two in turn */
    void (*pack_b)(const uint8_t *b, size_t ldb, int b_signed, size_t k, size_t kgroups,
                   size_t j0, size_t j1, int8_t *dst, int32_t *colsum);
    int kalign;              /* packed K groups are a multiple of this (AMX: 16, one tile) */
    int atiles;              /* A packed in the "tiles" layout (qmm_opt_pack_a_tiles) */
    void (*task_begin)(void); /* called by a thread before its task's first kernel call
                                 (AMX: load the tile configuration), or NULL */
    void (*task_end)(void);   /* after its task's last kernel call (AMX: release), or NULL */
} qmm_opt_isa_ops;

/* The portable C kernels (gemm-portable.c), one per packing layout, written for clarity: the
 * specification each SIMD kernel on that layout is tested against (tests/test_ukernel.c).
 * The "pairs" layout's is the scalar variant's own kernel. */
void qmm_gemm_s16s8_6x16c2__portable(size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,
                                size_t ldc, int accumulate);
/* "unsigned words" B (AVX2) */
void qmm_gemm_s16u8_6x16c2__portable(size_t kgroups, const int32_t *a, const int8_t *b,
                                     int32_t *c, size_t ldc, int accumulate);
/* quads, 16 columns (AVX-VNNI) */
void qmm_gemm_u8s8_6x16c4__portable(size_t kgroups, const int32_t *a, const int8_t *b,
                                        int32_t *c, size_t ldc, int accumulate);
/* quads, 32 columns (AVX-512 VNNI) */
void qmm_gemm_u8s8_8x32c4__portable(size_t kgroups, const int32_t *a, const int8_t *b,
                                        int32_t *c, size_t ldc, int accumulate);
/* the "tiles" A and the 32-column quads B (AMX) */
void qmm_gemm_u8s8_32x32c4_tiles__portable(size_t kgroups, const int32_t *a, const int8_t *b,
                                         int32_t *c, size_t ldc, int accumulate);
/* the small-M forms: qmm_opt_gemv_fn's and qmm_opt_gemv_packed_fn's contracts */
void qmm_gemv_s16u8_r4__portable(size_t rows, size_t k, const int32_t *a, size_t lda,
                           const uint8_t *b, size_t ldb, int b_signed, size_t n, int32_t *c,
                           size_t ldc);
void qmm_gemv_s16u8_r4x16c2__portable(size_t rows, size_t kpairs, const int32_t *a, size_t lda,
                                  const int8_t *b, size_t pstride, size_t npanels, int32_t *c,
                                  size_t ldc);

void qmm_gemm_s16u8_6x16c2__avx2(size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,
                              size_t ldc, int accumulate);
void qmm_gemv_s16u8_r4__avx2(size_t rows, size_t k, const int32_t *a, size_t lda, const uint8_t *b,
                       size_t ldb, int b_signed, size_t n, int32_t *c, size_t ldc);
void qmm_gemv_s16u8_r4x16c2__avx2(size_t rows, size_t kpairs, const int32_t *a, size_t lda,
                              const int8_t *b, size_t pstride, size_t npanels, int32_t *c,
                              size_t ldc);
void qmm_gemm_u8s8_6x16c4__avxvnni(size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,
                                 size_t ldc, int accumulate);
void qmm_gemm_u8s8_rx16c4__avxvnni(size_t rows, size_t kgroups, const int32_t *a,
                                 const int8_t *b, int32_t *c, size_t ldc, int accumulate);
void qmm_gemm_u8s8_8x32c4__avx512vnni(size_t kgroups, const int32_t *a, const int8_t *b,
                                    int32_t *c, size_t ldc, int accumulate);
void qmm_colsum_s8_16c4__avxvnni(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                            int32_t *colsum);
void qmm_colsum_s8_32c4__avx512vnni(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                               int32_t *colsum);
void qmm_packb_s8_32c4__avx512vnni(const uint8_t *b, size_t ldb, int b_signed, size_t k,
                               size_t kgroups, size_t j0, size_t j1, int8_t *dst,
                               int32_t *colsum);
void qmm_gemm_u8s8_rx32c4__avx512vnni(size_t rows, size_t kgroups, const int32_t *a,
                                    const int8_t *b, int32_t *c, size_t ldc, int accumulate);

/* AMX (gemm-u8s8-32x32c4-tiles-amx.c): 32 x 32 tiles of the "tiles" A layout and the quads B layout (nr 32),
 * kgroups a multiple of 16; the tile configuration must be loaded (qmm_gemm_begin__amx) on
 * the calling thread. The rows form runs rows <= 4 with AVX-512 VNNI, <= 16 on one A tile. */
void qmm_gemm_begin__amx(void);
void qmm_gemm_end__amx(void);
void qmm_gemm_u8s8_32x32c4_tiles__amx(size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,
                              size_t ldc, int accumulate);
void qmm_gemm_u8s8_rx32c4_tiles__amx(size_t rows, size_t kgroups, const int32_t *a, const int8_t *b,
                             int32_t *c, size_t ldc, int accumulate);

/* The peak loops of `qmmcheck bench --peak`: `iters` iterations of a dependency-free block of
 * the kernel's multiply-accumulate instructions; returns int8 MACs performed. */
uint64_t qmm_peak_s16s16__avx2(uint64_t iters);
uint64_t qmm_peak_u8s8__avxvnni(uint64_t iters);
uint64_t qmm_peak_u8s8__avx512vnni(uint64_t iters);
uint64_t qmm_peak_u8s8_tiles__amx(uint64_t iters); /* loads and releases the tile configuration */

/* ---- packing (pack.c) ---- */

/* Packs rows [0, rows) of an M x K uint8/int8 matrix (row stride lda) into groups of mr rows
 * (the last group padded with zero rows), kp = K rounded up to kg, layout
 * dst[group][kgroup][row] as 32-bit words. kg 2: int16 pairs of a - za_r; kg 4: uint8 quads
 * of a (int8 a + 128). rowsum[r] = sum_k (a - za_r) mod 2^32. za[r] per row. */
void qmm_opt_pack_a(const uint8_t *a, size_t lda, int a_signed, size_t rows, size_t k,
                    const int32_t *za, int mr, int kg, int32_t *dst, int32_t *rowsum);

/* The AMX "tiles" layout of A: groups of mr rows (mr a multiple of 16), kgroups (a multiple
 * of 16, >= ceil(K/4)) uint8 quads a' (int8 a + 128) per row, zero past K and past `rows`.
 * Within a group, K tile T (16 groups, 64 bytes of each row) holds rows in order, 64 bytes
 * each: byte (T*mr + r)*64 + q is a'[r][64T + q] — a 16-row slice is one tile load with
 * stride 64. In 32-bit words, group g's K tile T starts at g*kgroups*mr + 16*T*mr, the
 * offset the driver computes for any layout. rowsum as for qmm_opt_pack_a. */
void qmm_opt_pack_a_tiles(const uint8_t *a, size_t lda, int a_signed, size_t rows, size_t k,
                          const int32_t *za, int mr, size_t kgroups, int32_t *dst,
                          int32_t *rowsum);

/* Packs columns [j0, j1) (j0 a multiple of nr) of a K x N matrix (row stride ldb) into panels
 * of nr columns: panel p at dst + p*kgroups*kg*nr, zero padded in k (to kgroups groups,
 * >= ceil(K/kg)) and in columns.
 * uw 0: layout [kgroup][col][kg] of int8 B' (uint8 b - 128, int8 b as is). The quads
 *       layouts' column sums come from the packed panels (the ISA's `colsum`).
 * uw 1 (nr 16, kg 2 only; AVX2): "unsigned words": B'' = b for uint8, b + 128 for int8
 *       (0..255), per k pair t and column l < 8 the four bytes at dst + 32t + 4l are
 *       B''[2t][l], B''[2t][l+8], B''[2t+1][l], B''[2t+1][l+8]. As 16-bit words, w & 0xff
 *       gives column l's (k, k+1) pair and w >> 8 column l+8's: two exact vpmaddwd operands
 *       from one load, a vpand and a vpsrlw (no vpmovsxbw, slow on Zen 3). */
void qmm_opt_pack_b(const uint8_t *b, size_t ldb, int b_signed, size_t k, size_t kgroups,
                    size_t j0, size_t j1, int nr, int kg, int uw, int8_t *dst);

/* ---- requantization (requant.c) ---- */

/* RNE(acc * sa * sb / sy) exactly (scales are positive finite doubles holding float, float16
 * or bfloat16 values), clamped to +-2^40 — far outside any 8-bit result. */
int64_t qmm_opt_requant_exact(int32_t acc, double sa, double sb, double sy);

/* One output row with per-tensor y_scale/y_zero_point: out[j] = clamp(RNE(x_j*sa*sb[j]/sy)
 * + zy) for j < n, where cm[j] = sb[j] / sy (rounded) and x_j = acc[j] - zr - zc[j] modulo
 * 2^32 as int32 (zc NULL: no zc term) — the zero-point corrections applied on the way in, so
 * the epilogue needs no separate pass. Fast double path, exact fallback. */
void qmm_opt_requant_row(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                         double sa, const double *sb, const double *cm, double sy, int32_t zy,
                         int32_t qmin, int32_t qmax, uint8_t *out);

/* qmm_opt_requant_row eight (requant-avx2.c) or sixteen (requant-avx512.c) elements at a
 * time: the same results. */
void qmm_opt_requant_row_avx2(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                              double sa, const double *sb, const double *cm, double sy,
                              int32_t zy, int32_t qmin, int32_t qmax, uint8_t *out);

void qmm_opt_requant_row_avx512(const int32_t *acc, const int32_t *zc, uint32_t zr, size_t n,
                                double sa, const double *sb, const double *cm, double sy,
                                int32_t zy, int32_t qmin, int32_t qmax, uint8_t *out);

/* qmm_opt_requant_row's results with a float first try, 16 lanes: mf[j] = (float)(sa*cm[j]),
 * every one a normal float in [2^-100, 2^100] (the caller checks; see requant.c for the
 * bound). Blocks the float path cannot decide go to qmm_opt_requant_row_avx512. */
void qmm_opt_requant_row_f32_avx512(const int32_t *acc, const int32_t *zc, uint32_t zr,
                                    size_t n, const float *mf, double sa, const double *sb,
                                    const double *cm, double sy, int32_t zy, int32_t qmin,
                                    int32_t qmax, uint8_t *out);

/* One element with any scales: the same rule, m = (sa*sb)/sy. */
int32_t qmm_opt_requant_one(int32_t acc, double sa, double sb, double sy, int32_t zy,
                            int32_t qmin, int32_t qmax);

/* ---- thread pool (threadpool.c) ---- */

typedef struct qmm_opt_pool qmm_opt_pool;
typedef void (*qmm_opt_task_fn)(void *ctx, size_t task, int worker);

/* nthreads includes the caller; nthreads - 1 persistent workers are started. NULL on failure. */
qmm_opt_pool *qmm_opt_pool_create(int nthreads);
void qmm_opt_pool_destroy(qmm_opt_pool *p);
int qmm_opt_pool_threads(const qmm_opt_pool *p);

/* Runs fn(ctx, t, worker) for t in [0, ntasks), each exactly once, worker in
 * [0, threads). When another call holds the pool, runs everything on the caller (worker 0).
 * Returns when all tasks are done. */
void qmm_opt_pool_run(qmm_opt_pool *p, size_t ntasks, qmm_opt_task_fn fn, void *ctx);

/* ---- the matmul driver (matmul.c) ---- */

typedef struct qmm_opt_packed_mat {
    int8_t *data;      /* panels, kp * npad bytes per matrix */
    int32_t *colsum;   /* npad per matrix, NULL for the pairs layout */
} qmm_opt_packed_mat;

/* A packed B (qmm_optimized_packed_b is this struct). */
struct qmm_optimized_packed_b {
    const void *owner;         /* the qmm_opt_backend it was packed by */
    int32_t dtype;
    int32_t rank;
    int64_t dims[QMM_MAX_RANK];
    size_t k, n, kp, npad, nmat;
    int8_t *data;              /* nmat * kp * npad */
    int32_t *colsum;           /* nmat * npad, or NULL */
};

typedef struct qmm_opt_backend {
    qmm_backend table;
    const qmm_opt_isa_ops *ops;
    const char *missing;       /* non-NULL: this CPU cannot run ops->isa, and why */
    qmm_opt_pool *pool;
    int threads;
    /* A call's scratch (packed operands, per-thread sums), kept between calls so that
     * repeated calls do not fault in fresh pages: grown as needed, freed at close. A call
     * that finds it in use by another call allocates its own. */
    pthread_mutex_t ws_lock;
    void *ws;
    size_t ws_size;
    char name[64];
    char description[192];
} qmm_opt_backend;

const qmm_opt_isa_ops *qmm_opt_isa_table(qmm_opt_isa isa);

/* Packs B for backend `ob` (the worker behind qmm_optimized_pack_b and per-call packing):
 * nmat matrices of k x n at b + m*k*n. */
qmm_status_code qmm_opt_pack_b_all(const qmm_opt_backend *ob, const qmm_tensor *b,
                                   qmm_optimized_packed_b *pb, qmm_status *st);

qmm_status_code qmm_opt_qlinearmatmul(const qmm_opt_backend *ob, const qmm_qlinearmatmul *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st);
qmm_status_code qmm_opt_matmulinteger(const qmm_opt_backend *ob, const qmm_matmulinteger *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st);

#endif /* QMM_OPT_INTERNAL_H */
