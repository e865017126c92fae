/* tests/test_optimized_ops.c — the optimized CPU backend on the operators beyond the integer
 * QLinearMatMul / MatMulInteger: QOrderedMatMul (optimized/cpu/qordered.c) and, below, the
 * float8 QLinearMatMul-21 forms (optimized/cpu/float8.c). Every answer is compared byte for
 * byte with the reference's (its exact result, or the accepted int32-wrapped alternative where
 * an accumulator leaves int32), for every variant this CPU runs at several thread counts.
 * Problems come from the harness's random generator (harness/gen/problem.c: both order
 * combinations, per-column scale_B, bias, C, batches, every float8 mix) and from hand-built
 * extremes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/gen/problem.h"
#include "harness/run/expect.h"
#include "ops/qmm_ops.h"
#include "optimized/qmm_optimized.h"
#include "qmm/backend.h"

/* The backends compared: every variant this CPU runs, 1 and 3 threads, and auto. */
#define MAX_BACKENDS 16

static int open_all(qmm_backend **be)
{
    int n = 0;
    qmm_status st;
    const char *isa;
    for (int i = 0; (isa = qmm_optimized_variant_name(i)) != NULL && n < MAX_BACKENDS - 3; i++) {
        qmm_optimized_variant v;
        qmm_optimized_variant_info(i, &v);
        if (v.missing)
            continue;
        for (int t = 1; t <= 3; t += 2) {
            char spec[64];
            snprintf(spec, sizeof spec, "isa=%s,threads=%d", isa, t);
            be[n] = qmm_optimized_open(QMM_ABI_VERSION, spec, &st);
            cr_assert_not_null(be[n], "%s: %s", spec, st.message);
            n++;
        }
    }
    be[n] = qmm_optimized_open(QMM_ABI_VERSION, "threads=2", &st);
    cr_assert_not_null(be[n]);
    return n + 1;
}

static void close_all(qmm_backend **be, int n)
{
    for (int i = 0; i < n; i++)
        be[i]->close(be[i]);
}

/* Runs `call` on `be` and checks it against the reference's expectation: the same status,
 * and for OK the exact bytes (or the wrapped alternative's). Returns 1 when compared. */
static int check_call(qmm_backend *be, const qmm_call *call, const char *what)
{
    qh_expectation e;
    cr_assert_eq(qh_expect(call, "spec", &e), 0, "%s: %s", what, e.message);
    qmm_call mine = e.call;
    qmm_tensor *y = (qmm_tensor *)qmm_call_output_c(&mine);
    int64_t n = qmm_tensor_numel(&e.exact);
    size_t bytes = n > 0 ? (size_t)n * qmm_dtype_size(e.exact.dtype) : 0;
    void *buf = malloc(bytes + 1);
    memset(buf, 0x5a, bytes + 1);
    y->data = buf;
    qmm_status st;
    qmm_status_code rc = qmm_backend_run(be, &mine, &st);
    cr_expect_eq(rc, e.code, "%s on %s: %s (reference: %s)", what, be->name, st.message,
                 e.message);
    if (rc == QMM_OK && e.code == QMM_OK && bytes) {
        int same = memcmp(buf, e.exact.data, bytes) == 0 ||
                   (e.overflow && memcmp(buf, e.alt.data, bytes) == 0);
        cr_expect(same, "%s on %s: output differs from the reference", what, be->name);
    }
    free(buf);
    qh_expectation_free(&e);
    return rc == QMM_OK;
}

/* ---- QOrderedMatMul ---- */

Test(qordered, answers_every_order_combination)
{
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_QORDEREDMATMUL;
    qmm_status st;
    cr_assert_eq(be[0]->query(be[0], &call, &st), QMM_OK, "%s", st.message);
    close_all(be, nb);
}

Test(qordered, random_problems_agree_with_the_reference)
{
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    qh_random_opts o = {.invalid_per_mille = 20};
    int compared = 0, ok = 0;
    for (uint64_t i = 0; compared < 400 && i < 20000; i++) {
        qh_rng r;
        qh_rng_seed(&r, 2029, i);
        qh_problem p;
        cr_assert_eq(qh_problem_random(&p, &r, &o), 0);
        if (p.call.op == QMM_OP_QORDEREDMATMUL && p.y_shape_known) {
            char what[64];
            snprintf(what, sizeof what, "problem %llu", (unsigned long long)i);
            for (int b = 0; b < nb; b++)
                ok += check_call(be[b], &p.call, what);
            compared++;
        }
        qh_problem_free(&p);
    }
    cr_assert_eq(compared, 400);
    cr_assert_gt(ok, 300 * nb, "too few valid problems: %d", ok);
    close_all(be, nb);
}

/* A COL32 problem: M x K (A in COL32) times B^T (N x K, order_b) with every value v. */
static void qordered_filled(int32_t order_a, int32_t order_b, int64_t batch, int64_t m,
                            int64_t k, int64_t n, int8_t va, int8_t vb, float sa, float sb,
                            float sy, qmm_call *call, void **bufs)
{
    memset(call, 0, sizeof *call);
    call->op = QMM_OP_QORDEREDMATMUL;
    qmm_qorderedmatmul *c = &call->u.qorderedmatmul;
    bufs[0] = malloc((size_t)(batch * m * k));
    bufs[1] = malloc((size_t)(k * n));
    bufs[2] = malloc(3 * sizeof(float));
    memset(bufs[0], (uint8_t)va, (size_t)(batch * m * k));
    memset(bufs[1], (uint8_t)vb, (size_t)(k * n));
    float *s = bufs[2];
    s[0] = sa;
    s[1] = sb;
    s[2] = sy;
    c->a = (qmm_tensor){QMM_DTYPE_INT8, 3, {batch, m, k}, bufs[0]};
    c->b = (qmm_tensor){QMM_DTYPE_INT8, 2, {k, n}, bufs[1]};
    c->scale_a = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &s[0]};
    c->scale_b = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &s[1]};
    c->scale_y = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &s[2]};
    c->y = (qmm_tensor){QMM_DTYPE_INT8, 3, {batch, m, n}, NULL};
    c->order_a = order_a;
    c->order_b = order_b;
    c->order_y = order_a;
}

Test(qordered, accumulators_past_int32_give_the_wrapped_alternative)
{
    /* K = 131104: 131104 products of (-128)(-128) are 2^31 + 2^19, past int32 */
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    int32_t orders[3][2] = {{QMM_ORDER_ROW, QMM_ORDER_COL},
                            {QMM_ORDER_COL32, QMM_ORDER_COL4_4R2_8C},
                            {QMM_ORDER_COL32, QMM_ORDER_COL32_2R_4R4}};
    for (int o = 0; o < 3; o++) {
        qmm_call call;
        void *bufs[3];
        qordered_filled(orders[o][0], orders[o][1], 1, 2, 131104, 32, -128, -128, 1.0f,
                        1.0f / 65536, 1.0f / 256, &call, bufs);
        for (int b = 0; b < nb; b++)
            cr_expect(check_call(be[b], &call, "K = 131104"));
        for (int i = 0; i < 3; i++)
            free(bufs[i]);
    }
    close_all(be, nb);
}
