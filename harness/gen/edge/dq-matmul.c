/* harness/gen/edge/dq-matmul.c — the `dq-matmul` edge suite (docs/edge-suites.md): the
 * unfused DequantizeLinear(block_size) -> MatMul pair and its fused form, MatMulNBits. */
#include <stdio.h>
#include <string.h>

#include "harness/gen/edge_build.h"

/* One pair: the weights of a MatMulNBits case (codes `bits` wide, block `bs`), the same
 * weights as DequantizeLinear's x [K, N] (uint8, or int8 codes - 2^(bits-1) when `sign`). */
typedef struct pair_form {
    const char *id;
    int bits, bs;
    int64_t m, k, n;
    int zp, sign;
} pair_form;

static void copy_tensor(qmm_tensor *to, const qmm_tensor *from)
{
    if (qmm_tensor_present(from))
        memcpy(to->data, from->data, (size_t)qmm_tensor_numel(from) * qmm_dtype_size(from->dtype));
}

static void pair(qh_edge_builder *x, const pair_form *f)
{
    char form[160];
    size_t first = x->out->count;
    for (int level = 0; level <= 4; level += 4) {
        qh_edge_nbits s = {.m = f->m, .k = f->k, .n = f->n, .bits = f->bits,
                           .block_size = f->bs, .level = level, .zp = f->zp, .bias = 1};
        qh_edge_case *c = qh_edge_nbits_case(x, &s, "%s-fused-level%d", f->id, level);
        if (!c)
            return;
        if (level) { /* the same call as level 0's (the list may have moved: index it) */
            const qmm_matmulnbits *a = &x->out->items[first].problem.call.u.matmulnbits;
            qmm_matmulnbits *b = &c->problem.call.u.matmulnbits;
            copy_tensor(&b->a, &a->a);
            copy_tensor(&b->b, &a->b);
            copy_tensor(&b->scales, &a->scales);
            copy_tensor(&b->zero_points, &a->zero_points);
            copy_tensor(&b->bias, &a->bias);
        }
        qh_edge_tag(c, "dq-matmul");
        qh_edge_tag(c, "fused");
        qh_edge_nbits_form(&s, form, sizeof form);
        qh_edge_describe(c,
                         "%s: the fused form of dequantizelinear/dq-matmul/%s -> MatMul (what "
                         "onnxruntime fuses it into, at accuracy level 4 by default): the exact "
                         "value is the graph's, A times that case's y plus the bias",
                         form, f->id);
    }
    qh_edge_case *c = qh_edge_add_case(x, QMM_OP_DEQUANTIZELINEAR, 21, "%s", f->id);
    if (!c)
        return;
    const qmm_matmulnbits *q = &x->out->items[first].problem.call.u.matmulnbits;
    qmm_dequantizelinear *d = &c->problem.call.u.dequantizelinear;
    int64_t kb = (f->k + f->bs - 1) / f->bs, off = f->sign ? 1 << (f->bits - 1) : 0;
    int32_t xt = f->sign ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    int zp = f->zp != QH_NBITS_ZP_ABSENT || !f->sign; /* absent: 2^(bits-1), 0 after the shift */
    d->axis = 0;
    d->block_size = f->bs;
    if (!qh_problem_tensor(&c->problem, &d->x, xt, DIMS(f->k, f->n)) ||
        !qh_problem_tensor(&c->problem, &d->x_scale, QMM_DTYPE_FLOAT, DIMS(kb, f->n)) ||
        (zp && !qh_problem_tensor(&c->problem, &d->x_zero_point, xt, DIMS(kb, f->n)))) {
        qh_edge_fail(x, "out of memory");
        return;
    }
    for (int64_t n = 0; n < f->n; n++) {
        for (int64_t k = 0; k < f->k; k++)
            qh_tensor_set_int(&d->x, k * f->n + n, qh_edge_nbits_code(q, n, k) - off);
        for (int64_t j = 0; j < kb; j++) {
            qh_tensor_set_scale(&d->x_scale, j * f->n + n,
                                qmm_scale_decode(q->scales.dtype, q->scales.data, n * kb + j));
            if (zp)
                qh_tensor_set_int(&d->x_zero_point, j * f->n + n,
                                  qh_edge_nbits_zero_point(q, n, j) - off);
        }
    }
    qh_edge_tag(c, "dq-matmul");
    qh_edge_tag(c, "unfused");
    qh_edge_tag(c, "blocked");
    qh_edge_describe(c,
                     "the unfused form: DequantizeLinear(axis 0, block_size %d) of %d-bit codes "
                     "held in %s%s; y is the weight matrix [K, N] that matmulnbits/dq-matmul/"
                     "%s-fused-level0 and -level4 dequantize (their B, scales and zero points "
                     "transposed%s), so A times y plus the bias is their exact value "
                     "(tests/test_edge.c checks that the two forms agree)",
                     f->bs, f->bits, f->sign ? "int8 as code - 2^(bits-1)" : "uint8",
                     f->sign ? " (int4 and int2 stand-in: not modelled yet)"
                             : f->bits < 8 ? " (uint4 and uint2 stand-in: not modelled yet)"
                                           : "",
                     f->id, f->zp == QH_NBITS_ZP_ABSENT ? "; its default zero point 2^(bits-1)"
                                                           " explicit"
                                                         : "");
}

static void suite_dq_matmul(qh_edge_builder *x)
{
    static const pair_form pairs[] = {
        {"u4-bs32-m1-k51", 4, 32, 1, 51, 3, QH_NBITS_ZP_PACKED, 0},
        {"s4-bs32-m2-k51", 4, 32, 2, 51, 3, QH_NBITS_ZP_ABSENT, 1},
        {"u8-bs64-m2-k99", 8, 64, 2, 99, 3, QH_NBITS_ZP_PACKED, 0},
        {"s8-bs32-m1-k51", 8, 32, 1, 51, 3, QH_NBITS_ZP_ABSENT, 1},
        {"u4-bs512-m1-k771", 4, 512, 1, 771, 3, QH_NBITS_ZP_PACKED, 0},
        {"u2-bs16-m2-k37", 2, 16, 2, 37, 2, QH_NBITS_ZP_ABSENT, 0},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && !x->failed; i++)
        pair(x, &pairs[i]);
}

const qh_edge_suite qh_edge_suite_dq_matmul = {
    "dq-matmul", 21, suite_dq_matmul,
    "the unfused DequantizeLinear(block_size) -> MatMul pair and its fused MatMulNBits form "
    "(levels 0 and 4): the same weights, which must agree"};
