/* reference/profiles.c — the non-spec semantics profiles (docs/semantics.md §5, docs/profiles.md).
 *
 * Each profile imitates one implementation's arithmetic step by step, so every rounding is
 * spelled out here rather than left to the host's float types: float32, float16 and bfloat16
 * roundings go through qmm_round_to_scale_type() (ops/scales.c), which depends neither on the
 * FP rounding mode nor on compiler support for half types. Operations are done in double and
 * then narrowed; for + - * / that double rounding is innocuous whenever 53 >= 2p + 2 (p = 24,
 * 11, 8 here), so the result is the correctly rounded narrow one. This file is compiled with
 * -ffp-contract=off (reference/CMakeLists.txt): a fused multiply-add would skip a rounding the
 * imitated code performs. Like ops/scales.c it uses no libm function but ldexp, so linking the
 * reference needs no -lm.
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference/ref_internal.h"

/* ---- shared element access --------------------------------------------------------------- */

static double fl32(double x)
{
    return qmm_round_to_scale_type(QMM_DTYPE_FLOAT, x);
}

typedef struct elem_params {
    int64_t za, zb, zy;
    double sa, sb, sy;
    qmm_ref_exact *exact; /* scratch for spec's rational requantization */
} elem_params;

static double scale_at(const qmm_tensor *s, const qmm_param_map *map, const qmm_geometry *g,
                       int64_t bi, int64_t i, int64_t j)
{
    return qmm_scale_decode(s->dtype, s->data, qmm_param_offset(map, g, bi, i, j));
}

static void params_at(const qmm_qlinearmatmul *c, const qmm_geometry *g,
                      const qmm_param_map *maps, int64_t bi, int64_t i, int64_t j,
                      elem_params *p)
{
    p->za = qmm_ref_zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
    p->zb = qmm_ref_zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
    p->zy = qmm_ref_zero_point(&c->y_zero_point, &maps[QMM_MAP_Y_ZERO_POINT], g, bi, i, j);
    p->sa = scale_at(&c->a_scale, &maps[QMM_MAP_A_SCALE], g, bi, i, j);
    p->sb = scale_at(&c->b_scale, &maps[QMM_MAP_B_SCALE], g, bi, i, j);
    p->sy = scale_at(&c->y_scale, &maps[QMM_MAP_Y_SCALE], g, bi, i, j);
}

/* How a profile's imitated implementation forms the int32 accumulator (docs/profiles.md,
 * "Accumulation models"). */
typedef enum acc_model {
    /* numpy's int32 matmul, MLAS's int32 kernels: the exact sum taken modulo 2^32, what any
     * order of wrapping int32 additions gives */
    ACC_WRAP32,
    /* oneDNN's reference int8 GEMM: the exact sum (computed in double), saturated to int32 */
    ACC_SAT32,
    /* x86 AVX2 u8·s8 kernels (MLAS's, oneDNN's): vpmaddubsw multiplies the u8 bytes of a by
     * the s8 bytes of b and adds each adjacent pair along K (k = 0,1; 2,3; ...; an odd K's
     * last product alone) into int16 with signed saturation; the int16 sums are widened and
     * added in int32, and the zero points are corrected exactly afterwards from row and column
     * sums. Other type pairs are accumulated as ACC_WRAP32. */
    ACC_PAIRSAT16,
    /* oneDNN's AVX2 int8 GEMM: u8·s8 as ACC_PAIRSAT16, and s8·s8 through the same
     * instruction after shifting a into u8 (a + 128), the pairs saturated likewise, then
     * 128·Σb subtracted exactly (its compensation). Its GEMM driver cuts K into blocks
     * (onednn_k_block) and the pairs restart at each block: an odd block's last product
     * stands alone, and the next block's first product pairs with the one after it. */
    ACC_PAIRSAT16_S8SHIFT,
    /* oneDNN 2.6's int32 (s32) destination on AVX-512 (measured on Zen 4, AVX-512 VNNI): the
     * exact sum wrapped to int32 is converted to float32 (RNE), clamped to 2147483520 (the
     * largest float32 below 2^31) and converted back, so past 2^24 the low bits are lost:
     * K = 10001 of -127 * 127 gives -161306128 for -161306129. */
    ACC_WRAP32_VIA_F32,
} acc_model;

/* The K blocks of oneDNN 2.6's x64 int8 GEMM driver on AVX2 without VNNI (get_k_padd in
 * src/cpu/x64/gemm/gemm_driver.cpp, bk_traditional = 256 and bk = 384 from gemm_info.cpp): one
 * block up to 256, two halves (the first ceil(K/2)) below 768, blocks of 384 from there.
 * Measured through libdnnl 2.6.3 on Zen 3 for K up to 5000: K = 261 pairs k = 130 alone and
 * then (131, 132), which no unblocked pairing reproduces. */
static int64_t onednn_k_block(int64_t k)
{
    return k <= 256 ? k : k < 768 ? (k + 1) / 2 : 384;
}

/* The pair-saturated sum of (a + shift)·b along K, the pairs restarting every `block`
 * products, the shift and the zero points corrected exactly afterwards. */
static int64_t pairsat16_sum(const qmm_tensor *a, const qmm_tensor *b, const qmm_geometry *g,
                             int64_t bi, int64_t i, int64_t j, int64_t za, int64_t zb,
                             int64_t shift, int64_t block)
{
    int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
    int64_t bo = qmm_geometry_b_offset(g, bi) + j;
    int64_t raw = 0, sum_a = 0, sum_b = 0;
    for (int64_t k = 0; k < g->k; k += 2) {
        int64_t end = (k / block + 1) * block; /* the end of k's block */
        int64_t a0 = qmm_load_q8(a, ao + k), b0 = qmm_load_q8(b, bo + k * g->n);
        int64_t pair = (a0 + shift) * b0;
        sum_a += a0;
        sum_b += b0;
        if (k + 1 == end) {
            k--; /* an odd block's last product alone; the next pair starts at k + 1 */
        } else if (k + 1 < g->k) {
            int64_t a1 = qmm_load_q8(a, ao + k + 1), b1 = qmm_load_q8(b, bo + (k + 1) * g->n);
            pair += (a1 + shift) * b1;
            sum_a += a1;
            sum_b += b1;
        }
        raw += pair < INT16_MIN ? INT16_MIN : pair > INT16_MAX ? INT16_MAX : pair;
    }
    return raw - shift * sum_b - zb * sum_a - za * sum_b + g->k * za * zb;
}

static int32_t model_acc(acc_model model, const qmm_tensor *a, const qmm_tensor *b,
                         const qmm_geometry *g, int64_t bi, int64_t i, int64_t j, int64_t za,
                         int64_t zb)
{
    int s8_b = b->dtype == QMM_DTYPE_INT8;
    int64_t block = model == ACC_PAIRSAT16_S8SHIFT ? onednn_k_block(g->k) : g->k;
    int pairs = model == ACC_PAIRSAT16 || model == ACC_PAIRSAT16_S8SHIFT;
    if (pairs && s8_b && a->dtype == QMM_DTYPE_UINT8)
        return qmm_wrap_int32(pairsat16_sum(a, b, g, bi, i, j, za, zb, 0, block));
    if (model == ACC_PAIRSAT16_S8SHIFT && s8_b && a->dtype == QMM_DTYPE_INT8)
        return qmm_wrap_int32(pairsat16_sum(a, b, g, bi, i, j, za, zb, 128, block));
    int64_t exact = qmm_ref_matmul_acc(a, b, g, bi, i, j, za, zb);
    if (model == ACC_SAT32)
        return exact < INT32_MIN ? INT32_MIN : exact > INT32_MAX ? INT32_MAX : (int32_t)exact;
    if (model == ACC_WRAP32_VIA_F32) {
        double f = fl32((double)qmm_wrap_int32(exact)); /* integral: |f| >= 2^24 or exact */
        return f > 2147483520.0 ? 2147483520 : (int32_t)f;
    }
    return qmm_wrap_int32(exact);
}

static void q8_limits(int32_t dtype, int64_t *qmin, int64_t *qmax)
{
    *qmin = dtype == QMM_DTYPE_INT8 ? -128 : 0;
    *qmax = dtype == QMM_DTYPE_INT8 ? 127 : 255;
}

/* An integral (or infinite) double clamped into [qmin, qmax]. */
static int64_t clamp_integral(double v, int64_t qmin, int64_t qmax)
{
    if (v <= (double)qmin)
        return qmin;
    if (v >= (double)qmax)
        return qmax;
    return (int64_t)v;
}

/* ---- onnx-ref ---------------------------------------------------------------------------- */

/* onnx.reference's QLinearMatMul: C = int32 matmul; D = C * (a_scale * b_scale / y_scale)
 * with the multiplier computed in the scales' numpy type and the product promoted to float64;
 * D += y_zero_point; rint; clip to the output type (onnx >= 1.22; older versions wrap in
 * astype). NaN (0 * inf, only when the multiplier overflows the scales' type) becomes 0, as
 * numpy's NaN-to-integer cast gives on x86-64. */
static int64_t onnx_ref_element(int32_t acc, const elem_params *p, int32_t sdtype,
                                int64_t qmin, int64_t qmax)
{
    double m = qmm_round_to_scale_type(sdtype, p->sa * p->sb);
    m = qmm_round_to_scale_type(sdtype, m / p->sy);
    double d = (double)acc * m;
    d = d + (double)p->zy;
    if (isnan(d))
        return 0;
    return clamp_integral(qmm_round_half_even(d), qmin, qmax);
}

/* ---- ort-fp32 ---------------------------------------------------------------------------- */

/* ONNX Runtime CPU: output scale = a_scale * b_scale / y_scale in float; MLAS requantization
 * float(acc) * scale, clamped to [qmin - zy, qmax - zy], converted with RNE, plus zy. The
 * clamp bounds are integers, so that equals clamp(RNE(.) + zy). A NaN product (0 * inf, only
 * when the float multiplier overflows) gives qmin: MLAS's SSE2 clamp is MAXPS then MINPS,
 * which return the bound when the value is NaN. */
static int64_t ort_fp32_element(int32_t acc, const elem_params *p, int32_t sdtype, int64_t qmin,
                                int64_t qmax)
{
    double m = fl32(fl32(p->sa * p->sb) / p->sy);
    double fa = fl32((double)acc); /* rounds once |acc| > 2^24 */
    double v = fl32(fa * m);       /* the float product is exact in double */
    if (isnan(v))
        return qmin;
    return clamp_integral(qmm_round_half_even(v) + (double)p->zy, qmin, qmax);
}

/* ---- onednn-fp32 ------------------------------------------------------------------------- */

/* oneDNN 2.6 int8 matmul (x64 CPU) as an ONNX front end drives it: the output scale
 * sa·sb/sy is formed in double and rounded once to float (the caller's runtime
 * DNNL_ARG_ATTR_OUTPUT_SCALES argument; peers/onednn/onednn_peer.c); the kernel converts the
 * accumulator to float, multiplies by the scale in float, adds the destination zero point in
 * float, converts with round-to-nearest-even (cvtps2dq in the default MXCSR mode) and
 * saturates to the output type: the zero point is added before rounding, in float. */
static int64_t onednn_fp32_element(int32_t acc, const elem_params *p, int32_t sdtype,
                                   int64_t qmin, int64_t qmax)
{
    (void)sdtype;
    double m = fl32(p->sa * p->sb / p->sy); /* sa·sb is exact in double */
    double v = fl32(fl32((double)acc) * m);
    v = fl32(v + (double)p->zy);
    if (isnan(v))
        return qmin;
    return clamp_integral(qmm_round_half_even(v), qmin, qmax);
}

/* ---- gemmlowp -------------------------------------------------------------------------- */

/* gemmlowp's OutputStageQuantizeDownInt32ByFixedPoint as TFLite drives it (docs/profiles.md,
 * "gemmlowp"). The real multiplier M = sa·sb/sy is formed in double from the float scales and
 * quantized as TFLite's QuantizeMultiplier does: M = q·2^e with q in [0.5, 1) (frexp),
 * multiplier = q·2^31 rounded half away from zero, halved with e + 1 when that reaches 2^31. */
static void gemmlowp_multiplier(double m, int64_t *mult, int *e)
{
    int ex = 0;
    double q = frexp(m, &ex);
    double f = ldexp(q, 31); /* exact */
    int64_t fixed = (int64_t)(f + 0.5); /* f > 0: half away from zero */
    if (fixed == (int64_t)1 << 31) {
        fixed /= 2;
        ex++;
    }
    *mult = fixed;
    *e = ex;
}

/* SaturatingRoundingDoublingHighMul (gemmlowp/fixedpoint/fixedpoint.h): (a·b + nudge) / 2^31
 * truncated, nudge 2^30 for a·b >= 0 and 1 - 2^30 below: the doubled high half rounded half
 * away from zero; INT32_MIN · INT32_MIN, its one overflow, gives INT32_MAX. */
static int64_t srdhm(int64_t a, int64_t b)
{
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    int64_t ab = a * b;
    return (ab + (ab >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30))) / ((int64_t)1 << 31);
}

/* RoundingDivideByPOT (fixedpoint.h): (x >> s) + (remainder > threshold), remainder the low s
 * bits, threshold half the mask plus 1 for negative x: x / 2^s rounded half away from zero. */
static int64_t rounding_divide_by_pot(int64_t x, int s)
{
    int64_t mask = ((int64_t)1 << s) - 1;
    int64_t rem = x & mask, threshold = (mask >> 1) + (x < 0);
    return (x >> s) + (rem > threshold); /* arithmetic shift: floor */
}

/* gemmlowp computes u8·u8 -> u8 with one multiplier and one offset per GEMM. */
static const char *gemmlowp_forms(const qmm_call *call)
{
    const qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    if (call->op != QMM_OP_QLINEARMATMUL)
        return NULL;
    if (c->a.dtype != QMM_DTYPE_UINT8 || c->b.dtype != QMM_DTYPE_UINT8 ||
        c->y.dtype != QMM_DTYPE_UINT8)
        return "uint8 x uint8 -> uint8 only";
    const qmm_tensor *p[6] = {&c->a_scale, &c->a_zero_point, &c->b_scale, &c->b_zero_point,
                              &c->y_scale, &c->y_zero_point};
    for (int i = 0; i < 6; i++)
        if (qmm_tensor_present(p[i]) && qmm_tensor_numel(p[i]) != 1)
            return "per-tensor parameters only (one multiplier and one offset)";
    return NULL;
}

static qmm_status_code qlm_gemmlowp(qmm_call *call, const qmm_ref_part *part, qmm_status *st)
{
    qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    qmm_plan plan;
    QMM_TRY(qmm_validate_qlinearmatmul(c, &plan, st));
    const char *why = gemmlowp_forms(call);
    if (why)
        return qmm_status_set(st, QMM_UNSUPPORTED, "gemmlowp: %s", why);
    /* per-tensor parameters (the row's forms): one multiplier */
    double m = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data, 0) *
               qmm_scale_decode(c->b_scale.dtype, c->b_scale.data, 0) /
               qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, 0);
    int64_t mult;
    int e;
    gemmlowp_multiplier(m, &mult, &e);
    if (e > 0)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "gemmlowp: sa*sb/sy = %.17g >= 1: the stage only shifts right", m);
    if (e < -31)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "gemmlowp: sa*sb/sy = %.17g < 2^-32 quantizes to multiplier 0", m);
    const qmm_geometry *g = &plan.g;
    int64_t za = qmm_load_q8(&c->a_zero_point, 0), zb = qmm_load_q8(&c->b_zero_point, 0);
    int64_t zy = qmm_load_q8(&c->y_zero_point, 0);
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 0, st));
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        int64_t acc = qmm_wrap_int32(qmm_ref_matmul_acc(&c->a, &c->b, g, w.bi, w.i, w.j, za, zb));
        int64_t v = rounding_divide_by_pot(srdhm(acc, mult), -e) + zy;
        qmm_ref_store_q8(&c->y, qmm_ref_walk_slot(&w, w.idx), v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return qmm_ref_walk_end(&w, st);
}

/* ---- orion-fp16x16 ----------------------------------------------------------------------- */

/* Orion's FP16x16 is sign + u32 magnitude in units of 2^-16; u32 overflow panics. Values
 * here are int64 holding sign * magnitude, and every result is checked against 2^32. */
#define Q_ONE ((int64_t)65536)
#define Q_LIMIT ((uint64_t)1 << 32)

typedef struct orion_ctx {
    qmm_status *st;
} orion_ctx;

static uint64_t mag(int64_t x)
{
    return x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
}

static int64_t with_sign(uint64_t m, int negative)
{
    return negative ? -(int64_t)m : (int64_t)m;
}

static qmm_status_code orion_overflow(qmm_status *st, const char *what)
{
    return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                          "orion-fp16x16: %s: Q16.16 magnitude reaches 2^32 (integer part "
                          ">= 65536), where Orion's u32 magnitude overflows and it panics",
                          what);
}

/* trunc(|v| * 65536), sign kept. Scales are positive and finite (validated). */
static qmm_status_code orion_encode(double v, const char *name, int64_t *out, qmm_status *st)
{
    double m = ldexp(v < 0 ? -v : v, 16); /* exact */
    if (m >= (double)Q_LIMIT)
        return orion_overflow(st, name);
    *out = with_sign((uint64_t)m, v < 0); /* the cast truncates toward zero */
    return QMM_OK;
}

/* sign * trunc(|x| * |y| / 65536); |x|, |y| < 2^32 so the product fits uint64. */
static qmm_status_code trunc_mul(int64_t x, int64_t y, int64_t *out, const char *what,
                                 qmm_status *st)
{
    uint64_t m = mag(x) * mag(y) / (uint64_t)Q_ONE;
    if (m >= Q_LIMIT)
        return orion_overflow(st, what);
    *out = with_sign(m, (x < 0) != (y < 0));
    return QMM_OK;
}

/* sign * trunc(|x| * 65536 / |y|), y != 0. */
static qmm_status_code trunc_div(int64_t x, int64_t y, int64_t *out, const char *what,
                                 qmm_status *st)
{
    uint64_t m = mag(x) * (uint64_t)Q_ONE / mag(y);
    if (m >= Q_LIMIT)
        return orion_overflow(st, what);
    *out = with_sign(m, (x < 0) != (y < 0));
    return QMM_OK;
}

static qmm_status_code checked_add(int64_t x, int64_t y, int64_t *out, const char *what,
                                   qmm_status *st)
{
    int64_t s = x + y; /* |x|, |y| < 2^32: no int64 overflow */
    if (mag(s) >= Q_LIMIT)
        return orion_overflow(st, what);
    *out = s;
    return QMM_OK;
}

/* Orion's i8 cannot hold -128; any such input element panics. */
static qmm_status_code orion_check_minus128(const qmm_tensor *t, const char *name,
                                            qmm_status *st)
{
    if (!qmm_tensor_present(t))
        return QMM_OK;
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (qmm_load_q8(t, i) == -128)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "orion-fp16x16: %s[%" PRId64 "] is -128, which Orion's i8 "
                                  "cannot hold (it panics)",
                                  name, i);
    return QMM_OK;
}

static qmm_status_code orion_check_scales(const qmm_tensor *s, const char *name, int is_y,
                                          qmm_status *st)
{
    int64_t n = qmm_tensor_numel(s);
    for (int64_t i = 0; i < n; i++) {
        int64_t q = 0;
        qmm_status_code rc = orion_encode(qmm_scale_decode(s->dtype, s->data, i), name, &q, st);
        if (rc != QMM_OK)
            return rc;
        if (is_y && q == 0)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "orion-fp16x16: %s[%" PRId64 "] encodes as 0 in Q16.16 "
                                  "(trunc(v*65536) = 0), and Orion divides by it (it panics)",
                                  name, i);
    }
    return QMM_OK;
}

/* deq(q) = trunc_mul(q - zp, s), all in Q16.16. */
static qmm_status_code orion_deq(int64_t q, int64_t zp, double s, const char *what, int64_t *out,
                                 qmm_status *st)
{
    int64_t qs = 0;
    qmm_status_code rc = orion_encode(s, what, &qs, st);
    if (rc != QMM_OK)
        return rc;
    return trunc_mul((q - zp) * Q_ONE, qs, out, what, st);
}

/* Dequantizes matrix `bi` of a (M x K) and of b (K x N), as Orion dequantizes whole tensors
 * before its matmul: a magnitude overflow anywhere panics, used or not. */
static qmm_status_code orion_dequantize(const qmm_qlinearmatmul *c, const qmm_geometry *g,
                                        const qmm_param_map *maps, int64_t bi, int64_t *da,
                                        int64_t *db, qmm_status *st)
{
    int64_t ao = qmm_geometry_a_offset(g, bi), bo = qmm_geometry_b_offset(g, bi);
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t k = 0; k < g->k; k++) {
            /* a's parameters are per row: any column gives the same element */
            int64_t za = qmm_ref_zero_point(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, 0);
            double sa = scale_at(&c->a_scale, &maps[QMM_MAP_A_SCALE], g, bi, i, 0);
            qmm_status_code rc = orion_deq(qmm_load_q8(&c->a, ao + i * g->k + k), za, sa,
                                           "dequantized a", &da[i * g->k + k], st);
            if (rc != QMM_OK)
                return rc;
        }
    for (int64_t k = 0; k < g->k; k++)
        for (int64_t j = 0; j < g->n; j++) {
            int64_t zb = qmm_ref_zero_point(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, 0, j);
            double sb = scale_at(&c->b_scale, &maps[QMM_MAP_B_SCALE], g, bi, 0, j);
            qmm_status_code rc = orion_deq(qmm_load_q8(&c->b, bo + k * g->n + j), zb, sb,
                                           "dequantized b", &db[k * g->n + j], st);
            if (rc != QMM_OK)
                return rc;
        }
    return QMM_OK;
}

static qmm_status_code orion_element(const qmm_qlinearmatmul *c, const qmm_geometry *g,
                                     const qmm_param_map *maps, const int64_t *da,
                                     const int64_t *db, int64_t bi, int64_t i, int64_t j,
                                     int64_t *out, qmm_status *st)
{
    int64_t sum = 0, term = 0, v = 0, sy = 0;
    qmm_status_code rc;
    for (int64_t k = 0; k < g->k; k++) {
        if ((rc = trunc_mul(da[i * g->k + k], db[k * g->n + j], &term, "a product", st)) ||
            (rc = checked_add(sum, term, &sum, "the running sum", st)))
            return rc;
    }
    double sy_value = scale_at(&c->y_scale, &maps[QMM_MAP_Y_SCALE], g, bi, i, j);
    if ((rc = orion_encode(sy_value, "y_scale", &sy, st)) ||
        (rc = trunc_div(sum, sy, &v, "sum / y_scale", st)))
        return rc;
    int64_t zy = qmm_ref_zero_point(&c->y_zero_point, &maps[QMM_MAP_Y_ZERO_POINT], g, bi, i, j);
    if ((rc = checked_add(v, zy * Q_ONE, &v, "sum / y_scale + y_zero_point", st)))
        return rc;
    if (v < -128 * Q_ONE)
        v = -128 * Q_ONE;
    if (v > 127 * Q_ONE)
        v = 127 * Q_ONE;
    int64_t r = with_sign(mag(v) / (uint64_t)Q_ONE, v < 0); /* truncation toward zero */
    if (r == -128)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "orion-fp16x16: y[%" PRId64 "] clamps to -128, which Orion's "
                              "i8 cannot hold (it panics)",
                              (bi * g->m + i) * g->n + j);
    *out = r;
    return QMM_OK;
}

static qmm_status_code compute_orion(qmm_qlinearmatmul *c, const qmm_geometry *g,
                                     const qmm_param_map *maps, const qmm_ref_part *part,
                                     qmm_status *st)
{
    if (c->a.dtype != QMM_DTYPE_INT8 || c->b.dtype != QMM_DTYPE_INT8 ||
        c->y.dtype != QMM_DTYPE_INT8)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "orion-fp16x16: int8 only (a %s, b %s, y %s)",
                              qmm_dtype_name(c->a.dtype), qmm_dtype_name(c->b.dtype),
                              qmm_dtype_name(c->y.dtype));
    qmm_status_code rc;
    if ((rc = orion_check_minus128(&c->a, "a", st)) ||
        (rc = orion_check_minus128(&c->a_zero_point, "a_zero_point", st)) ||
        (rc = orion_check_minus128(&c->b, "b", st)) ||
        (rc = orion_check_minus128(&c->b_zero_point, "b_zero_point", st)) ||
        (rc = orion_check_minus128(&c->y_zero_point, "y_zero_point", st)) ||
        (rc = orion_check_scales(&c->a_scale, "a_scale", 0, st)) ||
        (rc = orion_check_scales(&c->b_scale, "b_scale", 0, st)) ||
        (rc = orion_check_scales(&c->y_scale, "y_scale", 1, st)))
        return rc;
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 0, st));
    if (!qmm_ref_walk_more(&w))
        return qmm_ref_walk_end(&w, st); /* nothing to dequantize or compute */
    /* with an element to compute, m*k and k*n are at most a's and b's element counts, which
     * validation bounds, and their data is in memory */
    size_t na = (size_t)(g->m * g->k), nb = (size_t)(g->k * g->n);
    int64_t *da = malloc((na ? na : 1) * sizeof *da);
    int64_t *db = malloc((nb ? nb : 1) * sizeof *db);
    if (!da || !db) {
        free(da);
        free(db);
        return qmm_status_set(st, QMM_OUT_OF_MEMORY, "orion-fp16x16: out of memory");
    }
    rc = QMM_OK;
    /* each matrix the walk enters is dequantized whole, as Orion does */
    for (int64_t deq = -1; rc == QMM_OK && qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        if (w.bi != deq && (rc = orion_dequantize(c, g, maps, w.bi, da, db, st)) != QMM_OK)
            break;
        deq = w.bi;
        int64_t r = 0;
        rc = orion_element(c, g, maps, da, db, w.bi, w.i, w.j, &r, st);
        if (rc == QMM_OK)
            qmm_ref_store_q8(&c->y, qmm_ref_walk_slot(&w, w.idx), r);
    }
    free(da);
    free(db);
    return rc == QMM_OK ? qmm_ref_walk_end(&w, st) : rc;
}

/* ---- spec's requantization of a modelled accumulator --------------------------------------- */

/* clamp(RNE(sa·sb·acc/sy) + zy) on exact rationals: the spec's rule (op-qlinearmatmul.c)
 * applied to the accumulator an accumulation model formed (spec+ACC). */
static int64_t spec_element(int32_t acc, const elem_params *p, int32_t sdtype, int64_t qmin,
                            int64_t qmax)
{
    (void)sdtype;
    qmm_ref_exact *x = p->exact;
    qmm_ref_scaled_value(x, p->sa, p->sb, p->sy, acc); /* decoded scales: exact doubles */
    return qmm_ref_round_saturate(x, p->zy, qmin, qmax);
}

/* ---- wrong rules: the spec with one requantization step changed -------------------------- */

/* The mistakes kernels make most often (docs/profiles.md, "Wrong rules"), each the spec's rule
 * on the int32-wrapped accumulator with one step changed; they are profiles (so that `fingerprint` and
 * "got matches" can name them) marked wrong: no implementation is meant to compute them. */
typedef enum wrong_rule {
    WRONG_TIES_AWAY,  /* ties rounded half away from zero */
    WRONG_TRUNCATION, /* rounded toward zero */
    WRONG_WRAP,       /* the low 8 bits kept instead of saturating */
    WRONG_ZP_BEFORE,  /* the zero point added before rounding */
} wrong_rule;

static int64_t wrong_element(wrong_rule rule, qmm_ref_exact *x, int64_t zy, int64_t qmin,
                             int64_t qmax)
{
    if (rule == WRONG_ZP_BEFORE) {
        qmm_ref_exact_tmp_i64(x, zy);
        mpq_add(x->value, x->value, x->tmp);
        zy = 0;
    }
    mpz_srcptr num = mpq_numref(x->value), den = mpq_denref(x->value);
    if (rule == WRONG_TRUNCATION) {
        mpz_tdiv_q(x->q, num, den);
    } else {
        mpz_fdiv_qr(x->q, x->r, num, den); /* value = q + r/den, 0 <= r < den */
        mpz_mul_2exp(x->r, x->r, 1);
        int c = mpz_cmp(x->r, den);
        int tie_up = rule == WRONG_TIES_AWAY ? mpz_sgn(x->q) >= 0 : mpz_odd_p(x->q);
        if (c > 0 || (c == 0 && tie_up))
            mpz_add_ui(x->q, x->q, 1);
    }
    qmm_ref_exact_tmp_i64(x, zy);
    mpz_add(x->q, x->q, mpq_numref(x->tmp));
    if (rule == WRONG_WRAP) {
        int64_t low = (int64_t)mpz_fdiv_ui(x->q, 256);
        return qmin < 0 && low > 127 ? low - 256 : low;
    }
    if (mpz_cmp_si(x->q, (long)qmin) < 0)
        return qmin;
    if (mpz_cmp_si(x->q, (long)qmax) > 0)
        return qmax;
    return (int64_t)mpz_get_si(x->q);
}

/* One element under a wrong rule from the int32-wrapped accumulator, as kernels form it (the
 * spec accepts that accumulator too); an element function of compute_modelled. */
#define WRONG_ELEMENT(fn, rule)                                                                 \
    static int64_t fn(int32_t acc, const elem_params *p, int32_t sdtype, int64_t qmin,         \
                      int64_t qmax)                                                             \
    {                                                                                           \
        (void)sdtype;                                                                           \
        qmm_ref_scaled_value(p->exact, p->sa, p->sb, p->sy, acc);                               \
        return wrong_element(rule, p->exact, p->zy, qmin, qmax);                                \
    }
WRONG_ELEMENT(ties_away_element, WRONG_TIES_AWAY)
WRONG_ELEMENT(truncation_element, WRONG_TRUNCATION)
WRONG_ELEMENT(wrap_element, WRONG_WRAP)
WRONG_ELEMENT(zp_before_element, WRONG_ZP_BEFORE)

/* Requantization in double, as a kernel written in C often does it: m = sa·sb/sy and acc·m
 * each rounded to float64 (sa·sb is exact for float32, float16 and bfloat16 scales), then RNE,
 * the zero point, saturation. Right but for exact values within about 2^-53 relative of a
 * half-integer (the near-ties the fingerprint suite holds). Scales are finite and > 0
 * (validated), so nothing here overflows double. */
static int64_t float64_element(int32_t acc, const elem_params *p, int32_t sdtype, int64_t qmin,
                               int64_t qmax)
{
    (void)sdtype;
    double m = p->sa * p->sb / p->sy;
    return clamp_integral(qmm_round_half_even((double)acc * m) + (double)p->zy, qmin, qmax);
}

/* ---- accumulation models: one row each ---------------------------------------------------- */

/* Whether a zero point is given with an element other than 0. */
static int nonzero_zero_point(const qmm_tensor *zp)
{
    if (!zp || !qmm_tensor_present(zp))
        return 0;
    for (int64_t i = 0; i < qmm_tensor_numel(zp); i++)
        if (qmm_load_q8(zp, i) != 0)
            return 1;
    return 0;
}

/* When a rule of an accumulation model applies (acc_row.rules: the first that holds). */
typedef enum acc_when {
    WHEN_ALWAYS,
    WHEN_Y_ZERO_POINTS,   /* QLinearMatMul with a y_zero_point of more than one element */
    WHEN_S8_A_ZERO_POINT, /* a int8 with a non-zero a or b zero point */
    WHEN_MATMULINTEGER_ZP, /* MatMulInteger (whose output is the int32 itself) given a or b's
                              zero point, whatever its value */
} acc_when;

#define ACC_RULES 3

/* An accumulation model (docs/profiles.md, "Accumulation models"): the arithmetic (acc_model)
 * by which the imitated implementation forms the int32 accumulator. A plain model is one rule,
 * WHEN_ALWAYS; a library that picks its kernel from the call (oneDNN, by its zero points and
 * its destination type) is a row of rules, the first that holds deciding, the last
 * WHEN_ALWAYS. */
static const struct acc_row {
    const char *name; /* the profile name's suffix after '+'; "" for the default */
    const char *what; /* one line for `qmmcheck list --profiles` */
    struct acc_rule {
        acc_when when;
        acc_model model;
    } rules[ACC_RULES];
} accs[] = {
    {"", "exact, wrapped to int32 (under spec: exact, the wrapped result also accepted)",
     {{WHEN_ALWAYS, ACC_WRAP32}}},
    {"sat32", "exact, saturated to int32 (oneDNN's reference GEMM)", {{WHEN_ALWAYS, ACC_SAT32}}},
    {"pairsat16",
     "u8*s8: adjacent k-pairs summed in int16 with saturation (vpmaddubsw: AVX2 without "
     "VNNI, as MLAS computes it); other types exact, wrapped",
     {{WHEN_ALWAYS, ACC_PAIRSAT16}}},
    {"onednn-avx2-gemm",
     "oneDNN's AVX2 int8 GEMM: u8*s8, and s8*s8 with a shifted by +128, in int16-saturated "
     "k-pairs that restart in each of its K blocks",
     {{WHEN_ALWAYS, ACC_PAIRSAT16_S8SHIFT}}},
    {"onednn-avx2",
     "oneDNN 2.6 matmul on AVX2 without VNNI: onednn-avx2-gemm; a per-column y_zero_point: "
     "exact, wrapped; an s8 a with a non-zero zero point: sat32",
     {{WHEN_Y_ZERO_POINTS, ACC_WRAP32},
      {WHEN_S8_A_ZERO_POINT, ACC_SAT32},
      {WHEN_ALWAYS, ACC_PAIRSAT16_S8SHIFT}}},
    {"onednn-avx512-vnni",
     "oneDNN 2.6 matmul with AVX-512 VNNI: exact, wrapped; MatMulInteger's int32 output "
     "given a zero point passes through float32 (rounded past 2^24, at most 2147483520)",
     {{WHEN_MATMULINTEGER_ZP, ACC_WRAP32_VIA_F32}, {WHEN_ALWAYS, ACC_WRAP32}}},
};
#define N_ACC ((int)(sizeof accs / sizeof accs[0]))

/* The arithmetic of accumulation model `row` for operator `op` with these operands
 * (y_zero_point NULL for MatMulInteger). */
static acc_model acc_of(const struct acc_row *row, qmm_op_kind op, const qmm_tensor *a,
                        const qmm_tensor *a_zero_point, const qmm_tensor *b_zero_point,
                        const qmm_tensor *y_zero_point)
{
    for (int i = 0; i < ACC_RULES; i++) {
        const struct acc_rule *r = &row->rules[i];
        int holds = r->when == WHEN_ALWAYS;
        if (r->when == WHEN_Y_ZERO_POINTS)
            holds = y_zero_point && qmm_tensor_present(y_zero_point) &&
                    qmm_tensor_numel(y_zero_point) > 1;
        if (r->when == WHEN_S8_A_ZERO_POINT)
            holds = a->dtype == QMM_DTYPE_INT8 &&
                    (nonzero_zero_point(a_zero_point) || nonzero_zero_point(b_zero_point));
        if (r->when == WHEN_MATMULINTEGER_ZP)
            holds = op == QMM_OP_MATMULINTEGER &&
                    ((a_zero_point && qmm_tensor_present(a_zero_point)) ||
                     (b_zero_point && qmm_tensor_present(b_zero_point)));
        if (holds)
            return r->model;
    }
    return ACC_WRAP32; /* not reached: every row ends WHEN_ALWAYS (tests/test_profiles.c) */
}

/* ---- requantization models: one row each ------------------------------------------------- */

/* One output element from the modelled accumulator and the element's parameters. */
typedef int64_t float_element(int32_t acc, const elem_params *p, int32_t sdtype, int64_t qmin,
                              int64_t qmax);

static qmm_status_code compute_modelled(qmm_qlinearmatmul *c, const qmm_plan *plan,
                                        const struct acc_row *acc, float_element *element,
                                        const qmm_ref_part *part, qmm_status *st)
{
    const qmm_geometry *g = &plan->g;
    acc_model model = acc_of(acc, QMM_OP_QLINEARMATMUL, &c->a, &c->a_zero_point,
                             &c->b_zero_point, &c->y_zero_point);
    int64_t qmin, qmax;
    q8_limits(c->y.dtype, &qmin, &qmax);
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 0, st));
    qmm_ref_exact x;
    qmm_ref_exact_init(&x);
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        elem_params ep;
        params_at(c, g, plan->maps, w.bi, w.i, w.j, &ep);
        ep.exact = &x;
        int32_t v = model_acc(model, &c->a, &c->b, g, w.bi, w.i, w.j, ep.za, ep.zb);
        qmm_ref_store_q8(&c->y, qmm_ref_walk_slot(&w, w.idx),
                         element(v, &ep, c->a_scale.dtype, qmin, qmax));
    }
    qmm_ref_exact_clear(&x);
    return qmm_ref_walk_end(&w, st);
}

/* MatMulInteger under an accumulation model: y is the model's int32 accumulator. */
static qmm_status_code mmi_modelled(qmm_call *call, const struct acc_row *acc,
                                    const qmm_ref_part *part, qmm_status *st)
{
    qmm_matmulinteger *c = &call->u.matmulinteger;
    qmm_plan plan;
    QMM_TRY(qmm_validate_matmulinteger(c, &plan, st));
    const qmm_geometry *g = &plan.g;
    acc_model model = acc_of(acc, QMM_OP_MATMULINTEGER, &c->a, &c->a_zero_point,
                             &c->b_zero_point, NULL);
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 0, st));
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        int64_t za = qmm_ref_zero_point(&c->a_zero_point, &plan.maps[QMM_MAP_A_ZERO_POINT], g,
                                        w.bi, w.i, w.j);
        int64_t zb = qmm_ref_zero_point(&c->b_zero_point, &plan.maps[QMM_MAP_B_ZERO_POINT], g,
                                        w.bi, w.i, w.j);
        qmm_store_i32(c->y.data, qmm_ref_walk_slot(&w, w.idx),
                      model_acc(model, &c->a, &c->b, g, w.bi, w.i, w.j, za, zb));
    }
    return qmm_ref_walk_end(&w, st);
}

/* oneDNN 2.6 takes s8 weights only; u8 and s8 sources are both modelled. */
static const char *onednn_forms(const qmm_call *call)
{
    const qmm_tensor *b = call->op == QMM_OP_QLINEARMATMUL   ? &call->u.qlinearmatmul.b
                          : call->op == QMM_OP_MATMULINTEGER ? &call->u.matmulinteger.b
                                                             : NULL;
    if (b && b->dtype != QMM_DTYPE_INT8)
        return "int8 b only (oneDNN 2.6 int8 matmul takes s8 weights)";
    return NULL;
}

static qmm_status_code qlm_orion(qmm_call *call, const qmm_ref_part *part, qmm_status *st)
{
    qmm_plan plan;
    QMM_TRY(qmm_validate_qlinearmatmul(&call->u.qlinearmatmul, &plan, st));
    return compute_orion(&call->u.qlinearmatmul, &plan.g, plan.maps, part, st);
}

static qmm_status_code qom_spec(qmm_call *call, const qmm_ref_part *part, qmm_status *st)
{
    return qmm_ref_spec_part(call, part, NULL, NULL, st);
}

static qmm_status_code qom_ort_fp32(qmm_call *call, const qmm_ref_part *part, qmm_status *st)
{
    return qmm_ref_qom_compute_ort_fp32(&call->u.qorderedmatmul, part, st);
}

/* Orion computes int8 QLinearMatMul only; the types alone decide it. */
static const char *orion_types(const qmm_call *call)
{
    const qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    if (call->op == QMM_OP_QLINEARMATMUL &&
        (c->a.dtype != QMM_DTYPE_INT8 || c->b.dtype != QMM_DTYPE_INT8 ||
         c->y.dtype != QMM_DTYPE_INT8))
        return "int8 only";
    return NULL;
}

/* A requantization model: how the imitated implementation turns the accumulator into the
 * output, with everything else that is its own (which operators and types it has). A profile
 * is one of these combined with an accumulation model (accs). The enumerators of qmm_profile
 * are the indexes of the first rows, which are also the first profiles (each under the
 * default accumulation). */
static const struct req_row {
    const char *name;
    const char *what; /* one line for `qmmcheck list --profiles` */
    int is_spec;      /* under the default accumulation: every operator's spec computation */
    /* QLinearMatMul from a modelled accumulator; NULL: `own` computes it whole */
    float_element *element;
    qmm_status_code (*own)(qmm_call *call, const qmm_ref_part *part, qmm_status *st);
    /* non-NULL: MatMulInteger has no counterpart (UNSUPPORTED after validation, saying this);
     * otherwise its y is the accumulation model's int32 */
    const char *mmi_no_counterpart;
    /* QOrderedMatMul, under the default accumulation only; NULL: not defined */
    qmm_status_code (*qom)(qmm_call *call, const qmm_ref_part *part, qmm_status *st);
    /* the types it does not compute, decided from the types alone: NULL when it computes them */
    const char *(*unsupported_types)(const qmm_call *call);
    /* why it does not compute QLinearMatMul's float8 forms (docs/semantics.md §2.6) */
    const char *float8;
    /* non-NULL: it accumulates its own way, and no accumulation model combines with it */
    const char *own_accumulation;
    /* non-NULL: a wrong rule (no implementation means to compute it), in a few words */
    const char *wrong;
    /* its answer on a part depends on the whole call (qmm_profile_whole_call) */
    int whole_call;
} reqs[] = {
    [QMM_PROFILE_SPEC] = {.name = "spec",
                          .what = "exact rational requantization, RNE, zero point after "
                                  "rounding (the contract)",
                          .is_spec = 1, .element = spec_element, .qom = qom_spec},
    [QMM_PROFILE_ONNX_REF] = {.name = "onnx-ref",
                              .what = "onnx.reference (numpy): multiplier in the scales' type, "
                                      "product in double, zero point before rint",
                              .element = onnx_ref_element,
                              .float8 = "float8: onnx.reference 1.23.2 raises ValueError "
                                        "\"Invalid integer data type\" (np.iinfo of a float8 "
                                        "type)"},
    [QMM_PROFILE_ORT_FP32] = {.name = "ort-fp32",
                              .what = "ONNX Runtime CPU (MLAS): float32 multiplier and product, "
                                      "RNE, zero point after rounding (XNNPACK's fp32 too)",
                              .element = ort_fp32_element, .qom = qom_ort_fp32,
                              .float8 = "float8: ONNX Runtime's QLinearMatMul answers "
                                        "NOT_IMPLEMENTED for float8 types"},
    [QMM_PROFILE_ORION_FP16X16] = {
        .name = "orion-fp16x16",
        .what = "Orion's qlinear_matmul: sign-magnitude Q16.16, each step truncated",
        .own = qlm_orion,
        .whole_call = 1, /* a panic anywhere, dequantized inputs whole (orion_dequantize) */
        .mmi_no_counterpart = "MatMulInteger has no Orion counterpart",
        .unsupported_types = orion_types,
        .float8 = "float8: Orion's qlinear_matmul is int8 only",
        .own_accumulation = "Orion sums dequantized Q16.16 products: it has no int32 "
                            "accumulator for an accumulation model to form"},
    {.name = "gemmlowp",
     .what = "gemmlowp's fixed-point output stage as TFLite drives it (u8*u8 -> u8)",
     .own = qlm_gemmlowp,
     .mmi_no_counterpart = "MatMulInteger is not mapped onto gemmlowp (QLinearMatMul only)",
     .unsupported_types = gemmlowp_forms,
     .float8 = "float8: gemmlowp multiplies uint8 only",
     .own_accumulation = "gemmlowp multiplies u8*u8 only, where no pair-sum model applies, "
                         "and no accumulation but its exact int32 one was seen"},
    {.name = "onednn-fp32",
     .what = "oneDNN 2.6 int8 matmul: float32 output scale, product in float32, zero point "
             "added in float32 before RNE (s8 b only)",
     .element = onednn_fp32_element,
     .unsupported_types = onednn_forms,
     .float8 = "float8: the profile imitates oneDNN's int8 GEMM, which takes no float8"},
#define WRONG_ROW(nm, fn, words)                                                                \
    {.name = nm, .what = "a wrong rule: the spec with " words, .element = fn,                  \
     .float8 = "float8: the wrong rules are integer requantization rules",                    \
     .own_accumulation = "a wrong rule is the spec's int32 accumulation with one "             \
                         "requantization step changed",                                       \
     .wrong = words}
    WRONG_ROW("ties-away", ties_away_element, "ties rounded half away from zero"),
    WRONG_ROW("truncation", truncation_element, "rounding toward zero (truncation)"),
    WRONG_ROW("wrap", wrap_element, "the result wrapped to 8 bits instead of saturated"),
    WRONG_ROW("zp-before-rounding", zp_before_element, "the zero point added before rounding"),
    WRONG_ROW("float64", float64_element,
              "requantization in float64: round(acc * (sa*sb/sy)), each step rounded to double"),
#undef WRONG_ROW
};
#define N_REQ ((int)(sizeof reqs / sizeof reqs[0]))

/* Names kept from before profiles composed, which say otherwise than REQ+ACC would: the
 * combination the name would spell is refused, with `why`. */
static const struct alias_row {
    const char *name, *means, *why;
} aliases[] = {
    {"onednn-fp32+pairsat16", "onednn-fp32+onednn-avx2",
     "the name onednn-fp32+pairsat16 keeps its first meaning, oneDNN's own AVX2 accumulation "
     "(onednn-fp32+onednn-avx2); oneDNN has no plain u8*s8-only pair-sum path"},
};
#define N_ALIAS ((int)(sizeof aliases / sizeof aliases[0]))

/* Every row under the default accumulation, and at most every row with every other model (the
 * wrong rules and the own-accumulation rows take none: table_add stops at the bound, and
 * tests/test_profiles.c, every_combination_is_a_profile_or_refused_with_its_reason, would see a
 * combination missing). */
_Static_assert(sizeof reqs / sizeof reqs[0] <= QMM_PROFILE_MAX,
               "QMM_PROFILE_MAX (reference/qmm_reference.h) must hold every requantization row");

static int req_index(const char *name, size_t len)
{
    for (int r = 0; r < N_REQ; r++)
        if (strlen(reqs[r].name) == len && strncmp(reqs[r].name, name, len) == 0)
            return r;
    return -1;
}

static int acc_index(const char *name)
{
    for (int a = 0; a < N_ACC; a++)
        if (strcmp(accs[a].name, name) == 0)
            return a;
    return -1;
}

/* NULL when requantization r combines with accumulation a; otherwise why not. */
static const char *combination_refused(int r, int a)
{
    if (a == 0)
        return NULL;
    if (reqs[r].own_accumulation)
        return reqs[r].own_accumulation;
    for (int i = 0; i < N_ALIAS; i++) {
        const char *plus = strchr(aliases[i].name, '+');
        if (req_index(aliases[i].name, (size_t)(plus - aliases[i].name)) == r &&
            acc_index(plus + 1) == a)
            return aliases[i].why;
    }
    return NULL;
}

/* ---- the profiles: every combination not refused ------------------------------------------ */

/* The profiles in index order: the requantization models under the default accumulation
 * first (so the enumerators of qmm_profile hold), then each one's combinations in table
 * order. Built once, on first use; the names are kept here. */
static struct profile_entry {
    signed char req, acc;
    char name[48];
} table[QMM_PROFILE_MAX];
static int table_count;
static atomic_int table_state; /* 0 not built, 1 being built, 2 built */

static void table_add(int r, int a)
{
    if (table_count == QMM_PROFILE_MAX)
        return; /* not reached with today's rows (see the _Static_assert above) */
    struct profile_entry *e = &table[table_count++];
    e->req = (signed char)r;
    e->acc = (signed char)a;
    snprintf(e->name, sizeof e->name, "%s%s%s", reqs[r].name, a ? "+" : "", accs[a].name);
}

static void table_build(void)
{
    if (atomic_load_explicit(&table_state, memory_order_acquire) == 2)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&table_state, &expected, 1)) {
        while (atomic_load_explicit(&table_state, memory_order_acquire) != 2)
            ; /* another thread is building it: a few microseconds */
        return;
    }
    for (int r = 0; r < N_REQ; r++)
        table_add(r, 0);
    for (int r = 0; r < N_REQ; r++)
        for (int a = 1; a < N_ACC; a++)
            if (!combination_refused(r, a))
                table_add(r, a);
    atomic_store_explicit(&table_state, 2, memory_order_release);
}

static const struct profile_entry *entry_of(qmm_profile p)
{
    table_build();
    return (int)p >= 0 && (int)p < table_count ? &table[p] : NULL;
}

int qmm_profile_count(void)
{
    table_build();
    return table_count;
}

const char *qmm_profile_name(qmm_profile p)
{
    const struct profile_entry *e = entry_of(p);
    return e ? e->name : NULL;
}

/* The requantization and accumulation rows `name` spells (an alias: what it stands for);
 * 0 when it spells none. "REQ+" (the default's empty suffix spelled out) is no name. */
static int parse_name(const char *name, int *r, int *a)
{
    if (!name)
        return 0;
    for (int i = 0; i < N_ALIAS; i++)
        if (strcmp(name, aliases[i].name) == 0)
            name = aliases[i].means; /* a REQ+ACC name */
    const char *plus = strchr(name, '+');
    *r = req_index(name, plus ? (size_t)(plus - name) : strlen(name));
    *a = plus ? acc_index(plus + 1) : 0;
    return *r >= 0 && (plus ? *a > 0 : 1);
}

int qmm_profile_from_name(const char *name, qmm_profile *out)
{
    int r, a;
    if (!parse_name(name, &r, &a) || combination_refused(r, a))
        return 0;
    table_build();
    for (int i = 0; i < table_count; i++)
        if (table[i].req == r && table[i].acc == a) {
            *out = (qmm_profile)i;
            return 1;
        }
    return 0;
}

qmm_profile qmm_profile_base(qmm_profile p)
{
    const struct profile_entry *e = entry_of(p);
    return e ? (qmm_profile)e->req : p; /* the bases are the first profiles, in row order */
}

int qmm_profile_whole_call(qmm_profile p)
{
    const struct profile_entry *e = entry_of(p);
    return e ? reqs[e->req].whole_call : 0;
}

const char *qmm_profile_wrong(qmm_profile p)
{
    const struct profile_entry *e = entry_of(p);
    return e ? reqs[e->req].wrong : NULL;
}

int qmm_profile_part(int kind, int i, const char **name, const char **what)
{
    int n = kind == QMM_PROFILE_PART_REQUANTIZATION ? N_REQ
            : kind == QMM_PROFILE_PART_ACCUMULATION ? N_ACC
                                                    : 0;
    if (i < 0 || i >= n)
        return 0;
    *name = kind == QMM_PROFILE_PART_REQUANTIZATION ? reqs[i].name : accs[i].name;
    *what = kind == QMM_PROFILE_PART_REQUANTIZATION ? reqs[i].what : accs[i].what;
    return 1;
}

int qmm_profile_alias(int i, const char **name, const char **means)
{
    if (i < 0 || i >= N_ALIAS)
        return 0;
    *name = aliases[i].name;
    *means = aliases[i].means;
    return 1;
}

int qmm_profile_why_not(const char *name, char *buf, size_t size)
{
    int r, a;
    if (parse_name(name, &r, &a)) {
        const char *why = combination_refused(r, a);
        if (!why)
            return 0;
        snprintf(buf, size, "%s: %s", name, why);
        return 1;
    }
    size_t o = (size_t)snprintf(buf, size, "known: ");
    for (int i = 0; i < N_REQ && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", reqs[i].name);
    for (int i = 1; i < N_ACC && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s",
                              i > 1 ? ", " : "; each also as REQUANTIZATION+ACCUMULATION, "
                                             "ACCUMULATION one of ",
                              accs[i].name);
    return 1;
}

/* ---- what each profile computes ---------------------------------------------------------- */

#define ACC_FLOAT8 "float8: an accumulation model imitates integer kernels, which take no float8"

/* Does a QLinearMatMul call have a float8 operand or output? */
static int has_float8(const qmm_call *call)
{
    return call->op == QMM_OP_QLINEARMATMUL &&
           qmm_qlinearmatmul_float8(&call->u.qlinearmatmul) != NULL;
}

/* How profile `e` stands to operator `kind`. */
typedef enum op_answer {
    OP_UNDEFINED,       /* not defined under the profile: UNSUPPORTED naming those that define it */
    OP_SPEC,            /* the spec computation (qmm_ref_compute) */
    OP_NO_COUNTERPART,  /* UNSUPPORTED after validation, saying why */
    OP_COMPUTE,         /* the profile's own arithmetic */
} op_answer;

static op_answer op_of(const struct profile_entry *e, qmm_op_kind kind)
{
    const struct req_row *r = &reqs[e->req];
    int plain = e->acc == 0;
    if (!qmm_ref_op_of(kind))
        return OP_UNDEFINED;
    if (r->is_spec && plain)
        return OP_SPEC;
    switch (kind) {
    case QMM_OP_QLINEARMATMUL: return OP_COMPUTE;
    case QMM_OP_MATMULINTEGER:
        /* the default accumulation's int32 is the spec's wrapped sum */
        return r->mmi_no_counterpart ? OP_NO_COUNTERPART
               : plain && !r->unsupported_types ? OP_SPEC
                                                 : OP_COMPUTE;
    case QMM_OP_QORDEREDMATMUL: return plain && r->qom ? OP_COMPUTE : OP_UNDEFINED;
    default: return OP_UNDEFINED;
    }
}

/* "spec and ort-fp32": the profiles that define operator `kind`. */
static void defining_profiles(qmm_op_kind kind, char *buf, size_t size)
{
    int n = 0, total = 0;
    for (int i = 0; i < table_count; i++)
        total += op_of(&table[i], kind) != OP_UNDEFINED;
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < table_count && o < size; i++)
        if (op_of(&table[i], kind) != OP_UNDEFINED) {
            n++;
            o += (size_t)snprintf(buf + o, size - o, "%s%s",
                                  n == 1 ? "" : n == total ? " and " : ", ", table[i].name);
        }
}

qmm_status_code qmm_ref_profile_supports(const qmm_call *call, qmm_profile p, qmm_status *st)
{
    const struct profile_entry *e = entry_of(p);
    if (!e)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "profile: unknown profile %d", (int)p);
    const struct req_row *r = &reqs[e->req];
    op_answer op = op_of(e, call->op);
    if (op == OP_UNDEFINED && qmm_ref_op_of(call->op)) {
        char defined[256];
        defining_profiles(call->op, defined, sizeof defined);
        return qmm_status_set(st, QMM_UNSUPPORTED, "%s: %s is defined under %s only", e->name,
                              qmm_op_name(call->op), defined);
    }
    const char *why = op == OP_NO_COUNTERPART ? r->mmi_no_counterpart
                      : !has_float8(call)       ? NULL
                      : r->float8               ? r->float8
                      : e->acc                  ? ACC_FLOAT8
                                                : NULL;
    if (!why && op != OP_SPEC && r->unsupported_types)
        why = r->unsupported_types(call);
    if (why)
        return qmm_status_set(st, QMM_UNSUPPORTED, "%s: %s", e->name, why);
    return qmm_status_ok(st);
}

qmm_status_code qmm_ref_compute_part(qmm_call *call, qmm_profile p, const qmm_ref_part *part,
                                     qmm_tensor *y_wrapped, int *any_overflow, qmm_status *st)
{
    if (any_overflow)
        *any_overflow = 0;
    const struct profile_entry *e = entry_of(p);
    if (!e)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "profile: unknown profile %d", (int)p);
    /* spec under the default accumulation is the one profile with a second accepted result:
     * under any other (spec+ACC included) the accumulator wraps as the profile says */
    int spec = reqs[e->req].is_spec && e->acc == 0;
    if (y_wrapped && !spec)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "y_wrapped: only the spec profile has a wrapped result");
    const qmm_op_desc *desc = qmm_op_desc_of(call->op);
    op_answer op = op_of(e, call->op);
    if (op == OP_SPEC || !desc || !qmm_ref_op_of(call->op)) /* the unknown: its message */
        return qmm_ref_spec_part(call, part, y_wrapped, spec ? any_overflow : NULL, st);
    /* validation first: an invalid call is INVALID_ARGUMENT under every profile */
    QMM_TRY(desc->validate(call, st));
    QMM_TRY(qmm_ref_profile_supports(call, p, st));
    const struct req_row *r = &reqs[e->req];
    switch (call->op) {
    case QMM_OP_QLINEARMATMUL: {
        if (r->own)
            return r->own(call, part, st);
        qmm_plan plan;
        QMM_TRY(qmm_validate_qlinearmatmul(&call->u.qlinearmatmul, &plan, st));
        return compute_modelled(&call->u.qlinearmatmul, &plan, &accs[e->acc], r->element, part,
                                st);
    }
    case QMM_OP_MATMULINTEGER: return mmi_modelled(call, &accs[e->acc], part, st);
    case QMM_OP_QORDEREDMATMUL: return r->qom(call, part, st);
    default: return qmm_status_set(st, QMM_INTERNAL, "%s: no computation", e->name);
    }
}

qmm_status_code qmm_ref_compute_profile(qmm_call *call, qmm_profile p, qmm_status *st)
{
    return qmm_ref_compute_part(call, p, NULL, NULL, NULL, st);
}
