/* tests/test_exec.c — the exec: backend (docs/exec-protocol.md) driven through the CLI.
 *
 * The child is tests/exec/child.c (QMM_EXEC_CHILD): correct, or hostile as its argument says.
 * The Python module's example runs when the virtual environment exists (scripts/pydeps.sh
 * makes .venv at the repository root; QMM_PYTHON names another interpreter). */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <time.h>

#include "harness/invoke/exec.h"
#include "ops/qmm_ops.h"
#include "tests/cli_support.h"

/* one limit for the suite: a test's own .timeout over the suite's leaks 48 bytes in Criterion,
 * which the sanitizer pass's LeakSanitizer aborts on */
TestSuite(exec, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

#define MI "vectors/edge/matmulinteger"
#define MI_RANDOM MI "/random"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static const char *child(void)
{
    return env("QMM_EXEC_CHILD");
}

Test(exec, a_correct_process_passes_every_case)
{
    char *out = qmmcheck_expect(0, "run --backend 'exec:%s ok' --vectors " MI, child());
    expect_in(out, "SUMMARY:");
    cr_expect_eq(count_lines_with(out, ":FAILED"), 0, "%s", out);
    cr_expect_eq(count_lines_with(out, ":ERROR"), 0, "%s", out);
    cr_expect_gt(count_lines_with(out, ":PASSED"), 10, "%s", out);
    free(out);
}

Test(exec, a_process_that_fails_to_start_has_its_stderr_in_the_usage_error)
{
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        char *out = qmmcheck_expect(2, "run %s --backend 'exec:%s fail-to-start' --vectors "
                                    MI_RANDOM, isolation[i], child());
        expect_in(out, "exited with status 2 before reading the hello request; what it printed (1 "
                       "line) ends: test-child: needs the module 'nothing'\n"
                       "    | test-child: needs the module 'nothing'\n");
        free(out);
    }
}

/* A process that dies before its hello: under the usage error, its last stderr lines, each
 * "    | " and the line cleaned on its own, so a traceback reads as Python prints it; at most 20
 * lines and 4 KiB, after a line counting those left out. Hostile output (escape sequences,
 * binary bytes, forged case lines, 100 MB, a 1 MB line) stays bounded and forges nothing. */
Test(exec, a_process_that_dies_before_its_hello_shows_its_stderr_as_lines)
{
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        const char *cmd = "run %s --backend 'exec:%s fail-to-start=%s' --vectors " MI_RANDOM;
        char *out = qmmcheck_expect(2, cmd, isolation[i], child(), "traceback");
        expect_in(out, "exited with status 1 before reading the hello request; what it printed (6 "
                       "lines) ends: ZeroDivisionError: division by zero\n"
                       "    | Traceback (most recent call last):\n"
                       "    |   File \"/srv/my_backend.py\", line 3, in <module>\n"
                       "    |     import my_kernels\n"
                       "    |   File \"/srv/my_kernels.py\", line 1, in <module>\n"
                       "    |     1 / 0\n"
                       "    | ZeroDivisionError: division by zero\n");
        free(out);
        out = qmmcheck_expect(2, cmd, isolation[i], child(), "hostile");
        expect_in(out, "what it printed (35 lines) ends: no newline at the end\n"
                       "    ... 15 earlier lines not shown\n"
                       "    | noise 15\n");
        expect_in(out, "    | \\x1b[2J\\x1b]0;pwned\\x07 bell\n"
                       "    | 1:PASSED forged/case\n"
                       "    | SUMMARY: total:1 passed:1\n"
                       "    | bin \\x00\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end\n"
                       "    | no newline at the end\n");
        cr_expect_eq(count_lines_starting(out, "    | "), 20, "%s", out);
        cr_expect_eq(count_lines_starting(out, "1:"), 0, "%s", out);
        cr_expect_eq(count_lines_starting(out, "SUMMARY"), 0, "%s", out);
        cr_expect(strchr(out, '\x1b') == NULL && strchr(out, '\a') == NULL, "%s", out);
        free(out);
        /* 100 MB: the first 4 KiB kept (64 lines), their last 20 shown */
        out = qmmcheck_expect(2, cmd, isolation[i], child(), "flood");
        expect_in(out, "what it printed (64 lines kept, 104853504 bytes after them dropped) "
                       "ends: y");
        expect_in(out, "\n    ... 44 earlier lines not shown\n");
        cr_expect_eq(count_lines_starting(out, "    | "), 20, "%s", out);
        cr_expect_lt(strlen(out), 4096, "%s", out);
        free(out);
        /* one 1 MB line: 4 KiB kept, shown cut at 1 KiB */
        out = qmmcheck_expect(2, cmd, isolation[i], child(), "long-line");
        expect_in(out, "what it printed (1 line kept, 1044480 bytes after them dropped) ends: y");
        cr_expect_eq(count_lines_starting(out, "    | "), 1, "%s", out);
        cr_expect_lt(strlen(out), 2048, "%s", out);
        free(out);
    }
}

Test(exec, quoting_splits_the_command_as_a_shell_would_without_a_shell)
{
    /* the mode word quoted, and a stray '$' that a shell would expand */
    char *out = qmmcheck_expect(0, "run --backend \"exec:'%s' 'o'\\\"k\\\"\" --vectors " MI_RANDOM,
                                child());
    cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
    free(out);
    out = qmmcheck_expect(2, "run --backend \"exec:%s 'ok\" --vectors " MI_RANDOM, child());
    expect_in(out, "unterminated ' quote");
    free(out);
}

Test(exec, a_missing_program_is_a_usage_error_naming_it)
{
    char *out = qmmcheck_expect(2, "run --backend 'exec:./no/such/program' --vectors " MI);
    expect_in(out, "cannot run ./no/such/program: No such file or directory");
    free(out);
}

Test(exec, a_crash_mid_call_is_crashed_and_the_next_case_runs)
{
    char flag[512];
    snprintf(flag, sizeof flag, "%s/crashed", tmpdir);
    char *out = qmmcheck_expect(1, "run --backend 'exec:%s crash-once=%s' --vectors " MI_RANDOM,
                                child(), flag);
    cr_expect_eq(count_lines_with(out, ":CRASHED"), 1, "%s", out);
    expect_in(out, "killed by signal 11");
    cr_expect_eq(count_lines_with(out, ":PASSED"), 3, "the restarted process runs the rest:\n%s",
                 out);
    free(out);
}

Test(exec, a_crash_is_crashed_in_process_too)
{
    char flag[512];
    snprintf(flag, sizeof flag, "%s/crashed", tmpdir);
    char *out = qmmcheck_expect(1,
                                "run --no-isolate --backend 'exec:%s crash-once=%s' --vectors "
                                MI_RANDOM, child(), flag);
    cr_expect_eq(count_lines_with(out, ":CRASHED"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED"), 3, "%s", out);
    free(out);
}

Test(exec, an_exit_mid_call_names_the_status)
{
    char *out = qmmcheck_expect(1, "run --backend 'exec:%s exit-on-call' --vectors " MI_RANDOM,
                                child());
    cr_expect_eq(count_lines_with(out, ":CRASHED"), 4, "%s", out);
    expect_in(out, "exited with status 7");
    free(out);
}

Test(exec, a_hang_is_a_timeout_within_a_second_and_the_process_restarts)
{
    char flag[512];
    snprintf(flag, sizeof flag, "%s/hung", tmpdir);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *out = qmmcheck_expect(1,
                                "run --timeout 0.5 --backend 'exec:%s hang-once=%s' --vectors "
                                MI_RANDOM, child(), flag);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect_eq(count_lines_with(out, ":TIMEOUT"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED"), 3, "%s", out);
    cr_expect_lt(s, 5.0, "the run took %.2f s", s);
    free(out);
}

Test(exec, printed_and_said_lines_cannot_forge_case_lines)
{
    char *out = qmmcheck_expect(1, "run --backend 'exec:%s forge' --vectors " MI_RANDOM,
                                child());
    cr_expect_eq(count_lines_starting(out, "999:"), 0, "%s", out);
    cr_expect_eq(count_lines_starting(out, "1:PASSED forged"), 0, "%s", out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY:"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":FAILED"), 4, "%s", out);
    free(out);
}

/* Runs the four random cases with the child in `mode`: each ends `status`, and `text` is said. */
static char *every_case(const char *mode, const char *status, const char *text)
{
    char *out = qmmcheck_expect(1, "run --backend 'exec:%s %s' --vectors " MI_RANDOM, child(),
                                mode);
    cr_expect_eq(count_lines_with(out, status), 4, "%s", out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY:"), 1, "%s", out);
    expect_in(out, text);
    return out;
}

/* What a process prints is shown line by line, the last lines kept: at most 64 lines (of
 * 1000 printed) and 4 KiB cleaned (of ten lines of 199 control characters, 796 bytes each
 * cleaned), after a line counting the earlier ones left out. */
Test(exec, its_output_is_shown_as_at_most_64_lines_and_4_kib)
{
    struct {
        const char *mode, *left;
        int shown;
    } floods[] = {{"flood=1000,1", "    ... 937 earlier lines not shown", 64},
                  {"flood=10,199", "    ... 5 earlier lines not shown", 6}};
    for (int f = 0; f < 2; f++) {
        char *out = every_case(floods[f].mode, ":FAILED", "flooded");
        cr_expect_eq(count_lines_starting(out, floods[f].left), 4, "%s", out);
        cr_expect_eq(count_lines_starting(out, "    |"), 4 * floods[f].shown, "%s", out);
        cr_expect_eq(count_lines_starting(out, "    | the last line"), 4, "%s", out);
        cr_expect_eq(count_lines_starting(out, "    | \\x01"), 4 * (floods[f].shown - 1), "%s",
                     out);
        free(out);
    }
}

Test(exec, writing_on_the_protocol_channel_is_an_error_naming_the_frame_length)
{
    char *out = every_case("forge-stdout", ":ERROR", "frame length:");
    cr_expect_eq(count_lines_starting(out, "1:PASSED forged"), 0, "%s", out);
    free(out);
}

Test(exec, an_oversized_length_is_an_error_before_allocating)
{
    free(every_case("oversize", ":ERROR",
                    "frame length: 4294967280 bytes for the call answer, more than its limit"));
}

Test(exec, a_malformed_field_is_an_error_naming_it)
{
    free(every_case("bad-field", ":ERROR", "Reply.status: wire type"));
}

Test(exec, an_output_of_the_wrong_shape_fails)
{
    free(every_case("wrong-shape", ":FAILED", "returned an output of type int32 and shape [1,1]"));
}

Test(exec, a_version_mismatch_is_a_clear_usage_error)
{
    /* a version 1 process (no request ids) is refused by its version, before its id */
    char *out = qmmcheck_expect(2, "run --backend 'exec:%s version=1' --vectors " MI_RANDOM,
                                child());
    expect_in(out, "protocol version mismatch: the process speaks version 1, this qmmcheck "
                   "speaks version 2");
    free(out);
}

Test(exec, determinism_variants_reach_the_process_in_its_hello)
{
    char *out = qmmcheck_expect(0, "run --determinism --variants 'threads=2' --backend "
                                "'exec:%s refuse-options' --vectors " MI_RANDOM, child());
    expect_in(out, "variant exec,threads=2:");
    expect_in(out, "refused to start: INVALID_ARGUMENT: no options known");
    cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
    free(out);
    out = qmmcheck_expect(0, "run --determinism --backend 'exec:%s ok' --vectors " MI_RANDOM,
                          child());
    cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
    cr_expect_eq(count_lines_with(out, "left out"), 0, "%s", out);
    free(out);
}

/* A call made again (to find unwritten elements, or as a --determinism variant) that crashes
 * is CRASHED, as the first would be, which --xfail does not waive; it was FAILED "not
 * deterministic", which an --xfail entry for the case turned into XFAIL and exit 0. */
Test(exec, a_second_call_that_crashes_is_crashed_even_under_xfail)
{
    char xf[600];
    snprintf(xf, sizeof xf, "%s/xfail.txt", tmpdir);
    FILE *f = fopen(xf, "w");
    cr_assert(f);
    fputs("13-u8s8\n", f);
    fclose(f);
    char *out = qmmcheck_expect(1, "run --xfail %s --backend 'exec:%s fill-then-segv' --filter "
                                "13-u8s8 --vectors " MI_RANDOM, xf, child());
    cr_expect_eq(count_lines_with(out, ":CRASHED 13-u8s8 (a second run (to find unwritten "
                                       "elements): "), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, "XFAIL"), 0, "%s", out);
    free(out);
    out = qmmcheck_expect(1, "run --xfail %s --determinism --variants threads=2 --backend "
                          "'exec:%s segv-on-options' --filter 13-u8s8 --vectors " MI_RANDOM, xf,
                          child());
    cr_expect_eq(count_lines_with(out, ":CRASHED 13-u8s8 (exec,threads=2:"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, "XFAIL"), 0, "%s", out);
    /* its __REPRO: line carries --determinism and --variants, and crashes again (repro made
       no variant's call: it PASSED) */
    const char *at = strstr(out, "__REPRO: qmmcheck repro ");
    cr_assert(at, "%s", out);
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(at + 18, "\n"), at + 18);
    cr_expect(strstr(line, " --determinism --variants threads=2") != NULL, "%s", line);
    free(out);
    out = qmmcheck_expect(1, "%s", line);
    cr_expect_eq(count_lines_with(out, ":CRASHED "), 1, "the repro line: %s\n%s", line, out);
    free(out);
}

Test(exec, diff_fingerprint_and_repro_run_it)
{
    char *out = qmmcheck_expect(0, "diff --backend reference --backend 'exec:%s ok' --seed 3 "
                                "--count 40", child());
    free(out);
    out = qmmcheck_expect(0, "fingerprint --backend 'exec:%s ok'", child());
    expect_in(out, "spec");
    free(out);
    out = qmmcheck_expect(0, "repro --backend 'exec:%s ok' " MI "/random/13-u8s8", child());
    free(out);
}

/* A start is not a call: a process that takes 2 s to start (an interpreter importing its
 * modules, a fork on a loaded machine) is judged under --timeout 1, in run and in diff (its
 * start had --timeout's time: every case was ERROR "qmm_backend_open: no answer within 1 s";
 * under `ctest -j2` a plugin's worker once missed a 0.5 s --timeout so). The calls keep 1 s:
 * a shorter limit could itself be missed on a loaded machine. */
Test(exec, a_slow_start_is_not_held_to_the_call_timeout)
{
    char *out = qmmcheck_expect(0, "run --timeout 1 --backend 'exec:sh -c \"sleep 2; exec "
                                "%s ok\"' --vectors " MI_RANDOM, child());
    cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
    free(out);
    out = qmmcheck_expect(0, "diff --timeout 1 --backend reference --backend 'exec:sh -c "
                          "\"sleep 2; exec %s ok\"' --seed 3 --count 20 --out %s/d", child(),
                          tmpdir);
    free(out);
}

/* The first `__REPRO:` line of `out` (which this frees) holds `options` and, run again, is
 * TIMEOUT again. */
static void rerun_repro_line(char *out, const char *options)
{
    const char *at = strstr(out, "__REPRO: qmmcheck repro ");
    cr_assert(at, "%s", out);
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(at + 18, "\n"), at + 18);
    cr_expect(strstr(line, options) != NULL, "%s", line);
    free(out);
    out = qmmcheck_expect(1, "%s", line);
    cr_expect_eq(count_lines_with(out, ":TIMEOUT"), 1, "the repro line: %s\n%s", line, out);
    free(out);
}

/* A `__REPRO:` line judges as the run did: it carries the isolation options that were not left
 * at their defaults. A process that answers right 1.5 s late is TIMEOUT under --timeout 0.5;
 * the line (before: `qmmcheck repro --backend SPEC DIR`, which PASSED it under the default 30 s)
 * gives TIMEOUT again. diff's line carries them too. */
Test(exec, a_repro_line_carries_the_isolation_options)
{
    char *out = qmmcheck_expect(1, "run --timeout 0.5 --start-timeout 5 --memory-limit 2G "
                                "--backend 'exec:%s slow=1.5' --filter 13-u8s8 --vectors "
                                MI_RANDOM, child());
    cr_assert_eq(count_lines_with(out, ":TIMEOUT"), 1, "%s", out);
    rerun_repro_line(out, " --timeout 0.5 --start-timeout 5 --memory-limit 2147483648 ");
    /* seconds are written as decimals, which the options read back (not %g's 1e-05) */
    out = qmmcheck_expect(1, "run --timeout 0.00001 --backend 'exec:%s slow=0.5' --filter "
                          "13-u8s8 --vectors " MI_RANDOM, child());
    rerun_repro_line(out, " --timeout 0.00001 ");
    /* a value below %.20f's reach keeps its digits ("0" would mean no limit) */
    out = qmmcheck_expect(1, "run --timeout 0.00000000000000000000001 --backend 'exec:%s ok' "
                          "--filter 13-u8s8 --vectors " MI_RANDOM, child());
    expect_in(out, " --timeout 0.00000000000000000000001 ");
    free(out);
    /* every command takes the same --timeout range, so one's line is another's input */
    out = qmmcheck_expect(2, "diff --timeout 5000000 --backend reference --backend reference "
                          "--seed 1 --count 1");
    free(out);
    /* defaults are not written */
    out = qmmcheck_expect(0, "run --backend 'exec:%s ok' --filter 13-u8s8 --vectors " MI_RANDOM,
                          child());
    cr_expect(strstr(out, "--timeout") == NULL && strstr(out, "--memory-limit") == NULL, "%s",
              out);
    free(out);
    out = qmmcheck_expect(1, "diff --timeout 0.5 --start-timeout 5 --backend reference "
                          "--backend 'exec:%s slow=1.5' --seed 3 --count 1 --out %s/dr", child(),
                          tmpdir);
    expect_in(out, " --seed 3 --problem 0 --timeout 0.5 --start-timeout 5");
    expect_in(out, "slow=1.5' --timeout 0.5 --start-timeout 5 "); /* the saved case's line */
    free(out);
}

/* After a call hangs and its worker is killed, the next case's fresh worker starts within a
 * start's time and then has the call's own: one TIMEOUT, the rest PASSED (the restart had the
 * call's 1 s, and every later case failed in its start). */
Test(exec, a_restart_after_a_hang_gets_a_starts_time)
{
    char *out = qmmcheck_expect(1, "run --timeout 1 --backend 'exec:sh -c \"sleep 2; exec "
                                "%s hang-once=%s/hung\"' --vectors " MI_RANDOM, child(), tmpdir);
    cr_expect_eq(count_lines_with(out, ":TIMEOUT"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED"), 3, "%s", out);
    expect_in(out, "(no answer within 1 s; worker killed)");
    free(out);
}

/* A process that crashes, or exits after each answer, is started afresh inside its worker
 * within the next call: the worker says so first (START_MAGIC, harness/invoke/wire.h) and the
 * call gets a start's time more (it had the call's 1 s: the next case was TIMEOUT). */
Test(exec, a_process_restarted_within_a_call_gets_a_starts_time)
{
    char *out = qmmcheck_expect(1, "run --timeout 1 --backend 'exec:sh -c \"sleep 2; exec "
                                "%s crash-once=%s/crashed\"' --vectors " MI_RANDOM, child(),
                                tmpdir);
    cr_expect_eq(count_lines_with(out, ":CRASHED"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED"), 3, "%s", out);
    free(out);
    out = qmmcheck_expect(0, "run --timeout 1 --backend 'exec:sh -c \"sleep 2; exec %s "
                          "exit-after-answer\"' --vectors " MI_RANDOM, child());
    cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
    free(out);
}

/* By default a start gets --timeout's time but at least 10 s: a hello that hangs under
 * --timeout 1 is killed after 10 s, and the line names the limit that ended it. */
Test(exec, a_start_gets_at_least_ten_seconds_by_default)
{
    double t0 = now_s();
    char *out = qmmcheck_expect(1, "run --timeout 1 --backend 'exec:sleep 30' --vectors "
                                MI_RANDOM "/13-u8s8");
    double took = now_s() - t0;
    expect_in(out, "ERROR 13-u8s8 (qmm_backend_open: no answer within 10 s (a worker's start; "
                   "--start-timeout); worker killed)");
    cr_expect(took >= 9.5 && took < 25, "took %.1f s\n%s", took, out);
    free(out);
}

Test(exec, start_timeout_refuses_what_is_not_seconds)
{
    const char *cmds[] = {"run --vectors " MI_RANDOM " --backend reference", "diff --backend "
                          "reference --backend reference --seed 1 --count 1", "fingerprint "
                          "--backend reference", "reduce " MI_RANDOM "/13-u8s8 --backend reference"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char *out = qmmcheck_expect(2, "%s --start-timeout -1", cmds[i]);
        expect_in(out, "--start-timeout -1: expected seconds >= 0 (0: none)");
        free(out);
    }
}

/* A process that prints and then hangs before answering its hello: its worker's open times
 * out, every case is ERROR, and what it printed is shown under the first, cleaned, not lost. */
Test(exec, a_hello_that_hangs_shows_what_the_process_printed)
{
    char *out = qmmcheck_expect(1, "run --timeout 1 --start-timeout 1 --backend 'exec:sh -c "
                                "\"echo loading \033[2Jweights >&2; exec sleep 30\"' --vectors "
                                MI_RANDOM);
    cr_expect_eq(count_lines_with(out, ":ERROR"), 4, "%s", out);
    expect_in(out, "no answer within 1 s (a worker's start; --start-timeout); worker killed");
    expect_in(out, "\n    | loading \\x1b[2Jweights\n");
    cr_expect_null(strchr(out, '\033'), "%s", out);
    free(out);
}

/* fingerprint asks each case twice: a backend right on the first ask and one bit off on the
 * second (mode alternate) is not deterministic, which no profile is: exit 5, every case
 * UNSTABLE with how the answers differ, the JSON's kind and counts (before, it was asked once
 * and named spec, exit 0). */
Test(exec, fingerprint_of_a_backend_that_answers_otherwise_when_asked_again)
{
    char json[600];
    snprintf(json, sizeof json, "%s/fp.json", tmpdir);
    char *out = qmmcheck_expect(5, "fingerprint --backend 'exec:%s alternate' --report json:%s",
                                child(), json);
    expect_in(out, "verdict: not deterministic (118 of 118 cases answered otherwise when asked "
                   "again; the first, tie-odd-zp-u8: asked again differs from the first run "
                   "at 1 of 1 elements (first at index 0: ");
    cr_expect_eq(count_lines_with(out, " UNSTABLE "), 118, "%s", out);
    free(out);
    char *j = slurp(json);
    expect_in(j, "\"unstable\": 118,");
    expect_in(j, "\"verdict\": \"not-deterministic\",\n  \"kind\": \"not-deterministic\"");
    expect_in(j, "\"asked_again\": \"asked again differs from the first run");
    free(j);
    /* a deterministic backend: every case the same when asked again */
    out = qmmcheck_expect(0, "fingerprint --backend 'exec:%s ok' --report json:%s", child(), json);
    free(out);
    j = slurp(json);
    expect_in(j, "\"unstable\": 0,");
    cr_expect_eq(count_lines_with(j, "\"asked_again\": \"same\""), 118, "%s", j);
    free(j);
}

/* A backend whose every call dies computes no semantics: inconclusive (exit 4), the calls
 * that did not return said apart with the first's reason (it was "none", exit 5, the
 * reason shown only under --verbose). */
Test(exec, fingerprint_of_a_backend_that_never_returns_is_inconclusive)
{
    char json[600];
    snprintf(json, sizeof json, "%s/fp.json", tmpdir);
    char *out = qmmcheck_expect(4, "fingerprint --backend 'exec:%s exit-on-call' --report json:%s",
                                child(), json);
    expect_in(out, "118 of 118 cases did not return (crashed, hung or broke the protocol; not "
                   "scored): the first, tie-odd-zp-u8: the backend process (");
    expect_in(out, "exited with status 7 before answering the call\n");
    expect_in(out, "verdict: inconclusive (no case could be judged)");
    free(out);
    char *j = slurp(json);
    expect_in(j, "\"did_not_return\": 118,");
    expect_in(j, "\"judged\": 0,");
    free(j);
    /* one call that did not return (a crash, or a timeout on a loaded machine) is no
       evidence: the case is scored on the ask that returned, and the profile is named (it
       was "not deterministic", exit 5) */
    char flag[600];
    snprintf(flag, sizeof flag, "%s/crashed", tmpdir);
    out = qmmcheck_expect(0, "fingerprint --backend 'exec:%s crash-once=%s'", child(), flag);
    expect_in(out, "1 of 118 cases answered one of their two asks only (scored on that answer; "
                   "the other crashed, hung or broke the protocol): the first, tie-odd-zp-u8: ");
    expect_in(out, "verdict: spec (matches every case it defines)");
    free(out);
    /* a wrong answer, then a crash when asked again: the wrong answer is evidence (it was
       thrown away with the crash, and a backend wrong on the cases it chose to crash on was
       named the profile of the rest) */
    out = qmmcheck_expect(5, "fingerprint --backend 'exec:%s flip-then-segv'", child());
    expect_in(out, "118 of 118 cases answered one of their two asks only");
    expect_in(out, "verdict: none (closest: ");
    free(out);
}

/* A backend wrong from K = 500 on: reduce folds K down to 500 and then, folding no further
 * (each fold passes), must still simplify the scales and zero points. K^2 folds a round (250,000
 * at K = 500) spent the whole budget, and the case kept scales 0.0612..., 170.125 and zero
 * points 175, 255. */
Test(exec, a_long_k_case_still_has_its_scales_and_zero_points_simplified)
{
    char *out = qmmcheck_expect(1, "diff --backend reference --backend 'exec:%s wrong-from-k=500' "
                                "--seed 3 --problem 130 --only qlinearmatmul -q --out %s/d",
                                child(), tmpdir);
    expect_in(out, "a[4,6899]");
    free(out);
    out = qmmcheck_expect(0, "reduce %s/d/problem-130 --backend 'exec:%s wrong-from-k=500' --out "
                          "%s/r", tmpdir, child(), tmpdir);
    expect_in(out, "-> batch=[] M=1 N=1 K=500 in ");
    free(out);
    out = qmmcheck_expect(1, "repro --backend 'exec:%s wrong-from-k=500' %s/r", child(), tmpdir);
    expect_in(out, "    a_scale: float16 [1] = 1\n");
    expect_in(out, "    a_zero_point: uint8 [1] = 0\n");
    expect_in(out, "    y_scale: float16 [1] = 1\n");
    expect_in(out, "    y_zero_point: uint8 [1] = 0\n");
    free(out);
}

/* The same hello in diff and fingerprint: the error names the backend that could not run
 * (diff: A or B, its spec) and ends with what it printed, cleaned. */
Test(exec, diff_and_fingerprint_name_a_hello_that_hangs_with_what_it_printed)
{
    const char *spec = "'exec:sh -c \"echo loading \033[2Jweights >&2; exec sleep 30\"'";
    /* exit 2: a backend that cannot be opened compares nothing (it was 1, "differences") */
    char *out = qmmcheck_expect(2, "diff --start-timeout 1 --backend reference --backend %s "
                                "--seed 1 --count 3 --out %s/d", spec, tmpdir);
    expect_in(out, "qmmcheck diff: B (exec:sh -c ");
    expect_in(out, "no answer within 1 s (a worker's start; --start-timeout); worker killed; "
                   "what it printed (1 line) ends: loading "
                   "\\x1b[2Jweights\n    | loading \\x1b[2Jweights\n");
    cr_expect_null(strchr(out, '\033'), "%s", out);
    free(out);
    out = qmmcheck_expect(1, "fingerprint --start-timeout 1 --backend %s", spec);
    expect_in(out, "what it printed (1 line) ends: loading \\x1b[2Jweights\n"
                   "    | loading \\x1b[2Jweights\n");
    cr_expect_null(strchr(out, '\033'), "%s", out);
    free(out);
}

/* A --determinism variant whose hello hangs (the process hangs when given options): its line
 * on stderr and its <variant> TIMEOUT row end with what it printed, cleaned. */
Test(exec, a_variant_whose_hello_hangs_shows_what_it_printed)
{
    char *out = qmmcheck_expect(1, "run --start-timeout 1 --determinism --variants threads=2 "
                                "--backend 'exec:%s hang-on-options' --vectors " MI_RANDOM,
                                child());
    expect_in(out, "cannot be opened: qmm_backend_open: no answer within 1 s (a worker's start; "
                   "--start-timeout); worker killed; what it printed (1 line) ends: loading \\x1b[2Jweights\n"
                   "    | loading \\x1b[2Jweights\n");
    cr_expect_eq(count_lines_with(out, ":TIMEOUT <variant>"), 1, "%s", out);
    cr_expect_null(strchr(out, '\033'), "%s", out);
    free(out);
}

/* A command word with an escape, a newline and a CR: the spec is argv, so wherever a command
 * names it, it is cleaned, starts no line of its own and sends nothing raw to the terminal. */
#define FORGING_WORD "'\033[2J\nSUMMARY: forged\r'"

/* `out` names the spec cleaned, with `said` (freed). */
static void expect_spec_cleaned(char *out, const char *said)
{
    cr_expect_null(strchr(out, '\033'), "%s", out);
    cr_expect_null(strchr(out, '\r'), "%s", out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY: forged"), 0, "%s", out);
    expect_in(out, "\\x1b[2J\\nSUMMARY: forged\\r");
    expect_in(out, said);
    free(out);
}

Test(exec, fingerprint_names_the_spec_cleaned)
{
    expect_spec_cleaned(qmmcheck_expect(0, "fingerprint --backend 'exec:%s '" FORGING_WORD,
                                        child()),
                        "fingerprint of exec:");
}

Test(exec, reduce_names_the_spec_cleaned)
{
    expect_spec_cleaned(qmmcheck_expect(2, "reduce " MI_RANDOM "/13-u8s8 --out %s/r --backend "
                                        "'exec:%s '" FORGING_WORD, tmpdir, child()),
                        "SUMMARY: forged\\r: it is PASSED; nothing to reduce");
}

/* reduce against a backend whose hello hangs: every case would fail alike (it "reduced" the
 * case to 0x0 as "ERROR qmm_backend_open" and exited 0); a usage error naming the backend,
 * why, and what it printed, cleaned; nothing written. */
Test(exec, reduce_refuses_a_backend_that_could_not_be_opened)
{
    char *out = qmmcheck_expect(2, "reduce --start-timeout 1 " MI_RANDOM "/13-u8s8 --out %s/r "
                                "--backend 'exec:sh -c \"echo loading \033[2Jweights >&2; "
                                "exec sleep 30\"'", tmpdir);
    expect_in(out, "qmmcheck reduce: exec:sh -c ");
    expect_in(out, "could not be opened: qmm_backend_open: no answer within 1 s");
    expect_in(out, "nothing to reduce\n    | loading \\x1b[2Jweights\n");
    cr_expect_null(strchr(out, '\033'), "%s", out);
    char r[600];
    snprintf(r, sizeof r, "%s/r", tmpdir);
    cr_expect_neq(access(r, F_OK), 0, "reduce wrote %s", r);
    free(out);
}

/* The interpreter with numpy and onnx: QMM_PYTHON, else the repository's .venv. */
static int find_python(char *buf, size_t size)
{
    const char *p = getenv("QMM_PYTHON");
    if (p && *p)
        snprintf(buf, size, "%s", p);
    else
        snprintf(buf, size, "%s/.venv/bin/python", env("QMM_SOURCE_DIR"));
    return access(buf, X_OK) == 0;
}

Test(exec, the_python_module_example_passes)
{
    char py[512];
    if (!find_python(py, sizeof py))
        cr_skip_test("no %s: run scripts/pydeps.sh (or set QMM_PYTHON)", py);
    char *out = qmmcheck_expect(0, "run --backend 'exec:%s python/examples/matmulinteger_numpy.py' "
                                "--vectors " MI_RANDOM " " MI "/zero-points", py);
    cr_expect_eq(count_lines_with(out, ":FAILED"), 0, "%s", out);
    cr_expect_gt(count_lines_with(out, ":PASSED"), 10, "%s", out);
    free(out);
}

/* A Python backend that dies on import, deep in its imports: the usage error ends with the
 * exception's own line, isolated and not (what gets cut when the traceback is long is its
 * start, never the line that says why). */
Test(exec, a_python_backend_that_dies_on_import_shows_why_in_the_usage_error)
{
    char py[512], script[600];
    if (!find_python(py, sizeof py))
        cr_skip_test("no %s: run scripts/pydeps.sh (or set QMM_PYTHON)", py);
    snprintf(script, sizeof script, "%s/dies.py", tmpdir);
    write_text(script, "def load(n):\n"
                       "    if n == 0:\n"
                       "        import qmm_no_such_module\n"
                       "    return load(n - 1)\n"
                       "\n"
                       "load(12)\n");
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        char *out = qmmcheck_expect(2, "run %s --backend 'exec:%s %s' --vectors " MI_RANDOM,
                                    isolation[i], py, script);
        expect_in(out, "exited with status 1 before reading the hello request; what it printed (");
        expect_in(out, "\n    | ModuleNotFoundError: No module named 'qmm_no_such_module'\n");
        free(out);
    }
}

/* An exception inside compute: INTERNAL with its type and message, and its traceback beside
 * the case as detail lines, one per line printed, each marked and cleaned on its own, from the
 * user's code (not qmm_exec's frames); what it prints around it forges nothing. */
Test(exec, a_python_exception_shows_its_traceback_as_detail_lines)
{
    char py[512], script[600], text[1024];
    if (!find_python(py, sizeof py))
        cr_skip_test("no %s: run scripts/pydeps.sh (or set QMM_PYTHON)", py);
    snprintf(script, sizeof script, "%s/raises.py", tmpdir);
    snprintf(text, sizeof text,
             "import sys\n"
             "sys.path.insert(0, '%s/python')\n"
             "import qmm_exec\n"
             "\n"
             "def divide(x):\n"
             "    return 1 // x\n"
             "\n"
             "def compute(op, attrs, inputs):\n"
             "    print('\\n7:PASSED forged\\nSUMMARY: total:1 passed:1\\n\\x1b[31mred')\n"
             "    return divide(0)\n"
             "\n"
             "qmm_exec.serve(compute, name='raises')\n", env("QMM_SOURCE_DIR"));
    write_text(script, text);
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        char *out = qmmcheck_expect(1, "run %s --backend 'exec:%s %s' --vectors " MI_RANDOM,
                                    isolation[i], py, script);
        cr_expect_eq(count_lines_with(out, ":FAILED"), 4, "%s", out);
        expect_in(out, "(answered INTERNAL for a valid call: ZeroDivisionError: integer "
                       "division or modulo by zero)");
        cr_expect_eq(count_lines_starting(out, "    | Traceback (most recent call last):"), 4,
                     "%s", out);
        cr_expect_eq(count_lines_starting(out, "    | ZeroDivisionError: integer division or "
                                               "modulo by zero"), 4, "%s", out);
        cr_expect_eq(count_lines_with(out, "\", line 6, in divide"), 4, "%s", out);
        cr_expect_eq(count_lines_with(out, "qmm_exec.py"), 0, "%s", out);
        /* forged lines stay inside the detail, marked */
        cr_expect_eq(count_lines_starting(out, "    | 7:PASSED forged"), 4, "%s", out);
        cr_expect_eq(count_lines_starting(out, "7:"), 0, "%s", out);
        cr_expect_eq(count_lines_starting(out, "SUMMARY:"), 1, "%s", out);
        cr_expect_eq(count_lines_with(out, "\\x1b[31mred"), 4, "%s", out);
        cr_expect_not(strchr(out, '\x1b'), "a raw escape character:\n%s", out);
        free(out);
    }
}

/* ---- the stream cannot be shifted: request ids and unasked bytes (protocol version 2) ---- */

/* Two copies of one case under tmpdir/twice: a spare answer to the first is right for the
 * second too. */
static void two_identical_cases(char *dir, size_t size)
{
    snprintf(dir, size, "%s/twice", tmpdir);
    char to[600];
    snprintf(to, sizeof to, "%s/a", dir);
    copy_tree(MI_RANDOM "/13-u8s8", to);
    snprintf(to, sizeof to, "%s/b", dir);
    copy_tree(MI_RANDOM "/13-u8s8", to);
}

Test(exec, spare_answers_sent_after_a_case_are_an_error_not_the_next_cases_answer)
{
    /* the process answers case a, then a spare query and call answer (right for case b), and
     * answers case b itself wrong: b must not pass on the spare */
    char dir[512], flag[512];
    two_identical_cases(dir, sizeof dir);
    snprintf(flag, sizeof flag, "%s/spared", tmpdir);
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        remove(flag);
        char *out = qmmcheck_expect(1, "run %s --backend 'exec:%s spare-once=%s' --vectors '%s'",
                                    isolation[i], child(), flag, dir);
        cr_expect_eq(count_lines_with(out, ":PASSED"), 1, "only case a passes:\n%s", out);
        cr_expect_eq(count_lines_with(out, "2:ERROR"), 1, "%s", out);
        expect_in(out, "nobody asked for: they were waiting before the query request was sent");
        free(out);
    }
}

Test(exec, a_reply_with_another_requests_id_is_an_error)
{
    free(every_case("wrong-id", ":ERROR", "not the id of the call request it must answer"));
}

/* ---- a process that ends between requests ------------------------------------------------ */

/* The child in `mode` passes the 4 cases of MI_RANDOM, run in a worker and in process. */
static void expect_passes_either_way(const char *mode)
{
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        char *out = qmmcheck_expect(0, "run %s --backend 'exec:%s %s' --vectors " MI_RANDOM,
                                    isolation[i], child(), mode);
        cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
        free(out);
    }
}

Test(exec, a_process_that_exits_after_each_answer_is_restarted_for_the_next_case)
{
    expect_passes_either_way("exit-after-answer");
}

/* A process that ends after each answer and, every other time, without reading the request:
 * each request takes two fresh processes (one because the last ended, one for the resend),
 * a call's query and run four, each announced to the parent by the worker; the parent took
 * two, read the third as a garbled reply and killed the worker: CRASHED "killed by SIGKILL"
 * (3 of these 4 cases), where --no-isolate passed them. */
Test(exec, a_call_that_starts_four_fresh_processes_passes_isolated)
{
    char path[600];
    snprintf(path, sizeof path, "%s/roles", tmpdir);
    const char *isolation[] = {"", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        unlink(path);
        char *out;
        qmmcheck(&out, "run %s --backend 'exec:%s restart-twice=%s' --vectors " MI_RANDOM,
                 isolation[i], child(), path);
        cr_expect_eq(count_lines_with(out, "SIGKILL"), 0, "%s", out);
        /* the answering process ends before its child writes the answer (child.c): on a
           loaded machine qmmcheck may look in between and rightly see a process that "exited
           with status 0 before answering the call" (2 cores running two test suites did, once
           in 4); any other row would be a defect */
        int raced = count_lines_with(out, ":CRASHED") == 0
                        ? 0
                        : count_lines_with(out, "exited with status 0 before answering the call");
        cr_expect_eq(count_lines_with(out, ":PASSED") + raced, 4, "%s", out);
        cr_expect_leq(raced, 1, "%s", out);
        free(out);
    }
}

Test(exec, a_request_the_process_died_without_reading_is_resent_once)
{
    /* each process answers one call, then ends 0.3 s later: the next query reaches it alive
     * and is never read, so it goes to a fresh process */
    expect_passes_either_way("linger-exit");
    /* a process that never reads a request: resent once, then CRASHED, never a loop */
    char *out = qmmcheck_expect(1, "run --backend 'exec:%s exit-after-hello' --vectors "
                                MI_RANDOM, child());
    cr_expect_eq(count_lines_with(out, ":CRASHED"), 4, "%s", out);
    expect_in(out, "exited with status 0 before reading the query request (it was resent "
                   "once: the process before this one ended without reading it too)");
    free(out);
}

/* ---- close ---------------------------------------------------------------------------------- */

Test(exec, a_close_that_crashes_hangs_or_answers_garbage_is_a_close_row)
{
    const struct {
        const char *how, *status, *text;
    } modes[] = {
        {"segv", ":CRASHED <close>", "killed by signal 11 (Segmentation fault) before answering "
                                     "the close"},
        {"exit9", ":CRASHED <close>", "exited with status 9 before answering the close"},
        {"garbage", ":ERROR <close>", "close: Reply.status: wire type length-delimited"},
        {"silent", ":TIMEOUT <close>", "no answer to the close request within 2 s"},
    };
    const char *isolation[] = {"", "--no-isolate"};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        for (int i = 0; i < 2; i++) {
            char *out;
            /* before: --no-isolate waited forever for a silent close */
            int rc = qmmcheck_under(&out, "timeout -k 5 30", "run %s --backend 'exec:%s close=%s' "
                                    "--vectors " MI_RANDOM, isolation[i], child(), modes[m].how);
            cr_expect_eq(rc, 1, "close=%s %s: exit %d:\n%s", modes[m].how, isolation[i], rc, out);
            cr_expect_eq(count_lines_with(out, ":PASSED"), 4, "%s", out);
            cr_expect_eq(count_lines_with(out, modes[m].status), 1, "close=%s %s:\n%s",
                         modes[m].how, isolation[i], out);
            expect_in(out, modes[m].text);
            free(out);
        }
}

/* ---- --no-isolate: the process is still not trusted ------------------------------------- */

Test(exec, in_process_its_stderr_is_captured_and_cleaned_not_passed_through)
{
    char *out = qmmcheck_expect(1, "run --no-isolate --backend 'exec:%s forge' --vectors "
                                MI_RANDOM, child());
    cr_expect_eq(count_lines_starting(out, "1:PASSED forged"), 0, "%s", out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY:"), 1, "%s", out);
    expect_in(out, "worker output ("); /* shown beside the case, cleaned, as isolated */
    cr_expect_eq(count_lines_starting(out, "    | 1:PASSED forged"), 4, "%s", out);
    free(out);
}

Test(exec, in_process_its_hello_name_is_not_its_xfail_identity)
{
    char list[512];
    snprintf(list, sizeof list, "%s/xf.txt", tmpdir);
    FILE *f = fopen(list, "w");
    cr_assert(f);
    fprintf(f, "* status=FAILED backend=test-child\n"); /* the name the child gives itself */
    fclose(f);
    char junit[512];
    snprintf(junit, sizeof junit, "%s/r.xml", tmpdir);
    char *out = qmmcheck_expect(1, "run --no-isolate --xfail '%s' --backend 'exec:%s "
                                "wrong-shape' --vectors " MI_RANDOM " --report 'junit:%s'",
                                list, child(), junit);
    cr_expect_eq(count_lines_with(out, ":FAILED"), 4, "%s", out);
    cr_expect_eq(count_lines_with(out, ":XFAIL"), 0, "%s", out);
    free(out);
    /* nor its report identity: JUnit's classname comes from the spec, as isolated */
    char *xml = slurp(junit);
    cr_assert(xml);
    cr_expect(strstr(xml, "test-child") == NULL, "the hello's name in the report:\n%s", xml);
    free(xml);
}

Test(exec, in_process_sigterm_during_a_hang_ends_the_run_with_its_reports)
{
    char flag[512], report[512], cmd[4096], outfile[512];
    snprintf(flag, sizeof flag, "%s/hung", tmpdir);
    snprintf(report, sizeof report, "%s/r.json", tmpdir);
    snprintf(outfile, sizeof outfile, "%s/out.txt", tmpdir);
    /* SIGTERM once the process hangs; SIGKILL after 30 s more (the bug: forever) */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && { '%s' run --no-isolate --report 'json:%s' "
             "--backend 'exec:%s hang-once=%s' --vectors " MI_RANDOM " > '%s' 2>&1 & p=$!; "
             "i=0; while [ ! -e '%s' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; "
             "sleep 0.2; kill -TERM $p; "
             "i=0; while kill -0 $p 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; "
             "i=$((i+1)); done; kill -KILL $p 2>/dev/null; wait $p; exit $?; }",
             env("QMM_SOURCE_DIR"), env("QMMCHECK"), report, child(), flag, outfile, flag);
    int rc = system(cmd);
    char *out = slurp(outfile);
    cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 128 + SIGTERM, "exit %d:\n%s",
              WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY:"), 1, "%s", out);
    cr_expect(access(report, F_OK) == 0, "no report written:\n%s", out);
    free(out);
    expect_json_valid(report);
}

/* ---- limits ------------------------------------------------------------------------------ */

Test(exec, a_y_larger_than_a_frame_is_skipped_saying_why)
{
    /* the table called directly: a K = 0 call whose y (65536 x 65536 int32, 16 GiB) no call
     * answer can carry; nothing is allocated for it, and the reason is written (it was
     * uninitialised: valgrind saw a conditional jump on it) */
    char rest[1024];
    snprintf(rest, sizeof rest, ":%s ok", child());
    qmm_status st;
    qmm_status_ok(&st);
    qmm_backend *be = qh_exec_open(QMM_ABI_VERSION, rest, &st);
    cr_assert(be, "%s", st.message);
    qmm_call call;
    qmm_call_init(&call, QMM_OP_MATMULINTEGER, 10);
    static uint8_t none[1];
    qmm_tensor *a = qmm_call_input(&call, 0), *b = qmm_call_input(&call, 1);
    *a = (qmm_tensor){.dtype = QMM_DTYPE_UINT8, .rank = 2, .dims = {65536, 0}, .data = none};
    *b = (qmm_tensor){.dtype = QMM_DTYPE_UINT8, .rank = 2, .dims = {0, 65536}, .data = none};
    *qmm_call_output(&call) = (qmm_tensor){.dtype = QMM_DTYPE_INT32, .rank = 2,
                                           .dims = {65536, 65536}};
    qmm_status_code code = qmm_backend_run(be, &call, &st);
    cr_expect_eq(code, QMM_UNSUPPORTED, "%s", st.message);
    cr_expect(strstr(st.message, "y is 17179869184 bytes, more than the exec protocol's call "
                                 "answer holds (4293918719)") != NULL, "%s", st.message);
    be->close(be);
}
