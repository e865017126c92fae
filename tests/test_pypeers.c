/* tests/test_pypeers.c — the Python peers (peers/onnxruntime, peers/onnx-reference) through the
 * exec: backend: each starts and names its library's version, computes a case its library is
 * known to get right (u8u8u8 per-tensor QLinearMatMul, u8u8 MatMulInteger) and answers
 * QOrderedMatMul UNSUPPORTED with the reason.
 *
 * Not a conformance run: what the peers get wrong is reported by `qmmcheck run`/`diff` with
 * them (peers/<peer>/README.md), not asserted here. Each test skips, saying why, when the
 * interpreter (QMM_PYTHON, else .venv/bin/python from scripts/pydeps.sh) or its package is
 * missing. */
#include <criterion/criterion.h>

#include "tests/cli_support.h"

TestSuite(pypeers, .init = make_tmp, .fini = remove_tmp, .timeout = 60);

#define ORT "peers/onnxruntime/backend.py"
#define ONNXREF "peers/onnx-reference/backend.py"
/* cases both libraries compute exactly (docs/peer-report.md) */
#define QLM_U8 "vectors/onnx/onnx-1.23.2/test_qlinearmatmul_2D_uint8_float32 " \
               "vectors/edge/qlinearmatmul/random/14-u8u8u8"
#define MI_U8 "vectors/onnx/onnx-1.23.2/test_matmulinteger vectors/edge/matmulinteger/random/33-u8u8"
#define QORDERED "vectors/edge/qorderedmatmul/random/02-s8s8"

/* The interpreter and `module`'s version, or skips the test saying what is missing. */
static void python_with(const char *module, char *py, size_t py_size, char *version,
                        size_t version_size)
{
    const char *p = getenv("QMM_PYTHON");
    if (p && *p)
        snprintf(py, py_size, "%s", p);
    else
        snprintf(py, py_size, "%s/.venv/bin/python", env("QMM_SOURCE_DIR"));
    if (access(py, X_OK) != 0)
        cr_skip_test("no %s: run scripts/pydeps.sh (or set QMM_PYTHON)", py);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' -c 'import %s; print(%s.__version__)' 2>/dev/null", py,
             module, module);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    int got = fgets(version, (int)version_size, f) != NULL;
    int rc = pclose(f);
    if (!got || rc != 0)
        cr_skip_test("%s cannot import %s: run scripts/pydeps.sh", py, module);
    version[strcspn(version, "\n")] = '\0';
}

/* The hello's name and description, as `bench` prints them. */
static char *hello_of(const char *spec)
{
    return qmmcheck_expect(0, "bench --backend '%s' --shape 2x3x4 --types u8u8u8 --reps 1", spec);
}

/* Runs `vectors` through `spec` and expects every case PASSED. */
static void expect_all_pass(const char *spec, const char *vectors, int n)
{
    char *out = qmmcheck_expect(0, "run --backend '%s' --vectors %s", spec, vectors);
    cr_expect_eq(count_lines_with(out, ":PASSED"), n, "%s", out);
    free(out);
}

/* Runs the QOrderedMatMul case through `spec` and expects it SKIPPED with `reason`. */
static void expect_qordered_unsupported(const char *spec, const char *reason)
{
    char *out = qmmcheck_expect(0, "run --backend '%s' --allow-empty --vectors " QORDERED, spec);
    cr_expect_eq(count_lines_with(out, ":SKIPPED"), 1, "%s", out);
    expect_in(out, reason);
    free(out);
}

Test(pypeers, onnxruntime_names_its_version_and_the_cpu_flags)
{
    char py[512], version[64], spec[1024], want[128];
    python_with("onnxruntime", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec:%s " ORT, py);
    char *out = hello_of(spec);
    snprintf(want, sizeof want, "backend onnxruntime-%s-cpu (onnxruntime %s CPUExecutionProvider",
             version, version);
    expect_in(out, want);
    expect_in(out, "CPU flags (MLAS): ");
    free(out);
}

Test(pypeers, onnxruntime_computes_u8_cases_with_b_an_initializer_and_an_input)
{
    char py[512], version[64], spec[1024];
    python_with("onnxruntime", py, sizeof py, version, sizeof version);
    const char *modes[] = {"exec", "exec,b=initializer", "exec,b=input"};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        snprintf(spec, sizeof spec, "%s:%s " ORT, modes[i], py);
        expect_all_pass(spec, QLM_U8 " " MI_U8, 4);
    }
}

Test(pypeers, onnxruntime_refuses_an_unknown_option)
{
    char py[512], version[64];
    python_with("onnxruntime", py, sizeof py, version, sizeof version);
    char *out = qmmcheck_expect(2, "run --backend 'exec,b=constant:%s " ORT "' --vectors " MI_U8,
                                py);
    expect_in(out, "unknown option b=constant");
    free(out);
}

/* graph=dq-matmul-unfused runs a MatMulNBits level-0 call as DequantizeLinear -> MatMul, which
 * has the call's exact value (4-bit with packed zero points, 8-bit, and the peer case that the
 * fused graph=dq-matmul gets wrong); what that graph cannot express is UNSUPPORTED, saying why. */
Test(pypeers, onnxruntime_runs_matmulnbits_as_a_dequantizelinear_matmul_graph)
{
    char py[512], version[64], spec[1024];
    python_with("onnxruntime", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec,graph=dq-matmul-unfused:%s " ORT, py);
    expect_all_pass(spec, "vectors/edge/matmulnbits/nbits-rows/m2-level0 "
                          "vectors/edge/matmulnbits/nbits-zero-points/bits8-packed "
                          "vectors/peers/onnxruntime/dq-matmul-fused-level4", 3);
    snprintf(spec, sizeof spec, "exec,graph=dq-matmul:%s " ORT, py);
    char *out = qmmcheck_expect(0, "run --backend '%s' --allow-empty --vectors "
                                   "vectors/edge/matmulnbits/nbits-rows/m2-level4 " MI_U8, spec);
    cr_expect_eq(count_lines_with(out, ":SKIPPED"), 3, "%s", out);
    expect_in(out, "graph=dq-matmul: the DequantizeLinear -> MatMul graph's value is the "
                   "accuracy_level 0 call's (got accuracy_level 4)");
    expect_in(out, "graph=dq-matmul runs MatMulNBits calls only (got MatMulInteger)");
    free(out);
}

Test(pypeers, onnxruntime_answers_qorderedmatmul_unsupported_with_its_own_error)
{
    char py[512], version[64], spec[1024];
    python_with("onnxruntime", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec:%s " ORT, py);
    expect_qordered_unsupported(
        spec, "NOT_IMPLEMENTED : Could not find an implementation for QOrderedMatMul");
}

Test(pypeers, onnx_reference_names_its_version)
{
    char py[512], version[64], spec[1024], want[128];
    python_with("onnx", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec:%s " ONNXREF, py);
    char *out = hello_of(spec);
    snprintf(want, sizeof want, "backend onnx-reference-%s (onnx %s onnx.reference", version,
             version);
    expect_in(out, want);
    free(out);
}

Test(pypeers, onnx_reference_computes_u8_cases)
{
    char py[512], version[64], spec[1024];
    python_with("onnx", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec:%s " ONNXREF, py);
    expect_all_pass(spec, QLM_U8 " " MI_U8, 4);
}

/* Packed sub-byte inputs across the exec protocol: qmmcheck writes them as TensorProto
 * raw_data, onnx's numpy_helper reads them (ml_dtypes int4/uint4/float4e2m1 arrays, one element
 * a byte), and the evaluator's answer is the exact value. */
#define DQL_PACKED "vectors/onnx/onnx-1.23.2/test_dequantizelinear_int4 " \
                   "vectors/onnx/onnx-1.23.2/test_dequantizelinear_uint4 " \
                   "vectors/onnx/onnx-1.23.2/test_dequantizelinear_int2 " \
                   "vectors/onnx/onnx-1.23.2/test_dequantizelinear_float4e2m1"

Test(pypeers, onnx_reference_computes_packed_dequantizelinear)
{
    char py[512], version[64], spec[1024];
    python_with("onnx", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec:%s " ONNXREF, py);
    expect_all_pass(spec, DQL_PACKED, 4);
}

Test(pypeers, onnx_reference_answers_qorderedmatmul_unsupported)
{
    char py[512], version[64], spec[1024];
    python_with("onnx", py, sizeof py, version, sizeof version);
    snprintf(spec, sizeof spec, "exec:%s " ONNXREF, py);
    expect_qordered_unsupported(spec, "implements the ai.onnx operators only");
}
