/* optimized/cuda/backend.c — the CUDA backend as a qmm_backend table: options, device
 * discovery, the capability query, and the per-backend device state (stream, cuBLASLt handle,
 * workspace).
 *
 * No device is a first-class answer, not an error: the open succeeds and every query says
 * UNSUPPORTED "no CUDA device", so a harness built with CUDA runs every suite (SKIPPED) on a
 * machine without a GPU or without a driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimized/cuda/cuda_internal.h"

/* cuBLASLt workspace: enough for its split-K and stream-K int8 algorithms. */
#define QMM_CU_WORKSPACE ((size_t)32 << 20)

static qmm_status_code cu_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const qmm_cu_backend *cb = self->impl;
    if (call->op != QMM_OP_QLINEARMATMUL && call->op != QMM_OP_MATMULINTEGER &&
        call->op != QMM_OP_QORDEREDMATMUL)
        return qmm_status_no_operator(st, cb->name, call->op);
    if (cb->missing)
        return qmm_status_because(st, QMM_UNSUPPORTED, cb->name, cb->missing);
    /* validation belongs to the operator call: invalid input is still "supported" */
    return qmm_status_ok(st);
}

qmm_cu_backend *qmm_cu_from_backend(const qmm_backend *be)
{
    return be && be->query == cu_query ? be->impl : NULL;
}

static qmm_status_code check_runnable(const qmm_cu_backend *cb, qmm_status *st)
{
    if (cb->missing)
        return qmm_status_because(st, QMM_UNSUPPORTED, cb->name, cb->missing);
    return QMM_OK;
}

/* The table's operator functions: UNSUPPORTED (why) without a usable device, else the
 * operator's pipeline (matmul.c, qordered.c). */
#define CU_OPERATOR(op, call_type)                                                            \
    static qmm_status_code cu_##op(const qmm_backend *self, const call_type *c, qmm_status *st) \
    {                                                                                          \
        qmm_cu_backend *cb = self->impl;                                                       \
        if (check_runnable(cb, st) != QMM_OK)                                                  \
            return QMM_UNSUPPORTED;                                                            \
        return qmm_cu_##op(cb, c, st);                                                         \
    }
CU_OPERATOR(qlinearmatmul, qmm_qlinearmatmul)
CU_OPERATOR(matmulinteger, qmm_matmulinteger)
CU_OPERATOR(qorderedmatmul, qmm_qorderedmatmul)

static void release_device(qmm_cu_backend *cb)
{
    qmm_cu_lt_plans_release(cb);
    if (cb->workspace)
        cudaFree(cb->workspace);
    if (cb->lt)
        cublasLtDestroy(cb->lt);
    if (cb->stream)
        cudaStreamDestroy(cb->stream);
    if (cb->side)
        cudaStreamDestroy(cb->side);
    for (int i = 0; i < QMM_CU_SLABS_MAX; i++)
        if (cb->slab_done[i])
            cudaEventDestroy(cb->slab_done[i]);
    if (cb->side_done)
        cudaEventDestroy(cb->side_done);
    memset(cb->slab_done, 0, sizeof cb->slab_done);
    cb->side_done = NULL;
    cb->workspace = NULL;
    cb->lt = NULL;
    cb->stream = NULL;
    cb->side = NULL;
}

static void cu_close(qmm_backend *self)
{
    if (!self)
        return;
    qmm_cu_backend *cb = self->impl;
    if (!cb->emulate && !cb->missing) {
        cudaSetDevice(cb->device);
        release_device(cb);
    }
    if (cb->have_lock)
        pthread_mutex_destroy(&cb->lock);
    free(cb);
}

/* key=value options; returns QMM_OK or INVALID_ARGUMENT with the offending option named. */
static qmm_status_code parse_options(const char *options, int *device, int *emulate,
                                     int *slabs, qmm_status *st)
{
    qmm_option o;
    long val;
    for (const char *p = options; qmm_option_next(&p, &o);) {
        if (qmm_option_is(&o, "device")) {
            if (!qmm_option_int(&o, 0, 1023, &val))
                return qmm_option_refuse(st, &o, "device must be 0..1023");
            *device = (int)val;
        } else if (qmm_option_is(&o, "emulate")) {
            if (!qmm_option_int(&o, 0, 1, &val))
                return qmm_option_refuse(st, &o, "emulate must be 0 or 1");
            *emulate = (int)val;
        } else if (qmm_option_is(&o, "slabs")) {
            if (!qmm_option_int(&o, 0, QMM_CU_SLABS_MAX, &val))
                return qmm_option_refuse(st, &o, "slabs must be 0..16");
            *slabs = (int)val;
        } else {
            return qmm_option_refuse(st, &o,
                                     "unknown (the cuda backend accepts device=N, emulate=0|1, "
                                     "slabs=0..16)");
        }
    }
    return QMM_OK;
}

/* The slabs' second stream, at the device's highest priority (its epilogue blocks are then
 * scheduled ahead of the GEMM's waiting ones), and their events. */
static cudaError_t open_slab_streams(qmm_cu_backend *cb)
{
    int least = 0, greatest = 0;
    cudaError_t e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithPriority(&cb->side, cudaStreamNonBlocking, greatest);
    for (int i = 0; i < cb->slabs && e == cudaSuccess; i++)
        e = cudaEventCreateWithFlags(&cb->slab_done[i], cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&cb->side_done, cudaEventDisableTiming);
    return e;
}

/* Sets cb->missing when no device can run; otherwise creates the stream, handle, workspace. */
static qmm_status_code open_device(qmm_cu_backend *cb, qmm_status *st)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        /* the harness greps for "no CUDA device"; the runtime's words say why */
        snprintf(cb->missing_buf, sizeof cb->missing_buf, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "the runtime reports 0 devices");
        cb->missing = cb->missing_buf;
        cudaGetLastError(); /* clear the sticky-free error so later runtime calls start clean */
        return QMM_OK;
    }
    if (cb->device >= count) {
        snprintf(cb->missing_buf, sizeof cb->missing_buf,
                 "no CUDA device %d (this machine has %d)", cb->device, count);
        cb->missing = cb->missing_buf;
        return QMM_OK;
    }
    qmm_status_code rc = QMM_OK;
    if ((e = cudaSetDevice(cb->device)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaMalloc(&cb->workspace, QMM_CU_WORKSPACE)) != cudaSuccess ||
        (cb->slabs > 1 && (e = open_slab_streams(cb)) != cudaSuccess)) {
        rc = qmm_cu_fail_cuda(cb, e, "initialising the device", st);
    } else {
        cublasStatus_t le = cublasLtCreate(&cb->lt);
        if (le != CUBLAS_STATUS_SUCCESS)
            rc = qmm_cu_fail_lt(cb, le, "creating the cuBLASLt handle", st);
    }
    if (rc != QMM_OK) {
        release_device(cb);
        return rc;
    }
    cb->workspace_size = QMM_CU_WORKSPACE;
    return QMM_OK;
}

qmm_backend *qmm_cuda_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("cuda", harness_abi, st))
        return NULL;
    int device = 0, emulate = 0, slabs = 0;
    if (parse_options(options, &device, &emulate, &slabs, st) != QMM_OK)
        return NULL;
    qmm_cu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) {
        qmm_status_oom(st, "cuda", NULL);
        return NULL;
    }
    cb->device = device;
    cb->emulate = emulate;
    cb->slabs = slabs > 1 ? slabs : 0;
    /* the name holds every option that is not the default, so reports tell runs apart */
    char opts[48] = "";
    if (emulate)
        snprintf(opts, sizeof opts, "emulate=1");
    else if (device != 0)
        snprintf(opts, sizeof opts, "device=%d", device);
    if (cb->slabs)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%sslabs=%d",
                 opts[0] ? "," : "", cb->slabs);
    snprintf(cb->name, sizeof cb->name, "cuda%s%s", opts[0] ? ":" : "", opts);
    if (pthread_mutex_init(&cb->lock, NULL) != 0) {
        free(cb);
        qmm_status_set(st, QMM_INTERNAL, "cuda: cannot create a mutex");
        return NULL;
    }
    cb->have_lock = 1;
    if (!emulate && open_device(cb, st) != QMM_OK) {
        pthread_mutex_destroy(&cb->lock);
        free(cb);
        return NULL;
    }
    if (emulate) {
        snprintf(cb->description, sizeof cb->description,
                 "CUDA backend, emulated on the host (its parameter flattening, int8 shift, "
                 "zero-point algebra and exact epilogue; a loop for the GEMM), profile spec");
    } else if (cb->missing) {
        snprintf(cb->description, sizeof cb->description,
                 "CUDA backend (cuBLASLt int8 GEMM + exact epilogue); UNSUPPORTED here: %s",
                 cb->missing);
    } else {
        struct cudaDeviceProp prop;
        memset(&prop, 0, sizeof prop);
        cudaGetDeviceProperties(&prop, device);
        snprintf(cb->description, sizeof cb->description,
                 "CUDA backend on device %d (%.100s, sm_%d%d): cuBLASLt int8 GEMM + exact "
                 "epilogue, profile spec",
                 device, prop.name, prop.major, prop.minor);
    }
    qmm_backend *be = &cb->table;
    qmm_backend_init(be, cb->name, cb->description, cb);
    be->query = cu_query;
    be->matmulinteger = cu_matmulinteger;
    be->qlinearmatmul = cu_qlinearmatmul;
    be->qorderedmatmul = cu_qorderedmatmul;
    be->close = cu_close;
    qmm_status_ok(st);
    return be;
}
