/* optimized/cuda/cuda_internal.h — what the CUDA backend's own files share (host C and the
 * kernel launchers in kernels.cu). Not part of the operator interface. */
#ifndef QMM_CUDA_INTERNAL_H
#define QMM_CUDA_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "optimized/cuda/epilogue.h"
#include "optimized/cuda/lt.h"
#include "optimized/qmm_cuda.h"
#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One GEMM form cuBLASLt was asked about (qmm_cu_lt_matmul): its descriptors and the
 * heuristic's answer, kept so that a call of the same form creates and asks nothing again. */
typedef struct qmm_cu_lt_plan {
    int used;
    qmm_lt_gemm key;               /* its `what` strings are not part of the key */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    int found;                     /* 0: cuBLASLt has no algorithm for this form */
    cublasLtMatmulAlgo_t algo;
} qmm_cu_lt_plan;

/* Forms kept per backend, replaced oldest first. */
#define QMM_CU_LT_PLANS 16

/* Column slabs (option slabs=S): a batch's GEMM runs in S slabs of columns on the stream, and
 * each slab's epilogue on a second, higher-priority stream once that slab's GEMM is done, so
 * that one slab's epilogue can run beside the next slab's GEMM (matmul.c, stage_slabs). */
#define QMM_CU_SLABS_MAX 16
#define QMM_CU_SLAB_ALIGN 256 /* a device slab's columns: a multiple of this */

typedef struct qmm_cu_backend {
    qmm_backend table;
    int emulate;
    int device;
    const char *missing;     /* non-NULL: nothing can run, and why */
    char missing_buf[192];
    pthread_mutex_t lock;    /* device calls one at a time: one stream, handle, workspace */
    int have_lock;
    cudaStream_t stream;
    int slabs;               /* option slabs=S: 0 or 1, none */
    cudaStream_t side;       /* the slabs' epilogues (higher priority than `stream`) */
    cudaEvent_t slab_done[QMM_CU_SLABS_MAX]; /* slab s's GEMM done (on `stream`) */
    cudaEvent_t side_done;   /* the epilogues so far done (on `side`) */
    cublasLtHandle_t lt;
    void *workspace;
    size_t workspace_size;
    qmm_cu_lt_plan lt_plans[QMM_CU_LT_PLANS]; /* under `lock` */
    unsigned int lt_next;                     /* the slot the next new form replaces */
    char name[64];
    char description[256];
} qmm_cu_backend;

/* The backend behind `be`, or NULL when `be` is not a cuda backend. */
qmm_cu_backend *qmm_cu_from_backend(const qmm_backend *be);

/* K per GEMM: |sum of 65536 int8 products| <= 2^30, so every GEMM's int32 result is exact
 * whatever cuBLASLt does on overflow; longer K is split and summed modulo 2^32 by us. */
#define QMM_CU_KCHUNK 65536

/* ---- kernel launchers (kernels.cu); each returns cudaGetLastError() after the launch ---- */

/* 1 when the environment holds QMM_CUDA_SCALAR_KERNELS (not empty or "0"): the launchers then
 * use the first, one-byte-a-thread kernels instead of the word-wide ones (prep_rows16,
 * prep_cols4, epilogue4), for comparing the two on a device. Both compute the same bytes. */
int qmm_cu_scalar_kernels(void);

/* nmat matrices of rows x k uint8/int8 (row-major, contiguous) -> int8 rows_p x kp (the shift
 * of epilogue.h, zero padded), rowsum[mat * rows + r] = sum_k a' mod 2^32 (rows < `rows`).
 * 16 bytes a thread where k and kp are multiples of 16 and src, dst 16-byte aligned; else one
 * byte a thread. (The same holds for the launchers below: each checks what its word-wide
 * kernel needs and falls back to the one-byte kernel.) */
cudaError_t qmm_cu_launch_prep_rows(const uint8_t *src, int is_signed, int64_t nmat,
                                    int64_t rows, int64_t k, int64_t rows_p, int64_t kp,
                                    int8_t *dst, int32_t *rowsum, cudaStream_t s);

/* nmat matrices of k x n (row-major) -> transposed int8 n_p x kp, zero padded, colsum[mat * n
 * + j] = sum_k b' mod 2^32; colsum must be zeroed first (atomic, order-free integer sums). */
cudaError_t qmm_cu_launch_prep_cols(const uint8_t *src, int is_signed, int64_t nmat,
                                    int64_t k, int64_t n, int64_t n_p, int64_t kp, int8_t *dst,
                                    int32_t *colsum, cudaStream_t s);

/* nmat matrices of rows x cols int8 in cublasLt order `order` (qmm_cu_order_offset; matrix mat
 * at src + mat * rows * cols) -> ROW matrices of rows_p x ld (matrix mat at dst + mat * rows_p *
 * ld), zero padded. Used where cuBLASLt has no GEMM for the ordered layouts (Hopper has none for
 * COL32 / COL4_4R2_8C / COL32_2R_4R4, and its cublasLtMatrixTransform refused those orders as
 * a source with NOT_SUPPORTED on an H100, 2026-11-28). */
cudaError_t qmm_cu_launch_order_to_rows(const int8_t *src, int order, int64_t nmat, int64_t rows,
                                        int64_t cols, int64_t rows_p, int64_t ld, int8_t *dst,
                                        cudaStream_t s);

/* d[i] += t[i] modulo 2^32, i < count */
cudaError_t qmm_cu_launch_add(int32_t *d, const int32_t *t, int64_t count, cudaStream_t s);

/* qmm_cu_epi_element for every i < p->m, j < p->n */
cudaError_t qmm_cu_launch_epilogue(const qmm_cu_epi *p, cudaStream_t s);

/* qmm_cu_qord_element for every r < p->m, c < p->n */
cudaError_t qmm_cu_launch_qord_epilogue(const qmm_cu_qord *p, cudaStream_t s);

/* ---- host helpers (matmul.c) ---- */

/* Maps a CUDA / cuBLASLt failure onto a status (OUT_OF_MEMORY for allocation failures). */
qmm_status_code qmm_cu_fail_cuda(const qmm_cu_backend *cb, cudaError_t e, const char *what,
                                 qmm_status *st);
qmm_status_code qmm_cu_fail_lt(const qmm_cu_backend *cb, cublasStatus_t e, const char *what,
                               qmm_status *st);

/* In a function with `qmm_status_code rc`, `cb`, `st` and an `out:` label: on failure of a CUDA
 * (CU_TRY) or cuBLASLt (LT_TRY) call, rc = the status naming `what`, and goto out. */
#define QMM_CU_TRY(type, ok, fail, call, what)                                                \
    do {                                                                                    \
        type try_e_ = (call);                                                               \
        if (try_e_ != (ok)) {                                                               \
            rc = fail(cb, try_e_, what, st);                                                \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)
#define CU_TRY(call, what) QMM_CU_TRY(cudaError_t, cudaSuccess, qmm_cu_fail_cuda, call, what)
#define LT_TRY(call, what)                                                                  \
    QMM_CU_TRY(cublasStatus_t, CUBLAS_STATUS_SUCCESS, qmm_cu_fail_lt, call, what)

/* One cuBLASLt integer GEMM g (lt.h) on the backend's handle, workspace and stream: d = op(a) *
 * op(b), alpha 1, beta 0. *found = 0 (and QMM_OK) when cuBLASLt has no algorithm for it (the
 * heuristic finds none or answers NOT_SUPPORTED); with d NULL only the heuristic is asked.
 * Descriptors and the heuristic's answer are kept per form (cb->lt_plans); the caller holds
 * cb->lock. */
qmm_status_code qmm_cu_lt_matmul(qmm_cu_backend *cb, const qmm_lt_gemm *g, const void *a,
                                 const void *b, int32_t *d, int *found, qmm_status *st);

/* Destroys every kept form's descriptors (backend close). */
void qmm_cu_lt_plans_release(qmm_cu_backend *cb);

/* D[i][j] = sum_{k < kk} X[i][k] * W[j][k] (int32), all row-major: X is m x kk int8 (row
 * stride ldx), W is n x kk int8 (row stride ldw), D is m x n (row stride ldd). This is
 * cuBLASLt's "TN" int8 form (the one its int8 tensor-core kernels take) read column-major:
 * D^T = op_T(W) * X. kk <= QMM_CU_KCHUNK; dims, strides and pointers 16-byte aligned. */
qmm_status_code qmm_cu_gemm_rows(qmm_cu_backend *cb, int64_t m, int64_t n, int64_t kk,
                                 const int8_t *x, int64_t ldx, const int8_t *w, int64_t ldw,
                                 int32_t *d, int64_t ldd, qmm_status *st);

qmm_status_code qmm_cu_qlinearmatmul(qmm_cu_backend *cb, const qmm_qlinearmatmul *c,
                                     qmm_status *st);
qmm_status_code qmm_cu_matmulinteger(qmm_cu_backend *cb, const qmm_matmulinteger *c,
                                     qmm_status *st);

/* ---- QOrderedMatMul (qordered.c) ---- */

/* Validates with the shared rules (ops/, qmm_validate_qorderedmatmul); on success the batch,
 * M, K, N and B's and C's batches (1 or A's; C's 0 when absent). */
qmm_status_code qmm_cu_qordered_shape(const qmm_qorderedmatmul *c, int64_t *batch, int64_t *m,
                                      int64_t *k, int64_t *n, int64_t *b_batch,
                                      int64_t *c_batch, qmm_status *st);
qmm_status_code qmm_cu_qorderedmatmul(qmm_cu_backend *cb, const qmm_qorderedmatmul *c,
                                      qmm_status *st);

#ifdef __cplusplus
}
#endif

#endif /* QMM_CUDA_INTERNAL_H */
