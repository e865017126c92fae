/* harness/gen/edge/dynq.c — the `dynq` edge suite (docs/edge-suites.md): DynamicQuantizeMatMul
 * and MatMulIntegerToFloat at M = 1, 2, 127, 128, 129, 257, every b_scale and zero-point form,
 * bias or none, a batched B, scales zero, negative, subnormal and huge, and the activations
 * that decide DynamicQuantizeLinear's scale and zero point. */
#include <math.h>
#include <stdio.h>

#include "harness/gen/edge_build.h"

/* A case's form: which operator (`dynamic`: DynamicQuantizeMatMul), shapes (`batch` > 0: B
 * [batch, K, N]), A's (MatMulIntegerToFloat) and B's types, b_scale's form (0 [], 1 [1],
 * 2 [N]), which zero points, a bias. */
typedef struct i2f_form {
    int dynamic;
    int64_t m, k, n, batch;
    int32_t at, bt;
    int bscale, azp, bzp, bias;
} i2f_form;

typedef struct i2f_inputs {
    qmm_tensor *a, *b, *a_scale, *b_scale, *a_zp, *b_zp, *bias;
} i2f_inputs;

static i2f_inputs inputs_of(qh_edge_case *c)
{
    i2f_inputs t = {0};
    if (c->problem.call.op == QMM_OP_DYNAMICQUANTIZEMATMUL) {
        qmm_dynamicquantizematmul *q = &c->problem.call.u.dynamicquantizematmul;
        t = (i2f_inputs){&q->a, &q->b, NULL, &q->b_scale, NULL, &q->b_zero_point, &q->bias};
    } else {
        qmm_matmul_integer_to_float *q = &c->problem.call.u.matmul_integer_to_float;
        t = (i2f_inputs){&q->a,           &q->b,           &q->a_scale, &q->b_scale,
                         &q->a_zero_point, &q->b_zero_point, &q->bias};
    }
    return t;
}

static qh_edge_case *i2f_case(qh_edge_builder *x, const i2f_form *f, const char *name,
                              const char *tag, const char *what)
{
    qh_edge_case *c = qh_edge_add_case(x, f->dynamic ? QMM_OP_DYNAMICQUANTIZEMATMUL
                                                     : QMM_OP_MATMUL_INTEGER_TO_FLOAT,
                                       1, "%s", name);
    if (!c)
        return NULL;
    i2f_inputs t = inputs_of(c);
    const int32_t F = QMM_DTYPE_FLOAT;
    int64_t bd[3] = {f->batch, f->k, f->n};
    int32_t br = f->batch ? 3 : 2;
    if (f->dynamic) {
        qh_edge_scale_tensor_filled(x, c, t.a, F, DIMS(f->m, f->k), 0.0);
        for (int64_t i = 0; !x->failed && i < f->m * f->k; i++)
            qh_tensor_set_scale(t.a, i, qh_edge_short_signed(x, -3, 1));
    } else {
        qh_edge_int_tensor_full_range(x, c, t.a, f->at, DIMS(f->m, f->k));
        qh_edge_scale_tensor_random(x, c, t.a_scale, F, SCALAR, -6, -2);
        if (f->azp)
            qh_edge_int_tensor_full_range(x, c, t.a_zp, f->at, SCALAR);
    }
    qh_edge_int_tensor_full_range(x, c, t.b, f->bt, br, bd + 3 - br);
    int64_t sd[1] = {f->bscale == 2 ? f->n : 1};
    int32_t sr = f->bscale ? 1 : 0;
    qh_edge_scale_tensor_random(x, c, t.b_scale, F, sr, sd, -6, -2);
    if (f->bzp)
        qh_edge_int_tensor_full_range(x, c, t.b_zp, f->bt, sr, sd);
    if (f->bias) {
        qh_edge_scale_tensor_filled(x, c, t.bias, F, DIMS(f->n), 0.0);
        for (int64_t i = 0; !x->failed && i < f->n; i++)
            qh_tensor_set_scale(t.bias, i, qh_edge_short_signed(x, -2, 2));
    }
    char m[32];
    snprintf(m, sizeof m, "m-%lld", (long long)f->m);
    qh_edge_tag(c, m);
    qh_edge_tag(c, f->bscale == 2 ? "per-column" : "per-tensor");
    qh_edge_tag(c, f->bias ? "bias" : "no-bias");
    qh_edge_tag(c, f->bzp || f->azp ? "zero-points" : "no-zero-points");
    if (f->batch)
        qh_edge_tag(c, "batched-b");
    if (tag)
        qh_edge_tag(c, tag);
    static const char *const sforms[3] = {"[]", "[1]", "[N]"};
    qh_edge_describe(c, "M=%lld K=%lld N=%lld%s, b_scale %s%s%s%s: %s", (long long)f->m,
                     (long long)f->k, (long long)f->n, f->batch ? ", B batched" : "",
                     sforms[f->bscale], f->azp ? ", a_zero_point" : "",
                     f->bzp ? ", b_zero_point" : "", f->bias ? ", bias" : "", what);
    return c;
}

/* Every element of t set to v, or multiplied by `mul` when v is 0 (scales, A). */
static void set_floats(qh_edge_case *c, int which, double v, double mul)
{
    if (!c)
        return;
    i2f_inputs t = inputs_of(c);
    qmm_tensor *p = which == 0 ? t.a : which == 1 ? t.a_scale : t.b_scale;
    for (int64_t i = 0; i < qmm_tensor_numel(p); i++)
        qh_tensor_set_scale(p, i, v != 0.0 || mul == 0.0
                                      ? v
                                      : qmm_scale_decode(p->dtype, p->data, i) * mul);
}

static void suite_dynq(qh_edge_builder *x)
{
    const int32_t U8 = QMM_DTYPE_UINT8, S8 = QMM_DTYPE_INT8;
    static const int64_t ms[6] = {1, 2, 127, 128, 129, 257};
    char name[64];
    for (int dyn = 1; dyn >= 0; dyn--) {
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "m%lld", (long long)ms[i]);
            i2f_case(x, &(i2f_form){dyn, ms[i], 19, 3, 0, i % 2 ? U8 : S8, i % 2 ? S8 : U8, 2,
                                    i % 2, 1, i % 2 == 0},
                     name, NULL,
                     "every row its own values: a row left out or computed by another path "
                     "(an M = 1 kernel on the last row of M = 129, 257) shows");
        }
        static const i2f_form forms[4] = {{0, 3, 19, 4, 0, U8, U8, 0, 0, 0, 0},
                                          {0, 3, 19, 4, 0, S8, S8, 1, 1, 1, 1},
                                          {0, 3, 19, 4, 0, U8, S8, 2, 0, 0, 1},
                                          {0, 3, 19, 4, 0, S8, U8, 2, 1, 1, 0}};
        for (int i = 0; i < 4; i++) {
            i2f_form f = forms[i];
            f.dynamic = dyn;
            snprintf(name, sizeof name, "form-%d", i);
            i2f_case(x, &f, name, NULL, "a b_scale and zero-point form");
        }
        for (int per_col = 0; per_col <= 1; per_col++) {
            snprintf(name, sizeof name, "batched-b-%s", per_col ? "per-column" : "per-tensor");
            i2f_case(x, &(i2f_form){dyn, 3, 11, 4, 2, U8, S8, per_col ? 2 : 0, 0, 0, 1},
                     name, NULL,
                     per_col ? "B [2, K, N] with a per-column b_scale (no zero point) and a "
                               "bias: each column's scale multiplies its products, not the bias "
                               "(onnxruntime's fallback multiplies the bias by b_scale too)"
                             : "B [2, K, N], per-tensor b_scale, bias");
        }
        const i2f_form base = {dyn, 2, 19, 3, 0, S8, U8, 2, 0, 1, 1};
        set_floats(i2f_case(x, &base, "b-scale-zero", "zero-scale", "every b_scale 0: y is the bias"), 2,
                   0.0, 0.0);
        set_floats(i2f_case(x, &base, "b-scale-negative", "negative-scale",
                            "every b_scale negative"),
                   2, 0.0, -1.0);
        set_floats(i2f_case(x, &base, "b-scale-subnormal", "subnormal",
                            "every b_scale a float32 subnormal (about 2^-140)"),
                   2, 0.0, ldexp(1, -136));
        set_floats(i2f_case(x, &base, "b-scale-huge", "huge",
                            "every b_scale about 2^100: y about 2^100, finite"),
                   2, 0.0, ldexp(1, 102));
    }
    /* MatMulIntegerToFloat's a_scale */
    const i2f_form mif = {0, 2, 19, 3, 0, U8, S8, 0, 1, 1, 1};
    set_floats(i2f_case(x, &mif, "a-scale-zero", "zero-scale", "a_scale 0: y is the bias"), 1,
               0.0, 0.0);
    set_floats(i2f_case(x, &mif, "a-scale-negative", "negative-scale", "a_scale negative"), 1,
               0.0, -1.0);
    set_floats(i2f_case(x, &mif, "a-scale-subnormal", "subnormal",
                        "a_scale a float32 subnormal: RN32(sa*sb) underflows to 0 or a "
                        "subnormal"),
               1, 0.0, ldexp(1, -136));
    /* DynamicQuantizeMatMul's A decides sa and za (docs/semantics.md §10.1) */
    const i2f_form dqm = {1, 2, 19, 3, 0, 0, U8, 2, 0, 1, 1};
    set_floats(i2f_case(x, &dqm, "a-all-zero", "a-range",
                        "A all 0: hi == lo, so sa = 1, za = 0 and y is the bias"),
               0, 0.0, 0.0);
    set_floats(i2f_case(x, &dqm, "a-constant", "a-range",
                        "A all 1.5: lo = 0, za = 0, every element 255"),
               0, 1.5, 0.0);
    qh_edge_case *c = i2f_case(x, &dqm, "a-all-positive", "a-range",
                               "A all positive: lo = 0, za = 0");
    for (int64_t i = 0; c && i < 2 * 19; i++)
        qh_tensor_set_scale(inputs_of(c).a, i, fabs(qmm_scale_decode(
                                                    QMM_DTYPE_FLOAT, inputs_of(c).a->data, i)));
    c = i2f_case(x, &dqm, "a-all-negative", "a-range", "A all negative: hi = 0, za = 255");
    for (int64_t i = 0; c && i < 2 * 19; i++)
        qh_tensor_set_scale(inputs_of(c).a, i, -fabs(qmm_scale_decode(
                                                     QMM_DTYPE_FLOAT, inputs_of(c).a->data, i)));
    c = i2f_case(x, &dqm, "a-outlier", "a-range",
                 "one element 1000 among values below 2: sa = 1000/255 rounds most of A to "
                 "the zero point");
    if (c)
        qh_tensor_set_scale(inputs_of(c).a, 5, 1000.0);
}

const qh_edge_suite qh_edge_suite_dynq = {
    "dynq", 22, suite_dynq,
    "DynamicQuantizeMatMul and MatMulIntegerToFloat: M = 1..257, b_scale and zero-point forms, "
    "bias, batched B, scales zero/negative/subnormal/huge, A's range"};
