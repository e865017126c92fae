/* harness/gen/edge/extremes.c — the `extremes` edge suite (docs/edge-suites.md): products of the
 * extreme values that overflow a saturating int16 pair sum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/gen/edge_build.h"

static void suite_extremes_int16(qh_edge_builder *x)
{
    static const int64_t ks[3] = {2, 4, 64};
    for (int ki = 0; ki < 3; ki++) {
        int64_t k = ks[ki];
        for (int rev = 0; rev < 2; rev++) {
            /* u8 255 against s8 -128 (column 0) and 127 (column 1), or the types swapped;
             * row 1 alternates to mix signs inside a pair */
            int32_t ta = rev ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    tb = rev ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
            int64_t *av = malloc(sizeof(int64_t) * (size_t)(2 * k));
            int64_t *bv = malloc(sizeof(int64_t) * (size_t)(k * 2));
            if (!av || !bv) {
                free(av);
                free(bv);
                qh_edge_fail(x, "out of memory");
                return;
            }
            for (int64_t i = 0; i < k; i++) {
                if (!rev) {
                    av[i] = 255;
                    av[k + i] = i % 2 ? 0 : 255;
                    bv[2 * i] = -128;
                    bv[2 * i + 1] = 127;
                } else {
                    av[i] = -128;
                    av[k + i] = 127;
                    bv[2 * i] = 255;
                    bv[2 * i + 1] = i % 2 ? 0 : 255;
                }
            }
            for (int op = 0; op < 2; op++) {
                qh_edge_case *c;
                if (op == 0) {
                    c = qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "%s%s-k%lld",
                                         qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb),
                                         (long long)k);
                    if (!c)
                        break;
                    qmm_matmulinteger *m = qh_edge_matmulinteger(c);
                    qh_edge_int_tensor(x, c, &m->a, ta, DIMS(2, k), av);
                    qh_edge_int_tensor(x, c, &m->b, tb, DIMS(k, 2), bv);
                } else {
                    int32_t ty = rev ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
                    c = qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "%s%s%s-k%lld",
                                         qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb),
                                         qh_edge_type_abbrev(ty), (long long)k);
                    if (!c)
                        break;
                    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
                    qh_edge_int_tensor(x, c, &q->a, ta, DIMS(2, k), av);
                    qh_edge_int_tensor(x, c, &q->b, tb, DIMS(k, 2), bv);
                    /* |acc| <= 255·128·K; y = acc / 2^e lands within ±128 */
                    int e = qh_edge_bit_length((uint64_t)(255 * 128 * k)) - 7;
                    qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1.0, 0, 1.0, 0, ldexp(1.0, e),
                                              ty == QMM_DTYPE_UINT8 ? 128 : 0, ty);
                }
                qh_edge_tag(c, "extreme-values");
                qh_edge_tag(c, "int16-pair-sum");
                qh_edge_describe(c,
                                 "255·(−128) and 255·127 products, K = %lld: any two of them "
                                 "overflow a saturating int16 pair sum (vpmaddubsw)",
                                 (long long)k);
            }
            free(av);
            free(bv);
        }
    }
    /* zero points at the far end: every centred value is ±255, products 65025 */
    for (int op = 0; op < 2; op++) {
        int64_t k = 64;
        qh_edge_case *c =
            op == 0 ? qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "zp-extremes-u8s8-k64")
                    : qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "zp-extremes-u8s8u8-k64");
        if (!c)
            return;
        qmm_tensor *a = op ? &qh_edge_qlinearmatmul(c)->a : &qh_edge_matmulinteger(c)->a;
        qmm_tensor *b = op ? &qh_edge_qlinearmatmul(c)->b : &qh_edge_matmulinteger(c)->b;
        qh_edge_int_tensor_filled(x, c, a, QMM_DTYPE_UINT8, DIMS(2, k), 0);
        if (a->data)
            memset(a->data, 255, (size_t)k); /* row 0: 255 − 255 = 0 ... row 1: 0 − 255 */
        qh_edge_int_tensor_filled(x, c, b, QMM_DTYPE_INT8, DIMS(k, 2), -128);
        if (op == 0) {
            qh_edge_int_tensor_filled(x, c, &qh_edge_matmulinteger(c)->a_zero_point,
                                      QMM_DTYPE_UINT8, SCALAR, 255);
            qh_edge_int_tensor_filled(x, c, &qh_edge_matmulinteger(c)->b_zero_point, QMM_DTYPE_INT8,
                                      SCALAR, 127);
        } else {
            qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1.0, 255, 1.0, 127, ldexp(1.0, 16),
                                      128, QMM_DTYPE_UINT8);
        }
        qh_edge_tag(c, "extreme-values");
        qh_edge_tag(c, "int16-pair-sum");
        qh_edge_tag(c, "zero-point-extremes");
        qh_edge_describe(c, "a_zero_point 255 and b_zero_point 127 against a = 0 and b = -128: "
                            "centred values -255 and -255, each product 65025 > int16");
    }
}

/* Zero points at one end of their type and the operands at the other: a − za and b − zb are
 * ±255, every product ±65025, in the simplest form of every type combination. Row 0 of a is
 * its zero point (centred 0), row 1 the far end; y = acc / 2^16 is ±64 around y's middle. */
static void zero_point_extremes(qh_edge_builder *x, qmm_op_kind op, int32_t ta, int32_t tb,
                                int32_t ty, int za_max, int zb_max)
{
    const int64_t k = 64;
    int64_t za = za_max ? qh_edge_int_max(ta) : qh_edge_int_min(ta);
    int64_t zb = zb_max ? qh_edge_int_max(tb) : qh_edge_int_min(tb);
    int64_t a_far = za_max ? qh_edge_int_min(ta) : qh_edge_int_max(ta);
    int64_t b_far = zb_max ? qh_edge_int_min(tb) : qh_edge_int_max(tb);
    qh_edge_case *c =
        op == QMM_OP_MATMULINTEGER
            ? qh_edge_add_case(x, op, 10, "zp-%s-%s-%s%s-k%lld", za_max ? "max" : "min",
                               zb_max ? "max" : "min", qh_edge_type_abbrev(ta),
                               qh_edge_type_abbrev(tb), (long long)k)
            : qh_edge_add_case(x, op, 10, "zp-%s-%s-%s%s%s-k%lld", za_max ? "max" : "min",
                               zb_max ? "max" : "min", qh_edge_type_abbrev(ta),
                               qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty), (long long)k);
    if (!c)
        return;
    qmm_tensor *a = qh_edge_operand(c, 0), *b = qh_edge_operand(c, 1);
    qh_edge_int_tensor_filled(x, c, a, ta, DIMS(2, k), a_far);
    for (int64_t i = 0; a->data && i < k; i++)
        qh_tensor_set_int(a, i, za); /* row 0 */
    qh_edge_int_tensor_filled(x, c, b, tb, DIMS(k, 2), b_far);
    qh_edge_unit_params(x, c, za, zb, ldexp(1.0, 16), ty == QMM_DTYPE_UINT8 ? 128 : 0, ty);
    qh_edge_tag(c, "extreme-values");
    qh_edge_tag(c, "int16-pair-sum");
    qh_edge_tag(c, "zero-point-extremes");
    qh_edge_describe(c,
                     "a_zero_point %lld and b_zero_point %lld (their type's %s and %s) against "
                     "a = %lld and b = %lld: centred values %+lld and %+lld, each product %+lld, "
                     "K = %lld; row 0 of a is its zero point (every sum 0)",
                     (long long)za, (long long)zb, za_max ? "largest" : "smallest",
                     zb_max ? "largest" : "smallest", (long long)a_far, (long long)b_far,
                     (long long)(a_far - za), (long long)(b_far - zb),
                     (long long)((a_far - za) * (b_far - zb)), (long long)k);
}

static void suite_extremes(qh_edge_builder *x)
{
    suite_extremes_int16(x);
    for (int t = 0; t < 8; t++)
        for (int e = 0; e < 4; e++) {
            int32_t ta = t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    tb = t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    ty = t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
            zero_point_extremes(x, QMM_OP_QLINEARMATMUL, ta, tb, ty, e & 2, e & 1);
            if (t & 1)
                zero_point_extremes(x, QMM_OP_MATMULINTEGER, ta, tb, 0, e & 2, e & 1);
        }
}

const qh_edge_suite qh_edge_suite_extremes = {
    "extremes", 4, suite_extremes,
    "uint8 255 against int8 -128/127 (and zero-point extremes): sums that break "
    "saturating int16 pair sums, K = 2, 4, 64"};
