/* tests/test_profiles.c — the semantics profiles (reference/profiles.c), the harness's use of
 * them (expectations, "got matches" detail, --profile) and `qmmcheck fingerprint`.
 * Every expected value is worked out by hand in the comment next to it; Orion's own published
 * examples are reproduced exactly. Assumes a little-endian host, as the tensor format does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/invoke/backends.h"
#include "tests/tensor_support.h"
#include "harness/judge/compare.h"
#include "harness/judge/expect.h"
#include "harness/judge/judge.h"
#include "harness/run/fingerprint.h"
#include "harness/io/onnx_io.h"
#include "harness/base/strbuf.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

#define U8 QMM_DTYPE_UINT8
#define S8 QMM_DTYPE_INT8
#define F32 QMM_DTYPE_FLOAT
#define F16 QMM_DTYPE_FLOAT16
#define BF16 QMM_DTYPE_BFLOAT16

#define SPEC QMM_PROFILE_SPEC
#define ONNX QMM_PROFILE_ONNX_REF
#define ORT QMM_PROFILE_ORT_FP32
#define ORION QMM_PROFILE_ORION_FP16X16

/* ---- building problems ---- */

/* A QLinearMatMul with a, b, y of type q and per-tensor parameters; owns its buffers. */
typedef struct prob {
    unsigned char *a, *b, *y;
    unsigned char s[3][4];
    unsigned char z[3];
    qmm_call call;
} prob;

static qmm_tensor scalar(int32_t dtype, void *data)
{
    qmm_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.data = data;
    return t;
}

static void put_scale(unsigned char *dst, int32_t dtype, double v)
{
    uint32_t bits = qmm_scale_encode(dtype, v);
    cr_assert_eq(qmm_round_to_scale_type(dtype, v), v, "scale %.17g is not a %d value", v, dtype);
    for (size_t k = 0; k < qmm_dtype_size(dtype); k++)
        dst[k] = (unsigned char)(bits >> (8 * k));
}

/* dims: rank, then a's dims, then b's dims. a, b: element values (NULL: all `fill`). */
static void prob_init(prob *p, int32_t q, int32_t sdt, int rank, const int64_t *adims,
                      const int64_t *bdims, const int *a, const int *b, int fill, double sa,
                      double sb, double sy, int za, int zb, int zy)
{
    memset(p, 0, sizeof *p);
    qmm_qlinearmatmul *c = &p->call.u.qlinearmatmul;
    p->call.op = QMM_OP_QLINEARMATMUL;
    c->opset = sdt == F32 ? 10 : 21;
    c->a.dtype = c->b.dtype = q;
    c->a.rank = c->b.rank = rank;
    memcpy(c->a.dims, adims, (size_t)rank * sizeof *adims);
    memcpy(c->b.dims, bdims, (size_t)rank * sizeof *bdims);
    int64_t na = qmm_tensor_numel(&c->a), nb = qmm_tensor_numel(&c->b);
    p->a = malloc((size_t)na);
    p->b = malloc((size_t)nb);
    cr_assert(p->a && p->b);
    for (int64_t i = 0; i < na; i++)
        p->a[i] = (unsigned char)((a ? a[i] : fill) & 0xff);
    for (int64_t i = 0; i < nb; i++)
        p->b[i] = (unsigned char)((b ? b[i] : fill) & 0xff);
    c->a.data = p->a;
    c->b.data = p->b;
    put_scale(p->s[0], sdt, sa);
    put_scale(p->s[1], sdt, sb);
    put_scale(p->s[2], sdt, sy);
    p->z[0] = (unsigned char)(za & 0xff);
    p->z[1] = (unsigned char)(zb & 0xff);
    p->z[2] = (unsigned char)(zy & 0xff);
    c->a_scale = scalar(sdt, p->s[0]);
    c->b_scale = scalar(sdt, p->s[1]);
    c->y_scale = scalar(sdt, p->s[2]);
    c->a_zero_point = scalar(q, &p->z[0]);
    c->b_zero_point = scalar(q, &p->z[1]);
    c->y_zero_point = scalar(q, &p->z[2]);
    qmm_geometry g;
    qmm_status st;
    cr_assert_eq(qmm_matmul_geometry(&c->a, &c->b, &g, &st), QMM_OK, "%s", st.message);
    c->y.dtype = q;
    c->y.rank = g.y_rank;
    memcpy(c->y.dims, g.y_dims, sizeof c->y.dims);
    p->y = malloc((size_t)(g.batch * g.m * g.n) + 1);
    cr_assert(p->y);
    c->y.data = p->y;
}

/* A 1x1 problem: a = [[av]], b = [[bv]]. */
static void prob_1x1(prob *p, int32_t q, int32_t sdt, int av, int bv, double sa, double sb,
                     double sy, int za, int zb, int zy)
{
    const int64_t d[2] = {1, 1};
    prob_init(p, q, sdt, 2, d, d, (int[]){av}, (int[]){bv}, 0, sa, sb, sy, za, zb, zy);
}

static void prob_free(prob *p)
{
    free(p->a);
    free(p->b);
    free(p->y);
}

/* Element i of y as an integer of y's type. */
static int y_at(const prob *p, int64_t i)
{
    unsigned v = p->y[i];
    if (p->call.u.qlinearmatmul.y.dtype == S8)
        return v >= 128 ? (int)v - 256 : (int)v;
    return (int)v;
}

static qmm_status_code run_profile(prob *p, qmm_profile pr, qmm_status *st)
{
    memset(p->y, 0xa5, 1);
    return qmm_ref_compute_profile(&p->call, pr, st);
}

/* Computes element 0 under `pr`, asserting OK. */
static int one(prob *p, qmm_profile pr)
{
    qmm_status st;
    qmm_status_code rc = run_profile(p, pr, &st);
    cr_assert_eq(rc, QMM_OK, "%s: %s", qmm_profile_name(pr), st.message);
    cr_assert_str_empty(st.message);
    return y_at(p, 0);
}

/* Expects element 0 under spec, onnx-ref, ort-fp32 and (unless orion < -1000) orion. */
static void expect4(prob *p, int spec, int onnx, int ort, int orion)
{
    cr_expect_eq(one(p, SPEC), spec, "spec");
    cr_expect_eq(one(p, ONNX), onnx, "onnx-ref");
    cr_expect_eq(one(p, ORT), ort, "ort-fp32");
    if (orion > -1000)
        cr_expect_eq(one(p, ORION), orion, "orion-fp16x16");
}

/* The 1x1 problem prob_1x1 builds from these arguments, expected to give want[0..3] under
 * spec, onnx-ref, ort-fp32 and orion (as expect4). */
static void expect_1x1(int32_t q, int32_t sdt, int av, int bv, double sa, double sb, double sy,
                       int za, int zb, int zy, const int want[4])
{
    prob p;
    prob_1x1(&p, q, sdt, av, bv, sa, sb, sy, za, zb, zy);
    expect4(&p, want[0], want[1], want[2], want[3]);
    prob_free(&p);
}

/* Expects `code` under `pr` with every needle in the message. */
static void expect_fail(prob *p, qmm_profile pr, qmm_status_code code, const char *n1,
                        const char *n2)
{
    qmm_status st;
    qmm_status_code rc = run_profile(p, pr, &st);
    cr_expect_eq(rc, code, "rc %d: %s", (int)rc, st.message);
    cr_expect_eq(st.code, code);
    cr_expect(strstr(st.message, n1) != NULL, "'%s' lacks '%s'", st.message, n1);
    if (n2)
        cr_expect(strstr(st.message, n2) != NULL, "'%s' lacks '%s'", st.message, n2);
}

/* 7942963 * 2^-18 = 30.29999923706055, a float32 (23 significant bits). */
#define NEAR (7942963.0 / 262144.0)

/* ---- names ---- */

Test(profiles, names_round_trip_and_match_the_harness_list)
{
    cr_assert(qmm_profile_count() >= 4 && qmm_profile_count() <= QMM_PROFILE_MAX);
    const char *named[] = {[QMM_PROFILE_SPEC] = "spec", [QMM_PROFILE_ONNX_REF] = "onnx-ref",
                           [QMM_PROFILE_ORT_FP32] = "ort-fp32",
                           [QMM_PROFILE_ORION_FP16X16] = "orion-fp16x16"};
    for (int i = 0; i < 4; i++)
        cr_expect_str_eq(qmm_profile_name((qmm_profile)i), named[i], "enumerator %d", i);
    for (int n = 0; n < qmm_profile_count(); n++) {
        const char *name = qmm_profile_name((qmm_profile)n);
        qmm_profile p;
        cr_assert(name && qmm_profile_from_name(name, &p), "profile %d", n);
        cr_expect_eq((int)p, n, "%s", name);
        cr_expect(qh_profile_known(name), "%s", name);
        for (int m = 0; m < n; m++)
            cr_expect_str_neq(qmm_profile_name((qmm_profile)m), name, "two rows named %s", name);
    }
    qmm_profile p;
    cr_expect(!qmm_profile_from_name("onnx", &p));
    cr_expect(!qmm_profile_from_name("", &p));
    cr_expect(!qh_profile_known("nonsense"));
    cr_expect_null(qmm_profile_name((qmm_profile)qmm_profile_count()));
    cr_expect_null(qmm_profile_name((qmm_profile)-1));
}

/* ---- rounding to the scale types ---- */

Test(profiles, float16_rounding_is_rne_with_subnormals_and_overflow)
{
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even mantissa, 1 */
    cr_expect_eq(qmm_round_to_scale_type(F16, 1.0 + 0x1p-11), 1.0);
    /* 1 + 3*2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even) */
    cr_expect_eq(qmm_round_to_scale_type(F16, 1.0 + 3 * 0x1p-11), 1.0 + 0x1p-9);
    cr_expect_eq(qmm_round_to_scale_type(F16, 1.0 + 0x1p-11 + 0x1p-30), 1.0 + 0x1p-10);
    cr_expect_eq(qmm_round_to_scale_type(F16, -(1.0 + 3 * 0x1p-11)), -(1.0 + 0x1p-9));
    cr_expect_eq(qmm_round_to_scale_type(F16, 65504.0), 65504.0);
    /* 65519.99 rounds down to 65504; 65520 is the tie with 65536, which overflows */
    cr_expect_eq(qmm_round_to_scale_type(F16, 65519.99), 65504.0);
    cr_expect(isinf(qmm_round_to_scale_type(F16, 65520.0)));
    /* subnormals: quantum 2^-24; 2^-25 ties to 0, 3*2^-25 ties to 2^-23 */
    cr_expect_eq(qmm_round_to_scale_type(F16, 0x1p-25), 0.0);
    cr_expect_eq(qmm_round_to_scale_type(F16, 3 * 0x1p-25), 0x1p-23);
    cr_expect_eq(qmm_round_to_scale_type(F16, 0x1p-24), 0x1p-24);
    cr_expect_eq(qmm_scale_encode(F16, 1.0), 0x3c00u);
    cr_expect_eq(qmm_scale_encode(F16, -2.0), 0xc000u);
    cr_expect_eq(qmm_scale_encode(F16, 65504.0), 0x7bffu);
    cr_expect_eq(qmm_scale_encode(F16, 1e6), 0x7c00u);
    cr_expect_eq(qmm_scale_encode(F16, 0x1p-24), 0x0001u);
    cr_expect_eq(qmm_scale_encode(F16, 0x1p-14), 0x0400u);
    cr_expect_eq(qmm_scale_encode(F16, 1.0 / 3.0), 0x3555u); /* 0.333251953125 */
}

Test(profiles, bfloat16_and_float32_rounding)
{
    cr_expect_eq(qmm_round_to_scale_type(BF16, 1.0 + 0x1p-8), 1.0);
    cr_expect_eq(qmm_round_to_scale_type(BF16, 1.0 + 3 * 0x1p-8), 1.0 + 0x1p-6);
    cr_expect_eq(qmm_scale_encode(BF16, 1.0), 0x3f80u);
    cr_expect_eq(qmm_scale_encode(BF16, 1.0 + 3 * 0x1p-8), 0x3f82u);
    cr_expect_eq(qmm_round_to_scale_type(F32, 1.0 + 0x1p-24), 1.0);
    cr_expect_eq(qmm_round_to_scale_type(F32, 1.0 + 3 * 0x1p-24), 1.0 + 0x1p-22);
    cr_expect_eq(qmm_round_to_scale_type(F32, 0x1p-150), 0.0);         /* ties to 0 */
    cr_expect_eq(qmm_round_to_scale_type(F32, 3 * 0x1p-150), 0x1p-148); /* ties to even */
    cr_expect(isinf(qmm_round_to_scale_type(F32, 0x1p128)));
    cr_expect_eq(qmm_scale_encode(F32, 1.0), 0x3f800000u);
    cr_expect(isnan(qmm_round_to_scale_type(U8, 1.0)));
}

/* ---- the float profiles, hand-computed ---- */

Test(profiles, tie_with_odd_zero_point_onnx_ref_adds_first)
{
    /* acc 1 * 0.5 = 0.5, zy 1: spec RNE(0.5) + 1 = 1; onnx-ref rint(0.5 + 1) = 2;
     * ort-fp32 nearbyintf(0.5) + 1 = 1 */
    expect_1x1(U8, F32, 1, 1, 0.5, 1.0, 1.0, 0, 0, 1, (const int[]){1, 2, 1, -9999});
    /* int8, acc -1: -0.5 + 1: spec RNE(-0.5) + 1 = 1; onnx-ref rint(0.5) = 0; ort 1;
     * orion: -32768 + 65536 = 0.5 truncated = 0 */
    expect_1x1(S8, F32, -1, 1, 0.5, 1.0, 1.0, 0, 0, 1, (const int[]){1, 0, 1, 0});
    /* zy 3 with acc 3: 1.5 + 3: spec 2 + 3 = 5; onnx-ref rint(4.5) = 4; ort 5; orion 4 */
    expect_1x1(S8, F32, 3, 1, 0.5, 1.0, 1.0, 0, 0, 3, (const int[]){5, 4, 5, 4});
    /* an even zero point agrees: 1.5 + 2 -> spec 4, onnx-ref rint(3.5) = 4; orion
     * trunc(3.5) = 3 */
    expect_1x1(S8, F32, 3, 1, 0.5, 1.0, 1.0, 0, 0, 2, (const int[]){4, 4, 4, 3});
}

Test(profiles, ort_fp32_product_near_tie)
{
    /* acc 5, m = NEAR exactly (sb = sy = 1): exact 5 * NEAR = 151.5 - 2^-18 -> 151 for spec
     * and for onnx-ref (exact in double). ort-fp32: float32 has ulp 2^-16 at 151, so the
     * product rounds to 151.5, and nearbyintf ties to even: 152. */
    expect_1x1(U8, F32, 5, 1, NEAR, 1.0, 1.0, 0, 0, 0, (const int[]){151, 151, 152, -9999});
}

Test(profiles, ort_fp32_product_near_tie_int8)
{
    /* 5 * (10643046 * 2^-19) = 101.5 - 2^-18: float32 (ulp 2^-17 at 101) has a tie there and
     * takes the even 101.5, then 102. spec, onnx-ref: 101. orion: sa encodes as
     * trunc(1330380.75) = 1330380, times 5 = 6651900 = 101.49993 -> 101 */
    expect_1x1(S8, F32, 5, 1, 10643046.0 / 524288.0, 1.0, 1.0, 0, 0, 0,
               (const int[]){101, 101, 102, 101});
}

Test(profiles, float32_multiplier_near_tie)
{
    /* sa * sb = 5 * NEAR = 151.5 - 2^-18, which float32 rounds to 151.5: both float
     * multipliers are 151.5, acc 1: onnx-ref rint(151.5) = 152, ort 152; spec 151 */
    expect_1x1(U8, F32, 1, 1, 5.0, NEAR, 1.0, 0, 0, 0, (const int[]){151, 152, 152, -9999});
}

Test(profiles, ort_fp32_rounds_acc_past_2_24)
{
    /* K = 263: 261 * 255*255 + 48*47 + 6*7 = 16973823 = 129.5 * 2^17 - 1 (odd, > 2^24).
     * float(acc) is 16973824 (the tie goes to the even mantissa), times 2^-17 = 129.5 -> 130
     * under ort-fp32; spec and onnx-ref: 129.4999924 -> 129 */
    int a[263], b[263];
    for (int k = 0; k < 263; k++)
        a[k] = b[k] = 255;
    a[261] = 48;
    b[261] = 47;
    a[262] = 6;
    b[262] = 7;
    prob p;
    prob_init(&p, U8, F32, 2, (int64_t[]){1, 263}, (int64_t[]){263, 1}, a, b, 0, 0x1p-17, 1.0,
              1.0, 0, 0, 0);
    expect4(&p, 129, 129, 130, -9999);
    qmm_ref_element e;
    qmm_status st;
    cr_assert_eq(qmm_ref_explain(&p.call, 0, &e, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(e.acc, 16973823);
    prob_free(&p);
}

Test(profiles, float_profiles_wrap_the_int32_accumulator)
{
    /* K = 33026 of 255*255: acc 2147515650 > INT32_MAX, wrapped -2147451646. Times 2^-24:
     * exact 128.0019 -> 128 (spec); wrapped -127.998 -> clamps to 0, which spec also accepts
     * (y_wrapped) and onnx-ref and ort-fp32 give (ort: float(wrapped) = -2147451648). */
    prob p;
    prob_init(&p, U8, F32, 2, (int64_t[]){1, 33026}, (int64_t[]){33026, 1}, NULL, NULL, 255,
              0x1p-24, 1.0, 1.0, 0, 0, 0);
    expect4(&p, 128, 0, 0, -9999);
    unsigned char w = 0x5a;
    qmm_tensor yw = p.call.u.qlinearmatmul.y;
    yw.data = &w;
    int overflow = 0;
    qmm_status st;
    cr_assert_eq(qmm_ref_compute(&p.call, &yw, &overflow, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(overflow, 1);
    cr_expect_eq(w, 0);
    prob_free(&p);
}

Test(profiles, onnx_ref_multiplier_in_float16_and_bfloat16)
{
    /* float16: 3 * 3.83203125 = 11.49609375, halfway between float16 neighbours 11.4921875
     * and 11.5 (ulp 2^-7); ties to the even one, 11.5, and rint(11.5) = 12. spec: 11;
     * ort-fp32 (float32 holds 11.49609375 exactly): 11; orion: 753408 / 65536 -> 11 */
    expect_1x1(S8, F16, 1, 1, 3.0, 3.83203125, 1.0, 0, 0, 0, (const int[]){11, 12, 11, 11});
    /* bfloat16: 3 * 3.15625 = 9.46875, halfway between 9.4375 and 9.5 (ulp 2^-4); to 9.5,
     * then rint(9.5) = 10. spec and ort-fp32: 9 */
    expect_1x1(U8, BF16, 1, 1, 3.0, 3.15625, 1.0, 0, 0, 0, (const int[]){9, 10, 9, -9999});
}

Test(profiles, multiplier_overflowing_the_scale_type)
{
    /* float16 300 * 300 = 90000 overflows to inf: acc 1 -> +inf -> 255 (spec: 90000 -> 255) */
    expect_1x1(U8, F16, 1, 1, 300.0, 300.0, 1.0, 0, 0, 7, (const int[]){255, 255, 255, -9999});
    /* acc 0: 0 * inf is NaN, which numpy's cast turns into 0; spec and ort (finite float32
     * multiplier) give zy = 7 */
    expect_1x1(U8, F16, 0, 1, 300.0, 300.0, 1.0, 0, 0, 7, (const int[]){7, 0, 7, -9999});
    /* float32 1e30f * 1e30f overflows too: acc 0 under ort-fp32 is NaN, which MLAS's SSE2
     * clamp (MAXPS, MINPS) sends to qmin - zy, so qmin = 0; onnx-ref 0 (NaN cast); spec 7 */
    expect_1x1(U8, F32, 0, 1, 1e30f, 1e30f, 1.0, 0, 0, 7, (const int[]){7, 0, 0, -9999});
    /* int8: ort-fp32 -128, onnx-ref 0, spec zy = 7 */
    expect_1x1(S8, F32, 0, 1, 1e30f, 1e30f, 1.0, 0, 0, 7, (const int[]){7, 0, -128, -9999});
}

Test(profiles, every_profile_saturates)
{
    /* 200 * 200 = 40000 -> 255 everywhere (onnx < 1.22 would wrap to 64) */
    expect_1x1(U8, F32, 200, 200, 1.0, 1.0, 1.0, 0, 0, 0, (const int[]){255, 255, 255, -9999});
    /* int8 100 * 100 -> 127, Orion too (655360000 in Q16.16 fits, clamps to 127) */
    expect_1x1(S8, F32, 100, 100, 1.0, 1.0, 1.0, 0, 0, 0, (const int[]){127, 127, 127, 127});
}

Test(profiles, matmulinteger_is_spec_except_orion)
{
    uint8_t a[2] = {200, 3}, b[2] = {100, 7};
    int32_t y = 0;
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_MATMULINTEGER;
    c.u.matmulinteger.a = (qmm_tensor){.dtype = U8, .rank = 2, .dims = {1, 2}, .data = a};
    c.u.matmulinteger.b = (qmm_tensor){.dtype = U8, .rank = 2, .dims = {2, 1}, .data = b};
    c.u.matmulinteger.y = (qmm_tensor){.dtype = QMM_DTYPE_INT32, .rank = 2, .dims = {1, 1},
                                       .data = &y};
    for (int p = 0; p < qmm_profile_count(); p++) {
        qmm_status st;
        y = 0;
        qmm_status_code rc = qmm_ref_compute_profile(&c, (qmm_profile)p, &st);
        const char *name = qmm_profile_name((qmm_profile)p);
        if (p == ORION || !strcmp(name, "gemmlowp") || !strncmp(name, "onednn", 6)) {
            /* no counterpart (Orion, gemmlowp), u8 weights (oneDNN 2.6) */
            cr_expect_eq(rc, QMM_UNSUPPORTED);
            cr_expect(strstr(st.message, "MatMulInteger") != NULL || strstr(st.message, "int8 b"),
                      "%s", st.message);
        } else {
            cr_expect_eq(rc, QMM_OK, "%s", st.message);
            cr_expect_eq(y, 200 * 100 + 3 * 7);
        }
    }
}

Test(profiles, validation_is_the_same_for_every_profile)
{
    prob p;
    prob_1x1(&p, U8, F32, 1, 1, 1.0, 1.0, 1.0, 0, 0, 0);
    float bad = -1.0f;
    p.call.u.qlinearmatmul.b_scale.data = &bad;
    for (int pr = 0; pr < qmm_profile_count(); pr++)
        expect_fail(&p, (qmm_profile)pr, QMM_INVALID_ARGUMENT, "b_scale", NULL);
    cr_expect_eq(qmm_ref_compute_profile(&p.call, (qmm_profile)qmm_profile_count(), NULL),
                 QMM_INVALID_ARGUMENT);
    prob_free(&p);
}

/* ---- orion-fp16x16 ---- */

Test(profiles, orion_published_2d_example)
{
    /* Orion's documentation: magnitudes 2000, 2500, 3000 (scales m / 65536), zero points 0.
     * y[0,0]: deq a = 2000 a, deq b = 2500 b; terms trunc(5e6 * ab / 65536) for ab =
     * 2, 16, 42, 80: 152 + 1220 + 3204 + 6103 = 10679; trunc(10679 * 65536 / 3000) = 233283,
     * 3.56 truncated: 3 (the exact value, 140 * 2000 * 2500 / 3000 / 65536 = 3.56, gives 4) */
    static const int a[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const int b[] = {2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24};
    static const int want[] = {3, 4, 4, 8, 9, 10};
    prob p;
    prob_init(&p, S8, F32, 2, (int64_t[]){2, 4}, (int64_t[]){4, 3}, a, b, 0, 2000.0 / 65536,
              2500.0 / 65536, 3000.0 / 65536, 0, 0, 0);
    qmm_status st;
    cr_assert_eq(run_profile(&p, ORION, &st), QMM_OK, "%s", st.message);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(y_at(&p, i), want[i], "y[%d] = %d, want %d", i, y_at(&p, i), want[i]);
    cr_expect_eq(one(&p, SPEC), 4);
    prob_free(&p);
}

Test(profiles, orion_published_3d_example)
{
    /* magnitudes 20000, 25000, 30000; a [2,2,3], b [2,3,2] (the same matrix twice).
     * y[0,0,0]: terms trunc(5e8 * ab / 65536) for ab = 2, 12, 20: 15258 + 91552 + 152587 =
     * 259397; trunc(259397 * 65536 / 30000) = 566659 -> 8.65 -> 8 */
    static const int a[] = {-1, -2, -2, -3, -4, -4, -5, -6, -6, -7, -8, -8};
    static const int b[] = {-2, -4, -6, -8, -10, -12, -2, -4, -6, -8, -10, -12};
    static const int want[] = {8, 11, 17, 23, 26, 35, 36, 47};
    prob p;
    prob_init(&p, S8, F32, 3, (int64_t[]){2, 2, 3}, (int64_t[]){2, 3, 2}, a, b, 0,
              20000.0 / 65536, 25000.0 / 65536, 30000.0 / 65536, 0, 0, 0);
    qmm_status st;
    cr_assert_eq(run_profile(&p, ORION, &st), QMM_OK, "%s", st.message);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(y_at(&p, i), want[i], "y[%d] = %d, want %d", i, y_at(&p, i), want[i]);
    prob_free(&p);
}

Test(profiles, orion_truncates_toward_zero_with_zero_points)
{
    /* -27 * 2^-4 = -1.6875: spec -2; orion: deq a = -27 * 4096 = -110592, times deq b 65536
     * -> -110592, / 65536 -> -110592 = -1.6875, truncated -1 */
    expect_1x1(S8, F32, -27, 1, 0x1p-4, 1.0, 1.0, 0, 0, 0, (const int[]){-2, -2, -2, -1});
    /* zero points: (7 - 2)(5 - 3) = 10, * 0.3 (encoded trunc(0.3 * 65536) = 19660, the float
     * 0.3f is 0.300000011920928955) -> orion: deq a = 5 * 19660 = 98300, deq b = 2 * 65536;
     * product 196600 / 65536 -> 196600 = 2.9998..; + zy -4 -> -1.0001.. -> -1;
     * spec: 3.0000001 -> 3 - 4 = -1; all agree here: -1 */
    expect_1x1(S8, F32, 7, 5, 0.3f, 1.0, 1.0, 2, 3, -4, (const int[]){-1, -1, -1, -1});
    /* same with zy +4: orion 2.9998 + 4 = 6.9998 -> 6; spec 3 + 4 = 7 */
    expect_1x1(S8, F32, 7, 5, 0.3f, 1.0, 1.0, 2, 3, 4, (const int[]){7, 7, 7, 6});
}

Test(profiles, orion_error_rules)
{
    prob p;
    /* an input element -128, in a, b or a zero point */
    prob_1x1(&p, S8, F32, -128, 1, 1.0, 1.0, 1.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "a[0] is -128", "panics");
    cr_expect_eq(one(&p, SPEC), -128);
    prob_free(&p);
    prob_1x1(&p, S8, F32, 1, -128, 1.0, 1.0, 1.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "b[0] is -128", NULL);
    prob_free(&p);
    prob_1x1(&p, S8, F32, 1, 1, 1.0, 1.0, 1.0, 0, 0, -128);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "y_zero_point[0] is -128", NULL);
    prob_free(&p);
    /* a result clamped to -128: -100 * 100 */
    prob_1x1(&p, S8, F32, -100, 100, 1.0, 1.0, 1.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "clamps to -128", NULL);
    prob_free(&p);
    /* negative results that do not reach -128 are fine: -127 * 0.5 = -63.5 truncates to
     * -63 (spec: RNE(-63.5) = -64) */
    expect_1x1(S8, F32, -127, 1, 0.5, 1.0, 1.0, 0, 0, 0, (const int[]){-64, -64, -64, -63});
    /* magnitude: a scale of 65536 encodes as 2^32 */
    prob_1x1(&p, S8, F32, 1, 1, 65536.0, 0x1p-20, 1.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "a_scale", "2^32");
    prob_free(&p);
    /* ... while 65535.5 encodes as 4294934528 < 2^32; deq b = trunc(65536 * 1 / 65536) = 1
     * (sb = 2^-16), product trunc(4294934528 / 65536) = 65535 = 0.99998 -> 0 */
    prob_1x1(&p, S8, F32, 1, 1, 65535.5, 0x1p-16, 1.0, 0, 0, 0);
    cr_expect_eq(one(&p, ORION), 0);
    cr_expect_eq(one(&p, SPEC), 1); /* 65535.5 / 65536 = 0.99999 -> 1 */
    prob_free(&p);
    /* magnitude: a dequantized value, 100 * 60000 */
    prob_1x1(&p, S8, F32, 100, 1, 60000.0, 0x1p-20, 1.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "dequantized a", "2^32");
    prob_free(&p);
    /* magnitude: a product, 250 * 250 = 62500 in each of two terms sums past 65536 */
    prob_init(&p, S8, F32, 2, (int64_t[]){1, 2}, (int64_t[]){2, 1}, (int[]){125, 125},
              (int[]){125, 125}, 0, 2.0, 2.0, 1024.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "running sum", "2^32");
    cr_expect_eq(one(&p, SPEC), 122); /* 2 * 62500 / 1024 = 122.07 */
    prob_free(&p);
    /* y_scale encoding as 0: 2^-17 * 65536 = 0.5 -> 0 */
    prob_1x1(&p, S8, F32, 1, 1, 1.0, 1.0, 0x1p-17, 0, 0, 0);
    expect_fail(&p, ORION, QMM_INVALID_ARGUMENT, "y_scale[0] encodes as 0", NULL);
    prob_free(&p);
    /* int8 only */
    prob_1x1(&p, U8, F32, 1, 1, 1.0, 1.0, 1.0, 0, 0, 0);
    expect_fail(&p, ORION, QMM_UNSUPPORTED, "int8 only", NULL);
    prob_free(&p);
}

/* ---- the harness: expectations and mismatch detail ---- */

/* MatMulInteger y = the accumulator, so it shows the accumulation model bare. */
static int32_t mmi_acc(qmm_profile pr, int32_t adt, const uint8_t *a, int32_t bdt,
                       const uint8_t *b, int k, int za, int zb)
{
    uint8_t zav = (uint8_t)za, zbv = (uint8_t)zb;
    int32_t y = 0;
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_MATMULINTEGER;
    c.u.matmulinteger.a = mk(adt, (void *)a, 2, 1, k);
    c.u.matmulinteger.b = mk(bdt, (void *)b, 2, k, 1);
    c.u.matmulinteger.a_zero_point = mk(adt, &zav, 0);
    c.u.matmulinteger.b_zero_point = mk(bdt, &zbv, 0);
    c.u.matmulinteger.y = mk(QMM_DTYPE_INT32, &y, 2, 1, 1);
    qmm_status st;
    cr_assert_eq(qmm_ref_compute_profile(&c, pr, &st), QMM_OK, "%s", st.message);
    return y;
}

static int32_t mmi_named(const char *name, int32_t adt, const uint8_t *a, int32_t bdt,
                         const uint8_t *b, int k, int za, int zb)
{
    qmm_profile p;
    cr_assert(qmm_profile_from_name(name, &p), "%s", name);
    return mmi_acc(p, adt, a, bdt, b, k, za, zb);
}

Test(profiles, pairsat16_saturates_adjacent_u8s8_pairs_and_corrects_zero_points_exactly)
{
    qmm_profile ps, ort;
    cr_assert(qmm_profile_from_name("ort-fp32+pairsat16", &ps));
    cr_assert(qmm_profile_from_name("ort-fp32", &ort));
    const uint8_t a255[4] = {255, 255, 255, 255};
    const uint8_t b127[4] = {127, 127, 127, 127}, bm128[4] = {0x80, 0x80, 0x80, 0x80};
    const uint8_t balt[4] = {127, 0x80, 127, 0x80};
    /* 255*127*2 = 64770 -> 32767 per pair; 255*-128*2 = -65280 -> -32768 */
    cr_expect_eq(mmi_acc(ps, U8, a255, S8, b127, 2, 0, 0), 32767);
    cr_expect_eq(mmi_acc(ps, U8, a255, S8, bm128, 4, 0, 0), -65536);
    cr_expect_eq(mmi_acc(ort, U8, a255, S8, b127, 2, 0, 0), 64770, "exact without the model");
    /* alternating signs cancel inside a pair: 255*127 - 255*128 = -255, no saturation */
    cr_expect_eq(mmi_acc(ps, U8, a255, S8, balt, 4, 0, 0), -510);
    /* odd K: the last product stands alone: 32767 + 255*127 */
    cr_expect_eq(mmi_acc(ps, U8, a255, S8, b127, 3, 0, 0), 32767 + 32385);
    /* zero points are corrected exactly after the saturated raw sum:
     * raw 32767 - zb*sum(a) - za*sum(b) + K*za*zb with za = 5, zb = 3 */
    cr_expect_eq(mmi_acc(ps, U8, a255, S8, b127, 2, 5, 3), 32767 - 3 * 510 - 5 * 254 + 2 * 15);
    /* other type pairs accumulate exactly under the model */
    cr_expect_eq(mmi_acc(ps, U8, a255, U8, a255, 2, 0, 0), 2 * 255 * 255);
    cr_expect_eq(mmi_acc(ps, S8, bm128, S8, bm128, 2, 0, 0), 2 * 128 * 128);
    /* QLinearMatMul: the same accumulator, then ort-fp32's requantization */
    prob p;
    prob_1x1(&p, U8, F32, 255, 1, 1.0, 1.0, 1.0, 0, 0, 0);
    cr_expect_eq(one(&p, ps), 255, "a 1x1 has no pair to saturate");
    prob_free(&p);
}

/* ---- composition: REQUANTIZATION+ACCUMULATION ---- */

Test(profiles, every_combination_is_a_profile_or_refused_with_its_reason)
{
    const char *req, *acc, *what;
    int named = 0, refused = 0, aliases = 0;
    for (int r = 0; qmm_profile_part(QMM_PROFILE_PART_REQUANTIZATION, r, &req, &what); r++)
        for (int a = 0; qmm_profile_part(QMM_PROFILE_PART_ACCUMULATION, a, &acc, &what); a++) {
            char name[128], why[512] = "";
            snprintf(name, sizeof name, a ? "%s+%s" : "%s", req, acc);
            cr_expect(what[0] != '\0', "%s has no summary", name);
            qmm_profile p;
            int is = qmm_profile_from_name(name, &p);
            cr_expect_eq(qmm_profile_why_not(name, why, sizeof why), !is, "%s: %s", name, why);
            if (is && strcmp(qmm_profile_name(p), name) != 0) {
                /* a name kept from before composition: it means another combination */
                const char *alias, *means;
                cr_expect(qmm_profile_alias(aliases, &alias, &means) && !strcmp(alias, name) &&
                              !strcmp(means, qmm_profile_name(p)),
                          "%s", name);
                aliases++;
            } else if (is) {
                named++;
                cr_expect_str_eq(qmm_profile_name(p), name);
                /* the bases come first, in the order of the requantization rows */
                cr_expect_eq((int)qmm_profile_base(p), r, "%s", name);
                cr_expect_eq((int)p == r, a == 0, "%s", name);
            } else {
                refused++;
                cr_expect(strncmp(why, name, strlen(name)) == 0 && strlen(why) > strlen(name) + 10,
                          "%s refused without a reason: %s", name, why);
            }
        }
    cr_expect_eq(named, qmm_profile_count());
    /* Orion and gemmlowp accumulate their own way; onednn-fp32+pairsat16 keeps its old
     * meaning, so its literal combination is refused */
    char why[512];
    cr_expect(qmm_profile_why_not("orion-fp16x16+sat32", why, sizeof why));
    cr_expect(strstr(why, "Q16.16") != NULL, "%s", why);
    cr_expect(qmm_profile_why_not("gemmlowp+pairsat16", why, sizeof why));
    cr_expect(strstr(why, "u8*u8") != NULL, "%s", why);
    cr_expect_eq(refused, 7 * 5, "orion, gemmlowp and the 5 wrong rules with each of the 5 "
                                 "other models");
    cr_expect_eq(aliases, 1);
    /* not names at all: the reason lists the models */
    const char *bad[] = {"ort-fp32+", "+sat32", "ort-fp32+sat32+pairsat16", "ort-fp32+nonsense",
                         "spec+", "Spec", NULL};
    for (int i = 0; bad[i]; i++) {
        qmm_profile p;
        cr_expect(!qmm_profile_from_name(bad[i], &p), "%s", bad[i]);
        cr_expect(qmm_profile_why_not(bad[i], why, sizeof why), "%s", bad[i]);
        cr_expect(strstr(why, "known: spec, onnx-ref") == why && strstr(why, "sat32"), "%s", why);
    }
}

Test(profiles, the_names_from_before_composition_mean_what_they_meant)
{
    qmm_profile old, now, ort_ps, ps;
    cr_assert(qmm_profile_from_name("onednn-fp32+pairsat16", &old));
    cr_assert(qmm_profile_from_name("onednn-fp32+onednn-avx2", &now));
    cr_expect_eq(old, now, "an alias: one profile");
    cr_expect_str_eq(qmm_profile_name(old), "onednn-fp32+onednn-avx2");
    const char *name, *means;
    cr_assert(qmm_profile_alias(0, &name, &means));
    cr_expect_str_eq(name, "onednn-fp32+pairsat16");
    cr_expect_str_eq(means, "onednn-fp32+onednn-avx2");
    cr_expect(!qmm_profile_alias(1, &name, &means));
    /* the other two are REQ+pairsat16, MLAS's unblocked u8·s8 pairs */
    cr_assert(qmm_profile_from_name("ort-fp32+pairsat16", &ort_ps));
    cr_assert(qmm_profile_from_name("onnx-ref+pairsat16", &ps));
    cr_expect_eq(qmm_profile_base(ort_ps), ORT);
    cr_expect_eq(qmm_profile_base(ps), ONNX);
}

/* MatMulInteger u8·s8 [1,k] x [k,1] under `name`. */
static int32_t mmi_named(const char *name, int32_t adt, const uint8_t *a, int32_t bdt,
                         const uint8_t *b, int k, int za, int zb);

Test(profiles, the_k_blocks_tell_onednn_avx2_gemm_from_mlas_pairs)
{
    /* K = 261: oneDNN's AVX2 driver cuts two blocks, 131 and 130, so k = 130 stands alone and
     * k = 131 pairs with 132; MLAS pairs (130, 131). a = 255, b = 127 at 130 and 131, -128 at
     * 132, 0 elsewhere: MLAS sat(255*254) + 255*-128 = 32767 - 32640 = 127; oneDNN 32385 +
     * 255*(127 - 128) = 32130; exact 32385 + 32385 - 32640 = 32130 */
    uint8_t a[261], b[261];
    memset(a, 255, sizeof a);
    memset(b, 0, sizeof b);
    b[130] = b[131] = 127;
    b[132] = 0x80;
    cr_expect_eq(mmi_named("ort-fp32+pairsat16", U8, a, S8, b, 261, 0, 0), 127);
    cr_expect_eq(mmi_named("spec+onednn-avx2-gemm", U8, a, S8, b, 261, 0, 0), 32130);
    cr_expect_eq(mmi_named("onednn-fp32+pairsat16", U8, a, S8, b, 261, 0, 0), 32130);
    cr_expect_eq(mmi_named("spec", U8, a, S8, b, 261, 0, 0), 32130);
}

Test(profiles, sat32_saturates_where_the_default_wraps)
{
    /* K = 33026 of 255*255 = 2147515650: wrapped -2147451646, saturated 2147483647 */
    enum { K = 33026 };
    uint8_t *a = malloc(K);
    cr_assert(a);
    memset(a, 255, K);
    cr_expect_eq(mmi_named("ort-fp32", U8, a, U8, a, K, 0, 0), -2147451646);
    cr_expect_eq(mmi_named("ort-fp32+sat32", U8, a, U8, a, K, 0, 0), INT32_MAX);
    cr_expect_eq(mmi_named("spec+sat32", U8, a, U8, a, K, 0, 0), INT32_MAX);
    /* onednn-avx2 saturates s8 a with a zero point only: u8 a wraps */
    free(a);
    /* s8 a = -128 with a_zero_point 127 against b = 127 with b_zero_point -128: -65025 a term,
     * K = 33026: -2147515650; onednn-avx2 takes the saturating reference GEMM */
    int8_t *sa = malloc(K), *sb = malloc(K);
    cr_assert(sa && sb);
    memset(sa, 0x80, K);
    memset(sb, 127, K);
    cr_expect_eq(mmi_named("onednn-fp32+onednn-avx2", S8, (uint8_t *)sa, S8, (uint8_t *)sb, K,
                           127, -128),
                 INT32_MIN);
    cr_expect_eq(mmi_named("onednn-fp32", S8, (uint8_t *)sa, S8, (uint8_t *)sb, K, 127, -128),
                 2147451646);
    free(sa);
    free(sb);
}

Test(profiles, onednn_avx512_vnni_passes_matmulinteger_through_float32)
{
    /* measured through peers/onednn on Zen 4 (docs/profiles.md): K = 10001 of -127*127 =
     * -161306129, odd and past 2^24: float32 makes it -161306128 */
    enum { K = 10001, K2 = 131073 };
    uint8_t *a = malloc(K2 + 2), *b = malloc(K2 + 2);
    cr_assert(a && b);
    memset(a, 0x81, K); /* -127 */
    memset(b, 127, K);
    cr_expect_eq(mmi_named("spec+onednn-avx512-vnni", S8, a, S8, b, K, 0, 0), -161306128);
    cr_expect_eq(mmi_named("onednn-fp32", S8, a, S8, b, K, 0, 0), -161306129);
    /* ... but only given a zero point (zero or not, a's or b's: oneDNN's zero-point attribute
     * takes that path): without one its int32 is the exact sum (measured 2026-11-29, the
     * first long-K problem diff drew, seed 14 problem 349766: u8s8, K = 2599, -19988175; the
     * profile had said -19988176; vectors/peers/onednn/matmulinteger-int32-exact-without-zero-
     * points) */
    qmm_profile vz;
    cr_assert(qmm_profile_from_name("onednn-fp32+onednn-avx512-vnni", &vz));
    int32_t y = 0;
    uint8_t zero = 0;
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_MATMULINTEGER;
    c.u.matmulinteger.a = mk(S8, a, 2, 1, K);
    c.u.matmulinteger.b = mk(S8, b, 2, K, 1);
    c.u.matmulinteger.y = mk(QMM_DTYPE_INT32, &y, 2, 1, 1);
    qmm_status st;
    cr_assert_eq(qmm_ref_compute_profile(&c, vz, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(y, -161306129, "no zero point: exact");
    c.u.matmulinteger.b_zero_point = mk(S8, &zero, 0);
    cr_assert_eq(qmm_ref_compute_profile(&c, vz, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(y, -161306128, "b's zero point alone: through float32");
    memset(&c.u.matmulinteger.b_zero_point, 0, sizeof c.u.matmulinteger.b_zero_point);
    c.u.matmulinteger.a_zero_point = mk(S8, &zero, 0);
    cr_assert_eq(qmm_ref_compute_profile(&c, vz, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(y, -161306128, "a's zero point alone: through float32");
    /* -128*-128 131071 times, then -128*-127 and -5*-16: 2147483600, whose float32 is 2^31:
     * saturated to 2147483520, the largest float32 below it */
    memset(a, 0x80, K2 + 2);
    memset(b, 0x80, K2 + 2);
    b[K2 - 2] = 0x81;
    a[K2 - 1] = (uint8_t)-5;
    b[K2 - 1] = (uint8_t)-16;
    cr_expect_eq(mmi_named("spec", S8, a, S8, b, K2, 0, 0), 2147483600);
    cr_expect_eq(mmi_named("onednn-fp32+onednn-avx512-vnni", S8, a, S8, b, K2, 0, 0),
                 2147483520);
    /* QLinearMatMul's accumulator is not clamped there (measured: 66, not 65): times
     * 131 * 2^-32, float32 2^31 * m = 65.5 -> 66 */
    prob p;
    int *av = malloc(K2 * sizeof *av), *bv = malloc(K2 * sizeof *bv);
    cr_assert(av && bv);
    for (int k = 0; k < K2; k++) {
        av[k] = (int8_t)a[k];
        bv[k] = (int8_t)b[k];
    }
    prob_init(&p, S8, F32, 2, (int64_t[]){1, K2}, (int64_t[]){K2, 1}, av, bv, 0,
              131.0 * 0x1p-32, 1.0, 1.0, 0, 0, 0);
    qmm_profile vnni, fp32;
    cr_assert(qmm_profile_from_name("onednn-fp32+onednn-avx512-vnni", &vnni));
    cr_assert(qmm_profile_from_name("onednn-fp32", &fp32));
    cr_expect_eq(one(&p, vnni), 66);
    cr_expect_eq(one(&p, fp32), 66);
    cr_expect_eq(one(&p, SPEC), 65, "65.4999985");
    prob_free(&p);
    free(av);
    free(bv);
    free(a);
    free(b);
}

Test(profiles, spec_requantizes_a_modelled_accumulator_exactly)
{
    /* u8 a = 255, 255 against s8 b = 127, 127, a_scale 2^-10: the exact 64770 * 2^-10 =
     * 63.25 -> 63; pair-saturated 32767 * 2^-10 = 31.999 -> 32 under spec+pairsat16 (and
     * ort-fp32+pairsat16, in float32); a float8 call is refused under a combination */
    prob p;
    prob_init(&p, U8, F32, 2, (int64_t[]){1, 2}, (int64_t[]){2, 1}, (int[]){255, 255},
              (int[]){127, 127}, 0, 1.0 / 1024.0, 1.0, 1.0, 0, 0, 0);
    p.call.u.qlinearmatmul.b.dtype = S8;
    p.call.u.qlinearmatmul.b_zero_point.dtype = S8;
    qmm_profile sp, op;
    cr_assert(qmm_profile_from_name("spec+pairsat16", &sp));
    cr_assert(qmm_profile_from_name("ort-fp32+pairsat16", &op));
    cr_expect_eq(one(&p, SPEC), 63);
    cr_expect_eq(one(&p, sp), 32);
    cr_expect_eq(one(&p, op), 32);
    prob_free(&p);
}

Test(profiles, the_simplest_explanation_drops_combinations_whose_base_matches)
{
    qmm_profile ort_sat, onnx_sat;
    cr_assert(qmm_profile_from_name("ort-fp32+sat32", &ort_sat));
    cr_assert(qmm_profile_from_name("onnx-ref+sat32", &onnx_sat));
    qh_profile_set set = QH_PROFILE_BIT(ORT) | QH_PROFILE_BIT(ort_sat) | QH_PROFILE_BIT(onnx_sat);
    cr_expect_eq(qh_profiles_simplest(set), QH_PROFILE_BIT(ORT) | QH_PROFILE_BIT(onnx_sat));
    cr_expect_eq(qh_profiles_simplest(0), 0);
}

/* Which profiles give a wrong answer is the reference's work once per profile (30): on
 * a large output that was minutes (2048^3: 30 x 35 s, `qmmcheck bench` silent the while).
 * Past QH_MATCH_MAX_WORK only the parts holding the kept mismatches are computed, without the
 * profiles whose answer depends on the whole call (orion-fp16x16: a panic anywhere; it sets
 * its whole inputs up for each part), and the text and the report say so, once.
 * s8 128x8192x128 of ones: every element's acc*scale is 0.5 + y's zero point 1: onnx-ref 2,
 * spec and ort-fp32 1. */
static void prob_ties(prob *p, int64_t m, int64_t k, int64_t n)
{
    const int64_t ad[2] = {m, k}, bd[2] = {k, n};
    prob_init(p, S8, F32, 2, ad, bd, NULL, NULL, 1, 0.5 / (double)k, 1.0, 1.0, 0, 0, 1);
}

/* The judge's verdict on `got` (y of p filled with `value`) against e. */
static void judge_filled(prob *p, const qh_expectation *e, int value, qh_verdict *v)
{
    qmm_tensor got = p->call.u.qlinearmatmul.y;
    memset(p->y, value, (size_t)qmm_tensor_numel(&got));
    qh_invocation inv;
    memset(&inv, 0, sizeof inv);
    inv.outcome = QH_RETURNED;
    inv.code = QMM_OK;
    inv.y = got;
    qh_verdict_init(v);
    qh_judge_opts o = {.text = 1, .fill = 0xa5};
    qh_judge(e, &inv, NULL, &o, v);
}

Test(profiles, a_large_output_is_matched_at_its_kept_mismatches_only, .timeout = 60)
{
    prob p;
    prob_ties(&p, 128, 8192, 128);
    qh_expectation e;
    cr_assert_eq(qh_expect(&p.call, "onnx-ref", &e), 0, "%s", e.message);
    cr_assert_eq(e.code, QMM_OK);
    cr_assert_eq(qh_tensor_int(&e.exact, 0), 2);
    qh_verdict v;
    judge_filled(&p, &e, 1, &v); /* what spec gives */
    cr_expect_eq(v.status, QH_FAILED);
    cr_expect_eq(v.errors, 128 * 128);
    cr_assert_eq(v.n_mismatches, QH_COMPARE_KEEP);
    cr_expect(v.mismatches[0].models_known);
    cr_expect(v.mismatches[0].models_kept, "the match was over the kept mismatches only");
    cr_expect(v.mismatches[0].models >> SPEC & 1);
    cr_expect_eq(v.mismatches[0].models >> ONNX & 1, 0);
    cr_expect_eq(v.mismatches[0].models_unjudged, (uint64_t)1 << ORION);
    cr_expect(strstr(v.detail.s, "; got matches (judged at the kept mismatches only: the whole "
                                 "output under every profile is too much work; not compared: "
                                 "orion-fp16x16): spec, ") != NULL,
              "%s", v.detail.s);
    const char *second = strchr(v.detail.s, '\n');
    cr_expect(second && strstr(second, "kept mismatches only") == NULL,
              "the scope once, on the first mismatch: %s", v.detail.s);
    cr_expect(second && strstr(second, "; got matches: spec, ") != NULL, "%s", v.detail.s);
    qh_verdict_free(&v);
    /* from a comparison alone (the fuzz target's path): the same text */
    qmm_tensor got = p.call.u.qlinearmatmul.y;
    qh_compare cmp;
    qh_compare_outputs(&e.exact, NULL, &got, &cmp);
    qh_sb b = {0};
    qh_explain_mismatches(&b, &e, &got, &cmp, 2);
    cr_expect(strstr(b.s, "(judged at the kept mismatches only") != NULL, "%s", b.s);
    qh_sb_free(&b);
    /* one mismatch names no profile (a coincidence), and its line still says the scope */
    memcpy(p.y, e.exact.data, 128 * 128);
    p.y[5] = 1;
    qh_compare_outputs(&e.exact, NULL, &got, &cmp);
    cr_assert_eq(cmp.errors, 1);
    qh_explain_mismatches(&b, &e, &got, &cmp, 2);
    cr_expect(strstr(b.s, "; no profile named (judged at the kept mismatches only: the whole "
                          "output under every profile is too much work; not compared: "
                          "orion-fp16x16)\n") != NULL,
              "%s", b.s);
    qh_sb_free(&b);
    qh_expectation_free(&e);
    prob_free(&p);
}

/* Where even the kept mismatches' parts are too much work (16 elements of K = 2^22 under 30
 * profiles), no profile is compared, and the text says so; the report has no models. */
Test(profiles, an_output_too_long_to_match_even_at_its_mismatches_is_not_matched, .timeout = 60)
{
    prob p;
    prob_ties(&p, 1, (int64_t)1 << 22, 16);
    qh_expectation e;
    cr_assert_eq(qh_expect(&p.call, "onnx-ref", &e), 0, "%s", e.message);
    cr_assert_eq(qh_tensor_int(&e.exact, 0), 2);
    qh_verdict v;
    judge_filled(&p, &e, 1, &v);
    cr_expect_eq(v.errors, 16);
    cr_expect_eq(v.mismatches[0].models_known, 0);
    cr_expect(strstr(v.detail.s, "; the profiles were not compared (their work together, even "
                                 "at the kept mismatches only, is over QH_MATCH_MAX_WORK)\n") !=
                  NULL,
              "%s", v.detail.s);
    cr_expect(strstr(v.detail.s, "got matches") == NULL, "%s", v.detail.s);
    qh_verdict_free(&v);
    qh_expectation_free(&e);
    prob_free(&p);
}

/* DequantizeLinear sums nothing: its work is its elements', not x's last dimension times
 * them (a 512x65536 call was refused as 2.2e12 units, over QH_MAX_WORK). */
Test(profiles, dequantizelinear_work_is_per_element)
{
    size_t n = 512 * 65536;
    int8_t *x = calloc(n, 1);
    float *y = malloc(n * sizeof *y), one = 1.0f;
    cr_assert(x && y);
    qmm_call c;
    qmm_call_init(&c, QMM_OP_DEQUANTIZELINEAR, 21);
    qmm_dequantizelinear *d = &c.u.dequantizelinear;
    d->x = mk(S8, x, 2, 512, 65536);
    d->x_scale = mk(F32, &one, 0);
    d->y = mk(F32, y, 2, 512, 65536);
    d->axis = 1;
    cr_expect_eq(qh_expect_work(&c), (int64_t)n * QH_WORK_PER_ELEMENT);
    char msg[512];
    cr_expect_eq(qh_expect_work_check(&c, msg, sizeof msg), 0, "%s", msg);
    free(x);
    free(y);
}

/* A small output is still matched whole: the text names no scope. */
Test(profiles, a_small_output_is_matched_whole)
{
    prob p;
    const int64_t ad[2] = {4, 64}, bd[2] = {64, 4};
    prob_init(&p, U8, F32, 2, ad, bd, NULL, NULL, 1, 1.0 / 128, 1.0, 1.0, 0, 0, 1);
    qh_expectation e;
    cr_assert_eq(qh_expect(&p.call, "onnx-ref", &e), 0, "%s", e.message);
    cr_assert_eq(qh_tensor_int(&e.exact, 0), 2);
    qmm_tensor got = p.call.u.qlinearmatmul.y;
    memset(p.y, 1, 16);
    qh_compare cmp;
    qh_compare_outputs(&e.exact, NULL, &got, &cmp);
    qh_sb b = {0};
    qh_explain_mismatches(&b, &e, &got, &cmp, 2);
    cr_expect(strstr(b.s, "; got matches: spec") != NULL, "%s", b.s);
    cr_expect(strstr(b.s, "kept mismatches only") == NULL, "%s", b.s);
    qh_sb_free(&b);
    qh_expectation_free(&e);
    prob_free(&p);
}

Test(profiles, expectation_under_a_profile)
{
    prob p;
    prob_1x1(&p, U8, F32, 1, 1, 0.5, 1.0, 1.0, 0, 0, 1);
    qh_expectation e;
    cr_assert_eq(qh_expect(&p.call, "onnx-ref", &e), 0, "%s", e.message);
    cr_expect_eq(e.code, QMM_OK);
    cr_expect_eq(e.overflow, 0);
    cr_expect_eq(qh_tensor_int(&e.exact, 0), 2);
    cr_expect_eq(qh_tensor_int(&e.alt, 0), 2, "no overflow alternative under a profile");
    cr_expect_str_eq(e.profile, "onnx-ref");

    /* "got 1" (what spec and ort-fp32 give) against the onnx-ref expectation */
    unsigned char g = 1;
    qmm_tensor got = p.call.u.qlinearmatmul.y;
    got.data = &g;
    qh_compare cmp;
    qh_compare_outputs(&e.exact, NULL, &got, &cmp);
    cr_assert_eq(cmp.errors, 1);
    qh_sb b = {0};
    qh_explain_mismatches(&b, &e, &got, &cmp, 4);
    /* one mismatch: spec, ort-fp32, truncation and wrap give 1, which may be a coincidence, and
     * no profile is named (at least 2 mismatches, each explained, are needed) */
    cr_expect(strstr(b.s, "y[0,0] (index 0): expected 2, got 1; acc 1; acc*scale = 0.5\n") !=
                  NULL,
              "%s", b.s);
    qh_sb_free(&b);
    g = 200;
    qh_compare_outputs(&e.exact, NULL, &got, &cmp);
    qh_explain_mismatches(&b, &e, &got, &cmp, 4);
    cr_expect(strstr(b.s, "got 200; acc 1; acc*scale = 0.5; got matches no known profile\n"),
              "%s", b.s);
    qh_sb_free(&b);
    qh_expectation_free(&e);
    prob_free(&p);

    /* an Orion error is an expected rejection */
    prob_1x1(&p, S8, F32, -128, 1, 1.0, 1.0, 1.0, 0, 0, 0);
    cr_assert_eq(qh_expect(&p.call, "orion-fp16x16", &e), 0);
    cr_expect_eq(e.code, QMM_INVALID_ARGUMENT);
    cr_expect(strstr(e.message, "-128") != NULL, "%s", e.message);
    qh_expectation_free(&e);
    cr_expect_eq(qh_expect(&p.call, "nonsense", &e), -1);
    qh_expectation_free(&e);
    prob_free(&p);
}

/* ---- fingerprinting ---- */

/* The accumulation model of profile p: its name's suffix after '+', "" for the default. */
static const char *acc_name(int p)
{
    const char *plus = strchr(qmm_profile_name((qmm_profile)p), '+');
    return plus ? plus + 1 : "";
}

/* p and q have the same requantization and accumulation models that treat s8·s8 alike (the
 * default and pairsat16, which differ on u8·s8 only), so no int8 case can tell them apart: a
 * backend that computes int8 only cannot be told either. */
static int differ_only_on_u8s8(int p, int q)
{
    const char *x = acc_name(p), *y = acc_name(q);
    int xs = !*x || !strcmp(x, "pairsat16"), ys = !*y || !strcmp(y, "pairsat16");
    return qmm_profile_base((qmm_profile)p) == qmm_profile_base((qmm_profile)q) && xs && ys;
}

/* Operand a of a case's call (QLinearMatMul or MatMulInteger). */
static const qmm_tensor *case_a(const qmm_call *c)
{
    return c->op == QMM_OP_MATMULINTEGER ? &c->u.matmulinteger.a : &c->u.qlinearmatmul.a;
}

static void check_pairs_separated(const qh_fp_suite *s, int int8_only)
{
    qh_profile_set seen[QMM_PROFILE_MAX] = {0}, both[QMM_PROFILE_MAX] = {0};
    for (size_t i = 0; i < s->count; i++) {
        const qmm_call *c = &s->cases[i].oc.call;
        if (int8_only && case_a(c)->dtype != S8)
            continue;
        qh_expectation ex[QMM_PROFILE_MAX];
        for (int p = 0; p < qmm_profile_count(); p++)
            cr_assert_eq(qh_expect(c, qmm_profile_name((qmm_profile)p), &ex[p]), 0);
        for (int p = 0; p < qmm_profile_count(); p++)
            for (int q = 0; q < qmm_profile_count(); q++)
            {
                if (qh_fp_expectations_differ(&ex[p], &ex[q]))
                    seen[p] |= QH_PROFILE_BIT(q);
                if (ex[p].code != QMM_UNSUPPORTED && ex[q].code != QMM_UNSUPPORTED)
                    both[p] |= QH_PROFILE_BIT(q);
            }
        for (int p = 0; p < qmm_profile_count(); p++)
            qh_expectation_free(&ex[p]);
    }
    for (int p = 0; p < qmm_profile_count(); p++)
        for (int q = 0; q < qmm_profile_count(); q++)
            /* profiles that define no case in common (gemmlowp's u8 and Orion's s8) cannot be
             * confused: a backend matches one on the cases it defines */
            cr_expect(p == q || (seen[p] & QH_PROFILE_BIT(q)) || !(both[p] & QH_PROFILE_BIT(q)) ||
                          (int8_only && differ_only_on_u8s8(p, q)),
                      "no %scase tells %s from %s",
                      int8_only ? "int8 " : "", qmm_profile_name((qmm_profile)p), qmm_profile_name((qmm_profile)q));
}

Test(fingerprint, suite_separates_every_pair_of_profiles)
{
    qh_fp_suite s;
    cr_assert_eq(qh_fp_suite_build(&s), 0);
    cr_expect_geq(s.count, 15);
    for (size_t i = 0; i < s.count; i++) {
        cr_expect(s.cases[i].name && s.cases[i].why);
        for (size_t j = 0; j < i; j++)
            cr_expect_str_neq(s.cases[i].name, s.cases[j].name);
    }
    check_pairs_separated(&s, 0);
    /* a backend that, like Orion, skips uint8 is still told apart from the others */
    check_pairs_separated(&s, 1);
    qh_fp_suite_free(&s);
}

/* Which accumulation a profile's model amounts to on a QLinearMatMul of a's and b's types in
 * the simplest form: the same class means the same arithmetic there by definition (pairsat16
 * pairs u8·s8 only; onednn-avx512-vnni differs on MatMulInteger only; onednn-avx2 takes sat32
 * for an s8 a with zero points). */
static int acc_class(int p, int32_t ta, int32_t tb)
{
    const char *x = acc_name(p);
    int u8s8 = ta == QMM_DTYPE_UINT8 && tb == S8, s8s8 = ta == S8 && tb == S8;
    if (!strcmp(x, "sat32"))
        return 1;
    if (!strcmp(x, "pairsat16"))
        return u8s8 ? 2 : 0;
    if (!strcmp(x, "onednn-avx2-gemm"))
        return u8s8 ? 3 : s8s8 ? 4 : 0;
    if (!strcmp(x, "onednn-avx2"))
        return u8s8 ? 3 : s8s8 ? 5 : 0;
    return 0; /* the default, onednn-avx512-vnni */
}

/* Is c a QLinearMatMul of these types in the simplest form (2-D, per-tensor, float32)? */
static int simplest_form_of(const qmm_call *c, int32_t ta, int32_t tb, int32_t ty)
{
    if (c->op != QMM_OP_QLINEARMATMUL)
        return 0;
    const qmm_qlinearmatmul *m = &c->u.qlinearmatmul;
    return m->a.dtype == ta && m->b.dtype == tb && m->y.dtype == ty && m->a.rank == 2 &&
           m->b.rank == 2 && m->a_scale.dtype == QMM_DTYPE_FLOAT &&
           qmm_tensor_numel(&m->a_scale) == 1 && qmm_tensor_numel(&m->b_scale) == 1 &&
           qmm_tensor_numel(&m->y_scale) == 1;
}

/* For each of the 8 type combinations of QLinearMatMul, each pair of profiles (the wrong rules
 * included) that both define it and are not the same arithmetic there by definition differ on
 * some case of the suite in the simplest form of that combination: a kernel that computes only
 * that form is told apart (issue 26). */
Test(fingerprint, simplest_form_separates_every_pair)
{
    qh_fp_suite s;
    cr_assert_eq(qh_fp_suite_build(&s), 0);
    int np = qmm_profile_count();
    for (int combo = 0; combo < 8; combo++) {
        int32_t ta = combo & 4 ? S8 : QMM_DTYPE_UINT8, tb = combo & 2 ? S8 : QMM_DTYPE_UINT8,
                ty = combo & 1 ? S8 : QMM_DTYPE_UINT8;
        qh_profile_set seen[QMM_PROFILE_MAX] = {0}, defined = 0;
        int cases = 0;
        for (size_t i = 0; i < s.count; i++) {
            const qmm_call *c = &s.cases[i].oc.call;
            if (!simplest_form_of(c, ta, tb, ty))
                continue;
            cases++;
            qh_expectation ex[QMM_PROFILE_MAX];
            for (int p = 0; p < np; p++) {
                cr_assert_eq(qh_expect(c, qmm_profile_name((qmm_profile)p), &ex[p]), 0);
                if (ex[p].code != QMM_UNSUPPORTED)
                    defined |= QH_PROFILE_BIT(p);
            }
            for (int p = 0; p < np; p++)
                for (int q = 0; q < np; q++)
                    if (qh_fp_expectations_differ(&ex[p], &ex[q]))
                        seen[p] |= QH_PROFILE_BIT(q);
            for (int p = 0; p < np; p++)
                qh_expectation_free(&ex[p]);
        }
        cr_expect_geq(cases, 8, "combination %d: %d cases", combo, cases);
        for (int p = 0; p < np; p++)
            for (int q = p + 1; q < np; q++) {
                if (!(defined & QH_PROFILE_BIT(p)) || !(defined & QH_PROFILE_BIT(q)))
                    continue;
                int same = qmm_profile_base((qmm_profile)p) == qmm_profile_base((qmm_profile)q) &&
                           acc_class(p, ta, tb) == acc_class(q, ta, tb);
                cr_expect(same || (seen[p] & QH_PROFILE_BIT(q)),
                          "a=%s b=%s y=%s: no case in the simplest form tells %s from %s",
                          ta == S8 ? "s8" : "u8", tb == S8 ? "s8" : "u8", ty == S8 ? "s8" : "u8",
                          qmm_profile_name((qmm_profile)p), qmm_profile_name((qmm_profile)q));
            }
    }
    qh_fp_suite_free(&s);
}

Test(fingerprint, reference_under_each_profile_is_named)
{
    qh_fp_suite s;
    cr_assert_eq(qh_fp_suite_build(&s), 0);
    for (int p = 0; p < qmm_profile_count(); p++) {
        char spec[128];
        snprintf(spec, sizeof spec, "reference:profile=%s", qmm_profile_name((qmm_profile)p));
        qh_backend be;
        qh_error err;
        cr_assert_eq(qh_backend_open(spec, &be, &err), 0, "%s", err.msg);
        if (p != SPEC)
            cr_expect_str_eq(be.be->name, spec);
        else
            cr_expect_str_eq(be.be->name, "reference");
        qh_invoke_opts io = {0};
        qh_fp_result r;
        char msg[256];
        cr_assert_eq(qh_fingerprint_run(&be, &s, &io, &r, msg, sizeof msg), 0, "%s", msg);
        char verdict[128];
        qh_fp_verdict(&r, verdict, sizeof verdict);
        cr_expect_str_eq(verdict, qmm_profile_name((qmm_profile)p), "%s", spec);
        cr_expect_eq(r.closest, p);
        cr_expect_eq(r.score[p].matched, r.score[p].total);
        /* orion-fp16x16 skips the uint8 cases (UNSUPPORTED), gemmlowp all but u8·u8 -> u8,
         * onednn-fp32+pairsat16 those with u8 b; the others compute them all */
        const char *name = qmm_profile_name((qmm_profile)p);
        int partial = p == ORION || !strcmp(name, "gemmlowp") || !strncmp(name, "onednn", 6);
        cr_expect_eq(r.skipped == 0, !partial, "%s skipped %lld", spec, (long long)r.skipped);
        qh_fp_result_free(&r);
        qh_backend_close(&be);
    }
    qh_fp_suite_free(&s);
}

/* ---- the command line ---- */

#include "tests/cli_support.h"
#include "tests/casefile_support.h"

TestSuite(cli, .init = make_tmp, .fini = remove_tmp);

/* Whether /proc/cpuinfo's first "flags" line lists `flag` (0 when it cannot be read). */
static int cpuinfo_has_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192], want[64];
    int has = 0;
    snprintf(want, sizeof want, " %s ", flag);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            line[strcspn(line, "\n")] = ' ';
            has = strstr(line, want) != NULL;
            break;
        }
    if (f)
        fclose(f);
    return has;
}

Test(cli, fingerprint_names_each_reference_profile)
{
    for (int p = 0; p < qmm_profile_count(); p++) {
        char *out, *json, path[512], want[256];
        snprintf(path, sizeof path, "%s/fp.json", tmpdir);
        /* a wrong rule is named, and exits 5: not a profile of any implementation */
        out = qmmcheck_expect(qmm_profile_wrong((qmm_profile)p) ? 5 : 0,
                              "fingerprint --backend reference:profile=%s --report json:%s",
                              qmm_profile_name((qmm_profile)p), path);
        snprintf(want, sizeof want, "verdict: %s (matches every case it defines)",
                 qmm_profile_name((qmm_profile)p));
        expect_in(out, want);
        json = slurp(path);
        snprintf(want, sizeof want, "\"verdict\": \"%s\"", qmm_profile_name((qmm_profile)p));
        cr_expect(strstr(json, want) != NULL, "%s", json);
        cr_expect(strstr(json, "\"profiles\": {") != NULL, "%s", json);
        snprintf(want, sizeof want, "\"backend\": \"reference:profile=%s\"", qmm_profile_name((qmm_profile)p));
        cr_expect(strstr(json, want) != NULL, "%s", json);
        free(json);
        free(out);
    }
    char *out, *json, path[512];
    snprintf(path, sizeof path, "%s/fp.json", tmpdir);
    cr_expect_eq(qmmcheck(&out, "fingerprint --backend reference:profile=ort-fp32 --report "
                                "json:%s",
                          path),
                 0);
    json = slurp(path);
    cr_expect(strstr(json, "\"ort-fp32\": {\"matched\": 118, \"total\": 118}") != NULL, "%s",
              json);
    /* every profile is in the report, also those the text leaves out */
    cr_expect(strstr(json, "\"onednn-fp32+onednn-avx512-vnni\": {") != NULL, "%s", json);
    /* the host's kernel-selecting CPU flags, avx2 first when the CPU has it */
    expect_in(out, "host CPU flags (select library kernels): ");
    cr_expect(strstr(json, "\"cpu_flags\": [") || strstr(json, "\"cpu_flags\": null"), "%s",
              json);
    if (cpuinfo_has_flag("avx2"))
        cr_expect(strstr(json, "\"cpu_flags\": [\"avx2\"") != NULL, "%s", json);
    free(json);
    free(out);
}

Test(cli, fingerprint_usage_errors)
{
    const char *bad[] = {
        "fingerprint",
        "fingerprint --backend",
        "fingerprint --backend reference --report junit:x.xml",
        "fingerprint --backend reference --backend reference",
        "fingerprint --backend reference:profile=nonsense",
        "fingerprint --backend reference --frobnicate",
    };
    expect_usage_errors(bad, sizeof bad / sizeof bad[0]);
    char *out;
    cr_expect_eq(qmmcheck(&out, "help"), 0);
    expect_in(out, "fingerprint --backend SPEC");
    free(out);
}

/* A 1x1 QLinearMatMul case directory, int8 or uint8, scales 0.5/1/1, zero points 0/0/zy;
 * output_0 = `stored` unless it is < -1000. */
static void write_case(const char *dir, int32_t q, int av, int zy, int stored)
{
    static const char *const names[8] = {"a", "a_scale", "a_zero_point", "b", "b_scale",
                                         "b_zero_point", "y_scale", "y_zero_point"};
    write_case_model(dir, "QLinearMatMul", "profiles", names, 8, "y");
    char set[1024];
    snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    const int64_t d11[2] = {1, 1};
    unsigned char a = (unsigned char)(av & 0xff), b = 1, z0 = 0, zyb = (unsigned char)(zy & 0xff);
    float half = 0.5f, onef = 1.0f;
    write_tensor(set, "input_0.pb", q, 2, d11, &a, "a");
    write_tensor(set, "input_1.pb", F32, 0, NULL, &half, "a_scale");
    write_tensor(set, "input_2.pb", q, 0, NULL, &z0, "a_zero_point");
    write_tensor(set, "input_3.pb", q, 2, d11, &b, "b");
    write_tensor(set, "input_4.pb", F32, 0, NULL, &onef, "b_scale");
    write_tensor(set, "input_5.pb", q, 0, NULL, &z0, "b_zero_point");
    write_tensor(set, "input_6.pb", F32, 0, NULL, &onef, "y_scale");
    write_tensor(set, "input_7.pb", q, 0, NULL, &zyb, "y_zero_point");
    if (stored > -1000) {
        unsigned char y = (unsigned char)(stored & 0xff);
        write_tensor(set, "output_0.pb", q, 2, d11, &y, "y");
    }
}

/* run on a large case (s8 128x8192x128 of ones, ties): the onnx-ref backend judged under spec
 * is FAILED, its profiles compared at the kept mismatches only, the text says so once and names
 * orion-fp16x16 as not compared, and the JSON report says the same and is valid. */
Test(cli, a_large_case_names_its_profiles_from_the_kept_mismatches, .timeout = 120)
{
    prob p;
    prob_ties(&p, 128, 8192, 128);
    char dir[512], json[600];
    snprintf(dir, sizeof dir, "%s/large", tmpdir);
    snprintf(json, sizeof json, "%s/large.json", tmpdir);
    qh_model *m = calloc(1, sizeof *m);
    cr_assert(m);
    qh_call_model(&p.call, &p.call.u.qlinearmatmul.y, 1, m);
    snprintf(m->graph_name, sizeof m->graph_name, "large");
    qh_error err;
    cr_assert(qh_call_write_dir(dir, &p.call, m, NULL, NULL, &err) == 0, "%s", err.msg);
    free(m);
    prob_free(&p);
    char *out = qmmcheck_expect(1, "run --backend reference:profile=onnx-ref --vectors '%s' "
                                   "--report 'json:%s'", dir, json);
    expect_in(out, "expected 1, got 2; acc 8192; acc*scale = 0.5; got matches (judged at the "
                   "kept mismatches only: the whole output under every profile is too much work; "
                   "not compared: orion-fp16x16): onnx-ref, onednn-fp32, ties-away, "
                   "zp-before-rounding\n");
    cr_expect_eq(count_lines_with(out, "kept mismatches only"), 1, "%s", out);
    free(out);
    char *rep = slurp(json);
    cr_assert(rep);
    expect_in(rep, "\"models\": [\"onnx-ref\", \"onednn-fp32\", \"ties-away\", "
                   "\"zp-before-rounding\"], \"models_scope\": \"kept mismatches\", "
                   "\"models_not_compared\": [\"orion-fp16x16\"]}");
    free(rep);
    expect_json_valid(json);
}

Test(cli, run_and_repro_under_a_profile)
{
    char dir[512], *out;
    /* 0.5 + zy 1: spec 1, onnx-ref 2; the stored output is onnx-ref's */
    snprintf(dir, sizeof dir, "%s/tie", tmpdir);
    write_case(dir, U8, 1, 1, 2);
    /* the stored output follows onnx-ref, and the sidecar says so: the vector is trusted
     * against that profile whatever profile the backend is judged under */
    char meta[600];
    snprintf(meta, sizeof meta, "%s/qmm.meta", dir);
    write_text(meta, "profile = onnx-ref\n");

    /* judged under spec, the spec reference passes: the vector is not mistrusted, because
     * its stored output is right for the profile it names */
    out = qmmcheck_expect(0, "run --backend reference --vectors '%s'", dir);
    expect_in(out, "passed:1 failed:0 mistrusted:0");
    free(out);

    out = qmmcheck_expect(0, "run --backend reference:profile=onnx-ref --profile onnx-ref "
                             "--vectors '%s'",
                              dir);
    expect_in(out, "passed:1 ");
    free(out);

    /* the spec reference judged under onnx-ref fails; with one mismatch the profiles that give
     * 1 (spec, ort-fp32, truncation, wrap) may do so by coincidence: none is named */
    out = qmmcheck_expect(1, "run --backend reference --profile onnx-ref --vectors '%s'", dir);
    cr_expect(strstr(out, "y[0,0] (index 0): expected 2, got 1; acc 1; acc*scale = 0.5\n") !=
                  NULL,
              "%s", out);
    cr_expect(strstr(out, "got matches") == NULL, "%s", out);
    free(out);

    out = qmmcheck_expect(1, "repro --backend reference:profile=ort-fp32 --profile onnx-ref '%s'",
                          dir);
    expect_in(out, "expected 2, got 1; acc 1; acc*scale = 0.5\n");
    free(out);

    /* under spec the onnx-ref backend fails */
    out = qmmcheck_expect(1, "run --backend reference:profile=onnx-ref --vectors '%s'", dir);
    expect_in(out, "expected 1, got 2; acc 1; acc*scale = 0.5\n");
    free(out);

    /* Orion rejects an input of -128: under orion-fp16x16 the case expects INVALID_ARGUMENT */
    snprintf(dir, sizeof dir, "%s/minus128", tmpdir);
    write_case(dir, S8, -128, 0, -9999);
    out = qmmcheck_expect(0, "run --backend reference:profile=orion-fp16x16 --profile "
                             "orion-fp16x16 --vectors '%s'",
                          dir);
    expect_in(out, "passed:1 ");
    free(out);
    qmmcheck(&out, "run --backend reference --profile orion-fp16x16 --vectors '%s'", dir);
    cr_expect(strstr(out, "UNCHECKED") != NULL, "accepting what Orion rejects: %s", out);
    free(out);
}

Test(cli, list_profiles_names_every_profile_and_why_a_combination_is_refused)
{
    char *out = qmmcheck_expect(0, "list --profiles");
    char want[256];
    for (int p = 0; p < qmm_profile_count(); p++) {
        snprintf(want, sizeof want, "\n  %s\n", qmm_profile_name((qmm_profile)p));
        expect_in(out, want);
    }
    expect_in(out, "requantization models");
    expect_in(out, "  onednn-fp32        oneDNN 2.6 int8 matmul");
    expect_in(out, "  (default)          exact, wrapped to int32");
    expect_in(out, "  onednn-fp32+pairsat16 = onednn-fp32+onednn-avx2");
    expect_in(out, "  orion-fp16x16+sat32: Orion sums dequantized Q16.16 products");
    expect_in(out, "  gemmlowp+onednn-avx512-vnni: gemmlowp multiplies u8*u8 only");
    free(out);
    /* a refused combination says why, where the reference is opened with it */
    out = qmmcheck_expect(2, "fingerprint --backend reference:profile=gemmlowp+sat32");
    expect_in(out, "gemmlowp+sat32: gemmlowp multiplies u8*u8 only");
    free(out);
    out = qmmcheck_expect(2, "fingerprint --backend reference:profile=ort-fp32+sat16");
    expect_in(out, "known: spec, onnx-ref, ort-fp32, orion-fp16x16, gemmlowp, onednn-fp32, "
                   "ties-away, truncation, wrap, zp-before-rounding, float64; each also as "
                   "REQUANTIZATION+ACCUMULATION");
    free(out);
    /* the name kept from before composition opens the profile it means */
    out = qmmcheck_expect(0, "fingerprint --backend reference:profile=onednn-fp32+pairsat16");
    expect_in(out, "verdict: onednn-fp32+onednn-avx2 (matches every case it defines)");
    cr_expect(strstr(out, "also matching") == NULL, "%s", out);
    free(out);
}
