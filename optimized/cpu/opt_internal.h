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

/* ---- CPU and OS facts (cpuid.c), read by the kernel table's checks (kernels.c) ---- */

/* CPUID leaf `leaf`, sub-leaf `sub` into r = {eax, ebx, ecx, edx}; 0 (r zeroed) when the CPU
 * has no such leaf or is not x86. */
int qmm_opt_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]);

/* XCR0, the register state the OS saves (XGETBV); 0 without OSXSAVE or off x86. */
uint64_t qmm_opt_os_xstate(void);

/* Asks the OS, once, to let this process use AMX tile data (Linux keeps it off until asked);
 * NULL when granted, else why not. */
const char *qmm_opt_os_grant_tiles(void);

/* ---- microkernels ---- */

/* c[MR][NR] (row stride ldc) = (accumulate ? c : 0) + sum over `kgroups` groups of
 * a-group x b-group. `a` holds MR 32-bit words per group (a pair of int16 or a quad of uint8
 * per row), `b` holds NR*kg int8 per group (column j's kg values together). Sums wrap. */
typedef void qmm_opt_kernel_ft(size_t kgroups, const int32_t *a, const int8_t *b,
                                  int32_t *c, size_t ldc, int accumulate);
typedef qmm_opt_kernel_ft *qmm_opt_kernel_fn;

/* Small-M kernel on an unpacked B: for r in 0..rows-1 (rows <= 4), j in 0..n-1:
 *   c[r*ldc + j] = sum_k apair_r(k) * u(b[k*ldb + j])
 * where `a` is row r's int16 pairs (a - za) at a + r*lda (kpairs = ceil(k/2) words; the pad
 * half of an odd k is 0) and u is b's "unsigned form": b for uint8, b + 128 for int8
 * (b_signed), so the caller corrects with zb + 128 for int8 b. Sums wrap. */
typedef void qmm_opt_gemv_ft(size_t rows, size_t k, const int32_t *a, size_t lda,
                                const uint8_t *b, size_t ldb, int b_signed, size_t n,
                                int32_t *c, size_t ldc);
typedef qmm_opt_gemv_ft *qmm_opt_gemv_fn;

/* Small-M kernel on the packed "pairs" B: for r < rows (rows <= 4), j < 16 * npanels:
 *   c[r*ldc + j] = sum_t apair_r(t) . bpair(t, j)
 * where `a` is as for qmm_opt_gemv_fn (kpairs words per row, row r at a + r*lda) and panel p
 * of B'' (16 columns x kpairs, the "unsigned words" layout of qmm_opt_pack_b, uw 1)
 * starts at b + p*pstride. Sums wrap. */
typedef void qmm_opt_gemv_packed_ft(size_t rows, size_t kpairs, const int32_t *a,
                                       size_t lda, const int8_t *b, size_t pstride,
                                       size_t npanels, int32_t *c, size_t ldc);
typedef qmm_opt_gemv_packed_ft *qmm_opt_gemv_packed_fn;

/* One output row's requantization (qmm_opt_requant_row's contract, below). */
typedef void (*qmm_opt_requant_row_fn)(const int32_t *acc, const int32_t *zc, uint32_t zr,
                                       size_t n, double sa, const double *sb, const double *cm,
                                       double sy, int32_t zy, int32_t qmin, int32_t qmax,
                                       uint8_t *out);

/* The kernel on the first `rows` rows of a group only (rows < mr; the packed A keeps its mr
 * stride). The tile's other rows of c are the group's padding: a kernel may leave them alone
 * or fill them with their (zero-row) products, as AMX does for a 16-row slice. */
typedef void qmm_opt_kernel_rows_ft(size_t rows, size_t kgroups, const int32_t *a,
                                       const int8_t *b, int32_t *c, size_t ldc, int accumulate);
typedef qmm_opt_kernel_rows_ft *qmm_opt_kernel_rows_fn;

/* Column sums sum_k B'[k][j] (mod 2^32) of `npanels` packed quads panels (nr columns,
 * kgroups groups each, panel p at b + p*pstride) into colsum[p*nr + c]. */
typedef void qmm_opt_colsum_ft(const int8_t *b, size_t kgroups, size_t npanels,
                                  size_t pstride, int32_t *colsum);
typedef qmm_opt_colsum_ft *qmm_opt_colsum_fn;

/* requant_row with a single-precision first try (qmm_opt_requant_row_f32_avx512). */
typedef void (*qmm_opt_requant_row_f32_fn)(const int32_t *acc, const int32_t *zc, uint32_t zr,
                                           size_t n, const float *mf, double sa,
                                           const double *sb, const double *cm, double sy,
                                           int32_t zy, int32_t qmin, int32_t qmax,
                                           uint8_t *out);

/* Packs columns [j0, j1) of B as qmm_opt_pack_b (uw 0) does and writes their column sums
 * (colsum[j - j0]) as the row's colsum would, in one pass. */
typedef void qmm_opt_pack_b_ft(const uint8_t *b, size_t ldb, int b_signed, size_t k,
                               size_t kgroups, size_t j0, size_t j1, int8_t *dst,
                               int32_t *colsum);

/* A peak loop: `iters` iterations of a dependency-free block of a kernel's
 * multiply-accumulate instructions; returns the int8 MACs performed. */
typedef uint64_t qmm_opt_peak_ft(uint64_t iters);

/* Per-thread set-up and tear-down around a task's kernel calls (AMX's tile configuration). */
typedef void qmm_opt_task_ft(void);

/* The kernel files declare what they export with these function types (one line each, as the
 * table in kernels.c does), so a definition that drifts from its type does not compile. */

/* One row of the kernel table (kernels.c): an ISA variant of the backend. */
typedef struct qmm_opt_isa_ops {
    const char *name;        /* what isa= names it */
    const char *(*check)(void); /* NULL: any CPU; else NULL when this CPU and OS run the
                                   kernels, or why not (called once: qmm_opt_kernel_missing) */
    const char *layout;      /* the packing layout, in words (opt_internal.h, pack.c) */
    int mr, nr, kg;          /* tile rows, tile columns, k values per group (2 or 4) */
    qmm_opt_kernel_fn kernel;
    const char *kernel_name;
    qmm_opt_kernel_fn portable; /* the plain-C kernel on the same layout (gemm-portable.c): what
                                   `kernel` and `kernel_rows` must compute; tests only */
    qmm_opt_kernel_rows_fn kernel_rows; /* NULL: partial groups run the full kernel */
    qmm_opt_gemv_fn gemv;    /* NULL: small M goes through the packed path */
    qmm_opt_gemv_packed_fn gemv_packed; /* NULL: small M with a prepacked B uses `kernel` */
    qmm_opt_gemv_fn gemv_portable;               /* what `gemv` must compute; tests only */
    qmm_opt_gemv_packed_fn gemv_packed_portable; /* and `gemv_packed` */
    int uw;                  /* B packed in the "unsigned words" layout (qmm_opt_pack_b) */
    qmm_opt_requant_row_fn requant_row;
    qmm_opt_requant_row_f32_fn requant_row_f32; /* NULL: requant_row only */
    qmm_opt_colsum_fn colsum; /* column sums from the packed panels: required with kg 4
                                 (the quads layouts' correction term), NULL with kg 2 */
    /* packs columns [j0, j1) of B as qmm_opt_pack_b (uw 0) does and writes their column
     * sums (colsum[j - j0]) as `colsum` would, in one pass; NULL: those two in turn */
    qmm_opt_pack_b_ft *pack_b;
    int kalign;              /* packed K groups are a multiple of this (AMX: 16, one tile) */
    int atiles;              /* A packed in the "tiles" layout (qmm_opt_pack_a_tiles) */
    qmm_opt_task_ft *task_begin; /* called by a thread before its task's first kernel call
                                 (AMX: load the tile configuration), or NULL */
    qmm_opt_task_ft *task_end;   /* after its task's last kernel call (AMX: release), or NULL */
    /* `qmmcheck bench --peak`: `iters` iterations of a dependency-free block of the kernel's
     * multiply-accumulate instructions, returning the int8 MACs performed; NULL: none */
    qmm_opt_peak_ft *peak;
    const char *peak_loop;   /* the loop, in words; the last runnable row's loop is the peak
                                percentages are taken against (peak.c) */
} qmm_opt_isa_ops;

/* The kernel table (kernels.c), rows from the portable variant up, best last. */
int qmm_opt_kernel_count(void);
const qmm_opt_isa_ops *qmm_opt_kernel_row(int i); /* NULL past the last */
/* NULL when this CPU runs row i, else why not (each row's check, run once) */
const char *qmm_opt_kernel_missing(int i);
int qmm_opt_kernel_find(const char *name, size_t len); /* the row isa=name picks, or -1 */
int qmm_opt_kernel_auto(void); /* the row isa=auto picks: the last this CPU runs */

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
    const char *missing;       /* non-NULL: this CPU cannot run the variant `ops`, and why */
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

/* Packs B for backend `ob` (the worker behind qmm_optimized_pack_b and per-call packing):
 * nmat matrices of k x n at b + m*k*n. */
qmm_status_code qmm_opt_pack_b_all(const qmm_opt_backend *ob, const qmm_tensor *b,
                                   qmm_optimized_packed_b *pb, qmm_status *st);

qmm_status_code qmm_opt_qlinearmatmul(const qmm_opt_backend *ob, const qmm_qlinearmatmul *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st);
qmm_status_code qmm_opt_matmulinteger(const qmm_opt_backend *ob, const qmm_matmulinteger *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st);

#endif /* QMM_OPT_INTERNAL_H */
