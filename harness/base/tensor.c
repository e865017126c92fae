/* harness/base/tensor.c — see tensor.h. */
#include "harness/base/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/qmm_ops.h"

int64_t qh_tensor_int(const qmm_tensor *t, int64_t i)
{
    const unsigned char *p = (const unsigned char *)t->data;
    switch (t->dtype) {
    case QMM_DTYPE_FLOAT4E2M1: return qmm_packed_code(p, t->dtype, i);
    case QMM_DTYPE_UINT4:
    case QMM_DTYPE_UINT2:
    case QMM_DTYPE_INT4:
    case QMM_DTYPE_INT2: return qmm_packed_int(p, t->dtype, i);
    case QMM_DTYPE_UINT8: return p[i];
    case QMM_DTYPE_INT8: return (int8_t)p[i];
    case QMM_DTYPE_UINT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case QMM_DTYPE_INT16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case QMM_DTYPE_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case QMM_DTYPE_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
    case QMM_DTYPE_FLOAT8E4M3FN:
    case QMM_DTYPE_FLOAT8E4M3FNUZ:
    case QMM_DTYPE_FLOAT8E5M2:
    case QMM_DTYPE_FLOAT8E5M2FNUZ:
    case QMM_DTYPE_FLOAT8E8M0: return p[i]; /* the code: equal codes, equal outputs */
    case QMM_DTYPE_FLOAT16:
    case QMM_DTYPE_BFLOAT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; } /* the bits */
    case QMM_DTYPE_FLOAT: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    default: return 0;
    }
}

void qh_tensor_set_int(qmm_tensor *t, int64_t i, int64_t v)
{
    unsigned bits = qmm_dtype_bits(t->dtype);
    if (bits && bits < 8) { /* the element's bits within its byte, the others kept */
        unsigned per = 8 / bits, shift = (unsigned)((uint64_t)i % per) * bits;
        unsigned char *b = (unsigned char *)t->data + (uint64_t)i / per;
        unsigned mask = ((1u << bits) - 1) << shift;
        *b = (unsigned char)((*b & ~mask) | (((unsigned)(uint64_t)v << shift) & mask));
        return;
    }
    size_t es = qmm_dtype_size(t->dtype);
    unsigned char *d = (unsigned char *)t->data + (size_t)i * es;
    uint64_t u = (uint64_t)v;
    for (size_t k = 0; k < es; k++)
        d[k] = (unsigned char)(u >> (8 * k) & 0xff);
}

void qh_tensor_set_scale(qmm_tensor *t, int64_t i, double v)
{
    uint32_t bits;
    if (isnan(v))
        bits = t->dtype == QMM_DTYPE_FLOAT ? 0x7fc00000u
               : t->dtype == QMM_DTYPE_FLOAT16 ? 0x7e00u : 0x7fc0u;
    else
        bits = qmm_scale_encode(t->dtype, v);
    size_t es = qmm_dtype_size(t->dtype);
    unsigned char *d = (unsigned char *)t->data + (size_t)i * es;
    for (size_t k = 0; k < es; k++)
        d[k] = (unsigned char)(bits >> (8 * k) & 0xff);
}

int64_t qh_dtype_qmin(int32_t dtype)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    return f ? (int64_t)(0x80u | f->max_code) : dtype == QMM_DTYPE_INT8 ? -128 : 0;
}

int64_t qh_dtype_qmax(int32_t dtype)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    return f ? (int64_t)f->max_code : dtype == QMM_DTYPE_INT8 ? 127 : 255;
}

void qh_tensor_copy_element(qmm_tensor *dst, int64_t di, const qmm_tensor *src, int64_t si)
{
    size_t es = qmm_dtype_size(src->dtype);
    if (es == 0) /* sub-byte: the code moves between nibbles (or bit pairs) */
        qh_tensor_set_int(dst, di, qh_tensor_int(src, si));
    else
        memcpy((unsigned char *)dst->data + (size_t)di * es,
               (const unsigned char *)src->data + (size_t)si * es, es);
}

int qh_alloc_tensor(qmm_tensor *t, unsigned char fill)
{
    int64_t n = qmm_tensor_numel(t);
    t->data = NULL;
    if (n < 0 || qmm_dtype_bits(t->dtype) == 0)
        return -1;
    size_t bytes = qmm_dtype_bytes(t->dtype, n);
    if (bytes > (size_t)QH_MAX_TENSOR_BYTES)
        return -1;
    t->data = malloc(bytes ? bytes : 1);
    if (!t->data)
        return -1;
    memset(t->data, fill, bytes ? bytes : 1);
    return 0;
}

int qh_tensor_same_shape(const qmm_tensor *x, const qmm_tensor *y)
{
    if (x->dtype != y->dtype || x->rank != y->rank)
        return 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] != y->dims[i])
            return 0;
    return 1;
}

int qh_tensor_same(const qmm_tensor *x, const qmm_tensor *y)
{
    if (!qh_tensor_same_shape(x, y))
        return 0;
    size_t n = qmm_dtype_bytes(x->dtype, qmm_tensor_numel(x));
    return n == 0 || (x->data && y->data && memcmp(x->data, y->data, n) == 0);
}

void qh_format_dims(const qmm_tensor *t, char *buf, size_t size)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int32_t i = 0; i < t->rank && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (o < size)
        snprintf(buf + o, size - o, "]");
}

static int is_float_type(int32_t dtype)
{
    return dtype == QMM_DTYPE_FLOAT || dtype == QMM_DTYPE_FLOAT16 ||
           dtype == QMM_DTYPE_BFLOAT16;
}

void qh_sb_value(qh_sb *b, int32_t dtype, int64_t v)
{
    if (!is_float_type(dtype)) {
        qh_sb_printf(b, "%lld", (long long)v);
        return;
    }
    unsigned char bytes[4];
    for (int k = 0; k < 4; k++)
        bytes[k] = (unsigned char)((uint64_t)v >> (8 * k));
    int hex = dtype == QMM_DTYPE_FLOAT ? 8 : 4;
    qh_sb_printf(b, "%.9g (0x%0*llx)", qmm_scale_decode(dtype, bytes, 0), hex,
                 (unsigned long long)v);
}

void qh_sb_element(qh_sb *b, const qmm_tensor *t, int64_t i)
{
    qh_sb_value(b, t->dtype, qh_tensor_int(t, i));
}

void qh_sb_coord(qh_sb *b, const qmm_tensor *y, int64_t index)
{
    int64_t c[QMM_MAX_RANK];
    int64_t rest = index;
    for (int32_t d = y->rank - 1; d >= 0; d--) {
        c[d] = y->dims[d] ? rest % y->dims[d] : 0;
        rest = y->dims[d] ? rest / y->dims[d] : 0;
    }
    qh_sb_puts(b, "y[");
    for (int32_t d = 0; d < y->rank; d++)
        qh_sb_printf(b, "%s%lld", d ? "," : "", (long long)c[d]);
    qh_sb_puts(b, "]");
}

void qh_tensor_free(qh_tensor *t)
{
    if (!t)
        return;
    free(t->t.data);
    t->t.data = NULL;
}
