/* harness/gen/edge/dq-blocked.c — the `dq-blocked` edge suite (docs/edge-suites.md):
 * DequantizeLinear blocked along every axis at block sizes 16..1024 with a short last block,
 * per tensor and per axis, every modelled x type, scale types and output_dtype, scales zero,
 * negative, subnormal and huge, float16 overflow; float8e8m0 scales (opset 24). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/gen/edge_build.h"

/* A case's form: x's type and shape, the axis and block_size (0: per axis, -1: per tensor),
 * the scale type, a zero point or none, output_dtype (0: the scale's type). */
typedef struct dq_form {
    int32_t xt;
    int32_t rank;
    int64_t dims[3];
    int32_t axis, block_size, st, zp, out, opset;
} dq_form;

/* A random x element of type t: its whole range (float8: a finite code of either sign). */
static int64_t x_value(qh_edge_builder *x, int32_t t)
{
    switch (t) {
    case QMM_DTYPE_UINT8: return qh_rng_range(&x->rng, 0, 255);
    case QMM_DTYPE_INT8: return qh_rng_range(&x->rng, -128, 127);
    case QMM_DTYPE_UINT16: return qh_rng_range(&x->rng, 0, 65535);
    case QMM_DTYPE_INT16: return qh_rng_range(&x->rng, -32768, 32767);
    case QMM_DTYPE_INT32: return qh_rng_range(&x->rng, INT32_MIN, INT32_MAX);
    case QMM_DTYPE_UINT4: return qh_rng_range(&x->rng, 0, 15);
    case QMM_DTYPE_INT4: return qh_rng_range(&x->rng, -8, 7);
    case QMM_DTYPE_UINT2: return qh_rng_range(&x->rng, 0, 3);
    case QMM_DTYPE_INT2: return qh_rng_range(&x->rng, -2, 1);
    case QMM_DTYPE_FLOAT4E2M1: return qh_rng_range(&x->rng, 0, 15); /* every code is finite */
    default: /* float8: magnitudes 1..0x70 are finite in all four, and so is their negation */
        return qh_rng_range(&x->rng, 1, 0x70) | (qh_rng_chance(&x->rng, 1, 2) ? 0x80 : 0);
    }
}

static qh_edge_case *dq_case(qh_edge_builder *x, const dq_form *f, const char *name,
                             const char *tag, const char *what)
{
    qh_edge_case *c = qh_edge_add_case(x, QMM_OP_DEQUANTIZELINEAR, f->opset ? f->opset : 21,
                                       "%s", name);
    if (!c)
        return NULL;
    qmm_dequantizelinear *d = &c->problem.call.u.dequantizelinear;
    int32_t ax = f->axis < 0 ? f->axis + f->rank : f->axis;
    int64_t sd[3];
    int32_t sr = f->rank;
    memcpy(sd, f->dims, sizeof sd);
    if (f->block_size > 0) {
        sd[ax] = (f->dims[ax] + f->block_size - 1) / f->block_size;
    } else if (f->block_size == 0) {
        sr = 1;
        sd[0] = f->dims[ax];
    } else {
        sr = 0;
    }
    d->axis = f->axis;
    d->block_size = f->block_size > 0 ? f->block_size : 0;
    d->output_dtype = f->out;
    if (!qh_problem_tensor(&c->problem, &d->x, f->xt, f->rank, f->dims) ||
        !qh_problem_tensor(&c->problem, &d->x_scale, f->st ? f->st : QMM_DTYPE_FLOAT, sr, sd) ||
        (f->zp && !qh_problem_tensor(&c->problem, &d->x_zero_point, f->xt, sr, sd))) {
        qh_edge_fail(x, "out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < qmm_tensor_numel(&d->x); i++)
        qh_tensor_set_int(&d->x, i, x_value(x, f->xt));
    for (int64_t i = 0; i < qmm_tensor_numel(&d->x_scale); i++)
        qh_tensor_set_scale(&d->x_scale, i, qh_edge_short_scale(x, -6, -2));
    for (int64_t i = 0; f->zp && i < qmm_tensor_numel(&d->x_zero_point); i++)
        qh_tensor_set_int(&d->x_zero_point, i, x_value(x, f->xt));
    qh_edge_tag(c, f->block_size > 0 ? "blocked" : f->block_size ? "per-tensor" : "per-axis");
    if (f->block_size > 0 && f->dims[ax] % f->block_size)
        qh_edge_tag(c, "short-last-block");
    qh_edge_tag(c, f->zp ? "zero-points" : "no-zero-points");
    if (tag)
        qh_edge_tag(c, tag);
    char dims[64], how[32];
    qh_format_dims(&d->x, dims, sizeof dims);
    if (f->block_size > 0)
        snprintf(how, sizeof how, "block_size %d", f->block_size);
    else
        snprintf(how, sizeof how, "%s", f->block_size ? "per tensor" : "per axis");
    qh_edge_describe(c, "x %s %s, axis %d, %s, %s scales%s: %s", qmm_dtype_name(f->xt), dims,
                     f->axis, how, qmm_dtype_name(f->st ? f->st : QMM_DTYPE_FLOAT),
                     f->zp ? ", zero points" : "", what);
    return c;
}

/* Every scale of the case `v`, or each multiplied by `mul` (v 0) and negated when `neg`. */
static void set_scales(qh_edge_case *c, double v, double mul, int neg)
{
    if (!c)
        return;
    qmm_tensor *t = &c->problem.call.u.dequantizelinear.x_scale;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++) {
        double s = v != 0.0 ? v : qmm_scale_decode(t->dtype, t->data, i) * mul;
        qh_tensor_set_scale(t, i, neg ? -s : s);
    }
}

static const char *type_slug(int32_t t)
{
    switch (t) {
    case QMM_DTYPE_UINT16: return "u16";
    case QMM_DTYPE_INT16: return "s16";
    case QMM_DTYPE_INT32: return "s32";
    case QMM_DTYPE_UINT4: return "u4";
    case QMM_DTYPE_INT4: return "s4";
    case QMM_DTYPE_UINT2: return "u2";
    case QMM_DTYPE_INT2: return "s2";
    case QMM_DTYPE_FLOAT4E2M1: return "f4e2m1";
    default: return qh_edge_type_abbrev(t);
    }
}

static void suite_dq_blocked(qh_edge_builder *x)
{
    char name[64];
    const int32_t U8 = QMM_DTYPE_UINT8, S8 = QMM_DTYPE_INT8;
    /* block sizes 16..1024, K = block + 7: a short second block */
    for (int32_t bs = 16; bs <= 1024; bs *= 2) {
        snprintf(name, sizeof name, "block%d-axis0", (int)bs);
        dq_case(x, &(dq_form){U8, 2, {bs + 7, 2}, 0, bs, 0, 1, 0, 0}, name, NULL,
                "the second block along axis 0 holds 7 elements, each block its own scale and "
                "zero point (the weights of a [K, N] MatMul)");
    }
    /* every axis */
    dq_case(x, &(dq_form){S8, 2, {3, 37}, 1, 16, 0, 1, 0, 0}, "axis1", NULL,
            "blocked along the last axis of a 2-D x");
    dq_case(x, &(dq_form){U8, 3, {2, 3, 37}, -1, 16, 0, 1, 0, 0}, "axis-neg1-rank3", NULL,
            "blocked along axis -1 of a 3-D x");
    dq_case(x, &(dq_form){S8, 3, {37, 2, 3}, 0, 16, 0, 0, 0, 0}, "axis0-rank3", NULL,
            "blocked along axis 0 of a 3-D x, no zero point (0)");
    dq_case(x, &(dq_form){U8, 3, {2, 37, 3}, 1, 32, 0, 1, 0, 0}, "axis1-rank3", NULL,
            "blocked along the middle axis of a 3-D x");
    dq_case(x, &(dq_form){S8, 2, {5, 3}, 0, 16, 0, 1, 0, 0}, "block-past-dim", NULL,
            "block_size 16 over a dim of 5: one short block");
    dq_case(x, &(dq_form){U8, 2, {5, 3}, 1, 0, 0, 1, 0, 0}, "per-axis", NULL,
            "per axis: one scale and zero point per column");
    dq_case(x, &(dq_form){S8, 2, {5, 3}, 1, -1, 0, 1, 0, 0}, "per-tensor", NULL,
            "per tensor: one scale and zero point");
    /* every modelled x type, blocked along axis 0 */
    static const int32_t xts[9] = {QMM_DTYPE_UINT8,         QMM_DTYPE_INT8,
                                   QMM_DTYPE_UINT16,        QMM_DTYPE_INT16,
                                   QMM_DTYPE_INT32,         QMM_DTYPE_FLOAT8E4M3FN,
                                   QMM_DTYPE_FLOAT8E4M3FNUZ, QMM_DTYPE_FLOAT8E5M2,
                                   QMM_DTYPE_FLOAT8E5M2FNUZ};
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "type-%s", type_slug(xts[i]));
        dq_case(x, &(dq_form){xts[i], 2, {37, 3}, 0, 16, 0, i < 5, 0, 0}, name, "types",
                i < 5 ? "x over its whole range, zero points too"
                      : "finite float8 codes of both signs (no zero point: it must be 0)");
    }
    /* scale types and output_dtype */
    dq_case(x, &(dq_form){U8, 2, {37, 3}, 0, 16, QMM_DTYPE_FLOAT16, 1, 0, 0}, "scales-float16",
            "types", "float16 scales, float16 y");
    dq_case(x, &(dq_form){S8, 2, {37, 3}, 0, 16, QMM_DTYPE_BFLOAT16, 1, 0, 0},
            "scales-bfloat16", "types", "bfloat16 scales, bfloat16 y");
    dq_case(x, &(dq_form){QMM_DTYPE_INT16, 2, {37, 3}, 0, 16, 0, 1, QMM_DTYPE_FLOAT16, 23},
            "output-float16", "types", "opset 23, float scales, output_dtype float16");
    dq_case(x, &(dq_form){QMM_DTYPE_INT32, 2, {37, 3}, 0, 16, QMM_DTYPE_BFLOAT16, 0,
                          QMM_DTYPE_FLOAT, 25},
            "output-float", "types", "opset 25, bfloat16 scales, output_dtype float");
    /* scale values */
    set_scales(dq_case(x, &(dq_form){U8, 2, {37, 3}, 0, 16, 0, 1, 0, 0}, "scale-zero",
                       "zero-scale", "every scale 0: y is 0 (valid: DequantizeLinear has no "
                       "rule against it)"),
               0.0, 0.0, 0);
    set_scales(dq_case(x, &(dq_form){S8, 2, {37, 3}, 0, 16, 0, 1, 0, 0}, "scale-negative",
                       "negative-scale", "every scale negative"),
               0.0, 1.0, 1);
    set_scales(dq_case(x, &(dq_form){U8, 2, {37, 3}, 0, 16, 0, 1, 0, 0}, "scale-subnormal",
                       "subnormal", "every scale a float32 subnormal (about 2^-140): y rounds "
                       "once into the subnormal range"),
               0.0, ldexp(1, -136), 0);
    set_scales(dq_case(x, &(dq_form){QMM_DTYPE_INT16, 2, {37, 3}, 0, 16, 0, 1, 0, 0},
                       "scale-huge", "huge", "every scale about 2^100"),
               0.0, ldexp(1, 102), 0);
    set_scales(dq_case(x, &(dq_form){U8, 2, {37, 3}, 0, 16, QMM_DTYPE_FLOAT16, 1, 0, 0},
                       "scale-float16-subnormal", "subnormal",
                       "every scale a float16 subnormal (2^-22..2^-18)"),
               0.0, ldexp(1, -16), 0);
    set_scales(dq_case(x, &(dq_form){QMM_DTYPE_INT16, 2, {37, 3}, 0, 16, QMM_DTYPE_FLOAT16, 0,
                                     0, 0},
                       "float16-overflow", "fp16-overflow",
                       "int16 x times float16 scale 4: |x*4| past 65504 rounds to +-inf in "
                       "float16, the rest is exact"),
               4.0, 0.0, 0);
    qh_edge_case *c = dq_case(x, &(dq_form){QMM_DTYPE_INT32, 1, {1}, 0, -1, QMM_DTYPE_BFLOAT16,
                                             0, 0, 0},
                              "int32-bfloat16-one-rounding", "double-rounding",
                              "x = 2^24 + 2^16 + 1 (int32), scale 1 (bfloat16): the product "
                              "rounds once to bfloat16, 2^24 + 2^17; rounding through float32 "
                              "first gives 2^24");
    if (c) {
        qh_tensor_set_int(&c->problem.call.u.dequantizelinear.x, 0, (1 << 24) + (1 << 16) + 1);
        set_scales(c, 1.0, 0.0, 0);
    }
    /* last, so that the cases above keep their random draws: the packed sub-byte types (two or four to a byte, element 0 in the low bits): 111
     * elements, so the last byte has padding; zero points packed the same way (float4e2m1:
     * none, it must be 0), each at the first opset that has the type */
    static const struct {
        int32_t t, opset, zp;
    } packed[5] = {{QMM_DTYPE_UINT4, 21, 1}, {QMM_DTYPE_INT4, 21, 1},
                   {QMM_DTYPE_FLOAT4E2M1, 23, 0}, {QMM_DTYPE_UINT2, 25, 1},
                   {QMM_DTYPE_INT2, 25, 1}};
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "type-%s", type_slug(packed[i].t));
        dq_case(x, &(dq_form){packed[i].t, 2, {37, 3}, 0, 16, 0, packed[i].zp, 0, packed[i].opset},
                name, "types",
                packed[i].zp ? "packed x over its whole range, packed zero points too, an odd "
                               "element count (padding in the last byte)"
                             : "every float4e2m1 code (no zero point: it must be 0), an odd "
                               "element count");
    }
    /* per axis along axis 1 with packed int4: the zero points' 3 codes pack into 2 bytes */
    dq_case(x, &(dq_form){QMM_DTYPE_INT4, 2, {5, 3}, 1, 0, 0, 1, 0, 21}, "per-axis-s4", "types",
            "int4 per axis: 15 packed codes, 3 packed zero points");
    /* float8e8m0 scales (opset 24, output_dtype set: y cannot be float8e8m0), after the cases
     * above for the same reason; the codes are set by hand: the extremes, around 1, NaN */
    static const struct {
        int32_t xt, rank, axis, bs, zp, out;
        int64_t dims[2];
        const char *name, *what;
        unsigned char codes[9];
    } e8[3] = {
        {QMM_DTYPE_UINT8, 2, 0, 16, 1, QMM_DTYPE_FLOAT, {37, 3}, "scales-e8m0-blocked",
         "output_dtype float, codes 0 (2^-127: y subnormal), 1, 126..128, 253, 254 (2^127: y "
         "overflows to inf) and 255 (NaN: y NaN)",
         {0, 1, 126, 127, 128, 253, 254, 255, 120}},
        {QMM_DTYPE_INT16, 2, 0, -1, 0, QMM_DTYPE_BFLOAT16, {5, 3}, "scales-e8m0-per-tensor",
         "output_dtype bfloat16, code 130 (8): int16 x * 8 rounds once to bfloat16",
         {130}},
        {QMM_DTYPE_INT8, 2, 1, 0, 1, QMM_DTYPE_FLOAT16, {5, 3}, "scales-e8m0-per-axis",
         "output_dtype float16, codes 112 (2^-15), 127 (1), 142 (2^15: y past 65504 is inf)",
         {112, 127, 142}},
    };
    for (int i = 0; i < 3; i++) {
        qh_edge_case *e = dq_case(x, &(dq_form){e8[i].xt, e8[i].rank, {e8[i].dims[0],
                                                e8[i].dims[1]}, e8[i].axis, e8[i].bs,
                                                QMM_DTYPE_FLOAT8E8M0, e8[i].zp, e8[i].out, 24},
                                  e8[i].name, "e8m0", e8[i].what);
        if (!e)
            continue;
        qmm_tensor *t = &e->problem.call.u.dequantizelinear.x_scale;
        for (int64_t k = 0; k < qmm_tensor_numel(t) && k < 9; k++)
            ((unsigned char *)t->data)[k] = e8[i].codes[k];
    }
}

const qh_edge_suite qh_edge_suite_dq_blocked = {
    "dq-blocked", 20, suite_dq_blocked,
    "DequantizeLinear blocked (block sizes 16..1024, every axis, a short last block), per axis, "
    "per tensor; every modelled x type, scale and output types; scales zero, negative, "
    "subnormal, huge; float16 overflow"};
