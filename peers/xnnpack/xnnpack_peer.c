/* peers/xnnpack/xnnpack_peer.c — qmmcheck plugin over XNNPACK's quantized fully-connected
 * operators (xnn_create_fully_connected_nc_qu8 / _qs8).
 *
 * A fully-connected operator is y = x·Wᵀ with one weight matrix baked in at creation, so only
 * QLinearMatMul with a shared b maps: a's batch dimensions flatten into rows. b is passed as
 * it lies ([K, N] row-major) with XNN_FLAG_TRANSPOSE_WEIGHTS, which tells XNNPACK the kernel is
 * already transposed. The scales go in as the three floats XNNPACK asks for; what it makes of
 * them (its own requantization, its scale limits) is passed through: see README.md.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xnnpack.h>

#include "../common/peer_call.h"

#ifndef QMM_XNNPACK_VERSION
#define QMM_XNNPACK_VERSION "unknown"
#endif

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static enum xnn_status init_status;

/* XNNPACK wants one xnn_initialize per process before any operator. */
static void init_xnnpack(void)
{
    init_status = xnn_initialize(NULL);
}

static const char *xnn_why(enum xnn_status s)
{
    switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "xnn_status_uninitialized";
    case xnn_status_invalid_parameter: return "xnn_status_invalid_parameter";
    case xnn_status_invalid_state: return "xnn_status_invalid_state";
    case xnn_status_unsupported_parameter: return "xnn_status_unsupported_parameter";
    case xnn_status_unsupported_hardware: return "xnn_status_unsupported_hardware";
    case xnn_status_out_of_memory: return "xnn_status_out_of_memory";
    }
    return "unknown xnn_status";
}

/* The types and forms a fully-connected operator can take; everything is per tensor. */
static qmm_status_code check_forms(const qmm_qlinearmatmul *q, const peer_geom *g, qmm_status *st)
{
    int32_t ta = q->a.dtype, tb = q->b.dtype, ty = q->y_zero_point.dtype;
    int u8 = ta == QMM_DTYPE_UINT8 && tb == QMM_DTYPE_UINT8 && ty == QMM_DTYPE_UINT8;
    int s8 = ta == QMM_DTYPE_INT8 && tb == QMM_DTYPE_INT8 && ty == QMM_DTYPE_INT8;
    if (!u8 && !s8)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "xnnpack: %s x %s -> %s: only uint8 x uint8 -> uint8 (qu8) and "
                              "int8 x int8 -> int8 (qs8) fully-connected operators exist",
                              qmm_dtype_name(ta), qmm_dtype_name(tb), qmm_dtype_name(ty));
    const qmm_tensor *p[6] = {&q->a_scale, &q->a_zero_point, &q->b_scale, &q->b_zero_point,
                              &q->y_scale, &q->y_zero_point};
    for (int i = 0; i < 6; i++)
        if (peer_form_of(p[i], g->n) != PEER_TENSOR)
            return qmm_status_set(st, QMM_UNSUPPORTED,
                                  "xnnpack: per-tensor parameters only (one scale and zero point "
                                  "per operator)");
    if (g->b_batched)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "xnnpack: b varies along the batch; a fully-connected operator has "
                              "one weight matrix");
    return QMM_OK;
}

static qmm_status_code xnnpack_query(const qmm_backend *self, const qmm_call *call,
                                     qmm_status *st)
{
    if (call->op != QMM_OP_QLINEARMATMUL)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "xnnpack: %s: XNNPACK's quantized fully-connected operators "
                              "requantize; there is no int32 output", qmm_op_name(call->op));
    return peer_query_qlinear(&call->u.qlinearmatmul, check_forms, st);
}

/* Creates the operator; XNNPACK's refusals of valid ONNX input become UNSUPPORTED. */
static enum xnn_status create(const qmm_qlinearmatmul *q, const peer_geom *g, const void *kernel,
                              xnn_operator_t *op)
{
    size_t k = (size_t)g->k, n = (size_t)g->n;
    float sa = peer_scale(&q->a_scale, 0), sb = peer_scale(&q->b_scale, 0);
    float sy = peer_scale(&q->y_scale, 0);
    if (q->a.dtype == QMM_DTYPE_UINT8)
        return xnn_create_fully_connected_nc_qu8(
            k, n, k, n, (uint8_t)peer_q8(&q->a_zero_point, 0), sa,
            (uint8_t)peer_q8(&q->b_zero_point, 0), sb, kernel, NULL,
            (uint8_t)peer_q8(&q->y_zero_point, 0), sy, 0, 255, XNN_FLAG_TRANSPOSE_WEIGHTS, op);
    return xnn_create_fully_connected_nc_qs8(
        k, n, k, n, (int8_t)peer_q8(&q->a_zero_point, 0), sa, sb, kernel, NULL,
        (int8_t)peer_q8(&q->y_zero_point, 0), sy, -128, 127, XNN_FLAG_TRANSPOSE_WEIGHTS, op);
}

static qmm_status_code xnnpack_qlinearmatmul(const qmm_backend *self, const qmm_qlinearmatmul *q,
                                             qmm_status *st)
{
    peer_geom g;
    qmm_status_code rc = peer_admit_qlinear(q, check_forms, &g, st);
    if (rc != QMM_OK)
        return rc;
    /* qs8 has no kernel zero point in this XNNPACK: the weights are symmetric. */
    if (q->b.dtype == QMM_DTYPE_INT8 && peer_q8(&q->b_zero_point, 0) != 0)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "xnnpack: int8 weights are symmetric in "
                              "xnn_create_fully_connected_nc_qs8 (b_zero_point %d, must be 0)",
                              peer_q8(&q->b_zero_point, 0));
    /* An empty batch leaves no weight matrix to hand over and nothing to write. */
    if (g.batch == 0)
        return qmm_status_ok(st);
    /* XNNPACK may read XNN_EXTRA_BYTES past any array it is given (xnnpack.h): the kernel and
     * the input go in as padded copies, not the harness's guarded buffers. */
    size_t rows = (size_t)(g.batch * g.m), bytes = rows * (size_t)g.k;
    size_t kbytes = (size_t)(g.k * g.n);
    unsigned char *x = calloc(bytes + XNN_EXTRA_BYTES, 1);
    unsigned char *w = calloc(kbytes + XNN_EXTRA_BYTES, 1);
    if (!x || !w) {
        free(x);
        free(w);
        return qmm_status_oom(st, "xnnpack", NULL);
    }
    if (bytes)
        memcpy(x, q->a.data, bytes);
    if (kbytes)
        memcpy(w, q->b.data, kbytes);
    xnn_operator_t op = NULL;
    enum xnn_status s = create(q, &g, w, &op);
    free(w); /* packed into the operator at creation */
    if (s != xnn_status_success) {
        free(x);
        float ratio = peer_scale(&q->a_scale, 0) * peer_scale(&q->b_scale, 0) /
                      peer_scale(&q->y_scale, 0);
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "xnnpack: XNNPACK %s refuses K=%lld N=%lld sa*sb/sy=%.9g: %s "
                              "(README.md: K, N >= 1, scales normal, sa*sb/sy < 256)",
                              QMM_XNNPACK_VERSION, (long long)g.k, (long long)g.n, ratio,
                              xnn_why(s));
    }
    if (q->a.dtype == QMM_DTYPE_UINT8)
        s = xnn_setup_fully_connected_nc_qu8(op, rows, x, q->y.data, NULL);
    else
        s = xnn_setup_fully_connected_nc_qs8(op, rows, (const int8_t *)x, q->y.data, NULL);
    if (s == xnn_status_success)
        s = xnn_run_operator(op, NULL);
    xnn_delete_operator(op);
    free(x);
    if (s != xnn_status_success)
        return qmm_status_set(st, QMM_INTERNAL, "xnnpack: setup/run failed: %s", xnn_why(s));
    return qmm_status_ok(st);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!peer_open_check("xnnpack", harness_abi, options, st))
        return NULL;
    pthread_once(&init_once, init_xnnpack);
    if (init_status != xnn_status_success) {
        qmm_status_set(st, QMM_UNSUPPORTED, "xnnpack: xnn_initialize failed: %s",
                       xnn_why(init_status));
        return NULL;
    }
    return peer_qlinear_table("xnnpack",
                              "XNNPACK " QMM_XNNPACK_VERSION
                              " quantized fully-connected (qu8, qs8), no threadpool",
                              xnnpack_query, xnnpack_qlinearmatmul, st);
}
