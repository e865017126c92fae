/* qmm/ops.h — one call struct per operator.
 *
 * Input tensors follow the ONNX node's input order. The output tensor `y` arrives with its
 * dtype, rank, dims and buffer already set by the caller (shape as numpy.matmul gives it);
 * a backend checks it and fills y->data. See docs/semantics.md (installed
 * as share/doc/qmm/semantics.md) for the semantics.
 */
#ifndef QMM_OPS_H
#define QMM_OPS_H

#include "qmm/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qmm_op_kind {
    QMM_OP_NONE = 0,
    QMM_OP_MATMULINTEGER = 1,  /* ai.onnx MatMulInteger, opset 10 */
    QMM_OP_QLINEARMATMUL = 2,  /* ai.onnx QLinearMatMul, opset 10 and 21 */
    QMM_OP_QORDEREDMATMUL = 3, /* com.microsoft QOrderedMatMul */
} qmm_op_kind;

/* MatMulInteger: y (int32) = sum_k (a - a_zero_point)(b - b_zero_point), wrapped to int32.
 * Zero points are optional (dtype QMM_DTYPE_UNDEFINED when absent: 0). */
typedef struct qmm_matmulinteger {
    qmm_tensor a;
    qmm_tensor b;
    qmm_tensor a_zero_point;
    qmm_tensor b_zero_point;
    qmm_tensor y;
} qmm_matmulinteger;

/* QLinearMatMul; `opset` is the ai.onnx opset the node was written for (10 or 21) and decides
 * which type codes are valid. */
typedef struct qmm_qlinearmatmul {
    qmm_tensor a;
    qmm_tensor a_scale;
    qmm_tensor a_zero_point;
    qmm_tensor b;
    qmm_tensor b_scale;
    qmm_tensor b_zero_point;
    qmm_tensor y_scale;
    qmm_tensor y_zero_point;
    qmm_tensor y;
    int32_t opset;
} qmm_qlinearmatmul;

/* cublasLtOrder_t values used by QOrderedMatMul's order attributes. */
typedef enum qmm_order {
    QMM_ORDER_COL = 0,
    QMM_ORDER_ROW = 1,
    QMM_ORDER_COL32 = 2,
    QMM_ORDER_COL4_4R2_8C = 3,
    QMM_ORDER_COL32_2R_4R4 = 4,
} qmm_order;

/* QOrderedMatMul (com.microsoft). The reference implements it (docs/qorderedmatmul.md, installed
 * as share/doc/qmm/qorderedmatmul.md: every order, profiles spec and ort-fp32) and so does the CUDA backend; the optimized CPU backend
 * answers UNSUPPORTED. */
typedef struct qmm_qorderedmatmul {
    qmm_tensor a;
    qmm_tensor scale_a;
    qmm_tensor b;
    qmm_tensor scale_b;
    qmm_tensor scale_y;
    qmm_tensor bias;    /* optional */
    qmm_tensor c;       /* optional */
    qmm_tensor scale_c; /* optional */
    qmm_tensor y;
    int32_t order_a;
    int32_t order_b;
    int32_t order_y;
} qmm_qorderedmatmul;

/* A tagged call, used where one entry point must speak of any operator (the capability query,
 * the harness's case loader). */
typedef struct qmm_call {
    qmm_op_kind op;
    union {
        qmm_matmulinteger matmulinteger;
        qmm_qlinearmatmul qlinearmatmul;
        qmm_qorderedmatmul qorderedmatmul;
    } u;
} qmm_call;

static inline const char *qmm_op_name(qmm_op_kind op)
{
    switch (op) {
    case QMM_OP_MATMULINTEGER: return "MatMulInteger";
    case QMM_OP_QLINEARMATMUL: return "QLinearMatMul";
    case QMM_OP_QORDEREDMATMUL: return "QOrderedMatMul";
    case QMM_OP_NONE: break;
    }
    return "none";
}

#ifdef __cplusplus
}
#endif

#endif /* QMM_OPS_H */
