/* harness/gen/edge/broadcast.c — the `broadcast` edge suite (docs/edge-suites.md): numpy batch
 * broadcasting up to rank 5, with batched parameters. */
#include "harness/gen/edge_build.h"

static void suite_broadcast(qh_edge_builder *x)
{
    qh_edge_shape s0 = {0, {0}};
    int i = 0;
    for (int op = 0; op < 2; op++) {
        qmm_op_kind k = op ? QMM_OP_MATMULINTEGER : QMM_OP_QLINEARMATMUL;
        qh_edge_random_operands_case(x, k, "a3-b2", DIMS(2, 3, 4), DIMS(4, 5), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "a2-b3", DIMS(3, 4), DIMS(2, 4, 5), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "a1bk-bbkn", DIMS(1, 3, 4), DIMS(2, 4, 5), s0, s0, s0,
                                     i++);
        qh_edge_random_operands_case(x, k, "a4-b3-mixed-ones", DIMS(2, 1, 3, 4), DIMS(3, 4, 2), s0,
                                     s0, s0, i++);
        qh_edge_random_operands_case(x, k, "a4-b4-crossed", DIMS(2, 1, 3, 4), DIMS(1, 3, 4, 2), s0,
                                     s0, s0, i++);
        qh_edge_random_operands_case(x, k, "a5-b4", DIMS(2, 1, 2, 2, 3), DIMS(3, 1, 3, 2), s0, s0,
                                     s0, i++);
    }
    qh_edge_random_operands_case(x, QMM_OP_QLINEARMATMUL, "batched-params", DIMS(2, 1, 3, 4),
                                 DIMS(3, 4, 2), (qh_edge_shape){4, {2, 1, 3, 1}},
                                 (qh_edge_shape){3, {3, 1, 2}}, (qh_edge_shape){4, {2, 3, 1, 2}},
                                 i++);
    qh_edge_random_operands_case(x, QMM_OP_MATMULINTEGER, "batched-zero-points", DIMS(2, 1, 3, 4),
                                 DIMS(3, 4, 2), (qh_edge_shape){4, {2, 1, 3, 1}},
                                 (qh_edge_shape){3, {3, 1, 2}}, s0, i++);
}

const qh_edge_suite qh_edge_suite_broadcast = {
    "broadcast", 6, suite_broadcast,
    "numpy batch broadcasting up to rank 5, with batched parameters"};
