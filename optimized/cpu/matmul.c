/* optimized/cpu/matmul.c — the driver: validation (the shared rules of ops/), operand
 * packing, the blocked loops around the microkernels, the zero-point corrections and the
 * requantization epilogue.
 *
 * A call runs in up to three parallel phases on the backend's pool:
 *   1. pack every distinct A matrix (batch broadcasting packs a shared matrix once);
 *   2. pack every distinct B matrix, unless B was prepacked or the small-M path reads B
 *      in place;
 *   3. compute: one task per (batch, block of rows, block of columns). Each output element
 *      belongs to exactly one task, and its sum is exact modulo 2^32 whatever the blocking,
 *      so results do not depend on the thread count or on which thread ran what.
 * Blocking inside a task (BLIS order): columns in chunks of NC, K in blocks of KC, then
 * panels of nr columns (kept in L1 while every mr-row group of the A block streams past),
 * then mr-row groups; int32 partial sums live in a per-thread buffer between K blocks.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"
#include "ops/qmm_ops.h"

enum {
    MB_MAX = 192,  /* the narrow fused path's rows (one row block), and past them the wide
                      one's; the rows a task takes are the CPU model's row_block (kernels.c,
                      192 unless measured otherwise), at most MB_CAP */
    MB_CAP = QMM_OPT_ROW_BLOCK_CAP, /* the most rows a task has: each worker's sums */
    MB_FEW = 96,   /* ... when row_block would leave fewer than TASKS_PER_THREAD tasks a
                      thread */
    TASKS_PER_THREAD = 4,
    FUSED_TASKS_PER_THREAD = 2, /* the fused path's column blocks: 128x768x768, 2 threads,
                                   0.206 ms with 8 tasks of 96 columns, 0.196 with 4 of 192
                                   or 2 of 384, 0.274 with 3 of 256 (Zen 4) */
    NC_MAX = 256,  /* columns per task and per chunk: a multiple of every nr (16, 32) */
    KC_K = 512,    /* k values per K block: B panel slice nr*KC bytes stays in L1 */
    FUSED_KC = 1024,      /* the fused path's K block where K >= FUSED_KC_FROM: B read as it is
                             in row bands of 1024, one panel pair after another, instead of
                             all K rows a pass. Zen 5, T = 1 unless said, before/after, 5-7
                             rounds: 32x4096x11008 1.21 (T = 2 1.20), 16x4096x4096 1.11,
                             64x11008x4096 1.04, 64x4096x4096 1.01, 96x4096x4096 1.03,
                             192x4096x4096 1.06, 128x4096x4096 1.02 (T = 2 1.01; two earlier
                             T = 2 runs 0.985 and 1.056); at K = 3072 0.97-1.01 and at K = 2048
                             0.96-0.98, so not below 4096, where nothing was measured between
                             (the blocks cost the overlapped epilogue, which needs one) */
    FUSED_KC_FROM = 4096,
    GEMV_ACC = 4096, /* small M, unpacked B: int32 sums per task (rows x columns): 16 KB, L1 */
    PACK_ROWS = 48,  /* rows per A packing task, rounded up to a multiple of mr */
    PACK_ROWS_MAX = 64,
    NEXT_CHUNK_PF = 16384, /* bytes of the next column chunk's B asked for into L2 before a
                              chunk's epilogue, when a task of one row group streams B
                              (compute_tiles): M = 1 on a prepacked 4096x4096 B, Zen 5, 11-15
                              alternating rounds, before/after: T = 1 1.06-1.21, T = 2 1.085;
                              8, 32 and 64 KB read the same as 16 */
    PACK_COLS = 128, /* columns per B packing task: a multiple of every nr (small tasks keep
                        both threads busy when there are few of them) */
};

/* The plan's parameter maps (ops/qmm_ops.h) under short names. */
enum {
    P_AS = QMM_MAP_A_SCALE,
    P_AZ = QMM_MAP_A_ZERO_POINT,
    P_BS = QMM_MAP_B_SCALE,
    P_BZ = QMM_MAP_B_ZERO_POINT,
    P_YS = QMM_MAP_Y_SCALE,
    P_YZ = QMM_MAP_Y_ZERO_POINT,
};

typedef struct worker_scratch {
    int32_t *cbuf;   /* MB_CAP x NC_MAX partial sums */
    int32_t *accrow; /* NC_MAX corrected accumulators */
    int32_t *zbp;    /* NC_MAX */
    int32_t *zc;     /* NC_MAX: zap * colsum for a zero point constant along i */
    double *sb, *cm; /* NC_MAX each */
    float *mf;       /* NC_MAX: (float)(sa * cm[j]) for the float requantizer */
    int32_t *ovp;    /* the overlapped epilogue: per panel of 32 columns, 32 zc then 32 mf */
    int32_t *ovzr;   /* ... MB_CAP: per row of the task, zbp * rowsum (overlap_plan) */
    uint32_t *ovdec; /* ... MB_CAP / 8 x 16: a run's decided masks (qmm_opt_rq_tile) */
    qmm_opt_rq_tile *ovq; /* ... and its rows and constants */
    int8_t *panels;  /* the fused path's B panels, two of kp x nr bytes (carve_scratch) */
    /* b's zero point and scale constant along j: the first cp_n entries of zbp, sb and cm
     * hold cp_zbp and cp_sb (and cp_sb / sy) already, and the first mf_n of mf the float
     * multiplier of mf_sa and that cm (decode_column_params clears mf_n whenever it writes
     * cm); 0: none. Reset with each call's scratch, and kept over its column chunks, whose
     * values are then the same (decode_column_params, make_mults) */
    size_t cp_n, mf_n;
    int32_t cp_zbp;
    double cp_sb, mf_sa;
} worker_scratch;

/* A worker's scratch is one run of WS_BYTES: the pieces above in that order (each size a
 * multiple of 64 bytes, so every piece stays 64-byte aligned), the run rounded up to 64 bytes
 * so that the next worker's starts aligned too (the rq tile's 96 bytes left every other
 * worker's sums 32-byte aligned until 2026-11-28: its zmm stores split across lines). */
#define WS_BYTES                                                                           \
    (((size_t)MB_CAP * NC_MAX * 4 + 4 * NC_MAX * 4 + 2 * NC_MAX * 8 + 2 * NC_MAX * 4 +         \
      MB_CAP * 4 + MB_CAP * 8 + sizeof(qmm_opt_rq_tile) + 63) & ~(size_t)63)

_Static_assert(WS_BYTES % 64 == 0, "each worker's scratch starts 64-byte aligned");

static void worker_scratch_at(worker_scratch *w, char *p)
{
    w->cbuf = (int32_t *)(void *)p;
    p += (size_t)MB_CAP * NC_MAX * 4;
    w->accrow = (int32_t *)(void *)p;
    w->zbp = (int32_t *)(void *)(p + NC_MAX * 4);
    w->zc = (int32_t *)(void *)(p + 2 * NC_MAX * 4);
    w->sb = (double *)(void *)(p + 3 * NC_MAX * 4);
    w->cm = (double *)(void *)(p + 3 * NC_MAX * 4 + NC_MAX * 8);
    w->mf = (float *)(void *)(p + 3 * NC_MAX * 4 + 2 * NC_MAX * 8);
    w->ovp = (int32_t *)(void *)(p + 4 * NC_MAX * 4 + 2 * NC_MAX * 8);
    w->ovzr = (int32_t *)(void *)(p + 6 * NC_MAX * 4 + 2 * NC_MAX * 8);
    w->ovdec = (uint32_t *)(void *)(p + 6 * NC_MAX * 4 + 2 * NC_MAX * 8 + MB_CAP * 4);
    w->ovq = (qmm_opt_rq_tile *)(void *)(p + 6 * NC_MAX * 4 + 2 * NC_MAX * 8 + MB_CAP * 12);
    w->ovq->decided_out = w->ovdec; /* the worker's: every run's masks go there */
    w->panels = NULL; /* the fused path's: carve_scratch */
    w->cp_n = w->mf_n = 0;
}

/* dst[1 .. n) = dst[0], doubling the copied run */
static void fill_run(void *dst, size_t size, size_t n)
{
    char *d = dst;
    for (size_t have = 1; have < n; have *= 2)
        memcpy(d + have * size, d, (have < n - have ? have : n - have) * size);
}

/* the same double, bit for bit */
static int same_double(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

typedef struct job {
    const qmm_opt_variant *v;
    const qmm_opt_layout *L;      /* v's */
    const qmm_geometry *g;
    const qmm_qlinearmatmul *qlm; /* one of qlm / mmi */
    const qmm_matmulinteger *mmi;
    const qmm_tensor *a, *b, *az, *bz;
    const qmm_param_map *maps;    /* the validation plan's, indexed by P_* */
    int a_signed, b_signed;
    int direct;                   /* small-M path on unpacked B */
    int smallp;                   /* small-M path on a prepacked "pairs" B */
    int fused;                    /* B is packed by the compute tasks' first row group
                                     (the variant's kernel_pack): see plan_tasks */
    int wide;                     /* ... past MB_MAX rows: by the first row block's tasks
                                     into the whole packed B, which the other row blocks'
                                     tasks read: see shape_job and wide_task_of */
    atomic_int *packed;           /* wide: per batch and column block, 1 once its row block
                                     0 has packed it (carve_scratch) */
    int raw_a;                    /* full row groups read a uint8 A as it is (the variant's
                                     kernel_raw_a): see plan_tasks */
    int dense_a;                  /* A packed m words a K group, not mr: M < mr on the tile
                                     path, a variant with kernel_rows_dense, not fused (see
                                     plan_tasks) */
    int no_rowsum;                /* b's zero point, shifted as the packing shifts b, is 0 in
                                     every column: zbp * rowsum is 0, so A's row sums are not
                                     taken (they are stored as 0) */
    int mr, nr, kg;
    int threads;                  /* the backend's */
    size_t m, k, n, batch;
    size_t kgroups, kp, mpad, npad;
    /* A */
    size_t namat, a_words;        /* words per packed A matrix */
    int64_t *amat_rep;            /* a batch index that uses each A matrix */
    int32_t *apack, *rowsum;
    /* B */
    size_t nbmat;
    const uint8_t *braw;
    int8_t *bpack_own;
    int32_t *colsum_own;
    const int8_t *bpack;
    const int32_t *colsum;
    /* tasks */
    size_t a_chunks, b_chunks;    /* per matrix */
    size_t pack_rows;             /* rows per A packing task */
    size_t mb, nmb, nb, nnb;
    int rows_first;               /* consecutive tasks walk down the rows of a column block */
    worker_scratch *ws;
    /* requantization constants */
    int y_per_tensor;
    double sy;
    int32_t zy, qmin, qmax;
} job;

static int64_t zp_at(const qmm_tensor *zp, const qmm_param_map *map, const qmm_geometry *g,
                     int64_t bi, int64_t i, int64_t j)
{
    if (!qmm_tensor_present(zp))
        return 0;
    const uint8_t *p = zp->data;
    uint8_t v = p[qmm_param_offset(map, g, bi, i, j)];
    return zp->dtype == QMM_DTYPE_INT8 ? (int64_t)(int8_t)v : (int64_t)v;
}

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

/* K groups of a packed operand: ceil(k / kg), rounded up to the layout's alignment. */
static size_t packed_kgroups(const qmm_opt_layout *L, size_t k)
{
    return ceil_div(ceil_div(k, (size_t)L->kg), (size_t)L->kalign) * (size_t)L->kalign;
}

static size_t amat_of(const job *J, int64_t bi)
{
    if (J->m == 0 || J->k == 0)
        return 0;
    return (size_t)qmm_geometry_a_offset(J->g, bi) / (J->m * J->k);
}

static size_t bmat_of(const job *J, int64_t bi)
{
    if (J->k == 0 || J->n == 0)
        return 0;
    return (size_t)qmm_geometry_b_offset(J->g, bi) / (J->k * J->n);
}

/* ---- phase 1: A ---- */

static void pack_a_task(void *ctx, size_t task, int worker)
{
    job *J = ctx;
    size_t amat = task / J->a_chunks, chunk = task % J->a_chunks;
    size_t r0 = chunk * J->pack_rows, r1 = r0 + J->pack_rows < J->m ? r0 + J->pack_rows : J->m;
    int64_t bi = J->amat_rep[amat];
    int32_t za[PACK_ROWS_MAX];
    for (size_t i = r0; i < r1; i++)
        za[i - r0] = (int32_t)zp_at(J->az, &J->maps[P_AZ], J->g, bi, (int64_t)i, 0);
    const uint8_t *src = (const uint8_t *)J->a->data + amat * J->m * J->k + r0 * J->k;
    int32_t *rs = J->rowsum + amat * J->m + r0;
    if (J->no_rowsum) {
        memset(rs, 0, (r1 - r0) * sizeof *rs);
        rs = NULL;
    }
    if (J->direct || J->smallp) {
        size_t kpairs = (J->k + 1) / 2;
        qmm_opt_gemv_a.pack_a(&qmm_opt_gemv_a, src, J->k, J->a_signed, r1 - r0, J->k, za,
                              kpairs, J->apack + amat * J->a_words + r0 * kpairs, rs);
    } else if (J->dense_a) {
        /* the layout's packer with groups of m rows: one group, m words a K group */
        qmm_opt_layout dense = *J->L;
        dense.mr = (int)J->m;
        dense.pack_a(&dense, src, J->k, J->a_signed, r1 - r0, J->k, za, J->kgroups,
                     J->apack + amat * J->a_words, rs);
    } else if (J->raw_a) {
        /* the row sums, the partial row group and every group's last K groups: the full
         * groups' whole K groups are read from A itself; on the fused path the first row
         * group whole (kernel_pack reads packed A) */
        size_t first = J->fused && r0 == 0 ? (r1 < (size_t)J->mr ? r1 : (size_t)J->mr) : 0;
        int32_t *ap = J->apack + amat * J->a_words + r0 * J->kgroups;
        if (first)
            J->L->pack_a(J->L, src, J->k, J->a_signed, first, J->k, za, J->kgroups, ap, rs);
        if (r1 - r0 > first)
            qmm_opt_pack_a_rest(J->L, src + first * J->k, J->k, J->a_signed, r1 - r0 - first,
                                J->k, za + first, J->kgroups, ap + first * J->kgroups,
                                rs ? rs + first : NULL, (size_t)J->mr, J->k / 4);
    } else {
        /* r0 is a multiple of mr (pack_rows is), so chunks start on a group */
        J->L->pack_a(J->L, src, J->k, J->a_signed, r1 - r0, J->k, za, J->kgroups,
                     J->apack + amat * J->a_words + r0 * J->kgroups, rs);
    }
}

/* ---- phase 2: B ---- */

static void pack_b_task(void *ctx, size_t task, int worker)
{
    job *J = ctx;
    size_t bmat = task / J->b_chunks, chunk = task % J->b_chunks;
    size_t j0 = chunk * PACK_COLS, j1 = j0 + PACK_COLS < J->n ? j0 + PACK_COLS : J->n;
    const uint8_t *src = J->braw + bmat * J->k * J->n;
    int8_t *dst = J->bpack_own + bmat * J->kp * J->npad + j0 * J->kp;
    int32_t *cs = J->colsum_own ? J->colsum_own + bmat * J->npad + j0 : NULL;
    J->v->pack_b(J->v, src, J->n, J->b_signed, J->k, J->kgroups, j0, j1, dst, cs);
}

/* ---- phase 3: compute and epilogue ---- */

/* The epilogue of a block, rows [m0, m1) x columns [j0, j1) of batch bi: column parameters,
 * the zero-point corrections, then per row the requantization (or MatMulInteger's store). */
typedef struct block_epilogue {
    int64_t bi;
    size_t m0, j0, j1, nc;
    const int32_t *rowsum; /* sum_k (a - za) per row */
    const int32_t *colsum; /* sum_k B' per column (the quads layouts), else NULL */
    int shift_a;           /* quads A' = a + 128: zap = za + 128 */
    int zb_const;          /* b's zero point does not vary along j */
    int sb_const;          /* nor b's scale (w->cm then holds one value nc times) */
    int sums_only;         /* corrections are zbp*rowsum and zap*colsum, no product per element */
    int fused;             /* ... applied by the per-tensor requantizer itself */
    int64_t ys_base, yz_base; /* y's parameters for bi, when not per tensor */
} block_epilogue;

/* What the packing adds to b: packed B' = b - 128 for uint8 b; "unsigned words" B'' and the
 * small-M path's unsigned form = b + 128 for int8 b. */
static int shift_b_of(const job *J)
{
    return J->L->b_unsigned || J->direct ? (J->b_signed ? 128 : 0) : (J->b_signed ? 0 : -128);
}

/* w->zbp (b's zero point, shifted as the packing shifted b), w->sb and w->cm (b's scale, and
 * over y's) for the block's columns. A parameter that does not vary along j (col_stride 0) is
 * decoded once: the same values. */
/* b's zero point (as stored) and scale at column j of the matrix whose parameters begin at
 * base (their offsets are linear in j: base + col_stride * j) */
static int32_t zb_col(const job *J, int64_t base, size_t j)
{
    if (!qmm_tensor_present(J->bz))
        return 0;
    uint8_t v = ((const uint8_t *)J->bz->data)[base + J->maps[P_BZ].col_stride * (int64_t)j];
    return J->bz->dtype == QMM_DTYPE_INT8 ? (int32_t)(int8_t)v : (int32_t)v;
}

static double sb_col(const job *J, int64_t base, size_t j)
{
    return qmm_scale_decode(J->qlm->b_scale.dtype, J->qlm->b_scale.data,
                            base + J->maps[P_BS].col_stride * (int64_t)j);
}

static void decode_column_params(const job *J, worker_scratch *w, block_epilogue *E)
{
    const qmm_geometry *g = J->g;
    int shift_b = shift_b_of(J);
    int64_t bz_base = qmm_param_offset(&J->maps[P_BZ], g, E->bi, 0, 0);
    int64_t bs_base = qmm_param_offset(&J->maps[P_BS], g, E->bi, 0, 0);
    size_t j0 = E->j0, nc = E->nc;
    if (nc == 0)
        return;
    /* a parameter constant along j is decoded once and copied into every column; where both
     * are, a column chunk of the call that had the same values left them there (the
     * per-column loop cost 30% of an M = 1, K = 4, N = 4096 call, its 16 chunks each decoding
     * and storing 256 columns) */
    int32_t zb = zb_col(J, bz_base, j0) + shift_b;
    double sb = J->qlm ? sb_col(J, bs_base, j0) : 0;
    int both = E->zb_const && (!J->qlm || E->sb_const);
    if (both && w->cp_n >= nc && w->cp_zbp == zb && same_double(w->cp_sb, sb))
        return;
    w->zbp[0] = zb;
    if (E->zb_const)
        fill_run(w->zbp, sizeof *w->zbp, nc);
    for (size_t j = j0 + 1; !E->zb_const && j < E->j1; j++)
        w->zbp[j - j0] = zb_col(J, bz_base, j) + shift_b;
    if (J->qlm) {
        w->sb[0] = sb;
        w->cm[0] = sb / J->sy;
        if (E->sb_const) {
            fill_run(w->sb, sizeof *w->sb, nc);
            fill_run(w->cm, sizeof *w->cm, nc);
        }
        for (size_t j = j0 + 1; !E->sb_const && j < E->j1; j++) {
            w->sb[j - j0] = sb_col(J, bs_base, j);
            w->cm[j - j0] = w->sb[j - j0] / J->sy;
        }
    }
    w->mf_n = 0; /* made from the cm just written */
    w->cp_n = both ? nc : 0;
    w->cp_zbp = zb;
    w->cp_sb = sb;
}

/* a's zero point (+128 for a quads A of int8 a) at row i */
static uint32_t zap_at(const job *J, const block_epilogue *E, size_t i)
{
    return (uint32_t)(zp_at(J->az, &J->maps[P_AZ], J->g, E->bi, (int64_t)i, 0) +
                      (E->shift_a ? 128 : 0));
}

/* The block's correction path (epilogue_begin chooses it). The common case — b's zero point
 * constant along j, a's constant along i — needs no multiply per element: zbp*rowsum is one
 * number per row, zap*colsum one row of numbers per block, made here into w->zc once the column
 * sums exist (baseline x86-64 has no 32-bit vector multiply, and the per-element products cost
 * as much as the rest of the epilogue). */
static void plan_corrections(const job *J, worker_scratch *w, const block_epilogue *E)
{
    if (E->sums_only && E->colsum) {
        uint32_t zap = zap_at(J, E, E->m0);
        for (size_t jj = 0; jj < E->nc; jj++)
            w->zc[jj] = (int32_t)(zap * (uint32_t)E->colsum[E->j0 + jj]);
    }
}

/* w->accrow = row i's exact accumulators (mod 2^32): crow - zbp*rowsum - zap*colsum. */
static void correct_row(const job *J, worker_scratch *w, const block_epilogue *E, size_t i,
                        const int32_t *crow)
{
    uint32_t rs = (uint32_t)E->rowsum[i];
    size_t nc = E->nc;
    const int32_t *colsum = E->colsum;
    if (E->sums_only) {
        uint32_t zr = (uint32_t)w->zbp[0] * rs;
        if (colsum)
            for (size_t jj = 0; jj < nc; jj++)
                w->accrow[jj] = qmm_rq_wrap((uint32_t)crow[jj] - zr - (uint32_t)w->zc[jj]);
        else
            for (size_t jj = 0; jj < nc; jj++)
                w->accrow[jj] = qmm_rq_wrap((uint32_t)crow[jj] - zr);
        return;
    }
    uint32_t zap = colsum ? zap_at(J, E, i) : 0;
    for (size_t jj = 0; jj < nc; jj++) {
        uint32_t acc = (uint32_t)crow[jj] - (uint32_t)w->zbp[jj] * rs;
        if (colsum)
            acc -= zap * (uint32_t)colsum[E->j0 + jj];
        w->accrow[jj] = qmm_rq_wrap(acc);
    }
}

/* The requantizer's single-precision multipliers, made again only when sa changes along i. */
typedef struct float_mults {
    double sa; /* the sa w->mf was made for; -1: none yet */
    int ok;    /* w->mf is usable */
} float_mults;

/* w->mf for the block's columns from w->cm and a's scale sa (the variant's requant_mults);
 * with b's scale constant along j, one multiplier made and copied (cm holds one value). */
static int make_mults(const job *J, worker_scratch *w, const block_epilogue *E, double sa)
{
    size_t nc = E->nc;
    if (!E->sb_const || nc == 0) {
        w->mf_n = 0;
        return J->v->requant_mults(sa, w->cm, nc, w->mf);
    }
    if (w->mf_n >= nc && same_double(w->mf_sa, sa)) /* cm unchanged since: see above */
        return 1;
    w->mf_n = 0;
    if (!J->v->requant_mults(sa, w->cm, 1, w->mf))
        return 0;
    fill_run(w->mf, sizeof *w->mf, nc);
    w->mf_n = nc;
    w->mf_sa = sa;
    return 1;
}

/* Row i on the fused per-tensor path: the requantizer corrects crow itself (zr = zbp*rowsum,
 * zc per column), trying single precision first where the variant has a float first try (its
 * requant_mults makes the multipliers). */
static void requantize_row_fused(const job *J, worker_scratch *w, const block_epilogue *E,
                                 size_t i, const int32_t *crow, double sa, float_mults *fm,
                                 uint8_t *out)
{
    const int32_t *zc = E->colsum ? w->zc : NULL;
    uint32_t zr = (uint32_t)w->zbp[0] * (uint32_t)E->rowsum[i];
    size_t nc = E->nc;
    if (sa != fm->sa) {
        fm->sa = sa;
        fm->ok = make_mults(J, w, E, sa);
    }
    J->v->requant_row(crow, zc, zr, nc, fm->ok ? w->mf : NULL, sa, w->sb, w->cm, J->sy, J->zy,
                      J->qmin, J->qmax, out);
}

/* Row i of w->accrow with y's scale and zero point decoded per element (not per tensor). */
static void requantize_row_per_element(const job *J, const worker_scratch *w,
                                       const block_epilogue *E, size_t i, double sa,
                                       uint8_t *out)
{
    const qmm_qlinearmatmul *c = J->qlm;
    const qmm_param_map *ms = &J->maps[P_YS], *mz = &J->maps[P_YZ];
    const uint8_t *yzp = c->y_zero_point.data;
    for (size_t jj = 0; jj < E->nc; jj++) {
        int64_t j = (int64_t)(E->j0 + jj);
        int64_t os = E->ys_base + ms->row_stride * (int64_t)i + ms->col_stride * j;
        int64_t oz = E->yz_base + mz->row_stride * (int64_t)i + mz->col_stride * j;
        double sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, os);
        int32_t zy = c->y_zero_point.dtype == QMM_DTYPE_INT8 ? (int32_t)(int8_t)yzp[oz]
                                                             : (int32_t)yzp[oz];
        int32_t q = qmm_opt_requant_one(w->accrow[jj], sa, w->sb[jj], sy, zy, J->qmin, J->qmax);
        out[jj] = (uint8_t)((uint32_t)q & 0xffu);
    }
}

/* The epilogue of block rows [m0, ...) x columns [j0, j1) of batch bi: its correction path,
 * its column parameters (decode_column_params) and y's parameter bases; its corrections are
 * made later (plan_corrections), once the column sums exist. */
static block_epilogue epilogue_begin(const job *J, worker_scratch *w, int64_t bi, size_t m0,
                                     size_t j0, size_t j1, const int32_t *rowsum,
                                     const int32_t *colsum)
{
    block_epilogue E = {.bi = bi, .m0 = m0, .j0 = j0, .j1 = j1, .nc = j1 - j0,
                        .rowsum = rowsum, .colsum = colsum,
                        .shift_a = J->kg == 4 && J->a_signed,
                        .zb_const = J->maps[P_BZ].col_stride == 0,
                        .sb_const = J->maps[P_BS].col_stride == 0};
    int za_const = !qmm_tensor_present(J->az) || J->maps[P_AZ].row_stride == 0;
    E.sums_only = E.zb_const && (!colsum || za_const);
    /* the per-tensor requantizer applies the sums-only corrections itself (one pass less) */
    E.fused = E.sums_only && J->qlm && J->y_per_tensor;
    decode_column_params(J, w, &E);
    if (J->qlm && !J->y_per_tensor) {
        E.ys_base = qmm_param_offset(&J->maps[P_YS], J->g, bi, 0, 0);
        E.yz_base = qmm_param_offset(&J->maps[P_YZ], J->g, bi, 0, 0);
    }
    return E;
}

/* Rows [m0, m1) of block E from `cbuf` (row r - m0, row stride ldc), its corrections planned
 * (plan_corrections); fm: the float multipliers w->mf holds already, or none. */
static void epilogue_rows(const job *J, worker_scratch *w, const block_epilogue *E, size_t m0,
                          size_t m1, const int32_t *cbuf, size_t ldc, float_mults *fm)
{
    int64_t bi = E->bi;
    for (size_t i = m0; i < m1; i++) {
        const int32_t *crow = cbuf + (i - m0) * ldc;
        if (!E->fused)
            correct_row(J, w, E, i, crow);
        size_t yoff = ((size_t)bi * J->m + i) * J->n + E->j0;
        if (J->mmi) {
            memcpy((int32_t *)J->mmi->y.data + yoff, w->accrow, E->nc * sizeof(int32_t));
            continue;
        }
        const qmm_qlinearmatmul *c = J->qlm;
        double sa = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data,
                                     qmm_param_offset(&J->maps[P_AS], J->g, bi, (int64_t)i, 0));
        uint8_t *out = (uint8_t *)c->y.data + yoff;
        if (E->fused)
            requantize_row_fused(J, w, E, i, crow, sa, fm, out);
        else if (J->y_per_tensor)
            J->v->requant_row(w->accrow, NULL, 0, E->nc, NULL, sa, w->sb, w->cm, J->sy, J->zy,
                              J->qmin, J->qmax, out);
        else
            requantize_row_per_element(J, w, E, i, sa, out);
    }
}

/* Corrects, requantizes and stores rows [m0, m1) x columns [j0, j1) of batch bi from `cbuf`
 * (row r - m0, column j - j0, row stride ldc). */
static void epilogue(const job *J, worker_scratch *w, int64_t bi, size_t m0, size_t m1,
                     size_t j0, size_t j1, const int32_t *cbuf, size_t ldc,
                     const int32_t *rowsum, const int32_t *colsum)
{
    block_epilogue E = epilogue_begin(J, w, bi, m0, j0, j1, rowsum, colsum);
    plan_corrections(J, w, &E);
    float_mults fm = {-1.0, 0};
    epilogue_rows(J, w, &E, m0, m1, cbuf, ldc, &fm);
}

/* A compute task's block: batch bi, rows [m0, m1), columns [n0, n1), and its operands. */
typedef struct task_block {
    int64_t bi;
    size_t m0, m1, n0, n1;
    int packs;             /* the task packs B as it computes (packs_b) */
    size_t cb;             /* wide: its batch and column block, bi * nnb + the block */
    size_t bmat;
    const int32_t *A;      /* the packed A matrix of bi */
    const uint8_t *araw;   /* A of bi as it is */
    const int32_t *rowsum; /* its row sums */
} task_block;

/* The wide fused path's task order, one pool run: the batch's column blocks (cb = bi * nnb +
 * the block) fall into one group per thread, each group's tasks contiguous, so that the
 * pool's home ranges (threadpool.c) give every thread one group: first row block 0 of each of
 * its blocks (which pack B), then the other row blocks in the task order of the call (rows
 * first: one column block's row blocks after another). A task past row block 0 reads what
 * its column block's row block 0 packed, a task with a lower index of the same group: the
 * thread that claimed it has finished it or is running it (a thread waits only for a task
 * that waits for none, so nothing deadlocks, and on one thread the order alone suffices).
 * Until 2026-11-29 the row blocks 0 ran in a pool run of their own and the others in a
 * second: every thread then waited at the end of the first for the slower one. */
static void wide_task_of(const job *J, size_t task, size_t *mb_i, size_t *cb)
{
    size_t s = J->batch * J->nnb / (size_t)J->threads, rest = J->nmb - 1;
    size_t grp = task / (s * J->nmb), r = task % (s * J->nmb);
    if (r < s) {
        *mb_i = 0;
        *cb = grp * s + r;
        return;
    }
    r -= s;
    *mb_i = 1 + (J->rows_first ? r % rest : r / s);
    *cb = grp * s + (J->rows_first ? r / rest : r % s);
}

static task_block task_block_of(const job *J, size_t task)
{
    size_t mb_i, nb_i, rest, cb = 0;
    if (J->wide) {
        wide_task_of(J, task, &mb_i, &cb);
        nb_i = cb % J->nnb;
        rest = cb / J->nnb;
    } else if (J->rows_first) {
        mb_i = task % J->nmb;
        rest = task / J->nmb;
        nb_i = rest % J->nnb;
        rest /= J->nnb;
    } else {
        nb_i = task % J->nnb;
        rest = task / J->nnb;
        mb_i = rest % J->nmb;
        rest /= J->nmb;
    }
    task_block t;
    t.bi = (int64_t)rest;
    t.cb = cb;
    t.packs = J->fused && (!J->wide || mb_i == 0);
    t.m0 = mb_i * J->mb;
    t.m1 = t.m0 + J->mb < J->m ? t.m0 + J->mb : J->m;
    t.n0 = nb_i * J->nb;
    t.n1 = t.n0 + J->nb < J->n ? t.n0 + J->nb : J->n;
    size_t amat = amat_of(J, t.bi);
    t.bmat = bmat_of(J, t.bi);
    t.A = J->apack + amat * J->a_words;
    t.araw = (const uint8_t *)J->a->data + amat * J->m * J->k;
    t.rowsum = J->rowsum + amat * J->m;
    return t;
}

/* Small M on B as it is: the task's whole column range in one pass over B (rows x width
 * <= GEMV_ACC sums in cbuf), then the epilogue in NC_MAX chunks. */
static void compute_direct(const job *J, worker_scratch *w, const task_block *t)
{
    size_t kpairs = (J->k + 1) / 2, ldc = t->n1 - t->n0;
    const uint8_t *B = J->braw + t->bmat * J->k * J->n;
    J->v->gemv(t->m1 - t->m0, J->k, t->A + t->m0 * kpairs, kpairs, B + t->n0, J->n,
                 J->b_signed, t->n1 - t->n0, w->cbuf, ldc);
    for (size_t j0 = t->n0; j0 < t->n1; j0 += NC_MAX) {
        size_t j1 = j0 + NC_MAX < t->n1 ? j0 + NC_MAX : t->n1;
        epilogue(J, w, t->bi, t->m0, t->m1, j0, j1, w->cbuf + (j0 - t->n0), ldc, t->rowsum,
                 NULL);
    }
}

/* Small M on a prepacked "unsigned words" B: n0 and every chunk start are multiples of 16,
 * the panel width. */
static void compute_small_packed(const job *J, worker_scratch *w, const task_block *t)
{
    size_t kpairs = (J->k + 1) / 2, pstride = J->kp * 16;
    const int8_t *B = J->bpack + t->bmat * J->kp * J->npad;
    for (size_t j0 = t->n0; j0 < t->n1; j0 += NC_MAX) {
        size_t j1 = j0 + NC_MAX < t->n1 ? j0 + NC_MAX : t->n1;
        J->v->gemv_packed(t->m1 - t->m0, kpairs, t->A + t->m0 * kpairs, kpairs,
                          B + j0 / 16 * pstride, pstride, ceil_div(j1 - j0, 16), w->cbuf,
                          NC_MAX);
        epilogue(J, w, t->bi, t->m0, t->m1, j0, j1, w->cbuf, NC_MAX, t->rowsum, NULL);
    }
}

/* How many of the K groups [kc, kc + kcn) hold 4 k values inside K (the rest: the last,
 * partial group), for the kernels that read an operand as it is (kernel_pack, kernel_raw_a) */
static size_t whole_groups(const job *J, size_t kc, size_t kcn)
{
    size_t whole = J->k / 4;
    return kc >= whole ? 0 : (kc + kcn < whole ? kcn : whole - kc);
}

/* The fused path's first row group on panel p of B matrix bmat, K block [kc, kc + kcn), and
 * with `panels` 2 the packing of panel p + 1 too: the variant's kernel_pack over the block's
 * whole K groups of whole panels (packing them into bp, panel p + 1 at bp + pstride, as it
 * computes), pack_b and the kernel over the rest (the last, partial K group; a partial
 * panel). */
static void pack_and_compute(const job *J, int8_t *bp, size_t pstride, size_t bmat, size_t p,
                             size_t panels, size_t kc, size_t kcn, const int32_t *ap,
                             int32_t *cp, size_t ldc)
{
    size_t nr = (size_t)J->nr, mr = (size_t)J->mr, j0 = p * nr;
    const uint8_t *braw = J->braw + bmat * J->k * J->n;
    int32_t *colsum = J->colsum_own + bmat * J->npad + j0;
    size_t gn = j0 + nr <= J->n ? whole_groups(J, kc, kcn) : 0;
    if (gn > 0)
        J->v->kernel_pack(gn, ap, braw + 4 * kc * J->n + j0, J->n, J->b_signed, panels, bp,
                          pstride, colsum, cp, ldc, kc > 0);
    size_t g = kc + gn, rest = kcn - gn;
    if (rest == 0)
        return;
    /* pack_b from row 4g, panel by panel; its sums stored, or added to what came before */
    size_t row0 = 4 * g;
    for (size_t q = 0; q < panels; q++) {
        int32_t sums[64], *cq = colsum + q * nr;
        size_t jq = j0 + q * nr;
        J->v->pack_b(J->v, braw + row0 * J->n, J->n, J->b_signed,
                     J->k > row0 ? J->k - row0 : 0, rest, jq, jq + nr < J->n ? jq + nr : J->n,
                     bp + q * pstride + gn * nr * 4, g > 0 ? sums : cq);
        for (size_t j = 0; g > 0 && j < nr; j++)
            cq[j] = (int32_t)((uint32_t)cq[j] + (uint32_t)sums[j]);
    }
    J->v->kernel(mr, rest, ap + gn * mr, bp + gn * nr * 4, cp, ldc, g > 0);
}

/* On the fused path, how many panels the first row group on panel p of the column chunk
 * [p0, p1) packs: 2 where p is an even one of the chunk and it and p + 1 are whole and in the
 * chunk (panel p + 1 then sits in the second of the worker's two panel buffers), 0 for that
 * p + 1 (its first row group only multiplies), else 1. (In the chunk: a panel past it is
 * another task's, whose column sums this one would then write beside it.) */
static size_t fused_panels(const job *J, size_t p, size_t p0, size_t p1)
{
    size_t first = p - (p - p0) % 2; /* the pair's first panel */
    int pair = first + 1 < p1 && (first + 2) * (size_t)J->nr <= J->n;
    return !pair ? 1 : p == first ? 2 : 0;
}

/* The narrow fused path: B packed into each worker's two panel buffers, not kept (the wide one
 * packs into the call's packed B). */
static int packs_into_buffers(const job *J)
{
    return J->fused && !J->wide;
}

/* A request for the line at p: for writing (prefetchw on x86-64, 0F 0D /1: a no-op where
 * the CPU lacks it), or for reading into L2 (prefetcht1). Asm statements, not
 * __builtin_prefetch: GCC 12 at -O2 deems a function whose only effects are
 * __builtin_prefetch calls free of effects and deletes its calls. */
enum { FOR_WRITE, INTO_L2 };
static inline void prefetch_line(const char *p, int how)
{
#if defined(__x86_64__)
    if (how == FOR_WRITE)
        __asm__ volatile("prefetchw %0" : : "m"(*p));
    else
        __asm__ volatile("prefetcht1 %0" : : "m"(*p));
#else
    if (how == FOR_WRITE)
        __builtin_prefetch(p, 1, 3);
    else
        __builtin_prefetch(p, 0, 2);
#endif
}

/* Asks for the lines of y that the epilogue will write for rows [i0, i0 + rows) x columns
 * [j0, j0 + nc) (inside y) of batch bi, for writing, while the tile's last K block computes:
 * a y larger than the caches otherwise costs the epilogue a miss per line, its stores waiting
 * for each line's read (at 2048^3 on a Zen 4 the requantization's stores were 5.4% of the
 * samples, perf record). */
static void prefetch_y(const job *J, int64_t bi, size_t i0, size_t rows, size_t j0, size_t nc)
{
    size_t es = J->mmi ? sizeof(int32_t) : 1;
    char *y = J->mmi ? (char *)J->mmi->y.data : (char *)J->qlm->y.data;
    size_t bytes = nc * es;
    for (size_t r = 0; r < rows; r++) {
        uintptr_t p = (uintptr_t)(y + (((size_t)bi * J->m + i0 + r) * J->n + j0) * es);
        for (uintptr_t line = p & ~(uintptr_t)63; line < p + bytes; line += 64)
            prefetch_line((const char *)line, FOR_WRITE);
    }
}

/* The overlapped epilogue (the variant's kernel_raw_a_rq): in a column chunk computed in one
 * K block, the kernel call of row group g on panel p requantizes tile (g - 1, p) beside its
 * multiply-accumulates, on the per-tensor requantizer's float first try; the chunk's last
 * full row group, a partial one after it and any 16 lanes the float try left undecided go
 * through the epilogue as before. */
typedef struct overlap {
    int on;
    size_t gl;    /* row groups g0 + 1 .. gl run kernel_raw_a_rq; rows from gl * mr go
                     through the epilogue after the chunk */
    double sa;
    uint32_t zap; /* a's zero point (shifted): zc = zap * colsum */
    int sat_u8;
} overlap;

/* Whether chunk E (begun: its correction path chosen, its column parameters decoded) of task t
 * can overlap its epilogue (it needs kernel calls: not with K = 0), and its set-up: the
 * corrections made
 * (plan_corrections: w->zc), the float multipliers (w->mf, and *fm says so for the rows the
 * epilogue does), both per panel into w->ovp, y's stride and zero point into w->ovq. */
static overlap overlap_plan(const job *J, worker_scratch *w, const task_block *t,
                            const block_epilogue *E, float_mults *fm, size_t kcg)
{
    size_t j0 = E->j0, j1 = E->j1;
    overlap o = {0};
    size_t mr = (size_t)J->mr, g0 = t->m0 / mr, g1 = (t->m1 + mr - 1) / mr;
    if (!J->v->kernel_rq || (J->raw_a && !J->v->kernel_raw_a_rq) || !J->qlm ||
        !J->y_per_tensor || J->mr != 8 || J->nr != 32 || J->kgroups == 0 || kcg < J->kgroups ||
        (j1 - j0) % 32 != 0 || J->maps[P_AS].row_stride != 0 || !J->colsum)
        return o;
    if (J->qmin == 0 && J->qmax == 255)
        o.sat_u8 = 1;
    else if (!(J->qmin == -128 && J->qmax == 127))
        return o;
    o.gl = t->m1 - (g1 - 1) * mr == mr ? g1 - 1 : g1 - 2;
    if (g1 < 2 || o.gl <= g0)
        return o;
    if (!E->fused)
        return o;
    const qmm_qlinearmatmul *c = J->qlm;
    o.sa = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data,
                            qmm_param_offset(&J->maps[P_AS], J->g, t->bi, 0, 0));
    if (!make_mults(J, w, E, o.sa))
        return o;
    *fm = (float_mults){o.sa, 1};
    plan_corrections(J, w, E);
    /* on the fused path the column sums are made by the first row group's pass over each
     * panel: compute_overlapped forms that panel's zc then */
    o.zap = zap_at(J, E, t->m0);
    for (size_t q = 0; q < E->nc / 32; q++) {
        memcpy(w->ovp + q * 64, w->zc + q * 32, 32 * sizeof(int32_t));
        memcpy(w->ovp + q * 64 + 32, w->mf + q * 32, 32 * sizeof(float));
    }
    w->ovq->ldy = (int64_t)J->n;
    w->ovq->zy = J->zy;
    uint32_t zbp = (uint32_t)w->zbp[0];
    for (size_t i = t->m0; i < t->m1; i++)
        w->ovzr[i - t->m0] = (int32_t)(zbp * (uint32_t)t->rowsum[i]);
    o.on = 1;
    return o;
}

/* One requantized tile's 16-lane halves with a lane the float try left undecided (a clear bit
 * in the row's mask dec[r]) again through the row function's exact path: its sums (row
 * stride ldc), its rows' zr, its 32 columns from jt in the chunk, its rows of y. */
static void redo_undecided(const job *J, const worker_scratch *w, const overlap *o,
                           const uint32_t *dec, const int32_t *sums, size_t ldc,
                           const int32_t *zr, size_t jt, uint8_t *y)
{
    for (size_t r = 0; r < (size_t)J->mr; r++)
        for (size_t h = 0; h < 2; h++) {
            if (((dec[r] >> (16 * h)) & 0xffffu) == 0xffffu)
                continue;
            size_t jj = jt + 16 * h;
            J->v->requant_row(sums + r * ldc + 16 * h, w->zc + jj, (uint32_t)zr[r], 16, NULL,
                              o->sa, w->sb + jj, w->cm + jj, J->sy, J->zy, J->qmin, J->qmax,
                              y + r * J->n + 16 * h);
        }
}

/* Row groups gi .. gi + run - 1's kernel calls on panel p (one call of the run kernel), with
 * the overlapped requantization of tiles (gi - 1 .. gi + run - 2, p), then the exact path for
 * any 16 lanes the float try left undecided. A run of more than one tile needs the whole K in
 * one kernel call (no partial last K group to add after each tile). */
static void compute_overlapped(const job *J, worker_scratch *w, const task_block *t,
                               const overlap *o, size_t gi, size_t run, size_t p, size_t p0,
                               size_t j0, const int32_t *ap, const int8_t *bp,
                               size_t raw_groups, int32_t *cp, size_t ldc)
{
    size_t mr = (size_t)J->mr, g0 = t->m0 / mr, q = p - p0;
    qmm_opt_rq_tile *rq = w->ovq;
    size_t r0 = (gi - 1) * mr;
    if (t->packs && gi == g0 + 1) {
        const int32_t *colsum = J->colsum + t->bmat * J->npad + p * 32;
        for (size_t jj = 0; jj < 32; jj++) {
            w->zc[q * 32 + jj] = (int32_t)(o->zap * (uint32_t)colsum[jj]);
            w->ovp[q * 64 + jj] = w->zc[q * 32 + jj];
        }
    }
    rq->zr_rows = w->ovzr + (r0 - t->m0);
    uint8_t *y = (uint8_t *)J->qlm->y.data + ((size_t)t->bi * J->m + r0) * J->n + p * 32;
    if (raw_groups == 0) {
        J->v->kernel_rq(run, J->kgroups, ap, bp, cp, ldc, w->ovp + q * 64, y, rq, o->sat_u8);
    } else {
        J->v->kernel_raw_a_rq(run, raw_groups, t->araw + gi * mr * J->k, J->k, bp, cp, ldc,
                              w->ovp + q * 64, y, rq, o->sat_u8);
        if (raw_groups < J->kgroups) /* the last, partial K group: packed (run is 1) */
            J->v->kernel(mr, J->kgroups - raw_groups, ap + raw_groups * mr,
                         bp + raw_groups * 32 * 4, cp, ldc, 1);
    }
    for (size_t tt = 0; tt < run; tt++)
        if (w->ovdec[16 * tt + 8] != 0xffffffffu) /* the tile's AND */
            redo_undecided(J, w, o, w->ovdec + 16 * tt,
                           cp + ((ptrdiff_t)tt - 1) * (ptrdiff_t)(mr * ldc), ldc,
                           w->ovzr + (r0 + tt * mr - t->m0), p * 32 - j0,
                           y + tt * mr * J->n);
}

/* The tile kernels over the packed operands, in the blocking order of the file comment;
 * each NC_MAX column chunk's sums go through the epilogue. */
static void compute_tiles(const job *J, worker_scratch *w, const task_block *t)
{
    /* the packed B (written by the wide fused path's row block 0: J->bpack is then the call's
     * own J->bpack_own); the narrow fused path packs into the worker's panel buffers instead */
    int packs = t->packs;
    int8_t *B = packs_into_buffers(J) ? NULL : (int8_t *)J->bpack + t->bmat * J->kp * J->npad;
    const int32_t *colsum = J->colsum ? J->colsum + t->bmat * J->npad : NULL;
    size_t m0 = t->m0, m1 = t->m1;
    size_t mr = (size_t)J->mr, nr = (size_t)J->nr, kg = (size_t)J->kg;
    /* K blocks keep a B panel slice in L1 while the row groups stream past; a task with a
     * single row group has nothing to reuse it for, and reads each panel in one pass */
    size_t kcg = m1 - m0 <= mr && J->kgroups > 0 ? J->kgroups
                                                  : (size_t)(J->v->kc ? J->v->kc : KC_K) / kg;
    if (packs && J->k >= FUSED_KC_FROM && m1 - m0 > mr && kcg > FUSED_KC / kg)
        kcg = FUSED_KC / kg;
    size_t g0 = m0 / mr, g1 = (m1 + mr - 1) / mr;
    for (size_t j0 = t->n0; j0 < t->n1; j0 += NC_MAX) {
        size_t j1 = j0 + NC_MAX < t->n1 ? j0 + NC_MAX : t->n1;
        size_t p0 = j0 / nr, p1 = (j1 + nr - 1) / nr;
        size_t ldc = (p1 - p0) * nr;
        if (J->kgroups == 0)
            memset(w->cbuf, 0, (g1 - g0) * mr * ldc * sizeof(int32_t));
        block_epilogue E = epilogue_begin(J, w, t->bi, m0, j0, j1, t->rowsum, colsum);
        float_mults fm = {-1.0, 0};
        overlap ov = overlap_plan(J, w, t, &E, &fm, kcg);
        for (size_t kc = 0; kc < J->kgroups; kc += kcg) {
            size_t kcn = kc + kcg < J->kgroups ? kcg : J->kgroups - kc;
            size_t raw_groups = J->raw_a ? whole_groups(J, kc, kcn) : 0;
            for (size_t p = p0; p < p1; p++) {
                /* narrow fused: the worker's buffer slot (p - p0) % 2, which the first row
                   group packs (panels > 0); else panel p of the packed B (wide: packed there,
                   panel p + 1 after it as slot 1 follows slot 0). Written out here: a
                   helper giving the same address measured 0.987-0.996x this (128x768x768
                   and 1024^3, T = 1, Zen 5, three builds alternating) */
                int8_t *own = packs_into_buffers(J)
                                  ? w->panels + (p - p0) % 2 * J->kp * nr + kc * nr * kg
                                  : B + p * J->kp * nr + kc * nr * kg;
                const int8_t *bp = own;
                size_t panels = packs ? fused_panels(J, p, p0, p1) : 0;
                for (size_t gi = g0; gi < g1; gi++) {
                    const int32_t *ap = t->A + gi * J->kgroups * mr + kc * mr;
                    int32_t *cp = w->cbuf + (gi - g0) * mr * ldc + (p - p0) * nr;
                    size_t rows = m1 - gi * mr < mr ? m1 - gi * mr : mr;
                    qmm_opt_kernel_ft *kernel = rows < mr ? J->v->kernel_rows : J->v->kernel;
                    /* a tile requantized by the next call is not prefetched: its stores,
                       spread over that call, wait on nothing (2048^3 T = 1, constant B, Zen
                       4: 1.025x faster than with its 8 lines asked for here) */
                    /* the overlapped row groups: one run (whole K in the call) or one */
                    size_t run = ov.on && gi > g0 && gi <= ov.gl
                                     ? (raw_groups == 0 || raw_groups == J->kgroups
                                            ? ov.gl - gi + 1
                                            : 1)
                                     : 0;
                    size_t gy = run > 0 ? gi + run - 1 : gi; /* the last row group called */
                    if (kc + kcn == J->kgroups && p == p1 - 1 && !(ov.on && gy < ov.gl))
                        prefetch_y(J, t->bi, gy * mr, m1 - gy * mr < mr ? m1 - gy * mr : mr,
                                   j0, j1 - j0);
                    if (panels > 0 && gi == g0) {
                        pack_and_compute(J, own, J->kp * nr, t->bmat, p, panels, kc, kcn, ap,
                                         cp, ldc);
                    } else if (run > 0) {
                        compute_overlapped(J, w, t, &ov, gi, run, p, p0, j0, ap, bp, raw_groups,
                                           cp, ldc);
                        gi = gy;
                    } else if (J->dense_a) { /* m rows, the only group; A m words a K group */
                        J->v->kernel_rows_dense(rows, kcn, t->A + kc * rows, bp, cp, ldc,
                                                kc > 0);
                    } else if (J->raw_a && rows == mr && raw_groups > 0) {
                        J->v->kernel_raw_a(raw_groups, t->araw + gi * mr * J->k + kc * kg, J->k,
                                           bp, cp, ldc, kc > 0);
                        if (raw_groups < kcn) /* the last, partial K group: packed */
                            kernel(mr, kcn - raw_groups, ap + raw_groups * mr,
                                   bp + raw_groups * nr * kg, cp, ldc, 1);
                    } else {
                        kernel(rows, kcn, ap, bp, cp, ldc, kc > 0);
                    }
                }
            }
        }
        /* one row group streams each panel of B once, and the epilogue between two chunks
           stops the stream: the next chunk's first bytes are asked for first, so that they
           arrive while it runs (not on the fused path, whose B is packed as it is read) */
        if (B && m1 - m0 <= mr && j1 < t->n1) {
            const char *nb = (const char *)(B + p1 * J->kp * nr);
            size_t jn = j1 + NC_MAX < t->n1 ? j1 + NC_MAX : t->n1; /* the next chunk's end */
            size_t next = (ceil_div(jn, nr) - p1) * J->kp * nr;      /* its panels' bytes */
            for (size_t o = 0; o < NEXT_CHUNK_PF && o < next; o += 64)
                prefetch_line(nb + o, INTO_L2);
        }
        if (!ov.on) /* after the tiles: on the fused path they made the column sums */
            plan_corrections(J, w, &E);
        size_t e0 = ov.on ? ov.gl * mr : m0; /* the rows the kernels did not requantize */
        epilogue_rows(J, w, &E, e0, m1, w->cbuf + (e0 - m0) * ldc, ldc, &fm);
    }
}

/* Waits until row block 0 of the wide fused path's column block cb has packed it: rarely
 * at all (the thread that claimed that task before this one is running it), so a pause per
 * look, and a yield now and then in case that thread waits for a core this one holds. */
static void wait_packed(const job *J, size_t cb)
{
    for (unsigned spins = 1; !atomic_load_explicit(&J->packed[cb], memory_order_acquire);
         spins++) {
#if defined(__x86_64__)
        __asm__ volatile("pause");
#endif
        if (spins % 4096 == 0)
            sched_yield();
    }
}

static void compute_task(void *ctx, size_t task, int worker)
{
    job *J = ctx;
    worker_scratch *w = &J->ws[worker];
    task_block t = task_block_of(J, task);
    if (J->direct) {
        compute_direct(J, w, &t);
        return;
    }
    if (J->smallp) {
        compute_small_packed(J, w, &t);
        return;
    }
    if (J->wide && !t.packs) /* its column block's row block 0 packs B: wide_task_of */
        wait_packed(J, t.cb);
    J->v->task_begin();
    compute_tiles(J, w, &t);
    J->v->task_end();
    if (J->wide && t.packs)
        atomic_store_explicit(&J->packed[t.cb], 1, memory_order_release);
}

/* ---- setup ---- */

/* Scratch layout: every piece 64-byte aligned inside one block. */
static size_t carve(size_t *off, size_t bytes)
{
    size_t at = (*off + 63) & ~(size_t)63;
    *off = at + bytes;
    return at;
}

/* The call's scratch block: the backend's cached one when no other call holds it (grown to
 * `bytes` if smaller), else a block of its own. NULL when out of memory. */
void *qmm_opt_scratch_get(const qmm_opt_backend *cob, size_t bytes, int *cached)
{
    qmm_opt_backend *ob = (qmm_opt_backend *)cob; /* mutable: the cache, and the path counts */
    *cached = 0;
    if (pthread_mutex_trylock(&ob->ws_lock) == 0) {
        if (ob->ws_size < bytes) {
            qmm_opt_big_free(ob->ws, ob->ws_size);
            ob->ws_size = 0;
            ob->ws = qmm_opt_big_alloc(bytes);
            if (ob->ws)
                ob->ws_size = bytes;
        }
        if (ob->ws) {
            *cached = 1;
            return ob->ws;
        }
        pthread_mutex_unlock(&ob->ws_lock);
        return NULL;
    }
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

void qmm_opt_scratch_put(const qmm_opt_backend *cob, void *block, int cached)
{
    qmm_opt_backend *ob = (qmm_opt_backend *)cob;
    if (cached)
        pthread_mutex_unlock(&ob->ws_lock);
    else
        free(block);
}

/* Packing, one pool run: A's row chunks, then (task >= a tasks) B's column chunks. */
static void pack_task(void *ctx, size_t task, int worker)
{
    job *J = ctx;
    size_t na = J->namat * J->a_chunks;
    if (task < na)
        pack_a_task(ctx, task, worker);
    else
        pack_b_task(ctx, task - na, worker);
}

/* The call's sizes and path: the layout's tile, the packed K, and whether small M streams B as
 * it is (direct) or reads a prepacked B whose panels the small-M kernels read (smallp: the
 * "unsigned words" layout; other layouts run their tile kernel on the rows). */
static void shape_job(job *J, const qmm_opt_backend *ob, const qmm_optimized_packed_b *pb)
{
    J->a_signed = J->a->dtype == QMM_DTYPE_INT8;
    J->b_signed = J->b->dtype == QMM_DTYPE_INT8;
    J->direct = pb == NULL && J->m <= (size_t)J->v->gemv_rows;
    J->smallp = pb != NULL && J->m <= (size_t)J->v->gemv_rows && J->L->b_unsigned;
    J->kgroups = packed_kgroups(J->L, J->k);
    J->kp = J->kgroups * (size_t)J->kg;
    J->mpad = ceil_div(J->m, (size_t)J->mr) * (size_t)J->mr;
    J->npad = ceil_div(J->n, (size_t)J->nr) * (size_t)J->nr;
    J->braw = J->b->data;
    size_t a_numel = (size_t)qmm_tensor_numel(J->a);
    size_t b_numel = (size_t)qmm_tensor_numel(J->b);
    J->namat = J->m && J->k ? a_numel / (J->m * J->k) : 1;
    J->nbmat = J->k && J->n ? b_numel / (J->k * J->n) : 1;
    J->a_words = J->direct || J->smallp ? J->m * ((J->k + 1) / 2) : J->mpad * J->kgroups;
    /* int8 b with a zero point of 0 (absent, or 0 everywhere): the corrections' zbp * rowsum
     * is 0, so A's row sums are not taken (0.5% of a 1024^3 call, perf) */
    J->no_rowsum = shift_b_of(J) == 0;
    if (J->no_rowsum && qmm_tensor_present(J->bz)) {
        const uint8_t *z = J->bz->data;
        for (int64_t e = 0; e < qmm_tensor_numel(J->bz) && J->no_rowsum; e++)
            J->no_rowsum = z[e] == 0;
    }
    /* Fused packing: with one row block (M <= MB_MAX) and a B matrix per batch, each B panel
     * belongs to exactly one task, whose first row group packs it with the variant's
     * kernel_pack while computing (the shuffles run beside the multiplies) instead of a
     * packing pass first, into one of two panel buffers of its worker (B is not kept: each
     * panel is read by its task's row groups right after it is packed, and a small buffer
     * stays in L2 where a packed copy of B was written back to memory; with panel pairs,
     * docs/optimized.md: 128x4096x4096 1.22x faster at T = 1, Zen 5).
     * Past MB_MAX rows, where the CPU model's tuning says so (fuse_wide, kernels.c), the
     * wide fused path: row block 0's tasks pack B into the whole packed B as they compute
     * (one task per column block and batch), the other row blocks read it (wide_task_of);
     * only where the column blocks divide among the threads (384x768x768 T = 2, 3 blocks:
     * 0.865x). Elsewhere the packing pass stays (Zen 4, before panel pairs: no better
     * at 2048^3, kernel_pack 2.84% of the samples against the packer's 2.00%). */
    int fusable = pb == NULL && !J->direct && J->v->kernel_pack && J->kg == 4 &&
                  J->nbmat == J->batch && J->k > 0;
    J->wide = fusable && J->m > MB_MAX && ob->tuning.fuse_wide &&
              J->batch * ceil_div(J->n, NC_MAX) % (size_t)ob->threads == 0;
    J->fused = fusable && (J->m <= MB_MAX || J->wide);
}

/* One scratch block for everything (offsets first, then the block): the packed A and its row
 * sums, each thread's scratch, and B's panels and column sums when the call packs B (own_b).
 * NULL when out of memory; else scratch_put gives it back. */
static char *carve_scratch(const qmm_opt_backend *ob, job *J, int own_b, int *cached)
{
    int threads = ob->threads;
    size_t off = 0, o_rep, o_apack, o_rowsum, o_ws, o_wsb, o_bpack = 0, o_colsum = 0, o_packed;
    o_rep = carve(&off, J->namat * sizeof *J->amat_rep);
    o_apack = carve(&off, (J->namat * J->a_words + 1) * sizeof *J->apack);
    o_rowsum = carve(&off, J->namat * J->m * sizeof *J->rowsum);
    o_ws = carve(&off, (size_t)threads * sizeof *J->ws);
    o_wsb = carve(&off, (size_t)threads * WS_BYTES);
    o_packed = carve(&off, J->wide ? J->batch * ceil_div(J->n, NC_MAX) * sizeof *J->packed : 0);
    size_t panels_bytes = 2 * J->kp * (size_t)J->nr; /* fused: a worker's two panels */
    if (own_b) {
        /* fused: two panels a worker (shape_job); else the whole packed B */
        o_bpack = carve(&off, packs_into_buffers(J) ? (size_t)threads * panels_bytes + 1
                                       : J->nbmat * J->kp * J->npad + 1);
        if (J->kg == 4)
            o_colsum = carve(&off, J->nbmat * J->npad * sizeof *J->colsum_own);
    }
    char *blk = qmm_opt_scratch_get(ob, off, cached);
    if (!blk)
        return NULL;
    J->amat_rep = (int64_t *)(void *)(blk + o_rep);
    J->apack = (int32_t *)(void *)(blk + o_apack);
    J->rowsum = (int32_t *)(void *)(blk + o_rowsum);
    J->ws = (worker_scratch *)(void *)(blk + o_ws);
    J->packed = (atomic_int *)(void *)(blk + o_packed);
    for (int t = 0; t < threads; t++)
        worker_scratch_at(&J->ws[t], blk + o_wsb + (size_t)t * WS_BYTES);
    if (own_b) {
        J->bpack_own = (int8_t *)(blk + o_bpack);
        for (int t = 0; packs_into_buffers(J) && t < threads; t++)
            J->ws[t].panels = J->bpack_own + (size_t)t * panels_bytes;
        J->colsum_own = J->kg == 4 ? (int32_t *)(void *)(blk + o_colsum) : NULL;
    }
    return blk;
}

/* amat_rep[i]: a batch index that uses A matrix i (batch broadcasting packs it once). */
static void pick_a_matrices(job *J)
{
    for (size_t i = 0; i < J->namat; i++)
        J->amat_rep[i] = -1;
    for (int64_t bi = 0; bi < J->g->batch; bi++) {
        size_t am = amat_of(J, bi);
        if (J->amat_rep[am] < 0)
            J->amat_rep[am] = bi;
    }
    for (size_t i = 0; i < J->namat; i++)
        if (J->amat_rep[i] < 0)
            J->amat_rep[i] = 0; /* unused by any batch (cannot happen): pack it anyway */
}

/* The task grid: rows in near-equal blocks of at most row_block, columns in NC_MAX chunks
 * (small-M: narrower column blocks so that every thread has work), and the packing tasks. */
static void plan_tasks(job *J, const qmm_opt_backend *ob, const qmm_optimized_packed_b *pb,
                       int own_b)
{
    int threads = ob->threads;
    J->nnb = ceil_div(J->n, NC_MAX);
    /* big row blocks read each B column chunk fewer times (AMX at 2048^3: 192 rows ~6%
     * faster than 96; the CPU model's row_block, kernels.c); small problems keep more,
     * smaller tasks so that every thread has some. A block rounded up to whole row groups
     * stays within MB_CAP, a multiple of every mr. */
    size_t rb = ob->tuning.row_block < 1 ? 1 : ob->tuning.row_block > MB_CAP ? MB_CAP
                                                                          : ob->tuning.row_block;
    size_t mb_max = J->batch * ceil_div(J->m, rb) * J->nnb >= (size_t)threads * TASKS_PER_THREAD
                        ? rb
                        : rb < MB_FEW ? rb : MB_FEW;
    J->nmb = ceil_div(J->m, mb_max);
    J->mb = ceil_div(ceil_div(J->m, J->nmb), (size_t)J->mr) * (size_t)J->mr;
    J->nmb = ceil_div(J->m, J->mb);
    /* With fewer than 8 tasks a thread, the last task's wait is a large share of the call:
     * then equal row blocks (m a multiple of nmb * mr) and a task count the threads divide,
     * where up to twice as many blocks give them. 512x1024x1024, B input, 2 threads, Zen 4:
     * 176 + 176 + 160 rows -> 4 x 128, 1.028 and 1.040x faster (11 alternating rounds, two
     * runs); 1024^3 (24 tasks) is not touched */
    if (threads > 1 && J->m > 0 && J->batch * J->nmb * J->nnb < (size_t)threads * 8) {
        for (size_t c = J->nmb; c <= 2 * J->nmb; c++) {
            if (J->m % (c * (size_t)J->mr) == 0 && (J->batch * c * J->nnb) % (size_t)threads == 0) {
                J->nmb = c;
                J->mb = J->m / c;
                break;
            }
        }
    }
    J->nb = NC_MAX;
    if (J->direct) {
        /* one task per thread (each streams its columns of every B row), its sums <= 16 KB */
        size_t cap = GEMV_ACC / J->m / 64 * 64;
        size_t nb = ceil_div(ceil_div(J->n, (size_t)threads), 64) * 64;
        J->nb = nb > cap ? cap : nb;
    } else if (J->smallp) {
        size_t want = (size_t)threads * 4;
        size_t nb = ceil_div(ceil_div(J->n, want), 16) * 16;
        J->nb = nb < 64 ? 64 : nb > NC_MAX ? NC_MAX : nb;
    }
    /* Fused packing (shape_job): one row block; column blocks of n / (2 threads), whole
     * panels, >= 64 columns (wider than NC_MAX: compute_tiles walks a block in NC_MAX
     * chunks) */
    if (packs_into_buffers(J)) {
        J->nmb = 1;
        J->mb = ceil_div(J->m, (size_t)J->mr) * (size_t)J->mr;
        size_t nb = ceil_div(ceil_div(J->n, (size_t)threads * FUSED_TASKS_PER_THREAD),
                             (size_t)J->nr) * (size_t)J->nr;
        J->nb = nb < 2 * (size_t)J->nr ? 2 * (size_t)J->nr : nb;
    }
    J->nnb = ceil_div(J->n, J->nb);
    /* Raw A: a uint8 A's full row groups are read as they are by the variant's kernel_raw_a
     * (no packing pass over A; the packer still takes the row sums, the partial row group and
     * the last, partial K group; on the fused path also the first row group, which
     * kernel_pack reads packed). Not past the backend's raw_a_k_max (kernels.c: by CPU model). */
    J->raw_a = !J->a_signed && J->v->kernel_raw_a && J->kg == 4 && !J->direct && !J->smallp &&
               J->k >= 4 && J->k <= ob->tuning.raw_a_k_max;
    /* Task order. Rows first: consecutive tasks share a B column block (kept in L2) and
     * stream A blocks; columns first: the reverse. Measured with AMX (2 threads): rows first
     * is 9% faster at 2048^3 and 5% at 128x768x768 with a prepacked B, 5% slower at
     * 128x768x768 when B was just packed by the call (its blocks are spread over both cores'
     * caches), the same elsewhere.
     * Except with raw A on one thread where the CPU model says so (cols_first_from,
     * kernels.c): a raw A row group is 8 rows a K apart, streams the prefetchers follow worse
     * than a B panel's one, so where an A row block and a B column chunk crowd L2 together the
     * A block is kept and B's chunks stream past (Zen 4, 2048^3 T = 1: 1.02x; two threads
     * lose: docs/optimized.md, "Tuning by CPU model") */
    size_t ab_bytes = J->mb * J->k + (J->nb < J->n ? J->nb : J->n) * J->kp;
    J->rows_first = (pb != NULL || J->nmb >= 4) &&
                    !(J->raw_a && threads == 1 && ob->tuning.cols_first_from > 0 &&
                      ab_bytes >= ob->tuning.cols_first_from);
    /* Dense A: with fewer rows than a group (M < 8 on a prepacked B, or on a B input the
     * fused path does not pack: broadcast over batches, or no VBMI) and a
     * variant with kernel_rows_dense, A is packed m words a K group instead of mr (the
     * layout's packer with mr = m: the same word order) and that kernel reads it: a gemv on
     * a streamed B then reads 4 bytes of A per K group instead of 4 * mr. Not on the fused
     * path, whose kernel_pack reads the mr-word A. */
    J->dense_a = J->v->kernel_rows_dense && J->L->pack_a == qmm_opt_pack_a && !J->fused &&
                 !J->direct && !J->smallp && J->m < (size_t)J->mr && J->kgroups > 0;

    J->pack_rows = ceil_div(PACK_ROWS, (size_t)J->mr) * (size_t)J->mr;
    J->a_chunks = ceil_div(J->m, J->pack_rows);
    J->b_chunks = own_b && !J->fused ? ceil_div(J->n, PACK_COLS) : 0;
}

/* The backend's path counts (qmm_opt_paths) for a call planned on the tile path. */
static void count_paths(const qmm_opt_backend *cob, const job *J)
{
    if (J->direct || J->smallp)
        return;
    qmm_opt_paths *c = &((qmm_opt_backend *)cob)->paths; /* mutable, as the scratch cache */
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->fused, (unsigned long)J->fused, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->wide, (unsigned long)J->wide, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->raw_a, (unsigned long)J->raw_a, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->row_blocks, (unsigned long)J->nmb, memory_order_relaxed);
}

/* Runs a validated call. `pb` is a prepacked B or NULL. */
static qmm_status_code run_job(const qmm_opt_backend *ob, job *J,
                               const qmm_optimized_packed_b *pb, qmm_status *st)
{
    const qmm_geometry *g = J->g;
    J->v = ob->v;
    J->L = ob->v->layout;
    J->mr = J->L->mr;
    J->nr = J->L->nr;
    J->kg = J->L->kg;
    J->threads = ob->threads;
    J->m = (size_t)g->m;
    J->k = (size_t)g->k;
    J->n = (size_t)g->n;
    J->batch = (size_t)g->batch;
    if (J->m == 0 || J->n == 0 || J->batch == 0)
        return qmm_status_ok(st); /* an empty output: nothing to write */
    shape_job(J, ob, pb);
    int own_b = !pb && !J->direct;
    int cached;
    char *blk = carve_scratch(ob, J, own_b, &cached);
    if (!blk)
        return qmm_status_oom(st, ob->name, "for the packed operands");
    pick_a_matrices(J);
    if (pb) {
        J->bpack = pb->data;
        J->colsum = pb->colsum;
    } else if (own_b) {
        J->bpack = J->bpack_own;
        J->colsum = J->colsum_own;
    }
    plan_tasks(J, ob, pb, own_b);
    count_paths(ob, J);
    qmm_opt_pool_run(ob->pool, J->namat * J->a_chunks + J->nbmat * J->b_chunks, pack_task, J);
    for (size_t i = 0; J->wide && i < J->batch * J->nnb; i++)
        atomic_store_explicit(&J->packed[i], 0, memory_order_relaxed);
    qmm_opt_pool_run(ob->pool, J->batch * J->nmb * J->nnb, compute_task, J);
    qmm_opt_scratch_put(ob, blk, cached);
    return qmm_status_ok(st);
}

/* The packed B must be the one this call describes, from this backend. */
static qmm_status_code check_packed(const qmm_opt_backend *ob, const qmm_tensor *b,
                                    const qmm_optimized_packed_b *pb, qmm_status *st)
{
    if (pb->owner != ob)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "b: packed by another backend than %s", ob->name);
    int same = pb->dtype == b->dtype && pb->rank == b->rank;
    for (int32_t d = 0; same && d < b->rank; d++)
        same = pb->dims[d] == b->dims[d];
    if (!same)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "b: dtype or shape differs from the packed B's");
    return QMM_OK;
}

/* What a call must pass before validation: the variant runs on this CPU, and a prepacked B is
 * this call's (*b, the call's copy, then may carry no data: validation only asks for non-NULL,
 * and it is never read). */
static qmm_status_code admit(const qmm_opt_backend *ob, qmm_tensor *b,
                             const qmm_optimized_packed_b *pb, qmm_status *st)
{
    if (ob->missing)
        return qmm_status_because(st, QMM_UNSUPPORTED, ob->name, ob->missing);
    if (!pb)
        return QMM_OK;
    qmm_status_code rc = check_packed(ob, b, pb, st);
    if (rc == QMM_OK && !b->data)
        b->data = (void *)pb;
    return rc;
}

qmm_status_code qmm_opt_qlinearmatmul(const qmm_opt_backend *ob, const qmm_qlinearmatmul *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st)
{
    qmm_qlinearmatmul call = *c;
    qmm_plan plan;
    qmm_status_code rc = admit(ob, &call.b, pb, st);
    if (rc == QMM_OK)
        rc = qmm_validate_qlinearmatmul(&call, &plan, st);
    if (rc != QMM_OK)
        return rc;
    const char *f8 = qmm_qlinearmatmul_float8(c);
    if (f8 && pb) /* a packed B is the integer kernels' layout */
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "%s: %s is float8; a prepacked B serves the integer kernels only "
                              "(pass b unpacked)",
                              ob->name, f8);
    if (f8) /* float8.c: exact accumulation in doubles */
        return qmm_opt_qlinearmatmul_float8(ob, &call, &plan, st);
    job J = {.g = &plan.g, .maps = plan.maps, .qlm = c, .a = &c->a, .b = &call.b,
             .az = &c->a_zero_point, .bz = &c->b_zero_point};
    J.y_per_tensor = qmm_tensor_numel(&c->y_scale) == 1;
    J.sy = 1.0; /* only the per-tensor path reads it (y_scale may hold no element) */
    if (J.y_per_tensor) {
        J.sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, 0);
        const uint8_t *p = c->y_zero_point.data;
        J.zy = c->y_zero_point.dtype == QMM_DTYPE_INT8 ? (int32_t)(int8_t)p[0] : (int32_t)p[0];
    }
    J.qmin = c->y.dtype == QMM_DTYPE_INT8 ? -128 : 0;
    J.qmax = c->y.dtype == QMM_DTYPE_INT8 ? 127 : 255;
    return run_job(ob, &J, pb, st);
}

qmm_status_code qmm_opt_matmulinteger(const qmm_opt_backend *ob, const qmm_matmulinteger *c,
                                      const qmm_optimized_packed_b *pb, qmm_status *st)
{
    qmm_matmulinteger call = *c;
    qmm_plan plan;
    qmm_status_code rc = admit(ob, &call.b, pb, st);
    if (rc == QMM_OK)
        rc = qmm_validate_matmulinteger(&call, &plan, st);
    if (rc != QMM_OK)
        return rc;
    job J = {.g = &plan.g, .maps = plan.maps, .mmi = c, .a = &c->a, .b = &call.b,
             .az = &c->a_zero_point, .bz = &c->b_zero_point};
    return run_job(ob, &J, pb, st);
}

qmm_status_code qmm_opt_pack_b_all(const qmm_opt_backend *ob, const qmm_tensor *b,
                                   qmm_optimized_packed_b *pb, qmm_status *st)
{
    const qmm_opt_layout *L = ob->v->layout;
    if (b->dtype != QMM_DTYPE_UINT8 && b->dtype != QMM_DTYPE_INT8)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: dtype must be uint8 or int8");
    if (b->rank < 1 || b->rank > QMM_MAX_RANK || qmm_tensor_numel(b) < 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: rank must be 1..%d with dims >= 0",
                              QMM_MAX_RANK);
    int64_t numel = qmm_tensor_numel(b);
    if (numel > 0 && !b->data)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: data is NULL");
    pb->owner = ob;
    pb->dtype = b->dtype;
    pb->rank = b->rank;
    memcpy(pb->dims, b->dims, sizeof pb->dims);
    pb->k = (size_t)(b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2]);
    pb->n = (size_t)(b->rank == 1 ? 1 : b->dims[b->rank - 1]);
    pb->kp = packed_kgroups(L, pb->k) * (size_t)L->kg;
    pb->npad = ceil_div(pb->n, (size_t)L->nr) * (size_t)L->nr;
    pb->nmat = pb->k && pb->n ? (size_t)numel / (pb->k * pb->n) : 1;
    /* 64-byte aligned, as the per-call scratch is: a zmm load or an AMX tile row from a
     * 16-byte aligned panel (what malloc gives) splits a cache line every time */
    pb->data = qmm_opt_big_alloc(qmm_opt_packed_b_bytes(pb));
    pb->colsum = L->kg == 4 ? aligned_alloc(64, (pb->nmat * pb->npad * sizeof *pb->colsum + 64) &
                                                      ~(size_t)63)
                              : NULL;
    if (!pb->data || (L->kg == 4 && !pb->colsum))
        return qmm_status_oom(st, ob->name, "packing b");
    if (pb->n == 0)
        return qmm_status_ok(st);
    /* the same packer the calls use, one matrix and one column chunk per task */
    job J;
    memset(&J, 0, sizeof J);
    J.v = ob->v;
    J.L = L;
    J.k = pb->k;
    J.n = pb->n;
    J.kgroups = pb->kp / (size_t)L->kg;
    J.kp = pb->kp;
    J.npad = pb->npad;
    J.nr = L->nr;
    J.kg = L->kg;
    J.b_signed = b->dtype == QMM_DTYPE_INT8;
    J.braw = b->data;
    J.bpack_own = pb->data;
    J.colsum_own = pb->colsum;
    J.b_chunks = ceil_div(pb->n, PACK_COLS);
    qmm_opt_pool_run(ob->pool, pb->nmat * J.b_chunks, pack_b_task, &J);
    return qmm_status_ok(st);
}
