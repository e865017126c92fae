/* tests/plugins/guard_cli.c — the guards and the verdict's text end to end: qmmcheck runs
 * guard_plugin.c isolated and its case lines must name what the plugin did. */
#include <stdlib.h>
#include <string.h>

#include "tests/cli_support.h"

TestSuite(guard_cli, .init = make_tmp, .fini = remove_tmp);

/* Runs the plugin in `mode` on one MatMulInteger case; returns the output. */
static char *run_mode(const char *mode)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend '%s:mode=%s' --isolate --timeout 5 "
                            "vectors/seeds/onnx-doc-matmulinteger",
                      env("QMM_GUARD_PLUGIN"), mode);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    return out;
}

Test(guard_cli, a_thread_writing_after_return_fails_its_own_case)
{
    char *out = run_mode("late_writer");
    cr_assert(strstr(out, "1:FAILED onnx-doc-matmulinteger (wrote into y after the call "
                          "returned)"), "%s", out);
    free(out);
}

Test(guard_cli, a_write_pages_past_y_names_y)
{
    char *out = run_mode("far_write");
    long ps = sysconf(_SC_PAGESIZE);
    char want[160];
    snprintf(want, sizeof want, "1:FAILED onnx-doc-matmulinteger (wrote %ld bytes past the end "
                                "of y)", 3 * ps + 1);
    cr_assert(strstr(out, want), "want %s in:\n%s", want, out);
    free(out);
}

/* A packed int4 x (15 elements, 8 bytes) ends where its guard page starts: read as packed it
 * is all there; read one byte an element, the read past its 8 bytes is caught and named. */
Test(guard_cli, a_packed_input_ends_at_its_packed_size)
{
    static const char *const modes[2] = {"x_packed", "x_unpacked"};
    static const char *const want[2] = {"1:FAILED int4_axis0_odd (errors:15 total:15)",
                                        "1:FAILED int4_axis0_odd (read 1 byte past the end of "
                                        "input x)"};
    for (int i = 0; i < 2; i++) {
        char *out;
        int rc = qmmcheck(&out, "run --backend '%s:mode=%s' --isolate --timeout 5 "
                                "tests/dequantizelinear-packed/int4_axis0_odd",
                          env("QMM_GUARD_PLUGIN"), modes[i]);
        cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
        cr_assert(strstr(out, want[i]), "want %s in:\n%s", want[i], out);
        free(out);
    }
}

/* What a worker prints is shown line by line, each "    | " and cleaned on its own: a forged
 * case line stays inside the detail, an escape is written out, a long line is cut. */
Test(guard_cli, worker_output_is_bounded_clean_detail_lines)
{
    char *out = run_mode("chatty");
    cr_assert_eq(count_lines_with(out, "forged-by-guard-plugin"), 1, "%s", out);
    cr_assert_not(strstr(out, "\n7:PASSED"), "a forged case line:\n%s", out);
    cr_assert(strstr(out, "\n    | 7:PASSED forged-by-guard-plugin\n"), "%s", out);
    cr_assert_not(strchr(out, '\x1b'), "a raw escape character:\n%s", out);
    /* 5001 bytes printed, 4096 kept: an empty line, the forged one, then escape and filler */
    const char *line = strstr(out, "    worker output (4096 bytes, 905 dropped):\n    |\n");
    cr_assert(line, "%s", out);
    line = strstr(line, "    | \\x1b[31mredzzz");
    cr_assert(line, "%s", out);
    const char *nl = strchr(line, '\n');
    cr_assert(nl && nl - line < 1200, "the line is not cut at 1 KiB:\n%s", out);
    free(out);
}
