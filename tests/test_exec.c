/* tests/test_exec.c — the exec: backend (docs/exec-protocol.md) driven through the CLI.
 *
 * The child is tests/exec/child.c (QMM_EXEC_CHILD): correct, or hostile as its argument says.
 * The Python module's example runs when the virtual environment exists (scripts/pydeps.sh
 * makes .venv at the repository root; QMM_PYTHON names another interpreter). */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/cli_support.h"

TestSuite(exec, .init = make_tmp, .fini = remove_tmp, .timeout = 60);

#define MI "vectors/edge/matmulinteger"
#define MI_RANDOM MI "/random"

static const char *child(void)
{
    return env("QMM_EXEC_CHILD");
}

/* Lines starting with `prefix`. */
static int lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, prefix, k) == 0)
            n++;
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : NULL;
    }
    return n;
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
    cr_expect_eq(lines_starting(out, "999:"), 0, "%s", out);
    cr_expect_eq(lines_starting(out, "1:PASSED forged"), 0, "%s", out);
    cr_expect_eq(lines_starting(out, "SUMMARY:"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":FAILED"), 4, "%s", out);
    free(out);
}

/* Runs the four random cases with the child in `mode`: each ends `status`, and `text` is said. */
static char *every_case(const char *mode, const char *status, const char *text)
{
    char *out = qmmcheck_expect(1, "run --backend 'exec:%s %s' --vectors " MI_RANDOM, child(),
                                mode);
    cr_expect_eq(count_lines_with(out, status), 4, "%s", out);
    cr_expect_eq(lines_starting(out, "SUMMARY:"), 1, "%s", out);
    expect_in(out, text);
    return out;
}

Test(exec, writing_on_the_protocol_channel_is_an_error_naming_the_frame_length)
{
    char *out = every_case("forge-stdout", ":ERROR", "frame length:");
    cr_expect_eq(lines_starting(out, "1:PASSED forged"), 0, "%s", out);
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
    char *out = qmmcheck_expect(2, "run --backend 'exec:%s version=7' --vectors " MI_RANDOM,
                                child());
    expect_in(out, "protocol version mismatch: the process speaks version 7, this qmmcheck "
                   "speaks version 1");
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

/* --no-isolate: the process is still not trusted */

Test(exec, in_process_its_hello_name_is_not_its_xfail_identity)
{
    char list[512];
    snprintf(list, sizeof list, "%s/xf.txt", tmpdir);
    FILE *f = fopen(list, "w");
    cr_assert(f);
    fprintf(f, "* status=FAILED backend=test-child\n"); /* the name the child gives itself */
    fclose(f);
    char *out = qmmcheck_expect(1, "run --no-isolate --xfail '%s' --backend 'exec:%s "
                                "wrong-shape' --vectors " MI_RANDOM, list, child());
    cr_expect_eq(count_lines_with(out, ":FAILED"), 4, "%s", out);
    cr_expect_eq(count_lines_with(out, ":XFAIL"), 0, "%s", out);
    free(out);
}
