/* harness/gen/edge/empty.c — the `empty` edge suite (docs/edge-suites.md): M, N, K or the batch
 * 0. */
#include <stdio.h>
#include <string.h>

#include "harness/gen/edge_build.h"

static void suite_empty(qh_edge_builder *x)
{
    qh_edge_shape s0 = {0, {0}};
    int i = 0;
    for (int op = 0; op < 2; op++) {
        qmm_op_kind k = op ? QMM_OP_MATMULINTEGER : QMM_OP_QLINEARMATMUL;
        qh_edge_random_operands_case(x, k, "m0", DIMS(0, 3), DIMS(3, 2), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "n0", DIMS(2, 3), DIMS(3, 0), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "k0", DIMS(2, 0), DIMS(0, 3), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "batch0", DIMS(0, 2, 3), DIMS(3, 2), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "k0-1d", DIMS(0), DIMS(0), s0, s0, s0, i++);
    }
    qh_edge_random_operands_case(x, QMM_OP_QLINEARMATMUL, "k0-per-row-col", DIMS(3, 0), DIMS(0, 2),
                                 (qh_edge_shape){1, {3}}, (qh_edge_shape){1, {2}},
                                 (qh_edge_shape){2, {3, 2}}, i++);
    qh_edge_random_operands_case(x, QMM_OP_QLINEARMATMUL, "m0-per-row", DIMS(0, 3), DIMS(3, 2),
                                 (qh_edge_shape){1, {0}}, s0, s0, i++);
    qh_edge_random_operands_case(x, QMM_OP_MATMULINTEGER, "k0-zero-points", DIMS(3, 0), DIMS(0, 2),
                                 (qh_edge_shape){1, {3}}, (qh_edge_shape){1, {2}}, s0, i++);
    for (size_t j = x->out->count - 13; j < x->out->count; j++) {
        qh_edge_case *c = &x->out->items[j];
        c->meta.n_tags = 1;
        qh_edge_tag(c, "empty");
        if (strstr(c->name, "/k0"))
            qh_edge_tag(c, "k0");
        qh_edge_describe(c, "an empty dimension: %s",
                         strstr(c->name, "/k0") ? "K = 0, every sum is 0 (y = y_zero_point)"
                                                : "the output has no elements");
    }
    /* K = 0 in the simplest form of every type combination: y is y_zero_point, here at the
     * bottom, the middle and the top of its type (MatMulInteger: 0, whatever the zero points) */
    static const char *const at[3] = {"min", "mid", "max"};
    for (int t = 0; t < 8; t++) {
        int32_t ta = t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                tb = t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                ty = t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
        for (int z = 0; z < 3; z++) {
            int64_t lo_y = qh_edge_int_min(ty), hi_y = qh_edge_int_max(ty);
            int64_t zy = z == 0 ? lo_y : z == 2 ? hi_y : (lo_y + hi_y + 1) / 2;
            qh_edge_case *c = qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "k0-zp-%s-%s%s%s",
                                               at[z], qh_edge_type_abbrev(ta),
                                               qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty));
            if (!c)
                return;
            qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
            qh_edge_int_tensor(x, c, &q->a, ta, DIMS(2 + z, 0), NULL);
            qh_edge_int_tensor(x, c, &q->b, tb, DIMS(0, 3 - z), NULL);
            qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 0.25, qh_edge_int_max(ta), 0.5,
                                      qh_edge_int_min(tb), 0.125, zy, ty);
            qh_edge_tag(c, "empty");
            qh_edge_tag(c, "k0");
            qh_edge_describe(c, "K = 0: every sum is 0, so y is y_zero_point %lld (the %s of "
                                "%s)", (long long)zy, z == 0 ? "bottom" : z == 2 ? "top" : "middle",
                             qmm_dtype_name(ty));
            if (!(t & 1))
                continue;
            c = qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "k0-zp-%s-%s%s", at[z],
                                 qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb));
            if (!c)
                return;
            qmm_matmulinteger *m = qh_edge_matmulinteger(c);
            qh_edge_int_tensor(x, c, &m->a, ta, DIMS(2 + z, 0), NULL);
            qh_edge_int_tensor(x, c, &m->b, tb, DIMS(0, 3 - z), NULL);
            int64_t za = z == 0 ? qh_edge_int_min(ta) : qh_edge_int_max(ta);
            int64_t zb = z == 2 ? qh_edge_int_max(tb) : qh_edge_int_min(tb);
            qh_edge_int_tensor_filled(x, c, &m->a_zero_point, ta, SCALAR, za);
            qh_edge_int_tensor_filled(x, c, &m->b_zero_point, tb, SCALAR, zb);
            qh_edge_tag(c, "empty");
            qh_edge_tag(c, "k0");
            qh_edge_describe(c, "K = 0 with zero points %lld and %lld: every sum is 0",
                             (long long)za, (long long)zb);
        }
    }
}

const qh_edge_suite qh_edge_suite_empty = {
    "empty", 8, suite_empty,
    "M = 0, N = 0, K = 0 (every sum 0) and batch 0"};
