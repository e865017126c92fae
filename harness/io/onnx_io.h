/* harness/io/onnx_io.h — native reader and writer for ONNX node-test directories (docs/architecture.md
 * §2, docs/formats.md): model.onnx (ModelProto with one node) and
 * test_data_set_N/{input,output}_i.pb (TensorProto). The reader is onnx_read.c (one field table
 * per message, walked by pb_walk.c), the writer onnx_write.c; both read and write files through
 * fileio.h.
 *
 * Only the protobuf fields a node test uses are interpreted; every other field is skipped by
 * wire type. Malformed input never crashes the reader: it returns -1 and an error that names
 * the file (or "<memory>") and the field, e.g.
 *   "input_0.pb: TensorProto.raw_data: length 4294967295 runs past the end (12 bytes left)".
 */
#ifndef QMM_HARNESS_ONNX_IO_H
#define QMM_HARNESS_ONNX_IO_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/error.h"
#include "harness/base/fileio.h"
#include "harness/base/tensor.h" /* qh_tensor, QH_NAME_MAX, QH_MAX_TENSOR_BYTES */
#include "qmm/qmm.h"

#define QH_MAX_IO 16
#define QH_MAX_ATTRS 16
#define QH_MAX_OPSETS 8

/* AttributeProto.AttributeType values we keep. */
enum { QH_ATTR_FLOAT = 1, QH_ATTR_INT = 2, QH_ATTR_STRING = 3 };

typedef struct qh_attr {
    char name[QH_NAME_MAX];
    int32_t type; /* QH_ATTR_* */
    int64_t i;
    float f;
    char s[QH_NAME_MAX];
} qh_attr;

/* A graph input or output: name, element type and shape (dims < 0 are symbolic). */
typedef struct qh_value_info {
    char name[QH_NAME_MAX];
    int32_t elem_type; /* 0 when the model does not say */
    int32_t rank;      /* -1 when the model gives no shape */
    int64_t dims[QMM_MAX_RANK];
} qh_value_info;

typedef struct qh_opset {
    char domain[QH_NAME_MAX]; /* "" is ai.onnx */
    int64_t version;
} qh_opset;

/* A one-node model. Omitted optional node inputs are "" as in ONNX. */
typedef struct qh_model {
    int64_t ir_version;
    char producer_name[QH_NAME_MAX];
    int32_t n_opsets;
    qh_opset opsets[QH_MAX_OPSETS];
    char graph_name[QH_NAME_MAX];
    char op_type[QH_NAME_MAX];
    char domain[QH_NAME_MAX];
    char node_name[QH_NAME_MAX];
    int32_t n_inputs;
    char inputs[QH_MAX_IO][QH_NAME_MAX];
    int32_t n_outputs;
    char outputs[QH_MAX_IO][QH_NAME_MAX];
    int32_t n_attrs;
    qh_attr attrs[QH_MAX_ATTRS];
    int32_t n_graph_inputs;
    qh_value_info graph_inputs[QH_MAX_IO];
    int32_t n_graph_outputs;
    qh_value_info graph_outputs[QH_MAX_IO];
} qh_model;

/* Opset version the model imports for `domain` ("" or "ai.onnx" for the default domain), or -1. */
int64_t qh_model_opset(const qh_model *m, const char *domain);

/* ---- parsing from memory (what the fuzz targets call) ---------------------------------- */
/* `what` names the source in error messages ("input_0.pb", "<memory>"). 0 on success. */
int qh_parse_tensor(const uint8_t *buf, size_t len, const char *what, qh_tensor *out,
                    qh_error *err);
int qh_parse_model(const uint8_t *buf, size_t len, const char *what, qh_model *out,
                   qh_error *err);

/* ---- encoding to memory: *out is malloc'd; the caller frees it ------------------------- */
/* Tensors are written with dims, data_type, name and raw_data (little-endian). */
int qh_encode_tensor(const qmm_tensor *t, const char *name, uint8_t **out, size_t *len,
                     qh_error *err);
int qh_encode_model(const qh_model *m, uint8_t **out, size_t *len, qh_error *err);

/* ---- files ----------------------------------------------------------------------------- */
/* Errors name the file by its path. Writers write to a temporary file and rename it. */
int qh_read_tensor_file(const char *path, qh_tensor *out, qh_error *err);
/* The same within a memory budget: *left bytes for the file while it is read and the tensor's
 * data, which stays (*left less it on success); a file or a tensor past it is an error naming
 * the file and both sizes, before the memory is taken (a case's files are read one after
 * another, each counted against what the ones before kept). */
int qh_read_tensor_file_within(const char *path, qh_tensor *out, uint64_t *left, qh_error *err);
/* How the messages name that budget (case.h, qh_case_memory). */
#define QH_CASE_MEMORY_SAID                                                                     \
    "the case's memory budget (QH_CASE_MEMORY bytes where set, else half this machine's "       \
    "memory, at least 1 GiB)"
int qh_read_model_file(const char *path, qh_model *out, qh_error *err);
int qh_write_tensor_file(const char *path, const qmm_tensor *t, const char *name, qh_error *err);
int qh_write_model_file(const char *path, const qh_model *m, qh_error *err);

#endif /* QMM_HARNESS_ONNX_IO_H */
