/* tests/test_float8.c — QLinearMatMul-21's float8 forms (docs/semantics.md §2.6): the four
 * types' decoding and rounding (ops/float8.c) against a table this file builds from the format
 * definitions and against values published in onnx/docs/Float8.md, and the reference's exact
 * results (reference/op-qlinearmatmul.c): ties, saturation, subnormals, signed zeros, NaN and
 * infinity rejected, and every type mix against an oracle of its own.
 * Scales are written as host floats: these tests assume a little-endian host, as the tensor
 * format does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"
#include "tests/rng_support.h"
#include "tests/tensor_support.h"

#define U8 QMM_DTYPE_UINT8
#define I8 QMM_DTYPE_INT8
#define F32 QMM_DTYPE_FLOAT
#define E4M3FN QMM_DTYPE_FLOAT8E4M3FN
#define E4M3FNUZ QMM_DTYPE_FLOAT8E4M3FNUZ
#define E5M2 QMM_DTYPE_FLOAT8E5M2
#define E5M2FNUZ QMM_DTYPE_FLOAT8E5M2FNUZ

static const int32_t float8s[4] = {E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ};
static const int32_t all_types[6] = {U8, I8, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ};

/* ---- the independent table ------------------------------------------------------------------
 * Written from the definitions (Float8.md: "S.EEEE.MMM, bias 7, NaN S.1111.111" and so on),
 * with pow() and per-type special cases, not with the library's shared formula. */

static int is_fnuz(int32_t t) { return t == E4M3FNUZ || t == E5M2FNUZ; }

static double table_value(int32_t t, unsigned code)
{
    int e4 = t == E4M3FN || t == E4M3FNUZ;
    int mbits = e4 ? 3 : 2;
    int bias = t == E4M3FN ? 7 : t == E4M3FNUZ ? 8 : t == E5M2 ? 15 : 16;
    unsigned sign = code >> 7, exp = (code >> mbits) & (e4 ? 15u : 31u);
    unsigned mant = code & ((1u << mbits) - 1u);
    if (is_fnuz(t) && code == 0x80)
        return NAN;
    if (t == E4M3FN && exp == 15 && mant == 7)
        return NAN;
    if (t == E5M2 && exp == 31)
        return mant ? NAN : sign ? -INFINITY : INFINITY;
    double v = exp == 0 ? mant / pow(2.0, mbits) * pow(2.0, 1 - bias)
                        : (1.0 + mant / pow(2.0, mbits)) * pow(2.0, (double)exp - bias);
    return sign ? -v : v;
}

static int same_value(double x, double y)
{
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y);
    return x == y && signbit(x) == signbit(y);
}

Test(decode, all_256_codes_of_each_type_against_the_table)
{
    for (int ti = 0; ti < 4; ti++)
        for (unsigned code = 0; code < 256; code++) {
            int32_t t = float8s[ti];
            double got = qmm_float8_decode(t, (uint8_t)code), want = table_value(t, code);
            cr_expect(same_value(got, want), "%s 0x%02x: got %.17g, want %.17g",
                      qmm_dtype_name(t), code, got, want);
            if (isfinite(want))
                cr_expect_eq(qmm_float8_scaled(t, (uint8_t)code),
                             (int64_t)ldexp(want, qmm_float8_format_of(t)->shift));
        }
}

Test(decode, published_values)
{
    /* onnx/docs/Float8.md's table: largest finite, smallest subnormal, the special codes */
    cr_expect_eq(qmm_float8_decode(E4M3FN, 0x7e), 448.0);
    cr_expect_eq(qmm_float8_decode(E4M3FN, 0xfe), -448.0);
    cr_expect_eq(qmm_float8_decode(E4M3FN, 0x01), ldexp(1, -9));
    cr_expect(isnan(qmm_float8_decode(E4M3FN, 0x7f)) && isnan(qmm_float8_decode(E4M3FN, 0xff)));
    cr_expect(same_value(qmm_float8_decode(E4M3FN, 0x80), -0.0));
    cr_expect_eq(qmm_float8_decode(E4M3FNUZ, 0x7f), 240.0);
    cr_expect_eq(qmm_float8_decode(E4M3FNUZ, 0x01), ldexp(1, -10));
    cr_expect(isnan(qmm_float8_decode(E4M3FNUZ, 0x80)));
    cr_expect_eq(qmm_float8_decode(E5M2, 0x7b), 57344.0);
    cr_expect_eq(qmm_float8_decode(E5M2, 0x01), ldexp(1, -16));
    cr_expect_eq(qmm_float8_decode(E5M2, 0x7c), INFINITY);
    cr_expect_eq(qmm_float8_decode(E5M2, 0xfc), -INFINITY);
    cr_expect(isnan(qmm_float8_decode(E5M2, 0x7d)));
    cr_expect_eq(qmm_float8_decode(E5M2FNUZ, 0x7f), 57344.0);
    cr_expect_eq(qmm_float8_decode(E5M2FNUZ, 0x01), ldexp(1, -17));
    cr_expect(isnan(qmm_float8_decode(E5M2FNUZ, 0x80)));
    /* 1.0 in each: exponent field = bias */
    cr_expect_eq(qmm_float8_decode(E4M3FN, 0x38), 1.0);
    cr_expect_eq(qmm_float8_decode(E4M3FNUZ, 0x40), 1.0);
    cr_expect_eq(qmm_float8_decode(E5M2, 0x3c), 1.0);
    cr_expect_eq(qmm_float8_decode(E5M2FNUZ, 0x40), 1.0);
}

/* ---- the independent rounding oracle --------------------------------------------------------
 * The rule of §2.6 read literally: the finite code nearest to t by scanning all of them, an
 * equal distance going to the even code (the even significand), |t| at or beyond the largest
 * finite saturated, an exact 0 +0, a negative value that rounds to zero -0 where there is one. */

static uint8_t oracle_round(int32_t t, double v)
{
    double max = 0;
    unsigned max_code = 0;
    for (unsigned c = 0; c < 128; c++) {
        double x = table_value(t, c);
        if (isfinite(x) && x > max) {
            max = x;
            max_code = c;
        }
    }
    if (v == 0)
        return 0x00;
    double a = fabs(v);
    unsigned best = 0;
    if (a >= max) {
        best = max_code;
    } else {
        for (unsigned c = 1; c < 128; c++) {
            double x = table_value(t, c);
            if (!isfinite(x))
                continue;
            double d = fabs(x - a), db = fabs(table_value(t, best) - a);
            if (d < db || (d == db && c % 2 == 0))
                best = c;
        }
    }
    if (v < 0 && !(best == 0 && is_fnuz(t)))
        best |= 0x80;
    return (uint8_t)best;
}

Test(encode, every_code_and_every_midpoint_against_the_oracle)
{
    for (int ti = 0; ti < 4; ti++) {
        int32_t t = float8s[ti];
        for (unsigned c = 0; c < 256; c++) {
            double v = table_value(t, c);
            if (!isfinite(v))
                continue;
            if (!(is_fnuz(t) && c == 0x80))
                cr_expect_eq(qmm_float8_encode(t, v), c, "%s 0x%02x round trip", qmm_dtype_name(t), c);
            /* the midpoint to the next code up in magnitude, and either side of it */
            double w = table_value(t, (c & 0x80) | ((c & 0x7f) + 1));
            if ((c & 0x7f) == 0x7f || !isfinite(w))
                continue;
            double mid = (v + w) / 2, eps = fabs(w - v) / 64;
            double probes[3] = {mid, mid - eps, mid + eps};
            for (int p = 0; p < 3; p++)
                cr_expect_eq(qmm_float8_encode(t, probes[p]), oracle_round(t, probes[p]),
                             "%s: %.17g", qmm_dtype_name(t), probes[p]);
        }
    }
}

Test(encode, ties_saturation_subnormals_and_zeros)
{
    /* e4m3fn 1.0625 lies halfway between 1 (0x38, even) and 1.125 (0x39): 0x38; 1.1875
     * halfway between 0x39 (odd) and 1.25 (0x3a): 0x3a */
    cr_expect_eq(qmm_float8_encode(E4M3FN, 1.0625), 0x38);
    cr_expect_eq(qmm_float8_encode(E4M3FN, 1.1875), 0x3a);
    cr_expect_eq(qmm_float8_encode(E4M3FN, -1.1875), 0xba);
    /* saturation at both ends, infinities included (QuantizeLinear saturate=1) */
    cr_expect_eq(qmm_float8_encode(E4M3FN, 449), 0x7e);
    cr_expect_eq(qmm_float8_encode(E4M3FN, 1e30), 0x7e);
    cr_expect_eq(qmm_float8_encode(E4M3FN, -INFINITY), 0xfe);
    cr_expect_eq(qmm_float8_encode(E4M3FNUZ, 1e9), 0x7f);
    cr_expect_eq(qmm_float8_encode(E4M3FNUZ, -241), 0xff);
    cr_expect_eq(qmm_float8_encode(E5M2, 61440), 0x7b); /* 57344 + half its ulp: saturates */
    cr_expect_eq(qmm_float8_encode(E5M2, -1e6), 0xfb);
    cr_expect_eq(qmm_float8_encode(E5M2FNUZ, 1e6), 0x7f);
    cr_expect_eq(qmm_float8_encode(E5M2FNUZ, -1e6), 0xff);
    /* subnormals: half the smallest is a tie with 0 (even); three quarters rounds up */
    cr_expect_eq(qmm_float8_encode(E4M3FN, ldexp(1, -10)), 0x00);
    cr_expect_eq(qmm_float8_encode(E4M3FN, ldexp(3, -11)), 0x01);
    cr_expect_eq(qmm_float8_encode(E4M3FN, ldexp(3, -10)), 0x02); /* 1.5 units: tie to 2 */
    cr_expect_eq(qmm_float8_encode(E5M2FNUZ, ldexp(5, -19)), 0x01);
    /* zeros: a negative value that rounds to zero is -0 where there is one */
    cr_expect_eq(qmm_float8_encode(E4M3FN, -ldexp(1, -10)), 0x80);
    cr_expect_eq(qmm_float8_encode(E5M2, -ldexp(1, -20)), 0x80);
    cr_expect_eq(qmm_float8_encode(E4M3FNUZ, -ldexp(1, -12)), 0x00);
    cr_expect_eq(qmm_float8_encode(E5M2FNUZ, -0.0), 0x00);
    cr_expect_eq(qmm_float8_encode(E4M3FN, -0.0), 0x80);
}

/* ---- the reference ------------------------------------------------------------------------- */

#define SF(x) mk(F32, (float[]){(x)}, 0)
#define S8(t, x) mk((t), (uint8_t[]){(x)}, 0)

/* y (1x1) = a (1xK) times b (Kx1), per-tensor parameters given as codes. */
typedef struct small {
    int32_t ta, tb, ty;
    uint8_t a[4], b[4];
    int k;
    float sa, sb, sy;
    uint8_t za, zb, zy;
} small;

static qmm_status_code run_small(const small *p, uint8_t *y, qmm_status *st)
{
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_QLINEARMATMUL;
    float sa = p->sa, sb = p->sb, sy = p->sy;
    uint8_t a[4], b[4], za = p->za, zb = p->zb, zy = p->zy;
    memcpy(a, p->a, sizeof a);
    memcpy(b, p->b, sizeof b);
    c.u.qlinearmatmul = (qmm_qlinearmatmul){
        .a = mk(p->ta, a, 2, 1, p->k), .a_scale = mk(F32, &sa, 0), .a_zero_point = mk(p->ta, &za, 0),
        .b = mk(p->tb, b, 2, p->k, 1), .b_scale = mk(F32, &sb, 0), .b_zero_point = mk(p->tb, &zb, 0),
        .y_scale = mk(F32, &sy, 0), .y_zero_point = mk(p->ty, &zy, 0),
        .y = mk(p->ty, y, 2, 1, 1), .opset = 21};
    return qmm_ref_compute(&c, NULL, NULL, st);
}

static uint8_t small_ok(const small *p)
{
    uint8_t y = 0xaa;
    qmm_status st;
    qmm_status_code rc = run_small(p, &y, &st);
    cr_assert_eq(rc, QMM_OK, "%s", st.message);
    return y;
}

static void small_fails(const small *p, const char *needle)
{
    uint8_t y;
    qmm_status st;
    cr_assert_eq(run_small(p, &y, &st), QMM_INVALID_ARGUMENT, "%s", st.message);
    cr_assert(strstr(st.message, needle), "'%s' lacks '%s'", st.message, needle);
}

Test(reference, float8_output_ties_to_even_and_odd_neighbours)
{
    /* x = 17 * (1/16) = 1.0625: halfway between 0x38 (1, even) and 0x39; 19/16 = 1.1875
     * halfway between 0x39 and 0x3a (1.25, even) */
    small p = {U8, U8, E4M3FN, {17}, {1}, 1, 0.0625f, 1, 1, 0, 0, 0x00};
    cr_expect_eq(small_ok(&p), 0x38);
    p.a[0] = 19;
    cr_expect_eq(small_ok(&p), 0x3a);
    /* the same with zy added before the single rounding: 1/16 + 1 (0x38) = 1.0625 -> 0x38;
     * 3/16 + 1 = 1.1875 -> 0x3a; rounding x first would give 0x38 + 0x38 -> 2 both times */
    p.zy = 0x38;
    p.a[0] = 1;
    cr_expect_eq(small_ok(&p), 0x38);
    p.a[0] = 3;
    cr_expect_eq(small_ok(&p), 0x3a);
}

Test(reference, float8_output_saturates_at_both_ends)
{
    small p = {U8, U8, E4M3FN, {255}, {255}, 1, 1, 1, 1, 0, 0, 0x00}; /* 65025 */
    cr_expect_eq(small_ok(&p), 0x7e);
    p.ty = E5M2;
    cr_expect_eq(small_ok(&p), 0x7b); /* 65025 > 57344 */
    p.ta = I8;
    p.a[0] = 0x80; /* -128 * 255 * 2 = -65280 */
    p.sa = 2;
    cr_expect_eq(small_ok(&p), 0xfb);
    p.ty = E4M3FNUZ;
    cr_expect_eq(small_ok(&p), 0xff);
    p.ty = E5M2FNUZ;
    cr_expect_eq(small_ok(&p), 0xff);
}

Test(reference, float8_zeros_and_subnormal_outputs)
{
    /* x = -1 * 2^-11: a quarter of the smallest e4m3fn subnormal, negative: rounds to -0 */
    small p = {I8, U8, E4M3FN, {0xff}, {1}, 1, 0.00048828125f, 1, 1, 0, 0, 0x00};
    cr_expect_eq(small_ok(&p), 0x80);
    p.ty = E4M3FNUZ; /* half its smallest (2^-10), a tie with 0; no -0 */
    cr_expect_eq(small_ok(&p), 0x00);
    /* x = 6 * 2^-11 = 1.5 smallest e4m3fn subnormals: ties to 2 units (0x02) */
    p.ty = E4M3FN;
    p.a[0] = 6;
    cr_expect_eq(small_ok(&p), 0x02);
    /* an exact zero is +0, even with y_zero_point -0 (0x80) */
    p.a[0] = 0;
    p.zy = 0x80;
    cr_expect_eq(small_ok(&p), 0x00);
    /* and a nonzero x cancelled exactly by zy: 1 - 1 = +0 */
    p.a[0] = 1;
    p.sa = 1;
    p.zy = 0xb8; /* -1 */
    cr_expect_eq(small_ok(&p), 0x00);
}

Test(reference, float8_inputs_with_integer_outputs)
{
    /* e5m2 a = 1.5 (0x3e), 2.5 (0x41): RNE gives 2 and 2 */
    small p = {E5M2, U8, I8, {0x3e}, {1}, 1, 1, 1, 1, 0x00, 0, 0};
    cr_expect_eq(small_ok(&p), 2);
    p.a[0] = 0x41;
    cr_expect_eq(small_ok(&p), 2);
    /* a subnormal input: e5m2fnuz 2^-17 (0x01) times a_scale 2^17, and its one zero as za */
    p.ta = E5M2FNUZ;
    p.a[0] = 0x01;
    p.sa = 131072.0f;
    cr_expect_eq(small_ok(&p), 1);
    /* a - za with both float8: e4m3fnuz 240 (0x7f) - (-240) (0xff) = 480 * b 1 -> sat 127 */
    p.ta = E4M3FNUZ;
    p.a[0] = 0x7f;
    p.za = 0xff;
    p.sa = 1;
    cr_expect_eq(small_ok(&p), 127);
    /* the largest finite values minus the most negative zero points: 2 * (448 + 448) *
     * (57344 + 57344) = 205520896 saturates a uint8 y; divided by y_scale 1e30 it is 0 */
    small q = {E4M3FN, E5M2, U8, {0x7e, 0x7e}, {0x7b, 0x7b}, 2, 1, 1, 1, 0xfe, 0xfb, 0};
    cr_expect_eq(small_ok(&q), 255);
    q.sy = 1e30f;
    cr_expect_eq(small_ok(&q), 0); /* 2 * 896 * 114688 / 1e30 */
}

Test(reference, nan_and_infinity_inputs_are_invalid)
{
    small p = {E5M2, U8, U8, {0x7c}, {1}, 1, 1, 1, 1, 0, 0, 0};
    small_fails(&p, "a[0]: float8e5m2 code 0x7c is +inf");
    p.a[0] = 0x3c;
    p.za = 0xfe;
    small_fails(&p, "a_zero_point[0]: float8e5m2 code 0xfe is NaN");
    small q = {U8, E4M3FNUZ, U8, {1}, {0x80}, 1, 1, 1, 1, 0, 0, 0};
    small_fails(&q, "b[0]: float8e4m3fnuz code 0x80 is NaN");
    small r = {U8, U8, E4M3FN, {1}, {1}, 1, 1, 1, 1, 0, 0, 0xff};
    small_fails(&r, "y_zero_point[0]: float8e4m3fn code 0xff is NaN");
}

/* ---- every type mix against an oracle -------------------------------------------------------
 * Values are kept where double arithmetic is exact: float8 codes with |v| in [2^-4, 2^4] or
 * zero, integers as they are, power-of-two scales; so x + zy is computed exactly here and
 * rounded by oracle_round or by RNE with saturation. */

static double value_of(int32_t t, uint8_t code)
{
    return t == U8 ? code : t == I8 ? (int8_t)code : table_value(t, code);
}

static uint8_t draw(uint64_t *r, int32_t t)
{
    for (;;) {
        uint8_t c = (uint8_t)splitmix64(r);
        if (t == U8 || t == I8)
            return c;
        double v = table_value(t, c);
        if (isfinite(v) && (v == 0 || (fabs(v) >= 0.0625 && fabs(v) <= 16)))
            return c;
    }
}

static uint8_t oracle(int32_t ty, double x, uint8_t zy)
{
    if (ty == U8 || ty == I8) {
        double r = nearbyint(x); /* default rounding mode: ties to even */
        r += value_of(ty, zy);
        double lo = ty == U8 ? 0 : -128, hi = ty == U8 ? 255 : 127;
        r = r < lo ? lo : r > hi ? hi : r;
        return (uint8_t)(int8_t)(int)r;
    }
    return oracle_round(ty, x + table_value(ty, zy));
}

Test(mixes, every_t1_t2_t3_against_the_oracle)
{
    uint64_t r = 21;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            for (int l = 0; l < 6; l++)
                for (int rep = 0; rep < 40; rep++) {
                    small p = {all_types[i], all_types[j], all_types[l], {0}, {0}, 4, 1, 1, 1,
                               0, 0, 0};
                    for (int k = 0; k < 4; k++) {
                        p.a[k] = draw(&r, p.ta);
                        p.b[k] = draw(&r, p.tb);
                    }
                    p.za = draw(&r, p.ta);
                    p.zb = draw(&r, p.tb);
                    p.zy = draw(&r, p.ty);
                    p.sa = ldexpf(1, (int)(splitmix64(&r) % 7) - 3);
                    p.sb = ldexpf(1, (int)(splitmix64(&r) % 7) - 3);
                    p.sy = ldexpf(1, (int)(splitmix64(&r) % 13) - 2);
                    double acc = 0;
                    for (int k = 0; k < 4; k++)
                        acc += (value_of(p.ta, p.a[k]) - value_of(p.ta, p.za)) *
                               (value_of(p.tb, p.b[k]) - value_of(p.tb, p.zb));
                    double x = (double)p.sa * p.sb * acc / p.sy;
                    uint8_t want = oracle(p.ty, x, p.zy), got = small_ok(&p);
                    cr_expect_eq(got, want, "%s x %s -> %s: x = %.17g, zy 0x%02x: got 0x%02x, "
                                 "want 0x%02x", qmm_dtype_name(p.ta), qmm_dtype_name(p.tb),
                                 qmm_dtype_name(p.ty), x, p.zy, got, want);
                }
}

Test(profiles, every_profile_but_spec_says_why_it_does_not_compute_float8)
{
    uint8_t y;
    small p = {E4M3FN, U8, U8, {0x38}, {1}, 1, 1, 1, 1, 0, 0, 0};
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_QLINEARMATMUL;
    float s = 1;
    uint8_t a = p.a[0], b = 1, z = 0;
    c.u.qlinearmatmul = (qmm_qlinearmatmul){
        .a = mk(E4M3FN, &a, 2, 1, 1), .a_scale = mk(F32, &s, 0), .a_zero_point = mk(E4M3FN, &z, 0),
        .b = mk(U8, &b, 2, 1, 1), .b_scale = mk(F32, &s, 0), .b_zero_point = mk(U8, &z, 0),
        .y_scale = mk(F32, &s, 0), .y_zero_point = mk(U8, &z, 0), .y = mk(U8, &y, 2, 1, 1),
        .opset = 21};
    for (int i = 0; i < qmm_profile_count(); i++) {
        qmm_status st;
        qmm_status_code sup = qmm_ref_profile_supports(&c, (qmm_profile)i, &st);
        qmm_status_code rc = qmm_ref_compute_profile(&c, (qmm_profile)i, &st);
        if (i == QMM_PROFILE_SPEC) {
            cr_expect_eq(sup, QMM_OK);
            cr_expect_eq(rc, QMM_OK, "%s", st.message);
            cr_expect_eq(y, 1);
            continue;
        }
        cr_expect_eq(sup, QMM_UNSUPPORTED, "%s", qmm_profile_name((qmm_profile)i));
        cr_expect_eq(rc, QMM_UNSUPPORTED, "%s: %s", qmm_profile_name((qmm_profile)i), st.message);
        cr_expect(strstr(st.message, ": float8: "), "%s", st.message);
    }
    /* an invalid float8 call is INVALID_ARGUMENT under every profile */
    a = 0x7f;
    for (int i = 0; i < qmm_profile_count(); i++) {
        qmm_status st;
        cr_expect_eq(qmm_ref_compute_profile(&c, (qmm_profile)i, &st), QMM_INVALID_ARGUMENT,
                     "%s: %s", qmm_profile_name((qmm_profile)i), st.message);
    }
}
