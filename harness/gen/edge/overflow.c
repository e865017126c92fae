/* harness/gen/edge/overflow.c — the `overflow` edge suite (docs/edge-suites.md): K = 33025 (the
 * accumulator fits int32) and 33026 (it does not), every product ±65025. */
#include <math.h>
#include <stdio.h>

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

/* The simplest form (M = N = 1, per-tensor zero points, float scales): an accumulator of
 * `sign`·(2^24 + 2^17 + 1) ("above": y = acc / 2^18 is 64.5 + 2^-18, so 65) or
 * `sign`·(2^24 + 3·2^17 − 1) ("below": 65.5 − 2^-18, so 65). Both are odd and past 2^24, so
 * float32 holds only their even neighbours, and rounding acc to float32 lands exactly on the
 * tie, which rounds to even: 64 or 66. Built from products of ±255·255, then ±255·d and ±r·1. */
static void past_2p24_case(qh_edge_builder *x, qmm_op_kind op, int32_t ta, int32_t tb, int32_t ty,
                           int below, int sign)
{
    const int64_t full = 255 * 255;
    int64_t target = below ? (1 << 24) + 3 * (1 << 17) - 1 : (1 << 24) + (1 << 17) + 1;
    int64_t n_full = target / full, rest = target % full;
    int64_t d = rest / 255, r = rest % 255, k = n_full + 2;
    /* a − za = sign·[255 ... 255, 255, r], b − zb = [255 ... 255, d, 1] */
    int64_t za = sign > 0 ? qh_edge_int_min(ta) : qh_edge_int_max(ta), zb = qh_edge_int_min(tb);
    int mmi = op == QMM_OP_MATMULINTEGER;
    char types[16];
    snprintf(types, sizeof types, "%s%s%s", qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb),
             mmi ? "" : qh_edge_type_abbrev(ty));
    qh_edge_case *c = qh_edge_add_case(x, op, 10, "past-2p24-%s-%s-%s-k%lld",
                                       below ? "below" : "above", sign > 0 ? "pos" : "neg", types,
                                       (long long)k);
    if (!c)
        return;
    qmm_tensor *a = qh_edge_operand(c, 0), *b = qh_edge_operand(c, 1);
    qh_edge_int_tensor_filled(x, c, a, ta, DIMS(1, k), za + sign * 255);
    qh_edge_int_tensor_filled(x, c, b, tb, DIMS(k, 1), zb + 255);
    if (a->data && b->data) {
        qh_tensor_set_int(a, k - 1, za + sign * r);
        qh_tensor_set_int(b, k - 2, zb + d);
        qh_tensor_set_int(b, k - 1, zb + 1);
    }
    qh_edge_unit_params(x, c, za, zb, ldexp(1.0, 18), ty == QMM_DTYPE_UINT8 ? 128 : 0, ty);
    if (!mmi) {
        qh_edge_tag(c, "near-tie");
        qh_edge_tag(c, "float32-fooled");
    }
    qh_edge_tag(c, "k-large");
    qh_edge_tag(c, "past-2p24");
    qh_edge_tag(c, sign > 0 ? "positive" : "negative");
    if (mmi)
        qh_edge_describe(c, "acc = %lld, odd and past 2^24: a float32 accumulator holds only "
                            "its even neighbours", (long long)(sign * target));
    else
        qh_edge_describe(c,
                         "acc = %lld, odd and past 2^24, y_scale 2^18: exact acc/2^18 = "
                         "%s(%s) rounds to %s; acc rounded to float32 lands on the tie %s, "
                         "which rounds to even (%s)",
                         (long long)(sign * target), sign > 0 ? "" : "-",
                         below ? "65.5 - 2^-18" : "64.5 + 2^-18", sign > 0 ? "65" : "-65",
                         below ? (sign > 0 ? "65.5" : "-65.5") : (sign > 0 ? "64.5" : "-64.5"),
                         below ? (sign > 0 ? "66" : "-66") : (sign > 0 ? "64" : "-64"));
}

/* K = 33026 in the simplest form: every product +65025, acc = 2147515650 past int32. */
static void past_int32_case(qh_edge_builder *x, qmm_op_kind op, int32_t ta, int32_t tb,
                            int32_t ty)
{
    const int64_t k = 33026;
    int mmi = op == QMM_OP_MATMULINTEGER;
    int64_t za = qh_edge_int_min(ta), zb = qh_edge_int_min(tb);
    qh_edge_case *c =
        mmi ? qh_edge_add_case(x, op, 10, "per-tensor-%s%s-k%lld", qh_edge_type_abbrev(ta),
                               qh_edge_type_abbrev(tb), (long long)k)
            : qh_edge_add_case(x, op, 10, "per-tensor-%s%s%s-k%lld", qh_edge_type_abbrev(ta),
                               qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty), (long long)k);
    if (!c)
        return;
    qh_edge_int_tensor_filled(x, c, qh_edge_operand(c, 0), ta, DIMS(1, k), qh_edge_int_max(ta));
    qh_edge_int_tensor_filled(x, c, qh_edge_operand(c, 1), tb, DIMS(k, 1), qh_edge_int_max(tb));
    qh_edge_unit_params(x, c, za, zb, ldexp(1.0, 25), ty == QMM_DTYPE_UINT8 ? 128 : 0, ty);
    qh_edge_tag(c, "k-large");
    qh_edge_tag(c, "extreme-values");
    qh_edge_describe(c, "K = %lld, per-tensor zero points at the bottom of their types and "
                        "operands at the top: every product 65025, acc = %lld does not fit "
                        "int32%s",
                     (long long)k, (long long)(65025 * k),
                     mmi ? " (MatMulInteger: the int32-wrapped sum is the answer)"
                         : " (y_scale 2^25: the exact and the wrapped acc give +64 and -64)");
}

static void suite_overflow(qh_edge_builder *x)
{
    overflow_case(x, QMM_OP_MATMULINTEGER, QMM_DTYPE_UINT8, 33025);
    overflow_case(x, QMM_OP_MATMULINTEGER, QMM_DTYPE_UINT8, 33026);
    overflow_case(x, QMM_OP_MATMULINTEGER, QMM_DTYPE_INT8, 33026);
    overflow_case(x, QMM_OP_QLINEARMATMUL, QMM_DTYPE_UINT8, 33025);
    overflow_case(x, QMM_OP_QLINEARMATMUL, QMM_DTYPE_UINT8, 33026);
    overflow_case(x, QMM_OP_QLINEARMATMUL, QMM_DTYPE_INT8, 33026);
    /* the simplest form of every type combination, (a, b, y) from t's bits */
    for (int t = 0; t < 8; t++) {
        int32_t ta = t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                tb = t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                ty = t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
        for (int below = 0; below < 2; below++)
            for (int sign = 1; sign >= -1; sign -= 2) {
                past_2p24_case(x, QMM_OP_QLINEARMATMUL, ta, tb, ty, below, sign);
                if ((t & 1) && !below)
                    past_2p24_case(x, QMM_OP_MATMULINTEGER, ta, tb, 0, below, sign);
            }
        past_int32_case(x, QMM_OP_QLINEARMATMUL, ta, tb, ty);
        if (t & 1)
            past_int32_case(x, QMM_OP_MATMULINTEGER, ta, tb, 0);
    }
}

const qh_edge_suite qh_edge_suite_overflow = {
    "overflow", 9, suite_overflow,
    "K = 33025 (acc fits int32) and K = 33026 (acc overflows) with extreme "
    "values"};
