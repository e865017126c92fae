/* ops/float8.c — the four ONNX float8 types (docs/semantics.md §2.6): exact decoding of a
 * code, exact rounding of a double into a code, and the rule that float8 inputs hold finite
 * values.
 *
 * The encodings are those of onnx/docs/Float8.md: e4m3fn (bias 7, no infinities, NaN
 * S.1111.111, a -0), e4m3fnuz (bias 8), e5m2 (bias 15, IEEE-like: infinities and NaNs at
 * exponent 31, a -0), e5m2fnuz (bias 16); the fnuz types have no infinities, no -0 and one
 * NaN, 0x80. Every value is an integer of at most mbits + 1 bits times a power of two that a
 * double holds exactly, so decoding to a double loses nothing.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#include "ops/qmm_ops.h"

static const qmm_float8_format formats[] = {
    {QMM_DTYPE_FLOAT8E4M3FN, 4, 3, 7, 0, 0, 0x7e, 9},
    {QMM_DTYPE_FLOAT8E4M3FNUZ, 4, 3, 8, 1, 0, 0x7f, 10},
    {QMM_DTYPE_FLOAT8E5M2, 5, 2, 15, 0, 1, 0x7b, 16},
    {QMM_DTYPE_FLOAT8E5M2FNUZ, 5, 2, 16, 1, 0, 0x7f, 17},
};

const qmm_float8_format *qmm_float8_format_of(int32_t dtype)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].dtype == dtype)
            return &formats[i];
    return NULL;
}

/* NaN and infinity by the format's own rules; 0 for a finite code. */
static int is_nan_code(const qmm_float8_format *f, uint8_t code)
{
    unsigned mag = code & 0x7fu;
    if (f->fnuz)
        return code == 0x80;
    if (f->has_inf)
        return mag > 0x7cu; /* exponent all ones, fraction not zero */
    return mag == 0x7fu;    /* e4m3fn: S.1111.111 */
}

static int is_inf_code(const qmm_float8_format *f, uint8_t code)
{
    return f->has_inf && (code & 0x7fu) == 0x7cu;
}

/* The magnitude of a finite code times 2^shift: an integer. */
static int64_t scaled_magnitude(const qmm_float8_format *f, uint8_t code)
{
    unsigned mag = code & 0x7fu;
    unsigned exp = mag >> f->mbits;
    int64_t frac = (int64_t)(mag & ((1u << f->mbits) - 1u));
    if (exp == 0)
        return frac; /* zero or subnormal: frac * 2^(1 - bias - mbits) */
    return (frac | (int64_t)1 << f->mbits) << (exp - 1);
}

double qmm_float8_decode(int32_t dtype, uint8_t code)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    if (!f || is_nan_code(f, code))
        return NAN;
    int negative = (code & 0x80u) != 0;
    double v = is_inf_code(f, code) ? INFINITY
                                    : ldexp((double)scaled_magnitude(f, code), -f->shift);
    return negative ? -v : v;
}

int64_t qmm_float8_scaled(int32_t dtype, uint8_t code)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    if (!f || is_nan_code(f, code) || is_inf_code(f, code))
        return 0;
    int64_t m = scaled_magnitude(f, code);
    return code & 0x80u ? -m : m;
}

uint8_t qmm_float8_encode(int32_t dtype, double v)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    if (!f)
        return 0;
    if (isnan(v))
        return f->fnuz ? 0x80 : 0x7f;
    uint8_t sign = signbit(v) ? 0x80 : 0x00;
    double a = fabs(v);
    double max = ldexp((double)scaled_magnitude(f, f->max_code), -f->shift);
    uint8_t mag;
    if (a >= max) {
        mag = f->max_code; /* saturate = 1, infinities included */
    } else {
        /* a in units of the smallest subnormal, 2^-shift; below 2^(mbits+1) those units are
         * the quantum (subnormals and the first normal binade), above it the quantum doubles
         * per binade. Scaling by powers of two is exact; only the half-even rounding rounds. */
        double units = ldexp(a, f->shift);
        int e = 0; /* the binade's extra exponent over the subnormal quantum */
        while (units >= ldexp(1.0, f->mbits + 1 + e))
            e++;
        double n = qmm_round_half_even(ldexp(units, -e)); /* multiples of 2^e units */
        int64_t m = (int64_t)n << e;                      /* back to units, an integer */
        /* encode m units: the binade may have moved up by one through rounding (still < max) */
        int64_t lead = (int64_t)1 << f->mbits;
        unsigned exp = 0;
        while (m >= lead << 1) {
            m >>= 1;
            exp++;
        }
        if (m >= lead) {
            exp++;
            m -= lead;
        }
        mag = (uint8_t)(exp << f->mbits | (unsigned)m);
    }
    return qmm_float8_signed(dtype, sign, mag);
}

uint8_t qmm_float8_signed(int32_t dtype, int negative, int64_t mag)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    if (!f)
        return 0;
    mag = mag < 0 ? 0 : mag > f->max_code ? f->max_code : mag;
    if (mag == 0 && f->fnuz)
        return 0x00; /* the one zero: 0x80 is NaN */
    return (uint8_t)((negative ? 0x80u : 0u) | (unsigned)mag);
}

qmm_status_code qmm_check_float8_values(const qmm_tensor *t, const char *name, qmm_status *st)
{
    const qmm_float8_format *f = qmm_float8_format_of(t->dtype);
    if (!f)
        return QMM_OK;
    int64_t n = qmm_tensor_numel(t);
    const unsigned char *p = t->data;
    for (int64_t i = 0; i < n; i++) {
        uint8_t code = p[i];
        if (is_nan_code(f, code) || is_inf_code(f, code))
            return qmm_status_set(
                st, QMM_INVALID_ARGUMENT,
                "%s[%" PRId64 "]: %s code 0x%02x is %s; quantized values must be finite",
                name, i, qmm_dtype_name(t->dtype), (unsigned)code,
                is_nan_code(f, code) ? "NaN" : code & 0x80u ? "-inf" : "+inf");
    }
    return QMM_OK;
}
