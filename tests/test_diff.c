/* tests/test_diff.c — `qmmcheck diff`'s saved cases over earlier ones, and its exit status when
 * it compared nothing (test_edge.c has its differences, replays and --only forms). The fake
 * plugin (tests/plugins/fake_backend.c) writes zeros, or answers UNSUPPORTED. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/cli_support.h"

TestSuite(diff_cli, .init = make_tmp, .fini = remove_tmp);

/* Problem 0 of seed 1 is a QLinearMatMul (8 inputs), of seed 2 a MatMulInteger (4 inputs):
 * saved to the same --out, the second left input_4..7.pb of the first beside its own, and the
 * saved case did not load ("8 input files for 4 node inputs"). It is replaced whole. */
Test(diff_cli, a_case_saved_over_an_earlier_one_replaces_it_whole)
{
    char *out;
    for (int seed = 1; seed <= 2; seed++) {
        out = qmmcheck_expect(1, "diff --backend reference --backend '%s' --seed %d --count 1 "
                              "-q --out '%s/d'", env("QMM_FAKE_PLUGIN"), seed, tmpdir);
        expect_in(out, "saved ");
        if (seed == 2)
            expect_in(out, "replaced");
        free(out);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/d/problem-0/test_data_set_0/input_4.pb", tmpdir);
    cr_expect(access(path, F_OK) != 0, "%s was left from the earlier case", path);
    qmmcheck_expect_in(0, "total:1 passed:1 ", "run --backend reference --vectors '%s/d'", tmpdir);
}

/* The saved case's line names the backend the reference disagrees with, A or B, so that
 * running it fails as the diff did (it named B always: with the wrong backend as A, the line
 * ran the reference and PASSED). */
Test(diff_cli, the_saved_case_line_names_the_backend_the_reference_disagrees_with)
{
    const char *fake = env("QMM_FAKE_PLUGIN");
    char want[1024];
    for (int wrong = 0; wrong < 2; wrong++) {
        char *out = qmmcheck_expect(1, "diff --backend '%s' --backend '%s' --seed 1 --count 1 -q "
                                    "--out '%s/d%d'", wrong == 0 ? fake : "reference",
                                    wrong == 0 ? "reference" : fake, tmpdir, wrong);
        expect_in(out, wrong == 0 ? "reference (spec) agrees with B" : "agrees with A");
        snprintf(want, sizeof want, "saved %s/d%d/problem-0 (qmmcheck repro --backend %s %s/d%d/"
                 "problem-0)", tmpdir, wrong, fake, tmpdir, wrong);
        expect_in(out, want);
        free(out);
        qmmcheck_expect_in(1, "1:FAILED ", "repro --backend '%s' '%s/d%d/problem-0'", fake,
                           tmpdir, wrong);
    }
}

/* --problem replays one problem: --count, --seconds or --start beside it were ignored
 * silently; seconds in exponent form are refused with the form that is taken. */
Test(diff_cli, problem_and_count_do_not_go_together)
{
    const char *others[] = {"--count 4", "--seconds 1", "--start 2"};
    for (int i = 0; i < 3; i++)
        qmmcheck_expect_in(2, "--problem I replays one problem: --count, --seconds and --start "
                              "do not go with it", "diff --backend reference --backend reference "
                              "--seed 1 --problem 3 %s", others[i]);
    qmmcheck_expect_in(2, "--seconds 1e-3: expected seconds from 0 to 1000000, as a decimal",
                       "diff --backend reference --backend reference --seed 1 --seconds 1e-3");
}

/* A directory at DIR/problem-I that is not a case qmmcheck wrote is left alone, and the
 * difference says the case could not be saved. */
Test(diff_cli, a_directory_that_is_not_a_saved_case_is_left_alone)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/d/problem-0", tmpdir);
    copy_tree(COMMITTED_CASE, dir);
    write_notes(dir, path, sizeof path);
    char *out = qmmcheck_expect(1, "diff --backend reference --backend '%s' --seed 1 --count 1 "
                                "-q --out '%s/d'", env("QMM_FAKE_PLUGIN"), tmpdir);
    expect_in(out, "could not save the case: ");
    expect_in(out, "is not a case qmmcheck wrote");
    free(out);
    expect_notes_left_alone(path, dir, "test_data_set_0/input_7.pb");
    /* --reduce: nor at DIR/problem-I-reduced, said before reducing */
    snprintf(dir, sizeof dir, "%s/e/problem-0-reduced", tmpdir);
    copy_tree(COMMITTED_CASE, dir);
    out = qmmcheck_expect(1, "diff --backend reference --backend '%s' --seed 1 --count 1 -q "
                          "--out '%s/e' --reduce", env("QMM_FAKE_PLUGIN"), tmpdir);
    expect_in(out, "saved ");
    expect_in(out, "not reduced: ");
    expect_in(out, "problem-0-reduced is not a case qmmcheck wrote");
    free(out);
    expect_committed_case_untouched(dir);
}

/* A diff that compared no problem exits 3 with the reason on stderr, as run does when it judged
 * no case (docs/formats.md "Exit status"); --allow-empty makes that 0. */
Test(diff_cli, a_diff_that_compared_nothing_exits_3)
{
    char *out = qmmcheck_expect(3, "diff --backend reference --backend '%s:mode=unsupported' "
                                "--seed 1 --count 20 -q", env("QMM_FAKE_PLUGIN"));
    expect_in(out, "no problem was compared: every problem was SKIPPED");
    expect_in(out, "--allow-empty");
    free(out);
    qmmcheck_expect_in(3, "no problem was compared: --only left no problem",
                       "diff --backend reference --backend reference --seed 1 --count 20 "
                       "-q --only u8s8,float8");
    qmmcheck_expect_in(0, "DIFF SUMMARY: problems:20 same:0 differences:0 skipped:20 ",
                       "diff --backend reference --backend '%s:mode=unsupported' "
                       "--seed 1 --count 20 -q --allow-empty", env("QMM_FAKE_PLUGIN"));
    /* one problem compared is enough */
    out = qmmcheck_expect(0, "diff --backend reference --backend reference --seed 1 --count 20 "
                          "-q --only per-tensor");
    free(out);
}

/* SIGTERM during a long diff: the problem under way is left out (never a difference), the
 * DIFF SUMMARY of what was compared is printed and says it was interrupted, exit 143. It used
 * to die of the signal without a summary. */
Test(diff_cli, sigterm_prints_the_summary_and_exits_143, .timeout = 120)
{
    FILE *f;
    pid_t pid = qmmcheck_start(&f, "diff --backend reference --backend optimized --seed 3 "
                                   "--seconds 600 -q --out '%s/d' 2>&1", tmpdir);
    sleep(2);
    char *rest;
    char *summary = expect_interrupted(pid, f, &rest);
    cr_expect(strncmp(summary, "DIFF SUMMARY:", 13) == 0 && strstr(summary, "differences:0"),
              "%s", summary);
    cr_expect_eq(count_lines_starting(rest, "DIFF "), 1, "a difference was reported:\n%s", rest);
    free(summary);
    free(rest);
}

/* diff draws the float-output operators when --only names one (harness/gen/problem.c) and
 * judges the two answers by their accept rule: the reference and the optimized backend sum
 * MatMulNBits in other orders (tolerated, not differences), and every other answer of theirs
 * agrees. Before: diff drew none of them (every problem filtered, "compared no problem", exit
 * 3); then a 1-D B made the optimized backend's
 * DynamicQuantizeMatMul and MatMulIntegerToFloat take y's last dim (M) for N, reading the bias
 * and per-column scales past their end. */
Test(diff_cli, the_float_output_operators_are_drawn_and_judged_by_their_rule)
{
    static const char *const ops[] = {"matmulnbits", "dynamicquantizematmul",
                                      "matmul_integer_to_float"};
    static const int counts[] = {300, 2000, 2000}; /* a few seconds each */
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char *out = qmmcheck_expect(0, "diff --backend reference --backend optimized --seed 1 "
                                    "--count %d -q --only %s --out '%s/d'", counts[i], ops[i],
                                    tmpdir);
        expect_in(out, " differences:0 ");
        cr_expect(strstr(out, "DIFF SUMMARY: problems:0 ") == NULL, "%s: none drawn", ops[i]);
        if (i == 0)
            cr_expect(strstr(out, " tolerated:0 ") == NULL, "no MatMulNBits answers differed "
                      "in their bits: %s", out);
        free(out);
    }
    /* DequantizeLinear: the optimized backend does not compute it, the reference does */
    char *out = qmmcheck_expect(0, "diff --backend reference --backend reference --seed 1 "
                                "--count 1000 -q --only dequantizelinear --out '%s/d'", tmpdir);
    expect_in(out, " differences:0 ");
    cr_expect(strstr(out, "DIFF SUMMARY: problems:0 ") == NULL, "dequantizelinear: none drawn");
    free(out);
}

/* One problem in a hundred has K from 1025 to 8192 (every one stopped at 300, so diff never
 * reached the optimized backend's raw A past K = 1024, nor float8's longest sums): a plugin
 * wrong only where K >= 1025 (flaky's min-k) differs within 3000 problems of seed 1, on
 * QLinearMatMul and MatMulInteger alike. */
Test(diff_cli, long_k_problems_are_drawn)
{
    char *out = qmmcheck_expect(1, "diff --backend reference --backend '%s:min-k=1025' --seed 1 "
                                "--count 3000 -q --max-diffs 1000 --out '%s/d'",
                                env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "QLinearMatMul opset");
    expect_in(out, "MatMulInteger");
    cr_expect(strstr(out, " differences:0 ") == NULL, "%s", out);
    free(out);
}

/* Every __REPRO: line of --only supported replays the problem it printed. Which draw problem I
 * took hung on the forms refused by the problems before it (a form refused 3 times is drawn
 * again without asking), so a replay from an empty memory took another draw: with a backend
 * whose query depends on K, 69 of 160 replays were other problems. The line now names the
 * draw (--draw D). And a float-output operator's --only (its own generator) is in the line:
 * without it the replay was a QLinearMatMul problem. */
Test(diff_cli, every_repro_line_replays_the_problem_it_printed, .timeout = 120)
{
    char wrong[2][600];
    snprintf(wrong[0], sizeof wrong[0], "%s:k-multiple=4", env("QMM_FLAKY_PLUGIN"));
    snprintf(wrong[1], sizeof wrong[1], "%s:order=sequential,bug=floor-blocks",
             env("QMM_NBITS_PLUGIN"));
    static const char *const onlys[] = {"supported,matmulinteger", "matmulnbits"};
    for (int t = 0; t < 2; t++) {
        char *out = qmmcheck_expect(1, "diff --backend reference --backend '%s' --only %s "
                                    "--seed 1 --count %d --max-diffs 1000 -q --out '%s/d%d'",
                                    wrong[t], onlys[t], t == 0 ? 200 : 40, tmpdir, t);
        int replayed = 0;
        for (char *line = out; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            char *desc = strstr(line, " problem="), *repro = strstr(line, "__REPRO: qmmcheck ");
            char *end = desc ? strstr(desc, ": A ") : NULL;
            if (strncmp(line, "DIFF ", 5) == 0 && desc && repro && end) {
                char *again = qmmcheck_expect(1, "%s --out '%s/r' -q",
                                              repro + strlen("__REPRO: qmmcheck "), tmpdir);
                *end = '\0';
                cr_expect(strstr(again, desc), "the replay is another problem than%s:\n%s", desc,
                          again);
                free(again);
                replayed++;
            }
            line = nl ? nl + 1 : NULL;
        }
        cr_expect_geq(replayed, t == 0 ? 100 : 3, "%d replays", replayed);
        free(out);
    }
}

/* With the wrong backend as A on a float-output operator, the reference's own answer (B) is
 * often INCONCLUSIVE: the saved case's line named B, whose repro then did not fail (28 of
 * seed 1's first 200 MatMulNBits problems). It names the backend the judge fails. */
Test(diff_cli, the_saved_case_line_never_names_a_side_that_only_is_inconclusive)
{
    char *out = qmmcheck_expect(1, "diff --backend '%s:order=sequential,bug=floor-blocks' "
                                "--backend reference --only matmulnbits --seed 1 --count 200 "
                                "--max-diffs 1000 -q --out '%s/d'",
                                env("QMM_NBITS_PLUGIN"), tmpdir);
    cr_expect(strstr(out, "(qmmcheck repro --backend reference ") == NULL,
              "a saved case's line names the reference:\n%s", out);
    expect_in(out, "saved ");
    free(out);
}

/* Two backends that fail every call alike (INTERNAL) compared nothing: "same:50", exit 0,
 * before. They are skipped, and a diff of nothing else exits 3. */
Test(diff_cli, two_backends_that_fail_alike_compared_nothing)
{
    char *out = qmmcheck_expect(3, "diff --backend '%s:mode=internal' --backend '%s:mode=internal' "
                                "--seed 3 --count 20 -q --out '%s/d'",
                                env("QMM_FAKE_PLUGIN"), env("QMM_FAKE_PLUGIN"), tmpdir);
    expect_in(out, " same:0 ");
    expect_in(out, " skipped:20 ");
    free(out);
}

/* A difference the reference cannot judge under --profile is saved with no expected output:
 * its line says so (it printed a repro line as if that reproduced it; the repro SKIPs), and a
 * run of the case says the reference skipped it, not the backend. */
Test(diff_cli, a_difference_the_profile_cannot_judge_says_so)
{
    char *out = qmmcheck_expect(1, "diff --backend reference --backend '%s' --seed 5 --count 1 "
                                "--profile orion-fp16x16 -q --out '%s/d'",
                                env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "reference (orion-fp16x16): UNSUPPORTED");
    expect_in(out, "(no expected output: the reference cannot judge it under orion-fp16x16, so "
                   "run and repro SKIP it; qmmcheck repro ");
    free(out);
    out = qmmcheck_expect(3, "run --backend '%s' --profile orion-fp16x16 --vectors '%s/d'",
                          env("QMM_FLAKY_PLUGIN"), tmpdir);
    expect_in(out, "every case was SKIPPED (the reference cannot judge them under the profile)");
    cr_expect(strstr(out, "the backend answered UNSUPPORTED") == NULL, "%s", out);
    free(out);
}
