/* optimized/cuda/lt.h — the cuBLASLt set-up the CUDA code shares, written once: a matrix as
 * cuBLASLt sees it (type, shape, leading dimension, order), the leading dimension each order
 * needs, a layout made from it, and a reordering (cublasLtMatrixTransform). The backend's
 * GEMMs (qmm_cu_lt_matmul, matmul.c, for qmm_cu_gemm_rows and QOrderedMatMul's ordered form)
 * and the layout check (layout_check.c, which links no backend) build on these.
 *
 * Header-only C over cublasLt.h, so the layout check needs nothing else. */
#ifndef QMM_CUDA_LT_H
#define QMM_CUDA_LT_H

#include <stdint.h>

#include <cublasLt.h>

#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt's default order: column-major, the order attribute left unset. */
#define QMM_LT_DEFAULT_ORDER (-1)

/* A matrix as cuBLASLt sees it. */
typedef struct qmm_lt_matrix {
    cudaDataType type;
    int64_t rows, cols, ld;
    int32_t order;    /* a qmm_order (cublasLtOrder_t's values), or QMM_LT_DEFAULT_ORDER */
    const char *what; /* the step that makes its layout, for messages ("layout of A") */
} qmm_lt_matrix;

/* Leading dimension of a rows x cols matrix in qmm_order `order` (cublasLt.h's definitions). */
static inline int64_t qmm_lt_order_ld(int32_t order, int64_t rows, int64_t cols)
{
    switch (order) {
    case QMM_ORDER_COL: return rows;
    case QMM_ORDER_ROW: return cols;
    case QMM_ORDER_COL32: return 32 * rows;
    case QMM_ORDER_COL4_4R2_8C: return 32 * ((rows + 7) / 8 * 8);
    default: return 32 * ((rows + 31) / 32 * 32);
    }
}

/* *l for matrix m; the caller destroys a non-NULL *l, whatever the answer. */
static inline cublasStatus_t qmm_lt_layout(cublasLtMatrixLayout_t *l, const qmm_lt_matrix *m)
{
    cublasStatus_t e = cublasLtMatrixLayoutCreate(l, m->type, (uint64_t)m->rows,
                                                  (uint64_t)m->cols, m->ld);
    if (e == CUBLAS_STATUS_SUCCESS && m->order != QMM_LT_DEFAULT_ORDER)
        e = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_ORDER, &m->order,
                                             sizeof m->order);
    return e;
}

/* Destroys a layout qmm_lt_layout made (none: NULL). */
static inline void qmm_lt_layout_destroy(cublasLtMatrixLayout_t l)
{
    if (l)
        cublasLtMatrixLayoutDestroy(l);
}

/* dst (laid out as `to`) = src (laid out as `from`), by cublasLtMatrixTransform on `stream`;
 * on failure *what names the step that failed (`step` for the transform itself). */
static inline cublasStatus_t qmm_lt_transform(cublasLtHandle_t lt, cudaStream_t stream,
                                              const void *src, const qmm_lt_matrix *from,
                                              void *dst, const qmm_lt_matrix *to,
                                              const char *step, const char **what)
{
    cublasLtMatrixTransformDesc_t td = NULL;
    cublasLtMatrixLayout_t ls = NULL, ld = NULL;
    float one = 1.0f, zero = 0.0f;
    *what = "transform descriptor";
    cublasStatus_t e = cublasLtMatrixTransformDescCreate(&td, CUDA_R_32F);
    if (e == CUBLAS_STATUS_SUCCESS) {
        *what = from->what;
        e = qmm_lt_layout(&ls, from);
    }
    if (e == CUBLAS_STATUS_SUCCESS) {
        *what = to->what;
        e = qmm_lt_layout(&ld, to);
    }
    if (e == CUBLAS_STATUS_SUCCESS) {
        *what = step;
        e = cublasLtMatrixTransform(lt, td, &one, src, ls, &zero, NULL, NULL, dst, ld, stream);
    }
    qmm_lt_layout_destroy(ld);
    qmm_lt_layout_destroy(ls);
    if (td)
        cublasLtMatrixTransformDescDestroy(td);
    return e;
}

/* One integer GEMM: d = op(ta, a) * op(tb, b), int32 compute and result (qmm_cu_lt_matmul). */
typedef struct qmm_lt_gemm {
    cublasOperation_t ta, tb;
    qmm_lt_matrix a, b, d;
    const char *what; /* the GEMM, for messages ("int8 GEMM") */
} qmm_lt_gemm;

#ifdef __cplusplus
}
#endif

#endif /* QMM_CUDA_LT_H */
