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

#include "ops/qmm_ops.h"
#include "optimized/qmm_optimized.h"
#include "qmm/qmm.h"

/* The exact requantization and qmm_rq_wrap (a sum computed modulo 2^32 as the int32 it
 * stands for), shared with the CUDA backend. */
#include "optimized/requant_exact.h"

/* ---- CPU and OS facts (cpuid.c), read by the variants' checks (kernels.c) ---- */

/* CPUID leaf `leaf`, sub-leaf `sub` into r = {eax, ebx, ecx, edx}; 0 (r zeroed) when the CPU
 * has no such leaf or is not x86. */
int qmm_opt_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]);

/* XCR0, the register state the OS saves (XGETBV); 0 without OSXSAVE or off x86. */
uint64_t qmm_opt_os_xstate(void);

/* Asks the OS, once, to let this process use AMX tile data (Linux keeps it off until asked);
 * NULL when granted, else why not. */
const char *qmm_opt_os_grant_tiles(void);

/* This CPU's vendor letter ('A' AuthenticAMD, 'I' GenuineIntel, '?' other) and display
 * family / model (CPUID leaves 0 and 1); 0 where CPUID says nothing. */
int qmm_opt_cpu_identity(char *vendor, unsigned *family, unsigned *model);

/* ---- microkernels ---- */

typedef struct qmm_opt_layout qmm_opt_layout;
typedef struct qmm_opt_variant qmm_opt_variant;

/* The tile kernel: c[r][j] (row stride ldc) = (accumulate ? c[r][j] : 0) + sum over `kgroups`
 * groups of a-group x b-group, for r < rows (1 <= rows <= MR) and j < NR. `a` holds MR 32-bit
 * words per group (a pair of int16 or a quad of uint8 per row; rows past `rows` are the
 * group's zero padding), `b` holds NR*kg int8 per group (column j's kg values together). Rows
 * rows..MR-1 of c are padding too: a kernel may leave them alone or fill them with their
 * (zero-row) products, so a full-tile kernel that ignores `rows` is also a partial-rows kernel
 * (the inherited `kernel_rows`, see qmm_opt_variant). Sums wrap. */
typedef void qmm_opt_kernel_ft(size_t rows, size_t kgroups, const int32_t *a, const int8_t *b,
                               int32_t *c, size_t ldc, int accumulate);

/* The tile kernel that packs B as it goes (a variant's kernel_pack): what the variant's
 * `kernel` computes for one row group (rows past the group's count are its zero padding), with
 * B's `kgroups` K groups read from 4 * kgroups whole rows of 32 columns at braw (row stride
 * ldb) instead of from a packed panel; it also writes those groups into the panel at bpack
 * (the layout's quads, a uint8 B flipped to int8 as pack_b flips it) and stores (accumulate:
 * adds) the 32 column sums of what it packed at colsum. With `panels` 2 it packs the next 32
 * columns too (whole, like the first) into the panel at bpack + pstride and their sums at
 * colsum + 32, without multiplying them. The caller packs partial K groups, padding groups
 * and partial panels itself. */
typedef void qmm_opt_kernel_pack_ft(size_t kgroups, const int32_t *a, const uint8_t *braw,
                                    size_t ldb, int b_signed, size_t panels, int8_t *bpack,
                                    size_t pstride, int32_t *colsum, int32_t *c, size_t ldc,
                                    int accumulate);

/* The tile kernel on A as it is (a variant's kernel_raw_a; uint8 A only): what `kernel`
 * computes for a full row group over `kgroups` whole K groups, row r's word of group t being
 * the four bytes at a + r * lda + 4t (what qmm_opt_pack_a would store for a uint8 A). Every
 * one of the 8 rows must be readable for 4 * kgroups bytes. */
typedef void qmm_opt_kernel_raw_a_ft(size_t kgroups, const uint8_t *a, size_t lda,
                                     const int8_t *b, int32_t *c, size_t ldc, int accumulate);

/* The requantization a kernel_raw_a_rq call performs beside its multiply-accumulates: the
 * previous tile's 8 x 32 sums (complete) to y, on the float first try of the per-tensor
 * requantizer (qmm_opt_requant_row_avx512's decisions, lane for lane), while the vector pipes
 * the multiplies leave idle run it. A call runs a column of `tiles` tiles of one panel, so
 * that the driver's work between two tiles is not paid per tile. Laid out for the kernel's
 * assembly: keep the offsets. */
typedef struct qmm_opt_rq_tile {
    int32_t zr[8];        /*   0: the kernel's: the rows' zr of the tile it requantizes */
    uint32_t decided[8];  /*  32: the kernel's: that tile's decided masks as they form */
    int64_t ldy;          /*  64: in: y's row stride, bytes */
    int64_t seg;          /*  72: the kernel's: K groups per row step (kgroups / 8) */
    int64_t rem;          /*  80: the kernel's: the K groups run before the first step */
    int32_t zy;           /*  88: in: y's zero point */
    int32_t pad;          /*  92 */
    int64_t tiles_left;   /*  96: the kernel's: tiles still to run */
    int64_t astep;        /* 104: the kernel's: bytes from a tile's A after its K loop to the
                               next tile's */
    const int32_t *zr_next; /* 112: the kernel's: the next requantized tile's zr */
    uint32_t *dec_next;     /* 120: the kernel's: where its masks go */
    const int8_t *b0;       /* 128: the kernel's: the panel, read again by each tile */
    const int32_t *zr_rows; /* 136: in: per row, zbp * rowsum (subtracted, wrapping), from
                                 the first requantized tile's first row on (8 a tile) */
    uint32_t *decided_out;  /* 144: out: per requantized tile t, 16 words at 16t: word r (r <
                                 8) row r's decided mask (bit l of the low half set when lane
                                 l of columns 0-15 was decided, the high half columns 16-31;
                                 a row with a clear bit must be requantized again by the
                                 caller), word 8 the AND of the 8 (one load tells the caller
                                 that no row of the tile needs it) */
} qmm_opt_rq_tile;

/* The single-precision first try of the per-tensor requantizer (docs/optimized.md): v is
 * clamped to +-QMM_OPT_F32_SAT (beyond it every result saturates), and RNE(v) decides where
 * |v - RNE(v)| < QMM_OPT_F32_HALF. requant-avx512.c and the overlapped kernels' assembly both
 * take them from here. */
#define QMM_OPT_F32_SAT 512.0f
#define QMM_OPT_F32_HALF (0.5f - 0x1p-12f)

/* `tiles` (>= 1) calls of kernel_raw_a with accumulate 0 down one panel: tile t's rows at a
 * + 8t lda, its sums to c + 8t ldc; and beside tile t the requantization of the tile before
 * it (t = 0: the tile whose sums lie just above c, at c - 8 ldc, complete): the column
 * corrections and float multipliers of its 32 columns at `cp` (32 int32 zc, then 32 float
 * mf), its rows' zr and the constants in `rq`, the 32 bytes of each of its 8 rows written
 * from y on (tile t - 1's first row at y + 8t ldy; row stride rq->ldy), its masks to
 * rq->decided_out. The last tile's sums are left for the caller. sat_u8 picks the narrowing
 * (uint8 y over 0..255 or int8 y over -128..127: the saturating narrowing is the clamp). */
typedef void qmm_opt_kernel_raw_a_rq_ft(size_t tiles, size_t kgroups, const uint8_t *a,
                                        size_t lda, const int8_t *b, int32_t *c, size_t ldc,
                                        const int32_t *cp, uint8_t *y, qmm_opt_rq_tile *rq,
                                        int sat_u8);

/* The same beside the packed-A tile kernel (`kernel` with accumulate 0): tile t's A at a +
 * 8t kgroups words. */
typedef void qmm_opt_kernel_rq_ft(size_t tiles, size_t kgroups, const int32_t *a,
                                  const int8_t *b, int32_t *c, size_t ldc, const int32_t *cp,
                                  uint8_t *y, qmm_opt_rq_tile *rq, int sat_u8);

/* The most rows a small-M kernel (gemv, gemv_packed) takes. */
#define QMM_OPT_GEMV_MAX_ROWS 4

/* Small-M kernel on an unpacked B: for r in 0..rows-1 (rows <= 4), j in 0..n-1:
 *   c[r*ldc + j] = sum_k apair_r(k) * u(b[k*ldb + j])
 * where `a` is row r's int16 pairs (a - za) at a + r*lda (kpairs = ceil(k/2) words; the pad
 * half of an odd k is 0: qmm_opt_gemv_a's layout) and u is b's "unsigned form": b for uint8,
 * b + 128 for int8 (b_signed), so the caller corrects with zb + 128 for int8 b. Sums wrap. */
typedef void qmm_opt_gemv_ft(size_t rows, size_t k, const int32_t *a, size_t lda,
                             const uint8_t *b, size_t ldb, int b_signed, size_t n, int32_t *c,
                             size_t ldc);

/* Small-M kernel on the packed "unsigned words" B: for r < rows (rows <= 4), j < 16*npanels:
 *   c[r*ldc + j] = sum_t apair_r(t) . bpair(t, j)
 * where `a` is as for qmm_opt_gemv_ft (kpairs words per row, row r at a + r*lda) and panel p
 * of B'' (16 columns x kpairs, the "unsigned words" layout of qmm_opt_pack_b) starts at
 * b + p*pstride. Sums wrap. */
typedef void qmm_opt_gemv_packed_ft(size_t rows, size_t kpairs, const int32_t *a, size_t lda,
                                    const int8_t *b, size_t pstride, size_t npanels,
                                    int32_t *c, size_t ldc);

/* Column sums sum_k B'[k][j] (mod 2^32) of `npanels` packed quads panels (NR columns,
 * kgroups groups each, panel p at b + p*pstride) into colsum[p*NR + c]. */
typedef void qmm_opt_colsum_ft(const int8_t *b, size_t kgroups, size_t npanels, size_t pstride,
                               int32_t *colsum);

/* Packs rows [0, rows) of an M x K matrix A (row stride lda) into layout L's row groups with
 * kgroups K groups each (qmm_opt_pack_a, qmm_opt_pack_a_tiles); rowsum[r] = sum_k (a - za[r])
 * mod 2^32, unless rowsum is NULL (the caller needs none). */
typedef void qmm_opt_pack_a_ft(const qmm_opt_layout *L, const uint8_t *a, size_t lda,
                               int a_signed, size_t rows, size_t k, const int32_t *za,
                               size_t kgroups, int32_t *dst, int32_t *rowsum);

/* Packs columns [j0, j1) (j0 a multiple of NR) of a K x N matrix B (row stride ldb = N) into
 * layout L's panels (qmm_opt_pack_b). */
typedef void qmm_opt_pack_panels_ft(const qmm_opt_layout *L, const uint8_t *b, size_t ldb,
                                    int b_signed, size_t k, size_t kgroups, size_t j0,
                                    size_t j1, int8_t *dst);

/* A variant's B packer: columns [j0, j1) of B into its layout's panels and, when colsum is
 * not NULL (the layouts with column sums), their column sums colsum[j - j0] as the variant's
 * `colsum` makes them. The portable one (qmm_opt_pack_b_sums) is those two steps in turn; a
 * variant may do both in one pass. */
typedef void qmm_opt_pack_b_ft(const qmm_opt_variant *v, const uint8_t *b, size_t ldb,
                               int b_signed, size_t k, size_t kgroups, size_t j0, size_t j1,
                               int8_t *dst, int32_t *colsum);

/* The single-precision multipliers of a row requantizer's first try: mf[j] = (float)(sa *
 * cm[j]) for j < n; returns 1 when the requantizer may use them (all in its range), 0 when it
 * must not (then mf is unspecified). The portable one, for requantizers without a float
 * first try, makes none and returns 0. */
typedef int qmm_opt_requant_mults_ft(double sa, const double *cm, size_t n, float *mf);

/* One output row's requantization (qmm_opt_requant_row's contract, below); mf is what the
 * variant's requant_mults made for this sa, or NULL (no single-precision first try). */
typedef void qmm_opt_requant_row_ft(const int32_t *acc, const int32_t *zc, uint32_t zr,
                                    size_t n, const float *mf, double sa, const double *sb,
                                    const double *cm, double sy, int32_t zy, int32_t qmin,
                                    int32_t qmax, uint8_t *out);

/* A peak loop: `iters` iterations of a dependency-free block of a kernel's
 * multiply-accumulate instructions; returns the int8 MACs performed. */
typedef uint64_t qmm_opt_peak_ft(uint64_t iters);

/* The float8 path's exact double GEMM tile (gemm-f64.h): c[r*ldc + j] += sum_{k < kc}
 * a[k*6 + r] * b[k*NR + j] for r < 6, j < NR (the variant's f64_nr), on integer operands
 * whose products and partial sums the caller keeps below 2^53 (float8.c). */
typedef void qmm_opt_f64_gemm_ft(size_t kc, const double *a, const double *b, double *c,
                                 size_t ldc);

/* Per-thread set-up and tear-down around a task's kernel calls (AMX's tile configuration). */
typedef void qmm_opt_task_ft(void);

/* The kernel files declare what they export with these function types (one line each, as the
 * table in kernels.c does), so a definition that drifts from its type does not compile. */

/* ---- the variant table (kernels.c) ---- */

/* A packing layout: how A and B are laid out for a tile kernel, what packs them, and the
 * portable kernel that defines what a kernel on them computes. Several variants may share one
 * (the AVX-512 VNNI and AMX variants share B's panels but not A's groups, so not a layout). */
struct qmm_opt_layout {
    const char *name;        /* in words (opt_internal.h's header comment, pack.c) */
    int mr, nr, kg;          /* tile rows, tile columns, k values per K group (2 or 4) */
    int kalign;              /* packed K groups are a multiple of this (AMX: 16, one tile) */
    int b_unsigned;          /* B in the "unsigned words" form (qmm_opt_pack_b), which the
                                small-M gemv_packed kernels read too */
    qmm_opt_pack_a_ft *pack_a;
    qmm_opt_pack_panels_ft *pack_b;
    qmm_opt_colsum_ft *colsum; /* the portable column sums; NULL: the layout needs none (the
                                  pairs layouts: A carries a - za) */
    qmm_opt_kernel_ft *kernel; /* the portable C kernel (gemm-portable.c): the specification
                                  every kernel on this layout is tested against */
    const char *kernel_name;
    qmm_opt_gemv_packed_ft *gemv_packed; /* the portable small-M kernel on B's panels; NULL
                                            where the layout is not b_unsigned */
};

/* A variant of the backend (what isa= names): a layout and the kernels that run on it. In the
 * table (kernels.c) a variant lists only what it overrides; at the first use every other slot
 * is filled once — from the layout (kernel, gemv_packed, colsum), from the variant's own
 * kernel (kernel_rows), or from the portable variant, row 0 (everything else) — so the driver
 * calls every slot without looking for an empty one. Only `peak` and `peak_loop` stay NULL
 * where a variant has no peak loop, kernel_pack and kernel_rows_dense where it has none
 * (optional fast paths; so do kernel_raw_a and the rq kernels), and gemv_packed where its
 * layout has no small-M form;
 * the plain numbers (gemv_rows) are the variant's own. */
struct qmm_opt_variant {
    const char *name;          /* what isa= names it */
    const char *(*check)(void); /* NULL when this CPU and OS run the kernels, or why not
                                   (called once: qmm_opt_variant_missing) */
    const qmm_opt_layout *layout;
    qmm_opt_kernel_ft *kernel; /* full row groups */
    const char *kernel_name;
    qmm_opt_kernel_ft *kernel_rows; /* partial row groups (rows < mr) */
    qmm_opt_kernel_ft *kernel_rows_dense; /* NULL, or: kernel_rows on A words `rows` a K group
                                             instead of mr (an A of fewer rows than mr is
                                             packed so: matmul.c, "dense A"); only on a layout
                                             whose A qmm_opt_pack_a packs */
    qmm_opt_kernel_pack_ft *kernel_pack; /* NULL, or: packs B during the first row group's
                                            pass over each panel (matmul.c, "fused") */
    int kc;                    /* k values per K block of the tile loops; 0: matmul.c's KC_K */
    qmm_opt_kernel_raw_a_ft *kernel_raw_a; /* NULL, or: full row groups of a uint8 A read as
                                              it is (matmul.c, "raw A") */
    qmm_opt_kernel_raw_a_rq_ft *kernel_raw_a_rq; /* NULL, or: kernel_raw_a requantizing the
                                                    previous tile beside it (matmul.c,
                                                    "overlapped epilogue") */
    qmm_opt_kernel_rq_ft *kernel_rq; /* NULL, or: `kernel` (full row groups) requantizing
                                        the previous tile beside it (the same) */
    int gemv_rows;             /* calls of at most this many rows (QMM_OPT_GEMV_MAX_ROWS at
                                  most) run `gemv` on an unpacked B and `gemv_packed` on a
                                  prepacked b_unsigned one; 0: the tile kernels run every call
                                  (the portable variant: its tile kernel beats its gemv) */
    qmm_opt_gemv_ft *gemv;     /* small M on an unpacked B */
    qmm_opt_gemv_packed_ft *gemv_packed; /* small M on a prepacked b_unsigned B */
    qmm_opt_pack_b_ft *pack_b;
    qmm_opt_colsum_ft *colsum;
    qmm_opt_requant_mults_ft *requant_mults;
    qmm_opt_requant_row_ft *requant_row;
    qmm_opt_task_ft *task_begin; /* called by a thread before its task's first tile kernel
                                    call (AMX: load the tile configuration) */
    qmm_opt_task_ft *task_end;   /* after its task's last (AMX: release the tiles) */
    /* `qmmcheck bench --peak`: `iters` iterations of a dependency-free block of the kernel's
     * multiply-accumulate instructions, returning the int8 MACs performed; NULL: none */
    qmm_opt_peak_ft *peak;
    const char *peak_loop;     /* the loop, in words; the last runnable variant's loop is the
                                  peak percentages are taken against (peak.c) */
    /* the float8 QLinearMatMul path (float8.c): its double GEMM tile, 6 x f64_nr */
    qmm_opt_f64_gemm_ft *f64_gemm;
    const char *f64_gemm_name;
    int f64_nr;
};

/* The variants, from the portable one (0) up, best last; every slot filled (above). */
int qmm_opt_variant_count(void);
const qmm_opt_variant *qmm_opt_variant_at(int i); /* NULL past the last */
/* NULL when this CPU runs variant i, else why not (each variant's check, run once) */
const char *qmm_opt_variant_missing(int i);
int qmm_opt_variant_find(const char *name, size_t len); /* the variant isa=name picks, or -1 */
int qmm_opt_variant_auto(void); /* the variant isa=auto picks: the last this CPU runs */

/* Tuning that differs between CPU models running one variant (kernels.c's table of measured
 * values, docs/optimized.md "Tuning by CPU model"); no value changes an answer. */
typedef struct qmm_opt_tuning {
    size_t raw_a_k_max; /* the largest K at which a uint8 A is read as it is by a variant's
                           kernel_raw_a (no packing pass over A) */
    int fuse_wide;      /* past 192 rows, B input: packed by the first row block's
                           kernel_pack (the wide fused path), not in a pass of its own */
    size_t row_block;   /* the most rows of A one compute task takes (1..QMM_OPT_ROW_BLOCK_CAP):
                           past it the rows are split into near-equal blocks (the narrow
                           fused path, up to 192 rows with B as input, keeps one block) */
    size_t cols_first_from; /* with raw A: tasks walk B's column chunks first (an A row block
                               kept in L2 across them) where an A row block and a B column
                               chunk take at least this many bytes together; 0 never */
} qmm_opt_tuning;
/* The largest row_block (matmul.c sizes each worker's sums for it): a multiple of every
 * layout's mr (6, 8, 32), so that a block rounded up to whole row groups stays within it. */
#define QMM_OPT_ROW_BLOCK_CAP 288
qmm_opt_tuning qmm_opt_tuning_of_cpu(void);

/* The A of the small-M kernels (gemv, gemv_packed): int16 pairs a - za, one row a group. */
extern const qmm_opt_layout qmm_opt_gemv_a;

/* The portable slots a variant inherits (besides its layout's): */
qmm_opt_task_ft qmm_opt_task_none;               /* does nothing (kernels.c) */
qmm_opt_pack_b_ft qmm_opt_pack_b_sums;           /* panels, then colsum (pack.c) */
qmm_opt_requant_mults_ft qmm_opt_requant_mults_none; /* no float first try (requant.c) */
qmm_opt_requant_mults_ft qmm_opt_requant_mults_f32;  /* range-checked floats (requant.c) */

/* ---- packing (pack.c) ---- */

/* Packs rows [0, rows) of an M x K uint8/int8 matrix (row stride lda) into groups of L->mr
 * rows (the last group padded with zero rows), kgroups groups of L->kg k values (>= ceil(K /
 * kg); zero past K), layout dst[group][kgroup][row] as 32-bit words. kg 2: int16 pairs of
 * a - za_r; kg 4: uint8 quads of a (int8 a + 128). rowsum[r] = sum_k (a - za_r) mod 2^32.
 * za[r] per row. */
qmm_opt_pack_a_ft qmm_opt_pack_a;
/* qmm_opt_pack_a's scalar part: it packs every word but, in each row group, rows
 * [0, in_group / row_quantum * row_quantum) x K groups [0, done_t), and takes every row sum.
 * Those words are the caller's: qmm_opt_pack_a's SSE2 blocks packed them, or matmul.c's raw-A
 * path reads them from A itself. */
void qmm_opt_pack_a_rest(const qmm_opt_layout *L, const uint8_t *a, size_t lda, int a_signed,
                         size_t rows, size_t k, const int32_t *za, size_t kgroups, int32_t *dst,
                         int32_t *rowsum, size_t row_quantum, size_t done_t);

/* The AMX "tiles" layout of A: groups of L->mr rows (a multiple of 16), kgroups (a multiple
 * of 16, >= ceil(K/4)) uint8 quads a' (int8 a + 128) per row, zero past K and past `rows`.
 * Within a group, K tile T (16 groups, 64 bytes of each row) holds rows in order, 64 bytes
 * each: byte (T*mr + r)*64 + q is a'[r][64T + q] — a 16-row slice is one tile load with
 * stride 64. In 32-bit words, group g's K tile T starts at g*kgroups*mr + 16*T*mr, the
 * offset the driver computes for any layout. rowsum as for qmm_opt_pack_a. */
qmm_opt_pack_a_ft qmm_opt_pack_a_tiles;

/* Packs columns [j0, j1) (j0 a multiple of nr) of a K x N matrix (row stride ldb) into panels
 * of L->nr columns: panel p at dst + p*kgroups*kg*nr, zero padded in k (to kgroups groups,
 * >= ceil(K/kg)) and in columns.
 * b_unsigned 0: layout [kgroup][col][kg] of int8 B' (uint8 b - 128, int8 b as is). The quads
 *       layouts' column sums come from the packed panels (the variant's `colsum`).
 * b_unsigned 1 (nr 16, kg 2 only; AVX2): "unsigned words": B'' = b for uint8, b + 128 for
 *       int8 (0..255), per k pair t and column l < 8 the four bytes at dst + 32t + 4l are
 *       B''[2t][l], B''[2t][l+8], B''[2t+1][l], B''[2t+1][l+8]. As 16-bit words, w & 0xff
 *       gives column l's (k, k+1) pair and w >> 8 column l+8's: two exact vpmaddwd operands
 *       from one load, a vpand and a vpsrlw (no vpmovsxbw, slow on Zen 3). */
qmm_opt_pack_panels_ft qmm_opt_pack_b;

/* ---- requantization (requant.c) ---- */

/* One output row with per-tensor y_scale/y_zero_point: out[j] = clamp(RNE(x_j*sa*sb[j]/sy)
 * + zy) for j < n, where cm[j] = sb[j] / sy (rounded) and x_j = acc[j] - zr - zc[j] modulo
 * 2^32 as int32 (zc NULL: no zc term) — the zero-point corrections applied on the way in, so
 * the epilogue needs no separate pass. Fast double path, exact fallback; mf is not read (the
 * portable variant's requant_mults makes none). */
qmm_opt_requant_row_ft qmm_opt_requant_row;

/* qmm_opt_requant_row eight elements at a time (requant-avx2.c): the same results. With mf
 * (qmm_opt_requant_mults_f32's) each block of 8 is tried in single precision first, as in
 * requant-avx512.c; blocks it cannot decide, and every block without mf, take the double
 * path. */
qmm_opt_requant_row_ft qmm_opt_requant_row_avx2;

/* qmm_opt_requant_row sixteen elements at a time (requant-avx512.c): the same results. With
 * mf (qmm_opt_requant_mults_f32's: (float)(sa*cm[j]), every one a normal float in [2^-100,
 * 2^100]; see requant.c for the bound) each block of 16 is tried in single precision first;
 * blocks the float path cannot decide, and every block without mf, take the double path. */
qmm_opt_requant_row_ft qmm_opt_requant_row_avx512;

/* One element with any scales: the same rule (qmm_rq_requant), m = (sa*sb)/sy. */
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

/* The bytes of a packed B's data block. */
static inline size_t qmm_opt_packed_b_bytes(const qmm_optimized_packed_b *pb)
{
    return pb->nmat * pb->kp * pb->npad + 64;
}

/* A large block, 64-byte aligned at least; from 4 MiB up a mapping of its own, 2 MiB aligned and
 * marked for transparent huge pages (bigalloc.c). Freed by qmm_opt_big_free with the same
 * size. */
void *qmm_opt_big_alloc(size_t bytes);
void qmm_opt_big_free(void *p, size_t bytes);
/* 1 when a block of `bytes` is such a mapping here (Linux, not QMM_NO_HUGE, not AddressSanitizer) */
int qmm_opt_big_mapped(size_t bytes);

/* How many of a backend's integer GEMM calls (QLinearMatMul, MatMulInteger) ran each path,
 * counted as they are planned: what shows that a tuning option took effect (the tests read
 * it; no answer depends on it). */
typedef struct qmm_opt_paths {
    _Atomic unsigned long calls; /* calls planned on the tile path (not small M) */
    _Atomic unsigned long fused; /* ... B packed by the first row group (narrow or wide) */
    _Atomic unsigned long wide;  /* ... the wide fused path (phase 1, then phase 2) */
    _Atomic unsigned long raw_a; /* ... A read as it is by kernel_raw_a */
    _Atomic unsigned long row_blocks; /* ... their row blocks, summed over the calls */
} qmm_opt_paths;

typedef struct qmm_opt_backend {
    qmm_backend table;
    const qmm_opt_variant *v;  /* the variant it runs */
    const char *missing;       /* non-NULL: this CPU cannot run `v`, and why */
    qmm_opt_pool *pool;
    int threads;
    qmm_opt_tuning tuning; /* the CPU model's, each value replaced by its option if given */
    qmm_opt_paths paths;   /* what the calls ran (matmul.c's run_job counts them) */
    /* A call's scratch (packed operands, per-thread sums), kept between calls so that
     * repeated calls do not fault in fresh pages: grown as needed, freed at close. A call
     * that finds it in use by another call allocates its own. */
    pthread_mutex_t ws_lock;
    void *ws;
    size_t ws_size;
    char name[160];
    char description[192];
} qmm_opt_backend;

/* A call's scratch block (matmul.c): the backend's cached one when no other call holds it
 * (grown to `bytes` if smaller; *cached = 1), else a block of its own; 64-byte aligned; NULL
 * when out of memory. Given back with qmm_opt_scratch_put. */
void *qmm_opt_scratch_get(const qmm_opt_backend *ob, size_t bytes, int *cached);
void qmm_opt_scratch_put(const qmm_opt_backend *ob, void *block, int cached);

/* Packs B for backend `ob` (the worker behind qmm_optimized_pack_b and per-call packing):
 * nmat matrices of k x n at b + m*k*n. */
qmm_status_code qmm_opt_pack_b_all(const qmm_opt_backend *ob, const qmm_tensor *b,
                                   qmm_optimized_packed_b *pb, qmm_status *st);

qmm_status_code qmm_opt_qlinearmatmul(const qmm_opt_backend *ob, const qmm_qlinearmatmul *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st);
qmm_status_code qmm_opt_matmulinteger(const qmm_opt_backend *ob, const qmm_matmulinteger *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st);

/* QLinearMatMul with a float8 a, b or y (float8.c), after validation (`plan`): exact
 * accumulation in doubles (chunked, split into limbs where products need more than 53 bits),
 * the exact requantization to uint8/int8 or rounding to the float8 y. */
qmm_status_code qmm_opt_qlinearmatmul_float8(const qmm_opt_backend *ob,
                                             const qmm_qlinearmatmul *c, const qmm_plan *plan,
                                             qmm_status *st);

/* QOrderedMatMul (qordered.c): the operands gathered out of their cublasLt orders, the
 * accumulators from qmm_opt_matmulinteger, optimized/qordered_exact.h's exact epilogue. */
qmm_status_code qmm_opt_qorderedmatmul(const qmm_opt_backend *ob, const qmm_qorderedmatmul *c,
                                       qmm_status *st);

/* The float-output operators (nbits.c, dynq.c; docs/optimized.md "MatMulNBits, ..."); the
 * *_unsupported functions say, from the types alone, why a call is not computed here (NULL:
 * it is), for the capability query and the call alike. */
const char *qmm_opt_matmulnbits_unsupported(const qmm_matmulnbits *c);
const char *qmm_opt_matmul_integer_to_float_unsupported(const qmm_matmul_integer_to_float *c);
qmm_status_code qmm_opt_matmulnbits(const qmm_opt_backend *ob, const qmm_matmulnbits *c,
                                    qmm_status *st);
qmm_status_code qmm_opt_dynamicquantizematmul(const qmm_opt_backend *ob,
                                              const qmm_dynamicquantizematmul *c,
                                              qmm_status *st);
qmm_status_code qmm_opt_matmul_integer_to_float(const qmm_opt_backend *ob,
                                                const qmm_matmul_integer_to_float *c,
                                                qmm_status *st);

#endif /* QMM_OPT_INTERNAL_H */
