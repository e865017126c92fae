/* harness/gen/edge_build.h — what the edge suites' files share: the registry of the suites, the
 * builder a suite adds its cases through, and the vocabulary it builds them with (tensors of
 * given, constant or random values, per-tensor parameters, the uint8/int8 ranges, type names).
 * Nothing here is part of edge.h's contract.
 *
 * Each suite is one file, harness/gen/edge/<suite>.c, defining one `const qh_edge_suite
 * qh_edge_suite_<suite>` ('-' spelled '_'); harness/CMakeLists.txt finds those files and
 * generates the registry (qh_edge_suites), so adding a suite is adding its file.
 *
 * Builders need no error paths of their own: once memory runs out (or a search finds nothing)
 * the builder is marked failed, later tensor builders write nothing, and qh_edge_build fails as
 * a whole with the reason.
 */
#ifndef QMM_HARNESS_EDGE_BUILD_H
#define QMM_HARNESS_EDGE_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "harness/gen/edge.h"
#include "harness/gen/problem.h"
#include "ops/qmm_ops.h"

/* Every harness/gen/edge/<suite>.c file's suite, NULL-terminated, in file-name order
 * (generated: edge_suites.c in the build tree). edge.h's accessors list them by seed. */
extern const qh_edge_suite *const qh_edge_suites[];

/* One suite being built: where its cases go and the random stream its builders draw from. */
struct qh_edge_builder {
    const qh_edge_suite *suite;
    uint64_t seed;
    qh_rng rng;
    qh_edge_cases *out;
    int failed;          /* memory ran out, or a search found nothing */
    char why[256];
};

/* DIMS(2, 3) expands to the "rank, dims" arguments of a [2,3] tensor; SCALAR to a []'s. */
#define DIMS(...)                                                                            \
    (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#define SCALAR 0, NULL

/* A parameter's shape, for the suites that take a table of them. */
typedef struct qh_edge_shape {
    int32_t rank;
    int64_t dims[6];
} qh_edge_shape;

/* ---- cases ---- */

/* Marks the build failed with `why` (the first reason is kept). */
void qh_edge_fail(qh_edge_builder *x, const char *why);

/* Appends a case of `op` at `opset` named "<operator slug>/<suite>/<printf(fmt, ...)>", with
 * the suite's tag and provenance; NULL (and the build failed) when memory ran out. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
qh_edge_case *qh_edge_add_case(qh_edge_builder *x, qmm_op_kind op, int32_t opset,
                               const char *fmt, ...);
/* Removes the case added last (one whose property did not hold after all). */
void qh_edge_drop_last_case(qh_edge_builder *x);

/* Adds a tag to the case's qmm.meta (once; beyond QH_META_MAX_TAGS it is dropped). */
void qh_edge_tag(qh_edge_case *c, const char *tag);
/* Sets the case's description. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void qh_edge_describe(qh_edge_case *c, const char *fmt, ...);

/* The case's call, as the operator it was added as. */
qmm_qlinearmatmul *qh_edge_qlinearmatmul(qh_edge_case *c);
qmm_matmulinteger *qh_edge_matmulinteger(qh_edge_case *c);

/* ---- tensors: each allocates *t (owned by the case) as a `dtype` tensor of the given shape,
 * then fills it ---- */

/* Integer elements (a float8 tensor's: its codes) from `values`, in order; NULL: all zero. */
void qh_edge_int_tensor(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t, int32_t dtype,
                        int32_t rank, const int64_t *dims, const int64_t *values);
/* Every integer element `value`. */
void qh_edge_int_tensor_filled(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                               int32_t dtype, int32_t rank, const int64_t *dims, int64_t value);
/* Integers drawn uniformly from [lo, hi], the range first clamped to uint8's or int8's. */
void qh_edge_int_tensor_random(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                               int32_t dtype, int32_t rank, const int64_t *dims, int64_t lo,
                               int64_t hi);
/* Integers drawn uniformly from uint8's or int8's whole range. */
void qh_edge_int_tensor_full_range(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                                   int32_t dtype, int32_t rank, const int64_t *dims);
/* Scales (encoded in the scale type `dtype`) from `values`, in order. */
void qh_edge_scale_tensor(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t, int32_t dtype,
                          int32_t rank, const int64_t *dims, const double *values);
/* Every scale `value`. */
void qh_edge_scale_tensor_filled(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                                 int32_t dtype, int32_t rank, const int64_t *dims, double value);
/* qh_edge_short_scale's value with a random sign. */
double qh_edge_short_signed(qh_edge_builder *x, int e_lo, int e_hi);
/* Every scale drawn by qh_edge_short_scale(x, e_lo, e_hi). */
void qh_edge_scale_tensor_random(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                                 int32_t dtype, int32_t rank, const int64_t *dims, int e_lo,
                                 int e_hi);

/* A scale with a short mantissa (1, 1.25, 1.5 or 1.75 times 2^e, e in [e_lo, e_hi]), exact
 * in every scale type. */
double qh_edge_short_scale(qh_edge_builder *x, int e_lo, int e_hi);

/* A QLinearMatMul case's six per-tensor ([]) parameters: scales of type `scale_type`, a's and
 * b's zero points of their operand's type (set a and b first), y's of type `ty`. */
void qh_edge_per_tensor_params(qh_edge_builder *x, qh_edge_case *c, int32_t scale_type,
                               double sa, int64_t za, double sb, int64_t zb, double sy,
                               int64_t zy, int32_t ty);

/* The case's a (`which` 0) or b (1), as the operator it was added as (MatMulInteger or
 * QLinearMatMul). */
qmm_tensor *qh_edge_operand(qh_edge_case *c, int which);

/* Per-tensor ([]) zero points za and zb of a MatMulInteger or QLinearMatMul case (set a and b
 * first); for QLinearMatMul also float scales 1 for a and b, `sy` for y, and y's zero point
 * `zy` of type `ty`. */
void qh_edge_unit_params(qh_edge_builder *x, qh_edge_case *c, int64_t za, int64_t zb, double sy,
                         int64_t zy, int32_t ty);

/* A QLinearMatMul case's six parameters, of the given shapes (a scale and its zero point share
 * one; set a and b first): scales of type `scale_type` drawn by qh_edge_short_scale (2^-6..2^-3
 * for a and b, 2^y_scale_e_lo..2^4 for y), a's and b's zero points from their operand type's
 * whole range, y's (of type `ty`) within `y_zero_point_spread` of the middle of the type. */
void qh_edge_random_params(qh_edge_builder *x, qh_edge_case *c, int32_t scale_type,
                           qh_edge_shape pa, qh_edge_shape pb, qh_edge_shape py, int32_t ty,
                           int y_scale_e_lo, int64_t y_zero_point_spread);

/* A case of `op` (opset 10) named `name`: operands of the given shapes and zero points of the
 * given shapes, all drawn from their type's whole range, the types picked by `idx` (a and b
 * from qh_edge_type_pairs, y uint8 or int8); for QLinearMatMul, qh_edge_random_params with
 * float scales, y's 2^3..2^4, y's zero point within 32 of the middle of its type. Tagged
 * batch and broadcast, described by the operand shapes: the broadcast suite is made of these,
 * and the one-d and empty suites retag them. */
void qh_edge_random_operands_case(qh_edge_builder *x, qmm_op_kind op, const char *name,
                                  int32_t ra, const int64_t *ad, int32_t rb, const int64_t *bd,
                                  qh_edge_shape pa, qh_edge_shape pb, qh_edge_shape py, int idx);

/* ---- MatMulNBits (docs/semantics.md §8) ---- */

/* MatMulNBits' zero-point forms: absent (2^(bits-1)), packed uint8, unpacked T1, and present
 * but empty (INVALID_ARGUMENT). */
enum { QH_NBITS_ZP_ABSENT, QH_NBITS_ZP_PACKED, QH_NBITS_ZP_T1, QH_NBITS_ZP_EMPTY };

/* The form of a MatMulNBits case. */
typedef struct qh_edge_nbits {
    int64_t m, k, n;
    int bits, block_size, level;
    int32_t t1;  /* A's (and scales', bias', T1 zero points', Y's) type; 0: float */
    int zp;      /* QH_NBITS_ZP_* */
    int flat;    /* scales and zero points flat: [N·k_blocks], [N·ceil(k_blocks·bits/8)] */
    int bias;    /* a bias [N] */
    int a_rank;  /* 0 or 2: A [M, K]; 1: A [K] (m must be 1); 3: A [2, M, K] */
} qh_edge_nbits;

/* A MatMulNBits case of form `s` named "matmulnbits/<suite>/<printf(fmt, ...)>": A of short
 * random values (±{1, 1.25, 1.5, 1.75}·2^-3..2^1), B random bytes (the unused tail codes of a
 * short last block too: a kernel that reads them shows), each block's scale its own short
 * 2^-6..2^-2, zero points random over the code range (T1 ones half-integers half the time),
 * the bias short random values. Tagged m-M, its zero-point form (zp-absent, zp-packed, zp-t1,
 * zp-empty), bias or no-bias, k-partial-block when block_size does not divide K, flat-params;
 * the empty form expects INVALID_ARGUMENT. The suite then changes what its point needs. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
qh_edge_case *qh_edge_nbits_case(qh_edge_builder *x, const qh_edge_nbits *s, const char *fmt,
                                 ...);
/* "M=129 K=37 N=3 bits=4 block_size=16 accuracy_level=0 float, packed zero points, bias": the
 * form, for descriptions. */
void qh_edge_nbits_form(const qh_edge_nbits *s, char *buf, size_t size);
/* Code k of column n of the case's B, and the zero point of block j of column n as an
 * integer (the default 2^(bits-1) when absent; T1 ones truncated). */
int qh_edge_nbits_code(const qmm_matmulnbits *c, int64_t n, int64_t k);
int qh_edge_nbits_zero_point(const qmm_matmulnbits *c, int64_t n, int64_t j);

/* ---- forms ---- */

/* Whether the call is in the simplest form a kernel supports (QH_EDGE_SIMPLE_FORM_TAG, edge.h):
 * 2-D a and b, per-tensor parameters ([] or [1], or absent); for QLinearMatMul, float32 scales
 * and uint8/int8 a, b and y. */
int qh_edge_simple_form(const qmm_call *call);

/* ---- types and numbers ---- */

/* The four (a, b) pairs of uint8 and int8: u8u8, s8s8, u8s8, s8u8. */
extern const int32_t qh_edge_type_pairs[4][2];

/* The smallest and the largest value of uint8 (QMM_DTYPE_UINT8) or else int8. */
int64_t qh_edge_int_min(int32_t dtype);
int64_t qh_edge_int_max(int32_t dtype);

/* A type's abbreviation in case names: "u8", "s8", "e4m3fn", ... ("?" for others). */
const char *qh_edge_type_abbrev(int32_t dtype);

/* The opset the suites use with scales of `scale_type`: 10 for float, 21 (the first that
 * allows them) for float16 and bfloat16. */
int32_t qh_edge_opset_for_scales(int32_t scale_type);

/* The number of bits of v (0 for 0). */
int qh_edge_bit_length(uint64_t v);

#endif /* QMM_HARNESS_EDGE_BUILD_H */
