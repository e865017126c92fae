/* harness/io/onnx_io.c — ONNX node-test files in and out, without libprotobuf.
 *
 * The reader is written for hostile input (it is a fuzz target): every length is checked
 * against what remains before it is used, tensor payloads are sized and validated before
 * anything is allocated, and every fixed-size array in qh_model is guarded. Errors name the
 * source, the message and the field: "<what>: <Message>.<field>: <problem>".
 */
#include "harness/io/onnx_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/io/pb.h"

/* ---- errors -------------------------------------------------------------------------- */

typedef struct pctx {
    const char *what;
    qh_error *err;
} pctx;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int fail(const pctx *c, const char *msg, const char *field, const char *fmt, ...)
{
    if (!c->err)
        return -1;
    char problem[QH_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    const char *what = c->what ? c->what : "<memory>";
    if (field)
        snprintf(c->err->msg, sizeof c->err->msg, "%s: %s.%s: %s", what, msg, field, problem);
    else
        snprintf(c->err->msg, sizeof c->err->msg, "%s: %s: %s", what, msg, problem);
    return -1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail_plain(qh_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Field names per message, so framing errors can say which field was being read. */
typedef struct field_name {
    uint32_t num;
    const char *name;
} field_name;

static const field_name tensor_fields[] = {
    {1, "dims"}, {2, "data_type"}, {3, "segment"}, {4, "float_data"}, {5, "int32_data"},
    {6, "string_data"}, {7, "int64_data"}, {8, "name"}, {9, "raw_data"}, {10, "double_data"},
    {11, "uint64_data"}, {12, "doc_string"}, {13, "external_data"}, {14, "data_location"},
    {0, NULL}};
static const field_name model_fields[] = {
    {1, "ir_version"}, {2, "producer_name"}, {3, "producer_version"}, {4, "domain"},
    {5, "model_version"}, {6, "doc_string"}, {7, "graph"}, {8, "opset_import"},
    {14, "metadata_props"}, {0, NULL}};
static const field_name opset_fields[] = {{1, "domain"}, {2, "version"}, {0, NULL}};
static const field_name graph_fields[] = {
    {1, "node"}, {2, "name"}, {5, "initializer"}, {10, "doc_string"}, {11, "input"},
    {12, "output"}, {13, "value_info"}, {15, "sparse_initializer"}, {0, NULL}};
static const field_name node_fields[] = {
    {1, "input"}, {2, "output"}, {3, "name"}, {4, "op_type"}, {5, "attribute"},
    {6, "doc_string"}, {7, "domain"}, {0, NULL}};
static const field_name attr_fields[] = {
    {1, "name"}, {2, "f"}, {3, "i"}, {4, "s"}, {5, "t"}, {6, "g"}, {7, "floats"},
    {8, "ints"}, {9, "strings"}, {10, "tensors"}, {11, "graphs"}, {13, "doc_string"},
    {20, "type"}, {21, "ref_attr_name"}, {0, NULL}};
static const field_name value_info_fields[] = {
    {1, "name"}, {2, "type"}, {3, "doc_string"}, {0, NULL}};
static const field_name type_fields[] = {
    {1, "tensor_type"}, {4, "sequence_type"}, {5, "map_type"}, {6, "denotation"},
    {8, "sparse_tensor_type"}, {9, "optional_type"}, {0, NULL}};
static const field_name type_tensor_fields[] = {{1, "elem_type"}, {2, "shape"}, {0, NULL}};
static const field_name shape_fields[] = {{1, "dim"}, {0, NULL}};
static const field_name dim_fields[] = {
    {1, "dim_value"}, {2, "dim_param"}, {3, "denotation"}, {0, NULL}};

/* A message being parsed: its name, its field table, the bytes. */
typedef struct msg {
    const pctx *c;
    const char *name;
    const field_name *fields;
    qh_pb_reader r;
    char numbuf[24];
} msg;

static void msg_init(msg *m, const pctx *c, const char *name, const field_name *fields,
                     const uint8_t *data, size_t len)
{
    m->c = c;
    m->name = name;
    m->fields = fields;
    qh_pb_reader_init(&m->r, data, len);
}

static const char *fname(msg *m, uint32_t num)
{
    for (const field_name *f = m->fields; f->name; f++)
        if (f->num == num)
            return f->name;
    snprintf(m->numbuf, sizeof m->numbuf, "%u", num);
    return m->numbuf;
}

/* 1: field read; 0: end; -1: error already reported. */
static int msg_next(msg *m, qh_pb_field *f)
{
    char why[256];
    int rc = qh_pb_next(&m->r, f, why, sizeof why);
    if (rc < 0)
        return fail(m->c, m->name, f->num ? fname(m, f->num) : NULL, "%s", why);
    return rc;
}

static int want_wire(msg *m, const qh_pb_field *f, uint32_t wire)
{
    if (f->wire == wire)
        return 0;
    return fail(m->c, m->name, fname(m, f->num), "wire type %u (%s), expected %s", f->wire,
                qh_pb_wire_name(f->wire), qh_pb_wire_name(wire));
}

/* A repeated message field read into a fixed array holding `n` of at most `max`: checks the
 * wire type, then that there is room ("more than MAX WHAT" on `field` otherwise). */
static int next_slot(msg *m, const qh_pb_field *f, int32_t n, int32_t max, const char *field,
                     const char *what)
{
    if (want_wire(m, f, QH_PB_LEN) != 0)
        return -1;
    if (n >= max)
        return fail(m->c, m->name, field, "more than %d %s", (int)max, what);
    return 0;
}

/* Copies a protobuf string into a fixed NUL-terminated array. */
static int get_string(msg *m, const qh_pb_field *f, char *dst, size_t cap)
{
    if (want_wire(m, f, QH_PB_LEN) != 0)
        return -1;
    if (f->len > cap - 1)
        return fail(m->c, m->name, fname(m, f->num), "string of %zu bytes exceeds the limit of %zu",
                    f->len, cap - 1);
    if (f->len && memchr(f->data, 0, f->len))
        return fail(m->c, m->name, fname(m, f->num), "string contains a NUL byte");
    /* Clearing the whole array keeps parsed structs canonical (comparable with memcmp)
     * when a field repeats with a shorter value. */
    memset(dst, 0, cap);
    memcpy(dst, f->data, f->len);
    return 0;
}

static const char *dtype_name(int64_t dt)
{
    switch (dt) {
    case QMM_DTYPE_UNDEFINED: return "UNDEFINED";
    case QMM_DTYPE_FLOAT: return "FLOAT";
    case QMM_DTYPE_UINT8: return "UINT8";
    case QMM_DTYPE_INT8: return "INT8";
    case QMM_DTYPE_UINT16: return "UINT16";
    case QMM_DTYPE_INT16: return "INT16";
    case QMM_DTYPE_INT32: return "INT32";
    case QMM_DTYPE_INT64: return "INT64";
    case QMM_DTYPE_STRING: return "STRING";
    case QMM_DTYPE_BOOL: return "BOOL";
    case QMM_DTYPE_FLOAT16: return "FLOAT16";
    case QMM_DTYPE_DOUBLE: return "DOUBLE";
    case QMM_DTYPE_UINT32: return "UINT32";
    case QMM_DTYPE_UINT64: return "UINT64";
    case 14: return "COMPLEX64";
    case 15: return "COMPLEX128";
    case QMM_DTYPE_BFLOAT16: return "BFLOAT16";
    case QMM_DTYPE_FLOAT8E4M3FN: return "FLOAT8E4M3FN";
    case QMM_DTYPE_FLOAT8E4M3FNUZ: return "FLOAT8E4M3FNUZ";
    case QMM_DTYPE_FLOAT8E5M2: return "FLOAT8E5M2";
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return "FLOAT8E5M2FNUZ";
    default: return "unknown";
    }
}

/* ---- TensorProto --------------------------------------------------------------------- */

enum { TF_DIMS = 1, TF_DATA_TYPE = 2, TF_SEGMENT = 3, TF_FLOAT = 4, TF_INT32 = 5,
       TF_STRING = 6, TF_INT64 = 7, TF_NAME = 8, TF_RAW = 9, TF_DOUBLE = 10, TF_UINT64 = 11,
       TF_DOC = 12, TF_EXTERNAL = 13, TF_LOCATION = 14 };

/* How a typed repeated field is encoded on the wire when unpacked. */
static uint32_t typed_wire(uint32_t num)
{
    switch (num) {
    case TF_FLOAT: return QH_PB_I32;
    case TF_DOUBLE: return QH_PB_I64;
    default: return QH_PB_VARINT;
    }
}

/* The typed field ONNX stores a dtype in (0 for none we accept). */
static uint32_t typed_field_for(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_FLOAT: return TF_FLOAT;
    case QMM_DTYPE_INT64: return TF_INT64;
    case QMM_DTYPE_DOUBLE: return TF_DOUBLE;
    case QMM_DTYPE_UINT32:
    case QMM_DTYPE_UINT64: return TF_UINT64;
    case QMM_DTYPE_UINT8:
    case QMM_DTYPE_INT8:
    case QMM_DTYPE_UINT16:
    case QMM_DTYPE_INT16:
    case QMM_DTYPE_INT32:
    case QMM_DTYPE_BOOL:
    case QMM_DTYPE_FLOAT16:
    case QMM_DTYPE_BFLOAT16:
    case QMM_DTYPE_FLOAT8E4M3FN:
    case QMM_DTYPE_FLOAT8E4M3FNUZ:
    case QMM_DTYPE_FLOAT8E5M2:
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return TF_INT32;
    default: return 0;
    }
}

/* Counts the elements of one occurrence of a typed field, validating a packed payload. */
static int count_typed(msg *m, const qh_pb_field *f, uint64_t *count)
{
    uint32_t w = typed_wire(f->num);
    if (f->wire == w) {
        *count += 1;
        return 0;
    }
    if (f->wire != QH_PB_LEN)
        return fail(m->c, m->name, fname(m, f->num), "wire type %u (%s), expected %s or packed",
                    f->wire, qh_pb_wire_name(f->wire), qh_pb_wire_name(w));
    if (w == QH_PB_I32 || w == QH_PB_I64) {
        size_t sz = w == QH_PB_I32 ? 4 : 8;
        if (f->len % sz)
            return fail(m->c, m->name, fname(m, f->num),
                        "packed length %zu is not a multiple of %zu", f->len, sz);
        *count += f->len / sz;
        return 0;
    }
    const uint8_t *p = f->data, *end = f->data + f->len;
    while (p < end) {
        uint64_t v;
        char why[128];
        if (qh_pb_read_varint(&p, end, &v, why, sizeof why) != 0)
            return fail(m->c, m->name, fname(m, f->num), "packed element %llu: %s",
                        (unsigned long long)*count, why);
        *count += 1;
    }
    return 0;
}

static void store_le(uint8_t *dst, uint64_t v, size_t size)
{
    for (size_t i = 0; i < size; i++)
        dst[i] = (uint8_t)(v >> (8 * i));
}

/* Converts one typed element into its little-endian bytes, checking the value fits. */
static int put_element(msg *m, uint32_t num, int32_t dtype, uint64_t raw, uint64_t index,
                       uint8_t *dst)
{
    size_t esize = qmm_dtype_size(dtype);
    int64_t lo = 0, hi = 0;
    switch (num) {
    case TF_INT32: {
        /* int32 fields take the low 32 bits of the varint, as libprotobuf does. */
        int32_t v = (int32_t)(uint32_t)raw;
        switch (dtype) {
        case QMM_DTYPE_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
        case QMM_DTYPE_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
        case QMM_DTYPE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
        case QMM_DTYPE_BOOL: lo = 0; hi = 1; break;
        case QMM_DTYPE_UINT16:
        case QMM_DTYPE_FLOAT16:
        case QMM_DTYPE_BFLOAT16: lo = 0; hi = UINT16_MAX; break;
        default: lo = 0; hi = UINT8_MAX; break;
        }
        if (v < lo || v > hi)
            return fail(m->c, m->name, fname(m, num),
                        "element %llu: value %ld out of range for %s",
                        (unsigned long long)index, (long)v, dtype_name(dtype));
        store_le(dst, (uint64_t)(uint32_t)v, esize);
        return 0;
    }
    case TF_UINT64:
        if (dtype == QMM_DTYPE_UINT32 && raw > UINT32_MAX)
            return fail(m->c, m->name, fname(m, num),
                        "element %llu: value %llu out of range for UINT32",
                        (unsigned long long)index, (unsigned long long)raw);
        store_le(dst, raw, esize);
        return 0;
    default: /* float bits, double bits, int64: stored as they came */
        store_le(dst, raw, esize);
        return 0;
    }
}

/* Second pass: decodes every element of field `num` into dst (numel elements). */
static int decode_typed(msg *m, const uint8_t *buf, size_t len, uint32_t num, int32_t dtype,
                        uint8_t *dst)
{
    size_t esize = qmm_dtype_size(dtype);
    uint64_t k = 0;
    qh_pb_field f;
    int rc;
    msg_init(m, m->c, m->name, m->fields, buf, len);
    while ((rc = msg_next(m, &f)) > 0) {
        if (f.num != num)
            continue;
        uint32_t w = typed_wire(num);
        if (f.wire == w) {
            if (put_element(m, num, dtype, f.u, k, dst + k * esize) != 0)
                return -1;
            k++;
            continue;
        }
        const uint8_t *p = f.data, *end = f.data + f.len;
        while (p < end) {
            uint64_t v;
            if (w == QH_PB_I32) {
                v = qh_pb_load32(p);
                p += 4;
            } else if (w == QH_PB_I64) {
                v = qh_pb_load64(p);
                p += 8;
            } else {
                char why[128];
                if (qh_pb_read_varint(&p, end, &v, why, sizeof why) != 0)
                    return fail(m->c, m->name, fname(m, num), "%s", why);
            }
            if (put_element(m, num, dtype, v, k, dst + k * esize) != 0)
                return -1;
            k++;
        }
    }
    return rc;
}

/* What a TensorProto's fields said, before any of it is checked against the rest. */
typedef struct tensor_seen {
    int32_t rank;
    int64_t dims[QMM_MAX_RANK];
    int have_dtype;
    int64_t dtype;
    const uint8_t *raw;
    size_t raw_len;
    int have_raw;
    uint32_t typed_num; /* which typed field carries data, 0 for none */
    uint64_t typed_count;
} tensor_seen;

/* One dims field, a single varint or a packed run, appended to s->dims. */
static int read_dims(msg *m, const qh_pb_field *f, tensor_seen *s)
{
    int packed = f->wire == QH_PB_LEN;
    const uint8_t *p = f->data, *end = packed ? f->data + f->len : f->data;
    if (!packed && f->wire != QH_PB_VARINT)
        return fail(m->c, m->name, "dims", "wire type %u (%s), expected varint or packed",
                    f->wire, qh_pb_wire_name(f->wire));
    for (;;) {
        uint64_t v = f->u;
        if (packed) {
            char why[128];
            if (p >= end)
                break;
            if (qh_pb_read_varint(&p, end, &v, why, sizeof why) != 0)
                return fail(m->c, m->name, "dims", "packed: %s", why);
        }
        if (s->rank >= QMM_MAX_RANK)
            return fail(m->c, m->name, "dims", "rank exceeds %d", QMM_MAX_RANK);
        if ((int64_t)v < 0)
            return fail(m->c, m->name, "dims", "dimension %d is negative (%lld)",
                        (int)s->rank, (long long)(int64_t)v);
        s->dims[s->rank++] = (int64_t)v;
        if (!packed)
            break;
    }
    return 0;
}

/* One TensorProto field into s (the name straight into out); rejects what is unsupported. */
static int read_tensor_field(msg *m, const qh_pb_field *f, tensor_seen *s, qh_tensor *out)
{
    switch (f->num) {
    case TF_DIMS:
        return read_dims(m, f, s);
    case TF_DATA_TYPE:
        if (want_wire(m, f, QH_PB_VARINT) != 0)
            return -1;
        s->have_dtype = 1;
        s->dtype = (int64_t)(int32_t)(uint32_t)f->u;
        return 0;
    case TF_SEGMENT:
        return fail(m->c, m->name, "segment", "segmented tensors are not supported");
    case TF_STRING:
        return fail(m->c, m->name, "string_data", "string tensors are not supported");
    case TF_FLOAT:
    case TF_INT32:
    case TF_INT64:
    case TF_DOUBLE:
    case TF_UINT64:
        if (s->typed_num && s->typed_num != f->num)
            return fail(m->c, m->name, fname(m, f->num), "data also given in %s",
                        fname(m, s->typed_num));
        s->typed_num = f->num;
        return count_typed(m, f, &s->typed_count);
    case TF_NAME:
        return get_string(m, f, out->name, sizeof out->name);
    case TF_RAW:
        if (want_wire(m, f, QH_PB_LEN) != 0)
            return -1;
        s->have_raw = 1;
        s->raw = f->data;
        s->raw_len = f->len;
        return 0;
    case TF_DOC:
        return want_wire(m, f, QH_PB_LEN);
    case TF_EXTERNAL:
        return fail(m->c, m->name, "external_data", "external data is not supported");
    case TF_LOCATION:
        if (want_wire(m, f, QH_PB_VARINT) != 0)
            return -1;
        if (f->u != 0)
            return fail(m->c, m->name, "data_location", "external data is not supported");
        return 0;
    default:
        return 0; /* unknown fields were skipped by wire type in qh_pb_next */
    }
}

/* Checks the data type, the element count and the data fields against each other; sets
 * *bytes_out to the tensor's size. */
static int check_tensor_sizes(msg *m, const tensor_seen *s, size_t *bytes_out)
{
    if (!s->have_dtype)
        return fail(m->c, m->name, "data_type", "missing");
    int64_t dtype = s->dtype;
    size_t esize = (dtype >= 0 && dtype <= INT32_MAX) ? qmm_dtype_size((int32_t)dtype) : 0;
    if (esize == 0)
        return fail(m->c, m->name, "data_type", "unsupported data type %lld (%s)",
                    (long long)dtype, dtype_name(dtype));

    int64_t numel = 1;
    for (int32_t i = 0; i < s->rank; i++) {
        if (s->dims[i] != 0 && numel > INT64_MAX / s->dims[i])
            return fail(m->c, m->name, "dims", "element count overflows int64");
        numel *= s->dims[i];
    }
    if (numel > QH_MAX_TENSOR_BYTES / (int64_t)esize)
        return fail(m->c, m->name, "dims", "%lld elements of %s exceed the %lld-byte limit",
                    (long long)numel, dtype_name(dtype), (long long)QH_MAX_TENSOR_BYTES);
    size_t bytes = (size_t)numel * esize;

    if (s->typed_num) {
        if (typed_field_for((int32_t)dtype) != s->typed_num)
            return fail(m->c, m->name, fname(m, s->typed_num), "not valid for data_type %s",
                        dtype_name(dtype));
        if (s->typed_count != (uint64_t)numel)
            return fail(m->c, m->name, fname(m, s->typed_num), "%llu elements, dims say %lld",
                        (unsigned long long)s->typed_count, (long long)numel);
    }
    if (s->have_raw && s->raw_len != bytes)
        return fail(m->c, m->name, "raw_data", "length %zu, expected %zu (%lld elements of %s)",
                    s->raw_len, bytes, (long long)numel, dtype_name(dtype));
    if (!s->have_raw && !s->typed_num && numel != 0)
        return fail(m->c, m->name, "raw_data", "missing: %lld elements but no data",
                    (long long)numel);
    *bytes_out = bytes;
    return 0;
}

/* The tensor's bytes, from the typed field (which raw_data, if also given, must match) or
 * from raw_data; *data is allocated here and only on success. */
static int load_tensor_data(msg *m, const uint8_t *buf, size_t len, const tensor_seen *s,
                            size_t bytes, uint8_t **data_out)
{
    uint8_t *data = malloc(bytes ? bytes : 1);
    if (!data)
        return fail(m->c, m->name, "raw_data", "out of memory allocating %zu bytes", bytes);
    if (s->typed_num) {
        if (decode_typed(m, buf, len, s->typed_num, (int32_t)s->dtype, data) != 0) {
            free(data);
            return -1;
        }
        if (s->have_raw && memcmp(s->raw, data, bytes) != 0) {
            free(data);
            return fail(m->c, m->name, "raw_data", "conflicts with %s", fname(m, s->typed_num));
        }
    } else if (bytes) {
        memcpy(data, s->raw, bytes);
    }
    *data_out = data;
    return 0;
}

static int parse_tensor(const uint8_t *buf, size_t len, const char *what, qh_tensor *out,
                        qh_error *err)
{
    pctx c = {what, err};
    msg m;
    memset(out, 0, sizeof *out);
    msg_init(&m, &c, "TensorProto", tensor_fields, buf, len);

    tensor_seen s;
    memset(&s, 0, sizeof s);
    qh_pb_field f;
    int rc;
    while ((rc = msg_next(&m, &f)) > 0)
        if (read_tensor_field(&m, &f, &s, out) != 0)
            return -1;
    if (rc < 0)
        return -1;

    size_t bytes = 0;
    if (check_tensor_sizes(&m, &s, &bytes) != 0)
        return -1;
    /* Sizes are now validated against the bytes actually present, so allocating is safe. */
    uint8_t *data = NULL;
    if (load_tensor_data(&m, buf, len, &s, bytes, &data) != 0)
        return -1;
    out->t.dtype = (int32_t)s.dtype;
    out->t.rank = s.rank;
    memcpy(out->t.dims, s.dims, sizeof s.dims);
    out->t.data = data;
    return 0;
}

int qh_parse_tensor(const uint8_t *buf, size_t len, const char *what, qh_tensor *out,
                    qh_error *err)
{
    if (parse_tensor(buf, len, what, out, err) != 0) {
        /* parse_tensor allocates only as its last step, so nothing is leaked here. */
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

void qh_tensor_free(qh_tensor *t)
{
    if (!t)
        return;
    free(t->t.data);
    t->t.data = NULL;
}

/* ---- ModelProto ---------------------------------------------------------------------- */

/* Attribute types as AttributeProto.AttributeType numbers them, for messages. */
static const char *attr_type_name(int64_t t)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
        "STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
        "TYPE_PROTOS"};
    if (t >= 0 && t < (int64_t)(sizeof names / sizeof names[0]))
        return names[t];
    return "unknown";
}

static int parse_attr(const pctx *c, const uint8_t *buf, size_t len, qh_attr *a)
{
    msg m;
    msg_init(&m, c, "AttributeProto", attr_fields, buf, len);
    qh_pb_field f;
    int rc;
    int64_t type = 0;
    int have_type = 0, have_f = 0, have_i = 0, have_s = 0;
    uint32_t other = 0; /* a value field we do not keep */
    const uint8_t *s_data = NULL;
    size_t s_len = 0;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (get_string(&m, &f, a->name, sizeof a->name) != 0)
                return -1;
            break;
        case 2:
            if (want_wire(&m, &f, QH_PB_I32) != 0)
                return -1;
            {
                uint32_t bits = (uint32_t)f.u;
                memcpy(&a->f, &bits, sizeof bits);
            }
            have_f = 1;
            break;
        case 3:
            if (want_wire(&m, &f, QH_PB_VARINT) != 0)
                return -1;
            a->i = (int64_t)f.u;
            have_i = 1;
            break;
        case 4:
            /* Checked after the loop, when the attribute's name is known for the error. */
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            s_data = f.data;
            s_len = f.len;
            have_s = 1;
            break;
        case 20:
            if (want_wire(&m, &f, QH_PB_VARINT) != 0)
                return -1;
            type = (int64_t)(int32_t)(uint32_t)f.u;
            have_type = 1;
            break;
        case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 22: case 23:
        case 14: case 15:
            if (!other)
                other = f.num;
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        return -1;
    if (!have_type) {
        /* Pre-IR-3 models leave the type implicit in which value field is set. */
        if (other)
            return fail(c, m.name, fname(&m, other),
                        "attribute '%s': only FLOAT, INT and STRING attributes are supported",
                        a->name);
        type = have_f ? QH_ATTR_FLOAT : have_i ? QH_ATTR_INT : have_s ? QH_ATTR_STRING : 0;
    }
    if (type != QH_ATTR_FLOAT && type != QH_ATTR_INT && type != QH_ATTR_STRING)
        return fail(c, m.name, "type",
                    "attribute '%s' has type %s (%lld); only FLOAT, INT and STRING are "
                    "supported", a->name, attr_type_name(type), (long long)type);
    if (a->name[0] == '\0')
        return fail(c, m.name, "name", "attribute without a name");
    /* Keep only the value the type selects, so encoding loses nothing we hold. */
    if (type != QH_ATTR_FLOAT)
        a->f = 0.0f;
    if (type != QH_ATTR_INT)
        a->i = 0;
    if (have_s && type == QH_ATTR_STRING) {
        if (s_len > sizeof a->s - 1)
            return fail(c, m.name, "s", "attribute '%s': string of %zu bytes exceeds the "
                        "limit of %zu", a->name, s_len, sizeof a->s - 1);
        if (s_len && memchr(s_data, 0, s_len))
            return fail(c, m.name, "s", "attribute '%s': string contains a NUL byte",
                        a->name);
        memcpy(a->s, s_data, s_len);
        a->s[s_len] = '\0';
    }
    a->type = (int32_t)type;
    return 0;
}

static int parse_node(const pctx *c, const uint8_t *buf, size_t len, qh_model *out)
{
    msg m;
    msg_init(&m, c, "NodeProto", node_fields, buf, len);
    qh_pb_field f;
    int rc;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (out->n_inputs >= QH_MAX_IO)
                return fail(c, m.name, "input", "more than %d inputs", QH_MAX_IO);
            if (get_string(&m, &f, out->inputs[out->n_inputs], QH_NAME_MAX) != 0)
                return -1;
            out->n_inputs++;
            break;
        case 2:
            if (out->n_outputs >= QH_MAX_IO)
                return fail(c, m.name, "output", "more than %d outputs", QH_MAX_IO);
            if (get_string(&m, &f, out->outputs[out->n_outputs], QH_NAME_MAX) != 0)
                return -1;
            out->n_outputs++;
            break;
        case 3:
            if (get_string(&m, &f, out->node_name, sizeof out->node_name) != 0)
                return -1;
            break;
        case 4:
            if (get_string(&m, &f, out->op_type, sizeof out->op_type) != 0)
                return -1;
            break;
        case 5: {
            if (next_slot(&m, &f, out->n_attrs, QH_MAX_ATTRS, "attribute", "attributes") != 0)
                return -1;
            qh_attr *a = &out->attrs[out->n_attrs];
            memset(a, 0, sizeof *a);
            if (parse_attr(c, f.data, f.len, a) != 0)
                return -1;
            for (int32_t i = 0; i < out->n_attrs; i++)
                if (strcmp(out->attrs[i].name, a->name) == 0)
                    return fail(c, m.name, "attribute", "attribute '%s' given twice",
                                a->name);
            out->n_attrs++;
            break;
        }
        case 6:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            break;
        case 7:
            if (get_string(&m, &f, out->domain, sizeof out->domain) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int parse_dim(const pctx *c, const uint8_t *buf, size_t len, int64_t *dim)
{
    msg m;
    msg_init(&m, c, "TensorShapeProto.Dimension", dim_fields, buf, len);
    qh_pb_field f;
    int rc;
    *dim = -1; /* neither value nor param: an unknown dimension */
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (want_wire(&m, &f, QH_PB_VARINT) != 0)
                return -1;
            if ((int64_t)f.u < 0)
                return fail(c, m.name, "dim_value", "negative (%lld)", (long long)(int64_t)f.u);
            *dim = (int64_t)f.u;
            break;
        case 2:
            /* A symbolic dimension: kept only as "unknown" */
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            *dim = -1;
            break;
        case 3:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int parse_shape(const pctx *c, const uint8_t *buf, size_t len, qh_value_info *vi)
{
    msg m;
    msg_init(&m, c, "TensorShapeProto", shape_fields, buf, len);
    qh_pb_field f;
    int rc;
    vi->rank = 0;
    while ((rc = msg_next(&m, &f)) > 0) {
        if (f.num != 1)
            continue;
        if (want_wire(&m, &f, QH_PB_LEN) != 0)
            return -1;
        if (vi->rank >= QMM_MAX_RANK)
            return fail(c, m.name, "dim", "rank exceeds %d", QMM_MAX_RANK);
        if (parse_dim(c, f.data, f.len, &vi->dims[vi->rank]) != 0)
            return -1;
        vi->rank++;
    }
    return rc < 0 ? -1 : 0;
}

static int parse_type_tensor(const pctx *c, const uint8_t *buf, size_t len, qh_value_info *vi)
{
    msg m;
    msg_init(&m, c, "TypeProto.Tensor", type_tensor_fields, buf, len);
    qh_pb_field f;
    int rc;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (want_wire(&m, &f, QH_PB_VARINT) != 0)
                return -1;
            vi->elem_type = (int32_t)(uint32_t)f.u;
            if (vi->elem_type < 0)
                return fail(c, m.name, "elem_type", "negative (%ld)", (long)vi->elem_type);
            break;
        case 2:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            /* A repeated occurrence would merge in protobuf; restarting is simpler and a
             * writer never emits two. */
            memset(vi->dims, 0, sizeof vi->dims);
            if (parse_shape(c, f.data, f.len, vi) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int parse_type(const pctx *c, const uint8_t *buf, size_t len, qh_value_info *vi)
{
    msg m;
    msg_init(&m, c, "TypeProto", type_fields, buf, len);
    qh_pb_field f;
    int rc;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            if (parse_type_tensor(c, f.data, f.len, vi) != 0)
                return -1;
            break;
        case 4: case 5: case 8: case 9:
            return fail(c, m.name, fname(&m, f.num), "value '%s': only tensor types are "
                        "supported", vi->name);
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int parse_value_info(const pctx *c, const uint8_t *buf, size_t len, qh_value_info *vi)
{
    msg m;
    msg_init(&m, c, "ValueInfoProto", value_info_fields, buf, len);
    qh_pb_field f;
    int rc;
    memset(vi, 0, sizeof *vi);
    vi->rank = -1;
    /* `type` may precede `name`; remember it so errors inside can name the value. */
    const uint8_t *type_data = NULL;
    size_t type_len = 0;
    int have_type = 0;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (get_string(&m, &f, vi->name, sizeof vi->name) != 0)
                return -1;
            break;
        case 2:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            /* Singular message fields merge; for what we keep, the last one wins. */
            type_data = f.data;
            type_len = f.len;
            have_type = 1;
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        return -1;
    if (have_type)
        return parse_type(c, type_data, type_len, vi);
    return 0;
}

typedef struct graph_state {
    int32_t n_nodes;
} graph_state;

static int parse_graph(const pctx *c, const uint8_t *buf, size_t len, qh_model *out,
                       graph_state *gs)
{
    msg m;
    msg_init(&m, c, "GraphProto", graph_fields, buf, len);
    qh_pb_field f;
    int rc;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                return -1;
            /* Extra nodes are only counted: the error after the loop reports how many. */
            if (gs->n_nodes == 0 && parse_node(c, f.data, f.len, out) != 0)
                return -1;
            if (gs->n_nodes < INT32_MAX)
                gs->n_nodes++;
            break;
        case 2:
            if (get_string(&m, &f, out->graph_name, sizeof out->graph_name) != 0)
                return -1;
            break;
        case 5:
        case 15:
            return fail(c, m.name, fname(&m, f.num),
                        "initializers are not supported in node tests");
        case 11:
            if (next_slot(&m, &f, out->n_graph_inputs, QH_MAX_IO, "input", "inputs") != 0)
                return -1;
            if (parse_value_info(c, f.data, f.len, &out->graph_inputs[out->n_graph_inputs]))
                return -1;
            out->n_graph_inputs++;
            break;
        case 12:
            if (next_slot(&m, &f, out->n_graph_outputs, QH_MAX_IO, "output", "outputs") != 0)
                return -1;
            if (parse_value_info(c, f.data, f.len,
                                 &out->graph_outputs[out->n_graph_outputs]))
                return -1;
            out->n_graph_outputs++;
            break;
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int parse_opset(const pctx *c, const uint8_t *buf, size_t len, qh_opset *o)
{
    msg m;
    msg_init(&m, c, "OperatorSetIdProto", opset_fields, buf, len);
    qh_pb_field f;
    int rc;
    memset(o, 0, sizeof *o);
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (get_string(&m, &f, o->domain, sizeof o->domain) != 0)
                return -1;
            break;
        case 2:
            if (want_wire(&m, &f, QH_PB_VARINT) != 0)
                return -1;
            /* Operators take the opset as an int: a larger one would wrap to a small,
             * valid-looking version and run the case under the wrong semantics. */
            if (f.u > (uint64_t)INT32_MAX)
                return fail(c, m.name, "version", "%lld is outside 0..%ld",
                            (long long)(int64_t)f.u, (long)INT32_MAX);
            o->version = (int64_t)f.u;
            break;
        default:
            break;
        }
    }
    return rc < 0 ? -1 : 0;
}

int qh_parse_model(const uint8_t *buf, size_t len, const char *what, qh_model *out,
                   qh_error *err)
{
    pctx c = {what, err};
    msg m;
    memset(out, 0, sizeof *out);
    msg_init(&m, &c, "ModelProto", model_fields, buf, len);
    graph_state gs = {0};
    int have_graph = 0;
    qh_pb_field f;
    int rc;
    while ((rc = msg_next(&m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (want_wire(&m, &f, QH_PB_VARINT) != 0)
                goto fail;
            out->ir_version = (int64_t)f.u;
            break;
        case 2:
            if (get_string(&m, &f, out->producer_name, sizeof out->producer_name) != 0)
                goto fail;
            break;
        case 7:
            if (want_wire(&m, &f, QH_PB_LEN) != 0)
                goto fail;
            /* A repeated singular message merges in protobuf; parsing into the same state
             * gives the same result for the repeated fields we keep. */
            have_graph = 1;
            if (parse_graph(&c, f.data, f.len, out, &gs) != 0)
                goto fail;
            break;
        case 8:
            if (next_slot(&m, &f, out->n_opsets, QH_MAX_OPSETS, "opset_import", "opset imports"))
                goto fail;
            if (parse_opset(&c, f.data, f.len, &out->opsets[out->n_opsets]) != 0)
                goto fail;
            out->n_opsets++;
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        goto fail;
    if (!have_graph) {
        fail(&c, m.name, "graph", "missing");
        goto fail;
    }
    if (gs.n_nodes != 1) {
        fail(&c, "GraphProto", "node", "expected exactly one node, found %ld",
             (long)gs.n_nodes);
        goto fail;
    }
    return 0;
fail:
    /* Leave no half-filled model behind for a caller that ignores the result. */
    memset(out, 0, sizeof *out);
    return -1;
}

int64_t qh_model_opset(const qh_model *m, const char *domain)
{
    int want_default = domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
    for (int32_t i = 0; i < m->n_opsets && i < QH_MAX_OPSETS; i++) {
        const char *d = m->opsets[i].domain;
        int is_default = d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
        if (want_default ? is_default : strcmp(d, domain) == 0)
            return m->opsets[i].version;
    }
    return -1;
}

/* ---- encoding ------------------------------------------------------------------------ */

int qh_encode_tensor(const qmm_tensor *t, const char *name, uint8_t **out, size_t *len,
                     qh_error *err)
{
    const char *what = name && name[0] ? name : "<tensor>";
    *out = NULL;
    *len = 0;
    size_t esize = qmm_dtype_size(t->dtype);
    if (esize == 0)
        return fail_plain(err, "%s: TensorProto.data_type: cannot encode data type %ld (%s)",
                          what, (long)t->dtype, dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > QMM_MAX_RANK)
        return fail_plain(err, "%s: TensorProto.dims: rank %ld out of range", what,
                          (long)t->rank);
    int64_t numel = qmm_tensor_numel(t);
    if (numel < 0)
        return fail_plain(err, "%s: TensorProto.dims: negative or overflowing dimensions",
                          what);
    if (numel > QH_MAX_TENSOR_BYTES / (int64_t)esize)
        return fail_plain(err, "%s: TensorProto.dims: payload exceeds %lld bytes", what,
                          (long long)QH_MAX_TENSOR_BYTES);
    size_t bytes = (size_t)numel * esize;
    if (bytes && !t->data)
        return fail_plain(err, "%s: TensorProto.raw_data: no data", what);
    if (name && strlen(name) > QH_NAME_MAX - 1)
        return fail_plain(err, "%s: TensorProto.name: longer than %d bytes", what,
                          QH_NAME_MAX - 1);

    qh_pb_buf b;
    qh_pb_buf_init(&b);
    for (int32_t i = 0; i < t->rank; i++)
        qh_pb_put_varint_field(&b, TF_DIMS, (uint64_t)t->dims[i]);
    qh_pb_put_varint_field(&b, TF_DATA_TYPE, (uint64_t)t->dtype);
    if (name && name[0])
        qh_pb_put_string_field(&b, TF_NAME, name);
    qh_pb_put_bytes_field(&b, TF_RAW, t->data, bytes);
    *out = qh_pb_buf_take(&b, len);
    if (!*out)
        return fail_plain(err, "%s: TensorProto: out of memory", what);
    return 0;
}

/* Checks a fixed-array string from a caller-built model before it is encoded. */
static int model_str_ok(const char *s, const char *field, qh_error *err)
{
    if (memchr(s, 0, QH_NAME_MAX) == NULL)
        return fail_plain(err, "<model>: %s: not NUL-terminated within %d bytes", field,
                          QH_NAME_MAX);
    return 0;
}

static void put_nonempty(qh_pb_buf *b, uint32_t num, const char *s)
{
    if (s[0])
        qh_pb_put_string_field(b, num, s);
}

static void encode_value_info(qh_pb_buf *b, uint32_t num, const qh_value_info *vi)
{
    qh_pb_buf vb, tb, ttb, sb, db;
    qh_pb_buf_init(&vb);
    qh_pb_buf_init(&tb);
    qh_pb_buf_init(&ttb);
    qh_pb_buf_init(&sb);
    put_nonempty(&vb, 1, vi->name);
    if (vi->elem_type)
        qh_pb_put_varint_field(&ttb, 1, (uint64_t)vi->elem_type);
    if (vi->rank >= 0) {
        for (int32_t i = 0; i < vi->rank; i++) {
            qh_pb_buf_init(&db);
            if (vi->dims[i] >= 0)
                qh_pb_put_varint_field(&db, 1, (uint64_t)vi->dims[i]);
            qh_pb_put_message_field(&sb, 1, &db);
            qh_pb_buf_free(&db);
        }
        qh_pb_put_message_field(&ttb, 2, &sb);
    }
    qh_pb_put_message_field(&tb, 1, &ttb);
    qh_pb_put_message_field(&vb, 2, &tb);
    qh_pb_put_message_field(b, num, &vb);
    qh_pb_buf_free(&vb);
    qh_pb_buf_free(&tb);
    qh_pb_buf_free(&ttb);
    qh_pb_buf_free(&sb);
}

static int check_model(const qh_model *m, qh_error *err)
{
    if (m->n_inputs < 0 || m->n_inputs > QH_MAX_IO || m->n_outputs < 0 ||
        m->n_outputs > QH_MAX_IO || m->n_attrs < 0 || m->n_attrs > QH_MAX_ATTRS ||
        m->n_opsets < 0 || m->n_opsets > QH_MAX_OPSETS || m->n_graph_inputs < 0 ||
        m->n_graph_inputs > QH_MAX_IO || m->n_graph_outputs < 0 ||
        m->n_graph_outputs > QH_MAX_IO)
        return fail_plain(err, "<model>: ModelProto: a count is out of range");
    if (model_str_ok(m->producer_name, "ModelProto.producer_name", err) ||
        model_str_ok(m->graph_name, "GraphProto.name", err) ||
        model_str_ok(m->op_type, "NodeProto.op_type", err) ||
        model_str_ok(m->domain, "NodeProto.domain", err) ||
        model_str_ok(m->node_name, "NodeProto.name", err))
        return -1;
    for (int32_t i = 0; i < m->n_inputs; i++)
        if (model_str_ok(m->inputs[i], "NodeProto.input", err))
            return -1;
    for (int32_t i = 0; i < m->n_outputs; i++)
        if (model_str_ok(m->outputs[i], "NodeProto.output", err))
            return -1;
    for (int32_t i = 0; i < m->n_opsets; i++)
        if (model_str_ok(m->opsets[i].domain, "OperatorSetIdProto.domain", err))
            return -1;
    for (int32_t i = 0; i < m->n_attrs; i++) {
        const qh_attr *a = &m->attrs[i];
        if (model_str_ok(a->name, "AttributeProto.name", err) ||
            model_str_ok(a->s, "AttributeProto.s", err))
            return -1;
        if (a->type != QH_ATTR_FLOAT && a->type != QH_ATTR_INT && a->type != QH_ATTR_STRING)
            return fail_plain(err, "<model>: AttributeProto.type: attribute '%s' has type %ld",
                              a->name, (long)a->type);
    }
    for (int32_t k = 0; k < 2; k++) {
        const qh_value_info *v = k ? m->graph_outputs : m->graph_inputs;
        int32_t n = k ? m->n_graph_outputs : m->n_graph_inputs;
        for (int32_t i = 0; i < n; i++) {
            if (model_str_ok(v[i].name, "ValueInfoProto.name", err))
                return -1;
            if (v[i].rank < -1 || v[i].rank > QMM_MAX_RANK || v[i].elem_type < 0)
                return fail_plain(err, "<model>: ValueInfoProto.type: value '%s' has rank %ld",
                                  v[i].name, (long)v[i].rank);
        }
    }
    return 0;
}

int qh_encode_model(const qh_model *m, uint8_t **out, size_t *len, qh_error *err)
{
    *out = NULL;
    *len = 0;
    if (check_model(m, err) != 0)
        return -1;

    qh_pb_buf node, graph, model, sub;
    qh_pb_buf_init(&node);
    qh_pb_buf_init(&graph);
    qh_pb_buf_init(&model);

    for (int32_t i = 0; i < m->n_inputs; i++)
        qh_pb_put_string_field(&node, 1, m->inputs[i]);
    for (int32_t i = 0; i < m->n_outputs; i++)
        qh_pb_put_string_field(&node, 2, m->outputs[i]);
    put_nonempty(&node, 3, m->node_name);
    put_nonempty(&node, 4, m->op_type);
    for (int32_t i = 0; i < m->n_attrs; i++) {
        const qh_attr *a = &m->attrs[i];
        uint32_t bits;
        qh_pb_buf_init(&sub);
        qh_pb_put_string_field(&sub, 1, a->name);
        switch (a->type) {
        case QH_ATTR_FLOAT:
            memcpy(&bits, &a->f, sizeof bits);
            qh_pb_put_fixed32_field(&sub, 2, bits);
            break;
        case QH_ATTR_INT:
            qh_pb_put_varint_field(&sub, 3, (uint64_t)a->i);
            break;
        default:
            qh_pb_put_string_field(&sub, 4, a->s);
            break;
        }
        qh_pb_put_varint_field(&sub, 20, (uint64_t)a->type);
        qh_pb_put_message_field(&node, 5, &sub);
        qh_pb_buf_free(&sub);
    }
    put_nonempty(&node, 7, m->domain);

    qh_pb_put_message_field(&graph, 1, &node);
    put_nonempty(&graph, 2, m->graph_name);
    for (int32_t i = 0; i < m->n_graph_inputs; i++)
        encode_value_info(&graph, 11, &m->graph_inputs[i]);
    for (int32_t i = 0; i < m->n_graph_outputs; i++)
        encode_value_info(&graph, 12, &m->graph_outputs[i]);

    if (m->ir_version)
        qh_pb_put_varint_field(&model, 1, (uint64_t)m->ir_version);
    put_nonempty(&model, 2, m->producer_name);
    qh_pb_put_message_field(&model, 7, &graph);
    for (int32_t i = 0; i < m->n_opsets; i++) {
        qh_pb_buf_init(&sub);
        qh_pb_put_string_field(&sub, 1, m->opsets[i].domain);
        qh_pb_put_varint_field(&sub, 2, (uint64_t)m->opsets[i].version);
        qh_pb_put_message_field(&model, 8, &sub);
        qh_pb_buf_free(&sub);
    }
    qh_pb_buf_free(&node);
    qh_pb_buf_free(&graph);
    *out = qh_pb_buf_take(&model, len);
    if (!*out)
        return fail_plain(err, "<model>: ModelProto: out of memory");
    return 0;
}

/* ---- files --------------------------------------------------------------------------- */

/* Large enough for the biggest tensor the parser accepts, even in varint-heavy typed form. */
#define TENSOR_FILE_MAX \
    ((uint64_t)QH_MAX_TENSOR_BYTES * 2 + ((uint64_t)1 << 20) > (uint64_t)SIZE_MAX \
         ? (size_t)SIZE_MAX                                                            \
         : (size_t)((uint64_t)QH_MAX_TENSOR_BYTES * 2 + ((uint64_t)1 << 20)))
#define MODEL_FILE_MAX ((size_t)64 << 20)

const char *qh_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "an unknown kind of file";
    }
}

int qh_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, qh_error *err)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK so that opening a FIFO (or a device that waits for a peer) returns at once
     * instead of blocking until a writer appears; what is not a regular file is then refused
     * before anything is read. A symlink to a regular file is followed like the file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return fail_plain(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail_plain(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail_plain(err, "%s: not a regular file (%s)", path, qh_file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return fail_plain(err, "%s: cannot open: %s", path, strerror(e));
    }
    if (st.st_size > 0 && (uint64_t)st.st_size > (uint64_t)max) {
        close(fd);
        return fail_plain(err, "%s: %lld bytes exceeds the limit of %zu", path,
                          (long long)st.st_size, max);
    }
    /* The size is only a hint (pipes, /proc, a file that grows): read until EOF, never
     * accepting more than max. */
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    if (cap > max && max < SIZE_MAX)
        cap = max + 1;
    if (cap == 0)
        cap = 1;
    uint8_t *p = malloc(cap);
    if (!p) {
        close(fd);
        return fail_plain(err, "%s: out of memory", path);
    }
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            if (n > max) {
                free(p);
                close(fd);
                return fail_plain(err, "%s: larger than the limit of %zu bytes", path, max);
            }
            size_t ncap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
            if (max < SIZE_MAX && ncap > max + 1)
                ncap = max + 1;
            uint8_t *q = realloc(p, ncap);
            if (!q) {
                free(p);
                close(fd);
                return fail_plain(err, "%s: out of memory", path);
            }
            p = q;
            cap = ncap;
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(p);
            close(fd);
            return fail_plain(err, "%s: read error: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max) {
        free(p);
        return fail_plain(err, "%s: larger than the limit of %zu bytes", path, max);
    }
    *buf = p;
    *len = n;
    return 0;
}

int qh_write_file_atomic(const char *path, const void *buf, size_t len, qh_error *err)
{
    char tmp[4096];
    int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (k < 0 || (size_t)k >= sizeof tmp)
        return fail_plain(err, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return fail_plain(err, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    const uint8_t *p = buf;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return fail_plain(err, "%s: write error: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return fail_plain(err, "%s: write error: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return fail_plain(err, "%s: cannot rename %s: %s", path, tmp, strerror(e));
    }
    return 0;
}

int qh_read_tensor_file(const char *path, qh_tensor *out, qh_error *err)
{
    uint8_t *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    if (qh_read_file(path, TENSOR_FILE_MAX, &buf, &len, err) != 0)
        return -1;
    int rc = qh_parse_tensor(buf, len, path, out, err);
    free(buf);
    return rc;
}

int qh_read_model_file(const char *path, qh_model *out, qh_error *err)
{
    uint8_t *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    if (qh_read_file(path, MODEL_FILE_MAX, &buf, &len, err) != 0)
        return -1;
    int rc = qh_parse_model(buf, len, path, out, err);
    free(buf);
    return rc;
}

int qh_write_tensor_file(const char *path, const qmm_tensor *t, const char *name, qh_error *err)
{
    uint8_t *buf;
    size_t len;
    if (qh_encode_tensor(t, name, &buf, &len, err) != 0)
        return -1;
    int rc = qh_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}

int qh_write_model_file(const char *path, const qh_model *m, qh_error *err)
{
    uint8_t *buf;
    size_t len;
    if (qh_encode_model(m, &buf, &len, err) != 0)
        return -1;
    int rc = qh_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}
