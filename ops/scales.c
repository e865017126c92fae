/* ops/scales.c — exact decoding of tensor elements (scales: float, float16, bfloat16,
 * DequantizeLinear's float8e8m0; the 8-bit integer types) and exact rounding and encoding of
 * values into the scale types (not float8e8m0).
 *
 * Everything is decoded from little-endian bytes by hand, so the result does not depend on
 * the host's byte order or on a compiler's half-precision support.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/qmm_ops.h"

int qmm_is_q8(int32_t dtype)
{
    return dtype == QMM_DTYPE_UINT8 || dtype == QMM_DTYPE_INT8;
}

int qmm_is_float8(int32_t dtype)
{
    return dtype == QMM_DTYPE_FLOAT8E4M3FN || dtype == QMM_DTYPE_FLOAT8E4M3FNUZ ||
           dtype == QMM_DTYPE_FLOAT8E5M2 || dtype == QMM_DTYPE_FLOAT8E5M2FNUZ;
}

int qmm_is_scale_type(int32_t dtype)
{
    return dtype == QMM_DTYPE_FLOAT || dtype == QMM_DTYPE_FLOAT16 ||
           dtype == QMM_DTYPE_BFLOAT16;
}

int64_t qmm_load_q8(const qmm_tensor *t, int64_t index)
{
    const unsigned char *p = t->data;
    unsigned v = p[index];
    if (t->dtype == QMM_DTYPE_INT8)
        return v >= 128 ? (int64_t)v - 256 : (int64_t)v;
    return (int64_t)v;
}

int32_t qmm_wrap_int32(int64_t v)
{
    uint32_t u = (uint32_t)((uint64_t)v & 0xffffffffu);
    if (u <= (uint32_t)INT32_MAX)
        return (int32_t)u;
    /* u - 2^32, formed without overflowing any signed type */
    return (int32_t)(u - 0x80000000u) + INT32_MIN;
}

void qmm_store_i32(void *data, int64_t index, int32_t v)
{
    unsigned char *p = (unsigned char *)data + 4 * index;
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u & 0xff);
    p[1] = (unsigned char)((u >> 8) & 0xff);
    p[2] = (unsigned char)((u >> 16) & 0xff);
    p[3] = (unsigned char)((u >> 24) & 0xff);
}

/* An IEEE-754 binary interchange value with `ebits` exponent and `mbits` fraction bits. Every
 * such value with ebits <= 8 and mbits <= 23 is a double exactly, and ldexp of a small integer
 * is exact, so this is the exact value. */
static double decode_ieee(uint32_t bits, int ebits, int mbits)
{
    uint32_t mant = bits & ((1u << mbits) - 1u);
    uint32_t exp = (bits >> mbits) & ((1u << ebits) - 1u);
    int negative = (bits >> (mbits + ebits)) & 1u;
    int bias = (1 << (ebits - 1)) - 1;
    double v;
    if (exp == (1u << ebits) - 1u)
        v = mant ? NAN : INFINITY;
    else if (exp == 0)
        v = ldexp((double)mant, 1 - bias - mbits); /* zero or subnormal */
    else
        v = ldexp((double)(mant | (1u << mbits)), (int)exp - bias - mbits);
    return negative ? -v : v;
}

double qmm_scale_decode(int32_t dtype, const void *data, int64_t index)
{
    const unsigned char *p = data;
    switch (dtype) {
    case QMM_DTYPE_FLOAT: {
        const unsigned char *e = p + 4 * index;
        uint32_t bits = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 |
                        (uint32_t)e[3] << 24;
        return decode_ieee(bits, 8, 23);
    }
    case QMM_DTYPE_FLOAT16: {
        const unsigned char *e = p + 2 * index;
        return decode_ieee((uint32_t)e[0] | (uint32_t)e[1] << 8, 5, 10);
    }
    case QMM_DTYPE_BFLOAT16: {
        const unsigned char *e = p + 2 * index;
        return decode_ieee((uint32_t)e[0] | (uint32_t)e[1] << 8, 8, 7);
    }
    case QMM_DTYPE_FLOAT8E8M0: /* an exponent only: 2^(c - 127), 255 NaN */
        return p[index] == 0xff ? NAN : ldexp(1.0, (int)p[index] - 127);
    default:
        return NAN; /* not a scale type; validation rejects it before anyone asks */
    }
}

qmm_status_code qmm_check_scale_values(const qmm_tensor *s, const char *name, qmm_status *st)
{
    int64_t n = qmm_tensor_numel(s);
    for (int64_t i = 0; i < n; i++) {
        double v = qmm_scale_decode(s->dtype, s->data, i);
        if (!(isfinite(v) && v > 0))
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s[%" PRId64 "]: must be finite and > 0 (got %g)", name, i, v);
    }
    return QMM_OK;
}

/* ---- rounding and encoding ------------------------------------------------------------ */

/* Below 2^52 in magnitude the int64 cast truncates exactly and the fraction v - t is exact;
 * from 2^52 on every double is an integer. */
double qmm_round_half_even(double v)
{
    const double two52 = 4503599627370496.0;
    if (!(v > -two52 && v < two52))
        return v; /* integral, infinite or NaN */
    int64_t ti = (int64_t)v;
    double t = (double)ti, d = v - t;
    int odd = ti % 2 != 0;
    if (d > 0.5 || (d == 0.5 && odd))
        return t + 1.0;
    if (d < -0.5 || (d == -0.5 && odd))
        return t - 1.0;
    return t;
}

/* floor(log2(a)) for a finite a > 0, read from the bits. */
static int exponent_of(double a)
{
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff);
    if (e == 0) /* subnormal double: scale into the normal range first (exact) */
        return exponent_of(ldexp(a, 64)) - 64;
    return e - 1023;
}

/* x rounded to a binary format with `mbits` fraction bits and normal exponents emin..emax. */
static double round_ieee(double x, int mbits, int emin, int emax)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    double ax = x < 0 ? -x : x;
    int e = exponent_of(ax);
    if (e < emin)
        e = emin; /* subnormal: the quantum stays 2^(emin - mbits) */
    /* scaling by a power of two is exact, so only qmm_round_half_even() rounds */
    double r = ldexp(qmm_round_half_even(ldexp(ax, mbits - e)), e - mbits);
    if (r >= ldexp(1.0, emax + 1))
        r = INFINITY;
    return x < 0 ? -r : r;
}

double qmm_round_to_scale_type(int32_t dtype, double v)
{
    switch (dtype) {
    case QMM_DTYPE_FLOAT: return round_ieee(v, 23, -126, 127);
    case QMM_DTYPE_FLOAT16: return round_ieee(v, 10, -14, 15);
    case QMM_DTYPE_BFLOAT16: return round_ieee(v, 7, -126, 127);
    default: return NAN;
    }
}

uint32_t qmm_scale_encode(int32_t dtype, double v)
{
    double r = qmm_round_to_scale_type(dtype, v);
    if (dtype == QMM_DTYPE_FLOAT || dtype == QMM_DTYPE_BFLOAT16) {
        /* a bfloat16 value is a float32 whose low 16 bits are zero */
        float f = (float)r; /* exact: r is already a float32 value */
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        return dtype == QMM_DTYPE_FLOAT ? bits : bits >> 16;
    }
    if (dtype != QMM_DTYPE_FLOAT16)
        return 0;
    uint32_t sign = signbit(r) ? 0x8000u : 0u;
    double a = r < 0 ? -r : r;
    if (isnan(a))
        return 0x7e00u;
    if (isinf(a))
        return sign | 0x7c00u;
    if (a == 0.0)
        return sign;
    int e = exponent_of(a);
    if (e < -14) /* subnormal: a = m * 2^-24 */
        return sign | (uint32_t)ldexp(a, 24);
    uint32_t mant = (uint32_t)ldexp(a, 10 - e) - 1024u;
    return sign | (uint32_t)(e + 15) << 10 | mant;
}

