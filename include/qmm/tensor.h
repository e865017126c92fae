/* qmm/tensor.h — tensors as the operator interface sees them.
 *
 * Type codes are ONNX TensorProto.DataType numbers, so an ONNX tensor maps onto a
 * qmm_tensor with no translation table.
 */
#ifndef QMM_TENSOR_H
#define QMM_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ONNX TensorProto.DataType values. Only the ones the operators can meet are named. */
typedef enum qmm_dtype {
    QMM_DTYPE_UNDEFINED = 0, /* also marks an absent optional input */
    QMM_DTYPE_FLOAT = 1,
    QMM_DTYPE_UINT8 = 2,
    QMM_DTYPE_INT8 = 3,
    QMM_DTYPE_UINT16 = 4,
    QMM_DTYPE_INT16 = 5,
    QMM_DTYPE_INT32 = 6,
    QMM_DTYPE_INT64 = 7,
    QMM_DTYPE_STRING = 8,
    QMM_DTYPE_BOOL = 9,
    QMM_DTYPE_FLOAT16 = 10,
    QMM_DTYPE_DOUBLE = 11,
    QMM_DTYPE_UINT32 = 12,
    QMM_DTYPE_UINT64 = 13,
    QMM_DTYPE_BFLOAT16 = 16,
    QMM_DTYPE_FLOAT8E4M3FN = 17,
    QMM_DTYPE_FLOAT8E4M3FNUZ = 18,
    QMM_DTYPE_FLOAT8E5M2 = 19,
    QMM_DTYPE_FLOAT8E5M2FNUZ = 20,
    /* Sub-byte types, packed as ONNX packs them (qmm_dtype_bits, qmm_dtype_bytes): an element
     * is not a whole byte, so qmm_dtype_size() is 0 for them and code built against a header
     * without them sees an unknown dtype, which it must reject. */
    QMM_DTYPE_UINT4 = 21,
    QMM_DTYPE_INT4 = 22,
    QMM_DTYPE_FLOAT4E2M1 = 23,
    /* An exponent only, unsigned, one byte: code c in 0..254 is 2^(c - 127), 255 is NaN. Only
     * DequantizeLinear's x_scale carries it (opset 24 on). */
    QMM_DTYPE_FLOAT8E8M0 = 24,
    QMM_DTYPE_UINT2 = 25,
    QMM_DTYPE_INT2 = 26,
} qmm_dtype;

#define QMM_MAX_RANK 8

/* A dense tensor, row-major unless an operator's order attribute says otherwise.
 *
 * Ownership: the caller (the harness) owns `data` and every byte it points to. A backend reads
 * input tensors and writes only the bytes of its output tensor; it never frees, reallocates or
 * keeps a pointer to either after the call returns. Input data may live in read-only pages.
 *
 * A tensor with dtype QMM_DTYPE_UNDEFINED is an absent optional input; its other fields are
 * ignored. A tensor of rank 0 is a scalar and holds one element. */
typedef struct qmm_tensor {
    int32_t dtype;               /* a qmm_dtype value */
    int32_t rank;                /* 0 .. QMM_MAX_RANK */
    int64_t dims[QMM_MAX_RANK];  /* dims[0 .. rank-1], each >= 0 */
    void *data;                  /* little-endian elements, densely packed; sub-byte elements
                                  * packed within bytes (qmm_dtype_bytes) */
} qmm_tensor;

/* Bytes per element of a dtype, or 0 for a sub-byte type (qmm_dtype_bits says how many bits)
 * or a type the operators never carry. To size a tensor's data use qmm_dtype_bytes. */
static inline size_t qmm_dtype_size(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_UINT8:
    case QMM_DTYPE_INT8:
    case QMM_DTYPE_BOOL:
    case QMM_DTYPE_FLOAT8E4M3FN:
    case QMM_DTYPE_FLOAT8E4M3FNUZ:
    case QMM_DTYPE_FLOAT8E5M2:
    case QMM_DTYPE_FLOAT8E5M2FNUZ:
    case QMM_DTYPE_FLOAT8E8M0:
        return 1;
    case QMM_DTYPE_UINT16:
    case QMM_DTYPE_INT16:
    case QMM_DTYPE_FLOAT16:
    case QMM_DTYPE_BFLOAT16:
        return 2;
    case QMM_DTYPE_FLOAT:
    case QMM_DTYPE_INT32:
    case QMM_DTYPE_UINT32:
        return 4;
    case QMM_DTYPE_INT64:
    case QMM_DTYPE_DOUBLE:
    case QMM_DTYPE_UINT64:
        return 8;
    default:
        return 0;
    }
}

/* Bits per element of a dtype: 8 * qmm_dtype_size() for whole-byte types, 4 for uint4, int4
 * and float4e2m1, 2 for uint2 and int2, 0 for a type the operators never carry. */
static inline unsigned qmm_dtype_bits(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_UINT4:
    case QMM_DTYPE_INT4:
    case QMM_DTYPE_FLOAT4E2M1:
        return 4;
    case QMM_DTYPE_UINT2:
    case QMM_DTYPE_INT2:
        return 2;
    default:
        return (unsigned)(8 * qmm_dtype_size(dtype));
    }
}

/* Bytes that `numel` elements of `dtype` occupy in qmm_tensor.data: numel * qmm_dtype_size()
 * for whole-byte types; for sub-byte types ONNX's packing, 8 / bits elements to a byte from the
 * least significant bits up (int4: element 0 in the low nibble, element 1 in the high one), the
 * last byte padded with zero bits, so ceil(numel * bits / 8). 0 for numel 0, a negative numel or
 * a type the operators never carry (qmm_dtype_bits 0); SIZE_MAX when the count does not fit. */
static inline size_t qmm_dtype_bytes(int32_t dtype, int64_t numel)
{
    unsigned bits = qmm_dtype_bits(dtype);
    if (numel <= 0 || bits == 0)
        return 0;
    if (bits < 8) {
        uint64_t per = 8 / bits, n = (uint64_t)numel;
        uint64_t b = n / per + (n % per != 0);
        return b > (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)b;
    }
    size_t es = bits / 8;
    if ((uint64_t)numel > (uint64_t)(SIZE_MAX / es))
        return SIZE_MAX;
    return (size_t)numel * es;
}

/* Element i of a sub-byte tensor's data (qmm_dtype_bits < 8): its code, the element's bits as
 * stored (uint4/int4/float4e2m1 0..15, uint2/int2 0..3), not sign-extended. */
static inline unsigned qmm_packed_code(const void *data, int32_t dtype, int64_t i)
{
    unsigned bits = qmm_dtype_bits(dtype), per = 8 / bits;
    unsigned byte = ((const unsigned char *)data)[(uint64_t)i / per];
    return (byte >> ((uint64_t)i % per * bits)) & ((1u << bits) - 1);
}

/* Element i of a packed integer tensor (uint4, int4, uint2, int2) as its value: the code,
 * sign-extended for int4 (-8..7) and int2 (-2..1). */
static inline int qmm_packed_int(const void *data, int32_t dtype, int64_t i)
{
    int code = (int)qmm_packed_code(data, dtype, i);
    int sign = dtype == QMM_DTYPE_INT4 ? 8 : dtype == QMM_DTYPE_INT2 ? 2 : 0;
    return (code ^ sign) - sign;
}

/* Lower-case type name as ONNX spells it ("uint8", "float16"), "unknown" for other codes. */
static inline const char *qmm_dtype_name(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_UNDEFINED: return "undefined";
    case QMM_DTYPE_FLOAT: return "float";
    case QMM_DTYPE_UINT8: return "uint8";
    case QMM_DTYPE_INT8: return "int8";
    case QMM_DTYPE_UINT16: return "uint16";
    case QMM_DTYPE_INT16: return "int16";
    case QMM_DTYPE_INT32: return "int32";
    case QMM_DTYPE_INT64: return "int64";
    case QMM_DTYPE_STRING: return "string";
    case QMM_DTYPE_BOOL: return "bool";
    case QMM_DTYPE_FLOAT16: return "float16";
    case QMM_DTYPE_DOUBLE: return "double";
    case QMM_DTYPE_UINT32: return "uint32";
    case QMM_DTYPE_UINT64: return "uint64";
    case QMM_DTYPE_BFLOAT16: return "bfloat16";
    case QMM_DTYPE_FLOAT8E4M3FN: return "float8e4m3fn";
    case QMM_DTYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case QMM_DTYPE_FLOAT8E5M2: return "float8e5m2";
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case QMM_DTYPE_UINT4: return "uint4";
    case QMM_DTYPE_INT4: return "int4";
    case QMM_DTYPE_FLOAT4E2M1: return "float4e2m1";
    case QMM_DTYPE_FLOAT8E8M0: return "float8e8m0";
    case QMM_DTYPE_UINT2: return "uint2";
    case QMM_DTYPE_INT2: return "int2";
    default: return "unknown";
    }
}

/* Number of elements, or -1 when a dimension is negative, the rank is out of range, or the
 * count does not fit in int64_t. A rank-0 tensor has one element. */
static inline int64_t qmm_tensor_numel(const qmm_tensor *t)
{
    if (t->rank < 0 || t->rank > QMM_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i];
        if (d < 0)
            return -1;
        if (d != 0 && n > INT64_MAX / d)
            return -1;
        n *= d;
    }
    return n;
}

static inline int qmm_tensor_present(const qmm_tensor *t)
{
    return t->dtype != QMM_DTYPE_UNDEFINED;
}

#ifdef __cplusplus
}
#endif

#endif /* QMM_TENSOR_H */
