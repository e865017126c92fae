/* harness/io/onnx_read.c — reading ONNX node-test files without libprotobuf: TensorProto and
 * ModelProto (with the messages a one-node model holds), each message one field table walked by
 * pb_walk.c.
 *
 * The reader is written for hostile input (it is a fuzz target): every length is checked
 * against what remains before it is used (pb.c), tensor payloads are sized and validated before
 * anything is allocated, and every fixed-size array in qh_model is guarded. Errors name the
 * source, the message and the field: "<what>: <Message>.<field>: <problem>".
 */
#include "harness/io/onnx_io.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/io/onnx_proto.h"
#include "harness/io/pb_walk.h"

const char *qh_onnx_dtype_name(int64_t dt)
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
    case QMM_DTYPE_UINT4: return "UINT4";
    case QMM_DTYPE_INT4: return "INT4";
    case QMM_DTYPE_FLOAT4E2M1: return "FLOAT4E2M1";
    case QMM_DTYPE_FLOAT8E8M0: return "FLOAT8E8M0";
    case QMM_DTYPE_UINT2: return "UINT2";
    case QMM_DTYPE_INT2: return "INT2";
    default: return "unknown";
    }
}

/* A repeated field read into a fixed array holding `n` of at most `max`: "more than MAX WHAT"
 * on the field when it is full. */
static int room_for(const qh_pb_message *m, int32_t n, int32_t max, const char *what)
{
    if (n >= max)
        return qh_pb_fail(m, m->row->name, "more than %d %s", (int)max, what);
    return 0;
}

/* ---- TensorProto --------------------------------------------------------------------- */

/* What a TensorProto's fields said, before any of it is checked against the rest. */
typedef struct tensor_seen {
    qh_tensor *out; /* its name is read straight into it */
    int32_t rank;
    int64_t dims[QMM_MAX_RANK];
    qh_pb_value dtype;
    qh_pb_bytes raw;
    const qh_pb_row *typed; /* the typed field that carries data, NULL for none */
    uint64_t typed_count;
} tensor_seen;

/* One dims field, a single varint or a packed run, appended to s->dims. */
static int read_dims(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    tensor_seen *s = dst;
    int packed = f->wire == QH_PB_LEN;
    const uint8_t *p = f->data, *end = packed ? f->data + f->len : f->data;
    for (;;) {
        uint64_t v = f->u;
        if (packed) {
            char why[128];
            if (p >= end)
                break;
            if (qh_pb_read_varint(&p, end, &v, why, sizeof why) != 0)
                return qh_pb_fail(m, "dims", "packed: %s", why);
        }
        if (s->rank >= QMM_MAX_RANK)
            return qh_pb_fail(m, "dims", "rank exceeds %d", QMM_MAX_RANK);
        if ((int64_t)v < 0)
            return qh_pb_fail(m, "dims", "dimension %d is negative (%lld)", (int)s->rank,
                              (long long)(int64_t)v);
        s->dims[s->rank++] = (int64_t)v;
        if (!packed)
            break;
    }
    return 0;
}

static void store_le(uint8_t *dst, uint64_t v, size_t size)
{
    for (size_t i = 0; i < size; i++)
        dst[i] = (uint8_t)(v >> (8 * i));
}

/* Converts one element of the typed field m->row into its little-endian bytes, checking the
 * value fits the data type. */
static int put_element(const qh_pb_message *m, int32_t dtype, uint64_t raw, uint64_t index,
                       uint8_t *dst)
{
    size_t esize = qmm_dtype_bits(dtype) < 8 ? 1 : qmm_dtype_size(dtype);
    int64_t lo = 0, hi = 0;
    switch (m->row->num) {
    case QH_TF_INT32: {
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
            return qh_pb_fail(m, m->row->name, "element %llu: value %ld out of range for %s",
                              (unsigned long long)index, (long)v, qh_onnx_dtype_name(dtype));
        store_le(dst, (uint64_t)(uint32_t)v, esize);
        return 0;
    }
    case QH_TF_UINT64:
        if (dtype == QMM_DTYPE_UINT32 && raw > UINT32_MAX)
            return qh_pb_fail(m, m->row->name, "element %llu: value %llu out of range for UINT32",
                              (unsigned long long)index, (unsigned long long)raw);
        store_le(dst, raw, esize);
        return 0;
    default: /* float bits, double bits, int64: stored as they came */
        store_le(dst, raw, esize);
        return 0;
    }
}

/* The elements of one occurrence of the typed field m->row (a single element, or a packed
 * run), counted on from *k; with `data`, also decoded into data[*k...] (data_type `dtype`). */
static int typed_elements(const qh_pb_message *m, const qh_pb_field *f, int32_t dtype,
                          uint8_t *data, uint64_t *k)
{
    /* a sub-byte type's int32_data holds its packed bytes, one a value (onnx.proto) */
    size_t esize = !data ? 0 : qmm_dtype_bits(dtype) < 8 ? 1 : qmm_dtype_size(dtype);
    uint32_t w = m->row->wire & 7u;
    if (f->wire == w) {
        if (data && put_element(m, dtype, f->u, *k, data + *k * esize) != 0)
            return -1;
        (*k)++;
        return 0;
    }
    size_t width = w == QH_PB_I32 ? 4 : w == QH_PB_I64 ? 8 : 0;
    if (width && f->len % width)
        return qh_pb_fail(m, m->row->name, "packed length %zu is not a multiple of %zu", f->len,
                          width);
    const uint8_t *p = f->data, *end = f->data + f->len;
    while (p < end) {
        uint64_t v;
        if (width) {
            v = width == 4 ? qh_pb_load32(p) : qh_pb_load64(p);
            p += width;
        } else {
            char why[128];
            if (qh_pb_read_varint(&p, end, &v, why, sizeof why) != 0)
                return qh_pb_fail(m, m->row->name, "packed element %llu: %s",
                                  (unsigned long long)*k, why);
        }
        if (data && put_element(m, dtype, v, *k, data + *k * esize) != 0)
            return -1;
        (*k)++;
    }
    return 0;
}

/* A typed data field (float_data, int32_data, ...; the walker lets one of them only appear):
 * counted now, decoded once the data type and the dims are known and checked
 * (load_tensor_data). */
static int read_typed(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    tensor_seen *s = dst;
    s->typed = m->row;
    return typed_elements(m, f, 0, NULL, &s->typed_count);
}

static int read_tensor_name(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    tensor_seen *s = dst;
    return qh_pb_string(m, f, s->out->name, sizeof s->out->name);
}

static int refuse_segment(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_fail(m, m->row->name, "segmented tensors are not supported");
}

static int refuse_strings(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_fail(m, m->row->name, "string tensors are not supported");
}

static int refuse_external(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_fail(m, m->row->name, "external data is not supported");
}

static int read_location(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    if (f->u != 0)
        return qh_pb_fail(m, m->row->name, "external data is not supported");
    return 0;
}

/* A typed data field: its elements one by one (of wire type `wire`) or packed, and only one of
 * these fields in a message. */
#define TYPED_DATA(wire) ((wire) | QH_PB_OR_PACKED | QH_PB_ONE_DATA)

static const qh_pb_row tensor_rows[] = {
    {QH_TF_DIMS, "dims", QH_PB_VARINT | QH_PB_OR_PACKED, read_dims, 0, 0},
    {QH_TF_DATA_TYPE, "data_type", QH_PB_VARINT, qh_pb_read_int32, offsetof(tensor_seen, dtype), 0},
    {QH_TF_SEGMENT, "segment", QH_PB_ANY_WIRE, refuse_segment, 0, 0},
    {QH_TF_FLOAT, "float_data", TYPED_DATA(QH_PB_I32), read_typed, 0, 0},
    {QH_TF_INT32, "int32_data", TYPED_DATA(QH_PB_VARINT), read_typed, 0, 0},
    {QH_TF_STRING, "string_data", QH_PB_ANY_WIRE, refuse_strings, 0, 0},
    {QH_TF_INT64, "int64_data", TYPED_DATA(QH_PB_VARINT), read_typed, 0, 0},
    {QH_TF_NAME, "name", QH_PB_LEN, read_tensor_name, 0, 0},
    {QH_TF_RAW, "raw_data", QH_PB_LEN, qh_pb_read_bytes, offsetof(tensor_seen, raw), 0},
    {QH_TF_DOUBLE, "double_data", TYPED_DATA(QH_PB_I64), read_typed, 0, 0},
    {QH_TF_UINT64, "uint64_data", TYPED_DATA(QH_PB_VARINT), read_typed, 0, 0},
    {QH_TF_DOC, "doc_string", QH_PB_LEN, NULL, 0, 0},
    {QH_TF_EXTERNAL, "external_data", QH_PB_ANY_WIRE, refuse_external, 0, 0},
    {QH_TF_LOCATION, "data_location", QH_PB_VARINT, read_location, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table tensor_table = {"TensorProto", tensor_rows};

/* The typed field ONNX stores a dtype in (0 for none we accept). */
static uint32_t typed_field_for(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_FLOAT: return QH_TF_FLOAT;
    case QMM_DTYPE_INT64: return QH_TF_INT64;
    case QMM_DTYPE_DOUBLE: return QH_TF_DOUBLE;
    case QMM_DTYPE_UINT32:
    case QMM_DTYPE_UINT64: return QH_TF_UINT64;
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
    case QMM_DTYPE_FLOAT8E5M2FNUZ:
    case QMM_DTYPE_FLOAT8E8M0:
    case QMM_DTYPE_UINT4:
    case QMM_DTYPE_INT4:
    case QMM_DTYPE_FLOAT4E2M1:
    case QMM_DTYPE_UINT2:
    case QMM_DTYPE_INT2: return QH_TF_INT32;
    default: return 0;
    }
}

/* Checks the data type, the element count and the data fields against each other; sets
 * *bytes_out to the tensor's size. */
static int check_tensor_sizes(const qh_pb_message *m, const tensor_seen *s, size_t *bytes_out)
{
    if (!s->dtype.seen)
        return qh_pb_fail(m, "data_type", "missing");
    int64_t dtype = s->dtype.v;
    unsigned bits = (dtype >= 0 && dtype <= INT32_MAX) ? qmm_dtype_bits((int32_t)dtype) : 0;
    if (bits == 0)
        return qh_pb_fail(m, "data_type", "unsupported data type %lld (%s)", (long long)dtype,
                          qh_onnx_dtype_name(dtype));

    int64_t numel = 1;
    for (int32_t i = 0; i < s->rank; i++) {
        if (s->dims[i] != 0 && numel > INT64_MAX / s->dims[i])
            return qh_pb_fail(m, "dims", "element count overflows int64");
        numel *= s->dims[i];
    }
    size_t bytes = qmm_dtype_bytes((int32_t)dtype, numel);
    if (bytes > (size_t)QH_MAX_TENSOR_BYTES)
        return qh_pb_fail(m, "dims", "%lld elements of %s exceed the %lld-byte limit",
                          (long long)numel, qh_onnx_dtype_name(dtype),
                          (long long)QH_MAX_TENSOR_BYTES);

    if (s->typed) {
        if (typed_field_for((int32_t)dtype) != s->typed->num)
            return qh_pb_fail(m, s->typed->name, "not valid for data_type %s",
                              qh_onnx_dtype_name(dtype));
        if (bits < 8 && s->typed_count != (uint64_t)bytes)
            return qh_pb_fail(m, s->typed->name,
                              "%llu values, expected %zu (%lld elements of %s, %u to a value)",
                              (unsigned long long)s->typed_count, bytes, (long long)numel,
                              qh_onnx_dtype_name(dtype), 8 / bits);
        if (bits >= 8 && s->typed_count != (uint64_t)numel)
            return qh_pb_fail(m, s->typed->name, "%llu elements, dims say %lld",
                              (unsigned long long)s->typed_count, (long long)numel);
    }
    if (s->raw.seen && s->raw.len != bytes)
        return qh_pb_fail(m, "raw_data", "length %zu, expected %zu (%lld elements of %s)",
                          s->raw.len, bytes, (long long)numel, qh_onnx_dtype_name(dtype));
    if (!s->raw.seen && !s->typed && numel != 0)
        return qh_pb_fail(m, "raw_data", "missing: %lld elements but no data", (long long)numel);
    *bytes_out = bytes;
    return 0;
}

/* The typed field's elements, every occurrence of it in order, into data. The message has been
 * read once already, so its framing is sound. */
static int decode_typed(const qh_pb_message *m, const uint8_t *buf, size_t len,
                        const tensor_seen *s, uint8_t *data)
{
    const qh_pb_message typed = {m->src, m->table, s->typed};
    qh_pb_reader r;
    qh_pb_reader_init(&r, buf, len);
    qh_pb_field f;
    char why[256];
    uint64_t k = 0;
    int rc;
    while ((rc = qh_pb_next(&r, &f, why, sizeof why)) > 0)
        if (f.num == s->typed->num &&
            typed_elements(&typed, &f, (int32_t)s->dtype.v, data, &k) != 0)
            return -1;
    return rc < 0 ? qh_pb_fail(m, NULL, "%s", why) : 0;
}

/* The tensor's bytes, from the typed field (which raw_data, if also given, must match) or
 * from raw_data; *data is allocated here and only on success. */
static int load_tensor_data(const qh_pb_message *m, const uint8_t *buf, size_t len,
                            const tensor_seen *s, size_t bytes, uint8_t **data_out)
{
    uint8_t *data = malloc(bytes ? bytes : 1);
    if (!data)
        return qh_pb_fail(m, "raw_data", "out of memory allocating %zu bytes", bytes);
    if (s->typed) {
        if (decode_typed(m, buf, len, s, data) != 0) {
            free(data);
            return -1;
        }
        if (s->raw.seen && memcmp(s->raw.data, data, bytes) != 0) {
            free(data);
            return qh_pb_fail(m, "raw_data", "conflicts with %s", s->typed->name);
        }
    } else if (bytes) {
        memcpy(data, s->raw.data, bytes);
    }
    /* a packed type's last byte: the bits past the last element are padding, zero as onnx
     * writes them (the bytes are compared and hashed whole) */
    unsigned bits = qmm_dtype_bits((int32_t)s->dtype.v);
    int64_t numel = 1;
    for (int32_t i = 0; i < s->rank; i++)
        numel *= s->dims[i]; /* checked by check_tensor_sizes */
    int64_t pad = bits < 8 && bytes ? (int64_t)(bytes * 8 / bits) - numel : 0;
    if (pad > 0 && data[bytes - 1] >> (8 - pad * bits) != 0) {
        unsigned last = data[bytes - 1];
        free(data);
        return qh_pb_fail(m, s->typed ? s->typed->name : "raw_data",
                          "the last byte 0x%02x sets padding bits past element %lld of %s "
                          "(they must be zero)",
                          last, (long long)(numel - 1), qh_onnx_dtype_name(s->dtype.v));
    }
    *data_out = data;
    return 0;
}

static int parse_tensor(const uint8_t *buf, size_t len, const char *what, uint64_t max_bytes,
                        qh_tensor *out, qh_error *err)
{
    qh_pb_source src = {what, err};
    const qh_pb_message m = {&src, &tensor_table, NULL};
    memset(out, 0, sizeof *out);
    tensor_seen s;
    memset(&s, 0, sizeof s);
    s.out = out;
    if (qh_pb_walk(&src, &tensor_table, buf, len, &s) != 0)
        return -1;
    size_t bytes = 0;
    if (check_tensor_sizes(&m, &s, &bytes) != 0)
        return -1;
    /* Sizes are now validated against the bytes actually present, so allocating is safe. */
    if (bytes > max_bytes) /* max_bytes is what is left once the file's len are counted */
        return qh_pb_fail(&m, "dims", "%zu bytes of data, which with the file's %zu pass the "
                          "%llu left of " QH_CASE_MEMORY_SAID, bytes, len,
                          (unsigned long long)(max_bytes + len));
    uint8_t *data = NULL;
    if (load_tensor_data(&m, buf, len, &s, bytes, &data) != 0)
        return -1;
    out->t.dtype = (int32_t)s.dtype.v;
    out->t.rank = s.rank;
    memcpy(out->t.dims, s.dims, sizeof s.dims);
    out->t.data = data;
    return 0;
}

int qh_parse_tensor(const uint8_t *buf, size_t len, const char *what, qh_tensor *out,
                    qh_error *err)
{
    if (parse_tensor(buf, len, what, UINT64_MAX, out, err) != 0) {
        /* parse_tensor allocates only as its last step, so nothing is leaked here. */
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

/* ---- AttributeProto ------------------------------------------------------------------ */

/* What an AttributeProto's fields said (the last of each); the values are kept once the type
 * is known. */
typedef struct attr_seen {
    qh_attr a; /* its name, as read */
    qh_pb_value type, f_bits, i;
    qh_pb_bytes s;
    uint32_t other; /* a value field we do not keep */
} attr_seen;

static int note_other_value(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    attr_seen *s = dst;
    if (!s->other)
        s->other = m->row->num;
    return 0;
}

/* Fields 14, 15, 22 and 23 (tp, type_protos, sparse_tensor, sparse_tensors) are named by
 * number in messages. */
static const qh_pb_row attr_rows[] = {
    {1, "name", QH_PB_LEN, qh_pb_read_string, offsetof(attr_seen, a.name), QH_NAME_MAX},
    {2, "f", QH_PB_I32, qh_pb_read_int64, offsetof(attr_seen, f_bits), 0},
    {3, "i", QH_PB_VARINT, qh_pb_read_int64, offsetof(attr_seen, i), 0},
    {4, "s", QH_PB_LEN, qh_pb_read_bytes, offsetof(attr_seen, s), 0},
    {5, "t", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {6, "g", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {7, "floats", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {8, "ints", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {9, "strings", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {10, "tensors", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {11, "graphs", QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {13, "doc_string", QH_PB_ANY_WIRE, NULL, 0, 0},
    {14, NULL, QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {15, NULL, QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {20, "type", QH_PB_VARINT, qh_pb_read_int32, offsetof(attr_seen, type), 0},
    {21, "ref_attr_name", QH_PB_ANY_WIRE, NULL, 0, 0},
    {22, NULL, QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {23, NULL, QH_PB_ANY_WIRE, note_other_value, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table attr_table = {"AttributeProto", attr_rows};

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

/* An attribute: one of the types a node test of ours uses (FLOAT, INT, STRING), holding only
 * the value its type selects, so encoding loses nothing we hold. */
static int parse_attr(const qh_pb_source *src, const uint8_t *buf, size_t len, qh_attr *a)
{
    const qh_pb_message m = {src, &attr_table, NULL};
    attr_seen s;
    memset(&s, 0, sizeof s);
    int rc = qh_pb_walk(src, &attr_table, buf, len, &s);
    *a = s.a;
    if (rc != 0)
        return -1;
    int64_t type = s.type.v;
    if (!s.type.seen) {
        /* Pre-IR-3 models leave the type implicit in which value field is set. */
        char num[16];
        if (s.other)
            return qh_pb_fail(&m, qh_pb_field_name(&attr_table, s.other, num, sizeof num),
                              "attribute '%s': only FLOAT, INT and STRING attributes are "
                              "supported", a->name);
        type = s.f_bits.seen ? QH_ATTR_FLOAT
               : s.i.seen    ? QH_ATTR_INT
               : s.s.seen    ? QH_ATTR_STRING
                             : 0;
    }
    if (type != QH_ATTR_FLOAT && type != QH_ATTR_INT && type != QH_ATTR_STRING)
        return qh_pb_fail(&m, "type",
                          "attribute '%s' has type %s (%lld); only FLOAT, INT and STRING are "
                          "supported", a->name, attr_type_name(type), (long long)type);
    if (a->name[0] == '\0')
        return qh_pb_fail(&m, "name", "attribute without a name");
    if (type == QH_ATTR_FLOAT) {
        uint32_t bits = (uint32_t)s.f_bits.v;
        memcpy(&a->f, &bits, sizeof bits);
    }
    if (type == QH_ATTR_INT)
        a->i = s.i.v;
    if (s.s.seen && type == QH_ATTR_STRING) {
        if (s.s.len > sizeof a->s - 1)
            return qh_pb_fail(&m, "s", "attribute '%s': string of %zu bytes exceeds the limit "
                              "of %zu", a->name, s.s.len, sizeof a->s - 1);
        if (s.s.len && memchr(s.s.data, 0, s.s.len))
            return qh_pb_fail(&m, "s", "attribute '%s': string contains a NUL byte", a->name);
        memcpy(a->s, s.s.data, s.s.len);
        a->s[s.s.len] = '\0';
    }
    a->type = (int32_t)type;
    return 0;
}

/* ---- NodeProto ----------------------------------------------------------------------- */

/* A node input or output name (or "", an omitted optional input) into the next slot. */
static int add_name(const qh_pb_message *m, const qh_pb_field *f, char (*names)[QH_NAME_MAX],
                    int32_t *n, const char *what)
{
    if (room_for(m, *n, QH_MAX_IO, what) != 0 ||
        qh_pb_string(m, f, names[*n], QH_NAME_MAX) != 0)
        return -1;
    (*n)++;
    return 0;
}

static int read_node_input(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = dst;
    return add_name(m, f, out->inputs, &out->n_inputs, "inputs");
}

static int read_node_output(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = dst;
    return add_name(m, f, out->outputs, &out->n_outputs, "outputs");
}

static int read_node_attribute(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = dst;
    if (room_for(m, out->n_attrs, QH_MAX_ATTRS, "attributes") != 0)
        return -1;
    qh_attr *a = &out->attrs[out->n_attrs];
    if (parse_attr(m->src, f->data, f->len, a) != 0)
        return -1;
    for (int32_t i = 0; i < out->n_attrs; i++)
        if (strcmp(out->attrs[i].name, a->name) == 0)
            return qh_pb_fail(m, m->row->name, "attribute '%s' given twice", a->name);
    out->n_attrs++;
    return 0;
}

static const qh_pb_row node_rows[] = {
    {1, "input", QH_PB_LEN, read_node_input, 0, 0},
    {2, "output", QH_PB_LEN, read_node_output, 0, 0},
    {3, "name", QH_PB_LEN, qh_pb_read_string, offsetof(qh_model, node_name), QH_NAME_MAX},
    {4, "op_type", QH_PB_LEN, qh_pb_read_string, offsetof(qh_model, op_type), QH_NAME_MAX},
    {5, "attribute", QH_PB_LEN, read_node_attribute, 0, 0},
    {6, "doc_string", QH_PB_LEN, NULL, 0, 0},
    {7, "domain", QH_PB_LEN, qh_pb_read_string, offsetof(qh_model, domain), QH_NAME_MAX},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table node_table = {"NodeProto", node_rows};

/* ---- ValueInfoProto and its types ---------------------------------------------------- */

static int read_dim_value(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    if ((int64_t)f->u < 0)
        return qh_pb_fail(m, m->row->name, "negative (%lld)", (long long)(int64_t)f->u);
    *(int64_t *)dst = (int64_t)f->u;
    return 0;
}

/* A symbolic dimension: kept only as "unknown". */
static int read_dim_param(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    *(int64_t *)dst = -1;
    return 0;
}

static const qh_pb_row dim_rows[] = {
    {1, "dim_value", QH_PB_VARINT, read_dim_value, 0, 0},
    {2, "dim_param", QH_PB_LEN, read_dim_param, 0, 0},
    {3, "denotation", QH_PB_LEN, NULL, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table dim_table = {"TensorShapeProto.Dimension", dim_rows};

static int read_shape_dim(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_value_info *vi = dst;
    if (vi->rank >= QMM_MAX_RANK)
        return qh_pb_fail(m, m->row->name, "rank exceeds %d", QMM_MAX_RANK);
    vi->dims[vi->rank] = -1; /* neither value nor param: an unknown dimension */
    if (qh_pb_walk(m->src, &dim_table, f->data, f->len, &vi->dims[vi->rank]) != 0)
        return -1;
    vi->rank++;
    return 0;
}

static const qh_pb_row shape_rows[] = {
    {1, "dim", QH_PB_LEN, read_shape_dim, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table shape_table = {"TensorShapeProto", shape_rows};

static int read_elem_type(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_value_info *vi = dst;
    vi->elem_type = (int32_t)(uint32_t)f->u;
    if (vi->elem_type < 0)
        return qh_pb_fail(m, m->row->name, "negative (%ld)", (long)vi->elem_type);
    return 0;
}

static int read_shape(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_value_info *vi = dst;
    /* A repeated occurrence would merge in protobuf; restarting is simpler and a writer never
     * emits two. */
    memset(vi->dims, 0, sizeof vi->dims);
    vi->rank = 0;
    return qh_pb_walk(m->src, &shape_table, f->data, f->len, vi);
}

static const qh_pb_row type_tensor_rows[] = {
    {1, "elem_type", QH_PB_VARINT, read_elem_type, 0, 0},
    {2, "shape", QH_PB_LEN, read_shape, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table type_tensor_table = {"TypeProto.Tensor", type_tensor_rows};

static int read_tensor_type(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_walk(m->src, &type_tensor_table, f->data, f->len, dst);
}

static int refuse_type(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    const qh_value_info *vi = dst;
    return qh_pb_fail(m, m->row->name, "value '%s': only tensor types are supported", vi->name);
}

static const qh_pb_row type_rows[] = {
    {1, "tensor_type", QH_PB_LEN, read_tensor_type, 0, 0},
    {4, "sequence_type", QH_PB_ANY_WIRE, refuse_type, 0, 0},
    {5, "map_type", QH_PB_ANY_WIRE, refuse_type, 0, 0},
    {6, "denotation", QH_PB_ANY_WIRE, NULL, 0, 0},
    {8, "sparse_tensor_type", QH_PB_ANY_WIRE, refuse_type, 0, 0},
    {9, "optional_type", QH_PB_ANY_WIRE, refuse_type, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table type_table = {"TypeProto", type_rows};

/* What a ValueInfoProto's fields said: `type` may precede `name`, so it is read last, when
 * errors inside can name the value. */
typedef struct value_info_seen {
    qh_value_info vi;
    qh_pb_bytes type; /* singular message fields merge; for what we keep, the last one wins */
} value_info_seen;

static const qh_pb_row value_info_rows[] = {
    {1, "name", QH_PB_LEN, qh_pb_read_string, offsetof(value_info_seen, vi.name), QH_NAME_MAX},
    {2, "type", QH_PB_LEN, qh_pb_read_bytes, offsetof(value_info_seen, type), 0},
    {3, "doc_string", QH_PB_ANY_WIRE, NULL, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table value_info_table = {"ValueInfoProto", value_info_rows};

static int parse_value_info(const qh_pb_source *src, const uint8_t *buf, size_t len,
                            qh_value_info *vi)
{
    value_info_seen s;
    memset(&s, 0, sizeof s);
    s.vi.rank = -1;
    int rc = qh_pb_walk(src, &value_info_table, buf, len, &s);
    if (rc == 0 && s.type.seen)
        rc = qh_pb_walk(src, &type_table, s.type.data, s.type.len, &s.vi);
    *vi = s.vi;
    return rc;
}

/* ---- GraphProto ---------------------------------------------------------------------- */

typedef struct graph_seen {
    qh_model *out;
    int32_t n_nodes;
} graph_seen;

static int read_graph_node(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    graph_seen *g = dst;
    /* Extra nodes are only counted: qh_parse_model reports how many. */
    if (g->n_nodes == 0 && qh_pb_walk(m->src, &node_table, f->data, f->len, g->out) != 0)
        return -1;
    if (g->n_nodes < INT32_MAX)
        g->n_nodes++;
    return 0;
}

static int read_graph_name(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    graph_seen *g = dst;
    return qh_pb_string(m, f, g->out->graph_name, sizeof g->out->graph_name);
}

static int refuse_initializer(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_fail(m, m->row->name, "initializers are not supported in node tests");
}

/* A graph input or output into the next slot of `values`. */
static int add_value_info(const qh_pb_message *m, const qh_pb_field *f, qh_value_info *values,
                          int32_t *n, const char *what)
{
    if (room_for(m, *n, QH_MAX_IO, what) != 0 ||
        parse_value_info(m->src, f->data, f->len, &values[*n]) != 0)
        return -1;
    (*n)++;
    return 0;
}

static int read_graph_input(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = ((graph_seen *)dst)->out;
    return add_value_info(m, f, out->graph_inputs, &out->n_graph_inputs, "inputs");
}

static int read_graph_output(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = ((graph_seen *)dst)->out;
    return add_value_info(m, f, out->graph_outputs, &out->n_graph_outputs, "outputs");
}

static const qh_pb_row graph_rows[] = {
    {1, "node", QH_PB_LEN, read_graph_node, 0, 0},
    {2, "name", QH_PB_LEN, read_graph_name, 0, 0},
    {5, "initializer", QH_PB_ANY_WIRE, refuse_initializer, 0, 0},
    {10, "doc_string", QH_PB_ANY_WIRE, NULL, 0, 0},
    {11, "input", QH_PB_LEN, read_graph_input, 0, 0},
    {12, "output", QH_PB_LEN, read_graph_output, 0, 0},
    {13, "value_info", QH_PB_ANY_WIRE, NULL, 0, 0},
    {15, "sparse_initializer", QH_PB_ANY_WIRE, refuse_initializer, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table graph_table = {"GraphProto", graph_rows};

/* ---- OperatorSetIdProto and ModelProto ----------------------------------------------- */

static int read_opset_version(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    /* Operators take the opset as an int: a larger one would wrap to a small, valid-looking
     * version and run the case under the wrong semantics. */
    if (f->u > (uint64_t)INT32_MAX)
        return qh_pb_fail(m, m->row->name, "%lld is outside 0..%ld", (long long)(int64_t)f->u,
                          (long)INT32_MAX);
    ((qh_opset *)dst)->version = (int64_t)f->u;
    return 0;
}

static const qh_pb_row opset_rows[] = {
    {1, "domain", QH_PB_LEN, qh_pb_read_string, offsetof(qh_opset, domain), QH_NAME_MAX},
    {2, "version", QH_PB_VARINT, read_opset_version, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table opset_table = {"OperatorSetIdProto", opset_rows};

typedef struct model_seen {
    graph_seen graph; /* its out is the model */
    int have_graph;
    qh_pb_value ir_version;
} model_seen;

static int read_producer(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = ((model_seen *)dst)->graph.out;
    return qh_pb_string(m, f, out->producer_name, sizeof out->producer_name);
}

/* A repeated singular message merges in protobuf; reading into the same state gives the same
 * result for the repeated fields we keep. */
static int read_model_graph(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    model_seen *s = dst;
    s->have_graph = 1;
    return qh_pb_walk(m->src, &graph_table, f->data, f->len, &s->graph);
}

static int read_opset_import(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_model *out = ((model_seen *)dst)->graph.out;
    if (room_for(m, out->n_opsets, QH_MAX_OPSETS, "opset imports") != 0)
        return -1;
    qh_opset *o = &out->opsets[out->n_opsets];
    memset(o, 0, sizeof *o);
    if (qh_pb_walk(m->src, &opset_table, f->data, f->len, o) != 0)
        return -1;
    /* one version a domain: with two, which one the node runs under is anyone's guess (ONNX's
     * checker takes the model; QLinearMatMul 10 and 21 differ) */
    int is_default = o->domain[0] == '\0' || strcmp(o->domain, "ai.onnx") == 0;
    for (int32_t i = 0; i < out->n_opsets; i++) {
        const char *d = out->opsets[i].domain;
        int same = is_default ? d[0] == '\0' || strcmp(d, "ai.onnx") == 0 : strcmp(d, o->domain) == 0;
        if (same)
            return qh_pb_fail(m, m->row->name, "domain %s imported twice (versions %lld and %lld)",
                              is_default ? "ai.onnx" : o->domain,
                              (long long)out->opsets[i].version, (long long)o->version);
    }
    out->n_opsets++;
    return 0;
}

static const qh_pb_row model_rows[] = {
    {1, "ir_version", QH_PB_VARINT, qh_pb_read_int64, offsetof(model_seen, ir_version), 0},
    {2, "producer_name", QH_PB_LEN, read_producer, 0, 0},
    {3, "producer_version", QH_PB_ANY_WIRE, NULL, 0, 0},
    {4, "domain", QH_PB_ANY_WIRE, NULL, 0, 0},
    {5, "model_version", QH_PB_ANY_WIRE, NULL, 0, 0},
    {6, "doc_string", QH_PB_ANY_WIRE, NULL, 0, 0},
    {7, "graph", QH_PB_LEN, read_model_graph, 0, 0},
    {8, "opset_import", QH_PB_LEN, read_opset_import, 0, 0},
    {14, "metadata_props", QH_PB_ANY_WIRE, NULL, 0, 0},
    {0, NULL, 0, NULL, 0, 0},
};
static const qh_pb_table model_table = {"ModelProto", model_rows};

int qh_parse_model(const uint8_t *buf, size_t len, const char *what, qh_model *out,
                   qh_error *err)
{
    qh_pb_source src = {what, err};
    memset(out, 0, sizeof *out);
    model_seen s = {{out, 0}, 0, {0, 0}};
    if (qh_pb_walk(&src, &model_table, buf, len, &s) != 0)
        goto fail;
    if (!s.have_graph) {
        qh_pb_fail_in(&src, "ModelProto", "graph", "missing");
        goto fail;
    }
    if (s.graph.n_nodes != 1) {
        qh_pb_fail_in(&src, "GraphProto", "node", "expected exactly one node, found %ld",
                      (long)s.graph.n_nodes);
        goto fail;
    }
    out->ir_version = s.ir_version.v;
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

/* ---- files ----------------------------------------------------------------------------- */

/* Large enough for the biggest tensor the parser accepts, even in varint-heavy typed form. */
#define TENSOR_FILE_MAX \
    ((uint64_t)QH_MAX_TENSOR_BYTES * 2 + ((uint64_t)1 << 20) > (uint64_t)SIZE_MAX \
         ? (size_t)SIZE_MAX                                                            \
         : (size_t)((uint64_t)QH_MAX_TENSOR_BYTES * 2 + ((uint64_t)1 << 20)))
#define MODEL_FILE_MAX ((size_t)64 << 20)

int qh_read_tensor_file(const char *path, qh_tensor *out, qh_error *err)
{
    uint64_t left = UINT64_MAX;
    return qh_read_tensor_file_within(path, out, &left, err);
}

int qh_read_tensor_file_within(const char *path, qh_tensor *out, uint64_t *left, qh_error *err)
{
    uint8_t *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    struct stat st;
    if (*left != UINT64_MAX && stat(path, &st) == 0 && (uint64_t)st.st_size > *left)
        return qh_fail(err, "%s: %lld bytes, more than the %llu left of " QH_CASE_MEMORY_SAID,
                       path, (long long)st.st_size, (unsigned long long)*left);
    if (qh_read_file(path, TENSOR_FILE_MAX, &buf, &len, err) != 0)
        return -1;
    /* the file's buffer and the data are both held until the parse ends */
    uint64_t room = *left == UINT64_MAX ? UINT64_MAX : *left > len ? *left - len : 0;
    int rc = parse_tensor(buf, len, path, room, out, err);
    free(buf);
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (*left != UINT64_MAX) {
        uint64_t kept = qmm_dtype_bytes(out->t.dtype, qmm_tensor_numel(&out->t));
        *left = kept < *left ? *left - kept : 0;
    }
    return 0;
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
