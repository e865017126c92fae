/* harness/base/tensor.h — reading, writing, allocating and describing a qmm_tensor's elements:
 * the tensor helpers every layer of the harness uses. */
#ifndef QMM_HARNESS_TENSOR_H
#define QMM_HARNESS_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/strbuf.h"
#include "qmm/qmm.h"

/* Upper bound on a tensor's payload; larger claims are rejected before allocating. */
#define QH_MAX_TENSOR_BYTES ((int64_t)1 << 32)

/* Room for a name: a tensor's, and the ONNX reader's for every name it keeps (io/onnx_io.h). */
#define QH_NAME_MAX 128

/* A named tensor that owns its data (t.data malloc'd): what the ONNX reader makes of a .pb
 * file (io/onnx_io.h), a case's inputs and outputs, an exec answer's output. */
typedef struct qh_tensor {
    qmm_tensor t;
    char name[QH_NAME_MAX];
} qh_tensor;

/* Frees t->t.data (t may be NULL). */
void qh_tensor_free(qh_tensor *t);

/* Element i of an integer tensor as int64 (uint8, int8, int16, uint16, int32, int64, int4,
 * uint4, int2, uint2); of a float8 tensor, its code (0..255), of a float4e2m1 one its code
 * (0..15); of a float, float16 or bfloat16 tensor, its bits: equal
 * values (as the comparisons compare them) are equal numbers. */
int64_t qh_tensor_int(const qmm_tensor *t, int64_t i);
/* A value in qh_tensor_int's form as a reader wants it: the integer (a float8 code) itself;
 * a float/float16/bfloat16 as its value and bits, "1.5 (0x3fc00000)". */
void qh_sb_value(qh_sb *b, int32_t dtype, int64_t v);
/* qh_sb_value of element i of t. */
void qh_sb_element(qh_sb *b, const qmm_tensor *t, int64_t i);

/* Element i of an integer tensor (uint8, int8, int16, int32, ...), stored little-endian and
 * wrapped to the type's width; of a sub-byte tensor (int4, uint4, ...), v's low bits into the
 * element's place in its byte. */
void qh_tensor_set_int(qmm_tensor *t, int64_t i, int64_t v);
/* Element di of dst := element si of src, of the same dtype (sub-byte types included). */
void qh_tensor_copy_element(qmm_tensor *dst, int64_t di, const qmm_tensor *src, int64_t si);
/* Element i of a float/float16/bfloat16 tensor: v rounded to nearest even in that type
 * (NaN and infinities included). */
void qh_tensor_set_scale(qmm_tensor *t, int64_t i, double v);

/* The extremes of a quantized type, in qh_tensor_int's form: uint8 0 and 255, int8 -128 and
 * 127; for float8 the codes of the largest finite value of each sign. */
int64_t qh_dtype_qmin(int32_t dtype);
int64_t qh_dtype_qmax(int32_t dtype);

/* Allocates t->data for its dtype and shape (at least one byte) filled with `fill`. */
int qh_alloc_tensor(qmm_tensor *t, unsigned char fill);

/* 1 when x and y have the same type and dimensions. */
int qh_tensor_same_shape(const qmm_tensor *x, const qmm_tensor *y);
/* 1 when x and y are one tensor: the same type, dimensions and bytes (two absent tensors are). */
int qh_tensor_same(const qmm_tensor *x, const qmm_tensor *y);

/* Writes "[2,3]" (or "[]") into buf. */
void qh_format_dims(const qmm_tensor *t, char *buf, size_t size);
/* "y[1,2]" for row-major index i of y. */
void qh_sb_coord(qh_sb *b, const qmm_tensor *y, int64_t index);

#endif /* QMM_HARNESS_TENSOR_H */
