/* harness/gen/problem.h — an operator call that owns its tensors, a seeded random generator of
 * such calls over the whole operator space, and writing one as an ONNX node-test directory.
 *
 * Shared by the edge-case suites (harness/gen/edge/) and `qmmcheck diff` (harness/cli/cmd_diff.c).
 * Everything here is deterministic: the same seed gives the same bytes on every machine (no
 * floating-point environment dependence, no libc random functions).
 */
#ifndef QMM_HARNESS_PROBLEM_H
#define QMM_HARNESS_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/call.h"
#include "harness/base/rng.h"
#include "harness/base/tensor.h"
#include "harness/io/meta.h"
#include "harness/io/onnx_io.h"
#include "qmm/qmm.h"

/* A call that owns its buffers (harness/base/call.h): the call's input tensors point into
 * `bufs`. y carries its dtype, and its shape when the geometry is valid (y_shape_known);
 * y.data is always NULL. */
typedef qh_owned_call qh_problem;

/* An empty call of operator `op` (qmm_call_init, ops/operator.h); `opset` is stored where the
 * call has one (QLinearMatMul: 10 or 21). Every input starts absent. */
void qh_problem_init(qh_problem *p, qmm_op_kind op, int32_t opset);
void qh_problem_free(qh_problem *p);

/* Number of node inputs of the problem's operator and input i of the call (node order). */
int32_t qh_problem_n_inputs(const qh_problem *p);
qmm_tensor *qh_problem_input(qh_problem *p, int32_t i);
const qmm_tensor *qh_problem_input_c(const qh_problem *p, int32_t i);
/* The ONNX input name of input i, from the operator's descriptor (ops/operator.h). */
const char *qh_problem_input_name(const qh_problem *p, int32_t i);

/* Gives `t` (one of p's tensors) a dtype and shape, with zeroed data owned by p. Returns the
 * data, or NULL when memory runs out or p has no buffer slot left. */
void *qh_problem_tensor(qh_problem *p, qmm_tensor *t, int32_t dtype, int32_t rank,
                        const int64_t *dims);

/* Sets y's dtype from the operator (QLinearMatMul: y_zero_point's type; MatMulInteger int32;
 * QOrderedMatMul int8) and its shape from a and b when they fit. Call after the inputs are
 * set. */
void qh_problem_finish(qh_problem *p);

/* "QLinearMatMul opset 21 u8s8u8 float16 a[2,3] b[3,4] a_scale[] b_scale[4] y_scale[]". */
void qh_problem_describe(const qh_problem *p, char *buf, size_t size);
/* "u8s8u8" (QLinearMatMul: a, b, y) or "u8s8" (MatMulInteger, QOrderedMatMul: a, b), from
 * the operand types; y's is said where the inputs choose it. */
void qh_problem_types(const qh_problem *p, char *buf, size_t size);

/* Whether p is QLinearMatMul with a float8 a, b or y (docs/semantics.md §2.6). */
int qh_problem_has_float8(const qh_problem *p);
/* The scale type: the dtype of the first input the type rule lets be a float (ops/operator.h),
 * as it is; QMM_DTYPE_UNDEFINED when the operator has no scales. */
int32_t qh_problem_scale_type(const qh_problem *p);

/* ---- the random generator ---------------------------------------------------------------- */

typedef struct qh_random_opts {
    int invalid_per_mille; /* how often a problem is made invalid on purpose (0..1000) */
    int64_t max_outputs;   /* bound on the output element count (0: 4096) */
    int64_t max_macs;      /* bound on batch*M*N*K (0: 1 << 20) */
    /* how often a QLinearMatMul-21 problem takes float8 types (0..1000; 0: never, so the
     * committed random edge suite keeps its problems). The choice comes from a side stream:
     * problem I of a seed is either the problem it was without float8 or a float8 one. */
    int float8_per_mille;
    /* one of the float-output operators (QMM_OP_MATMULNBITS, _DEQUANTIZELINEAR,
     * _DYNAMICQUANTIZEMATMUL, _MATMUL_INTEGER_TO_FLOAT): every problem is of it, from its own
     * generator (docs/semantics.md §8-§10); any other value (QMM_OP_NONE): the problems above,
     * which never are */
    qmm_op_kind float_op;
} qh_random_opts;

/* A random problem over the whole operator space: every operator of ops/operator.h (for
 * QOrderedMatMul both order combinations with clean tiles, per-column scale_B, bias, C,
 * batches; docs/qorderedmatmul.md), every uint8/int8 type combination, opset 10 and 21 with float/float16/bfloat16 scales, every parameter form,
 * QLinearMatMul-21's float8 mixes when o->float8_per_mille asks (docs/semantics.md §2.6),
 * batch broadcasting, 1-D operands, empty dimensions, value modes from uniform to all-extreme,
 * scales from random to exact powers of two (which make rounding ties common). Sizes are
 * mostly small, now and then larger. Returns 0, or -1 when memory runs out. */
int qh_problem_random(qh_problem *p, qh_rng *r, const qh_random_opts *o);

/* ---- writing ------------------------------------------------------------------------------ */

/* Writes the problem as an ONNX node-test directory (harness/io/casedir.h): DIR/model.onnx,
 * DIR/test_data_set_0/input_i.pb (present inputs only, in node order), output_0.pb when
 * `output` is not NULL, and DIR/qmm.meta when `meta` is not NULL. Creates DIR. */
int qh_problem_write_dir(const char *dir, const qh_problem *p, const qmm_tensor *output,
                         const qh_meta *meta, qh_error *err);

#endif /* QMM_HARNESS_PROBLEM_H */
