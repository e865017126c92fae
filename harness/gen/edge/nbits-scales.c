/* harness/gen/edge/nbits-scales.c — the `nbits-scales` edge suite (docs/edge-suites.md):
 * MatMulNBits scales zero, negative, subnormal and huge, and float16 overflow. */
#include <math.h>
#include <stdio.h>

#include "harness/gen/edge_build.h"

/* How a case changes the random problem: scales (each multiplied by `scale_mul`, or
 * `scale_const` when it is not 0, negated
 * when `negate` says: 1 all, 2 every other, 0 none; 0 where `zero` says: 1 all, 2 block 1 of
 * column 1), A multiplied by `a_mul`, or constants (`code_byte` >= 0: every byte of B;
 * `a_const` != 0: every A element, the second half of K negated when `a_split`). */
typedef struct scales_plan {
    int32_t t1;
    int level;
    double scale_mul, scale_const, a_mul, a_const;
    int negate, zero, code_byte, a_split;
} scales_plan;

static void scales_case(qh_edge_builder *x, const char *name, const scales_plan *p,
                        const char *tag, const char *what)
{
    qh_edge_nbits s = {.m = 2, .k = 37, .n = 3, .bits = 4, .block_size = 16,
                       .level = p->level, .t1 = p->t1,
                       .zp = p->code_byte >= 0 ? QH_NBITS_ZP_ABSENT : QH_NBITS_ZP_PACKED,
                       .bias = p->zero == 1};
    qh_edge_case *c = qh_edge_nbits_case(x, &s, "%s", name);
    if (!c)
        return;
    qmm_matmulnbits *q = &c->problem.call.u.matmulnbits;
    int64_t kb = (s.k + s.block_size - 1) / s.block_size;
    for (int64_t i = 0; i < qmm_tensor_numel(&q->scales); i++) {
        double v = p->scale_const != 0.0 ? p->scale_const
                   : qmm_scale_decode(q->scales.dtype, q->scales.data, i) * p->scale_mul;
        if (p->negate == 1 || (p->negate == 2 && i % 2))
            v = -v;
        if (p->zero == 1 || (p->zero == 2 && i == kb + 1))
            v = 0.0;
        qh_tensor_set_scale(&q->scales, i, v);
    }
    for (int64_t i = 0; i < qmm_tensor_numel(&q->a); i++) {
        double v = qmm_scale_decode(q->a.dtype, q->a.data, i) * p->a_mul;
        if (p->a_const != 0.0)
            v = p->a_split && i % s.k >= s.k / 2 ? -p->a_const : p->a_const;
        qh_tensor_set_scale(&q->a, i, v);
    }
    for (int64_t i = 0; p->code_byte >= 0 && i < qmm_tensor_numel(&q->b); i++)
        qh_tensor_set_int(&q->b, i, p->code_byte);
    qh_edge_tag(c, tag);
    char form[160];
    qh_edge_nbits_form(&s, form, sizeof form);
    qh_edge_describe(c, "%s: %s", form, what);
}

static void suite_nbits_scales(qh_edge_builder *x)
{
    for (int level = 0; level <= 4; level += 4) {
        char name[48];
        snprintf(name, sizeof name, "zero-all-level%d", level);
        scales_case(x, name, &(scales_plan){.level = level, .scale_mul = 1, .a_mul = 1,
                                            .zero = 1, .code_byte = -1},
                    "zero-scale", "every scale 0: Y is the bias, exactly");
        snprintf(name, sizeof name, "negative-all-level%d", level);
        scales_case(x, name, &(scales_plan){.level = level, .scale_mul = 1, .a_mul = 1,
                                            .negate = 1, .code_byte = -1},
                    "negative-scale",
                    "every scale negative (onnxruntime 25814: a dispatch taken with zero or "
                    "negative scales)");
        snprintf(name, sizeof name, "subnormal-level%d", level);
        scales_case(x, name, &(scales_plan){.level = level, .scale_mul = ldexp(1, -130),
                                            .a_mul = ldexp(1, 100), .code_byte = -1},
                    "subnormal",
                    "every scale a float32 subnormal (2^-136..2^-132), A about 2^100: "
                    "ordinary outputs");
    }
    scales_case(x, "zero-one-block", &(scales_plan){.scale_mul = 1, .a_mul = 1, .zero = 2,
                                                     .code_byte = -1},
                "zero-scale", "the scale of block 1 of column 1 is 0: that block adds nothing");
    scales_case(x, "negative-mixed", &(scales_plan){.level = 4, .scale_mul = 1, .a_mul = 1,
                                                     .negate = 2, .code_byte = -1},
                "negative-scale", "every other scale negative");
    scales_case(x, "subnormal-output", &(scales_plan){.scale_mul = ldexp(1, -130), .a_mul = 1,
                                                       .code_byte = -1},
                "subnormal",
                "every scale a float32 subnormal, A about 1: outputs in the subnormal range "
                "(the bound's underflow term)");
    scales_case(x, "huge-float32", &(scales_plan){.level = 4, .scale_mul = ldexp(1, 100),
                                                   .a_mul = ldexp(1, -100), .code_byte = -1},
                "huge", "scales about 2^96, A about 2^-100: ordinary outputs");
    scales_case(x, "huge-bfloat16", &(scales_plan){.t1 = QMM_DTYPE_BFLOAT16,
                                                    .scale_mul = ldexp(1, 100),
                                                    .a_mul = ldexp(1, -100), .code_byte = -1},
                "huge", "T1 bfloat16, scales about 2^96, A about 2^-100");
    scales_case(x, "subnormal-float16", &(scales_plan){.t1 = QMM_DTYPE_FLOAT16,
                                                        .scale_mul = ldexp(1, -16),
                                                        .a_mul = ldexp(1, 8), .code_byte = -1},
                "subnormal",
                "T1 float16, every scale a float16 subnormal (2^-22..2^-18), A about 2^8");
    /* constant codes and A, zero points absent (8): every term known */
    scales_case(x, "float16-largest-scale",
                &(scales_plan){.t1 = QMM_DTYPE_FLOAT16, .scale_const = 65504, .a_mul = 1,
                               .a_const = ldexp(1, -10), .code_byte = 0x99},
                "huge",
                "T1 float16, every scale 65504 (the largest float16), every code 9 (zero point "
                "8): every weight exactly 65504; A = 2^-10: Y = 37*64 = 2368, exactly");
    scales_case(x, "float16-overflow-result",
                &(scales_plan){.t1 = QMM_DTYPE_FLOAT16, .scale_const = 1, .a_mul = 1,
                               .a_const = 512, .code_byte = 0xff},
                "fp16-overflow",
                "T1 float16, every weight (15 - 8)*1 = 7, A = 512: R = 37*3584 = 132608 is "
                "past the largest float16 (65504): Y = +inf");
    scales_case(x, "float16-overflow-partial-sums",
                &(scales_plan){.t1 = QMM_DTYPE_FLOAT16, .scale_const = 1, .a_mul = 1,
                               .a_const = 2048, .a_split = 1, .code_byte = 0xff},
                "fp16-overflow",
                "T1 float16, every weight 7, A = +2048 for the first 18 k and -2048 for the "
                "other 19: Y = -14336 exactly, while the partial sums reach 18*14336 = 258048, "
                "past the largest float16: a float16 accumulator (onnxruntime 29611) overflows");
}

const qh_edge_suite qh_edge_suite_nbits_scales = {
    "nbits-scales", 19, suite_nbits_scales,
    "MatMulNBits scales zero, negative, subnormal, huge; float16 overflow of the result and of "
    "partial sums"};
