/* reference/scales.c — exact decoding of tensor elements: scales (float, float16, bfloat16)
 * and the 8-bit integer types.
 *
 * Everything is decoded from little-endian bytes by hand, so the result does not depend on
 * the host's byte order or on a compiler's half-precision support.
 */
#include <math.h>
#include <stdint.h>

#include "reference/ref_internal.h"

int qmm_ref_is_q8(int32_t dtype)
{
    return dtype == QMM_DTYPE_UINT8 || dtype == QMM_DTYPE_INT8;
}

int qmm_ref_is_float8(int32_t dtype)
{
    return dtype == QMM_DTYPE_FLOAT8E4M3FN || dtype == QMM_DTYPE_FLOAT8E4M3FNUZ ||
           dtype == QMM_DTYPE_FLOAT8E5M2 || dtype == QMM_DTYPE_FLOAT8E5M2FNUZ;
}

int qmm_ref_is_scale_type(int32_t dtype)
{
    return dtype == QMM_DTYPE_FLOAT || dtype == QMM_DTYPE_FLOAT16 ||
           dtype == QMM_DTYPE_BFLOAT16;
}

int64_t qmm_ref_load_q8(const qmm_tensor *t, int64_t index)
{
    const unsigned char *p = t->data;
    unsigned v = p[index];
    if (t->dtype == QMM_DTYPE_INT8)
        return v >= 128 ? (int64_t)v - 256 : (int64_t)v;
    return (int64_t)v;
}

int32_t qmm_ref_wrap_int32(int64_t v)
{
    uint32_t u = (uint32_t)((uint64_t)v & 0xffffffffu);
    if (u <= (uint32_t)INT32_MAX)
        return (int32_t)u;
    /* u - 2^32, formed without overflowing any signed type */
    return (int32_t)(u - 0x80000000u) + INT32_MIN;
}

void qmm_ref_store_i32(void *data, int64_t index, int32_t v)
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
    default:
        return NAN; /* not a scale type; validation rejects it before anyone asks */
    }
}
