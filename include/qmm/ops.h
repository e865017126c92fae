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
    QMM_OP_MATMULNBITS = 4,    /* com.microsoft MatMulNBits (weight-only 2/4/8-bit) */
    QMM_OP_DEQUANTIZELINEAR = 5, /* ai.onnx DequantizeLinear, opset 21 and later */
    QMM_OP_DYNAMICQUANTIZEMATMUL = 6, /* com.microsoft DynamicQuantizeMatMul */
    QMM_OP_MATMUL_INTEGER_TO_FLOAT = 7, /* com.microsoft MatMulIntegerToFloat */
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
 * as share/doc/qmm/qorderedmatmul.md: every order, profiles spec and ort-fp32), and so do the CUDA
 * backend and the optimized CPU backend (spec). */
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

/* MatMulNBits (com.microsoft): y = a · dequantize(b)ᵀ + bias, b's codes `bits` wide packed low
 * bits first in uint8 blobs of shape [N, ceil(K / block_size), block_size * bits / 8], one
 * scale (and zero point) per block (docs/semantics.md §8). A float output: judged by the
 * reference's accepted intervals (qmm_ref_accept), not bit for bit. */
typedef struct qmm_matmulnbits {
    qmm_tensor a;           /* T1: float, float16 or bfloat16, [..., K] */
    qmm_tensor b;           /* uint8 [N, k_blocks, blob_size] */
    qmm_tensor scales;      /* T1 [N, k_blocks] or [N * k_blocks] */
    qmm_tensor zero_points; /* optional: uint8 packed, or T1 unpacked */
    qmm_tensor g_idx;       /* optional, deprecated: int32 [K] */
    qmm_tensor bias;        /* optional: T1 [N] */
    qmm_tensor y;           /* T1 [..., N] */
    int32_t k, n, bits, block_size, accuracy_level;
} qmm_matmulnbits;

/* DequantizeLinear (ai.onnx, opset 21 and later): y = (x - x_zero_point) · x_scale rounded
 * once to y's type; per tensor, per axis or blocked along `axis` (docs/semantics.md §9). */
typedef struct qmm_dequantizelinear {
    qmm_tensor x;
    qmm_tensor x_scale;
    qmm_tensor x_zero_point; /* optional */
    qmm_tensor y;
    int32_t opset;
    int32_t axis, block_size, output_dtype;
} qmm_dequantizelinear;

/* DynamicQuantizeMatMul (com.microsoft): a (float) quantized per tensor to uint8 as
 * DynamicQuantizeLinear does, an exact integer product with b, then a float epilogue
 * (docs/semantics.md §10). */
typedef struct qmm_dynamicquantizematmul {
    qmm_tensor a;            /* float */
    qmm_tensor b;            /* int8 or uint8 */
    qmm_tensor b_scale;      /* float: per tensor or per column [N] */
    qmm_tensor b_zero_point; /* optional: b's type, b_scale's shape */
    qmm_tensor bias;         /* optional: float [N] */
    qmm_tensor y;            /* float */
} qmm_dynamicquantizematmul;

/* MatMulIntegerToFloat (com.microsoft): an exact integer product, then the float epilogue of
 * DynamicQuantizeMatMul (docs/semantics.md §10). */
typedef struct qmm_matmul_integer_to_float {
    qmm_tensor a;            /* int8 or uint8 */
    qmm_tensor b;            /* int8 or uint8 */
    qmm_tensor a_scale;      /* T3 (float, float16): per tensor */
    qmm_tensor b_scale;      /* T3: per tensor or per column [N] */
    qmm_tensor a_zero_point; /* optional: a's type, per tensor */
    qmm_tensor b_zero_point; /* optional: b's type, b_scale's shape */
    qmm_tensor bias;         /* optional: T3 [N] */
    qmm_tensor y;            /* T3 */
} qmm_matmul_integer_to_float;

/* A tagged call, used where one entry point must speak of any operator (the capability query,
 * the harness's case loader). */
typedef struct qmm_call {
    qmm_op_kind op;
    union {
        qmm_matmulinteger matmulinteger;
        qmm_qlinearmatmul qlinearmatmul;
        qmm_qorderedmatmul qorderedmatmul;
        qmm_matmulnbits matmulnbits;
        qmm_dequantizelinear dequantizelinear;
        qmm_dynamicquantizematmul dynamicquantizematmul;
        qmm_matmul_integer_to_float matmul_integer_to_float;
    } u;
} qmm_call;

static inline const char *qmm_op_name(qmm_op_kind op)
{
    switch (op) {
    case QMM_OP_MATMULINTEGER: return "MatMulInteger";
    case QMM_OP_QLINEARMATMUL: return "QLinearMatMul";
    case QMM_OP_QORDEREDMATMUL: return "QOrderedMatMul";
    case QMM_OP_MATMULNBITS: return "MatMulNBits";
    case QMM_OP_DEQUANTIZELINEAR: return "DequantizeLinear";
    case QMM_OP_DYNAMICQUANTIZEMATMUL: return "DynamicQuantizeMatMul";
    case QMM_OP_MATMUL_INTEGER_TO_FLOAT: return "MatMulIntegerToFloat";
    case QMM_OP_NONE: break;
    }
    return "none";
}

#ifdef __cplusplus
}
#endif

#endif /* QMM_OPS_H */
