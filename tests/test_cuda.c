/* tests/test_cuda.c — the CUDA backend.
 *
 * Without a device (the usual case on CI): the backend opens, every query answers UNSUPPORTED
 * "no CUDA device", and `qmmcheck run --backend cuda` exits 0 with everything SKIPPED. The
 * backend's arithmetic is still tested: epilogue.h (the device epilogue's source) is compiled
 * here for the host and compared with the CPU backend's proven requantization, and the whole
 * pipeline runs emulated on the host (`cuda:emulate=1`) against the reference: vector suites
 * and the seeded random differential. With a device, the same suites and the differential run
 * on it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/cuda/epilogue.h"
#include "optimized/qmm_cuda.h"
#include "ops/qmm_ops.h"
#include "tests/cli_support.h"
#include "tests/rng_support.h"

static qmm_backend *open_cuda(const char *options)
{
    qmm_status st;
    qmm_backend *be = qmm_cuda_open(QMM_ABI_VERSION, options, &st);
    cr_assert(be != NULL, "open cuda:%s: %s", options, st.message);
    return be;
}

/* 1 when this machine has a usable device (the plain backend's query says OK). */
static int have_device(void)
{
    qmm_backend *be = open_cuda("");
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_QLINEARMATMUL;
    qmm_status st;
    int ok = be->query(be, &call, &st) == QMM_OK;
    be->close(be);
    return ok;
}

/* ---- no device ---- */

Test(cuda, no_device_answers_unsupported)
{
    if (have_device())
        cr_skip_test("a CUDA device is present");
    qmm_backend *be = open_cuda("");
    cr_assert_str_eq(be->name, "cuda");
    static const qmm_op_kind ops[] = {QMM_OP_QLINEARMATMUL, QMM_OP_MATMULINTEGER,
                                      QMM_OP_QORDEREDMATMUL};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        qmm_call call;
        memset(&call, 0, sizeof call);
        call.op = ops[i];
        qmm_status st;
        cr_assert_eq(be->query(be, &call, &st), QMM_UNSUPPORTED);
        cr_assert_eq(st.code, QMM_UNSUPPORTED);
        cr_assert(strstr(st.message, "no CUDA device") != NULL, "reason: %s", st.message);
        /* the operator call itself says the same, without touching its (empty) tensors */
        cr_assert_eq(qmm_backend_run(be, &call, &st), QMM_UNSUPPORTED);
        cr_assert(strstr(st.message, "no CUDA device") != NULL, "reason: %s", st.message);
    }
    cr_assert(strstr(be->description, "no CUDA device") != NULL);
    be->close(be);
}

Test(cuda, no_device_suites_all_skipped, .init = make_tmp, .fini = remove_tmp)
{
    if (have_device())
        cr_skip_test("a CUDA device is present");
    char *out;
    int rc = qmmcheck(&out, "run --backend cuda --vectors vectors --allow-empty");
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "passed:0 ") != NULL, "%s", out);
    cr_assert(strstr(out, "failed:0 ") != NULL, "%s", out);
    cr_assert(strstr(out, "no CUDA device") != NULL, "%s", out);
    cr_assert_eq(count_lines_with(out, ":PASSED "), 0, "%s", out);
    cr_assert(count_lines_with(out, ":SKIPPED ") > 0, "%s", out);
    free(out);
}

Test(cuda, options)
{
    qmm_status st;
    cr_assert_null(qmm_cuda_open(QMM_ABI_VERSION, "bogus=1", &st));
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "bogus") != NULL);
    cr_assert_null(qmm_cuda_open(QMM_ABI_VERSION, "device=x", &st));
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
    cr_assert_null(qmm_cuda_open(QMM_ABI_VERSION, "emulate=2", &st));
    cr_assert_null(qmm_cuda_open(QMM_ABI_VERSION, "slabs=17", &st));
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "slabs") != NULL, "%s", st.message);
    cr_assert_null(qmm_cuda_open(QMM_ABI_VERSION, "slabs=-1", &st));
    cr_assert_null(qmm_cuda_open(QMM_ABI_VERSION + 1, "", &st));
    cr_assert_eq(st.code, QMM_UNSUPPORTED);
    char want[128]; /* qmm_backend_abi_check's words, as every backend in the tree */
    snprintf(want, sizeof want, "cuda: built for qmm ABI %u, the harness speaks ABI %u",
             (unsigned)QMM_ABI_VERSION, (unsigned)QMM_ABI_VERSION + 1);
    cr_assert_str_eq(st.message, want);
    qmm_backend *be = open_cuda("emulate=1");
    cr_assert_str_eq(be->name, "cuda:emulate=1");
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_QLINEARMATMUL;
    cr_assert_eq(be->query(be, &call, &st), QMM_OK);
    qmm_cuda_bench_times t;
    cr_assert_eq(qmm_cuda_bench_resident(be, 64, 64, 64, NULL, NULL, 1, &t, &st), QMM_UNSUPPORTED);
    be->close(be);
    be = open_cuda("device=7");
    be->close(be);
    /* the name holds the options that are not the defaults; slabs 0 and 1 are none */
    be = open_cuda("emulate=1,slabs=3");
    cr_assert_str_eq(be->name, "cuda:emulate=1,slabs=3");
    be->close(be);
    be = open_cuda("slabs=1,emulate=1");
    cr_assert_str_eq(be->name, "cuda:emulate=1");
    be->close(be);
}

/* ---- the epilogue arithmetic, compiled for the host ---- */

/* A random positive float scale over most of float's range (subnormals included). */
static double random_scale(uint64_t *s)
{
    for (;;) {
        uint32_t bits = (uint32_t)splitmix64(s) & 0x7fffffffu;
        float f;
        memcpy(&f, &bits, 4);
        if (isfinite(f) && f > 0)
            return f;
    }
}

static int32_t random_acc(uint64_t *s)
{
    uint64_t r = splitmix64(s);
    switch (r % 4) {
    case 0: return (int32_t)(uint32_t)(r >> 32);                  /* any int32 */
    case 1: return (int32_t)((r >> 32) % 2001) - 1000;             /* small */
    case 2: return (r >> 40) & 1 ? INT32_MAX - (int32_t)((r >> 8) & 7) : INT32_MIN;
    default: return (int32_t)((r >> 32) % 200001) - 100000;
    }
}

/* The epilogue's requantization is the CPU's (optimized/requant_exact.h, checked against GMP
 * in test_optimized.c's rounding::shared_exact_rule_agrees_with_gmp); with the multiplier the
 * epilogue makes, fl(sa * fl(sb / sy)), it must give the CPU's per-element answer, whose
 * multiplier is fl(fl(sa * sb) / sy). */
Test(cuda_epilogue, requant_matches_cpu_ties_and_near_ties)
{
    uint64_t s = 7;
    static const int32_t zps[] = {0, 1, -1, 127, -128, 128, 255, 3};
    for (int i = 0; i < 400000; i++) {
        int32_t acc;
        double sa, sb, sy;
        switch (i % 4) {
        case 0: /* exact ties: x = acc / 2^t */
            acc = (int32_t)(splitmix64(&s) % 4001) - 2000;
            sa = ldexp(1.0, -(int)(splitmix64(&s) % 4));
            sb = 1.0;
            sy = ldexp(1.0, (int)(splitmix64(&s) % 3) - 1);
            break;
        case 1: /* near ties through a non-dyadic y_scale */
            acc = (int32_t)(splitmix64(&s) % 4001) - 2000;
            sa = (float)(3.0 * ldexp(1.0, -(int)(splitmix64(&s) % 6)));
            sb = (float)(1.0 + ldexp(1.0, -20));
            sy = (float)(6.0 * ldexp(1.0, -(int)(splitmix64(&s) % 6)));
            break;
        case 2: /* just around a half-integer */
            acc = (int32_t)(splitmix64(&s) % 255) + 1;
            sa = (float)ldexp(1.0 + ldexp((double)(int)(splitmix64(&s) % 9) - 4.0, -23), -1);
            sb = 1.0;
            sy = 1.0;
            break;
        default:
            acc = random_acc(&s);
            sa = random_scale(&s);
            sb = random_scale(&s);
            sy = random_scale(&s);
        }
        int32_t zy = zps[splitmix64(&s) % 8];
        int32_t qmin = i & 1 ? -128 : 0, qmax = i & 1 ? 127 : 255;
        int32_t want = qmm_opt_requant_one(acc, sa, sb, sy, zy, qmin, qmax);
        int32_t got = qmm_cu_requant(acc, sa, sb, sy, sb / sy, zy, qmin, qmax);
        cr_assert_eq(got, want, "acc=%d sa=%a sb=%a sy=%a zy=%d: got %d want %d", acc, sa, sb,
                     sy, zy, got, want);
    }
}

Test(cuda_epilogue, correction_identity)
{
    /* dot + db*rowsum + da*colsum + K*da*db == sum (a - za)(b - zb) mod 2^32, for random
     * vectors of every signedness */
    uint64_t s = 3;
    for (int t = 0; t < 2000; t++) {
        int as = (int)(splitmix64(&s) & 1), bs = (int)(splitmix64(&s) & 1);
        int64_t k = (int64_t)(splitmix64(&s) % 300);
        int32_t za = as ? (int8_t)splitmix64(&s) : (uint8_t)splitmix64(&s);
        int32_t zb = bs ? (int8_t)splitmix64(&s) : (uint8_t)splitmix64(&s);
        uint32_t dot = 0, rs = 0, cs = 0, exact = 0;
        for (int64_t i = 0; i < k; i++) {
            uint8_t a = (uint8_t)splitmix64(&s), b = (uint8_t)splitmix64(&s);
            int32_t av = as ? (int8_t)a : a, bv = bs ? (int8_t)b : b;
            int8_t a8 = qmm_cu_s8(a, as), b8 = qmm_cu_s8(b, bs);
            dot += (uint32_t)(a8 * b8);
            rs += (uint32_t)(int32_t)a8;
            cs += (uint32_t)(int32_t)b8;
            exact += (uint32_t)((av - za) * (bv - zb));
        }
        int32_t da = (as ? 0 : 128) - za, db = (bs ? 0 : 128) - zb;
        cr_assert_eq(qmm_cu_correct((int32_t)dot, (int32_t)rs, (int32_t)cs, da, db, k),
                     qmm_rq_wrap(exact));
    }
}

/* ---- the whole pipeline, emulated on the host, against the reference ---- */

Test(cuda, emulated_vector_suites, .init = make_tmp, .fini = remove_tmp)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend cuda:emulate=1 --vectors vectors");
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "failed:0 ") != NULL, "%s", out);
    cr_assert(count_lines_with(out, ":PASSED ") > 0, "%s", out);
    free(out);
}

Test(cuda, emulated_differential, .init = make_tmp, .fini = remove_tmp)
{
    free(qmmcheck_expect(0, "diff --backend reference --backend cuda:emulate=1 --seed 11 "
                            "--count 20000 --quiet --out '%s/diff'", tmpdir));
}

/* Column slabs (slabs=S): the emulation cuts the GEMM and the epilogue into slabs of
 * multiples of 4 columns (the device's are of 256), so random problems cross slab edges:
 * every column vector, y and y's parameters offset per slab, y's row stride kept. */
Test(cuda, emulated_slabs, .init = make_tmp, .fini = remove_tmp)
{
    free(qmmcheck_expect(0, "diff --backend reference --backend cuda:emulate=1,slabs=3 "
                            "--seed 13 --count 20000 --quiet --out '%s/diff'",
                         tmpdir));
    char *out;
    int rc = qmmcheck(&out, "run --backend cuda:emulate=1,slabs=5 --vectors vectors");
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "failed:0 ") != NULL, "%s", out);
    free(out);
}

/* Batched problems of several slabs with parameters of every form the slab offsets touch:
 * QLinearMatMul with per-row a, per-column b (batched) and per-element y parameters (the
 * one-element epilogue), and MatMulInteger (int32 y, the four-column kernel's 16-byte stores);
 * backend `got` against `want`, byte for byte. Batch 3 also checks that a batch's GEMM does not
 * overwrite the accumulators before the previous batch's slab epilogues read them. */
static void slab_problems(const char *got, const char *want, uint64_t seed)
{
    enum { B = 3, M = 40, K = 520, NMAX = 1030 };
    static const int64_t widths[] = {1028, 1030, 260};
    uint64_t s = seed;
    uint8_t *a = malloc(B * M * K), *b = malloc(B * K * NMAX);
    enum { YBYTES = B * M * NMAX * 4 + 64 }; /* the largest y and guard bytes */
    uint8_t *y1 = malloc(YBYTES), *y2 = malloc(YBYTES);
    uint8_t *yz = malloc(B * M * NMAX), za[B * M], zb[B * NMAX];
    float *ys = malloc(B * M * NMAX * sizeof *ys), sa[B * M], sb[B * NMAX];
    cr_assert(a && b && y1 && y2 && yz && ys);
    for (size_t i = 0; i < (size_t)B * M * K; i++)
        a[i] = (uint8_t)splitmix64(&s);
    for (size_t i = 0; i < (size_t)B * K * NMAX; i++)
        b[i] = (uint8_t)splitmix64(&s);
    for (size_t i = 0; i < (size_t)B * M; i++) {
        za[i] = (uint8_t)splitmix64(&s);
        sa[i] = ldexpf(1.0f + (float)(splitmix64(&s) % 8) / 8, -8);
    }
    for (size_t i = 0; i < (size_t)B * NMAX; i++) {
        zb[i] = (uint8_t)splitmix64(&s);
        sb[i] = ldexpf(1.0f + (float)(splitmix64(&s) % 8) / 8, -7);
    }
    for (size_t i = 0; i < (size_t)B * M * NMAX; i++) {
        yz[i] = (uint8_t)splitmix64(&s);
        ys[i] = 0.5f + (float)(splitmix64(&s) % 64) / 8;
    }
    qmm_backend *bg = open_cuda(got), *bw = open_cuda(want);
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        int64_t n = widths[w];
        for (int mmi = 0; mmi < 2; mmi++) {
            qmm_status st;
            uint8_t *outs[2] = {y1, y2};
            qmm_backend *bes[2] = {bg, bw};
            for (int v = 0; v < 2; v++) {
                memset(outs[v], 0x5a, YBYTES);
                qmm_status_code rc;
                if (mmi) {
                    qmm_matmulinteger c = {
                        .a = {QMM_DTYPE_UINT8, 3, {B, M, K}, a},
                        .b = {QMM_DTYPE_INT8, 3, {B, K, n}, b},
                        .a_zero_point = {QMM_DTYPE_UINT8, 3, {B, M, 1}, za},
                        .b_zero_point = {QMM_DTYPE_INT8, 3, {B, 1, n}, zb},
                        .y = {QMM_DTYPE_INT32, 3, {B, M, n}, outs[v]},
                    };
                    rc = bes[v]->matmulinteger(bes[v], &c, &st);
                } else {
                    qmm_qlinearmatmul c = {
                        .a = {QMM_DTYPE_UINT8, 3, {B, M, K}, a},
                        .a_scale = {QMM_DTYPE_FLOAT, 3, {B, M, 1}, sa},
                        .a_zero_point = {QMM_DTYPE_UINT8, 3, {B, M, 1}, za},
                        .b = {QMM_DTYPE_INT8, 3, {B, K, n}, b},
                        .b_scale = {QMM_DTYPE_FLOAT, 3, {B, 1, n}, sb},
                        .b_zero_point = {QMM_DTYPE_INT8, 3, {B, 1, n}, zb},
                        .y_scale = {QMM_DTYPE_FLOAT, 3, {B, M, n}, ys},
                        .y_zero_point = {QMM_DTYPE_UINT8, 3, {B, M, n}, yz},
                        .y = {QMM_DTYPE_UINT8, 3, {B, M, n}, outs[v]},
                        .opset = 21,
                    };
                    rc = bes[v]->qlinearmatmul(bes[v], &c, &st);
                }
                cr_assert_eq(rc, QMM_OK, "%s, n %lld, %s: %s", bes[v]->name, (long long)n,
                             mmi ? "MatMulInteger" : "QLinearMatMul", st.message);
            }
            size_t bytes = (size_t)(B * M * n) * (mmi ? 4 : 1);
            for (size_t i = 0; i < bytes; i++)
                if (y1[i] != y2[i])
                    cr_assert_fail("%s against %s, n %lld, %s: byte %zu differs (%u, %u)", got,
                                   want, (long long)n, mmi ? "MatMulInteger" : "QLinearMatMul",
                                   i, y1[i], y2[i]);
            for (size_t i = bytes; i < bytes + 64; i++)
                cr_assert(y1[i] == 0x5a && y2[i] == 0x5a, "n %lld: y written past its end",
                          (long long)n);
        }
    }
    bg->close(bg);
    bw->close(bw);
    free(a);
    free(b);
    free(y1);
    free(y2);
    free(yz);
    free(ys);
}

Test(cuda, emulated_slab_problems)
{
    slab_problems("emulate=1,slabs=4", "emulate=1", 41);
}

/* ---- QOrderedMatMul, emulated: logical problems placed with the layout formulas ---- */

static void qordered_case(int order_a, int order_b, int order_y, int64_t m, int64_t k, int64_t n,
                          int use_bias, int use_c, uint64_t seed)
{
    uint64_t s = seed;
    int8_t *A = malloc((size_t)(m * k)), *B = malloc((size_t)(k * n));
    int8_t *Ad = malloc((size_t)(m * k)), *Bd = malloc((size_t)(k * n));
    int8_t *C = malloc((size_t)(m * n)), *Cd = malloc((size_t)(m * n)), *Y = malloc((size_t)(m * n));
    float *sb = malloc((size_t)n * sizeof *sb), *bias = malloc((size_t)n * sizeof *bias);
    cr_assert(A && B && Ad && Bd && C && Cd && Y && sb && bias);
    for (int64_t i = 0; i < m * k; i++)
        A[i] = (int8_t)splitmix64(&s);
    for (int64_t i = 0; i < k * n; i++)
        B[i] = (int8_t)splitmix64(&s);
    for (int64_t i = 0; i < m * n; i++)
        C[i] = (int8_t)splitmix64(&s);
    /* power-of-two scales and quarter biases: x is exact in double, ties included */
    float sa = 0x1p-9f, sy = 0.5f, sc = 0.25f;
    for (int64_t j = 0; j < n; j++) {
        sb[j] = ldexpf(1.0f, -(int)(splitmix64(&s) % 4));
        bias[j] = (float)((int)(splitmix64(&s) % 41) - 20) * 0.25f;
    }
    for (int64_t r = 0; r < m; r++)
        for (int64_t kk = 0; kk < k; kk++)
            Ad[qmm_cu_order_offset(order_a, r, kk, m, k)] = A[r * k + kk];
    for (int64_t kk = 0; kk < k; kk++)
        for (int64_t c = 0; c < n; c++) {
            int64_t o = order_b == QMM_ORDER_COL ? qmm_cu_order_offset(0, kk, c, k, n)
                                                 : qmm_cu_order_offset(order_b, c, kk, n, k);
            Bd[o] = B[kk * n + c];
        }
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++)
            Cd[qmm_cu_order_offset(order_y, r, c, m, n)] = C[r * n + c];
    qmm_qorderedmatmul call = {
        .a = {QMM_DTYPE_INT8, 2, {m, k}, Ad},
        .scale_a = {QMM_DTYPE_FLOAT, 0, {0}, &sa},
        .b = {QMM_DTYPE_INT8, 2, {k, n}, Bd},
        .scale_b = {QMM_DTYPE_FLOAT, 1, {n}, sb},
        .scale_y = {QMM_DTYPE_FLOAT, 0, {0}, &sy},
        .y = {QMM_DTYPE_INT8, 2, {m, n}, Y},
        .order_a = order_a,
        .order_b = order_b,
        .order_y = order_y,
    };
    if (use_bias)
        call.bias = (qmm_tensor){QMM_DTYPE_FLOAT, 1, {n}, bias};
    if (use_c) {
        call.c = (qmm_tensor){QMM_DTYPE_INT8, 2, {m, n}, Cd};
        call.scale_c = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &sc};
    }
    qmm_backend *be = open_cuda("emulate=1");
    qmm_status st;
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_OK, "%s", st.message);
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) {
            int64_t acc = 0;
            for (int64_t kk = 0; kk < k; kk++)
                acc += (int64_t)A[r * k + kk] * B[kk * n + c];
            double x = (double)sa * sb[c] * (double)acc / sy + (use_bias ? bias[c] : 0.0) +
                       (use_c ? (double)sc * C[r * n + c] / sy : 0.0);
            double q = rint(x);
            int want = q > 127 ? 127 : q < -128 ? -128 : (int)q;
            int got = Y[qmm_cu_order_offset(order_y, r, c, m, n)];
            cr_assert_eq(got, want, "orders (%d,%d,%d) %lldx%lldx%lld (%lld,%lld): x=%g", order_a,
                         order_b, order_y, (long long)m, (long long)k, (long long)n,
                         (long long)r, (long long)c, x);
        }
    be->close(be);
    free(A);
    free(B);
    free(Ad);
    free(Bd);
    free(C);
    free(Cd);
    free(Y);
    free(sb);
    free(bias);
}

Test(cuda_qordered, device_offsets_match_reference)
{
    /* epilogue.h's offsets (device code) and the reference's, for every order and clean shape */
    static const int64_t shapes[][2] = {{8, 32}, {32, 64}, {64, 32}, {96, 96}, {5, 7}, {1, 1}};
    for (int order = 0; order < 5; order++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            int64_t R = shapes[i][0], C = shapes[i][1];
            if ((order >= 2 && C % 32) || (order == 3 && R % 8) || (order == 4 && R % 32))
                continue;
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++)
                    cr_assert_eq(qmm_cu_order_offset(order, r, c, R, C),
                                 qmm_order_offset(order, R, C, r, c), "order %d %lldx%lld", order,
                                 (long long)R, (long long)C);
        }
}

Test(cuda_qordered, emulated_orders)
{
    qordered_case(QMM_ORDER_ROW, QMM_ORDER_COL, QMM_ORDER_ROW, 5, 7, 3, 1, 1, 1);
    qordered_case(QMM_ORDER_ROW, QMM_ORDER_COL, QMM_ORDER_ROW, 17, 40, 9, 0, 0, 2);
    qordered_case(QMM_ORDER_COL32, QMM_ORDER_COL4_4R2_8C, QMM_ORDER_COL32, 8, 64, 32, 0, 1, 3);
    qordered_case(QMM_ORDER_COL32, QMM_ORDER_COL4_4R2_8C, QMM_ORDER_COL32, 5, 32, 64, 0, 0, 4);
    qordered_case(QMM_ORDER_COL32, QMM_ORDER_COL32_2R_4R4, QMM_ORDER_COL32, 3, 96, 64, 0, 1, 5);
}

Test(cuda_qordered, invalid_input)
{
    int8_t a[64] = {0}, b[64 * 32] = {0}, y[64] = {0};
    float one = 1.0f, zero = 0.0f;
    qmm_qorderedmatmul call = {
        .a = {QMM_DTYPE_INT8, 2, {2, 32}, a},
        .scale_a = {QMM_DTYPE_FLOAT, 0, {0}, &one},
        .b = {QMM_DTYPE_INT8, 2, {32, 32}, b},
        .scale_b = {QMM_DTYPE_FLOAT, 0, {0}, &one},
        .scale_y = {QMM_DTYPE_FLOAT, 0, {0}, &one},
        .y = {QMM_DTYPE_INT8, 2, {2, 32}, y},
        .order_a = QMM_ORDER_ROW,
        .order_b = QMM_ORDER_ROW,
        .order_y = QMM_ORDER_ROW,
    };
    qmm_backend *be = open_cuda("emulate=1");
    qmm_status st;
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "order") != NULL, "%s", st.message);
    call.order_b = QMM_ORDER_COL;
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_OK, "%s", st.message);
    call.scale_y.data = &zero;
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "scale_Y") != NULL, "%s", st.message);
    call.scale_y.data = &one;
    /* COL32 form: N must be whole 32-column tiles, no bias */
    call.order_a = QMM_ORDER_COL32;
    call.order_b = QMM_ORDER_COL32_2R_4R4;
    call.order_y = QMM_ORDER_COL32;
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_OK, "%s", st.message);
    call.b.dims[1] = 16;
    call.y.dims[1] = 16;
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "% 32") != NULL, "%s", st.message);
    call.b.dims[1] = 32;
    call.y.dims[1] = 32;
    float bias[32] = {0};
    call.bias = (qmm_tensor){QMM_DTYPE_FLOAT, 1, {32}, bias};
    cr_assert_eq(be->qorderedmatmul(be, &call, &st), QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "bias") != NULL, "%s", st.message);
    be->close(be);
}

/* K past one GEMM's chunk (65536), which random problems and the suites never reach: bench
 * checks each shape's answer against the reference before timing it. */
static void long_k_bench(const char *spec)
{
    static const char *types[] = {"u8s8u8", "s8s8s8", "u8u8u8", "s8u8s8"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char *out;
        int rc = qmmcheck(&out,
                          "bench --backend %s --shape 16x70000x16 --shape 5x131073x33 "
                          "--shape 64x65537x64 --types %s --rounds 1 --reps 1",
                          spec, types[t]);
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        cr_assert_eq(count_lines_with(out, " PASSED median="), 3, "%s", out);
        free(out);
    }
}

Test(cuda, emulated_long_k)
{
    long_k_bench("cuda:emulate=1");
}

/* ---- with a device: the real thing ---- */

/* Device slabs (multiples of 256 columns: 1028 and 1030 columns are 2 and 3 slabs of 512 and
 * 256, 260 two of 256 and 16) against the emulation without slabs */
Test(cuda, device_slabs)
{
    if (!have_device())
        cr_skip_test("no CUDA device: the device slabs need a GPU");
    slab_problems("slabs=4", "emulate=1", 42);
    slab_problems("slabs=2", "emulate=1", 43);
}

Test(cuda, device_differential, .init = make_tmp, .fini = remove_tmp, .timeout = 600)
{
    if (!have_device())
        cr_skip_test("no CUDA device: the device differential needs a GPU");
    char *out;
    int rc = qmmcheck(&out, "run --backend cuda --vectors vectors");
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "failed:0 ") != NULL, "%s", out);
    free(out);
    rc = qmmcheck(&out,
                  "diff --backend reference --backend cuda --seed 12 --count 3000 --quiet "
                  "--out '%s/diff'",
                  tmpdir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    free(out);
    long_k_bench("cuda");
}
