/* reference/qmm_reference.h — the exact reference backend and the shape/parameter rules it
 * shares with the optimized backend and the harness (docs/semantics.md).
 *
 * Deliberately simple: int64 accumulation, GMP rationals for requantization. Speed is not a
 * goal; being obviously right is.
 */
#ifndef QMM_REFERENCE_H
#define QMM_REFERENCE_H

#include <stdint.h>

#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- numpy.matmul geometry (docs/semantics.md §1) -------------------------------------------- */

typedef struct qmm_geometry {
    int64_t m, k, n;
    int64_t batch;                        /* product of the broadcast batch dims (may be 0) */
    int32_t batch_rank;                   /* rank of the broadcast batch shape */
    int64_t batch_dims[QMM_MAX_RANK];
    /* a and b after 1-D promotion, left-padded with 1s to batch_rank + 2 */
    int64_t a_dims[QMM_MAX_RANK + 2];
    int64_t b_dims[QMM_MAX_RANK + 2];
    int32_t y_rank;                       /* output shape, promotion dims removed */
    int64_t y_dims[QMM_MAX_RANK];
} qmm_geometry;

/* Applies §2.1 to a and b. Errors (QMM_INVALID_ARGUMENT) name the input and the rule:
 * "a: rank 0 is invalid", "b: K mismatch: a has K=3, b has K=4",
 * "a, b: batch dims do not broadcast (dim 0: 2 vs 3)"; element counts that overflow int64
 * and output ranks above QMM_MAX_RANK are rejected as well. */
qmm_status_code qmm_matmul_geometry(const qmm_tensor *a, const qmm_tensor *b, qmm_geometry *g,
                                    qmm_status *st);

/* Element offset of the first element of matrix `batch_index` (0 .. g->batch-1, row-major
 * over the broadcast batch shape) in a and in b. */
int64_t qmm_geometry_a_offset(const qmm_geometry *g, int64_t batch_index);
int64_t qmm_geometry_b_offset(const qmm_geometry *g, int64_t batch_index);

/* ---- quantization parameters (docs/semantics.md §2.2) ---------------------------------------- */

typedef enum qmm_param_role {
    QMM_PARAM_A = 0, /* per-tensor or per-row of a */
    QMM_PARAM_B = 1, /* per-tensor or per-column of b */
    QMM_PARAM_Y = 2, /* per-tensor or broadcastable to y */
} qmm_param_role;

/* Where each output element finds its parameter: offset = sum of strides times the output
 * coordinate (batch coordinates over the broadcast batch shape, then i, then j). A stride of
 * 0 means "does not vary". Per-tensor parameters have all strides 0. */
typedef struct qmm_param_map {
    int32_t batch_rank;
    int64_t batch_stride[QMM_MAX_RANK];
    int64_t row_stride;
    int64_t col_stride;
} qmm_param_map;

/* Checks a parameter's shape against its role and builds its map. `name` ("a_scale",
 * "b_zero_point", ...) is used in the error message. */
qmm_status_code qmm_param_map_build(const qmm_tensor *param, const char *name,
                                    qmm_param_role role, const qmm_tensor *operand,
                                    const qmm_geometry *g, qmm_param_map *map, qmm_status *st);

/* Offset of the parameter element for output element (batch_index, i, j). */
int64_t qmm_param_offset(const qmm_param_map *map, const qmm_geometry *g, int64_t batch_index,
                         int64_t i, int64_t j);

/* Decodes a scale element exactly (float, float16 — subnormals included — or bfloat16) to the
 * double holding the same value. */
double qmm_scale_decode(int32_t dtype, const void *data, int64_t index);

/* ---- validation ----------------------------------------------------------------------- */

/* Full validation of a call against docs/semantics.md §2.5 / §3, including the shape of y. On
 * success fills the geometry. QMM_UNSUPPORTED for valid calls the reference does not compute yet
 * (float8 types). */
qmm_status_code qmm_validate_qlinearmatmul(const qmm_qlinearmatmul *c, qmm_geometry *g,
                                           qmm_status *st);
qmm_status_code qmm_validate_matmulinteger(const qmm_matmulinteger *c, qmm_geometry *g,
                                           qmm_status *st);

/* ---- QOrderedMatMul (docs/semantics.md §4, docs/qorderedmatmul.md) --------------------------- */

/* Element offset of (r, c) in a rows x cols matrix stored in cublasLt order `order`
 * (qmm_order: COL, ROW, COL32, COL4_4R2_8C, COL32_2R_4R4), by the formulas of docs/semantics.md
 * §4.2 (COL4_4R2_8C and COL32_2R_4R4 pad rows to 8 / 32 in the leading dimension). -1 for an
 * unknown order or (r, c) outside the matrix. */
int64_t qmm_order_offset(int order, int64_t rows, int64_t cols, int64_t r, int64_t c);

/* Y's shape from A and B alone: A's shape with its last dim replaced by N (B is logically
 * [K,N] or [batch,K,N]). QMM_INVALID_ARGUMENT when the ranks or K do not fit. */
qmm_status_code qmm_qordered_y_shape(const qmm_tensor *a, const qmm_tensor *b, int32_t *rank,
                                     int64_t dims[QMM_MAX_RANK], qmm_status *st);

/* Full validation of a call (orders, combination, types, shapes, tiles, scales). */
qmm_status_code qmm_validate_qorderedmatmul(const qmm_qorderedmatmul *c, qmm_status *st);

/* ---- the reference computation -------------------------------------------------------- */

/* Computes call->y exactly under the `spec` profile (any of the three operators; for
 * QOrderedMatMul y is written in order_Y's layout). When `y_wrapped` is not NULL it must have
 * y's dtype, shape and size; it receives the result computed from the int32-wrapped
 * accumulator (identical to y where the exact acc fits int32), and *any_overflow is set to 1
 * when some element's exact accumulator does not fit int32. For MatMulInteger the wrapped
 * sum is the only result and y_wrapped, if given, equals y. */
qmm_status_code qmm_ref_compute(qmm_call *call, qmm_tensor *y_wrapped, int *any_overflow,
                                qmm_status *st);

/* Everything the harness prints about one output element. */
typedef struct qmm_ref_element {
    int64_t acc;          /* exact sum_k (a - za)(b - zb) */
    int overflow;         /* acc does not fit int32 */
    int64_t expected;     /* the spec result */
    int64_t wrapped;      /* the result from the int32-wrapped acc (== expected unless overflow) */
    char scaled[160];     /* QLinearMatMul: sa*sb*acc/sy exactly, as a decimal ("3.5",
                           * "-0.333333333333333333333...") ; QOrderedMatMul: the exact
                           * sA*sB*acc/sY + bias + sC*C/sY; MatMulInteger: "" */
} qmm_ref_element;

/* Explains output element `index` (row-major over y; for QOrderedMatMul the offset in Y's
 * buffer, which is in order_Y's layout) of a valid call. */
qmm_status_code qmm_ref_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                qmm_status *st);

/* ---- semantics profiles (docs/semantics.md §5, docs/profiles.md) ----------------------------- */

/* A complete rule for turning the integer problem into output bytes. `spec` is the contract;
 * the others reproduce what a named implementation computes, bit for bit. */
typedef enum qmm_profile {
    QMM_PROFILE_SPEC = 0,          /* exact rational, RNE, zero point after rounding */
    QMM_PROFILE_ONNX_REF = 1,      /* onnx.reference (numpy), onnx >= 1.22 (clamps) */
    QMM_PROFILE_ORT_FP32 = 2,      /* ONNX Runtime CPU / MLAS float32 requantization */
    QMM_PROFILE_ORION_FP16X16 = 3, /* Orion's qlinear_matmul, sign-magnitude Q16.16 */
} qmm_profile;

#define QMM_PROFILE_COUNT 4

/* "spec", "onnx-ref", "ort-fp32", "orion-fp16x16"; NULL for a value out of range. */
const char *qmm_profile_name(qmm_profile p);

/* 1 and *out set when `name` is a profile's name, 0 otherwise. */
int qmm_profile_from_name(const char *name, qmm_profile *out);

/* Computes call->y under profile `p`. Validation (docs/semantics.md §2.5) is the same for every
 * profile. QMM_PROFILE_SPEC is qmm_ref_compute(call, NULL, NULL, st). QOrderedMatMul is defined
 * under spec and ort-fp32 only (the others: UNSUPPORTED after validation). MatMulInteger has no
 * requantization: every profile gives the spec result, except orion-fp16x16 (UNSUPPORTED).
 * orion-fp16x16 computes int8 only (other types: UNSUPPORTED) and answers
 * QMM_INVALID_ARGUMENT where Orion panics (an input element -128, a result clamped to -128,
 * a Q16.16 magnitude >= 2^32, y_scale encoding as 0), the message naming the rule. */
qmm_status_code qmm_ref_compute_profile(qmm_call *call, qmm_profile p, qmm_status *st);

/* `v` rounded to nearest, ties to even, in a scale type (float, float16 or bfloat16),
 * subnormals included, overflowing to ±infinity; returned as the double holding that value.
 * Independent of the floating-point environment's rounding mode. NaN for other types. */
double qmm_round_to_scale_type(int32_t dtype, double v);

/* The little-endian bit pattern of qmm_round_to_scale_type(dtype, v) (16 or 32 bits), so a
 * caller can build float16/bfloat16 tensors without compiler support for them. */
uint32_t qmm_scale_encode(int32_t dtype, double v);

/* ---- the backend ---------------------------------------------------------------------- */

/* Opens the reference backend. Options: "" or "profile=NAME" with NAME one of the profiles
 * above (an unknown key or profile is QMM_INVALID_ARGUMENT). Under a profile other than spec
 * the backend's name is "reference:profile=NAME". */
qmm_backend *qmm_reference_open(uint32_t harness_abi, const char *options, qmm_status *st);

#ifdef __cplusplus
}
#endif

#endif /* QMM_REFERENCE_H */
