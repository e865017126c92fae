/* harness/gen/edge/one-d.c — the `one-d` edge suite (docs/edge-suites.md): 1-D operands,
 * promoted and squeezed. */
#include "harness/gen/edge_build.h"

static void suite_one_d(qh_edge_builder *x)
{
    qh_edge_shape s0 = {0, {0}};
    int i = 0;
    for (int op = 0; op < 2; op++) {
        qmm_op_kind k = op ? QMM_OP_MATMULINTEGER : QMM_OP_QLINEARMATMUL;
        qh_edge_random_operands_case(x, k, "k-kn", DIMS(5), DIMS(5, 3), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "mk-k", DIMS(3, 5), DIMS(5), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "k-k", DIMS(7), DIMS(7), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "k-bkn", DIMS(4), DIMS(2, 4, 3), s0, s0, s0, i++);
        qh_edge_random_operands_case(x, k, "bmk-k", DIMS(2, 3, 4), DIMS(4), s0, s0, s0, i++);
    }
    qh_edge_random_operands_case(x, QMM_OP_QLINEARMATMUL, "k-kn-per-column", DIMS(5), DIMS(5, 3),
                                 s0, (qh_edge_shape){1, {3}}, (qh_edge_shape){1, {3}}, i++);
    qh_edge_random_operands_case(x, QMM_OP_QLINEARMATMUL, "mk-k-per-row", DIMS(3, 5), DIMS(5),
                                 (qh_edge_shape){1, {3}}, s0, (qh_edge_shape){1, {3}}, i++);
    qh_edge_random_operands_case(x, QMM_OP_MATMULINTEGER, "mk-k-per-row-zp", DIMS(3, 5), DIMS(5),
                                 (qh_edge_shape){1, {3}}, s0, s0, i++);
    for (size_t j = x->out->count - 13; j < x->out->count; j++) {
        qh_edge_case *c = &x->out->items[j];
        c->meta.n_tags = 1; /* keep the suite tag, replace batch/broadcast */
        qh_edge_tag(c, "1-d");
    }
}

const qh_edge_suite qh_edge_suite_one_d = {
    "one-d", 7, suite_one_d,
    "1-D operands ([K] promoted and squeezed), including [K]·[K] -> []"};
