/* optimized/cuda/qordered.c — QOrderedMatMul (com.microsoft) on cuBLASLt, docs/semantics.md §4.
 *
 *   (A ROW, B COL, Y ROW): B in COL order is B^T row-major, so A and B^T are both "rows of K"
 *     and the call is the QLinearMatMul GEMM (qmm_cu_gemm_rows) after zero padding.
 *   (A COL32, B COL4_4R2_8C | COL32_2R_4R4, Y COL32): cublasLtMatmul directly on the ordered
 *     layouts (transb = T, int32 accumulators in COL32, so accumulator e belongs to output e).
 *     If cuBLASLt has no algorithm for those orders on this device (an H100 has none), our
 *     gather kernel (qmm_cu_launch_order_to_rows) turns A and B^T into zero-padded ROW order
 *     and the first form's GEMM runs instead.
 * The epilogue (epilogue.h, qmm_cu_qord_element) decides nearly every element with a bounded
 * double computation; the rare undecided ones are decided here on the host, exactly, by
 * qmm_cu_qord_exact (exact.c, floating-point expansions). K is split into chunks of
 * QMM_CU_KCHUNK summed modulo 2^32, as for QLinearMatMul.
 *
 * Validation is the shared rules' (ops/, qmm_validate_qorderedmatmul, docs/qorderedmatmul.md).
 * B and C have batch 1 (broadcast) or A's batch.
 */
#include <stdlib.h>
#include <string.h>

#include "optimized/cuda/cuda_internal.h"
#include "optimized/cuda/exact.h"
#include "ops/qmm_ops.h"

qmm_status_code qmm_cu_qordered_shape(const qmm_qorderedmatmul *c, int64_t *batch, int64_t *m,
                                      int64_t *k, int64_t *n, int64_t *b_batch,
                                      int64_t *c_batch, qmm_status *st)
{
    /* the shared rules: every backend accepts and rejects the same calls */
    qmm_qordered_plan g;
    qmm_status_code rc = qmm_validate_qorderedmatmul(c, &g, st);
    if (rc != QMM_OK)
        return rc;
    *batch = g.batch;
    *m = g.m;
    *k = g.k;
    *n = g.n;
    *b_batch = g.b_batch;
    *c_batch = g.c_batch;
    return QMM_OK;
}

typedef struct qo {
    const qmm_qorderedmatmul *c;
    int64_t batch, m, k, n, b_batch, c_batch;
    int col32;
    double sa, sy, sc;
    double *sb, *bias; /* n each (bias NULL when absent) */
} qo;

static void resolve_undecided(const qo *q, int8_t *y, unsigned int count, const int64_t *off,
                              const int32_t *acc, const int32_t *col, const int32_t *cv)
{
    for (unsigned int i = 0; i < count; i++)
        y[off[i]] = qmm_cu_qord_exact(q->sa, q->sb[col[i]], q->sy,
                                      q->bias ? q->bias[col[i]] : 0.0, q->sc, acc[i],
                                      (int8_t)cv[i]);
}

static qmm_cu_qord qord_args(const qo *q, int64_t bi, const int32_t *acc, int acc_row_major,
                             const int8_t *cdata, int8_t *y, const double *sb,
                             const double *bias)
{
    qmm_cu_qord p;
    memset(&p, 0, sizeof p);
    p.m = q->m;
    p.n = q->n;
    p.order_y = q->c->order_y;
    p.acc = acc;
    p.acc_row_major = acc_row_major;
    p.acc_ld = q->n;
    p.c = cdata ? cdata + (q->c_batch == 1 ? 0 : bi) * q->m * q->n : NULL;
    p.y = y + bi * q->m * q->n;
    p.sa = q->sa;
    p.sy = q->sy;
    p.sc = q->sc;
    p.sb = sb;
    p.bias = bias;
    return p;
}

/* ---- host emulation ---- */

static qmm_status_code run_emulated(const qmm_cu_backend *cb, const qo *q, qmm_status *st)
{
    size_t mn = (size_t)(q->m * q->n);
    int32_t *acc = malloc(mn * sizeof *acc + 1);
    int64_t *u_off = malloc(mn * sizeof *u_off + 1);
    int32_t *u_acc = malloc(mn * sizeof *u_acc + 1), *u_col = malloc(mn * sizeof *u_col + 1),
            *u_c = malloc(mn * sizeof *u_c + 1);
    qmm_status_code rc = QMM_OK;
    if (!acc || !u_off || !u_acc || !u_col || !u_c) {
        rc = qmm_status_oom(st, cb->name, NULL);
        goto out;
    }
    const int8_t *A = q->c->a.data, *B = q->c->b.data;
    int8_t *Y = q->c->y.data;
    for (int64_t bi = 0; bi < q->batch; bi++) {
        const int8_t *a = A + bi * q->m * q->k;
        const int8_t *b = B + (q->b_batch == 1 ? 0 : bi) * q->k * q->n;
        for (int64_t r = 0; r < q->m; r++)
            for (int64_t col = 0; col < q->n; col++) {
                uint32_t s = 0;
                for (int64_t kk = 0; kk < q->k; kk++) {
                    int64_t oa = qmm_cu_order_offset(q->c->order_a, r, kk, q->m, q->k);
                    /* B is [K, N]: COL order directly, the tiled orders hold B^T (N x K) */
                    int64_t ob = q->c->order_b == QMM_ORDER_COL
                                     ? qmm_cu_order_offset(QMM_ORDER_COL, kk, col, q->k, q->n)
                                     : qmm_cu_order_offset(q->c->order_b, col, kk, q->n, q->k);
                    s += (uint32_t)((int32_t)a[oa] * (int32_t)b[ob]);
                }
                acc[r * q->n + col] = qmm_rq_wrap(s);
            }
        unsigned int count = 0;
        qmm_cu_qord p = qord_args(q, bi, acc, 1, q->c->c.data, Y, q->sb, q->bias);
        if (!qmm_tensor_present(&q->c->c))
            p.c = NULL;
        p.n_undecided = &count;
        p.u_off = u_off;
        p.u_acc = u_acc;
        p.u_col = u_col;
        p.u_c = u_c;
        for (int64_t r = 0; r < q->m; r++)
            for (int64_t col = 0; col < q->n; col++)
                qmm_cu_qord_element(&p, r, col);
        resolve_undecided(q, p.y, count, u_off, u_acc, u_col, u_c);
    }
    rc = qmm_status_ok(st);
out:
    free(acc);
    free(u_off);
    free(u_acc);
    free(u_col);
    free(u_c);
    return rc;
}

/* ---- device ---- */



/* COL32 form, natively: D (int32 COL32, m x n) = A (COL32, m x kc) * op_T(B^T (order_b, n x kc)).
 * With d NULL only asks: *native = 0 (and success) when cuBLASLt has no algorithm for these
 * orders. With d, a form without one is an error (a later K chunk's width may differ from the
 * one asked about), as for qmm_cu_gemm_rows. */
static qmm_status_code gemm_ordered(qmm_cu_backend *cb, const qo *q, const int8_t *a,
                                    const int8_t *bt, int64_t kc, int32_t *d, int *native,
                                    qmm_status *st)
{
    const qmm_lt_gemm g = {
        CUBLAS_OP_N, CUBLAS_OP_T,
        {CUDA_R_8I, q->m, kc, 32 * q->m, QMM_ORDER_COL32, "layout of A"},
        {CUDA_R_8I, q->n, kc, qmm_lt_order_ld(q->c->order_b, q->n, q->k), q->c->order_b,
         "layout of B"},
        {CUDA_R_32I, q->m, q->n, 32 * q->m, QMM_ORDER_COL32, "layout of the accumulators"},
        "ordered int8 GEMM"};
    qmm_status_code rc = qmm_cu_lt_matmul(cb, &g, a, bt, d, native, st);
    if (rc == QMM_OK && d && !*native)
        rc = qmm_status_set(st, QMM_INTERNAL,
                            "%s: cuBLASLt has no ordered int8 algorithm for %lld x %lld x %lld",
                            cb->name, (long long)q->m, (long long)kc, (long long)q->n);
    return rc;
}

#define PAD_MN 16
#define PAD_K 32

static qmm_status_code run_device(qmm_cu_backend *cb, const qo *q, qmm_status *st)
{
    qmm_status_code rc = QMM_OK;
    cudaStream_t s = cb->stream;
    const qmm_qorderedmatmul *c = q->c;
    int64_t m = q->m, k = q->k, n = q->n;
    int64_t mp = (m + PAD_MN - 1) / PAD_MN * PAD_MN, np = (n + PAD_MN - 1) / PAD_MN * PAD_MN;
    int64_t kp = (k + PAD_K - 1) / PAD_K * PAD_K;
    size_t an = (size_t)qmm_tensor_numel(&c->a), bn = (size_t)qmm_tensor_numel(&c->b);
    size_t yn = (size_t)qmm_tensor_numel(&c->y), mn = (size_t)(m * n);
    size_t cn = qmm_tensor_present(&c->c) ? (size_t)qmm_tensor_numel(&c->c) : 0;
    int8_t *da = NULL, *db = NULL, *dy = NULL, *dc = NULL, *ap = NULL, *bt = NULL;
    int32_t *dot = NULL, *tmp = NULL, *rs = NULL, *u_acc = NULL, *u_col = NULL, *u_c = NULL;
    int64_t *u_off = NULL, *h_off = NULL;
    int32_t *h_acc = NULL, *h_col = NULL, *h_c = NULL;
    double *dsb = NULL, *dbias = NULL;
    unsigned int *dcount = NULL;
    int8_t *yhost = c->y.data;
    CU_TRY(cudaSetDevice(cb->device), "selecting the device");
    CU_TRY(cudaMalloc((void **)&da, an + 1), "A");
    CU_TRY(cudaMalloc((void **)&db, bn + 1), "B");
    CU_TRY(cudaMalloc((void **)&dy, yn + 1), "Y");
    CU_TRY(cudaMalloc((void **)&dot, (size_t)(mp * np) * sizeof *dot + 4), "accumulators");
    CU_TRY(cudaMalloc((void **)&tmp, (size_t)(mp * np) * sizeof *tmp + 4), "accumulators");
    CU_TRY(cudaMalloc((void **)&ap, (size_t)(q->batch * mp * kp) + 1), "prepared A");
    CU_TRY(cudaMalloc((void **)&bt, (size_t)(q->b_batch * np * kp) + 1), "prepared B");
    /* row sums of the prepared rows: computed by the shared kernel, unused here */
    int64_t nrows = q->batch * mp > q->b_batch * np ? q->batch * mp : q->b_batch * np;
    CU_TRY(cudaMalloc((void **)&rs, (size_t)nrows * sizeof *rs + 4), "row sums");
    CU_TRY(cudaMalloc((void **)&dsb, (size_t)n * sizeof *dsb + 8), "scale_B");
    CU_TRY(cudaMalloc((void **)&dbias, (size_t)n * sizeof *dbias + 8), "bias");
    CU_TRY(cudaMalloc((void **)&dcount, sizeof *dcount), "counter");
    CU_TRY(cudaMalloc((void **)&u_off, mn * sizeof *u_off + 8), "undecided list");
    CU_TRY(cudaMalloc((void **)&u_acc, mn * sizeof *u_acc + 4), "undecided list");
    CU_TRY(cudaMalloc((void **)&u_col, mn * sizeof *u_col + 4), "undecided list");
    CU_TRY(cudaMalloc((void **)&u_c, mn * sizeof *u_c + 4), "undecided list");
    h_off = malloc(mn * sizeof *h_off + 8);
    h_acc = malloc(mn * sizeof *h_acc + 4);
    h_col = malloc(mn * sizeof *h_col + 4);
    h_c = malloc(mn * sizeof *h_c + 4);
    if (!h_off || !h_acc || !h_col || !h_c) {
        rc = qmm_status_oom(st, cb->name, NULL);
        goto out;
    }
    if (cn)
        CU_TRY(cudaMalloc((void **)&dc, cn), "C");
    CU_TRY(cudaMemcpyAsync(da, c->a.data, an, cudaMemcpyHostToDevice, s), "copying A");
    CU_TRY(cudaMemcpyAsync(db, c->b.data, bn, cudaMemcpyHostToDevice, s), "copying B");
    if (cn)
        CU_TRY(cudaMemcpyAsync(dc, c->c.data, cn, cudaMemcpyHostToDevice, s), "copying C");
    CU_TRY(cudaMemcpyAsync(dsb, q->sb, (size_t)n * sizeof *dsb, cudaMemcpyHostToDevice, s),
           "copying scale_B");
    if (q->bias)
        CU_TRY(cudaMemcpyAsync(dbias, q->bias, (size_t)n * sizeof *dbias,
                               cudaMemcpyHostToDevice, s),
               "copying bias");

    /* Which GEMM: native ordered for the COL32 form when cuBLASLt has it, else rows. */
    int native = 0;
    if (q->col32 && k > 0) {
        /* d = NULL: ask the heuristic only */
        rc = gemm_ordered(cb, q, da, db, k < QMM_CU_KCHUNK ? k : QMM_CU_KCHUNK, NULL, &native,
                          st);
        if (rc != QMM_OK)
            goto out;
    }
    if (!native && k > 0) {
        /* rows form: A (batch x m x k) and B^T (n x k) as zero-padded rows of kp */
        if (!q->col32) {
            /* ROW A and COL B (= row-major B^T) need only padding: the signed "shift" is none */
            CU_TRY(cudaMemsetAsync(ap, 0, (size_t)(q->batch * mp * kp), s), "clearing A");
            CU_TRY(cudaMemsetAsync(bt, 0, (size_t)(q->b_batch * np * kp), s), "clearing B");
            CU_TRY(qmm_cu_launch_prep_rows((const uint8_t *)da, 1, q->batch, m, k, mp, kp, ap,
                                           rs, s),
                   "preparing A");
            CU_TRY(qmm_cu_launch_prep_rows((const uint8_t *)db, 1, q->b_batch, n, k, np, kp, bt,
                                           rs, s),
                   "preparing B");
        } else {
            CU_TRY(qmm_cu_launch_order_to_rows(da, QMM_ORDER_COL32, q->batch, m, k, mp, kp, ap,
                                               s),
                   "reordering A to ROW");
            CU_TRY(qmm_cu_launch_order_to_rows(db, c->order_b, q->b_batch, n, k, np, kp, bt, s),
                   "reordering B to ROW");
        }
    }
    for (int64_t bi = 0; bi < q->batch; bi++) {
        int row_major = !native;
        int64_t bsel = q->b_batch == 1 ? 0 : bi;
        if (k == 0) {
            CU_TRY(cudaMemsetAsync(dot, 0, (size_t)(mp * np) * sizeof *dot, s),
                   "clearing accumulators");
        } else if (native) {
            const int8_t *a = da + bi * m * k;
            for (int64_t k0 = 0; k0 < k; k0 += QMM_CU_KCHUNK) {
                int64_t kc = k - k0 < QMM_CU_KCHUNK ? k - k0 : QMM_CU_KCHUNK;
                /* a K chunk of a COL32 / tiled matrix is whole 32-column tiles: an offset */
                int nat = 1;
                rc = gemm_ordered(cb, q, a + (k0 / 32) * 32 * m,
                                  db + bsel * n * k + (k0 / 32) * qmm_lt_order_ld(c->order_b, n, k), kc,
                                  k0 == 0 ? dot : tmp, &nat, st);
                if (rc != QMM_OK)
                    goto out;
                if (k0 > 0)
                    CU_TRY(qmm_cu_launch_add(dot, tmp, m * n, s), "summing K chunks");
            }
        } else {
            for (int64_t k0 = 0; k0 < kp; k0 += QMM_CU_KCHUNK) {
                int64_t kc = kp - k0 < QMM_CU_KCHUNK ? kp - k0 : QMM_CU_KCHUNK;
                rc = qmm_cu_gemm_rows(cb, mp, np, kc, ap + bi * mp * kp + k0, kp,
                                      bt + bsel * np * kp + k0, kp,
                                      k0 == 0 ? dot : tmp, np, st);
                if (rc != QMM_OK)
                    goto out;
                if (k0 > 0)
                    CU_TRY(qmm_cu_launch_add(dot, tmp, mp * np, s), "summing K chunks");
            }
        }
        qmm_cu_qord p = qord_args(q, bi, dot, row_major, dc, dy, dsb, q->bias ? dbias : NULL);
        if (k == 0)
            p.acc_row_major = 1;
        if (p.acc_row_major)
            p.acc_ld = np;
        p.n_undecided = dcount;
        p.u_off = u_off;
        p.u_acc = u_acc;
        p.u_col = u_col;
        p.u_c = u_c;
        CU_TRY(cudaMemsetAsync(dcount, 0, sizeof *dcount, s), "clearing the counter");
        CU_TRY(qmm_cu_launch_qord_epilogue(&p, s), "epilogue");
        unsigned int count = 0;
        CU_TRY(cudaMemcpyAsync(&count, dcount, sizeof count, cudaMemcpyDeviceToHost, s),
               "reading the counter");
        /* this batch's Y comes back now; its undecided elements are decided into it on the host
         * (all on stream s: a plain cudaMemcpy would run on the legacy stream, which does not
         * wait for this non-blocking one, and a patch copied back to the device could land
         * after the final copy read it) */
        CU_TRY(cudaMemcpyAsync(yhost + bi * m * n, dy + bi * m * n, mn, cudaMemcpyDeviceToHost,
                               s),
               "copying Y back");
        CU_TRY(cudaStreamSynchronize(s), "running the epilogue");
        if (count > 0) {
            CU_TRY(cudaMemcpyAsync(h_off, u_off, count * sizeof *h_off, cudaMemcpyDeviceToHost,
                                   s),
                   "reading undecided elements");
            CU_TRY(cudaMemcpyAsync(h_acc, u_acc, count * sizeof *h_acc, cudaMemcpyDeviceToHost,
                                   s),
                   "reading undecided elements");
            CU_TRY(cudaMemcpyAsync(h_col, u_col, count * sizeof *h_col, cudaMemcpyDeviceToHost,
                                   s),
                   "reading undecided elements");
            CU_TRY(cudaMemcpyAsync(h_c, u_c, count * sizeof *h_c, cudaMemcpyDeviceToHost, s),
                   "reading undecided elements");
            CU_TRY(cudaStreamSynchronize(s), "reading undecided elements");
            resolve_undecided(q, yhost + bi * m * n, count, h_off, h_acc, h_col, h_c);
        }
    }
    CU_TRY(cudaStreamSynchronize(s), "running the call");
out:
    cudaStreamSynchronize(s);
    void *dptrs[] = {da, db, dy, dc, ap, bt, dot, tmp, rs, u_acc, u_col, u_c, u_off, dsb, dbias,
                     dcount};
    for (size_t i = 0; i < sizeof dptrs / sizeof dptrs[0]; i++)
        if (dptrs[i])
            cudaFree(dptrs[i]);
    free(h_off);
    free(h_acc);
    free(h_col);
    free(h_c);
    return rc;
}

qmm_status_code qmm_cu_qorderedmatmul(qmm_cu_backend *cb, const qmm_qorderedmatmul *c,
                                      qmm_status *st)
{
    qo q;
    memset(&q, 0, sizeof q);
    q.c = c;
    qmm_status_code rc =
        qmm_cu_qordered_shape(c, &q.batch, &q.m, &q.k, &q.n, &q.b_batch, &q.c_batch, st);
    if (rc != QMM_OK)
        return rc;
    if (q.batch == 0 || q.m == 0 || q.n == 0)
        return qmm_status_ok(st);
    q.col32 = c->order_a == QMM_ORDER_COL32;
    float f;
    memcpy(&f, c->scale_a.data, 4);
    q.sa = f;
    memcpy(&f, c->scale_y.data, 4);
    q.sy = f;
    q.sc = 1.0;
    if (qmm_tensor_present(&c->c)) {
        memcpy(&f, c->scale_c.data, 4);
        q.sc = f;
    }
    q.sb = malloc((size_t)q.n * sizeof *q.sb);
    q.bias = qmm_tensor_present(&c->bias) ? malloc((size_t)q.n * sizeof *q.bias) : NULL;
    if (!q.sb || (qmm_tensor_present(&c->bias) && !q.bias)) {
        free(q.sb);
        free(q.bias);
        return qmm_status_oom(st, cb->name, NULL);
    }
    int per_col = qmm_tensor_numel(&c->scale_b) != 1;
    for (int64_t j = 0; j < q.n; j++) {
        memcpy(&f, (const uint8_t *)c->scale_b.data + (per_col ? 4 * j : 0), 4);
        q.sb[j] = f;
        if (q.bias) {
            memcpy(&f, (const uint8_t *)c->bias.data + 4 * j, 4);
            q.bias[j] = f;
        }
    }
    if (cb->emulate) {
        rc = run_emulated(cb, &q, st);
    } else {
        pthread_mutex_lock(&cb->lock);
        rc = run_device(cb, &q, st);
        pthread_mutex_unlock(&cb->lock);
    }
    free(q.sb);
    free(q.bias);
    if (rc == QMM_OK)
        qmm_status_ok(st);
    return rc;
}
