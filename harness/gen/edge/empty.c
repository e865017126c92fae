/* harness/gen/edge/empty.c — the `empty` edge suite (docs/edge-suites.md): M, N, K or the batch
 * 0. */
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
}

const qh_edge_suite qh_edge_suite_empty = {
    "empty", 8, suite_empty,
    "M = 0, N = 0, K = 0 (every sum 0) and batch 0"};
