/* tests/test_cpu_emulated.c — backends judged as another CPU runs them (`--cpu`, harness/invoke/cpu.h,
 * docs/cpu.md), under Debian's qemu-user (scripts/deps.sh installs it; every test says so and is
 * skipped when qemu-x86_64 is missing). The plugin tests/plugins/cpuid_report.c says the CPUID it sees;
 * the optimized backend's dispatch, a matrix of classes, both reports, the isolation promises
 * (crash, hang, guards, memory limit, close) and an exec: process run emulated.
 *
 * An AddressSanitizer build cannot run itself under qemu-user: there a plugin or built-in under
 * an emulated class is refused (exit 2, naming why) and only exec: processes run emulated (not
 * the test's C child, itself instrumented); the tests check whichever holds. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli_support.h"

#ifdef QMM_TEST_ASAN
#define SELF_UNEMULATED 1
#endif

TestSuite(cpu_emulated, .init = make_tmp, .fini = remove_tmp, .timeout = 240);

/* Skips the test when qemu-x86_64 is not installed. */
static void need_qemu(void)
{
    if (system("command -v qemu-x86_64 >/dev/null 2>&1") != 0)
        cr_skip_test("qemu-x86_64 is not installed (scripts/deps.sh installs qemu-user)");
}

/* Under AddressSanitizer a plugin or built-in cannot be emulated: the command is refused with
 * the reason, and the test ends there (returns 1, having freed out). */
static int refused_here(int rc, char *out)
{
#ifdef SELF_UNEMULATED
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    expect_in(out, "built with AddressSanitizer, which qemu-user cannot run");
    free(out);
    return 1;
#else
    (void)rc;
    (void)out;
    return 0;
#endif
}

Test(cpu_emulated, a_plugin_sees_the_emulated_cpuid)
{
    need_qemu();
    char *out;
    int rc = qmmcheck(&out, "run --allow-empty --cpu native,x86-64-v3,x86-64-v2 --backend %s "
                            "vectors/seeds/onnx-doc-matmulinteger",
                      env("QMM_CPUID_PLUGIN"));
    if (refused_here(rc, out))
        return;
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    /* native: whatever this machine is; the emulated ones: exactly their class */
    expect_in(out, "2:SKIPPED onnx-doc-matmulinteger (unsupported: cpuid: sse4.2=1 avx=1 avx2=1 "
                   "fma=1 avx512f=0 avx512vnni=0) __REPRO: qmmcheck repro --cpu x86-64-v3 ");
    expect_in(out, "3:SKIPPED onnx-doc-matmulinteger (unsupported: cpuid: sse4.2=1 avx=0 avx2=0 "
                   "fma=0 avx512f=0 avx512vnni=0) __REPRO: qmmcheck repro --cpu x86-64-v2 ");
    expect_in(out, "__REPRO: qmmcheck repro --cpu native ");
    free(out);
}

Test(cpu_emulated, the_optimized_backends_dispatch_follows_the_class)
{
    need_qemu();
    char *out;
    int rc = qmmcheck(&out, "list --backends --cpu x86-64-v3");
    if (refused_here(rc, out))
        return;
    cr_expect_eq(rc, 0, "%s", out);
    expect_in(out, "  optimized:isa=auto         picks avx2\n");
    expect_in(out, "optimized:isa=avx512vnni   not here");
    free(out);
    out = qmmcheck_expect(0, "list --backends --cpu x86-64-v2");
    expect_in(out, "  optimized:isa=auto         picks scalar\n");
    expect_in(out, "optimized:isa=avx2         not here");
    free(out);
    /* and it computes right there: the portable kernel under v2, the AVX2 one under v3 */
    out = qmmcheck_expect(0, "run -q --cpu x86-64-v2,x86-64-v3 --backend optimized --vectors "
                             "vectors/edge --filter '^(matmulinteger|qlinearmatmul)/"
                             "(random|extremes|overflow)/'");
    cr_expect_eq(count_lines_starting(out, "SUMMARY: total:"), 1, "%s", out);
    expect_in(out, "failed:0 ");
    free(out);
}

Test(cpu_emulated, several_classes_make_a_matrix_in_the_output_and_both_reports)
{
    need_qemu();
    char *out;
    int rc = qmmcheck(&out, "run --cpu native,x86-64-v3,x86-64-v2 --backend optimized "
                            "--backend reference --vectors vectors/seeds --report json:%s/r.json "
                            "--report junit:%s/r.xml", tmpdir, tmpdir);
    if (refused_here(rc, out))
        return;
    cr_expect_eq(rc, 0, "%s", out);
    /* 3 cases x 2 backends x 3 classes, each its row, each naming its class */
    cr_expect_eq(count_lines_with(out, ":PASSED "), 18, "%s", out);
    cr_expect_eq(count_lines_with(out, "__REPRO: qmmcheck repro --cpu x86-64-v2 --backend "), 6,
                 "%s", out);
    expect_in(out, "MATRIX: 6 cases x 3 CPU classes (one column per class)\n"
                   "  backend optimized\n");
    expect_in(out, "  backend reference\n");
    cr_expect_eq(count_lines_with(out, "  PASSED       PASSED       PASSED"), 6, "%s", out);
    cr_expect_eq(count_lines_with(out, "native       x86-64-v3    x86-64-v2"), 2, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    char *json = slurp(path);
    expect_in(json, "\"cpu_classes\": [\"native\", \"x86-64-v3\", \"x86-64-v2\"]");
    expect_json_valid(path);
    expect_in(json, "\"status\": {\"native\": \"passed\", \"x86-64-v3\": \"passed\", "
                    "\"x86-64-v2\": \"passed\"}");
    cr_expect_eq(count_lines_with(json, "\"cpu\": \"x86-64-v3\""), 6, "%s", json);
    free(json);
    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    char *xml = slurp(path);
    cr_expect_eq(count_lines_with(xml, "classname=\"qmmcheck.optimized@x86-64-v2"), 3,
                 "%s", xml);
    free(xml);
    expect_junit_valid(path);
}

Test(cpu_emulated, isolation_holds_under_emulation)
{
    need_qemu();
    const char *h = env("QMM_HOSTILE_PLUGIN");
    char *out;
    /* a crash is CRASHED, naming the signal; a close that crashes is its row, with --cpu */
    int rc = qmmcheck(&out, "run --cpu x86-64-v3 --backend '%s:mode=crash_close' --vectors "
                            "vectors/seeds/onnx-doc-matmulinteger", h);
    if (refused_here(rc, out))
        return;
    cr_expect_eq(rc, 1, "%s", out);
    expect_in(out, "2:CRASHED <close> (close crashed: killed by SIGSEGV (Segmentation fault)) "
                   "__REPRO: qmmcheck run --cpu x86-64-v3 --backend ");
    free(out);
    /* a hang is TIMEOUT after the scaled timeout, and says so */
    rc = qmmcheck_under(&out, "timeout -s KILL 60", "run --cpu x86-64-v2 --timeout 0.05 "
                        "--backend '%s:mode=hang_run' vectors/seeds/onnx-doc-matmulinteger", h);
    cr_expect_eq(rc, 1, "%s", out);
    expect_in(out, "1:TIMEOUT onnx-doc-matmulinteger (no answer within 1 s (--timeout x 20 under "
                   "emulation, CPU class x86-64-v2); worker killed)");
    free(out);
    /* a start that hangs past a given --start-timeout, scaled the same way, says that too */
    rc = qmmcheck_under(&out, "timeout -s KILL 60", "run --cpu x86-64-v2 --start-timeout 0.05 "
                        "--backend 'exec:sleep 30' vectors/seeds/onnx-doc-matmulinteger");
    cr_expect_eq(rc, 1, "%s", out);
    expect_in(out, "1:ERROR onnx-doc-matmulinteger (qmm_backend_open: no answer within 1 s (a "
                   "worker's start under emulation, CPU class x86-64-v2: --start-timeout x 20); "
                   "worker killed)");
    free(out);
    /* the guards name what was touched: SIGSEGV's address and REG_ERR come through qemu */
    rc = qmmcheck(&out, "run --cpu x86-64-v3 --backend '%s:mode=far_write' "
                        "vectors/seeds/onnx-doc-matmulinteger", env("QMM_GUARD_PLUGIN"));
    cr_expect_eq(rc, 1, "%s", out);
    long ps = sysconf(_SC_PAGESIZE);
    char want[160];
    snprintf(want, sizeof want, "1:FAILED onnx-doc-matmulinteger (wrote %ld bytes past the end "
                                "of y)", 3 * ps + 1);
    expect_in(out, want);
    free(out);
    qmmcheck_expect_in(1, "1:FAILED onnx-doc-matmulinteger (wrote into y after the call returned)",
                       "run --cpu x86-64-v3 --backend '%s:mode=late_writer' "
                       "vectors/seeds/onnx-doc-matmulinteger", env("QMM_GUARD_PLUGIN"));
    /* --no-isolate cannot run a backend under qemu */
    qmmcheck_expect_in(2,
                       "--cpu x86-64-v3 runs the backend in an emulated worker: it cannot be "
                       "combined with --no-isolate",
                       "run --cpu x86-64-v3 --no-isolate --backend reference "
                       "--vectors vectors/seeds");
}

Test(cpu_emulated, the_memory_limit_holds_under_emulation)
{
    need_qemu();
    char *out;
    /* qemu ignores a guest's setrlimit: qmmcheck sets the worker's limit from outside. The
     * backend's 16 MiB blocks exhaust it: it answers OUT_OF_MEMORY, or qemu itself runs out
     * and the case is CRASHED saying so at once — never a TIMEOUT, never a pass */
    int rc = qmmcheck_under(&out, "timeout -s KILL 120", "run --cpu x86-64-v3 --memory-limit 64M "
                            "--timeout 5 --backend '%s:mode=big_alloc' "
                            "vectors/seeds/onnx-doc-matmulinteger", env("QMM_HOSTILE_PLUGIN"));
    if (refused_here(rc, out))
        return;
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "1:FAILED onnx-doc-matmulinteger (answered OUT_OF_MEMORY") ||
              strstr(out, "1:CRASHED onnx-doc-matmulinteger (the emulator (qemu-x86_64) ran out "
                          "of memory"), "%s", out);
    free(out);
    /* with room, the same backend runs */
    qmmcheck_expect_in(1, "1:FAILED onnx-doc-matmulinteger (errors:8 total:8)",
                       "run --cpu x86-64-v3 --memory-limit 1G --timeout 5 "
                       "--backend '%s:mode=big_alloc' vectors/seeds/onnx-doc-matmulinteger",
                       env("QMM_HOSTILE_PLUGIN"));
}

Test(cpu_emulated, an_exec_process_runs_emulated_and_one_that_escapes_is_refused)
{
    need_qemu();
    const char *child = env("QMM_EXEC_CHILD");
    char *out;
#ifndef SELF_UNEMULATED /* the child is built with AddressSanitizer too: it cannot be emulated */
    out = qmmcheck_expect(0, "run --cpu x86-64-v2 --backend 'exec:%s ok' --vectors vectors/seeds",
                          child);
    cr_expect_eq(count_lines_with(out, ":PASSED "), 3, "%s", out);
    free(out);
#endif
    /* a "#!" script is run by qmmcheck as the kernel would, its interpreter under qemu */
    char script[512];
    snprintf(script, sizeof script, "%s/be.sh", tmpdir);
    FILE *f = fopen(script, "w");
    cr_assert(f);
    fprintf(f, "#!/bin/sh\nexec '%s' ok\n", child);
    fclose(f);
    chmod(script, 0755);
    /* but the sh then exec's the backend, which qemu-user runs natively: refused */
    out = qmmcheck_expect(2, "run --cpu x86-64-v3 --backend 'exec:%s' --vectors vectors/seeds",
                          script);
    expect_in(out, "the process runs natively (");
    expect_in(out, "not under qemu: it exec'd another program");
    free(out);
    /* natively the same script is fine */
    out = qmmcheck_expect(0, "run --backend 'exec:%s' --vectors vectors/seeds", script);
    free(out);
    qmmcheck_expect_in(2, "cannot run no-such-program-here: No such file or directory",
                       "run --cpu x86-64-v3 --backend 'exec:no-such-program-here' "
                       "--vectors vectors/seeds");
}

Test(cpu_emulated, onnxruntime_under_v3_shows_its_avx2_pair_saturation)
{
    need_qemu();
    struct stat st;
    char py[512];
    snprintf(py, sizeof py, "%s/.venv/bin/python", env("QMM_SOURCE_DIR"));
    if (stat(py, &st) != 0 ||
        system("cd \"$QMM_SOURCE_DIR\" && .venv/bin/python -c 'import onnxruntime' 2>/dev/null"))
        cr_skip_test("no .venv with onnxruntime (bash scripts/pydeps.sh makes it)");
    char *out;
    int rc = qmmcheck(&out, "run --cpu x86-64-v3 --backend 'exec:.venv/bin/python "
                            "peers/onnxruntime/backend.py' --vectors vectors/peers/onnxruntime "
                            "--filter u8s8-pair-saturation");
    cr_expect_eq(rc, 1, "%s", out);
    /* the filter also selects DynamicQuantizeMatMul's and MatMulIntegerToFloat's cases of the
     * same class (…-u8s8-pair-saturation), so the row number is not pinned */
    expect_in(out, ":FAILED u8s8-pair-saturation (errors:2 total:2) __REPRO: qmmcheck repro "
                   "--cpu x86-64-v3 --backend 'exec:.venv/bin/python peers/onnxruntime/backend.py'");
    expect_in(out, "expected -65280, got -32768; acc -65280; got matches: ");
    expect_in(out, "ort-fp32+pairsat16");
    free(out);
}

/* numpy's OpenBLAS runs the kernels OPENBLAS_CORETYPE names: a core type in the caller's
 * environment (a machine here had OPENBLAS_CORETYPE=Haswell) is the real CPU's, and under the
 * emulated Nehalem its AVX2 kernels died of SIGILL at `import numpy`. The class's own core type
 * goes to the emulated process instead. */
Test(cpu_emulated, the_callers_openblas_coretype_does_not_reach_an_emulated_process)
{
    need_qemu();
    if (system("cd \"$QMM_SOURCE_DIR\" && .venv/bin/python -c 'import numpy' 2>/dev/null"))
        cr_skip_test("no .venv with numpy (bash scripts/pydeps.sh makes it)");
    char *out;
    int rc = qmmcheck_under(&out, "env OPENBLAS_CORETYPE=Haswell",
                            "run --cpu x86-64-v2 --backend 'exec:.venv/bin/python "
                            "peers/onnxruntime/backend.py' --vectors vectors/seeds");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "Illegal instruction") == NULL, "%s", out);
    cr_expect(count_lines_with(out, ":PASSED ") > 0, "%s", out);
    free(out);
}

Test(cpu_emulated, fuzz_backends_run_under_QMM_FUZZ_CPU)
{
    need_qemu();
    /* twenty inputs of the corpus, replayed in tmpdir (where a difference would be written) */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir '%s/in' && ls '%s/fuzz/corpus/fuzz_qlinearmatmul' | head -20 "
             "| while read f; do cp \"%s/fuzz/corpus/fuzz_qlinearmatmul/$f\" '%s/in/'; done",
             tmpdir, env("QMM_SOURCE_DIR"), env("QMM_SOURCE_DIR"), tmpdir);
    cr_assert(system(cmd) == 0, "%s", cmd);
    const char *cpu[] = {"x86-64-v3", "x86-64-v4"};
#ifdef SELF_UNEMULATED /* the exec child is built with AddressSanitizer too: not emulated */
    for (int k = 1; k < 2; k++) {
#else
    for (int k = 0; k < 2; k++) {
#endif
        snprintf(cmd, sizeof cmd, "cd '%s' && QMM_FUZZ_BUILTINS=0 QMM_FUZZ_CPU=%s "
                 "QMM_FUZZ_BACKEND='exec:%s ok' '%s' in > f.txt 2>&1", tmpdir, cpu[k],
                 env("QMM_EXEC_CHILD"), env("QMM_FUZZ_REPLAY"));
        int rc = system(cmd);
        char path[512];
        snprintf(path, sizeof path, "%s/f.txt", tmpdir);
        char *out = slurp(path);
        if (k == 0) {
            cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "exit %d:\n%s", rc, out);
            expect_in(out, "qmm-fuzz: comparing reference with exec:");
            expect_in(out, " ok [cpu x86-64-v3]");
        } else {
            cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "exit %d:\n%s", rc, out);
            expect_in(out, "qmm-fuzz: QMM_FUZZ_CPU: --cpu x86-64-v4: CPU class x86-64-v4 cannot "
                           "be emulated");
        }
        free(out);
    }
}

Test(cpu_emulated, saved_cases_name_the_class_and_load_back)
{
    need_qemu();
    char *out;
    /* the hostile plugin writes zeros: every problem differs from the reference */
    int rc = qmmcheck(&out, "diff -q --backend reference --backend '%s' --cpu native,x86-64-v3 "
                            "--seed 1 --count 50 --max-diffs 1 --only nonempty --reduce --out %s/d",
                      env("QMM_HOSTILE_PLUGIN"), tmpdir);
    if (refused_here(rc, out))
        return;
    cr_expect_eq(rc, 1, "%s", out);
    expect_in(out, "--seed 1 --problem ");
    expect_in(out, " --cpu native,x86-64-v3 --only nonempty\n"); /* --only kept whole */
    expect_in(out, "(qmmcheck repro --cpu x86-64-v3 --backend ");
    expect_in(out, "__REPRO: qmmcheck repro --cpu x86-64-v3 --backend ");
    free(out);
    /* the saved case and its reduction name the class B ran under, and load as any case */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cat %s/d/problem-*/qmm.meta > %s/metas.txt", tmpdir, tmpdir);
    cr_assert(system(cmd) == 0);
    char path[512];
    snprintf(path, sizeof path, "%s/metas.txt", tmpdir);
    char *metas = slurp(path);
    cr_expect_eq(count_lines_with(metas, "cpu_class = x86-64-v3"), 2, "%s", metas);
    free(metas);
    out = qmmcheck_expect(0, "run -q --backend reference --vectors %s/d", tmpdir);
    free(out);
}
