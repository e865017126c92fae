/* optimized/cuda/matmul.c — QLinearMatMul and MatMulInteger on the device (cuBLASLt int8 GEMM
 * plus the exact epilogue kernel) and the same pipeline emulated on the host.
 *
 * A call: validate with the shared rules of ops/ (same accept/reject and messages as every other
 * backend); flatten every parameter through the plan's parameter maps into per-row (a) and
 * per-column (b) vectors for each batch, y parameters into a decoded copy of the whole tensor
 * indexed by the map's strides (a per-element vector would cost 12 bytes per output); prepare
 * each distinct A matrix once (int8 shift, zero padding, row sums) and each distinct B matrix
 * once (int8 shift, transposition to the "TN" form, column sums); then per batch one GEMM per
 * K chunk (chunks summed modulo 2^32) and one epilogue launch.
 */
#include <stdlib.h>
#include <string.h>

#include "optimized/cuda/cuda_internal.h"
#include "ops/qmm_ops.h"

/* Padding: multiples the int8 tensor-core kernels want for dimensions and leading dimensions
 * (16-byte aligned rows); padded rows and K columns hold 0 and add nothing to any sum. */
#define QMM_CU_PAD_MN 16
#define QMM_CU_PAD_K 32

typedef struct plan {
    const qmm_qlinearmatmul *qlm; /* one of qlm / mmi */
    const qmm_matmulinteger *mmi;
    const qmm_tensor *a, *b, *y;
    qmm_plan rules;                /* validation's: geometry and parameter maps */
    int64_t m, k, n, batch, mp, np, kp;
    int64_t namat, nbmat;
    int a_signed, b_signed;
    size_t ysize;                  /* bytes per output element */
    int64_t *amat, *bmat;          /* per batch: which A and B matrix */
    int32_t *da, *db;              /* batch x m, batch x n */
    double *sa, *sb, *cm;          /* batch x m, batch x n, batch x n */
    int y_per_tensor;
    double sy;
    int32_t zy, qmin, qmax;
    int64_t ynumel;                /* y parameter tensors (not per-tensor) */
    double *ys;
    int32_t *yz;
    int64_t *ybase;                /* per batch */
} plan;

static void plan_free(plan *p)
{
    free(p->amat);
    free(p->bmat);
    free(p->da);
    free(p->db);
    free(p->sa);
    free(p->sb);
    free(p->cm);
    free(p->ys);
    free(p->yz);
    free(p->ybase);
}

static int32_t zp_value(const qmm_tensor *zp, int64_t off)
{
    if (!qmm_tensor_present(zp))
        return 0;
    uint8_t v = ((const uint8_t *)zp->data)[off];
    return zp->dtype == QMM_DTYPE_INT8 ? (int32_t)(int8_t)v : (int32_t)v;
}

static int64_t round_up(int64_t v, int64_t to)
{
    return (v + to - 1) / to * to;
}

/* Builds the flattened parameters of a validated call. */
static qmm_status_code plan_build(const qmm_cu_backend *cb, plan *p, qmm_status *st)
{
    const qmm_geometry *g = &p->rules.g;
    const qmm_param_map *maps = p->rules.maps;
    p->m = g->m;
    p->k = g->k;
    p->n = g->n;
    p->batch = g->batch;
    p->mp = round_up(p->m, QMM_CU_PAD_MN);
    p->np = round_up(p->n, QMM_CU_PAD_MN);
    p->kp = round_up(p->k, QMM_CU_PAD_K);
    p->a_signed = p->a->dtype == QMM_DTYPE_INT8;
    p->b_signed = p->b->dtype == QMM_DTYPE_INT8;
    int64_t an = qmm_tensor_numel(p->a), bn = qmm_tensor_numel(p->b);
    p->namat = p->m && p->k ? an / (p->m * p->k) : 1;
    p->nbmat = p->k && p->n ? bn / (p->k * p->n) : 1;
    p->ysize = p->mmi ? 4 : 1;
    size_t B = (size_t)p->batch, M = (size_t)p->m, N = (size_t)p->n;
    p->amat = malloc(B * sizeof *p->amat);
    p->bmat = malloc(B * sizeof *p->bmat);
    p->da = malloc(B * M * sizeof *p->da + 1);
    p->db = malloc(B * N * sizeof *p->db + 1);
    p->sa = malloc(B * M * sizeof *p->sa + 1);
    p->sb = malloc(B * N * sizeof *p->sb + 1);
    p->cm = malloc(B * N * sizeof *p->cm + 1);
    p->ybase = malloc(B * sizeof *p->ybase);
    if (!p->amat || !p->bmat || !p->da || !p->db || !p->sa || !p->sb || !p->cm || !p->ybase)
        return qmm_status_oom(st, cb->name, "for the parameters");
    const qmm_tensor *az = p->qlm ? &p->qlm->a_zero_point : &p->mmi->a_zero_point;
    const qmm_tensor *bz = p->qlm ? &p->qlm->b_zero_point : &p->mmi->b_zero_point;
    int32_t shift_a = p->a_signed ? 0 : 128, shift_b = p->b_signed ? 0 : 128;
    if (p->qlm) {
        const qmm_qlinearmatmul *c = p->qlm;
        p->y_per_tensor = qmm_tensor_numel(&c->y_scale) == 1;
        p->qmin = c->y.dtype == QMM_DTYPE_INT8 ? -128 : 0;
        p->qmax = c->y.dtype == QMM_DTYPE_INT8 ? 127 : 255;
        p->sy = 1.0;
        if (p->y_per_tensor) {
            p->sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, 0);
            p->zy = zp_value(&c->y_zero_point, 0);
        } else {
            int64_t yn = qmm_tensor_numel(&c->y_scale);
            p->ynumel = yn > 0 ? yn : 0; /* validated: never negative */
            p->ys = malloc((size_t)p->ynumel * sizeof *p->ys + 1);
            p->yz = malloc((size_t)p->ynumel * sizeof *p->yz + 1);
            if (!p->ys || !p->yz)
                return qmm_status_oom(st, cb->name, "for the parameters");
            for (int64_t e = 0; e < p->ynumel; e++) {
                p->ys[e] = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, e);
                p->yz[e] = zp_value(&c->y_zero_point, e);
            }
        }
    }
    for (int64_t bi = 0; bi < p->batch; bi++) {
        p->amat[bi] = p->m && p->k ? qmm_geometry_a_offset(g, bi) / (p->m * p->k) : 0;
        p->bmat[bi] = p->k && p->n ? qmm_geometry_b_offset(g, bi) / (p->k * p->n) : 0;
        for (int64_t i = 0; i < p->m; i++) {
            size_t o = (size_t)(bi * p->m + i);
            p->da[o] = shift_a - zp_value(az, qmm_param_offset(&maps[QMM_MAP_A_ZERO_POINT], g,
                                                               bi, i, 0));
            if (p->qlm)
                p->sa[o] = qmm_scale_decode(p->qlm->a_scale.dtype, p->qlm->a_scale.data,
                                            qmm_param_offset(&maps[QMM_MAP_A_SCALE], g, bi, i, 0));
        }
        for (int64_t j = 0; j < p->n; j++) {
            size_t o = (size_t)(bi * p->n + j);
            p->db[o] = shift_b - zp_value(bz, qmm_param_offset(&maps[QMM_MAP_B_ZERO_POINT], g,
                                                               bi, 0, j));
            if (p->qlm) {
                p->sb[o] = qmm_scale_decode(p->qlm->b_scale.dtype, p->qlm->b_scale.data,
                                            qmm_param_offset(&maps[QMM_MAP_B_SCALE], g, bi, 0, j));
                /* the host's IEEE double division gives the same bits as the device's */
                p->cm[o] = p->sb[o] / p->sy;
            }
        }
        p->ybase[bi] = p->qlm && !p->y_per_tensor
                           ? qmm_param_offset(&maps[QMM_MAP_Y_SCALE], g, bi, 0, 0)
                           : 0;
    }
    return QMM_OK;
}

/* The epilogue arguments of batch bi, over the given buffers (device or host). */
static qmm_cu_epi epi_args(const plan *p, int64_t bi, const int32_t *dot, int64_t ldd,
                           const int32_t *rowsum, const int32_t *colsum, const int32_t *da,
                           const int32_t *db, const double *sa, const double *sb,
                           const double *cm, const double *ys, const int32_t *yz, void *y)
{
    qmm_cu_epi e;
    memset(&e, 0, sizeof e);
    e.m = p->m;
    e.n = p->n;
    e.k = p->k;
    e.ldd = ldd;
    e.dot = dot;
    e.rowsum = rowsum + p->amat[bi] * p->m;
    e.colsum = colsum + p->bmat[bi] * p->n;
    e.da = da + bi * p->m;
    e.db = db + bi * p->n;
    e.y = (uint8_t *)y + (size_t)(bi * p->m * p->n) * p->ysize;
    e.ldy = p->n;
    e.mmi = p->mmi != NULL;
    if (p->qlm) {
        e.sa = sa + bi * p->m;
        e.sb = sb + bi * p->n;
        e.cm = cm + bi * p->n;
        e.y_per_tensor = p->y_per_tensor;
        e.sy = p->sy;
        e.zy = p->zy;
        e.ys = ys;
        e.yz = yz;
        e.y_base = p->ybase[bi];
        e.y_rs = p->rules.maps[QMM_MAP_Y_SCALE].row_stride;
        e.y_cs = p->rules.maps[QMM_MAP_Y_SCALE].col_stride;
        e.qmin = p->qmin;
        e.qmax = p->qmax;
    }
    return e;
}

/* The epilogue e narrowed to columns [j0, j1) of its output (a slab): every column vector and
 * the accumulators, y and y's parameters start at column j0; rows keep their strides. */
static qmm_cu_epi epi_columns(qmm_cu_epi e, int64_t j0, int64_t j1, size_t ysize)
{
    e.n = j1 - j0;
    e.dot += j0;
    e.colsum += j0;
    e.db += j0;
    if (e.sb)
        e.sb += j0;
    if (e.cm)
        e.cm += j0;
    e.y = (uint8_t *)e.y + (size_t)j0 * ysize;
    e.y_base += e.y_cs * j0;
    return e;
}

/* Columns a slab when n columns are cut into `slabs` slabs of multiples of `align` columns
 * (slabs < 2: one slab of all n). */
static int64_t slab_width(int64_t n, int slabs, int64_t align)
{
    if (slabs < 2)
        return n > 0 ? n : 1;
    int64_t w = (n + slabs - 1) / slabs;
    w = (w + align - 1) / align * align;
    return w > 0 ? w : align;
}

/* ---- host emulation: the same pipeline, a loop for the GEMM ---- */

/* The device's operand preparation (kernels.cu): nmat matrices of `rows` rows of K values,
 * element (r, kk) of matrix mat at src + mat*rows*K + r*rs + kk*ks, shifted to int8 into
 * dst[(mat*rows + r)*K + kk], each row's sum into sums[mat*rows + r] (mod 2^32). */
static void emulate_prep(const uint8_t *src, int is_signed, size_t nmat, size_t rows, size_t K,
                         size_t rs, size_t ks, int8_t *dst, int32_t *sums)
{
    for (size_t mat = 0; mat < nmat && K; mat++)
        for (size_t r = 0; r < rows; r++) {
            uint32_t sum = 0;
            const uint8_t *row = src + mat * rows * K + r * rs;
            for (size_t kk = 0; kk < K; kk++) {
                int8_t v = qmm_cu_s8(row[kk * ks], is_signed);
                dst[(mat * rows + r) * K + kk] = v;
                sum += (uint32_t)(int32_t)v;
            }
            sums[mat * rows + r] = qmm_rq_wrap(sum);
        }
}

static qmm_status_code run_emulated(const qmm_cu_backend *cb, const plan *p, qmm_status *st)
{
    size_t M = (size_t)p->m, K = (size_t)p->k, N = (size_t)p->n;
    int8_t *ap = malloc((size_t)p->namat * M * K + 1);
    int8_t *bt = malloc((size_t)p->nbmat * N * K + 1);
    int32_t *rs = calloc((size_t)p->namat * M + 1, sizeof *rs);
    int32_t *cs = calloc((size_t)p->nbmat * N + 1, sizeof *cs);
    int32_t *dot = malloc(M * N * sizeof *dot + 1);
    qmm_status_code rc = QMM_OK;
    if (!ap || !bt || !rs || !cs || !dot) {
        rc = qmm_status_oom(st, cb->name, NULL);
        goto out;
    }
    /* A as it is (rows of K), B transposed (its columns as rows of K) */
    emulate_prep(p->a->data, p->a_signed, (size_t)p->namat, M, K, K, 1, ap, rs);
    emulate_prep(p->b->data, p->b_signed, (size_t)p->nbmat, N, K, 1, N, bt, cs);
    /* with slabs, the GEMM and the epilogue go slab by slab, as on the device, but in slabs
     * of multiples of 4 columns (the device's are of 256), so that small problems cross
     * slab boundaries too */
    int64_t sw = slab_width(p->n, cb->slabs, 4);
    for (int64_t bi = 0; bi < p->batch; bi++) {
        const int8_t *x = ap + (size_t)p->amat[bi] * M * K;
        const int8_t *w = bt + (size_t)p->bmat[bi] * N * K;
        qmm_cu_epi e = epi_args(p, bi, dot, p->n, rs, cs, p->da, p->db, p->sa, p->sb, p->cm,
                                p->ys, p->yz, p->y->data);
        for (int64_t j0 = 0; j0 < p->n; j0 += sw) {
            int64_t j1 = j0 + sw < p->n ? j0 + sw : p->n;
            for (size_t i = 0; i < M; i++)
                for (size_t j = (size_t)j0; j < (size_t)j1; j++) {
                    uint32_t s = 0;
                    for (size_t kk = 0; kk < K; kk++)
                        s += (uint32_t)((int32_t)x[i * K + kk] * (int32_t)w[j * K + kk]);
                    dot[i * N + j] = qmm_rq_wrap(s);
                }
            qmm_cu_epi es = epi_columns(e, j0, j1, p->ysize);
            for (int64_t i = 0; i < p->m; i++)
                for (int64_t j = 0; j < es.n; j++)
                    qmm_cu_epi_element(&es, i, j);
        }
    }
    rc = qmm_status_ok(st);
out:
    free(ap);
    free(bt);
    free(rs);
    free(cs);
    free(dot);
    return rc;
}

/* ---- device ---- */

qmm_status_code qmm_cu_fail_cuda(const qmm_cu_backend *cb, cudaError_t e, const char *what,
                                 qmm_status *st)
{
    return qmm_status_set(st, e == cudaErrorMemoryAllocation ? QMM_OUT_OF_MEMORY : QMM_INTERNAL,
                          "%s: %s: %s (%s)", cb->name, what, cudaGetErrorName(e),
                          cudaGetErrorString(e));
}

qmm_status_code qmm_cu_fail_lt(const qmm_cu_backend *cb, cublasStatus_t e, const char *what,
                               qmm_status *st)
{
    return qmm_status_set(st, e == CUBLAS_STATUS_ALLOC_FAILED ? QMM_OUT_OF_MEMORY : QMM_INTERNAL,
                          "%s: %s: cuBLASLt status %d", cb->name, what, (int)e);
}


static int lt_matrix_equal(const qmm_lt_matrix *x, const qmm_lt_matrix *y)
{
    return x->type == y->type && x->rows == y->rows && x->cols == y->cols && x->ld == y->ld &&
           x->order == y->order;
}

static int lt_key_equal(const qmm_lt_gemm *x, const qmm_lt_gemm *y)
{
    return x->ta == y->ta && x->tb == y->tb && lt_matrix_equal(&x->a, &y->a) &&
           lt_matrix_equal(&x->b, &y->b) && lt_matrix_equal(&x->d, &y->d);
}

static void lt_plan_destroy(qmm_cu_lt_plan *e)
{
    qmm_lt_layout_destroy(e->ld);
    qmm_lt_layout_destroy(e->lb);
    qmm_lt_layout_destroy(e->la);
    if (e->op)
        cublasLtMatmulDescDestroy(e->op);
    memset(e, 0, sizeof *e);
}

void qmm_cu_lt_plans_release(qmm_cu_backend *cb)
{
    for (int i = 0; i < QMM_CU_LT_PLANS; i++)
        if (cb->lt_plans[i].used)
            lt_plan_destroy(&cb->lt_plans[i]);
}

/* A new plan for g in *e: its descriptors and the heuristic's answer. */
static qmm_status_code lt_plan_make(qmm_cu_backend *cb, const qmm_lt_gemm *g, qmm_cu_lt_plan *e,
                                    qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    cublasLtMatmulPreference_t pref = NULL;
    memset(e, 0, sizeof *e);
    LT_TRY(cublasLtMatmulDescCreate(&e->op, CUBLAS_COMPUTE_32I, CUDA_R_32I),
           "matmul descriptor");
    LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &g->ta,
                                          sizeof g->ta),
           "TRANSA");
    LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &g->tb,
                                          sizeof g->tb),
           "TRANSB");
    LT_TRY(qmm_lt_layout(&e->la, &g->a), g->a.what);
    LT_TRY(qmm_lt_layout(&e->lb, &g->b), g->b.what);
    LT_TRY(qmm_lt_layout(&e->ld, &g->d), g->d.what);
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref), "preference");
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &cb->workspace_size, sizeof cb->workspace_size),
           "workspace preference");
    cublasLtMatmulHeuristicResult_t heur;
    int n = 0;
    cublasStatus_t he = cublasLtMatmulAlgoGetHeuristic(cb->lt, e->op, e->la, e->lb, e->ld, e->ld,
                                                       pref, 1, &heur, &n);
    if (he != CUBLAS_STATUS_NOT_SUPPORTED && !(he == CUBLAS_STATUS_SUCCESS && n < 1)) {
        LT_TRY(he, "algorithm heuristic");
        e->found = 1;
        e->algo = heur.algo;
    } /* else no algorithm: found stays 0, and that answer is kept too */
    e->key = *g;
    e->used = 1;
out:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (rc != QMM_OK)
        lt_plan_destroy(e);
    return rc;
}

qmm_status_code qmm_cu_lt_matmul(qmm_cu_backend *cb, const qmm_lt_gemm *g, const void *a,
                                 const void *b, int32_t *d, int *found, qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    int32_t alpha = 1, beta = 0;
    qmm_cu_lt_plan *e = NULL;
    *found = 0;
    for (int i = 0; i < QMM_CU_LT_PLANS && !e; i++)
        if (cb->lt_plans[i].used && lt_key_equal(&cb->lt_plans[i].key, g))
            e = &cb->lt_plans[i];
    if (!e) {
        e = &cb->lt_plans[cb->lt_next];
        cb->lt_next = (cb->lt_next + 1) % QMM_CU_LT_PLANS;
        if (e->used)
            lt_plan_destroy(e);
        rc = lt_plan_make(cb, g, e, st);
        if (rc != QMM_OK)
            return rc;
    }
    *found = e->found;
    if (e->found && d)
        LT_TRY(cublasLtMatmul(cb->lt, e->op, &alpha, a, e->la, b, e->lb, &beta, d, e->ld, d,
                              e->ld, &e->algo, cb->workspace, cb->workspace_size, cb->stream),
               g->what);
out:
    return rc;
}

qmm_status_code qmm_cu_gemm_rows(qmm_cu_backend *cb, int64_t m, int64_t n, int64_t kk,
                                 const int8_t *x, int64_t ldx, const int8_t *w, int64_t ldw,
                                 int32_t *d, int64_t ldd, qmm_status *st)
{
    /* column-major view: D^T (n x m, ld ldd) = op_T(W as kk x n, ld ldw) * (X as kk x m) */
    const qmm_lt_gemm g = {
        CUBLAS_OP_T, CUBLAS_OP_N,
        {CUDA_R_8I, kk, n, ldw, QMM_LT_DEFAULT_ORDER, "layout of B"},
        {CUDA_R_8I, kk, m, ldx, QMM_LT_DEFAULT_ORDER, "layout of A"},
        {CUDA_R_32I, n, m, ldd, QMM_LT_DEFAULT_ORDER, "layout of the accumulators"},
        "int8 GEMM"};
    int found;
    qmm_status_code rc = qmm_cu_lt_matmul(cb, &g, w, x, d, &found, st);
    if (rc == QMM_OK && !found)
        rc = qmm_status_set(st, QMM_INTERNAL,
                            "%s: cuBLASLt has no int8 algorithm for %lld x %lld x %lld", cb->name,
                            (long long)m, (long long)kk, (long long)n);
    return rc;
}

/* Device buffers of one call; all freed by dev_free. */
typedef struct dev {
    uint8_t *a, *b, *y;
    int8_t *ap, *bt;
    int32_t *rs, *cs, *dot, *tmp, *da, *db, *yz;
    double *sa, *sb, *cm, *ys;
} dev;

static void dev_free(dev *d)
{
    void *ptrs[] = {d->a,   d->b,   d->y,  d->ap, d->bt, d->rs, d->cs, d->dot,
                    d->tmp, d->da,  d->db, d->yz, d->sa, d->sb, d->cm, d->ys};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i])
            cudaFree(ptrs[i]);
}


/* cudaMalloc of at least one byte, so empty buffers are still valid distinct pointers */
static cudaError_t dalloc(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes ? bytes : 1);
}

static cudaError_t upload(void **dst, const void *src, size_t bytes, cudaStream_t s)
{
    cudaError_t e = dalloc(dst, bytes);
    if (e == cudaSuccess && bytes)
        e = cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, s);
    return e;
}

/* The device part after operands and parameters are resident, in three stages: operand
 * preparation, the GEMMs of batch bi, its epilogue. Shared by the operator calls and the
 * resident benchmark (which times each stage too). */
static qmm_status_code stage_prepare(qmm_cu_backend *cb, const plan *p, dev *d, qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    cudaStream_t s = cb->stream;
    size_t M = (size_t)p->m, N = (size_t)p->n;
    if (p->k > 0) {
        CU_TRY(qmm_cu_launch_prep_rows(d->a, p->a_signed, p->namat, p->m, p->k, p->mp, p->kp,
                                       d->ap, d->rs, s),
               "preparing A");
        CU_TRY(cudaMemsetAsync(d->cs, 0, (size_t)p->nbmat * N * sizeof(int32_t), s),
               "clearing column sums");
        CU_TRY(qmm_cu_launch_prep_cols(d->b, p->b_signed, p->nbmat, p->k, p->n, p->np, p->kp,
                                       d->bt, d->cs, s),
               "preparing B");
    } else {
        /* K = 0: every sum is 0 */
        CU_TRY(cudaMemsetAsync(d->rs, 0, (size_t)p->namat * M * sizeof(int32_t), s),
               "clearing row sums");
        CU_TRY(cudaMemsetAsync(d->cs, 0, (size_t)p->nbmat * N * sizeof(int32_t), s),
               "clearing column sums");
        CU_TRY(cudaMemsetAsync(d->dot, 0, (size_t)(p->mp * p->np) * sizeof(int32_t), s),
               "clearing accumulators");
    }
out:
    return rc;
}

static qmm_status_code stage_gemm(qmm_cu_backend *cb, const plan *p, dev *d, int64_t bi,
                                  qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    const int8_t *x = d->ap + p->amat[bi] * p->mp * p->kp;
    const int8_t *w = d->bt + p->bmat[bi] * p->np * p->kp;
    for (int64_t k0 = 0; k0 < p->kp; k0 += QMM_CU_KCHUNK) {
        int64_t kc = p->kp - k0 < QMM_CU_KCHUNK ? p->kp - k0 : QMM_CU_KCHUNK;
        int32_t *target = k0 == 0 ? d->dot : d->tmp;
        rc = qmm_cu_gemm_rows(cb, p->mp, p->np, kc, x + k0, p->kp, w + k0, p->kp, target, p->np,
                              st);
        if (rc != QMM_OK)
            goto out;
        if (k0 > 0)
            CU_TRY(qmm_cu_launch_add(d->dot, d->tmp, p->mp * p->np, cb->stream),
                   "summing K chunks");
    }
out:
    return rc;
}

static qmm_status_code stage_epilogue(qmm_cu_backend *cb, const plan *p, dev *d, int64_t bi,
                                      qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    qmm_cu_epi e = epi_args(p, bi, d->dot, p->np, d->rs, d->cs, d->da, d->db, d->sa, d->sb,
                            d->cm, d->ys, d->yz, d->y);
    CU_TRY(qmm_cu_launch_epilogue(&e, cb->stream), "epilogue");
out:
    return rc;
}

/* Batch bi in column slabs (cuda_internal.h, QMM_CU_SLABS_MAX): slab s's GEMM on the stream,
 * then its epilogue on the side stream once an event says that GEMM is done; before the next
 * batch's GEMMs overwrite the accumulators, and at the end, the stream waits for every
 * epilogue. Columns in the padded space [0, np) of the GEMM; an epilogue covers the slab's
 * columns below n. */
/* The stream waits for everything queued on the side stream so far (after an error too, so
 * that the copy of y and the caller's synchronisation cover every epilogue); where that
 * ordering itself fails, the side stream is waited for here and rc becomes that failure. */
static qmm_status_code join_side(qmm_cu_backend *cb, qmm_status_code rc, qmm_status *st)
{
    cudaError_t e = cudaEventRecord(cb->side_done, cb->side);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(cb->stream, cb->side_done, 0);
    if (e != cudaSuccess) {
        cudaStreamSynchronize(cb->side);
        if (rc == QMM_OK)
            rc = qmm_cu_fail_cuda(cb, e, "ordering the slabs", st);
    }
    return rc;
}

static qmm_status_code stage_slabs(qmm_cu_backend *cb, const plan *p, dev *d, int64_t bi,
                                   qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    const int8_t *x = d->ap + p->amat[bi] * p->mp * p->kp;
    const int8_t *w = d->bt + p->bmat[bi] * p->np * p->kp;
    qmm_cu_epi e = epi_args(p, bi, d->dot, p->np, d->rs, d->cs, d->da, d->db, d->sa, d->sb,
                            d->cm, d->ys, d->yz, d->y);
    int64_t sw = slab_width(p->np, cb->slabs, QMM_CU_SLAB_ALIGN);
    int s = 0;
    for (int64_t j0 = 0; j0 < p->np; j0 += sw, s++) {
        int64_t j1 = j0 + sw < p->np ? j0 + sw : p->np;
        rc = qmm_cu_gemm_rows(cb, p->mp, j1 - j0, p->kp, x, p->kp, w + j0 * p->kp, p->kp,
                              d->dot + j0, p->np, st);
        if (rc != QMM_OK)
            goto out;
        if (j0 >= p->n) /* padding columns only (not with np the next multiple of 16 and */
            continue;   /* slabs of 256, kept for any other padding) */
        CU_TRY(cudaEventRecord(cb->slab_done[s], cb->stream), "ordering the slabs");
        CU_TRY(cudaStreamWaitEvent(cb->side, cb->slab_done[s], 0), "ordering the slabs");
        qmm_cu_epi es = epi_columns(e, j0, j1 < p->n ? j1 : p->n, p->ysize);
        CU_TRY(qmm_cu_launch_epilogue(&es, cb->side), "epilogue");
    }
out:
    return join_side(cb, rc, st);
}

/* Slabs where the backend has them (slabs=S), the GEMM is one K chunk and there is more than
 * one slab of whole QMM_CU_SLAB_ALIGN columns. */
static int use_slabs(const qmm_cu_backend *cb, const plan *p)
{
    return cb->slabs > 1 && cb->side && p->k > 0 && p->kp <= QMM_CU_KCHUNK &&
           slab_width(p->np, cb->slabs, QMM_CU_SLAB_ALIGN) < p->np;
}

static qmm_status_code run_resident(qmm_cu_backend *cb, const plan *p, dev *d, qmm_status *st)
{
    qmm_status_code rc = stage_prepare(cb, p, d, st);
    if (rc == QMM_OK && use_slabs(cb, p)) {
        for (int64_t bi = 0; bi < p->batch && rc == QMM_OK; bi++)
            rc = stage_slabs(cb, p, d, bi, st);
        return rc;
    }
    for (int64_t bi = 0; bi < p->batch && rc == QMM_OK; bi++) {
        rc = stage_gemm(cb, p, d, bi, st); /* K = 0: no GEMM, the accumulators are cleared */
        if (rc == QMM_OK)
            rc = stage_epilogue(cb, p, d, bi, st);
    }
    return rc;
}

/* Allocates the device buffers for plan p and uploads its operands and parameters. */
static qmm_status_code dev_setup(qmm_cu_backend *cb, const plan *p, dev *d, qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    cudaStream_t s = cb->stream;
    size_t M = (size_t)p->m, N = (size_t)p->n, B = (size_t)p->batch;
    size_t an = (size_t)qmm_tensor_numel(p->a), bn = (size_t)qmm_tensor_numel(p->b);
    CU_TRY(upload((void **)&d->a, p->a->data, an, s), "copying A");
    CU_TRY(upload((void **)&d->b, p->b->data, bn, s), "copying B");
    CU_TRY(dalloc((void **)&d->y, B * M * N * p->ysize), "y");
    CU_TRY(dalloc((void **)&d->ap, (size_t)(p->namat * p->mp * p->kp)), "prepared A");
    CU_TRY(dalloc((void **)&d->bt, (size_t)(p->nbmat * p->np * p->kp)), "prepared B");
    CU_TRY(dalloc((void **)&d->rs, (size_t)p->namat * M * sizeof(int32_t)), "row sums");
    CU_TRY(dalloc((void **)&d->cs, (size_t)p->nbmat * N * sizeof(int32_t)), "column sums");
    CU_TRY(dalloc((void **)&d->dot, (size_t)(p->mp * p->np) * sizeof(int32_t)), "accumulators");
    if (p->kp > QMM_CU_KCHUNK)
        CU_TRY(dalloc((void **)&d->tmp, (size_t)(p->mp * p->np) * sizeof(int32_t)),
               "accumulators");
    CU_TRY(upload((void **)&d->da, p->da, B * M * sizeof(int32_t), s), "parameters");
    CU_TRY(upload((void **)&d->db, p->db, B * N * sizeof(int32_t), s), "parameters");
    if (p->qlm) {
        CU_TRY(upload((void **)&d->sa, p->sa, B * M * sizeof(double), s), "parameters");
        CU_TRY(upload((void **)&d->sb, p->sb, B * N * sizeof(double), s), "parameters");
        CU_TRY(upload((void **)&d->cm, p->cm, B * N * sizeof(double), s), "parameters");
        if (!p->y_per_tensor) {
            CU_TRY(upload((void **)&d->ys, p->ys, (size_t)p->ynumel * sizeof(double), s),
                   "parameters");
            CU_TRY(upload((void **)&d->yz, p->yz, (size_t)p->ynumel * sizeof(int32_t), s),
                   "parameters");
        }
    }
out:
    return rc;
}

static qmm_status_code run_device(qmm_cu_backend *cb, const plan *p, qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    dev d;
    memset(&d, 0, sizeof d);
    size_t ybytes = (size_t)(p->batch * p->m * p->n) * p->ysize;
    CU_TRY(cudaSetDevice(cb->device), "selecting the device");
    rc = dev_setup(cb, p, &d, st);
    if (rc != QMM_OK)
        goto out;
    rc = run_resident(cb, p, &d, st);
    if (rc != QMM_OK)
        goto out;
    CU_TRY(cudaMemcpyAsync(p->y->data, d.y, ybytes, cudaMemcpyDeviceToHost, cb->stream),
           "copying y back");
    CU_TRY(cudaStreamSynchronize(cb->stream), "running the call");
out:
    if (rc != QMM_OK) { /* nothing may still use the buffers we free */
        cudaStreamSynchronize(cb->stream);
        if (cb->side)
            cudaStreamSynchronize(cb->side);
    }
    dev_free(&d);
    return rc;
}

static qmm_status_code run_plan(qmm_cu_backend *cb, plan *p, qmm_status *st)
{
    if (p->rules.g.m == 0 || p->rules.g.n == 0 || p->rules.g.batch == 0)
        return qmm_status_ok(st); /* an empty output: nothing to write */
    qmm_status_code rc = plan_build(cb, p, st);
    if (rc == QMM_OK) {
        if (cb->emulate) {
            rc = run_emulated(cb, p, st);
        } else {
            pthread_mutex_lock(&cb->lock);
            rc = run_device(cb, p, st);
            pthread_mutex_unlock(&cb->lock);
        }
    }
    plan_free(p);
    if (rc == QMM_OK)
        qmm_status_ok(st);
    return rc;
}

qmm_status_code qmm_cu_qlinearmatmul(qmm_cu_backend *cb, const qmm_qlinearmatmul *c,
                                     qmm_status *st)
{
    plan p = {.qlm = c, .a = &c->a, .b = &c->b, .y = &c->y};
    QMM_TRY(qmm_validate_qlinearmatmul(c, &p.rules, st));
    const char *f8 = qmm_qlinearmatmul_float8(c);
    if (f8) /* cuBLASLt's integer GEMM and the exact epilogue take uint8/int8 only */
        return qmm_status_set(st, QMM_UNSUPPORTED, "cuda: %s is float8; the int8 GEMM takes "
                              "uint8/int8 only", f8);
    return run_plan(cb, &p, st);
}

qmm_status_code qmm_cu_matmulinteger(qmm_cu_backend *cb, const qmm_matmulinteger *c,
                                     qmm_status *st)
{
    plan p = {.mmi = c, .a = &c->a, .b = &c->b, .y = &c->y};
    QMM_TRY(qmm_validate_matmulinteger(c, &p.rules, st));
    return run_plan(cb, &p, st);
}

/* ---- the resident benchmark ---- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Median of `reps` timings of fn(cb, ctx) measured with CUDA events on the stream. */
typedef qmm_status_code (*bench_fn)(qmm_cu_backend *cb, void *ctx, qmm_status *st);

static qmm_status_code time_median(qmm_cu_backend *cb, bench_fn fn, void *ctx, int reps,
                                   double *out, qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double *t = calloc((size_t)reps, sizeof *t);
    if (!t)
        return qmm_status_oom(st, cb->name, NULL);
    CU_TRY(cudaEventCreate(&e0), "timing event");
    CU_TRY(cudaEventCreate(&e1), "timing event");
    for (int w = 0; w < 3; w++) /* warm-up: heuristics, kernel loading, clocks */
        if ((rc = fn(cb, ctx, st)) != QMM_OK)
            goto out;
    for (int r = 0; r < reps; r++) {
        float ms = 0;
        CU_TRY(cudaEventRecord(e0, cb->stream), "timing");
        if ((rc = fn(cb, ctx, st)) != QMM_OK)
            goto out;
        CU_TRY(cudaEventRecord(e1, cb->stream), "timing");
        CU_TRY(cudaEventSynchronize(e1), "timing");
        CU_TRY(cudaEventElapsedTime(&ms, e0, e1), "timing");
        t[r] = ms * 1e-3;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *out = t[reps / 2];
out:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    free(t);
    return rc;
}

typedef struct bench_ctx {
    const plan *p;
    dev *d;
} bench_ctx;

static qmm_status_code bench_gemm(qmm_cu_backend *cb, void *ctx, qmm_status *st)
{
    bench_ctx *b = ctx;
    const plan *p = b->p;
    return qmm_cu_gemm_rows(cb, p->mp, p->np, p->kp, b->d->ap, p->kp, b->d->bt, p->kp,
                            b->d->dot, p->np, st);
}

static qmm_status_code bench_full(qmm_cu_backend *cb, void *ctx, qmm_status *st)
{
    bench_ctx *b = ctx;
    return run_resident(cb, b->p, b->d, st);
}

static qmm_status_code bench_prepare(qmm_cu_backend *cb, void *ctx, qmm_status *st)
{
    bench_ctx *b = ctx;
    return stage_prepare(cb, b->p, b->d, st);
}

static qmm_status_code bench_epilogue(qmm_cu_backend *cb, void *ctx, qmm_status *st)
{
    bench_ctx *b = ctx;
    return stage_epilogue(cb, b->p, b->d, 0, st);
}

qmm_status_code qmm_cuda_bench_resident(const qmm_backend *be, int64_t m, int64_t k, int64_t n,
                                        const uint8_t *a, const int8_t *b, int reps,
                                        qmm_cuda_bench_times *times, qmm_status *st)
{
    qmm_cu_backend *cb = qmm_cu_from_backend(be);
    if (!cb)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "not a cuda backend");
    if (cb->missing || cb->emulate)
        return qmm_status_because(st, QMM_UNSUPPORTED, cb->name,
                                  cb->missing ? cb->missing : "the benchmark needs a device");
    if (m <= 0 || k <= 0 || n <= 0 || k > QMM_CU_KCHUNK || reps < 1)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "bench: need m, n > 0, 0 < k <= %d, reps >= 1", QMM_CU_KCHUNK);
    memset(times, 0, sizeof *times);
    float sa = 0.0173f, sb = 0.0041f, sy = 0.93f;
    uint8_t za = 131, zb = 0, zy = 128, dummy = 0;
    /* a call whose y carries only its shape: y stays on the device */
    qmm_qlinearmatmul c = {
        .a = {QMM_DTYPE_UINT8, 2, {m, k}, (void *)a},
        .a_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sa},
        .a_zero_point = {QMM_DTYPE_UINT8, 0, {0}, &za},
        .b = {QMM_DTYPE_INT8, 2, {k, n}, (void *)b},
        .b_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sb},
        .b_zero_point = {QMM_DTYPE_INT8, 0, {0}, &zb},
        .y_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sy},
        .y_zero_point = {QMM_DTYPE_UINT8, 0, {0}, &zy},
        .y = {QMM_DTYPE_UINT8, 2, {m, n}, &dummy},
        .opset = 10,
    };
    plan p;
    memset(&p, 0, sizeof p);
    qmm_status_code rc = qmm_validate_qlinearmatmul(&c, &p.rules, st);
    if (rc != QMM_OK)
        return rc;
    p.qlm = &c;
    p.a = &c.a;
    p.b = &c.b;
    p.y = &c.y;
    /* every parameter is per-tensor: validation left all map strides 0 */
    dev d;
    memset(&d, 0, sizeof d);
    pthread_mutex_lock(&cb->lock);
    rc = plan_build(cb, &p, st);
    if (rc != QMM_OK)
        goto out;
    CU_TRY(cudaSetDevice(cb->device), "selecting the device");
    rc = dev_setup(cb, &p, &d, st); /* the caller's operands, once */
    if (rc != QMM_OK)
        goto out;
    CU_TRY(cudaStreamSynchronize(cb->stream), "copying the operands");
    bench_ctx bc = {&p, &d};
    /* the full pipeline first: it also prepares the operands the plain GEMM then reads */
    struct {
        bench_fn fn;
        double *out;
    } runs[] = {{bench_full, &times->full_s},
                {bench_gemm, &times->gemm_s},
                {bench_prepare, &times->prepare_s},
                {bench_epilogue, &times->epilogue_s}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0] && rc == QMM_OK; i++)
        rc = time_median(cb, runs[i].fn, &bc, reps, runs[i].out, st);
out:
    cudaStreamSynchronize(cb->stream);
    if (cb->side)
        cudaStreamSynchronize(cb->side);
    dev_free(&d);
    plan_free(&p);
    pthread_mutex_unlock(&cb->lock);
    if (rc == QMM_OK)
        qmm_status_ok(st);
    return rc;
}
