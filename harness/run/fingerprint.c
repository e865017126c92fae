/* harness/run/fingerprint.c — the discriminating suite and the scoring (see fingerprint.h).
 *
 * Every case is built by hand so that at least two profiles disagree on it, and the comment
 * on each says what each profile answers (docs/profiles.md explains the arithmetic). The suite
 * as a whole separates every pair of profiles, also when only its int8 cases count (a backend
 * that, like Orion, skips uint8); tests/test_profiles.c checks both.
 */
#include "harness/run/fingerprint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/clean.h"
#include "harness/invoke/invoke.h"
#include "harness/judge/judge.h"
#include "harness/judge/compare.h"
#include "harness/judge/expect.h"
#include "ops/qmm_ops.h"

#define U8 QMM_DTYPE_UINT8
#define S8 QMM_DTYPE_INT8
#define F32 QMM_DTYPE_FLOAT
#define F16 QMM_DTYPE_FLOAT16

/* ---- building cases ---------------------------------------------------------------------- */

static void *case_alloc(qh_fp_case *c, size_t bytes)
{
    return qh_owned_call_alloc(&c->oc, bytes);
}

static int q8_tensor(qh_fp_case *c, qmm_tensor *t, int32_t dtype, int rank, const int64_t *dims,
                     const int *vals)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = rank;
    memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    int64_t n = qmm_tensor_numel(t);
    unsigned char *p = case_alloc(c, (size_t)n);
    if (!p)
        return -1;
    for (int64_t i = 0; i < n; i++)
        p[i] = (unsigned char)(vals[i] & 0xff);
    t->data = p;
    return 0;
}

/* A scale of `n` elements (rank 0 when n == 0), each rounded to `dtype` on encoding. */
static int scale_tensor(qh_fp_case *c, qmm_tensor *t, int32_t dtype, int n, const double *v)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = n ? 1 : 0;
    t->dims[0] = n;
    int count = n ? n : 1;
    size_t es = qmm_dtype_size(dtype);
    unsigned char *p = case_alloc(c, (size_t)count * es);
    if (!p)
        return -1;
    for (int i = 0; i < count; i++) {
        uint32_t bits = qmm_scale_encode(dtype, v[i]);
        for (size_t k = 0; k < es; k++)
            p[(size_t)i * es + k] = (unsigned char)(bits >> (8 * k) & 0xff); /* little-endian */
    }
    t->data = p;
    return 0;
}

/* Zero points match their scales' shape: n elements of the same value, or rank 0. */
static int zp_tensor(qh_fp_case *c, qmm_tensor *t, int32_t dtype, int n, int v)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = n ? 1 : 0;
    t->dims[0] = n;
    int count = n ? n : 1;
    unsigned char *p = case_alloc(c, (size_t)count);
    if (!p)
        return -1;
    for (int i = 0; i < count; i++)
        p[i] = (unsigned char)(v & 0xff);
    t->data = p;
    return 0;
}

/* A QLinearMatMul case with a and y of type `q` and b of type `qb` (0: `q` too); per-tensor
 * parameters except b's scale, which is per-column when sb_n > 0. */
typedef struct qlm_desc {
    const char *name, *why;
    int32_t q, s;          /* operand/output type, scale type */
    int rank;
    int64_t adims[3], bdims[3];
    const int *a, *b;
    double sa, sy;
    int sb_n;              /* 0: per-tensor sb[0]; else per-column, N values */
    const double *sb;
    int za, zb, zy;
    int32_t qb, qy; /* b's and y's types; 0: q */
} qlm_desc;

static int add_qlm(qh_fp_suite *s, const qlm_desc *d)
{
    qh_fp_case *c = &s->cases[s->count];
    memset(c, 0, sizeof *c);
    c->name = d->name;
    c->why = d->why;
    c->oc.call.op = QMM_OP_QLINEARMATMUL;
    qmm_qlinearmatmul *m = &c->oc.call.u.qlinearmatmul;
    m->opset = d->s == F32 ? 10 : 21;
    s->count++; /* counted now, so qh_fp_suite_free releases a half-built case */
    if (q8_tensor(c, &m->a, d->q, d->rank, d->adims, d->a) ||
        q8_tensor(c, &m->b, d->qb ? d->qb : d->q, d->rank, d->bdims, d->b) ||
        scale_tensor(c, &m->a_scale, d->s, 0, &d->sa) ||
        zp_tensor(c, &m->a_zero_point, d->q, 0, d->za) ||
        scale_tensor(c, &m->b_scale, d->s, d->sb_n, d->sb) ||
        zp_tensor(c, &m->b_zero_point, d->qb ? d->qb : d->q, d->sb_n, d->zb) ||
        scale_tensor(c, &m->y_scale, d->s, 0, &d->sy) ||
        zp_tensor(c, &m->y_zero_point, d->qy ? d->qy : d->q, 0, d->zy))
        return -1;
    qmm_geometry g;
    qmm_status st;
    if (qmm_matmul_geometry(&m->a, &m->b, &g, &st) != QMM_OK)
        return -1; /* a suite bug; tests/test_profiles.c would see the missing cases */
    m->y.dtype = d->qy ? d->qy : d->q;
    m->y.rank = g.y_rank;
    memcpy(m->y.dims, g.y_dims, sizeof m->y.dims);
    return 0;
}

/* A MatMulInteger case, a [1,k] by b [k,1] of type `q`, no zero points. */
static int add_mmi(qh_fp_suite *s, const char *name, const char *why, int32_t q, int k,
                   const int *a, const int *b)
{
    qh_fp_case *c = &s->cases[s->count];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->why = why;
    c->oc.call.op = QMM_OP_MATMULINTEGER;
    qmm_matmulinteger *m = &c->oc.call.u.matmulinteger;
    s->count++; /* counted now, so qh_fp_suite_free releases a half-built case */
    /* b's zero point given, as 0: oneDNN takes its float32 path only with one (its zero-point
     * attribute), and writes the exact int32 without (docs/profiles.md) */
    static const int64_t scalar[1] = {1};
    static const int zero = 0;
    if (q8_tensor(c, &m->a, q, 2, (const int64_t[]){1, k}, a) ||
        q8_tensor(c, &m->b, q, 2, (const int64_t[]){k, 1}, b) ||
        q8_tensor(c, &m->b_zero_point, q, 0, scalar, &zero))
        return -1;
    m->y.dtype = QMM_DTYPE_INT32;
    m->y.rank = 2;
    m->y.dims[0] = m->y.dims[1] = 1;
    return 0;
}

/* 2^e as a double; the scales below are exact binary fractions. */
static double p2(int e)
{
    double v = 1.0;
    for (; e > 0; e--)
        v *= 2.0;
    for (; e < 0; e++)
        v /= 2.0;
    return v;
}

#define D1 {1, 1}
#define ONE_BY_ONE .rank = 2, .adims = D1, .bdims = D1

#define N_SMALL 24
#define N_LONG 4
/* per type combination: N_SIMPLE_EACH, 2 more for u8·s8 and for s8·s8, 1 for s8·u8 */
#define N_SIMPLE_EACH 10
#define N_SIMPLE (8 * N_SIMPLE_EACH + 2 * 2 + 2 * 2 + 2)
#define N_CASES (N_SMALL + N_LONG + N_SIMPLE)

static int add_small_cases(qh_fp_suite *s)
{
    /* 7942963 * 2^-18 = 30.29999923706055, a float32: 5x it is 151.5 - 2^-18, which float32
     * (ulp 2^-16 there) rounds to 151.5, and RNE then takes to 152. */
    static const double near = 7942963.0 / 262144.0, near_s8 = 10643046.0 / 524288.0;
    static const double one = 1.0, half = 0.5, f16_sb = 3.83203125;
    static const double orion_b2 = 2500.0 / 65536.0, orion_b3 = 25000.0 / 65536.0;
    static const double tiny = 1.0 / 4096.0, very_tiny = 1.0 / 1048576.0;
    static const double halves[2] = {0.5, 0.5};
    static const int v1[] = {1}, vm1[] = {-1}, v3[] = {3}, v5[] = {5}, v200[] = {200},
                     v100[] = {100}, vm100[] = {-100};
    static const int orion_a2[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const int orion_b2v[] = {2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24};
    static const int orion_a3[] = {-1, -2, -2, -3, -4, -4, -5, -6, -6, -7, -8, -8};
    static const int orion_b3v[] = {-2, -4, -6, -8, -10, -12, -2, -4, -6, -8, -10, -12};
    static const int minus128[] = {-128, 1}, ones2[] = {1, 1};
    static const int pc_a[] = {1, 2, 3, 1}, pc_b[] = {1, 0, 0, 1};
    static const int a255[] = {255, 255}, b127[] = {127, 127};
    const qlm_desc small[N_SMALL] = {
        /* 0.5 + zy 1: spec RNE(0.5) + 1 = 1; onnx-ref rint(1.5) = 2; ort-fp32 1 */
        {"tie-odd-zp-u8", "zero point added before (onnx-ref) or after rounding", U8, F32,
         ONE_BY_ONE, v1, v1, 0.5, 1.0, 0, &one, 0, 0, 1},
        /* 0.5 + zy 2: spec, onnx-ref (rint(2.5)), ort 2; gemmlowp rounds the tie away from
         * zero (RoundingDivideByPOT) before adding zy: 3 */
        {"tie-even-zp-u8", "ties away from zero (gemmlowp) or to even", U8, F32, ONE_BY_ONE,
         v1, v1, 0.5, 1.0, 0, &one, 0, 0, 2},
        /* u8·s8 (oneDNN's weights are s8): onnx-ref and onednn add zy before rounding: 2;
         * spec and ort 1 */
        {"tie-odd-zp-u8s8", "zero point before/after rounding, u8 x s8", U8, F32, ONE_BY_ONE,
         v1, v1, 0.5, 1.0, 0, &one, 0, 0, 1, .qb = S8},
        /* u8·s8, acc 5 times near: 151.5 - 2^-18 in double (onnx-ref: 151); float32 rounds the
         * product to 151.5 (ort, onednn: 152) */
        {"near-tie-fp32-product-u8s8", "float32 rounding of acc * multiplier, u8 x s8", U8, F32,
         ONE_BY_ONE, v5, v1, near, 1.0, 0, &one, 0, 0, 0, .qb = S8},
        /* same tie in int8: spec 1, onnx-ref 2, ort-fp32 1, orion 1.5 truncated = 1 */
        {"tie-odd-zp-s8", "zero point before/after rounding; Orion truncation", S8, F32,
         ONE_BY_ONE, v1, v1, 0.5, 1.0, 0, &one, 0, 0, 1},
        /* -0.5 + zy 1: spec RNE(-0.5) + 1 = 1; onnx-ref rint(0.5) = 0; ort 1; orion 0 */
        {"tie-odd-zp-negative-s8", "negative tie with an odd zero point", S8, F32, ONE_BY_ONE,
         vm1, v1, 0.5, 1.0, 0, &one, 0, 0, 1},
        /* 1.5 + zy 2: spec 2 + 2 = 4; onnx-ref rint(3.5) = 4; ort 4; orion trunc(3.5) = 3 */
        {"tie-even-zp-s8", "even zero point: only truncation differs", S8, F32, ONE_BY_ONE, v3,
         v1, 0.5, 1.0, 0, &one, 0, 0, 2},
        /* per-column ties, zy 1: values [[0.5,1],[1.5,0.5]]: spec [[1,2],[3,1]]; onnx-ref
         * [[2,2],[2,2]]; ort = spec */
        {"tie-per-column-u8", "ties under a per-column b_scale", U8, F32, .rank = 2,
         .adims = {2, 2}, .bdims = {2, 2}, pc_a, pc_b, 1.0, 1.0, 2, halves, 0, 0, 1},
        /* acc 5, m = near exactly: exact 151.5 - 2^-18 -> 151 (spec, onnx-ref in double);
         * ort-fp32's float32 product rounds to 151.5 -> 152 */
        {"near-tie-fp32-product-u8", "float32 rounding of acc * multiplier", U8, F32,
         ONE_BY_ONE, v5, v1, near, 1.0, 0, &one, 0, 0, 0},
        /* int8 twin for backends that skip uint8: 5 * 10643046 * 2^-19 = 101.5 - 2^-18, a
         * float32 tie that goes to 101.5 -> ort-fp32 102; spec, onnx-ref, orion 101 */
        {"near-tie-fp32-product-s8", "float32 rounding of acc * multiplier, int8", S8, F32,
         ONE_BY_ONE, v5, v1, near_s8, 1.0, 0, &one, 0, 0, 0},
        /* acc 1, sa*sb = 151.5 - 2^-18 exactly: spec 151; both float32 multipliers round to
         * 151.5 -> onnx-ref and ort-fp32 give 152 */
        {"near-tie-fp32-multiplier-u8", "float32 rounding of sa * sb", U8, F32, ONE_BY_ONE, v1,
         v1, 5.0, 1.0, 0, &near, 0, 0, 0},
        /* float16 scales: 3 * 3.83203125 = 11.49609375, a float16 tie that rounds to 11.5:
         * spec 11, onnx-ref (float16 multiplier) 12, ort-fp32 11, orion 11 */
        {"near-tie-float16-scales-s8", "multiplier computed in float16 (onnx-ref)", S8, F16,
         ONE_BY_ONE, v1, v1, 3.0, 1.0, 0, &f16_sb, 0, 0, 0},
        /* Orion's documented example (magnitudes 2000, 2500, 3000): orion [[3,4,4],[8,9,10]];
         * the exact value of y[0,0] is 3.56, so the float profiles say 4 */
        {"orion-doc-2d-s8", "Orion's Q16.16 truncation", S8, F32, .rank = 2, .adims = {2, 4},
         .bdims = {4, 3}, orion_a2, orion_b2v, 2000.0 / 65536.0, 3000.0 / 65536.0, 0,
         &orion_b2, 0, 0, 0},
        /* Orion's 3-D example (20000, 25000, 30000): orion [8,11,17,23,26,35,36,47] */
        {"orion-doc-3d-s8", "Orion's Q16.16 truncation, batched", S8, F32, .rank = 3,
         .adims = {2, 2, 3}, .bdims = {2, 3, 2}, orion_a3, orion_b3v, 20000.0 / 65536.0,
         30000.0 / 65536.0, 0, &orion_b3, 0, 0, 0},
        /* 10000 saturates to 127 everywhere (also Orion); a wrapping backend gives 16 */
        {"saturate-high-s8", "saturation, not wrapping (onnx < 1.22 wraps)", S8, F32,
         ONE_BY_ONE, v100, v100, 1.0, 1.0, 0, &one, 0, 0, 0},
        /* 40000 saturates to 255; a wrapping backend gives 64 */
        {"saturate-high-u8", "saturation, not wrapping", U8, F32, ONE_BY_ONE, v200, v200, 1.0,
         1.0, 0, &one, 0, 0, 0},
        /* a holds -128: -127 * 0.25 = -31.75 -> -32 for the float profiles; Orion panics */
        {"orion-rejects-input-minus128-s8", "Orion: an input element -128", S8, F32, .rank = 2,
         .adims = {1, 2}, .bdims = {2, 1}, minus128, ones2, 0.5, 1.0, 0, &half, 0, 0, 0},
        /* -10000 clamps to -128; Orion panics on a -128 result */
        {"orion-rejects-result-minus128-s8", "Orion: a result clamped to -128", S8, F32,
         ONE_BY_ONE, vm100, v100, 1.0, 1.0, 0, &one, 0, 0, 0},
        /* a_scale 70000 encodes past 2^32; the exact value 70000 * 2^-20 = 0.07 -> 0 */
        {"orion-rejects-scale-magnitude-s8", "Orion: a scale >= 65536", S8, F32, ONE_BY_ONE,
         v1, v1, 70000.0, 1.0, 0, &very_tiny, 0, 0, 0},
        /* deq(a) = 100 * 60000 >= 65536 in Q16.16; the exact value 100 * 60000 * 2^-20 = 5.72
         * -> 6 */
        {"orion-rejects-dequantized-magnitude-s8", "Orion: a dequantized value >= 65536", S8,
         F32, ONE_BY_ONE, v100, v1, 60000.0, 1.0, 0, &very_tiny, 0, 0, 0},
        /* y_scale 2^-20 encodes as 0 in Q16.16; the exact value 2^-24 / 2^-20 = 1/16 -> 0 */
        {"orion-rejects-y-scale-zero-s8", "Orion: y_scale encoding as 0", S8, F32, ONE_BY_ONE,
         v1, v1, tiny, very_tiny, 0, &tiny, 0, 0, 0},
        /* u8 a = 255, 255 against s8 b = 127, 127: the pair sum 64770 saturates to 32767 in
         * int16 (the *+pairsat16 profiles: AVX2 u8·s8 kernels); times 2^-10: 63.25 -> 63 for
         * every exact accumulation, 31.999 -> 32 for the saturated one */
        {"pair-saturation-u8s8", "adjacent u8*s8 products summed in int16 with saturation",
         U8, F32, .rank = 2, .adims = {1, 2}, .bdims = {2, 1}, a255, b127, 1.0 / 1024.0, 1.0,
         0, &one, 0, 0, 0, .qb = S8},
        /* s8 a = 127, 127 against b = 127, 127: exact 32258 * 2^-9 = 63.004 -> 63; oneDNN's
         * AVX2 GEMM (onednn-avx2-gemm) shifts a to 255 and saturates the pair: 32767 - 128 *
         * 254 = 255 -> 0.498 -> 0; pairsat16 leaves s8*s8 exact */
        {"shifted-pair-saturation-s8", "s8*s8 through vpmaddubsw with a shifted by +128 "
         "(oneDNN AVX2)", S8, F32, .rank = 2, .adims = {1, 2}, .bdims = {2, 1}, b127, b127,
         1.0 / 512.0, 1.0, 0, &one, 0, 0, 0},
        /* the same with a_zero_point 1: exact 2 * 126 * 127 = 32004 * 2^-10 = 31.25 -> 31
         * (oneDNN AVX2 takes its exact reference GEMM for s8 a with a zero point:
         * onednn-avx2); the shifted pairs give 32767 - 32512 - 254 = 1 -> 0 */
        {"shifted-pair-zero-point-s8", "s8 a with a zero point: oneDNN AVX2's reference GEMM, "
         "not its shifted pairs", S8, F32, .rank = 2, .adims = {1, 2}, .bdims = {2, 1}, b127,
         b127, 1.0 / 1024.0, 1.0, 0, &one, 1, 0, 0},
    };
    for (int i = 0; i < N_SMALL; i++)
        if (add_qlm(s, &small[i]) != 0)
            return -1;
    return 0;
}

/* Long dot products, built in scratch arrays. */
static int add_long_cases(qh_fp_suite *s)
{
    /* K = 263: 261 * 255*255 + 48*47 + 6*7 = 16973823 = 129.5 * 2^17 - 1, odd and past 2^24,
     * so float(acc) rounds (ties to even) to 16973824; times m = 2^-17: ort-fp32 gets 129.5
     * -> 130, while spec and onnx-ref (double) see 129.49999... -> 129. */
    enum { K1 = 263, K2 = 33026, K3 = 10001 };
    int *a = malloc(K2 * sizeof *a), *b = malloc(K2 * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    for (int k = 0; k < K1; k++)
        a[k] = b[k] = 255;
    a[K1 - 2] = 48;
    b[K1 - 2] = 47;
    a[K1 - 1] = 6;
    b[K1 - 1] = 7;
    static const double one = 1.0;
    qlm_desc d = {"acc-past-2^24-u8", "float32 conversion of the accumulator (ort-fp32)", U8,
                  F32, .rank = 2, .adims = {1, K1}, .bdims = {K1, 1}, a, b, p2(-17), 1.0, 0,
                  &one, 0, 0, 0};
    int rc = add_qlm(s, &d);
    /* K = 33026 of 255*255: acc 2147515650 does not fit int32. Exact: * 2^-24 = 128.002 ->
     * 128; wrapped (-2147451646): -127.998 -> 0. spec accepts both; onnx-ref and ort-fp32
     * (int32 accumulators) give 0; a backend accumulating exactly matches spec only. */
    for (int k = 0; rc == 0 && k < K2; k++)
        a[k] = b[k] = 255;
    qlm_desc w = {"acc-past-int32-u8", "int32-wrapping accumulation", U8, F32, .rank = 2,
                  .adims = {1, K2}, .bdims = {K2, 1}, a, b, p2(-24), 1.0, 0, &one, 0, 0, 0};
    if (rc == 0)
        rc = add_qlm(s, &w);
    /* s8 a = -128 (a_zero_point 127) against b = 127 (b_zero_point -128), K = 33026: exact
     * -2147515650, saturated -2147483648, wrapped 2147451646; times m = 0x1.91ff3cp-25 (a
     * float32 between 100.5/2147515650 and 100.5/2147483648): -101 exact, -100 saturated
     * (sat32, and onednn-avx2, whose s8 a with zero points takes oneDNN's saturating
     * reference GEMM), 100 wrapped (spec accepts -101 and 100). */
    for (int k = 0; rc == 0 && k < K2; k++) {
        a[k] = -128;
        b[k] = 127;
    }
    static const double m_sat = 0x1.91ff3cp-25;
    qlm_desc sat = {"acc-saturates-int32-s8", "int32-saturating accumulation (oneDNN's "
                    "reference GEMM)", S8, F32, .rank = 2, .adims = {1, K2}, .bdims = {K2, 1},
                    a, b, m_sat, 1.0, 0, &one, 127, -128, 0};
    if (rc == 0)
        rc = add_qlm(s, &sat);
    /* MatMulInteger s8 a = -127 against b = 127 (b's zero point 0), K = 10001: -161306129,
     * odd and past 2^24; oneDNN's int32 destination on AVX-512, given a zero point, passes
     * through float32: -161306128 (onednn-avx512-vnni) */
    for (int k = 0; rc == 0 && k < K3; k++) {
        a[k] = -127;
        b[k] = 127;
    }
    if (rc == 0)
        rc = add_mmi(s, "int32-output-via-float32-s8", "an int32 output converted through "
                     "float32 (oneDNN on AVX-512, given a zero point)", S8, K3, a, b);
    free(a);
    free(b);
    return rc;
}

/* ---- the simplest form of every type combination ------------------------------------------ */

/* The operand value v and zero point z of type `t` with v - z = d (|d| <= 255). */
static void operand(int32_t t, int d, int *v, int *z)
{
    if (t == U8) {
        *v = d >= 0 ? d : 0;
        *z = d >= 0 ? 0 : -d;
    } else if (d > 127) {
        *v = 127;
        *z = 127 - d;
    } else if (d < -128) {
        *v = -128;
        *z = -128 - d;
    } else {
        *v = d;
        *z = 0;
    }
}

/* One case of the simplest form (2-D, per-tensor, float32 scales):
 * a [1,k] and b [k,1] holding (a - za) = da and (b - zb) = db at every k, or the given
 * operands when `av` is non-NULL. */
typedef struct simple_desc {
    const char *rule, *why;
    int k, da, db, zy;
    double sa, sb;
    const int *av, *bv; /* NULL: from da, db */
    int za, zb;         /* with av, bv */
    double sy;          /* y_scale */
} simple_desc;

static int add_simple(qh_fp_suite *s, int32_t ta, int32_t tb, int32_t ty, const simple_desc *sd,
                      int *a, int *b)
{
    static const char *const tn[2] = {"u8", "s8"};
    int za = sd->za, zb = sd->zb;
    if (!sd->av) {
        int va, vb;
        operand(ta, sd->da, &va, &za);
        operand(tb, sd->db, &vb, &zb);
        for (int k = 0; k < sd->k; k++) {
            a[k] = va;
            b[k] = vb;
        }
    } else {
        memcpy(a, sd->av, (size_t)sd->k * sizeof *a);
        memcpy(b, sd->bv, (size_t)sd->k * sizeof *b);
    }
    char name[64];
    snprintf(name, sizeof name, "%s-%s%s%s", sd->rule, tn[ta == S8], tn[tb == S8], tn[ty == S8]);
    qlm_desc d = {NULL, sd->why, ta, F32, .rank = 2, .adims = {1, sd->k}, .bdims = {sd->k, 1},
                  a, b, sd->sa, sd->sy, 0, &sd->sb, za, zb, sd->zy, .qb = tb, .qy = ty};
    if (add_qlm(s, &d) != 0)
        return -1;
    qh_fp_case *c = &s->cases[s->count - 1];
    char *owned = qh_owned_call_alloc(&c->oc, strlen(name) + 1);
    if (!owned)
        return -1;
    memcpy(owned, name, strlen(name) + 1);
    c->name = owned;
    return 0;
}

/* Every rule the profiles and the wrong rules differ by, in the simplest form of each of the 8
 * QLinearMatMul type combinations, so that a kernel computing only that form is told apart
 * (tests/test_profiles.c, fingerprint::simplest_form_separates_every_pair). */
static int add_simple_forms(qh_fp_suite *s)
{
    enum { K_BIG = 33026, K_BLOCKS = 261, K_NO_ZP = 65795 };
    int *a = calloc(K_NO_ZP, sizeof *a), *b = calloc(K_NO_ZP, sizeof *b);
    int *pa = calloc(K_BLOCKS, sizeof *pa), *pb = calloc(K_BLOCKS, sizeof *pb);
    int rc = a && b && pa && pb ? 0 : -1;
    /* 5 * near is 151.5 - 2^-18 (u8 y), 5 * near_s8 101.5 - 2^-18 (s8 y): float32 ties (see
     * add_small_cases); m_sat between 100.5/2147515650 and 100.5/2147483648 (add_long_cases) */
    static const double near_u8 = 7942963.0 / 262144.0, near_s8 = 10643046.0 / 524288.0;
    static const double m_sat = 0x1.91ff3cp-25, m_no_zp = 0x1.91fe7p-25;
    static const int p255[] = {255, 255}, p127[] = {127, 127};
    pa[130] = pa[131] = 255;
    pb[130] = pb[131] = 127;
    for (int combo = 0; rc == 0 && combo < 8; combo++) {
        int32_t ta = combo & 4 ? S8 : U8, tb = combo & 2 ? S8 : U8, ty = combo & 1 ? S8 : U8;
        double near = ty == S8 ? near_s8 : near_u8;
        const simple_desc each[N_SIMPLE_EACH] = {
            /* 0.5: spec, onnx-ref, ort 0; ties-away (and gemmlowp) 1 */
            {"tie-half", "a tie without zero point: half to even or away from zero", 1, 1, 1,
             0, 0.5, 1.0, NULL, NULL, 0, 0, 1.0},
            /* 0.5 + 1: spec, ort, truncation 1; onnx-ref, oneDNN, ties-away, zp-before 2 */
            {"tie-odd-zp", "a tie with an odd zero point: added before or after rounding", 1,
             1, 1, 1, 0.5, 1.0, NULL, NULL, 0, 0, 1.0},
            /* 1.5 + 2: 4 but truncation 3 */
            {"tie-even-zp", "a tie with an even zero point: rounded or truncated", 1, 3, 1, 2,
             0.5, 1.0, NULL, NULL, 0, 0, 1.0},
            /* sa·sb = 151.5 - 2^-18 (101.5 - 2^-18): exact 151 (101); a float32 multiplier 152
             * (102) */
            {"near-tie-multiplier", "sa*sb rounded to float32 (onnx-ref, ort, oneDNN) or exact",
             1, 1, 1, 0, 5.0, near, NULL, NULL, 0, 0, 1.0},
            /* acc 5 times near: exact and onnx-ref (double product) 151; float32 product 152 */
            {"near-tie-product", "acc*multiplier rounded to float32 (ort, oneDNN) or not", 1,
             5, 1, 0, near, 1.0, NULL, NULL, 0, 0, 1.0},
            /* 65025: saturated to the top; wrapped 1 */
            {"saturate-high", "saturation at the top, not wrapping", 1, 255, 255, 0, 1.0, 1.0,
             NULL, NULL, 0, 0, 1.0},
            /* -65025: saturated to the bottom; wrapped 255 (-1) */
            {"saturate-low", "saturation at the bottom, not wrapping", 1, 255, -255, 0, 1.0,
             1.0, NULL, NULL, 0, 0, 1.0},
            /* K = 33026 of 255·255 = 2147515650: exact 101, saturated (sat32) 100, wrapped
             * -101 (0 in uint8) */
            {"acc-past-int32", "an accumulator past int32: exact, wrapped or saturated", K_BIG,
             255, 255, 0, m_sat, 1.0, NULL, NULL, 0, 0, 1.0},
            /* 65·85·sa·sb/sy = 100.5 + 6.5e-16 (docs/edge-suites.md, near-ties: the scales'
             * mantissas solve ma·mb·acc − my·201·2^G = 1): exact 101; requantized in float64
             * or float32 the value lands on the tie, 100 */
            {"near-tie-float64-above", "within 2^-50 above a half-integer: float64 "
             "requantization rounds down", 1, 65, 85, 0, 0x1.77e5e2p-3, 0x1.157c68p-3, NULL,
             NULL, 0, 0, 0x1.5dfdc8p+0},
            /* -101·73·sa·sb/sy = -101.5 + 2.1e-16: exact -101 (u8: zy 255, 154); float64 and
             * float32 -102 (153) */
            {"near-tie-float64-below", "within 2^-52 of a negative half-integer: float64 "
             "requantization rounds away", 1, -101, 73, ty == U8 ? 255 : 0, 0x1.d8c9aep-3,
             0x1.0695f4p-3, NULL, NULL, 0, 0, 0x1.1336p+1},
        };
        for (int i = 0; rc == 0 && i < N_SIMPLE_EACH; i++)
            rc = add_simple(s, ta, tb, ty, &each[i], a, b);
        /* u8·s8: 255·127 twice is 64770, 32767 saturated in an int16 pair; times 2^-10: 63
         * exact, 32 pair-saturated. K = 261 in oneDNN's two blocks (131, 130) pairs k = 130
         * alone and (131, 132), so only the unblocked pairs (pairsat16) saturate there. */
        const simple_desc u8s8[2] = {
            {"pair-saturation", "u8*s8 pairs summed in int16 with saturation", 2, 0, 0, 0,
             1.0 / 1024.0, 1.0, p255, p127, 0, 0, 1.0},
            {"pair-blocks", "int16 pairs restarting in oneDNN's K blocks", K_BLOCKS, 0, 0, 0,
             1.0 / 1024.0, 1.0, pa, pb, 0, 0, 1.0},
        };
        /* s8·s8: 127·127 twice: exact 32258 (63 at 2^-9); a shifted to u8 saturates the pair
         * (oneDNN's AVX2 GEMM: 0); with a_zero_point 1 oneDNN's AVX2 matmul takes its exact
         * reference GEMM (31 at 2^-10), the shifted pairs still 0 */
        const simple_desc s8s8[2] = {
            {"shifted-pair-saturation", "s8*s8 through u8*s8 pairs with a shifted by +128", 2,
             0, 0, 0, 1.0 / 512.0, 1.0, p127, p127, 0, 0, 1.0},
            {"shifted-pair-zero-point", "s8 a with a zero point: oneDNN's reference GEMM", 2, 0,
             0, 0, 1.0 / 1024.0, 1.0, p127, p127, 1, 0, 1.0},
        };
        const simple_desc *more = ta == U8 && tb == S8 ? u8s8 : ta == S8 && tb == S8 ? s8s8
                                                                                    : NULL;
        for (int i = 0; rc == 0 && more && i < 2; i++)
            rc = add_simple(s, ta, tb, ty, &more[i], a, b);
        /* s8·u8 without zero points: -128·255 at K = 65795 is -2147548800: exact -101,
         * saturated -100, wrapped 100 (zy 255 in uint8: 154, 155, 255); oneDNN's AVX2 matmul
         * saturates only where an s8 a has a zero point (onednn-avx2 is sat32 in
         * acc-past-int32, the default here) */
        const simple_desc no_zp = {"acc-past-int32-no-zero-point", "an accumulator past int32 "
                                   "without zero points", K_NO_ZP, -128, 255, ty == U8 ? 255 : 0,
                                   m_no_zp, 1.0, NULL, NULL, 0, 0, 1.0};
        if (rc == 0 && ta == S8 && tb == U8)
            rc = add_simple(s, ta, tb, ty, &no_zp, a, b);
    }
    free(a);
    free(b);
    free(pa);
    free(pb);
    return rc;
}

int qh_fp_suite_build(qh_fp_suite *s)
{
    s->count = 0;
    s->cases = calloc(N_CASES, sizeof *s->cases);
    if (!s->cases)
        return -1;
    if (add_small_cases(s) != 0 || add_long_cases(s) != 0 || add_simple_forms(s) != 0) {
        qh_fp_suite_free(s);
        return -1;
    }
    s->n_profiles = qmm_profile_count();
    s->expect = calloc(s->count * (size_t)s->n_profiles, sizeof *s->expect);
    if (!s->expect) {
        qh_fp_suite_free(s);
        return -1;
    }
    for (size_t i = 0; i < s->count; i++)
        for (int p = 0; p < s->n_profiles; p++)
            if (qh_expect(&s->cases[i].oc.call, qmm_profile_name((qmm_profile)p),
                          &s->expect[i * (size_t)s->n_profiles + (size_t)p]) != 0) {
                qh_fp_suite_free(s);
                return -1;
            }
    return 0;
}

void qh_fp_suite_free(qh_fp_suite *s)
{
    for (size_t i = 0; s->expect && i < s->count * (size_t)s->n_profiles; i++)
        qh_expectation_free(&s->expect[i]);
    free(s->expect);
    s->expect = NULL;
    for (size_t i = 0; s->cases && i < s->count; i++)
        qh_owned_call_free(&s->cases[i].oc);
    free(s->cases);
    s->cases = NULL;
    s->count = 0;
}

/* ---- scoring ----------------------------------------------------------------------------- */

static int score_case(qh_backend *b, const qh_fp_case *c, const qh_expectation *ex,
                      const qh_invoke_opts *o, qh_fp_case_result *cr, char *err,
                      size_t err_size)
{
    int rc = 0;
    for (int p = 0; rc == 0 && p < qmm_profile_count(); p++) {
        if (ex[p].code != QMM_OK && ex[p].code != QMM_INVALID_ARGUMENT &&
            ex[p].code != QMM_UNSUPPORTED) {
            snprintf(err, err_size, "%s: reference under %s: %s", c->name, qmm_profile_name((qmm_profile)p),
                     ex[p].message);
            rc = -1;
        }
    }
    qh_invocation inv, again;
    memset(&inv, 0, sizeof inv);
    memset(&again, 0, sizeof again);
    for (int ask = 0; ask < 2 && rc == 0; ask++) {
        qh_invocation *to = ask ? &again : &inv;
        if (qh_invoke(b, &c->oc.call, o, to) != 0) {
            snprintf(err, err_size, "%s: %s", c->name, to->problem);
            qh_append_call_printed(err, err_size, to); /* what it printed (an open that hung) */
            rc = -1;
        }
    }
    if (rc == 0) {
        qh_verdict v;
        qh_verdict_init(&v);
        /* a call that did not return (crashed, hung: a loaded machine's timeout too) is no
           evidence, and not instability either; an answer that did return is evidence: the
           case is scored on it (thrown away, a wrong answer followed by a crash on the second
           ask let a backend be named a profile it is not) */
        if (inv.outcome != QH_RETURNED && again.outcome == QH_RETURNED) {
            qh_invocation t = inv;
            inv = again;
            again = t;
        }
        if (inv.outcome == QH_RETURNED && again.outcome != QH_RETURNED) {
            cr->once = 1;
            qh_clean_into(cr->again, sizeof cr->again, again.problem,
                          strnlen(again.problem, sizeof again.problem), 0);
        } else if (inv.outcome != QH_RETURNED) {
            ;
        } else if (qh_judge_again(&inv, &again, "asked again", &v)) {
            const char *t = v.summary.s ? v.summary.s : "";
            size_t skip = strncmp(t, "not deterministic: ", 19) == 0 ? 19 : 0;
            qh_clean_into(cr->again, sizeof cr->again, t + skip, v.summary.len - skip, 0);
        }
        cr->unstable = cr->again[0] != '\0' && !cr->once;
        qh_verdict_free(&v);
    }
    if (rc == 0) {
        cr->returned = inv.outcome == QH_RETURNED;
        cr->code = inv.code;
        const char *why = cr->returned ? inv.st.message : inv.problem;
        /* the backend's words: one clean line (harness/base/clean.h) */
        qh_clean_into(cr->problem, sizeof cr->problem, why, strnlen(why, sizeof inv.st.message), 0);
        cr->skipped = cr->returned && inv.code == QMM_UNSUPPORTED;
        for (int p = 0; p < qmm_profile_count(); p++) {
            if (ex[p].code == QMM_UNSUPPORTED)
                continue;
            cr->applicable |= QH_PROFILE_BIT(p);
            /* the judge decides, as in run */
            if (cr->returned && !cr->skipped && !cr->unstable && qh_judge_passes(&ex[p], &inv))
                cr->matched |= QH_PROFILE_BIT(p);
        }
    }
    qh_invocation_free(&inv);
    qh_invocation_free(&again);
    return rc;
}

int qh_fingerprint_run(qh_backend *b, const qh_fp_suite *s, const qh_invoke_opts *o,
                       qh_fp_result *r, char *err, size_t err_size)
{
    memset(r, 0, sizeof *r);
    r->closest = -1;
    r->cases = calloc(s->count ? s->count : 1, sizeof *r->cases);
    if (!r->cases) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    r->n_cases = s->count;
    for (size_t i = 0; i < s->count; i++) {
        qh_fp_case_result *cr = &r->cases[i];
        if (score_case(b, &s->cases[i], &s->expect[i * (size_t)s->n_profiles], o, cr, err,
                       err_size) != 0)
            return -1;
        r->unstable += cr->unstable;
        r->returned_once += cr->once;
        if (!cr->returned && !cr->unstable) { /* no answer: no evidence, said apart */
            r->did_not_return++;
            continue;
        }
        if (cr->skipped && !cr->unstable) {
            r->skipped++;
            continue;
        }
        cr->skipped = cr->skipped && !cr->unstable; /* UNSUPPORTED once, not twice: judged */
        for (int p = 0; p < qmm_profile_count(); p++) {
            if (!(cr->applicable & QH_PROFILE_BIT(p)))
                continue;
            r->score[p].total++;
            r->score[p].matched += (int64_t)((cr->matched >> p) & 1u);
        }
    }
    double best = -1.0;
    for (int p = 0; p < qmm_profile_count(); p++) {
        const qh_fp_score *sc = &r->score[p];
        if (sc->total == 0)
            continue;
        if (sc->matched == sc->total)
            r->matching_all |= QH_PROFILE_BIT(p);
        double ratio = (double)sc->matched / (double)sc->total;
        if (ratio > best) {
            best = ratio;
            r->closest = p;
        }
    }
    return 0;
}

void qh_fp_result_free(qh_fp_result *r)
{
    free(r->cases);
    r->cases = NULL;
    r->n_cases = 0;
}

qh_profile_set qh_profiles_simplest(qh_profile_set set)
{
    qh_profile_set kept = set;
    for (int p = 0; p < qmm_profile_count(); p++) {
        int base = (int)qmm_profile_base((qmm_profile)p);
        if (base != p && (set & QH_PROFILE_BIT(p)) && (set & QH_PROFILE_BIT(base)))
            kept &= ~QH_PROFILE_BIT(p);
    }
    return kept;
}

void qh_fp_verdict(const qh_fp_result *r, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    qh_profile_set simplest = qh_profiles_simplest(r->matching_all);
    for (int p = 0; p < qmm_profile_count() && len < size; p++)
        if (simplest & QH_PROFILE_BIT(p))
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
                                    qmm_profile_name((qmm_profile)p));
    if (len == 0)
        snprintf(buf, size, "none");
}

/* ---- the decision -------------------------------------------------------------------------- */

int qh_fp_expectations_differ(const qh_expectation *x, const qh_expectation *y)
{
    if (x->code == QMM_UNSUPPORTED || y->code == QMM_UNSUPPORTED)
        return 0;
    if (x->code != y->code)
        return 1;
    if (x->code != QMM_OK)
        return 0;
    qh_compare cmp;
    qh_compare_outputs(&x->exact, NULL, &y->exact, &cmp);
    return cmp.errors != 0;
}

static const char *type_short(int32_t t)
{
    return t == U8 ? "u8" : t == S8 ? "s8" : qmm_dtype_name(t);
}

/* "QLinearMatMul u8*s8->u8, 2-D, per-tensor, float32 scales" */
static void describe_form(const qmm_call *c, char *buf, size_t size)
{
    if (c->op == QMM_OP_MATMULINTEGER) {
        const qmm_matmulinteger *m = &c->u.matmulinteger;
        snprintf(buf, size, "MatMulInteger %s*%s, %d-D", type_short(m->a.dtype),
                 type_short(m->b.dtype), (int)m->a.rank);
        return;
    }
    const qmm_qlinearmatmul *m = &c->u.qlinearmatmul;
    int per_tensor = qmm_tensor_numel(&m->b_scale) == 1 && qmm_tensor_numel(&m->a_scale) == 1 &&
                     qmm_tensor_numel(&m->y_scale) == 1;
    snprintf(buf, size, "%s %s*%s->%s, %d-D, %s, %s scales", qmm_op_name(c->op),
             type_short(m->a.dtype), type_short(m->b.dtype), type_short(m->y.dtype),
             (int)m->a.rank, per_tensor ? "per-tensor" : "per-column",
             qmm_dtype_name(m->a_scale.dtype));
}

void qh_fp_decide(const qh_fp_suite *s, const qh_fp_result *r, qh_fp_decision *d)
{
    memset(d, 0, sizeof *d);
    d->left = qh_profiles_simplest(r->matching_all);
    for (size_t i = 0; i < r->n_cases; i++) {
        const qh_fp_case_result *cr = &r->cases[i];
        if (cr->skipped || (!cr->returned && !cr->unstable))
            continue;
        d->judged++;
        d->deciding += (cr->applicable & ~cr->matched) != 0;
    }
    int n_left = 0;
    for (int p = 0; p < qmm_profile_count(); p++)
        n_left += (int)((d->left >> p) & 1u);
    if (r->unstable > 0)
        d->kind = QH_FP_UNSTABLE;
    else if (d->judged == 0 || n_left > 1 || (n_left == 1 && d->deciding < QH_FP_MIN_DECIDING))
        d->kind = QH_FP_INCONCLUSIVE;
    else if (n_left == 0)
        d->kind = QH_FP_NONE;
    else
        d->kind = qmm_profile_wrong((qmm_profile)__builtin_ctzll(d->left)) ? QH_FP_WRONG
                                                                          : QH_FP_PROFILE;
    if (d->kind != QH_FP_INCONCLUSIVE)
        return;
    /* the forms of the cases the backend did not judge on which the profiles left differ
     * (every profile when none is left: nothing was judged) */
    qh_profile_set left = n_left > 1 ? d->left : ~(qh_profile_set)0;
    size_t len = 0;
    for (size_t i = 0; i < r->n_cases && i < s->count; i++) {
        const qh_fp_case_result *cr = &r->cases[i];
        if (!cr->skipped && cr->returned)
            continue;
        const qh_expectation *ex = &s->expect[i * (size_t)s->n_profiles];
        int splits = 0;
        for (int p = 0; !splits && p < s->n_profiles; p++)
            for (int q = p + 1; !splits && q < s->n_profiles; q++)
                splits = (left >> p & 1u) && (left >> q & 1u) &&
                         qh_fp_expectations_differ(&ex[p], &ex[q]);
        if (!splits)
            continue;
        char form[160];
        describe_form(&s->cases[i].oc.call, form, sizeof form);
        if (strstr(d->forms, form))
            continue;
        if (len + strlen(form) + 3 >= sizeof d->forms)
            break;
        len += (size_t)snprintf(d->forms + len, sizeof d->forms - len, "%s%s", len ? "; " : "",
                                form);
    }
}
