/* harness/gen/edge/invalid.c — the `invalid` edge suite (docs/edge-suites.md): one case per input
 * rule of docs/semantics.md §2.5/§3, each expecting INVALID_ARGUMENT. */
#include <math.h>

#include "harness/gen/edge_build.h"

/* A valid 2x3 · 3x2 uint8 QLinearMatMul to break one rule of; `c` receives it. */
static qh_edge_case *invalid_base(qh_edge_builder *x, const char *name, int32_t sdt,
                                  const char *rule)
{
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, qh_edge_opset_for_scales(sdt), "%s", name);
    if (!c)
        return NULL;
    c->meta.expect = QMM_INVALID_ARGUMENT;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    qh_edge_int_tensor_full_range(x, c, &q->a, QMM_DTYPE_UINT8, DIMS(2, 3));
    qh_edge_int_tensor_full_range(x, c, &q->b, QMM_DTYPE_UINT8, DIMS(3, 2));
    qh_edge_per_tensor_params(x, c, sdt, 0.5, 128, 0.25, 128, 4.0, 128, QMM_DTYPE_UINT8);
    qh_edge_tag(c, "invalid");
    qh_edge_tag(c, rule);
    return c;
}

static void suite_invalid(qh_edge_builder *x)
{
    qh_edge_case *c;
    qmm_qlinearmatmul *q;
#define BASE(name, rule, what)                                                                     \
    if (!(c = invalid_base(x, name, QMM_DTYPE_FLOAT, rule)))                                       \
        return;                                                                                    \
    q = qh_edge_qlinearmatmul(c);                                                                  \
    qh_edge_describe(c, "%s", what)

    BASE("rank0-a", "rank-0", "a is a scalar (rank 0)");
    qh_edge_int_tensor_filled(x, c, &q->a, QMM_DTYPE_UINT8, SCALAR, 7);
    BASE("rank0-b", "rank-0", "b is a scalar (rank 0)");
    qh_edge_int_tensor_filled(x, c, &q->b, QMM_DTYPE_UINT8, SCALAR, 7);
    BASE("k-mismatch", "k-mismatch", "a [2,3] times b [4,2]");
    qh_edge_int_tensor_full_range(x, c, &q->b, QMM_DTYPE_UINT8, DIMS(4, 2));
    BASE("batch-mismatch", "batch-broadcast", "a [2,2,3] times b [3,3,2]: batch 2 vs 3");
    qh_edge_int_tensor_full_range(x, c, &q->a, QMM_DTYPE_UINT8, DIMS(2, 2, 3));
    qh_edge_int_tensor_full_range(x, c, &q->b, QMM_DTYPE_UINT8, DIMS(3, 3, 2));
    BASE("zp-type-a", "zero-point-type", "a uint8, a_zero_point int8");
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_INT8, SCALAR, 0);
    BASE("zp-type-b", "zero-point-type", "b uint8, b_zero_point int8");
    qh_edge_int_tensor_filled(x, c, &q->b_zero_point, QMM_DTYPE_INT8, SCALAR, 0);
    BASE("a-scale-shape-k", "parameter-shape", "a [2,3] with a_scale/a_zero_point [3] (K)");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, DIMS(3), 0.5);
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_UINT8, DIMS(3), 128);
    BASE("a-scale-shape-mk", "parameter-shape", "a_scale/a_zero_point [2,3]: varies along K");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, DIMS(2, 3), 0.5);
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_UINT8, DIMS(2, 3), 128);
    BASE("b-scale-shape-k1", "parameter-shape", "b_scale/b_zero_point [3,1]: per-row of b");
    qh_edge_scale_tensor_filled(x, c, &q->b_scale, QMM_DTYPE_FLOAT, DIMS(3, 1), 0.25);
    qh_edge_int_tensor_filled(x, c, &q->b_zero_point, QMM_DTYPE_UINT8, DIMS(3, 1), 128);
    BASE("y-scale-shape", "parameter-shape", "y [2,2] with y_scale/y_zero_point [3]");
    qh_edge_scale_tensor_filled(x, c, &q->y_scale, QMM_DTYPE_FLOAT, DIMS(3), 4.0);
    qh_edge_int_tensor_filled(x, c, &q->y_zero_point, QMM_DTYPE_UINT8, DIMS(3), 128);
    BASE("scale-zp-shapes-differ", "scale-zero-point-shape",
         "a_scale [2] (per-row) but a_zero_point [] (per-tensor)");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, DIMS(2), 0.5);
    BASE("scale-zp-shapes-differ-1n", "scale-zero-point-shape",
         "b_scale [1,2] but b_zero_point [2]");
    qh_edge_scale_tensor_filled(x, c, &q->b_scale, QMM_DTYPE_FLOAT, DIMS(1, 2), 0.25);
    qh_edge_int_tensor_filled(x, c, &q->b_zero_point, QMM_DTYPE_UINT8, DIMS(2), 128);
    BASE("scale-zero", "scale-value", "a_scale = 0");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, SCALAR, 0.0);
    BASE("scale-negative-zero", "scale-value", "b_scale = -0.0");
    qh_edge_scale_tensor_filled(x, c, &q->b_scale, QMM_DTYPE_FLOAT, SCALAR, -0.0);
    BASE("scale-negative", "scale-value", "b_scale = -0.25");
    qh_edge_scale_tensor_filled(x, c, &q->b_scale, QMM_DTYPE_FLOAT, SCALAR, -0.25);
    BASE("scale-nan", "scale-value", "y_scale = NaN");
    qh_edge_scale_tensor_filled(x, c, &q->y_scale, QMM_DTYPE_FLOAT, SCALAR, NAN);
    BASE("scale-inf", "scale-value", "a_scale = +inf");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, SCALAR, INFINITY);
    BASE("scale-one-bad-element", "scale-value", "per-row a_scale [0.5, 0]");
    qh_edge_scale_tensor(x, c, &q->a_scale, QMM_DTYPE_FLOAT, DIMS(2), (const double[]){0.5, 0.0});
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_UINT8, DIMS(2), 128);
    if (!(c = invalid_base(x, "scale-nan-float16", QMM_DTYPE_FLOAT16, "scale-value")))
        return;
    qh_edge_scale_tensor_filled(x, c, &qh_edge_qlinearmatmul(c)->b_scale, QMM_DTYPE_FLOAT16, SCALAR,
                                NAN);
    qh_edge_describe(c, "b_scale = NaN (float16)");
    BASE("type-a-int16", "type", "a int16 (not a QLinearMatMul type)");
    qh_edge_int_tensor_filled(x, c, &q->a, QMM_DTYPE_INT16, DIMS(2, 3), 1);
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_INT16, SCALAR, 0);
    BASE("type-y-int32", "type", "y_zero_point (and so y) int32");
    qh_edge_int_tensor_filled(x, c, &q->y_zero_point, QMM_DTYPE_INT32, SCALAR, 0);
    BASE("type-scale-int32", "type", "a_scale int32 (not a scale type)");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, SCALAR, 0.5);
    q->a_scale.dtype = QMM_DTYPE_INT32; /* same 4 bytes, relabelled */
    BASE("type-float16-scales-opset10", "type", "float16 scales need opset 21");
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT16, SCALAR, 0.5);
    qh_edge_scale_tensor_filled(x, c, &q->b_scale, QMM_DTYPE_FLOAT16, SCALAR, 0.25);
    qh_edge_scale_tensor_filled(x, c, &q->y_scale, QMM_DTYPE_FLOAT16, SCALAR, 4.0);
    if (!(c = invalid_base(x, "type-scales-differ", QMM_DTYPE_FLOAT16, "type")))
        return;
    qh_edge_scale_tensor_filled(x, c, &qh_edge_qlinearmatmul(c)->b_scale, QMM_DTYPE_FLOAT, SCALAR,
                                0.25);
    qh_edge_describe(c, "a_scale float16 but b_scale float (one type TS for all scales)");
    BASE("type-float8-opset10", "type", "float8e4m3fn operands need opset 21");
    qh_edge_int_tensor_filled(x, c, &q->a, QMM_DTYPE_FLOAT8E4M3FN, DIMS(2, 3), 0x38);
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_FLOAT8E4M3FN, SCALAR, 0);
#undef BASE
    /* MatMulInteger */
    static const char *const names[5] = {"rank0", "k-mismatch", "zp-type", "zp-shape-k",
                                         "type-int16"};
    static const char *const rules[5] = {"rank-0", "k-mismatch", "zero-point-type",
                                         "parameter-shape", "type"};
    static const char *const what[5] = {"A is a scalar", "A [2,3] times B [4,2]",
                                        "A uint8, a_zero_point int8",
                                        "a_zero_point [3] (K) for A [2,3]", "A int16"};
    for (int i = 0; i < 5; i++) {
        c = qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "%s", names[i]);
        if (!c)
            return;
        c->meta.expect = QMM_INVALID_ARGUMENT;
        qmm_matmulinteger *m = qh_edge_matmulinteger(c);
        if (i == 0)
            qh_edge_int_tensor_filled(x, c, &m->a, QMM_DTYPE_UINT8, SCALAR, 3);
        else if (i == 4)
            qh_edge_int_tensor_filled(x, c, &m->a, QMM_DTYPE_INT16, DIMS(2, 3), 3);
        else
            qh_edge_int_tensor_full_range(x, c, &m->a, QMM_DTYPE_UINT8, DIMS(2, 3));
        qh_edge_int_tensor_full_range(x, c, &m->b, QMM_DTYPE_UINT8, 2,
                                      i == 1 ? (const int64_t[]){4, 2} : (const int64_t[]){3, 2});
        if (i == 2)
            qh_edge_int_tensor_filled(x, c, &m->a_zero_point, QMM_DTYPE_INT8, SCALAR, 0);
        if (i == 3)
            qh_edge_int_tensor_filled(x, c, &m->a_zero_point, QMM_DTYPE_UINT8, DIMS(3), 0);
        qh_edge_tag(c, "invalid");
        qh_edge_tag(c, rules[i]);
        qh_edge_describe(c, "%s", what[i]);
    }
    /* docs/semantics.md §2.6: NaN and infinity are not quantized values (last, so the cases
     * above draw the values they always drew) */
    static const struct {
        const char *name, *what;
        int32_t dt;
        int input; /* 0: a, 1: b, 2: y_zero_point */
        int64_t code;
    } bad8[3] = {
        {"float8-nan-a", "a float8e4m3fn with one NaN code (0x7f)", QMM_DTYPE_FLOAT8E4M3FN, 0,
         0x7f},
        {"float8-inf-b", "b float8e5m2 with one -inf code (0xfc)", QMM_DTYPE_FLOAT8E5M2, 1, 0xfc},
        {"float8-nan-y-zero-point", "y_zero_point float8e4m3fnuz 0x80, its one NaN",
         QMM_DTYPE_FLOAT8E4M3FNUZ, 2, 0x80},
    };
    for (int i = 0; i < 3; i++) {
        if (!(c = invalid_base(x, bad8[i].name, QMM_DTYPE_FLOAT, "float8-value")))
            return;
        c->problem.call.u.qlinearmatmul.opset = 21;
        q = qh_edge_qlinearmatmul(c);
        int32_t dt = bad8[i].dt;
        if (bad8[i].input == 2) {
            qh_edge_int_tensor_filled(x, c, &q->y_zero_point, dt, SCALAR, bad8[i].code);
        } else {
            qmm_tensor *t = bad8[i].input ? &q->b : &q->a;
            int64_t vals[6] = {0x38, 0x30, 0x40, 0x38, 0x38, 0x38};
            vals[4] = bad8[i].code;
            qh_edge_int_tensor(x, c, t, dt, 2,
                               bad8[i].input ? (const int64_t[]){3, 2} : (const int64_t[]){2, 3},
                               vals);
            qh_edge_int_tensor_filled(x, c, bad8[i].input ? &q->b_zero_point : &q->a_zero_point, dt,
                                      SCALAR, 0);
        }
        qh_edge_describe(c, "%s", bad8[i].what);
    }
}

const qh_edge_suite qh_edge_suite_invalid = {
    "invalid", 13, suite_invalid,
    "one case per input rule of docs/semantics.md §2.5/§3: expected INVALID_ARGUMENT"};
