/* harness/gen/edge/random.c — the `random` edge suite (docs/edge-suites.md): seeded random
 * problems from the generator `qmmcheck diff` uses (harness/gen/problem.c). */
#include "harness/gen/edge_build.h"

static void suite_random(qh_edge_builder *x)
{
    qh_random_opts o = {.invalid_per_mille = 100, .max_outputs = 256, .max_macs = 1 << 14};
    for (int i = 0; i < 40 && !x->failed; i++) {
        qh_rng r;
        qh_rng_seed(&r, x->seed, (uint64_t)i);
        qh_problem p;
        if (qh_problem_random(&p, &r, &o) != 0) {
            qh_problem_free(&p);
            qh_edge_fail(x, "out of memory");
            return;
        }
        char types[32];
        qh_problem_types(&p, types, sizeof types);
        qh_edge_case *c = qh_edge_add_case(x, p.call.op, 0, "%02d-%s", i, types);
        if (!c) {
            qh_problem_free(&p);
            return;
        }
        qh_problem_free(&c->problem);
        c->problem = p;
        /* the generator decides validity; the reference's verdict is recorded as is */
        c->meta.expect = QMM_UNSUPPORTED; /* placeholder: "whatever the reference says" */
        char d[QH_META_TEXT_MAX];
        qh_problem_finish(&c->problem);
        qh_problem_describe(&c->problem, d, sizeof d);
        qh_edge_describe(c, "random problem %d of seed %llu: %s", i, (unsigned long long)x->seed,
                         d);
    }
}

const qh_edge_suite qh_edge_suite_random = {
    "random", 14, suite_random,
    "seeded random problems over the whole operator space (the diff generator)"};
