/* optimized/cpu/qordered.c — QOrderedMatMul (com.microsoft, docs/semantics.md §4) on the
 * optimized backend's integer GEMM.
 *
 * Validation is the shared rules' (ops/qordered_layout.c, qmm_validate_qorderedmatmul), so
 * every backend accepts and rejects the same calls with the same messages. Then:
 *   1. A (ROW or COL32) is read as the M x K matrix and B (COL, COL4_4R2_8C or COL32_2R_4R4)
 *      as the K x N matrix through the same layout rules (qmm_order_offset: B in COL is B^T
 *      row-major; the tiled orders hold B^T, N x K, in that order), gathered into plain
 *      row-major int8 matrices (A in ROW order is used in place);
 *   2. the accumulators acc = sum_k A B, modulo 2^32 (the accepted overflow result, as
 *      cublasLt's int32 accumulation gives), come from this backend's MatMulInteger: the
 *      variant's kernels (kernels.c), its packing, its thread pool;
 *   3. the epilogue, sat_int8(RNE(sA·sB_j·acc/sY + bias_j + sC·C/sY)), is
 *      optimized/qordered_exact.h's, the one the CUDA backend runs: a bounded double decision,
 *      the exact expansion decision for the elements it leaves open; row blocks on the pool,
 *      each element written at its order_Y offset (C read at the same offset).
 * Output is therefore bitwise identical for every variant and thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/qmm_ops.h"
#include "optimized/cpu/opt_internal.h"
#include "optimized/qordered_exact.h"

typedef struct qord_job {
    const qmm_qorderedmatmul *c;
    qmm_qordered_plan g;
    const int32_t *acc; /* batch x m x n, row-major */
    double sa, sy, sc, beta; /* beta = fl(sc / sy) */
    double *sb, *alpha, *bias; /* per column; bias NULL when absent */
    size_t rows_per_task;
} qord_job;

/* Gathers one matrix stored in `order` (rows x cols as qmm_order_offset sees it) into dst:
 * row-major rows x cols when `transpose` is 0, else the transpose (cols x rows). */
static void gather(const int8_t *src, int order, int64_t rows, int64_t cols, int transpose,
                   int8_t *dst)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int8_t v = src[qmm_order_offset(order, rows, cols, r, c)];
            if (transpose)
                dst[c * rows + r] = v;
            else
                dst[r * cols + c] = v;
        }
}

/* One block of output rows (over all batches): task t covers rows [t*R, t*R + R) of the
 * batch * m rows. */
static void epilogue_task(void *ctx, size_t task, int worker)
{
    (void)worker;
    const qord_job *J = ctx;
    const qmm_qorderedmatmul *c = J->c;
    int64_t m = J->g.m, n = J->g.n;
    size_t total = (size_t)(J->g.batch * m);
    size_t r0 = task * J->rows_per_task, r1 = r0 + J->rows_per_task;
    if (r1 > total)
        r1 = total;
    const int8_t *C = J->g.c_batch ? c->c.data : NULL;
    int8_t *Y = c->y.data;
    for (size_t row = r0; row < r1; row++) {
        int64_t bi = (int64_t)row / m, i = (int64_t)row % m;
        const int32_t *acc = J->acc + row * (size_t)n;
        int8_t *y = Y + bi * m * n;
        const int8_t *cm = C ? C + (J->g.c_batch == 1 ? 0 : bi) * m * n : NULL;
        for (int64_t j = 0; j < n; j++) {
            int64_t o = qmm_order_offset(c->order_y, m, n, i, j);
            int8_t cv = cm ? cm[o] : 0;
            double t3 = cm ? (double)cv * J->beta : 0.0;
            double bias = J->bias ? J->bias[j] : 0.0;
            int32_t q;
            if (!qmm_qord_fast(acc[j], J->alpha[j], bias, t3, &q))
                q = qmm_qord_exact(J->sa, J->sb[j], J->sy, bias, cm ? J->sc : 1.0, acc[j], cv);
            y[o] = (int8_t)q;
        }
    }
}

static double f32_at(const qmm_tensor *t, int64_t i)
{
    return qmm_scale_decode(QMM_DTYPE_FLOAT, t->data, i);
}

qmm_status_code qmm_opt_qorderedmatmul(const qmm_opt_backend *ob, const qmm_qorderedmatmul *c,
                                       qmm_status *st)
{
    if (ob->missing)
        return qmm_status_because(st, QMM_UNSUPPORTED, ob->name, ob->missing);
    qord_job J;
    memset(&J, 0, sizeof J);
    J.c = c;
    QMM_TRY(qmm_validate_qorderedmatmul(c, &J.g, st));
    int64_t batch = J.g.batch, m = J.g.m, k = J.g.k, n = J.g.n, bb = J.g.b_batch;
    if (batch == 0 || m == 0 || n == 0)
        return qmm_status_ok(st); /* an empty output: nothing to write */
    size_t mn = (size_t)(batch * m * n);
    int a_row = c->order_a == QMM_ORDER_ROW;
    int8_t *a = a_row ? NULL : malloc((size_t)(batch * m * k) + 1);
    int8_t *b = malloc((size_t)(bb * k * n) + 1);
    int32_t *acc = malloc(mn * sizeof *acc);
    double *cols = malloc((size_t)n * 3 * sizeof *cols);
    qmm_status_code rc = QMM_OK;
    if ((!a_row && !a) || !b || !acc || !cols) {
        rc = qmm_status_oom(st, ob->name, "for QOrderedMatMul's operands");
        goto out;
    }
    /* 1. A as M x K, B as K x N, row-major: B in COL is the K x N matrix column-major, the
     *    tiled orders hold B^T (N x K), transposed back here */
    for (int64_t bi = 0; !a_row && bi < batch; bi++)
        gather((const int8_t *)c->a.data + bi * m * k, c->order_a, m, k, 0, a + bi * m * k);
    for (int64_t bi = 0; bi < bb; bi++) {
        const int8_t *src = (const int8_t *)c->b.data + bi * k * n;
        if (c->order_b == QMM_ORDER_COL)
            gather(src, QMM_ORDER_COL, k, n, 0, b + bi * k * n);
        else
            gather(src, c->order_b, n, k, 1, b + bi * k * n);
    }
    /* 2. acc = sum_k A B mod 2^32, by this backend's MatMulInteger (kernels, pool) */
    qmm_matmulinteger mi;
    memset(&mi, 0, sizeof mi);
    mi.a = (qmm_tensor){.dtype = QMM_DTYPE_INT8, .rank = 3, .dims = {batch, m, k},
                        .data = a_row ? c->a.data : a};
    mi.b = (qmm_tensor){.dtype = QMM_DTYPE_INT8, .rank = 3, .dims = {bb, k, n}, .data = b};
    if (bb == 1) /* broadcast over A's batch */
        mi.b = (qmm_tensor){.dtype = QMM_DTYPE_INT8, .rank = 2, .dims = {k, n}, .data = b};
    mi.y = (qmm_tensor){.dtype = QMM_DTYPE_INT32, .rank = 3, .dims = {batch, m, n}, .data = acc};
    rc = qmm_opt_matmulinteger(ob, &mi, NULL, st);
    if (rc != QMM_OK)
        goto out;
    /* 3. the exact epilogue */
    J.acc = acc;
    J.sa = f32_at(&c->scale_a, 0);
    J.sy = f32_at(&c->scale_y, 0);
    J.sc = J.g.c_batch ? f32_at(&c->scale_c, 0) : 1.0;
    J.beta = J.sc / J.sy;
    J.sb = cols;
    J.alpha = cols + n;
    J.bias = qmm_tensor_present(&c->bias) ? cols + 2 * n : NULL;
    for (int64_t j = 0; j < n; j++) {
        J.sb[j] = f32_at(&c->scale_b, J.g.scalar_b ? 0 : j);
        J.alpha[j] = (J.sa * J.sb[j]) / J.sy; /* sa·sb exact: one rounding */
        if (J.bias)
            J.bias[j] = f32_at(&c->bias, j);
    }
    size_t rows = (size_t)(batch * m);
    J.rows_per_task = 4096 / (size_t)n + 1; /* about 4096 elements a task */
    qmm_opt_pool_run(ob->pool, (rows + J.rows_per_task - 1) / J.rows_per_task, epilogue_task,
                     &J);
    rc = qmm_status_ok(st);
out:
    free(a);
    free(b);
    free(acc);
    free(cols);
    return rc;
}
