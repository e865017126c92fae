/* tests/test_bounds.c — what the harness computes itself on behalf of a case is bounded
 * (docs/formats.md, "Limits"): a tiny case whose shape has 2^48 empty batches is judged at
 * once, a case over the work limit is an ERROR naming it, SIGTERM during a long expectation
 * still writes the reports, and an output is held once (the expectation is computed a part at
 * a time). And --determinism: a variant that cannot be opened is a row, not a silent drop. */
#include "tests/cli_support.h"

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "harness/io/case.h"
#include "harness/invoke/backends.h"
#include "harness/judge/expect.h"
#include "harness/invoke/invoke.h"
#include "harness/run/runner.h"
#include "tests/casefile_support.h"
#include "tests/tensor_support.h"

#define U8 QMM_DTYPE_UINT8
#define I32 QMM_DTYPE_INT32

TestSuite(bounds, .init = make_tmp, .fini = remove_tmp);
TestSuite(determinism, .init = make_tmp, .fini = remove_tmp);

/* A MatMulInteger case DIR: A and B uint8 of the given shapes (data: `a`, `b`, NULL for
 * tensors without elements), no zero points. */
static void write_mmi_case(const char *dir, int ra, const int64_t *da, const void *a, int rb,
                           const int64_t *db, const void *b)
{
    const char *inputs[] = {"A", "B"};
    write_case_model(dir, "MatMulInteger", "bounds", inputs, 2, "Y");
    static const uint8_t none[1] = {0};
    write_tensor(dir, "test_data_set_0/input_0.pb", U8, ra, da, a ? a : none, "A");
    write_tensor(dir, "test_data_set_0/input_1.pb", U8, rb, db, b ? b : none, "B");
}

/* Bytes of every file under `dir` (du -b's total). */
static long tree_bytes(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "find '%s' -type f -printf '%%s\\n' | awk '{s+=$1} END {print s}'",
             dir);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    long n = -1;
    cr_assert(fscanf(p, "%ld", &n) == 1);
    pclose(p);
    return n;
}

/* A [65536,65536,65536,0,2] · B [2,2]: no element anywhere, a case of about 300 bytes. The
 * reference's expectation looped over the 2^48 empty batches (qmmcheck hung; --timeout does
 * not apply to the harness's own work). Now it is judged at once, by the built-ins in
 * process and in a worker, and by repro. */
Test(bounds, an_empty_output_of_2_48_batches_is_judged_at_once)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/v/empty-2e48-batches", tmpdir);
    const int64_t da[] = {65536, 65536, 65536, 0, 2}, db[] = {2, 2};
    const uint8_t b[4] = {1, 2, 3, 4};
    write_mmi_case(dir, 5, da, NULL, 2, db, b);
    cr_expect_lt(tree_bytes(dir), 400, "the case is %ld bytes", tree_bytes(dir));
    char *out;
    int rc = qmmcheck_under(&out, "timeout -s KILL 60",
                            "run --backend reference --backend optimized --vectors %s/v", tmpdir);
    cr_expect_eq(rc, 0, "exit %d (137: killed after 60 s):\n%s", rc, out);
    cr_expect_eq(count_lines_with(out, ":PASSED empty-2e48-batches"), 2, "%s", out);
    free(out);
    rc = qmmcheck_under(&out, "timeout -s KILL 60", "run --isolate --backend reference "
                        "--vectors %s/v", tmpdir);
    cr_expect_eq(rc, 0, "isolated: exit %d:\n%s", rc, out);
    free(out);
    rc = qmmcheck_under(&out, "timeout -s KILL 60", "repro %s", dir);
    cr_expect_eq(rc, 0, "repro: exit %d:\n%s", rc, out);
    free(out);
}

/* At the limit exactly, and one multiply-add per element more: elements x (K + 64) against
 * 2^34 (QH_MAX_WORK). The check reads only shapes: the data is never looked at. */
Test(bounds, the_work_limit_is_exact)
{
    static uint8_t data[1];
    for (int k = 960; k <= 961; k++) {
        qmm_call c;
        memset(&c, 0, sizeof c);
        c.op = QMM_OP_MATMULINTEGER;
        /* 4096 x 4096 = 2^24 elements; 2^24 x (960 + 64) = 2^34 */
        c.u.matmulinteger.a = mk(U8, data, 2, 4096, k);
        c.u.matmulinteger.b = mk(U8, data, 2, k, 4096);
        c.u.matmulinteger.y = mk(I32, data, 2, 4096, 4096);
        char msg[512] = "";
        int rc = qh_expect_work_check(&c, msg, sizeof msg);
        if (k == 960) {
            cr_expect_eq(rc, 0, "K 960 is at the limit: %s", msg);
        } else {
            cr_expect_eq(rc, -1, "K 961 is over the limit");
            cr_expect(strstr(msg, "over the limit of 17179869184 (QH_MAX_WORK"), "%s", msg);
            cr_expect(strstr(msg, "16777216 output elements x (K 961 + 64)"), "%s", msg);
        }
    }
}

/* 16384 x 1 · 1 x 16384: 2^28 elements x (1 + 64) is over 2^34. An ERROR naming the limit,
 * at once, before any output is allocated (it used to take a 1 GiB expectation and run). */
Test(bounds, a_case_over_the_work_limit_is_an_error_naming_it)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/v/over-the-limit", tmpdir);
    static uint8_t a[16384], b[16384];
    memset(a, 3, sizeof a);
    memset(b, 5, sizeof b);
    const int64_t da[] = {16384, 1}, db[] = {1, 16384};
    write_mmi_case(dir, 2, da, a, 2, db, b);
    char *out;
    int rc = qmmcheck_under(&out, "timeout -s KILL 60", "run --backend optimized --vectors %s/v",
                            tmpdir);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    expect_in(out, "1:ERROR over-the-limit (reference: the reference's work for this case, "
                   "268435456 output elements x (K 1 + 64)");
    expect_in(out, "over the limit of 17179869184 (QH_MAX_WORK; docs/formats.md");
    free(out);
}

/* The expectation computed a part at a time judges as the whole one did: where an int32
 * accumulator overflows, spec accepts the wrapped result too, and a profile that wraps (onnx-ref
 * computes MatMulInteger as spec does) has no second result but no error either. */
Test(bounds, parts_judge_overflowing_accumulators_as_the_whole_did)
{
    char *out = qmmcheck_expect(0, "run --backend optimized --vectors "
                                   "vectors/edge/matmulinteger/overflow --vectors "
                                   "vectors/edge/qlinearmatmul/overflow");
    expect_in(out, "total:58 passed:58 failed:0");
    free(out);
    out = qmmcheck_expect(0, "run --backend reference --profile onnx-ref --vectors "
                             "vectors/edge/matmulinteger/overflow");
    expect_in(out, "total:15 passed:15 failed:0 mistrusted:0 skipped:0 unchecked:0");
    free(out);
}

/* a-small passes; b-long's expectation (4096 x 900 x 4096, minutes for the reference) is under
 * way when SIGTERM comes: the computation stops, the run ends with its SUMMARY, both reports
 * hold the case done, exit 143. It used to compute on (the flag was read by no one). */
Test(bounds, sigterm_during_a_long_expectation_writes_the_reports, .timeout = 120)
{
    char small[512], big[512], json[512], xml[512];
    snprintf(small, sizeof small, "%s/v/a-small", tmpdir);
    snprintf(big, sizeof big, "%s/v/b-long", tmpdir);
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    const uint8_t a2[4] = {1, 2, 3, 4};
    const int64_t d2[] = {2, 2};
    write_mmi_case(small, 2, d2, a2, 2, d2, a2);
    enum { M = 4096, K = 900 };
    uint8_t *a = malloc((size_t)M * K), *b = malloc((size_t)M * K);
    cr_assert(a && b);
    for (size_t i = 0; i < (size_t)M * K; i++) {
        a[i] = (uint8_t)(i * 7);
        b[i] = (uint8_t)(i * 13);
    }
    const int64_t da[] = {M, K}, db[] = {K, M};
    write_mmi_case(big, 2, da, a, 2, db, b);
    free(a);
    free(b);

    FILE *f;
    pid_t pid = qmmcheck_start(&f, "run --backend optimized --vectors '%s/v' --report json:%s "
                                   "--report junit:%s", tmpdir, json, xml);
    char line[8192];
    cr_assert(fgets(line, sizeof line, f) != NULL, "no case line");
    cr_expect(strncmp(line, "1:PASSED a-small", 16) == 0, "%s", line);
    sleep(1); /* into b-long: loading, the optimized call (a second at most), the expectation */
    char *summary = expect_interrupted(pid, f, NULL);
    cr_expect(strncmp(summary, "SUMMARY:", 8) == 0 && strstr(summary, "total:1 passed:1"), "%s",
              summary);
    free(summary);
    char *report = slurp(json);
    expect_in(report, "\"interrupted\": \"SIGTERM\"");
    expect_in(report, "\"total\": 1,");
    expect_in(report, "a-small");
    cr_expect(strstr(report, "b-long") == NULL, "the interrupted case has a row:\n%s", report);
    free(report);
    expect_json_valid(json);
    expect_junit_valid(xml);
}

/* Peak memory, as the address space a run may take: a 65-byte K = 0 case whose output is
 * 8192 x 8192 int32 (256 MiB). The expectation and the backend's output used to be held
 * whole side by side (512 MiB); the expectation is now computed a part at a time (16 MiB),
 * so the case passes with 400 MiB of address space beyond what the process holds already.
 * In a child, under RLIMIT_AS; not under AddressSanitizer, whose shadow memory takes
 * terabytes of address space. */
#ifdef QMM_TEST_ASAN
#define NO_RLIMIT_AS 1
#endif

static long vm_size_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

Test(bounds, a_k0_output_is_held_once)
{
#ifdef NO_RLIMIT_AS
    cr_skip_test("RLIMIT_AS cannot be applied under AddressSanitizer");
#else
    char dir[512];
    snprintf(dir, sizeof dir, "%s/v/k0-8192", tmpdir);
    const int64_t da[] = {8192, 0}, db[] = {0, 8192};
    write_mmi_case(dir, 2, da, NULL, 2, db, NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        qh_backend be;
        qh_error err;
        if (qh_backend_open("reference", &be, &err) != 0)
            _exit(90);
        long kib = vm_size_kib();
        if (kib < 0)
            _exit(91);
        rlim_t limit = (rlim_t)kib * 1024 + ((rlim_t)400 << 20);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(92);
        qh_case_ref ref = {.dir = dir, .name = "k0-8192"};
        qh_eval_opts eo = {0};
        qh_result res;
        qh_eval_case(&ref, &be, &eo, &res);
        if (res.status != QH_PASSED) {
            fprintf(stderr, "%s: %s\n", qh_case_status_name(res.status),
                    res.summary ? res.summary : "");
            _exit(10 + (int)res.status);
        }
        _exit(0);
    }
    int status;
    cr_assert(waitpid(pid, &status, 0) == pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "status %#x (exit 10 + %d: the verdict; 90-92: setup)", status,
              WIFEXITED(status) ? WEXITSTATUS(status) - 10 : -1);
#endif
}

/* ---- --determinism: a variant that cannot be opened ------------------------------------ */

/* vectors/edge/matmulinteger/empty/k0: y is all zeros, which the hostile plugin writes. */
#define K0 "vectors/edge/matmulinteger/empty/k0"

/* The rest of a determinism run over K0 with two variants that could not be used: k0 PASSED
 * for the backend itself, and two rows named NAME ("<variant>", "<close>") in the SUMMARY and
 * in the JSON report at JSON, which stays valid. Frees out. */
static void expect_k0_passed_and_two_rows(char *out, const char *json, const char *name)
{
    cr_expect_eq(count_lines_with(out, ":PASSED k0"), 1, "%s", out);
    expect_in(out, "total:3 passed:1");
    char *report = slurp(json), quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    cr_expect_eq(count_lines_with(report, quoted), 2, "%s", report);
    free(report);
    expect_json_valid(json);
    free(out);
}

/* A variant whose open hangs past --timeout, or dies, is not a refusal: a line on stderr and
 * a "<variant>" row (TIMEOUT, CRASHED) counted in the SUMMARY and the reports, exit 1. They
 * used to be dropped without a word: 1 PASSED, exit 0, the variants never ran. */
Test(determinism, a_variant_that_hangs_or_dies_opening_is_a_row)
{
    char json[512];
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    const char *modes[] = {"hang_variant", "crash_variant"};
    const char *status[] = {"TIMEOUT", "CRASHED"};
    for (int i = 0; i < 2; i++) {
        char *out = qmmcheck_expect(1, "run --determinism --variants 'threads=2;threads=3' "
                                       "--timeout 2 --backend '%s:mode=%s' --vectors " K0
                                       " --report json:%s",
                                    env("QMM_HOSTILE_PLUGIN"), modes[i], json);
        char want[256];
        snprintf(want, sizeof want, ":%s <variant> (qmm_backend_open", status[i]);
        cr_expect_eq(count_lines_with(out, want), 2, "%s", out);
        cr_expect_eq(count_lines_with(out, "cannot be opened: qmm_backend_open"), 2, "%s", out);
        snprintf(want, sizeof want, "mode=%s,threads=2", modes[i]);
        expect_in(out, want);
        expect_k0_passed_and_two_rows(out, json, "<variant>");
    }
}

/* A variant whose close crashes is a "<close>" row like the backend's own: the variants used
 * to be closed after the reports without a look (1 PASSED, exit 0). */
Test(determinism, a_variant_whose_close_crashes_is_a_close_row)
{
    char json[512];
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    char *out = qmmcheck_expect(1, "run --determinism --variants 'threads=2;threads=3' "
                                   "--backend '%s:mode=crash_close_variant' --vectors " K0
                                   " --report json:%s",
                                env("QMM_HOSTILE_PLUGIN"), json);
    cr_expect_eq(count_lines_with(out, ":CRASHED <close> ("), 2, "%s", out);
    expect_in(out, "mode=crash_close_variant,threads=2");
    expect_in(out, "mode=crash_close_variant,threads=3");
    expect_k0_passed_and_two_rows(out, json, "<close>");
}

/* An exec process that exits in the hello a variant opens is a failure, not a refusal (an
 * ERROR row); one that answers the hello refusing the options is left out as before (one line
 * on stderr, exit 0). */
Test(determinism, an_exec_variant_that_dies_in_its_hello_is_an_error_not_a_refusal)
{
    char marker[512];
    snprintf(marker, sizeof marker, "%s/started", tmpdir);
    /* the first process started (the backend itself) runs; every later one (the variant)
     * exits 9 before answering its hello */
    char *out = qmmcheck_expect(1, "run --determinism --variants 'threads=2' --backend "
                                   "\"exec:sh -c 'if [ -e %s ]; then exit 9; fi; : > %s; exec "
                                   "%s ok'\" --vectors " K0, marker, marker,
                                env("QMM_EXEC_CHILD"));
    expect_in(out, ":ERROR <variant> (");
    expect_in(out, "exited with status 9 before "); /* reading or answering the hello */
    expect_in(out, "cannot be opened:");
    expect_in(out, "total:2 passed:1");
    free(out);
    out = qmmcheck_expect(0, "run --determinism --variants 'threads=2' --backend 'exec:%s "
                             "refuse-options' --vectors " K0, env("QMM_EXEC_CHILD"));
    expect_in(out, "left out: ");
    expect_in(out, "refused to start: INVALID_ARGUMENT: no options known");
    cr_expect(strstr(out, "<variant>") == NULL, "%s", out);
    free(out);
}
