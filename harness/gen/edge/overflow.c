/* harness/gen/edge/overflow.c — the `overflow` edge suite (docs/edge-suites.md): K = 33025 (the
 * accumulator fits int32) and 33026 (it does not), every product ±65025. */
#include <math.h>

#include "harness/gen/edge_build.h"

static void overflow_case(qh_edge_builder *x, qmm_op_kind op, int32_t t, int64_t k)
{
    /* centred a = +255 everywhere; b column 0 centred +255, column 1 centred −255 */
    int64_t za = t == QMM_DTYPE_UINT8 ? 0 : 127,
            av = t == QMM_DTYPE_UINT8 ? 255 : -128; /* s8: -128 − 127 = −255 */
    int64_t zb[2], bv[2];
    if (t == QMM_DTYPE_UINT8) {
        zb[0] = 0, bv[0] = 255, zb[1] = 255, bv[1] = 0;
    } else {
        zb[0] = 127, bv[0] = -128, zb[1] = -128, bv[1] = 127;
    }
    qh_edge_case *c =
        op == QMM_OP_MATMULINTEGER
            ? qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "%s%s-k%lld", qh_edge_type_abbrev(t),
                               qh_edge_type_abbrev(t), (long long)k)
            : qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "%s%s%s-k%lld", qh_edge_type_abbrev(t),
                               qh_edge_type_abbrev(t), qh_edge_type_abbrev(t), (long long)k);
    if (!c)
        return;
    qmm_tensor *a =
        op == QMM_OP_MATMULINTEGER ? &qh_edge_matmulinteger(c)->a : &qh_edge_qlinearmatmul(c)->a;
    qmm_tensor *b =
        op == QMM_OP_MATMULINTEGER ? &qh_edge_matmulinteger(c)->b : &qh_edge_qlinearmatmul(c)->b;
    qh_edge_int_tensor_filled(x, c, a, t, DIMS(1, k), av);
    qh_edge_int_tensor_filled(x, c, b, t, DIMS(k, 2), 0);
    for (int64_t i = 0; b->data && i < k; i++) {
        qh_tensor_set_int(b, 2 * i, bv[0]);
        qh_tensor_set_int(b, 2 * i + 1, bv[1]);
    }
    if (op == QMM_OP_MATMULINTEGER) {
        qh_edge_int_tensor_filled(x, c, &qh_edge_matmulinteger(c)->a_zero_point, t, SCALAR, za);
        qh_edge_int_tensor(x, c, &qh_edge_matmulinteger(c)->b_zero_point, t, DIMS(2), zb);
    } else {
        qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
        qh_edge_scale_tensor_filled(x, c, &q->a_scale, QMM_DTYPE_FLOAT, SCALAR, 1.0);
        qh_edge_int_tensor_filled(x, c, &q->a_zero_point, t, SCALAR, za);
        qh_edge_scale_tensor_filled(x, c, &q->b_scale, QMM_DTYPE_FLOAT, DIMS(2), 1.0);
        qh_edge_int_tensor(x, c, &q->b_zero_point, t, DIMS(2), zb);
        qh_edge_scale_tensor_filled(x, c, &q->y_scale, QMM_DTYPE_FLOAT, SCALAR, ldexp(1.0, 25));
        qh_edge_int_tensor_filled(x, c, &q->y_zero_point, t, SCALAR,
                                  t == QMM_DTYPE_UINT8 ? 128 : 0);
    }
    qh_edge_tag(c, "k-large");
    qh_edge_tag(c, "extreme-values");
    qh_edge_describe(c, "K = %lld, every product ±65025: acc = ±%lld, which %s int32%s",
                     (long long)k, (long long)(65025 * k),
                     65025 * k > 2147483647 ? "does not fit" : "still fits",
                     op == QMM_OP_MATMULINTEGER
                         ? " (MatMulInteger: the int32-wrapped sum is the answer)"
                         : " (y_scale 2^25: the exact and the wrapped acc give ±64 and ∓64)");
}

static void suite_overflow(qh_edge_builder *x)
{
    overflow_case(x, QMM_OP_MATMULINTEGER, QMM_DTYPE_UINT8, 33025);
    overflow_case(x, QMM_OP_MATMULINTEGER, QMM_DTYPE_UINT8, 33026);
    overflow_case(x, QMM_OP_MATMULINTEGER, QMM_DTYPE_INT8, 33026);
    overflow_case(x, QMM_OP_QLINEARMATMUL, QMM_DTYPE_UINT8, 33025);
    overflow_case(x, QMM_OP_QLINEARMATMUL, QMM_DTYPE_UINT8, 33026);
    overflow_case(x, QMM_OP_QLINEARMATMUL, QMM_DTYPE_INT8, 33026);
}

const qh_edge_suite qh_edge_suite_overflow = {
    "overflow", 9, suite_overflow,
    "K = 33025 (acc fits int32) and K = 33026 (acc overflows) with extreme "
    "values"};
