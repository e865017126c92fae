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
    if (model != ACC_WRAP32 && s8_b && a->dtype == QMM_DTYPE_UINT8)
        return qmm_wrap_int32(pairsat16_sum(a, b, g, bi, i, j, za, zb, 0, block));
    if (model == ACC_PAIRSAT16_S8SHIFT && s8_b && a->dtype == QMM_DTYPE_INT8)
        return qmm_wrap_int32(pairsat16_sum(a, b, g, bi, i, j, za, zb, 128, block));
    int64_t exact = qmm_ref_matmul_acc(a, b, g, bi, i, j, za, zb);
    if (model == ACC_SAT32)
        return exact < INT32_MIN ? INT32_MIN : exact > INT32_MAX ? INT32_MAX : (int32_t)exact;
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

static qmm_status_code qlm_gemmlowp(qmm_call *call, qmm_status *st)
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
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                int64_t acc = qmm_wrap_int32(qmm_ref_matmul_acc(&c->a, &c->b, g, bi, i, j, za, zb));
                int64_t v = rounding_divide_by_pot(srdhm(acc, mult), -e) + zy;
                qmm_ref_store_q8(&c->y, (bi * g->m + i) * g->n + j,
                                 v < 0 ? 0 : v > 255 ? 255 : v);
            }
    return qmm_status_ok(st);
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
                                     const qmm_param_map *maps, qmm_status *st)
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
    if (g->batch == 0)
        return qmm_status_ok(st); /* empty tensors: nothing to dequantize or compute */
    /* with batch > 0, m*k and k*n are at most a's and b's element counts, which validation
     * bounds, and their data is in memory */
    size_t na = (size_t)(g->m * g->k), nb = (size_t)(g->k * g->n);
    int64_t *da = malloc((na ? na : 1) * sizeof *da);
    int64_t *db = malloc((nb ? nb : 1) * sizeof *db);
    if (!da || !db) {
        free(da);
        free(db);
        return qmm_status_set(st, QMM_OUT_OF_MEMORY, "orion-fp16x16: out of memory");
    }
    rc = QMM_OK;
    for (int64_t bi = 0; rc == QMM_OK && bi < g->batch; bi++) {
        rc = orion_dequantize(c, g, maps, bi, da, db, st);
        for (int64_t i = 0; rc == QMM_OK && i < g->m; i++)
            for (int64_t j = 0; rc == QMM_OK && j < g->n; j++) {
                int64_t r = 0;
                rc = orion_element(c, g, maps, da, db, bi, i, j, &r, st);
                if (rc == QMM_OK)
                    qmm_ref_store_q8(&c->y, (bi * g->m + i) * g->n + j, r);
            }
    }
    free(da);
    free(db);
    return rc == QMM_OK ? qmm_status_ok(st) : rc;
}

/* ---- the profiles -------------------------------------------------------------------------- */

/* One output element of a float profile: the wrapped accumulator and the element's parameters
 * in, the stored integer out. */
typedef int64_t float_element(int32_t acc, const elem_params *p, int32_t sdtype, int64_t qmin,
                              int64_t qmax);

static qmm_status_code compute_float_profile(qmm_qlinearmatmul *c, const qmm_plan *plan,
                                             acc_model model, float_element *element,
                                             qmm_status *st)
{
    const qmm_geometry *g = &plan->g;
    int64_t qmin, qmax;
    q8_limits(c->y.dtype, &qmin, &qmax);
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                elem_params ep;
                params_at(c, g, plan->maps, bi, i, j, &ep);
                int32_t acc = model_acc(model, &c->a, &c->b, g, bi, i, j, ep.za, ep.zb);
                qmm_ref_store_q8(&c->y, (bi * g->m + i) * g->n + j,
                         element(acc, &ep, c->a_scale.dtype, qmin, qmax));
            }
    return qmm_status_ok(st);
}

/* Each profile's own arithmetic for one operator, validating first. */
static qmm_status_code qlm_float(qmm_call *call, acc_model model, float_element *element,
                                 qmm_status *st)
{
    qmm_plan plan;
    QMM_TRY(qmm_validate_qlinearmatmul(&call->u.qlinearmatmul, &plan, st));
    return compute_float_profile(&call->u.qlinearmatmul, &plan, model, element, st);
}

static qmm_status_code qlm_onnx_ref(qmm_call *call, qmm_status *st)
{
    return qlm_float(call, ACC_WRAP32, onnx_ref_element, st);
}

static qmm_status_code qlm_ort_fp32(qmm_call *call, qmm_status *st)
{
    return qlm_float(call, ACC_WRAP32, ort_fp32_element, st);
}

static qmm_status_code qlm_onnx_ref_pairsat16(qmm_call *call, qmm_status *st)
{
    return qlm_float(call, ACC_PAIRSAT16, onnx_ref_element, st);
}

static qmm_status_code qlm_ort_fp32_pairsat16(qmm_call *call, qmm_status *st)
{
    return qlm_float(call, ACC_PAIRSAT16, ort_fp32_element, st);
}

/* oneDNN 2.6 takes s8 weights only; u8 and s8 sources are both modelled (onednn_acc). */
static const char *onednn_forms(const qmm_call *call)
{
    const qmm_tensor *b = call->op == QMM_OP_QLINEARMATMUL   ? &call->u.qlinearmatmul.b
                          : call->op == QMM_OP_MATMULINTEGER ? &call->u.matmulinteger.b
                                                             : NULL;
    if (b && b->dtype != QMM_DTYPE_INT8)
        return "int8 b only (oneDNN 2.6 int8 matmul takes s8 weights)";
    return NULL;
}

/* Under onednn-fp32+pairsat16, after validation: UNSUPPORTED for the forms it does not model. */
static qmm_status_code onednn_check(qmm_call *call, qmm_status *st)
{
    const char *why = onednn_forms(call);
    if (!why)
        return QMM_OK;
    QMM_TRY(qmm_op_desc_of(call->op)->validate(call, st));
    return qmm_status_set(st, QMM_UNSUPPORTED, "onednn-fp32+pairsat16: %s", why);
}

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

/* Which accumulation oneDNN 2.6's matmul uses, from the forms its attributes are given in
 * and its zero points (measured through peers/onednn on AVX2 without VNNI): a per-column
 * destination zero point takes a path that accumulates exactly in int32; an s8 source with a
 * non-zero source or weights zero point takes ref_gemm_s8x8s32 (gemm_s8x8s32 for s8·s8 runs
 * its jit path only with both offsets 0 on AVX2, src/cpu/gemm/gemm.cpp), exact in double and
 * saturated to int32; the rest the vpmaddubsw path. */
static acc_model onednn_acc(const qmm_tensor *a, const qmm_tensor *a_zero_point,
                            const qmm_tensor *b_zero_point, const qmm_tensor *y_zero_point)
{
    if (y_zero_point && qmm_tensor_present(y_zero_point) && qmm_tensor_numel(y_zero_point) > 1)
        return ACC_WRAP32;
    if (a->dtype == QMM_DTYPE_INT8 &&
        (nonzero_zero_point(a_zero_point) || nonzero_zero_point(b_zero_point)))
        return ACC_SAT32;
    return ACC_PAIRSAT16_S8SHIFT;
}

static qmm_status_code qlm_onednn_fp32_pairsat16(qmm_call *call, qmm_status *st)
{
    const qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    QMM_TRY(onednn_check(call, st));
    acc_model model = onednn_acc(&c->a, &c->a_zero_point, &c->b_zero_point, &c->y_zero_point);
    return qlm_float(call, model, onednn_fp32_element, st);
}

/* MatMulInteger under an accumulation model: y is the model's int32 accumulator. */
static qmm_status_code mmi_model(qmm_call *call, acc_model model, qmm_status *st)
{
    qmm_matmulinteger *c = &call->u.matmulinteger;
    qmm_plan plan;
    QMM_TRY(qmm_validate_matmulinteger(c, &plan, st));
    const qmm_geometry *g = &plan.g;
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                int64_t za = qmm_ref_zero_point(&c->a_zero_point,
                                                &plan.maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
                int64_t zb = qmm_ref_zero_point(&c->b_zero_point,
                                                &plan.maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
                qmm_store_i32(c->y.data, (bi * g->m + i) * g->n + j,
                              model_acc(model, &c->a, &c->b, g, bi, i, j, za, zb));
            }
    return qmm_status_ok(st);
}

static qmm_status_code mmi_pairsat16(qmm_call *call, qmm_status *st)
{
    return mmi_model(call, ACC_PAIRSAT16, st);
}

static qmm_status_code mmi_onednn(qmm_call *call, qmm_status *st)
{
    const qmm_matmulinteger *c = &call->u.matmulinteger;
    QMM_TRY(onednn_check(call, st));
    return mmi_model(call, onednn_acc(&c->a, &c->a_zero_point, &c->b_zero_point, NULL), st);
}

static qmm_status_code qlm_orion(qmm_call *call, qmm_status *st)
{
    qmm_plan plan;
    QMM_TRY(qmm_validate_qlinearmatmul(&call->u.qlinearmatmul, &plan, st));
    return compute_orion(&call->u.qlinearmatmul, &plan.g, plan.maps, st);
}

static qmm_status_code qom_ort_fp32(qmm_call *call, qmm_status *st)
{
    return qmm_ref_qom_compute_ort_fp32(&call->u.qorderedmatmul, st);
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

/* How a profile computes one operator. All zero: the operator is not defined under the
 * profile (UNSUPPORTED after validation, the message listing the profiles that define it). */
typedef struct profile_op {
    /* its own arithmetic, validating first */
    qmm_status_code (*compute)(qmm_call *call, qmm_status *st);
    /* no step the profile rounds differently: the spec result (MatMulInteger has no
     * requantization) */
    int as_spec;
    /* the imitated implementation has no such operator: UNSUPPORTED after validation, saying
     * this */
    const char *no_counterpart;
} profile_op;

#define AS_SPEC {.as_spec = 1}
#define PAIRSAT16_FLOAT8 "float8: the AVX2 u8·s8 integer kernels it imitates take no float8"

/* Does a QLinearMatMul call have a float8 operand or output? */
static int has_float8(const qmm_call *call)
{
    return call->op == QMM_OP_QLINEARMATMUL &&
           qmm_qlinearmatmul_float8(&call->u.qlinearmatmul) != NULL;
}

/* Everything about a profile is its row here: adding a profile is a row (and its arithmetic
 * above) plus its tests, nothing else (docs/architecture.md §4.3); adding an operator is
 * nothing here (spec computes it, the other profiles leave it undefined until a row says how
 * they compute it). The enumerators of qmm_profile are the indexes of the first rows, for code
 * that must name one. */
static const struct profile_row {
    const char *name;
    int is_spec; /* the contract: every operator's spec computation (reference/op-*.c) */
    profile_op ops[QMM_MAX_OP_KINDS]; /* by qmm_op_kind */
    /* the types it does not compute, decided from the types alone: NULL when it computes them */
    const char *(*unsupported_types)(const qmm_call *call);
    /* why it does not compute QLinearMatMul's float8 forms (docs/semantics.md §2.6): every
     * profile but spec imitates an implementation that has none */
    const char *float8;
} profiles[] = {
    [QMM_PROFILE_SPEC] = {.name = "spec", .is_spec = 1},
    [QMM_PROFILE_ONNX_REF] = {.name = "onnx-ref",
                              .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_onnx_ref},
                                      [QMM_OP_MATMULINTEGER] = AS_SPEC},
                              .float8 = "float8: onnx.reference 1.23.2 raises ValueError "
                                        "\"Invalid integer data type\" (np.iinfo of a float8 "
                                        "type)"},
    [QMM_PROFILE_ORT_FP32] = {.name = "ort-fp32",
                              .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_ort_fp32},
                                      [QMM_OP_MATMULINTEGER] = AS_SPEC,
                                      [QMM_OP_QORDEREDMATMUL] = {.compute = qom_ort_fp32}},
                              .float8 = "float8: ONNX Runtime's QLinearMatMul answers "
                                        "NOT_IMPLEMENTED for float8 types"},
    [QMM_PROFILE_ORION_FP16X16] = {
        .name = "orion-fp16x16",
        .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_orion},
                [QMM_OP_MATMULINTEGER] = {.no_counterpart = "MatMulInteger has no Orion "
                                                            "counterpart"}},
        .unsupported_types = orion_types,
        .float8 = "float8: Orion's qlinear_matmul is int8 only"},
    /* the float profiles over the AVX2 u8·s8 accumulation (ACC_PAIRSAT16): what ONNX Runtime's
     * MLAS and oneDNN compute for u8·s8 on a CPU without VNNI */
    {.name = "onnx-ref+pairsat16",
     .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_onnx_ref_pairsat16},
             [QMM_OP_MATMULINTEGER] = {.compute = mmi_pairsat16}},
     .float8 = PAIRSAT16_FLOAT8},
    {.name = "ort-fp32+pairsat16",
     .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_ort_fp32_pairsat16},
             [QMM_OP_MATMULINTEGER] = {.compute = mmi_pairsat16}},
     .float8 = PAIRSAT16_FLOAT8},
    {.name = "gemmlowp",
     .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_gemmlowp},
             [QMM_OP_MATMULINTEGER] = {.no_counterpart = "MatMulInteger is not mapped onto "
                                                         "gemmlowp (QLinearMatMul only)"}},
     .unsupported_types = gemmlowp_forms,
     .float8 = "float8: gemmlowp multiplies uint8 only"},
    {.name = "onednn-fp32+pairsat16",
     .ops = {[QMM_OP_QLINEARMATMUL] = {.compute = qlm_onednn_fp32_pairsat16},
             [QMM_OP_MATMULINTEGER] = {.compute = mmi_onednn}},
     .unsupported_types = onednn_forms,
     .float8 = "float8: the profile imitates oneDNN's int8 GEMM, which takes no float8"},
};
#define N_PROFILES ((int)(sizeof profiles / sizeof profiles[0]))
_Static_assert(sizeof profiles / sizeof profiles[0] <= QMM_PROFILE_MAX,
               "QMM_PROFILE_MAX (reference/qmm_reference.h) must hold every profile");

int qmm_profile_count(void)
{
    return N_PROFILES;
}

const char *qmm_profile_name(qmm_profile p)
{
    if ((int)p < 0 || (int)p >= N_PROFILES)
        return NULL;
    return profiles[p].name;
}

int qmm_profile_from_name(const char *name, qmm_profile *out)
{
    for (int i = 0; name && i < N_PROFILES; i++)
        if (strcmp(profiles[i].name, name) == 0) {
            *out = (qmm_profile)i;
            return 1;
        }
    return 0;
}

/* How profile `row` computes operator `kind`; NULL when it does not define it. The spec
 * profile defines every operator the reference has. */
static const profile_op *profile_op_of(const struct profile_row *row, qmm_op_kind kind)
{
    static const profile_op spec = AS_SPEC;
    if (row->is_spec)
        return qmm_ref_op_of(kind) ? &spec : NULL;
    if ((int)kind < 0 || (int)kind >= QMM_MAX_OP_KINDS)
        return NULL;
    const profile_op *op = &row->ops[kind];
    return op->compute || op->as_spec || op->no_counterpart ? op : NULL;
}

/* "spec and ort-fp32": the profiles that define operator `kind`, from the table. */
static void defining_profiles(qmm_op_kind kind, char *buf, size_t size)
{
    int n = 0, total = 0;
    for (int i = 0; i < N_PROFILES; i++)
        total += profile_op_of(&profiles[i], kind) != NULL;
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_PROFILES && o < size; i++)
        if (profile_op_of(&profiles[i], kind)) {
            n++;
            o += (size_t)snprintf(buf + o, size - o, "%s%s",
                                  n == 1 ? "" : n == total ? " and " : ", ", profiles[i].name);
        }
}

qmm_status_code qmm_ref_profile_supports(const qmm_call *call, qmm_profile p, qmm_status *st)
{
    const char *name = qmm_profile_name(p);
    if (!name)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "profile: unknown profile %d", (int)p);
    const struct profile_row *row = &profiles[p];
    const profile_op *op = profile_op_of(row, call->op);
    if (!op && qmm_ref_op_of(call->op)) {
        char defined[128];
        defining_profiles(call->op, defined, sizeof defined);
        return qmm_status_set(st, QMM_UNSUPPORTED, "%s: %s is defined under %s only", name,
                              qmm_op_name(call->op), defined);
    }
    const char *why = op && op->no_counterpart        ? op->no_counterpart
                      : row->float8 && has_float8(call) ? row->float8
                      : row->unsupported_types          ? row->unsupported_types(call)
                                                        : NULL;
    if (why)
        return qmm_status_set(st, QMM_UNSUPPORTED, "%s: %s", name, why);
    return qmm_status_ok(st);
}

qmm_status_code qmm_ref_compute_profile(qmm_call *call, qmm_profile p, qmm_status *st)
{
    if (!qmm_profile_name(p))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "profile: unknown profile %d", (int)p);
    const profile_op *op = profile_op_of(&profiles[p], call->op);
    const qmm_op_desc *desc = qmm_op_desc_of(call->op);
    if (op && op->compute && !(profiles[p].float8 && has_float8(call)))
        return op->compute(call, st);
    if ((op && op->as_spec) || !desc)
        return qmm_ref_compute(call, NULL, NULL, st); /* the unknown: its message */
    /* validation first: an invalid call is INVALID_ARGUMENT under every profile */
    QMM_TRY(desc->validate(call, st));
    return qmm_ref_profile_supports(call, p, st);
}
