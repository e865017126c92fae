/* tests/plugins/test_isolation.c — hostile plugins (hostile.c) cannot forge, hang or lose a
 * verdict: every call into an isolated plugin (open, query, the operators, close) runs in a
 * worker, whose output is captured and whose process group dies with it.
 *
 * Each test runs qmmcheck on the three seed cases (or one of them) with --isolate and a short
 * --timeout, under `timeout -s KILL` so that a regression hangs nothing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/invoke/backends.h"
#include "harness/invoke/invoke.h"
#include "tests/cli_support.h"
#include "tests/tensor_support.h"

TestSuite(isolation, .init = make_tmp, .fini = remove_tmp, .timeout = 60);

/* AddressSanitizer builds apply no memory limit (see harness/invoke/invoke.c). */
#ifdef QMM_TEST_ASAN
#define NO_MEMORY_LIMIT 1
#endif

static void nap(void)
{
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs qmmcheck on the seeds with the hostile plugin in `mode`, isolated and bounded; returns
 * the exit code and the output (stdout + stderr). */
static int run_hostile(char **out, const char *mode, const char *extra)
{
    return qmmcheck_under(out, "timeout -s KILL 30",
                          "run --backend '%s:mode=%s' --isolate --timeout 1 --vectors "
                          "vectors/seeds --report json:%s/r.json --report junit:%s/r.xml %s",
                          env("QMM_HOSTILE_PLUGIN"), mode, tmpdir, tmpdir, extra);
}

/* The run ended properly: one SUMMARY line and both reports. */
static void assert_run_ended(const char *out)
{
    cr_assert_eq(count_lines_starting(out, "SUMMARY: total:"), 1, "%s", out);
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    cr_assert(stat(path, &st) == 0, "no JSON report:\n%s", out);
    expect_json_valid(path);
    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    cr_assert(stat(path, &st) == 0, "no JUnit report:\n%s", out);
}

/* Runs the hostile mode, asserts the exit code and, for exit 1, that the run ended properly;
 * returns the output (malloc'd). */
static char *expect_run(const char *mode, const char *extra, int want)
{
    char *out;
    int rc = run_hostile(&out, mode, extra);
    cr_assert_eq(rc, want, "exit %d (139 is qmmcheck's own crash):\n%s", rc, out);
    if (want == 1)
        assert_run_ended(out);
    return out;
}

/* expect_run, and `text` somewhere in the output. */
static void expect_run_says(const char *mode, const char *extra, int want, const char *text)
{
    char *out = expect_run(mode, extra, want);
    cr_assert(strstr(out, text), "%s", out);
    free(out);
}

/* expect_run, and exactly one output line containing `needle`. */
static void expect_run_one_line(const char *mode, const char *extra, int want,
                                const char *needle)
{
    char *out = expect_run(mode, extra, want);
    cr_assert_eq(count_lines_with(out, needle), 1, "%s", out);
    free(out);
}

Test(isolation, crash_in_open_is_an_error_per_case_not_a_dead_run)
{
    char *out = expect_run("crash_open", "", 1);
    cr_assert(strstr(out, "error:3"), "%s", out);
    cr_assert_eq(count_lines_with(out, "qmm_backend_open crashed: killed by SIG"), 3, "%s",
                 out);
    free(out);
}

/* diff and reduce cannot compare or reduce anything against a backend whose open crashed:
 * exit 2 naming why. diff exited 1 ("differences") with differences:0. */
Test(isolation, diff_and_reduce_refuse_a_backend_whose_open_crashed)
{
    static const char *const cmds[] = {
        "diff --backend reference --backend '%s:mode=crash_open' --seed 1 --count 3 -q "
        "--out '%s/d'",
        "reduce vectors/seeds/onnx-doc-matmulinteger --backend '%s:mode=crash_open' -q "
        "--out '%s/r'",
    };
    for (int i = 0; i < 2; i++) {
        char *out;
        int rc = qmmcheck(&out, cmds[i], env("QMM_HOSTILE_PLUGIN"), tmpdir);
        cr_expect_eq(rc, 2, "%s: exit %d:\n%s", cmds[i], rc, out);
        cr_expect(strstr(out, "could not be opened: qmm_backend_open crashed"), "%s", out);
        free(out);
    }
}

Test(isolation, hang_in_query_is_a_timeout)
{
    double t0 = now();
    char *out = expect_run("hang_query", "--filter matmulinteger", 1);
    cr_assert_eq(count_lines_with(out, ":TIMEOUT onnx-doc-matmulinteger"), 1, "%s", out);
    cr_assert(now() - t0 < 10, "took %.1f s", now() - t0);
    free(out);
}

Test(isolation, crash_in_close_leaves_the_run_and_reports_whole)
{
    char *out = expect_run("crash_close", "", 1);
    cr_assert_eq(count_lines_with(out, ":CRASHED <close> (close crashed: killed by SIG"), 1,
                 "%s", out);
    cr_assert(strstr(out, "crashed:1"), "%s", out);
    free(out);
}

Test(isolation, an_older_smaller_table_is_copied_not_read_past)
{
    char *out = expect_run("old_table", "", 1);
    cr_assert(strstr(out, "failed:3"), "the zeros it writes are wrong everywhere:\n%s", out);
    cr_assert_null(strstr(out, "CRASHED"), "%s", out);
    free(out);
}

Test(isolation, a_table_smaller_than_any_abi_is_refused)
{
    expect_run_says("tiny_table", "", 2, "backend table too small: struct_size 8");
}

Test(isolation, a_query_that_enlarges_dims_changes_nothing)
{
    expect_run_one_line("grow_dims", "--filter matmulinteger", 1,
                        ":FAILED onnx-doc-matmulinteger (errors:");
}

Test(isolation, printed_lines_are_captured_not_forged)
{
    char *out = expect_run("forge", "", 1);
    cr_assert_not(count_lines_starting(out, "1:PASSED forged"), "%s", out);
    cr_assert_not(count_lines_starting(out, "2:PASSED forged"), "%s", out);
    cr_assert_not(count_lines_starting(out, "SUMMARY: total:1 passed:1"), "%s", out);
    /* shown, cleaned, in the case's detail */
    cr_assert(strstr(out, "forged-by-stdout"), "%s", out);
    cr_assert(strstr(out, "forged-by-stderr"), "%s", out);
    free(out);
}

Test(isolation, a_lingering_child_neither_delays_the_crash_nor_holds_stdout)
{
    char cmd[8192], outfile[512];
    snprintf(outfile, sizeof outfile, "%s/out.txt", tmpdir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && timeout -s KILL 60 '%s' run --backend '%s:mode=fork_abort' --isolate "
             "--timeout 20 --filter matmulinteger --vectors vectors/seeds 2>&1 | cat > '%s'",
             env("QMM_SOURCE_DIR"), env("QMMCHECK"), env("QMM_HOSTILE_PLUGIN"), outfile);
    double t0 = now();
    int rc = system(cmd);
    double took = now() - t0;
    char *out = slurp(outfile);
    cr_assert(rc != -1 && WIFEXITED(rc), "%s", out);
    cr_assert_eq(count_lines_with(out, ":CRASHED onnx-doc-matmulinteger (killed by SIGABRT"), 1,
                 "%s", out);
    cr_assert(took < 5, "took %.1f s (the child sleeps 30 s, --timeout is 20 s):\n%s", took,
              out);
    free(out);
}

static int alive(pid_t pid)
{
    if (kill(pid, 0) != 0)
        return 0;
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && p[2] == 'Z'); /* a zombie is gone for our purpose */
}

Test(isolation, sigterm_kills_a_hanging_worker_and_writes_the_report)
{
    char pidfile[512], json[512], outfile[512], cmd[8192];
    snprintf(pidfile, sizeof pidfile, "%s/worker.pid", tmpdir);
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(outfile, sizeof outfile, "%s/out.txt", tmpdir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && exec '%s' run --backend '%s:mode=hang_run,pidfile=%s' --isolate "
             "--timeout 0 --vectors vectors/seeds --report json:%s > '%s' 2>&1",
             env("QMM_SOURCE_DIR"), env("QMMCHECK"), env("QMM_HOSTILE_PLUGIN"), pidfile, json,
             outfile);
    pid_t p = fork();
    cr_assert(p >= 0);
    if (p == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    pid_t worker = 0;
    for (int i = 0; i < 500 && worker <= 0; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            int w = 0;
            if (fscanf(f, "%d", &w) == 1)
                worker = w;
            fclose(f);
        }
        if (worker <= 0)
            nap();
    }
    cr_assert(worker > 0, "the plugin never started");
    kill(p, SIGTERM);
    int status = 0;
    double t0 = now();
    while (waitpid(p, &status, WNOHANG) == 0 && now() - t0 < 5)
        nap();
    int exited = now() - t0 < 5;
    if (!exited) {
        kill(p, SIGKILL);
        waitpid(p, &status, 0);
    }
    for (int i = 0; i < 200 && alive(worker); i++)
        nap();
    int worker_alive = alive(worker);
    if (worker_alive)
        kill(worker, SIGKILL);
    char *out = slurp(outfile);
    cr_assert(exited, "qmmcheck did not exit within 5 s of SIGTERM:\n%s", out);
    cr_assert_not(worker_alive, "the worker %d outlived qmmcheck:\n%s", (int)worker, out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM, "status %d:\n%s",
              status, out);
    char *report = slurp(json);
    cr_assert(strstr(report, "\"interrupted\""), "%s", report);
    free(report);
    expect_json_valid(json);
    free(out);
}

Test(isolation, a_backend_beyond_the_memory_limit_fails_alone)
{
    char *out = expect_run("big_alloc", "--memory-limit 64M --filter matmulinteger", 1);
#ifndef NO_MEMORY_LIMIT
    cr_assert_eq(count_lines_with(out, "answered OUT_OF_MEMORY for a valid call"), 1, "%s", out);
#endif
    free(out);
    expect_run_says("big_alloc", "--memory-limit 64X", 2, "--memory-limit 64X");
}

Test(isolation, a_missing_query_is_warned_about_once)
{
    expect_run_one_line("no_query", "--determinism --variants 'x=1;x=2'", 1,
                        "has no capability query; every call is run");
}

/* ---- the invoker itself --------------------------------------------------------------- */

static uint8_t a_data[6] = {1, 2, 3, 4, 5, 6}, b_data[6] = {1, 0, 0, 1, 1, 1};

static qmm_call small_call(void)
{
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_MATMULINTEGER;
    qmm_matmulinteger *m = &c.u.matmulinteger;
    m->a = mk(QMM_DTYPE_UINT8, a_data, 2, 2, 3);
    m->b = mk(QMM_DTYPE_UINT8, b_data, 2, 3, 2);
    m->y = mk(QMM_DTYPE_INT32, NULL, 2, 2, 2);
    return c;
}

static void open_hostile(const char *mode, int isolate, qh_backend *b)
{
    char spec[1024];
    snprintf(spec, sizeof spec, "%s:mode=%s", env("QMM_HOSTILE_PLUGIN"), mode);
    qh_isolation iso = {.isolate = isolate, .timeout_s = 5, .memory_limit = 0};
    qh_error err;
    cr_assert_eq(qh_backend_open_isolated(spec, &iso, b, &err), 0, "%s", err.msg);
    cr_assert_eq(b->isolated, isolate);
}

/* Opens `mode` (isolated or not) and invokes small_call() through it with the options `o`
 * (NULL: the defaults); the invocation must succeed. The call stays in *c, for the checks
 * that it was not touched. */
static void invoke_small(const char *mode, int isolate, const qh_invoke_opts *o, qh_backend *b,
                         qmm_call *c, qh_invocation *inv)
{
    open_hostile(mode, isolate, b);
    *c = small_call();
    cr_assert_eq(qh_invoke(b, c, o, inv), 0, "%s", inv->problem);
}

Test(isolation, the_fill_is_honoured_in_both_paths)
{
    for (int isolate = 0; isolate <= 1; isolate++) {
        for (int f = 0; f < 2; f++) {
            qh_backend b;
            qmm_call c;
            qh_invoke_opts o = {.isolate = isolate, .timeout_s = 5, .fill = f ? 0x5a : 0};
            qh_invocation inv;
            invoke_small("nowrite", isolate, &o, &b, &c, &inv);
            cr_assert_eq(inv.outcome, QH_RETURNED, "%s", inv.problem);
            cr_assert_eq(inv.code, QMM_OK);
            const unsigned char *y = inv.y.data;
            for (int i = 0; i < 16; i++)
                cr_assert_eq(y[i], f ? 0x5a : 0xa5, "isolate %d fill %d byte %d: %#x", isolate,
                             f, i, y[i]);
            qh_invocation_free(&inv);
            char why[256];
            cr_assert_eq(qh_backend_finish(&b, why, sizeof why), 0, "%s", why);
            qh_backend_close(&b);
        }
    }
}

Test(isolation, the_output_comes_back_in_place_and_what_it_printed_with_it)
{
    qh_backend b;
    qmm_call c;
    qh_invoke_opts o = {.isolate = 1, .timeout_s = 5};
    qh_invocation inv;
    invoke_small("forge", 1, &o, &b, &c, &inv);
    cr_assert_eq(inv.outcome, QH_RETURNED, "%s", inv.problem);
    cr_assert_not_null(inv.y_map, "the output is the worker's shared mapping");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(((const int32_t *)inv.y.data)[i], 0);
    cr_assert_not_null(inv.output);
    cr_assert(strstr(inv.output, "1:PASSED forged-by-stdout"), "%s", inv.output);
    cr_assert(strstr(inv.output, "2:PASSED forged-by-stderr"), "%s", inv.output);
    cr_assert_eq(inv.output_dropped, 0);
    qh_invocation_free(&inv);
    /* the parent's call is untouched */
    cr_assert_eq(c.u.matmulinteger.a.dims[0], 2);
    qh_backend_close(&b);
}

Test(isolation, finish_reports_a_crash_in_close_and_close_stays_safe)
{
    qh_backend b;
    qmm_call c;
    qh_invocation inv;
    invoke_small("crash_close", 1, NULL, &b, &c, &inv);
    qh_invocation_free(&inv);
    char why[256];
    cr_assert_eq(qh_backend_finish(&b, why, sizeof why), QH_DIED);
    cr_assert(strstr(why, "close crashed: killed by SIGSEGV"), "%s", why);
    qh_backend_close(&b);
    qh_backend_close(&b);
}

Test(isolation, a_query_that_enlarges_dims_in_process_gets_a_copy)
{
    qh_backend b;
    qmm_call c;
    qh_invocation inv;
    invoke_small("grow_dims", 0, NULL, &b, &c, &inv);
    cr_assert_eq(c.u.matmulinteger.a.dims[0], 2);
    qh_invocation_free(&inv);
    qh_backend_close(&b);
}

/* What a plugin says when it refuses to open, and the name it gives itself, reach the terminal
 * as one clean line: from `run` (the worker relays the refusal) and from `bench` (in process). */
Test(isolation, a_refusal_and_a_name_cannot_forge_lines)
{
    char *out = expect_run("refuse_forged", "", 2);
    cr_assert_not(count_lines_starting(out, "999:PASSED"), "%s", out);
    cr_assert_not(count_lines_starting(out, "SUMMARY:"), "%s", out);
    cr_assert(strstr(out, "no\\n999:PASSED forged"), "%s", out);
    free(out);
    char *bench;
    int rc = qmmcheck(&bench, "bench --backend '%s:mode=forged_name' --shape 2x2x2 --reps 1",
                      env("QMM_HOSTILE_PLUGIN"));
    /* its zeros are wrong: bench checks one backend's answer too, since 2026-11-29 */
    cr_assert_eq(rc, 1, "%s", bench);
    cr_assert_not(count_lines_starting(bench, "999:PASSED"), "%s", bench);
    cr_assert_not(count_lines_starting(bench, "SUMMARY:"), "%s", bench);
    cr_assert(strstr(bench, "hostile\\n999:PASSED forged"), "%s", bench);
    free(bench);
}

/* ---- the generic `call` entry (generic_call.c) ------------------------------------------ */

/* The SUMMARY counts of a run of `backend` over `vectors`, without the time: what a backend
 * is judged to have done (malloc'd). */
static char *summary_in(const char *backend, const char *how, const char *vectors)
{
    char *out;
    int rc = qmmcheck_under(&out, "timeout -s KILL 30",
                            "run --backend '%s' %s --allow-empty --vectors %s", backend, how,
                            vectors);
    cr_assert(rc == 0 || rc == 1, "exit %d:\n%s", rc, out);
    char *line = strstr(out, "SUMMARY: ");
    cr_assert_not_null(line, "%s", out);
    char *end = strstr(line, " (");
    cr_assert_not_null(end, "%s", out);
    *end = '\0';
    char *summary = strdup(line);
    free(out);
    return summary;
}

/* summary_in over the seeds (MatMulInteger, QLinearMatMul) and the QOrderedMatMul vectors:
 * the three operators. */
static void summaries(const char *backend, const char *how, char *out[2])
{
    out[0] = summary_in(backend, how, "vectors/seeds");
    out[1] = summary_in(backend, how, "vectors/qordered");
}

Test(isolation, a_table_with_only_the_generic_call_is_judged_as_the_reference)
{
    char spec[600], *want[2];
    snprintf(spec, sizeof spec, "%s", env("QMM_GENERIC_PLUGIN"));
    summaries("reference", "", want);
    const char *hows[] = {"--isolate", "--no-isolate"};
    for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
        char *got[2];
        summaries(spec, hows[i], got);
        for (int v = 0; v < 2; v++) {
            cr_assert(strstr(want[v], " failed:0 ") && !strstr(want[v], " passed:0 "), "%s",
                      want[v]);
            cr_assert_str_eq(got[v], want[v], "%s", hows[i]);
            free(got[v]);
        }
    }
    free(want[0]);
    free(want[1]);
}

Test(isolation, a_table_ending_before_the_generic_call_is_not_read_past)
{
    char spec[600];
    snprintf(spec, sizeof spec, "%s:size=old", env("QMM_GENERIC_PLUGIN"));
    const char *hows[] = {"--isolate", "--no-isolate"};
    for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
        char *got[2];
        summaries(spec, hows[i], got);
        for (int v = 0; v < 2; v++) {
            cr_assert(strstr(got[v], " passed:0 ") && strstr(got[v], " failed:0 ") &&
                          strstr(got[v], " crashed:0 ") && !strstr(got[v], " skipped:0 "),
                      "%s: every case is UNSUPPORTED: %s", hows[i], got[v]);
            free(got[v]);
        }
    }
}

/* In process (--no-isolate), a plugin that sets a to its zero point and answers accordingly
 * PASSED: the expectation was computed from the case's inputs after the plugin had changed
 * them. The plugin now gets copies, and a copy that changed is FAILED "wrote into input a",
 * as the worker's read-only pages report it. */
Test(isolation, a_plugin_in_process_that_rewrites_its_inputs_fails)
{
    char *out;
    int rc = qmmcheck(&out, "run --no-isolate --backend '%s:mode=zero_inputs' --backend "
                            "reference --vectors vectors/seeds",
                      env("QMM_HOSTILE_PLUGIN"));
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":FAILED "), 3, "%s", out);
    cr_expect_eq(count_lines_with(out, "(wrote into input a)"), 2, "%s", out);
    cr_expect_eq(count_lines_with(out, "(wrote into input A)"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED "), 3, "the reference on intact inputs\n%s", out);
    free(out);
}

/* In process, a plugin calling exit(0) ended qmmcheck with status 0, no SUMMARY and no report:
 * a pass to a CI gate. It now exits 1, saying which backend ended it and where. */
Test(isolation, a_plugin_in_process_that_calls_exit_does_not_end_the_run_with_0)
{
    char *out;
    int rc = qmmcheck(&out, "run --no-isolate --backend '%s:mode=exit0' --vectors vectors/seeds",
                      env("QMM_HOSTILE_PLUGIN"));
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "mode=exit0 ended this process (exit) during its operator call, run "
                          "in process: no verdict") != NULL, "%s", out);
    free(out);
}

/* A plugin's process in a session of its own (setsid) left the worker's process group, outlived
 * qmmcheck and wrote into a file afterwards (a report, for one). qmmcheck adopts such orphans
 * (PR_SET_CHILD_SUBREAPER) and kills them before writing its reports, saying so. */
Test(isolation, a_process_that_leaves_the_workers_group_dies_before_the_reports)
{
    char forged[1024];
    snprintf(forged, sizeof forged, "%s/forged", tmpdir);
    char *out;
    int rc = qmmcheck_under(&out, "timeout -s KILL 30",
                            "run --backend '%s:mode=escape,pidfile=%s' --vectors vectors/seeds "
                            "--filter matmulinteger --report json:%s/r.json",
                            env("QMM_HOSTILE_PLUGIN"), forged, tmpdir);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "warning: killed 1 process a backend left running (none that "
                          "qmmcheck started") != NULL, "%s", out);
    free(out);
    sleep(2); /* past the 0.25 s the process waits after qmmcheck's end */
    struct stat st;
    cr_expect(stat(forged, &st) != 0, "a process outlived qmmcheck and wrote %s", forged);
}

/* A worker opened its parent's standard output through /proc/PPID/fd/1 and wrote a forged case
 * line and SUMMARY into qmmcheck's output. qmmcheck is not dumpable (PR_SET_DUMPABLE 0), so a
 * process of the same user that is not root cannot open its /proc files; as root nothing short
 * of a container stops it (docs/isolation.md), so the test runs as nobody. */
Test(isolation, a_worker_cannot_write_into_qmmchecks_stdout_through_proc)
{
    char cmd[4096];
    const char *user = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
    /* the pipe is the user's own (a root's pipe is closed to nobody anyway) */
    snprintf(cmd, sizeof cmd, "chmod -R a+rwX '%s' && cd / && timeout -s KILL 30 %ssh -c "
             "\"'%s' run --backend '%s:mode=parent_stdout' --vectors '%s/vectors/seeds' 2>&1 | "
             "cat > '%s/out.txt'\"", tmpdir, user, env("QMMCHECK"), env("QMM_HOSTILE_PLUGIN"),
             env("QMM_SOURCE_DIR"), tmpdir);
    cr_assert(system(cmd) == 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/out.txt", tmpdir);
    char *out = NULL;
    size_t n = 0;
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL);
    cr_assert(getdelim(&out, &n, '\0', f) > 0);
    fclose(f);
    cr_expect(strstr(out, "forged-through-proc") == NULL, "%s", out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY: total:"), 1, "%s", out);
    free(out);
}

/* A plugin that writes into the worker's channel to qmmcheck garbles the worker's answer: the
 * worker is killed and the case CRASHED, as before, but it said "killed by SIGKILL", as if the
 * backend had been killed. It now says what happened. */
Test(isolation, a_garbled_answer_says_so)
{
    expect_run_one_line("garble", "--filter matmulinteger", 1,
                        ":CRASHED onnx-doc-matmulinteger (the worker's answer was garbled");
}

/* The text of tmpdir/NAME (malloc'd; "" when it cannot be read). */
static char *read_file_text(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *text = NULL;
    size_t n = 0;
    FILE *f = fopen(path, "r");
    if (!f || getdelim(&text, &n, '\0', f) < 0) {
        free(text);
        text = strdup("");
    }
    if (f)
        fclose(f);
    return text;
}

/* fingerprint wrote its report with its worker still open, and killed what the backend left
 * running only at its exit: a process watching for the report wrote over it in between. The
 * worker now ends, and its strays die, before the report is written. */
Test(isolation, fingerprint_writes_its_report_after_the_backends_strays_are_gone)
{
    char report[512];
    snprintf(report, sizeof report, "%s/fp.json", tmpdir);
    char *out;
    int rc = qmmcheck_under(&out, "timeout -s KILL 100",
                            "fingerprint --backend '%s:mode=escape_watch,pidfile=%s' "
                            "--report json:%s", env("QMM_HOSTILE_PLUGIN"), report, report);
    cr_expect_eq(rc, 5, "%s", out); /* its zeros match no profile */
    free(out);
    sleep(1);
    FILE *f = fopen(report, "r");
    cr_assert(f != NULL);
    char head[16] = "";
    cr_expect(fgets(head, sizeof head, f) != NULL);
    fclose(f);
    cr_expect_str_eq(head, "{\n", "the report was written over: %s", head);
}

/* A shell that execs qmmcheck leaves it its children (`exec qmmcheck ... > >(tee log)`): they
 * were taken for a backend's strays and killed, and the log was lost. Children qmmcheck had
 * when it started are left alone. */
Test(isolation, the_children_qmmcheck_starts_with_are_not_strays)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && bash -c \"exec '%s' run --backend reference --vectors "
             "'%s/vectors/seeds' > >(sleep 0.5; exec cat > '%s/log.txt') 2>'%s/err.txt'\" && "
             "sleep 1.5", tmpdir, env("QMMCHECK"), env("QMM_SOURCE_DIR"), tmpdir, tmpdir);
    cr_assert(system(cmd) == 0);
    char *log = read_file_text("log.txt"), *err = read_file_text("err.txt");
    cr_expect(strstr(log, "SUMMARY: total:3 passed:3 ") != NULL, "log: %s\nerr: %s", log, err);
    cr_expect(strstr(err, "killed") == NULL, "%s", err);
    free(log);
    free(err);
}

/* A backend that forks a lingering child on every call, then crashes: each crash left one
 * zombie under qmmcheck (a killed worker's group was reaped before its members had died),
 * about one a call in a long diff. They are waited for now. */
Test(isolation, a_long_diff_with_a_forking_backend_gathers_no_zombies)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && ('%s' diff -q --backend reference --backend '%s:mode=fork_abort' "
             "--seed 1 --count 60 --max-diffs 1000 --out d >/dev/null 2>&1 & p=$!; max=0; "
             "while kill -0 $p 2>/dev/null; do z=$(grep -ls \"^PPid:[[:space:]]*$p\\$\" "
             "/proc/[0-9]*/status 2>/dev/null | xargs -r grep -l '^State:[[:space:]]*Z' "
             "2>/dev/null | wc -l); "
             "[ \"$z\" -gt \"$max\" ] && max=$z; sleep 0.2; done; echo $max > zombies.txt)",
             tmpdir, env("QMMCHECK"), env("QMM_HOSTILE_PLUGIN"));
    cr_assert(system(cmd) == 0);
    char *z = read_file_text("zombies.txt");
    cr_expect(atoi(z) <= 3, "at most %s zombies at once", z);
    free(z);
}
