/* tests/test_cpu.c — `--cpu CLASS` (harness/invoke/cpu.h, docs/cpu.md) where no emulator runs: the
 * list of classes, and every refusal — a class qemu cannot give, an unknown one, a missing
 * qemu-x86_64 — is a usage error (exit 2) naming why, on every command that takes --cpu. What
 * runs under qemu is tests/test_cpu_emulated.c. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli_support.h"

TestSuite(cpu, .init = make_tmp, .fini = remove_tmp, .timeout = 60);

Test(cpu, list_cpus_names_each_class_its_model_and_what_it_lacks)
{
    char *out = qmmcheck_expect(0, "list --cpus");
    expect_in(out, "x86-64-v2\n  qemu -cpu: Nehalem\n");
    expect_in(out, "x86-64-v3\n  qemu -cpu: Haswell-noTSX,-pcid,-x2apic,-tsc-deadline,-invpcid\n");
    expect_in(out, "native\n  qemu -cpu: (runs natively)");
    /* v2 lacks AVX; v3 lacks AVX-512 and VNNI; the ones qemu cannot give say so */
    expect_in(out, "  lacks: AVX, AVX2, FMA");
    expect_in(out, "  lacks: AVX-512 (F, CD, BW, DQ, VL), AVX-512 VNNI, AVX-VNNI, AMX");
    expect_in(out, "x86-64-v4\n");
    expect_in(out, "  refused: qemu-user (7.2) emulates no AVX-512 instruction");
    expect_in(out, "amx\n");
    free(out);
}

/* Every command that takes --cpu refuses `cls` with exit 2 and says `why`. */
static void expect_refused_everywhere(const char *cls, const char *why)
{
    static const char *const commands[] = {
        "run --backend reference --vectors vectors/seeds --cpu %s",
        "repro --cpu %s vectors/seeds/onnx-doc-matmulinteger",
        "diff --backend reference --backend reference --seed 1 --count 1 --cpu %s",
        "fingerprint --backend reference --cpu %s",
        "reduce vectors/seeds/onnx-doc-matmulinteger --backend reference --cpu %s",
        "list --backends --cpu %s",
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, commands[i], cls);
        char *out;
        int rc = qmmcheck(&out, "%s", args);
        cr_expect_eq(rc, 2, "'qmmcheck %s' exited %d:\n%s", args, rc, out);
        cr_expect(strstr(out, why), "'qmmcheck %s' does not say '%s':\n%s", args, why, out);
        free(out);
    }
}

Test(cpu, a_class_the_emulator_cannot_give_is_refused_with_why)
{
    expect_refused_everywhere("x86-64-v4", "CPU class x86-64-v4 cannot be emulated: qemu-user "
                                           "(7.2) emulates no AVX-512 instruction");
    expect_refused_everywhere("avx512-vnni", "CPU class avx512-vnni cannot be emulated");
    expect_refused_everywhere("amx", "emulates no AMX");
    expect_refused_everywhere("native,avx-vnni", "CPU class avx-vnni cannot be emulated");
}

Test(cpu, an_unknown_class_lists_the_known_ones)
{
    expect_refused_everywhere("pentium", "unknown CPU class 'pentium' (native, x86-64-v2, "
                                         "x86-64-v3; 'qmmcheck list --cpus' lists them)");
    expect_refused_everywhere("native,", "unknown CPU class ''");
    char *out = qmmcheck_expect(2, "run --backend reference --vectors vectors/seeds --cpu "
                                   "native,native");
    expect_in(out, "CPU class native is named twice");
    free(out);
}

Test(cpu, a_missing_qemu_names_the_package)
{
    /* PATH without qemu-x86_64; qmmcheck itself is named by its full path */
    char *out;
    int rc = qmmcheck_under(&out, "env PATH=/nonexistent",
                            "run --backend reference --vectors vectors/seeds --cpu x86-64-v3");
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    expect_in(out, "--cpu x86-64-v3: qemu-x86_64 is not installed (not found on PATH): install "
                   "Debian's qemu-user package");
    free(out);
    rc = qmmcheck_under(&out, "env QMM_QEMU=/nonexistent/qemu",
                        "fingerprint --backend reference --cpu x86-64-v2");
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    expect_in(out, "QMM_QEMU=/nonexistent/qemu is not an executable file");
    free(out);
}

Test(cpu, native_runs_as_without_the_option_but_names_the_class)
{
    char *out = qmmcheck_expect(0, "run --backend reference --vectors vectors/seeds --cpu native "
                                   "--report json:%s/r.json --report junit:%s/r.xml",
                                tmpdir, tmpdir);
    cr_expect_eq(count_lines_with(out, "__REPRO: qmmcheck repro --cpu native --backend reference"),
                 3, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    char *json = slurp(path);
    cr_expect_eq(count_lines_with(json, "\"cpu\": \"native\""), 3, "%s", json);
    free(json);
    expect_json_valid(path);
    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    char *xml = slurp(path);
    expect_in(xml, "classname=\"qmmcheck.reference@native");
    free(xml);
    expect_junit_valid(path);
    /* without --cpu the lines are as they were; the JSON says native */
    out = qmmcheck_expect(0, "run --backend reference --vectors vectors/seeds "
                             "--report json:%s/r.json", tmpdir);
    cr_expect_eq(count_lines_with(out, "--cpu"), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    json = slurp(path);
    cr_expect_eq(count_lines_with(json, "\"cpu\": \"native\""), 3, "%s", json);
    cr_expect_eq(count_lines_with(json, "cpu_classes"), 0, "%s", json);
    free(json);
}

Test(cpu, one_class_where_a_command_takes_one)
{
    char *out = qmmcheck_expect(2, "repro --cpu native,native vectors/seeds/onnx-doc-matmulinteger");
    free(out);
    out = qmmcheck_expect(2, "fingerprint --backend reference --cpu native,native");
    free(out);
    out = qmmcheck_expect(2, "list --vectors vectors/seeds --cpu native");
    expect_in(out, "--cpu takes one class, with --backends");
    free(out);
}
