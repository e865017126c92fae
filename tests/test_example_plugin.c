/* tests/test_example_plugin.c — the example vendor plugin (examples/vendor-plugin/mykernels.c),
 * built with signed-overflow checks that trap (QMM_EXAMPLE_PLUGIN, tests/CMakeLists.txt), run
 * by the CLI:
 * - on K = 33026 per-tensor cases, whose exact sums leave int32: the example accumulates in
 *   int64 and wraps to int32 as written out (semantics.md, "The int32 overflow rule"); its
 *   int32 accumulator overflowed there (undefined behaviour: a trap here, CRASHED);
 * - under --determinism, whose default variants threads=1;threads=2;threads=3 the example
 *   must open and run (it refused every option, so --determinism compared nothing);
 * - on the edge `invalid` suites and under diff --only supported: it rejects what
 *   semantics.md §2.5 and §3 call invalid (it accepted MatMulInteger zero points of another type
 *   than their operand's and a QLinearMatMul int32 y_zero_point: UNCHECKED, and a status
 *   difference in diff). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/casefile_support.h"
#include "tests/cli_support.h"

TestSuite(example_plugin, .init = make_tmp, .fini = remove_tmp);

enum { M = 4, K = 33026, N = 3 };

/* Every element of a and b 255, zero points 0: each sum is 33026 * 255 * 255 = 2147515650,
 * 32003 above INT32_MAX. */
static unsigned char *all_255(size_t n)
{
    unsigned char *p = malloc(n);
    cr_assert(p);
    memset(p, 255, n);
    return p;
}

/* DIR/qlinearmatmul: u8 a[M,K], b[K,N], y[M,N], per-tensor, float scales (y_scale 2^24:
 * the exact sum gives 128, the wrapped one a negative value saturated to 0; both accepted). */
static void write_qlinearmatmul(const char *dir)
{
    static const char *const names[8] = {"a", "a_scale", "a_zero_point", "b", "b_scale",
                                         "b_zero_point", "y_scale", "y_zero_point"};
    char d[600], set[700];
    snprintf(d, sizeof d, "%s/qlinearmatmul", dir);
    write_case_model(d, "QLinearMatMul", "example", names, 8, "y");
    snprintf(set, sizeof set, "%s/test_data_set_0", d);
    unsigned char *a = all_255((size_t)M * K), *b = all_255((size_t)K * N), z = 0;
    float one = 1.0f, ys = 16777216.0f;
    write_tensor(set, "input_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){M, K}, a, "a");
    write_tensor(set, "input_1.pb", QMM_DTYPE_FLOAT, 0, NULL, &one, "a_scale");
    write_tensor(set, "input_2.pb", QMM_DTYPE_UINT8, 0, NULL, &z, "a_zero_point");
    write_tensor(set, "input_3.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){K, N}, b, "b");
    write_tensor(set, "input_4.pb", QMM_DTYPE_FLOAT, 0, NULL, &one, "b_scale");
    write_tensor(set, "input_5.pb", QMM_DTYPE_UINT8, 0, NULL, &z, "b_zero_point");
    write_tensor(set, "input_6.pb", QMM_DTYPE_FLOAT, 0, NULL, &ys, "y_scale");
    write_tensor(set, "input_7.pb", QMM_DTYPE_UINT8, 0, NULL, &z, "y_zero_point");
    free(a);
    free(b);
}

/* DIR/matmulinteger: u8 a[M,K], b[K,N], no zero points; y is the wrapped sum. */
static void write_matmulinteger(const char *dir)
{
    char d[600], set[700];
    snprintf(d, sizeof d, "%s/matmulinteger", dir);
    write_case_model(d, "MatMulInteger", "example", (const char *const[]){"A", "B"}, 2, "Y");
    snprintf(set, sizeof set, "%s/test_data_set_0", d);
    unsigned char *a = all_255((size_t)M * K), *b = all_255((size_t)K * N);
    write_tensor(set, "input_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){M, K}, a, "A");
    write_tensor(set, "input_1.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){K, N}, b, "B");
    free(a);
    free(b);
}

Test(example_plugin, k33026_sums_leave_int32_without_signed_overflow)
{
    write_qlinearmatmul(tmpdir);
    write_matmulinteger(tmpdir);
    char *out = qmmcheck_expect(0, "run --backend '%s' --vectors '%s'", env("QMM_EXAMPLE_PLUGIN"),
                                tmpdir);
    expect_in(out, "total:2 passed:2 ");
    free(out);
}

/* --determinism opens threads=1, 2 and 3 and compares their bytes: none is left out. */
Test(example_plugin, determinism_runs_the_threads_variants)
{
    write_qlinearmatmul(tmpdir);
    write_matmulinteger(tmpdir);
    char *out = qmmcheck_expect(0, "run --determinism --backend '%s' --vectors '%s' "
                                   "--vectors vectors/edge/qlinearmatmul/ties",
                                env("QMM_EXAMPLE_PLUGIN"), tmpdir);
    cr_expect(strstr(out, "left out") == NULL, "a variant was left out:\n%s", out);
    cr_expect(strstr(out, "failed:0 ") != NULL, "%s", out);
    free(out);
    /* an option the example does not know is still refused, naming it */
    out = qmmcheck_expect(2, "run --backend '%s:threads=65' --vectors '%s'",
                          env("QMM_EXAMPLE_PLUGIN"), tmpdir);
    expect_in(out, "threads must be 1..64");
    free(out);
    out = qmmcheck_expect(2, "run --backend '%s:isa=avx2' --vectors '%s'",
                          env("QMM_EXAMPLE_PLUGIN"), tmpdir);
    expect_in(out, "mykernels knows only threads=N");
    free(out);
}

/* Invalid calls of the forms the example computes are INVALID_ARGUMENT, as the reference says. */
Test(example_plugin, rejects_invalid_zero_point_and_output_types)
{
    const char *plugin = env("QMM_EXAMPLE_PLUGIN");
    char *out = qmmcheck_expect(0, "run --backend '%s' --vectors "
                                   "vectors/edge/matmulinteger/invalid --vectors "
                                   "vectors/edge/qlinearmatmul/invalid",
                                plugin);
    cr_expect(strstr(out, "UNCHECKED") == NULL, "%s", out);
    expect_in(out, " unchecked:0 ");
    free(out);
    out = qmmcheck_expect(0, "diff --backend reference --backend '%s' --seed 1 --count 200 "
                             "--only supported --quiet --no-isolate --out '%s/diff'",
                          plugin, tmpdir);
    expect_in(out, "problems:200 same:200 differences:0 ");
    free(out);
}
