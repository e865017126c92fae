/* tests/test_reduce.c — `qmmcheck reduce` and its failure classes (harness/run/reduce.h).
 *
 * The backend that fails here is the reference under another profile (onnx-ref rounds ties
 * away from zero), judged under spec: a real failure with no plugin to build. A backend that
 * is not deterministic, or fails only on large cases, is tests/plugins/flaky.c. The mutants'
 * reductions are tests/mutants/check_reduce.sh's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/run/reduce.h"
#include "tests/casefile_support.h"
#include "tests/cli_support.h"

/* a spec-failing case: 7 of 184 elements differ under onnx-ref */
#define CASE "vectors/edge/qlinearmatmul/random/30-s8u8s8"
#define BACKEND "reference:profile=onnx-ref"

static void cls(qh_case_status s, const char *summary, char *buf)
{
    qh_failure_class(s, summary, buf, 256);
}

/* Two summaries are the same class exactly when `same` says. */
static void expect_class(qh_case_status s1, const char *a, qh_case_status s2, const char *b,
                         int same)
{
    char x[256], y[256];
    cls(s1, a, x);
    cls(s2, b, y);
    cr_expect_eq(strcmp(x, y) == 0, same, "'%s' (%s) vs '%s' (%s)", a, x, b, y);
}

Test(reduce_class, mismatches_are_one_class_whatever_the_count)
{
    expect_class(QH_FAILED, "errors:7 total:184", QH_FAILED, "errors:1 total:1", 1);
    char x[256];
    cls(QH_FAILED, "errors:7 total:184", x);
    cr_expect_str_eq(x, "FAILED errors");
}

Test(reduce_class, the_status_is_part_of_the_class)
{
    expect_class(QH_FAILED, "errors:1 total:1", QH_UNCHECKED, "errors:1 total:1", 0);
    expect_class(QH_CRASHED, "killed by SIGSEGV (Segmentation fault)", QH_TIMEOUT,
                 "killed by SIGSEGV (Segmentation fault)", 0);
}

Test(reduce_class, the_signal_and_the_wrong_status_are_kept_the_message_is_not)
{
    expect_class(QH_CRASHED, "killed by SIGSEGV (Segmentation fault)", QH_CRASHED,
                 "killed by SIGABRT (Aborted)", 0);
    expect_class(QH_FAILED, "answered INTERNAL for a valid call: out of memory", QH_FAILED,
                 "answered INTERNAL for a valid call: m=0", 1);
    expect_class(QH_FAILED, "answered INTERNAL for a valid call: x", QH_FAILED,
                 "answered INVALID_ARGUMENT for a valid call: x", 0);
    char x[256];
    cls(QH_CRASHED, "killed by SIGSEGV (Segmentation fault)", x);
    cr_expect_str_eq(x, "CRASHED killed by SIGSEGV");
}

Test(reduce_class, coordinates_and_numbers_do_not_split_a_class)
{
    expect_class(QH_FAILED, "did not write y[0,1] (3 of 12 elements unwritten)", QH_FAILED,
                 "did not write y[7] (1 of 8 elements unwritten)", 1);
    expect_class(QH_TIMEOUT, "no answer within 1 s; worker killed", QH_TIMEOUT,
                 "no answer within 30 s; worker killed", 1);
    expect_class(QH_FAILED, "wrote into input a", QH_FAILED, "wrote into input b", 0);
    expect_class(QH_FAILED, "not deterministic: x.so:threads=2 differs", QH_FAILED,
                 "errors:1 total:1", 0);
}

TestSuite(reduce_cli, .init = make_tmp, .fini = remove_tmp);

Test(reduce_cli, usage_errors_exit_2)
{
    const char *args[] = {
        "reduce",
        "reduce " CASE,
        "reduce --backend reference",
        "reduce " CASE " " CASE " --backend reference",
        "reduce " CASE " --backend reference --max-tries x",
        "reduce " CASE " --backend reference --seconds -1",
        "reduce " CASE " --backend reference --frobnicate 1",
        "reduce " CASE " --backend reference --profile no-such-profile",
        "reduce " CASE " --backend reference --out",
        "reduce " CASE " --backend reference --confirm 0",
        "reduce " CASE " --backend reference --confirm 101",
        "reduce /no/such/case --backend reference", /* was 1, "the reduction failed" */
    };
    expect_usage_errors(args, sizeof args / sizeof args[0]);
}

/* An --out that cannot be made is refused before the work (exit 2), not after the whole
 * reduction (exit 1, the result lost). */
Test(reduce_cli, an_out_that_cannot_be_written_is_refused_first)
{
    char *out = qmmcheck_expect(2, "reduce " CASE " --backend '%s' -q --out /proc/qmm/r",
                                env("QMM_FLAKY_PLUGIN"));
    expect_in(out, "--out: /proc/qmm: cannot create");
    cr_expect(strstr(out, "fails as") == NULL, "it reduced first:\n%s", out);
    free(out);
}

Test(reduce_cli, a_case_that_does_not_fail_exits_2_and_writes_nothing)
{
    char *out = qmmcheck_expect(2, "reduce " CASE " --backend reference --out '%s/r'", tmpdir);
    expect_in(out, "does not fail against reference: it is PASSED");
    char path[512];
    snprintf(path, sizeof path, "%s/r", tmpdir);
    cr_expect(access(path, F_OK) != 0, "%s was written", path);
    free(out);
}

Test(reduce_cli, shrinks_to_one_element_and_writes_a_case_that_fails_alike)
{
    char *out = qmmcheck_expect(0, "reduce " CASE " --backend " BACKEND " --out '%s/r' -q",
                                tmpdir);
    expect_in(out, "fails as FAILED errors");
    expect_in(out, "REDUCED batch=[] M=23 N=8 K=1 -> batch=[] M=1 N=1 K=1 in ");
    expect_in(out, "__REPRO: qmmcheck repro --backend " BACKEND " ");
    free(out);
    /* the written case fails the same way, and its stored output is the reference's answer */
    out = qmmcheck_expect(1, "repro --backend " BACKEND " '%s/r'", tmpdir);
    expect_in(out, ":FAILED ");
    expect_in(out, "(errors:1 total:1)");
    free(out);
    out = qmmcheck_expect(0, "run --backend reference --vectors '%s/r'", tmpdir);
    expect_in(out, "passed:1");
    free(out);
    char meta[512];
    snprintf(meta, sizeof meta, "%s/r/test_data_set_0/output_0.pb", tmpdir);
    cr_expect(access(meta, F_OK) == 0, "%s is missing", meta);
    snprintf(meta, sizeof meta, "%s/r/qmm.meta", tmpdir);
    char *m = slurp(meta);
    expect_in(m, "reduced");
    expect_in(m, "provenance = qmmcheck reduce --backend " BACKEND " " CASE);
    free(m);
}

Test(reduce_cli, the_budget_stops_it_and_says_so)
{
    char *out = qmmcheck_expect(0, "reduce " CASE " --backend " BACKEND " --out '%s/r' -q "
                                   "--max-tries 3", tmpdir);
    expect_in(out, "in 3 tries");
    expect_in(out, "the budget ran out first");
    free(out);
}

/* The temporary directory is made under $TMPDIR whatever its length (it was cut at 40
 * characters, and mkdtemp then failed). */
Test(reduce_cli, a_long_tmpdir_is_used_whole)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/a-temporary-directory-whose-name-is-longer-than-forty", tmpdir);
    cr_assert_eq(mkdir(tmp, 0700), 0);
    setenv("TMPDIR", tmp, 1);
    char *out = qmmcheck_expect(0, "reduce " CASE " --backend " BACKEND " --out '%s/r' -q "
                                   "--max-tries 2", tmpdir);
    unsetenv("TMPDIR");
    expect_in(out, "the budget ran out first");
    free(out);
}

/* By default the smallest case goes into the current directory, named after the case: never
 * beside it, where an installed suite would count it on the next run (and a root-owned prefix
 * refuses it). It went to CASE_DIR-reduced: suite/c-reduced here (or exit 2 where the suite is
 * read-only to the user, as for any user but root). */
Test(reduce_cli, writes_into_the_current_directory_by_default_even_with_a_trailing_slash)
{
    char suite[512], work[512], path[700], cd[600];
    snprintf(suite, sizeof suite, "%s/suite", tmpdir);
    snprintf(work, sizeof work, "%s/work", tmpdir);
    cr_assert_eq(mkdir(suite, 0700), 0);
    cr_assert_eq(mkdir(work, 0700), 0);
    snprintf(path, sizeof path, "%s/c", suite);
    copy_tree(CASE, path);
    cr_assert_eq(chmod(suite, 0500), 0); /* as an installed prefix is to its users */
    snprintf(cd, sizeof cd, "cd '%s' &&", work);
    char *out;
    int rc = qmmcheck_under(&out, cd, "reduce '%s/c/' --backend " BACKEND " -q --max-tries 2",
                            suite);
    chmod(suite, 0700);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    expect_in(out, "the budget ran out first");
    free(out);
    snprintf(path, sizeof path, "%s/c-reduced/model.onnx", work);
    cr_expect(access(path, F_OK) == 0, "%s is missing", path);
    snprintf(path, sizeof path, "%s/c-reduced", suite);
    cr_expect(access(path, F_OK) != 0, "%s was written beside the case", path);
    /* a CASE_DIR that does not end in a name of its own needs --out */
    rc = qmmcheck_under(&out, cd, "reduce '%s/c/..' --backend " BACKEND " -q", suite);
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    expect_in(out, "give --out DIR");
    free(out);
}

Test(reduce_cli, refuses_to_write_over_the_case_itself)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/c", tmpdir);
    copy_tree(CASE, dir);
    char *out = qmmcheck_expect(2, "reduce '%s' --backend " BACKEND " -q --out '%s/.'", dir, dir);
    expect_in(out, "is the case itself");
    free(out);
    out = qmmcheck_expect(1, "run --backend " BACKEND " --vectors '%s'", dir);
    expect_in(out, "(errors:7 total:184)"); /* untouched */
    free(out);
}

/* ---- the budget bounds every step (docs/formats.md "Reduced cases") ---- */

TestSuite(reduce_budget, .init = make_tmp, .fini = remove_tmp);

/* A MatMulInteger case a[1,K]·b[K,1] of ones, without a stored output, in tmpdir/NAME. */
static void write_ones_case(const char *name, int64_t k, char *dir, size_t size)
{
    snprintf(dir, size, "%s/%s", tmpdir, name);
    write_case_model(dir, "MatMulInteger", name, (const char *const[]){"A", "B"}, 2, "Y");
    unsigned char *ones = malloc((size_t)k);
    cr_assert(ones);
    memset(ones, 1, (size_t)k);
    char set[600];
    snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    write_tensor(set, "input_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){1, k}, ones, "A");
    write_tensor(set, "input_1.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){k, 1}, ones, "B");
    free(ones);
}

/* K = 3000 against a backend wrong only at K >= 3000: K cannot shrink, and the K folding step
 * has K^2 pairs. Once the budget was spent, each pair still built a K-element candidate
 * (O(K^3), about 100 s); now every loop stops at the budget. (`timeout 90`: a regression
 * fails the test instead of hanging it.) `budget`: the options; `want`: in the output. */
static void expect_large_k_stops(const char *budget, const char *want)
{
    char dir[512], *out;
    write_ones_case("k3000", 3000, dir, sizeof dir);
    int rc = qmmcheck_under(&out, "timeout 90", "reduce '%s' --backend '%s:min-k=3000' -q "
                            "--out '%s/r' %s", dir, env("QMM_FLAKY_PLUGIN"), tmpdir, budget);
    cr_expect_eq(rc, 0, "exit %d (124: still running after 90 s):\n%s", rc, out);
    expect_in(out, want);
    expect_in(out, "the budget ran out first");
    free(out);
}

Test(reduce_budget, a_large_k_case_stops_on_max_tries, .timeout = 120)
{
    expect_large_k_stops("--max-tries 50 --seconds 600", "in 50 tries");
}

Test(reduce_budget, a_large_k_case_stops_on_seconds, .timeout = 120)
{
    expect_large_k_stops("--max-tries 0 --seconds 2",
                         "REDUCED batch=[] M=1 N=1 K=3000 -> batch=[] M=1 N=1 K=3000 in ");
}

/* SIGTERM during a long reduction: it stops where it is, removes its temporary directory,
 * writes nothing (the judgments under way and the confirmations did not happen) and says so,
 * exit 143. It used to die of the signal, leaving $TMPDIR/qmmcheck-reduce-XXXXXX behind. */
Test(reduce_budget, sigterm_stops_it_cleanly_writing_nothing, .timeout = 120)
{
    char dir[512], tmp[512], out_dir[512];
    write_ones_case("k3000", 3000, dir, sizeof dir);
    snprintf(tmp, sizeof tmp, "%s/t", tmpdir);
    snprintf(out_dir, sizeof out_dir, "%s/r", tmpdir);
    cr_assert(mkdir(tmp, 0700) == 0);
    setenv("TMPDIR", tmp, 1);
    FILE *f;
    pid_t pid = qmmcheck_start(&f, "reduce '%s' --backend '%s:min-k=3000' -q --out '%s' "
                                   "--max-tries 0 --seconds 600 2>&1",
                               dir, env("QMM_FLAKY_PLUGIN"), out_dir);
    sleep(2); /* into the K folding, which takes minutes at K = 3000 */
    char *said = expect_interrupted(pid, f, NULL);
    cr_expect(strstr(said, "nothing written"), "%s", said);
    free(said);
    cr_expect(access(out_dir, F_OK) != 0, "%s was written", out_dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "[ -z \"$(ls -A '%s')\" ]", tmp);
    cr_expect(system(cmd) == 0, "the temporary directory was left in %s", tmp);
}

/* A signal while the reduced case is confirmed (by the backend opened again, here 1 s a call)
 * stops reduce as one during the reduction does: "interrupted by SIGTERM ... nothing written",
 * exit 143. It was "the backend does not answer the same way every time; inconclusive", exit
 * 4: the cut-short judgments blamed on the backend. */
Test(reduce_budget, a_signal_during_the_confirmation_is_an_interruption, .timeout = 120)
{
    char log[512], out_dir[512];
    snprintf(log, sizeof log, "%s/opens", tmpdir);
    snprintf(out_dir, sizeof out_dir, "%s/r", tmpdir);
    setenv("FLAKY_OPEN_LOG", log, 1);
    FILE *f;
    pid_t pid = qmmcheck_start(&f, "reduce " CASE " --backend '%s:slow-from-open=2' -q "
                                   "--out '%s' 2>&1",
                               env("QMM_FLAKY_PLUGIN"), out_dir);
    int opens = 0;
    for (int i = 0; i < 600 && opens < 2; i++) { /* the second open: the confirmation's */
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        FILE *lf = fopen(log, "r");
        opens = 0;
        for (int c; lf && (c = fgetc(lf)) != EOF;)
            opens += c == '\n';
        if (lf)
            fclose(lf);
    }
    cr_assert_eq(opens, 2, "the backend was opened %d times", opens);
    struct timespec ts = {0, 300 * 1000 * 1000}; /* into its first 1 s call */
    nanosleep(&ts, NULL);
    char *rest;
    char *said = expect_interrupted(pid, f, &rest);
    cr_expect(strstr(said, "nothing written"), "%s", said);
    cr_expect(strstr(rest, "inconclusive") == NULL, "%s", rest);
    free(said);
    free(rest);
    cr_expect(access(out_dir, F_OK) != 0, "%s was written", out_dir);
}

/* ---- a backend that does not answer the same way every time ---- */

/* Against the reference wrong for its first `wrong` calls only, reduce says the result is
 * inconclusive (exit 4), prints no FAILED case or __REPRO line, writes nothing, and never
 * blames the case's stored output. */
static void expect_inconclusive(int wrong)
{
    char *out;
    int rc = qmmcheck(&out, "reduce " CASE " --backend '%s:wrong=%d' -q --out '%s/r'",
                      env("QMM_FLAKY_PLUGIN"), wrong, tmpdir);
    cr_expect_eq(rc, 4, "wrong=%d: exit %d, want 4:\n%s", wrong, rc, out);
    expect_in(out, "inconclusive");
    cr_expect(strstr(out, "__REPRO") == NULL, "wrong=%d printed a repro line:\n%s", wrong, out);
    cr_expect(strstr(out, "no longer fails the same way") == NULL,
              "wrong=%d blamed the stored output:\n%s", wrong, out);
    char path[512];
    snprintf(path, sizeof path, "%s/r", tmpdir);
    cr_expect(access(path, F_OK) != 0, "wrong=%d: %s was written", wrong, path);
    free(out);
}

Test(reduce_cli, a_backend_wrong_only_at_first_is_inconclusive)
{
    expect_inconclusive(1); /* the case fails, then passes */
    expect_inconclusive(2);
    expect_inconclusive(3); /* the case fails every time, then its rewrite passes */
    expect_inconclusive(6); /* the case and its rewrite fail, then every candidate passes */
}

Test(reduce_cli, a_backend_wrong_every_time_is_reduced_and_confirmed)
{
    char *out = qmmcheck_expect(0, "reduce " CASE " --backend '%s' -q --out '%s/r'",
                                env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "-> batch=[] M=1 N=1 K=1 in ");
    expect_in(out, "__REPRO: qmmcheck repro --backend ");
    free(out);
    out = qmmcheck_expect(1, "repro --backend '%s' '%s/r'", env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, ":FAILED ");
    free(out);
}

/* A backend wrong only after a large call (its stale scratch: flaky's poison=100, 184 elements
 * in CASE's y) fails every candidate in the worker the reduction ran, down to one element, but
 * the one-element case passes in a fresh process: reduce confirmed it in that same worker and
 * printed "confirmed by 3 judgments" above a __REPRO line that PASSED. The written case is now
 * confirmed by the backend opened again (a new worker): inconclusive, nothing written. */
Test(reduce_cli, the_reduced_case_is_confirmed_by_the_backend_opened_again)
{
    char *out = qmmcheck_expect(4, "reduce " CASE " --backend '%s:poison=100' -q --out '%s/r'",
                                env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "judged by the backend opened again");
    expect_in(out, "nothing written");
    char path[512];
    snprintf(path, sizeof path, "%s/r", tmpdir);
    cr_expect(access(path, F_OK) != 0, "%s was written", path);
    free(out);
    /* in process (--no-isolate) with the state in the library's globals, which a reopen in the
       same process keeps: its __REPRO line, run in a new process, decides */
    out = qmmcheck_expect(4, "reduce " CASE " --backend '%s:poison=100,poison-global=1' "
                             "--no-isolate -q --out '%s/r'",
                          env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "judged by its __REPRO line in a new process");
    cr_expect(access(path, F_OK) != 0, "%s was written", path);
    free(out);
    /* a backend wrong every time, in process: written, its line confirmed in a new process;
       also under a name that is not UTF-8, which the line quotes $'...' (sh read it as
       written: ERROR, inconclusive) */
    out = qmmcheck_expect(0, "reduce " CASE " --backend '%s' --no-isolate -q --out '%s/r'",
                          env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "__REPRO: qmmcheck repro --backend ");
    free(out);
    out = qmmcheck_expect(0, "reduce " CASE " --backend '%s' --no-isolate -q --out '%s/r\xff'",
                          env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "\\xff'");
    free(out);
}

/* A CASE_DIR or an --out named NAME@N (how run names a case's data set N) is refused before
 * the work: the written case's own __REPRO line was an ERROR. */
Test(reduce_cli, names_like_a_data_set_are_refused)
{
    char *out = qmmcheck_expect(2, "reduce " CASE " --backend '%s' -q --out '%s/red@2'",
                                env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "its name ends in @N");
    free(out);
    char to[512];
    snprintf(to, sizeof to, "%s/x@1", tmpdir);
    copy_tree(CASE, to);
    out = qmmcheck_expect(2, "reduce '%s' --backend '%s' -q --out '%s/r'", to,
                          env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "its name ends in @N");
    free(out);
    /* the probe of an --out leaves no folder it made behind */
    out = qmmcheck_expect(2, "reduce " CASE " --backend reference -q --out '%s/o1/sub/deep'",
                          tmpdir);
    free(out);
    snprintf(to, sizeof to, "%s/o1", tmpdir);
    cr_expect(access(to, F_OK) != 0, "%s was left behind", to);
}

/* ---- --out ---- */

/* A case reduce wrote earlier at --out is replaced whole: a smaller case (fewer inputs) left
 * the earlier case's input files beside its own, and the printed case did not load. */
Test(reduce_cli, an_earlier_reduced_case_at_out_is_replaced_whole)
{
    char *out = qmmcheck_expect(0, "reduce " CASE " --backend '%s' -q --out '%s/r' "
                                "--max-tries 3", env("QMM_FLAKY_PLUGIN"), tmpdir);
    free(out); /* QLinearMatMul: 8 inputs */
    out = qmmcheck_expect(0, "reduce vectors/edge/matmulinteger/extremes/s8u8-k4 --backend '%s' "
                          "-q --out '%s/r'", env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "replaced");
    free(out); /* MatMulInteger: 2 inputs */
    char path[512];
    snprintf(path, sizeof path, "%s/r/test_data_set_0/input_2.pb", tmpdir);
    cr_expect(access(path, F_OK) != 0, "%s was left from the earlier case", path);
    out = qmmcheck_expect(1, "repro --backend '%s' '%s/r'", env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, ":FAILED ");
    free(out);
}

/* A directory that is not a case qmmcheck wrote is never written into, nor removed. */
Test(reduce_cli, an_out_directory_holding_other_files_is_refused)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/mine", tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    write_notes(dir, path, sizeof path);
    char *out = qmmcheck_expect(2, "reduce " CASE " --backend '%s' -q --out '%s'",
                                env("QMM_FLAKY_PLUGIN"), dir);
    expect_in(out, "is not a case qmmcheck wrote");
    free(out);
    expect_notes_left_alone(path, dir, "model.onnx");
    /* a committed case (tagged, but not by reduce or diff) is not replaced either */
    snprintf(dir, sizeof dir, "%s/committed", tmpdir);
    copy_tree(COMMITTED_CASE, dir);
    out = qmmcheck_expect(2, "reduce " CASE " --backend '%s' -q --out '%s'",
                          env("QMM_FLAKY_PLUGIN"), dir);
    expect_in(out, "is not a case qmmcheck wrote");
    free(out);
    expect_committed_case_untouched(dir);
}

Test(reduce_cli, an_empty_out_directory_is_used)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/empty", tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    char *out = qmmcheck_expect(0, "reduce " CASE " --backend '%s' -q --out '%s' --max-tries 3",
                                env("QMM_FLAKY_PLUGIN"), dir);
    free(out);
    out = qmmcheck_expect(1, "repro --backend '%s' '%s'", env("QMM_FLAKY_PLUGIN"), dir);
    expect_in(out, ":FAILED ");
    free(out);
}
