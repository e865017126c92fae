/* tests/test_judge.c — the one judge (harness/judge/judge.h): a structured verdict, a case's
 * expectation computed once whatever the number of backends, reduce judging its candidates in
 * memory by reason codes, the comparison rule on the operator's descriptor. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/io/case.h"
#include "harness/judge/judge.h"
#include "harness/run/reduce.h"
#include "harness/run/runner.h"
#include "ops/operator.h"
#include "reference/qmm_reference.h"
#include "tests/cli_support.h"

/* a spec-failing case: 7 of 184 elements differ under onnx-ref (tests/test_reduce.c) */
#define FAILING "vectors/edge/qlinearmatmul/random/30-s8u8s8"

static qh_case_ref ref_of(const char *rel, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", env("QMM_SOURCE_DIR"), rel);
    return (qh_case_ref){.dir = buf, .name = buf, .data_set = 0};
}

static void open_backend(const char *spec, qh_backend *b)
{
    qh_error err;
    cr_assert(qh_backend_open(spec, b, &err) == 0, "%s: %s", spec, err.msg);
}

Test(judge, a_case_is_loaded_and_its_expectation_computed_once_for_every_backend)
{
    char dir[4096];
    qh_case_ref ref = ref_of(FAILING, dir, sizeof dir);
    qh_backend b[3];
    open_backend("reference", &b[0]);
    open_backend("optimized", &b[1]);
    open_backend("reference:profile=onnx-ref", &b[2]);
    qh_eval_opts o[3] = {{0}, {0}, {0}};
    qh_result res[3];
    unsigned long long before = qh_expectations_computed;
    qh_eval_cases(&ref, 2, b, o, res); /* two backends that pass: nothing else to compute */
    cr_expect_eq(qh_expectations_computed - before, 1, "expectations computed for 2 backends: "
                 "%llu", qh_expectations_computed - before);
    cr_expect_eq(res[0].status, QH_PASSED);
    cr_expect_eq(res[1].status, QH_PASSED);
    cr_expect_eq(res[0].reason, QH_REASON_EQUAL);
    for (int j = 0; j < 2; j++)
        qh_result_free(&res[j]);
    for (int j = 0; j < 3; j++)
        qh_backend_close(&b[j]);
}

Test(judge, a_failure_is_data_and_its_text_is_made_from_it)
{
    char dir[4096];
    qh_case_ref ref = ref_of(FAILING, dir, sizeof dir);
    qh_backend b;
    open_backend("reference:profile=onnx-ref", &b);
    qh_eval_opts o = {0};
    qh_case c;
    qh_error err;
    cr_assert(qh_case_load(&ref, &c, &err) == 0, "%s", err.msg);
    qh_verdict v;
    qh_verdict_init(&v);
    qh_judge_case(&c, &b, &o, &v);
    cr_expect_eq(v.status, QH_FAILED);
    cr_expect_eq(v.reason, QH_REASON_VALUES);
    cr_expect_str_eq(qh_reason_name(v.reason), "values");
    cr_expect_eq(v.errors, 7);
    cr_expect_eq(v.total, 184);
    cr_assert_eq(v.n_mismatches, 7);
    const qh_mismatch *m = &v.mismatches[0];
    cr_expect_eq(m->got - m->expected == 1 || m->expected - m->got == 1, 1,
                 "a tie rounded the other way: got %lld, expected %lld", (long long)m->got,
                 (long long)m->expected);
    cr_expect(m->explained, "the exact accumulator is known for a kept mismatch");
    cr_expect(isnan(m->bound) && isnan(m->fraction), "the exact rule has no bound");
    char summary[64], first[128];
    snprintf(summary, sizeof summary, "errors:%lld total:%lld", (long long)v.errors,
             (long long)v.total);
    snprintf(first, sizeof first, "y[%lld,%lld] (index %lld): got %lld, expected %lld",
             (long long)m->coord[0], (long long)m->coord[1], (long long)m->index,
             (long long)m->got, (long long)m->expected);
    cr_expect_str_eq(v.summary.s, summary);
    cr_expect_str_eq(v.first.s, first);
    qh_verdict_free(&v);
    qh_case_free(&c);
    qh_backend_close(&b);
}

/* reduce compares the codes: the text of two verdicts of one class differs in its numbers,
 * coordinates and messages; a different reason, status or status answered is another class */
Test(judge, reduce_classes_are_codes_not_text)
{
    qh_verdict a, b;
    qh_verdict_init(&a);
    qh_verdict_init(&b);
    a.status = b.status = QH_FAILED;
    a.reason = b.reason = QH_REASON_VALUES;
    qh_sb_puts(&a.summary, "errors:7 total:184");
    qh_sb_puts(&b.summary, "errors:1 total:1");
    cr_expect(qh_verdict_same_class(&a, &b));
    b.reason = QH_REASON_UNWRITTEN;
    cr_expect(!qh_verdict_same_class(&a, &b));
    a.reason = b.reason = QH_REASON_WRONG_STATUS_VALID;
    a.answered = QMM_INTERNAL;
    b.answered = QMM_INVALID_ARGUMENT;
    cr_expect(!qh_verdict_same_class(&a, &b));
    b.answered = QMM_INTERNAL;
    cr_expect(qh_verdict_same_class(&a, &b));
    b.status = QH_UNCHECKED;
    cr_expect(!qh_verdict_same_class(&a, &b));
    qh_verdict_free(&a);
    qh_verdict_free(&b);
}

/* The class of a guard's catch is the invocation's cause (a write past the end of y), never its
 * sentence: "wrote 1 byte past the end of y" and "wrote 12289 bytes past the end of y" cut to
 * different words ("byte", "bytes"), so reduce took a candidate whose overrun had shrunk to
 * one byte for another failure. A write before the start of y is another class. */
Test(judge, a_guard_catch_is_one_class_whatever_its_sentence)
{
    char dir[4096];
    qh_case_ref ref = ref_of("vectors/seeds/onnx-doc-matmulinteger", dir, sizeof dir);
    qh_case c;
    qh_error err;
    cr_assert(qh_case_load(&ref, &c, &err) == 0, "%s", err.msg);
    const char *modes[3] = {"one_past", "far_write", "one_before"};
    const char *said[3] = {"wrote 1 byte past the end of y", " bytes past the end of y",
                           "wrote 1 byte before the start of y"};
    qh_verdict v[3];
    for (int i = 0; i < 3; i++) {
        char spec[4200];
        snprintf(spec, sizeof spec, "%s:mode=%s", env("QMM_GUARD_PLUGIN"), modes[i]);
        qh_isolation iso = {.isolate = 1, .timeout_s = 60, .memory_limit = 0};
        qh_backend b;
        cr_assert(qh_backend_open_isolated(spec, &iso, &b, &err) == 0, "%s", err.msg);
        qh_eval_opts o = {0};
        o.invoke.isolate = 1;
        o.invoke.timeout_s = 60;
        qh_verdict_init(&v[i]);
        qh_judge_case(&c, &b, &o, &v[i]);
        qh_backend_close(&b);
        cr_expect_eq(v[i].reason, QH_REASON_MISBEHAVED, "%s", v[i].summary.s);
        cr_expect(strstr(v[i].summary.s, said[i]), "%s", v[i].summary.s);
    }
    cr_expect_str_eq(qh_cause_name(v[0].cause), "guard");
    cr_expect(qh_verdict_same_class(&v[0], &v[1]), "%s | %s", v[0].summary.s, v[1].summary.s);
    cr_expect(!qh_verdict_same_class(&v[0], &v[2]), "%s | %s", v[0].summary.s, v[2].summary.s);
    for (int i = 0; i < 3; i++)
        qh_verdict_free(&v[i]);
    qh_case_free(&c);
}

/* Candidates are judged in memory: reduce needs no temporary directory (it made one under
 * TMPDIR for every candidate it wrote, and stopped when it could not). */
Test(judge, reduce_judges_candidates_without_writing_them)
{
    char dir[4096];
    qh_case_ref ref = ref_of(FAILING, dir, sizeof dir);
    qh_backend b;
    open_backend("reference:profile=onnx-ref", &b);
    cr_assert(setenv("TMPDIR", "/nonexistent/qmm-judge-test", 1) == 0);
    qh_reduce_opts o = {.max_tries = 200};
    qh_reduce_result r;
    qh_error err = {{0}};
    int rc = qh_reduce_case(&ref, &b, &o, &r, &err);
    cr_expect_eq(rc, 0, "reduce: %d: %s", rc, err.msg);
    cr_expect_str_eq(r.cls, "FAILED errors");
    cr_expect_eq(r.verdict.reason, QH_REASON_VALUES);
    cr_expect_gt(r.accepted, 0, "some candidate was kept (%llu tries)",
                 (unsigned long long)r.tries);
    qh_reduce_result_free(&r);
    qh_backend_close(&b);
}

/* The comparison rule is the operator's: accepted values (docs/semantics.md §8.4) for exactly
 * the operators the reference judges so, exact for the others. */
Test(judge, every_operator_names_its_comparison_rule)
{
    for (int32_t i = 0; i < qmm_op_count(); i++) {
        const qmm_op_desc *d = qmm_op_at(i);
        cr_expect_eq(d->compare, qmm_ref_judged_by_accept(d->kind) ? QMM_COMPARE_ACCEPT
                                                                   : QMM_COMPARE_EXACT,
                     "%s", d->op_type);
    }
}

/* ---- the accept rule through `qmmcheck run` ------------------------------------------------ */

/* Writes a MatMulNBits case as DIR: one row A of K floats, one column of 4-bit codes (each
 * byte `codes`: two codes) in blocks of 16, packed zero points 0, every scale `scale`, no bias,
 * accuracy level `level`; `stored` (not NULL) as its output_0.pb. */
static void write_nbits_case(const char *dir, const float *a, int64_t k, uint8_t codes,
                             float scale, int32_t level, const float *stored)
{
    enum { BS = 16, MAX_KB = 8 };
    int64_t kb = (k + BS - 1) / BS;
    cr_assert(kb <= MAX_KB);
    static uint8_t b[MAX_KB * BS / 2], zp[(MAX_KB * 4 + 7) / 8];
    static float scales[MAX_KB];
    memset(b, codes, sizeof b);
    memset(zp, 0, sizeof zp);
    for (int64_t i = 0; i < kb; i++)
        scales[i] = scale;
    qmm_call call;
    qmm_call_init(&call, QMM_OP_MATMULNBITS, 1);
    qmm_matmulnbits *c = &call.u.matmulnbits;
    c->a = (qmm_tensor){.dtype = QMM_DTYPE_FLOAT, .rank = 2, .dims = {1, k}, .data = (void *)a};
    c->b = (qmm_tensor){.dtype = QMM_DTYPE_UINT8, .rank = 3, .dims = {1, kb, BS / 2},
                        .data = b};
    c->scales = (qmm_tensor){.dtype = QMM_DTYPE_FLOAT, .rank = 2, .dims = {1, kb},
                             .data = scales};
    c->zero_points = (qmm_tensor){.dtype = QMM_DTYPE_UINT8, .rank = 2,
                                  .dims = {1, (kb * 4 + 7) / 8}, .data = zp};
    c->y = (qmm_tensor){.dtype = QMM_DTYPE_FLOAT, .rank = 2, .dims = {1, 1}};
    c->k = (int32_t)k;
    c->n = 1;
    c->bits = 4;
    c->block_size = BS;
    c->accuracy_level = level;
    qmm_tensor out = c->y;
    out.data = (void *)stored;
    qh_model *m = calloc(1, sizeof *m);
    cr_assert(m);
    qh_call_model(&call, &c->y, 1, m);
    snprintf(m->graph_name, sizeof m->graph_name, "nbits");
    qh_error err;
    cr_assert(qh_call_write_dir(dir, &call, m, stored ? &out : NULL, NULL, &err) == 0, "%s",
              err.msg);
    free(m);
}

/* A case where sequential float32 summation loses all it can: A = [a0, u, u, ...] (u = 2^-24),
 * every b̂ = (1 - 0)·1 = 1 (codes 1, zero points 0, scales 1), K = 64. With a0 = 1,
 * R = 1 + 63u; summed left to right every addition of u to 1 is a tie that rounds back to 1:
 * error 63u, 0.94 of the bound γ(K+1)·S (the worst legitimate error is that close to it). Twice
 * that error, 1 - 63u, is out of every model's bound. An infinite a0 leaves the element
 * undetermined. */
static void write_ties_case(const char *dir, float a0)
{
    float a[64];
    a[0] = a0;
    for (int k = 1; k < 64; k++)
        a[k] = ldexpf(1.0f, -24);
    write_nbits_case(dir, a, 64, 0x11, 1.0f, 0, NULL);
}

TestSuite(accept, .init = make_tmp, .fini = remove_tmp);

/* Every order a correct kernel may sum in passes (bit for bit, only the reference's own
 * rounding passed: sequential answers 1, the reference 1 + 64u), on the ties case and on ONNX
 * Runtime's recorded cases (float32 ones; the others are UNSUPPORTED by the plugin). */
Test(accept, a_kernel_summing_in_any_order_passes)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/matmulnbits-ties", tmpdir);
    write_ties_case(dir, 1.0f);
    static const char *const orders[] = {"sequential", "reversed", "pairwise", "fma"};
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        char *out = qmmcheck_expect(0, "run --vectors '%s' --vectors tests/llm/onnxruntime "
                                    "--backend '%s:order=%s' --filter matmulnbits --verbose",
                                    dir, env("QMM_NBITS_PLUGIN"), orders[i]);
        expect_in(out, "PASSED matmulnbits-ties");
        expect_in(out, "failed:0 ");
        if (i == 0 || i == 3) /* sequential and fma lose 63u: 0.94 of the bound */
            expect_in(out, "worst error 0.94");
        free(out);
    }
}

/* A kernel with twice the worst legitimate error fails, and the failing element says what it
 * had to be: the interval, the exact value, the bound and the error in units of it. */
Test(accept, twice_the_worst_legitimate_error_fails_with_the_bound_printed)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/matmulnbits-ties", tmpdir);
    write_ties_case(dir, 1.0f);
    char *out = qmmcheck_expect(1, "run --vectors '%s' --backend '%s:order=doubled'", dir,
                                env("QMM_NBITS_PLUGIN"));
    expect_in(out, "FAILED matmulnbits-ties (errors:1 total:1)");
    /* 1 - 63u against R = 1 + 63u = 1.000003755092620849609375 */
    expect_in(out, "y[0,0] (index 0): got 0.999996245 (0x3f7fffc1), expected [0.999999762, "
                   "1.00000775]: exact 1.000003755092620849609375 +/- bound 3.99354e-06 (model "
                   "scale-factored); error 1.881 bounds");
    free(out);
}

/* An element the reference cannot decide (an infinite A: IEEE propagation is not modelled)
 * is INCONCLUSIVE, whatever was answered, the reference's own NaN included; the run exits 0
 * and the SUMMARY counts it. */
Test(accept, an_undetermined_element_is_inconclusive)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/matmulnbits-ties", tmpdir);
    write_ties_case(dir, INFINITY);
    static const char *const backends[] = {"reference", "optimized", NULL};
    for (int i = 0; i < 3; i++) {
        char spec[1024];
        snprintf(spec, sizeof spec, "%s", backends[i] ? backends[i] : "");
        if (!backends[i])
            snprintf(spec, sizeof spec, "%s:order=sequential", env("QMM_NBITS_PLUGIN"));
        char *out = qmmcheck_expect(0, "run --vectors '%s' --backend '%s' --verbose", dir, spec);
        expect_in(out, "INCONCLUSIVE matmulnbits-ties (undetermined:1 total:1)");
        expect_in(out, "which only model dequantize-first accepts");
        expect_in(out, " inconclusive:1 ");
        free(out);
    }
}

/* Level 4's int8 model: the tail's first product, an integer block sum times sa (or times s),
 * may overflow float32 where the exact term does not (A = 2^122 everywhere, so sa is about
 * 2^115; the block sum is 16 * 127 * 15, their product 1.9 * 2^129; s = 2^-100: R = 2^122 * 240 *
 * 2^-100 is small).
 * The bound assumes no overflow, so such an element is undetermined there, not a failure: a
 * kernel that answers +inf by grouping (isum * sa) * s (the optimized backend's level-4 tail)
 * is not proven wrong. A stored +inf was MISTRUSTED; it is not now (the reference passes and
 * the vector is trusted). */
Test(accept, an_int8_tail_that_may_overflow_is_undetermined)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/matmulnbits-l4-overflow", tmpdir);
    float a[16], inf = INFINITY;
    for (int k = 0; k < 16; k++)
        a[k] = ldexpf(1.0f, 122);
    write_nbits_case(dir, a, 16, 0xff, ldexpf(1.0f, -100), 4, &inf);
    char *out = qmmcheck_expect(0, "run --vectors '%s' --backend reference", dir);
    expect_in(out, "PASSED matmulnbits-l4-overflow");
    free(out);
}

/* Where the mismatches lie (the HTML report's picture): a side past QH_MARKS_SIDE is scaled
 * down, a cell set when any element it covers mismatches; batches past QH_MARKS_BATCHES are
 * counted, not drawn. */
Test(judge, marks_scale_long_sides_down_and_count_the_batches_left_out)
{
    qmm_tensor y = {.dtype = QMM_DTYPE_INT32, .rank = 3, .dims = {10, 300, 5}};
    qh_marks m;
    cr_assert_eq(qh_marks_init(&m, &y), 0);
    cr_expect_eq(m.batches, 10);
    cr_expect_eq(m.step_r, 3);
    cr_expect_eq(m.grid_r, 100);
    cr_expect_eq(m.step_c, 1);
    cr_expect_eq(m.grid_c, 5);
    cr_expect_eq(m.grid_b, QH_MARKS_BATCHES);
    qh_marks_set(&m, 1 * 1500 + 7 * 5 + 4); /* batch 1, row 7 (cell 2), column 4 */
    qh_marks_set(&m, 9 * 1500);             /* batch 9: not drawn */
    cr_expect(qh_marks_get(&m, 1, 2, 4));
    cr_expect(!qh_marks_get(&m, 1, 2, 3) && !qh_marks_get(&m, 0, 2, 4) && !qh_marks_get(&m, 1, 1, 4));
    cr_expect_eq(m.outside, 1);
    qh_marks_free(&m);
}
