/* harness/io/onnx_proto.h — what the ONNX reader (onnx_read.c) and encoder (onnx_write.c) share:
 * TensorProto's field numbers and the data types' names as onnx.proto spells them. Not part of
 * onnx_io.h's contract.
 */
#ifndef QMM_HARNESS_ONNX_PROTO_H
#define QMM_HARNESS_ONNX_PROTO_H

#include <stdint.h>

/* TensorProto's fields. */
enum {
    QH_TF_DIMS = 1,
    QH_TF_DATA_TYPE = 2,
    QH_TF_SEGMENT = 3,
    QH_TF_FLOAT = 4,
    QH_TF_INT32 = 5,
    QH_TF_STRING = 6,
    QH_TF_INT64 = 7,
    QH_TF_NAME = 8,
    QH_TF_RAW = 9,
    QH_TF_DOUBLE = 10,
    QH_TF_UINT64 = 11,
    QH_TF_DOC = 12,
    QH_TF_EXTERNAL = 13,
    QH_TF_LOCATION = 14,
};

/* "UINT8", "FLOAT16", ... (TensorProto.DataType's names), "unknown" for other codes. */
const char *qh_onnx_dtype_name(int64_t dtype);

#endif /* QMM_HARNESS_ONNX_PROTO_H */
