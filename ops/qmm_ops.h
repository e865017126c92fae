/* ops/qmm_ops.h — the operator rules every backend shares (docs/semantics.md): numpy.matmul
 * geometry, the parameter forms and their maps, exact scale decoding and encoding, every input
 * rule of the three operators, QOrderedMatMul's cublasLt layouts, and (ops/operator.h,
 * included here) one descriptor per operator in one table.
 *
 * Project-internal: the reference, the optimized and CUDA backends, the harness, the fuzz
 * targets and the tests include it; it is not installed. Nothing here needs GMP, so a backend
 * that uses these rules links qmm_ops alone and accepts and rejects exactly the calls the
 * reference does, with the same messages.
 *
 * A validator returns the plan it built on the way (geometry and parameter maps), so a
 * backend uses it directly instead of rebuilding it.
 */
#ifndef QMM_OPS_QMM_OPS_H
#define QMM_OPS_QMM_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/operator.h" /* the operator table: part of this one header */
#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns from the calling function with the status code of `expr` unless it is QMM_OK: the
 * rules are long chains of checks, each of which may end the validation. */
#define QMM_TRY(expr)                                                                     \
    do {                                                                                  \
        qmm_status_code qmm_try_rc_ = (expr);                                             \
        if (qmm_try_rc_ != QMM_OK)                                                        \
            return qmm_try_rc_;                                                           \
    } while (0)

/* ---- numpy.matmul geometry (docs/semantics.md §1; geometry.c) -------------------------- */

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

/* "[2,3]" (or "[]"), truncated to fit `n`. */
void qmm_format_dims(char *buf, size_t n, int32_t rank, const int64_t *dims);

/* Rank in 0..QMM_MAX_RANK, non-negative dims, element count fits int64. */
qmm_status_code qmm_check_tensor(const qmm_tensor *t, const char *name, qmm_status *st);

/* y has dtype `dtype` and shape `dims` (rank `rank`); otherwise QMM_INVALID_ARGUMENT with
 * "NAME: dtype ... differs from the expected ..." or "NAME: shape [..] differs from the
 * expected [..]". */
qmm_status_code qmm_check_output(const qmm_tensor *y, const char *name, int32_t dtype,
                                 int32_t rank, const int64_t *dims, qmm_status *st);

/* ---- quantization parameters (docs/semantics.md §2.2; params.c) ------------------------ */

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

/* ---- element types and values (scales.c) ----------------------------------------------- */

int qmm_is_q8(int32_t dtype);     /* uint8 or int8 */
int qmm_is_float8(int32_t dtype); /* one of the four float8 codes */
int qmm_is_scale_type(int32_t dtype);

/* Element `index` of a uint8/int8 tensor as an integer. */
int64_t qmm_load_q8(const qmm_tensor *t, int64_t index);

/* int64 reduced modulo 2^32 into int32, without relying on implementation-defined casts. */
int32_t qmm_wrap_int32(int64_t v);

/* Stores an int32 little-endian, as tensor data is defined to be. */
void qmm_store_i32(void *data, int64_t index, int32_t v);

/* Decodes a scale element exactly (float, float16 — subnormals included — or bfloat16) to the
 * double holding the same value. */
double qmm_scale_decode(int32_t dtype, const void *data, int64_t index);

/* Every element of scale tensor `s` decodes to a finite value > 0; otherwise
 * QMM_INVALID_ARGUMENT naming the first that does not ("a_scale[2]: must be finite and > 0"). */
qmm_status_code qmm_check_scale_values(const qmm_tensor *s, const char *name, qmm_status *st);

/* `v` rounded to nearest, ties to even, in a scale type (float, float16 or bfloat16),
 * subnormals included, overflowing to ±infinity; returned as the double holding that value.
 * Independent of the floating-point environment's rounding mode. NaN for other types. */
double qmm_round_to_scale_type(int32_t dtype, double v);

/* v rounded to an integer, ties to even, whatever fegetround() says (infinities and NaN
 * unchanged). */
double qmm_round_half_even(double v);

/* The little-endian bit pattern of qmm_round_to_scale_type(dtype, v) (16 or 32 bits), so a
 * caller can build float16/bfloat16 tensors without compiler support for them. */
uint32_t qmm_scale_encode(int32_t dtype, double v);

/* ---- float8 (docs/semantics.md §2.6; float8.c) ---------------------------------------- */

/* One float8 type as ONNX defines it (onnx/docs/Float8.md): `ebits` exponent and `mbits`
 * fraction bits, `bias`; `fnuz` (no infinities, no -0, the one NaN 0x80); `has_inf` (e5m2's
 * IEEE infinities); `max_code` the largest finite positive code; `shift` such that every
 * finite value times 2^shift is an integer (bias + mbits - 1). NULL for other types. */
typedef struct qmm_float8_format {
    int32_t dtype;
    int ebits, mbits, bias, fnuz, has_inf;
    uint8_t max_code;
    int shift;
} qmm_float8_format;

const qmm_float8_format *qmm_float8_format_of(int32_t dtype);

/* The exact value of a float8 code as a double (every float8 value is one): ±infinity,
 * NaN, and -0.0 for e4m3fn's and e5m2's 0x80. NaN for a non-float8 dtype. */
double qmm_float8_decode(int32_t dtype, uint8_t code);

/* A finite code's value times 2^shift, an integer (|.| < 2^34). */
int64_t qmm_float8_scaled(int32_t dtype, uint8_t code);

/* The code of `v` rounded to the type: nearest, ties to even, subnormals included,
 * magnitudes at or beyond the largest finite saturated to it (QuantizeLinear saturate=1);
 * a zero (or a value that rounds to zero) keeps v's sign where the type has -0, is 0x00 in
 * the fnuz types. NaN gives the type's NaN. Exact for every double v. */
uint8_t qmm_float8_encode(int32_t dtype, double v);

/* The finite code of sign `negative` and magnitude code `mag` clamped to 0 .. max_code (a
 * step of n codes from a code c is qmm_float8_signed(dtype, c & 0x80, (c & 0x7f) + n)); the
 * fnuz types' zero is 0x00 whatever the sign (their 0x80 is NaN). 0 for other types. */
uint8_t qmm_float8_signed(int32_t dtype, int negative, int64_t mag);

/* Every element of float8 tensor `t` is finite; otherwise QMM_INVALID_ARGUMENT naming the
 * first that is not ("a[3]: float8e5m2 code 0x7c is +inf; ..."). QMM_OK for other types. */
qmm_status_code qmm_check_float8_values(const qmm_tensor *t, const char *name, qmm_status *st);

/* ---- validation of QLinearMatMul and MatMulInteger (validate.c) ------------------------ */

/* The parameter maps of a plan, in input order. */
enum {
    QMM_MAP_A_SCALE,
    QMM_MAP_A_ZERO_POINT,
    QMM_MAP_B_SCALE,
    QMM_MAP_B_ZERO_POINT,
    QMM_MAP_Y_SCALE,
    QMM_MAP_Y_ZERO_POINT,
    QMM_MAP_COUNT
};

/* What validating a QLinearMatMul or MatMulInteger call learns: its geometry and where each
 * output element finds each parameter. For MatMulInteger only the two zero-point maps are
 * filled (all strides 0 for an absent zero point); the others are all zero. */
typedef struct qmm_plan {
    qmm_geometry g;
    qmm_param_map maps[QMM_MAP_COUNT];
} qmm_plan;

/* Full validation of a call against docs/semantics.md §2.5 / §3, including the shape of y. On
 * success fills the plan. Float8 operands and zero points must hold finite values (§2.6). */
qmm_status_code qmm_validate_qlinearmatmul(const qmm_qlinearmatmul *c, qmm_plan *plan,
                                           qmm_status *st);
qmm_status_code qmm_validate_matmulinteger(const qmm_matmulinteger *c, qmm_plan *plan,
                                           qmm_status *st);

/* The name of a QLinearMatMul call's first float8 operand ("a", "b", "y"), NULL when it has
 * none: what a backend without float8 kernels checks, after validating, to answer
 * UNSUPPORTED (validate.c). */
const char *qmm_qlinearmatmul_float8(const qmm_qlinearmatmul *c);

/* ---- QOrderedMatMul (docs/semantics.md §4, docs/qorderedmatmul.md; qordered_layout.c) -- */

/* Element offset of (r, c) in a rows x cols matrix stored in cublasLt order `order`
 * (qmm_order: COL, ROW, COL32, COL4_4R2_8C, COL32_2R_4R4), by the formulas of docs/semantics.md
 * §4.2 (COL4_4R2_8C and COL32_2R_4R4 pad rows to 8 / 32 in the leading dimension). -1 for an
 * unknown order or (r, c) outside the matrix. */
int64_t qmm_order_offset(int order, int64_t rows, int64_t cols, int64_t r, int64_t c);

/* What validating a QOrderedMatMul call learns. */
typedef struct qmm_qordered_plan {
    int64_t batch;   /* batch_A: a.dims[0] for a 3-D A, else 1 */
    int64_t m, k, n;
    int64_t b_batch; /* 1 or batch */
    int64_t c_batch; /* 1 or batch; 0 without C */
    int scalar_b;    /* scale_B has one element */
    int32_t y_rank;
    int64_t y_dims[QMM_MAX_RANK];
} qmm_qordered_plan;

/* Y's shape from A and B alone: A's shape with its last dim replaced by N (B is logically
 * [K,N] or [batch,K,N]). QMM_INVALID_ARGUMENT when the ranks or K do not fit. */
qmm_status_code qmm_qordered_y_shape(const qmm_tensor *a, const qmm_tensor *b, int32_t *rank,
                                     int64_t dims[QMM_MAX_RANK], qmm_status *st);

/* Full validation of a call (orders, combination, types, shapes, tiles, scales); on success
 * fills the plan. */
qmm_status_code qmm_validate_qorderedmatmul(const qmm_qorderedmatmul *c, qmm_qordered_plan *plan,
                                            qmm_status *st);


/* ---- the float-output operators (docs/semantics.md §8-§10; validate.c) ----------------- */

/* A float type a value can be in: float, float16 or bfloat16 (the scale types). */
#define qmm_is_float_value_type qmm_is_scale_type

/* What validating a MatMulNBits call learns. */
typedef struct qmm_nbits_plan {
    int64_t rows;       /* a's rows: the product of a's dims but the last (may be 0) */
    int64_t k, n;       /* the attributes */
    int64_t k_blocks;   /* ceil(K / block_size) */
    int64_t blob_size;  /* block_size * bits / 8 */
    int64_t zp_row;     /* packed zero points: bytes per row of N (ceil(k_blocks * bits / 8)) */
    int32_t bits, block_size, level;
    int zp_form;        /* QMM_NBITS_ZP_DEFAULT, _PACKED or _FLOAT */
    int32_t t1;         /* a's (and y's, scales', bias's) type */
} qmm_nbits_plan;

enum { QMM_NBITS_ZP_DEFAULT = 0, QMM_NBITS_ZP_PACKED = 1, QMM_NBITS_ZP_FLOAT = 2 };

/* Code `k` (0 .. K-1) of column n of MatMulNBits's b, and its block (g_idx's when present). */
int64_t qmm_nbits_code(const qmm_tensor *b, const qmm_nbits_plan *p, int64_t n, int64_t k);
int64_t qmm_nbits_block(const qmm_tensor *g_idx, const qmm_nbits_plan *p, int64_t k);
/* Zero point of (n, block) as an integer (default or packed forms). */
int64_t qmm_nbits_zero_point(const qmm_tensor *zp, const qmm_nbits_plan *p, int64_t n,
                             int64_t block);

qmm_status_code qmm_validate_matmulnbits(const qmm_matmulnbits *c, qmm_nbits_plan *plan,
                                         qmm_status *st);

/* What validating a DequantizeLinear call learns: x seen as [outer, axis_len, inner]. */
typedef struct qmm_dql_plan {
    int64_t outer, axis_len, inner;
    int64_t numel;
    int form;          /* QMM_DQL_PER_TENSOR, _PER_AXIS or _BLOCKED */
    int64_t block;     /* block_size (blocked) */
    int64_t s_axis;    /* the scale's length along the axis (blocked) */
    int32_t axis;      /* normalised to 0 .. rank-1 (per axis and blocked) */
    int32_t y_dtype;
} qmm_dql_plan;

enum { QMM_DQL_PER_TENSOR = 0, QMM_DQL_PER_AXIS = 1, QMM_DQL_BLOCKED = 2 };

/* The offset in x_scale (and x_zero_point) of x's element `index`. */
int64_t qmm_dql_param_offset(const qmm_dql_plan *p, int64_t index);
/* x's element `index` as an exact double: integers (to int32) and float8 codes. */
double qmm_dql_x_value(const qmm_tensor *x, int64_t index);

qmm_status_code qmm_validate_dequantizelinear(const qmm_dequantizelinear *c, qmm_dql_plan *plan,
                                              qmm_status *st);

/* What validating a DynamicQuantizeMatMul or MatMulIntegerToFloat call learns. */
typedef struct qmm_i2f_plan {
    qmm_geometry g;
    int b_per_column; /* b_scale (and b_zero_point) has N elements */
} qmm_i2f_plan;

qmm_status_code qmm_validate_dynamicquantizematmul(const qmm_dynamicquantizematmul *c,
                                                   qmm_i2f_plan *plan, qmm_status *st);
qmm_status_code qmm_validate_matmul_integer_to_float(const qmm_matmul_integer_to_float *c,
                                                     qmm_i2f_plan *plan, qmm_status *st);

#ifdef __cplusplus
}
#endif

#endif /* QMM_OPS_QMM_OPS_H */
