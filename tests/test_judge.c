/* tests/test_judge.c — the one judge (harness/judge/judge.h): a structured verdict, a case's
 * expectation computed once whatever the number of backends, reduce judging its candidates in
 * memory by reason codes, the comparison rule on the operator's descriptor. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/judge/judge.h"
#include "harness/run/reduce.h"
#include "harness/run/runner.h"
#include "ops/operator.h"
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

/* The comparison rule is the operator's: exact for every operator today. */
Test(judge, every_operator_names_its_comparison_rule)
{
    for (int32_t i = 0; i < qmm_op_count(); i++)
        cr_expect_eq(qmm_op_at(i)->compare, QMM_COMPARE_EXACT, "%s", qmm_op_at(i)->op_type);
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
