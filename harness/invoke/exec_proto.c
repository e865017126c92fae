/* harness/invoke/exec_proto.c — the external-process protocol's messages (harness/invoke/exec_proto.h).
 *
 * Field numbers are docs/exec-protocol.md's. Tensors travel as ONNX TensorProtos, encoded and
 * parsed by harness/io/onnx_write.c and onnx_read.c, so a backend in any language reads them
 * with its ONNX library; the envelope is a small protobuf message of its own.
 */
#include "harness/invoke/exec_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/io/onnx_io.h"
#include "ops/qmm_ops.h"

enum {
    RQ_KIND = 1, RQ_VERSION = 2, RQ_OPTIONS = 3, RQ_DOMAIN = 4, RQ_OP_TYPE = 5, RQ_OPSET = 6,
    RQ_ATTRIBUTE = 7, RQ_INPUT = 8, RQ_OUTPUT = 9, RQ_NODE_INPUT = 10, RQ_ID = 11,
};
enum {
    RP_KIND = 1, RP_VERSION = 2, RP_NAME = 3, RP_DESCRIPTION = 4, RP_STATUS = 5, RP_MESSAGE = 6,
    RP_OUTPUT = 7, RP_ID = 8,
};
/* onnx.AttributeProto and onnx.TensorProto fields written here */
enum { AP_NAME = 1, AP_I = 3, AP_TYPE = 20, AP_TYPE_INT = 2 };
enum { TP_DIMS = 1, TP_DATA_TYPE = 2, TP_NAME = 8 };

const char *qh_exec_kind_name(int64_t kind)
{
    switch (kind) {
    case QH_EXEC_HELLO: return "hello";
    case QH_EXEC_QUERY: return "query";
    case QH_EXEC_CALL: return "call";
    case QH_EXEC_CLOSE: return "close";
    }
    return "?";
}

void qh_exec_put_hello(qh_pb_buf *b, const char *options)
{
    qh_pb_put_varint_field(b, RQ_KIND, QH_EXEC_HELLO);
    qh_pb_put_varint_field(b, RQ_VERSION, QH_EXEC_PROTOCOL_VERSION);
    if (options && options[0])
        qh_pb_put_string_field(b, RQ_OPTIONS, options);
}

void qh_exec_put_close(qh_pb_buf *b)
{
    qh_pb_put_varint_field(b, RQ_KIND, QH_EXEC_CLOSE);
}

void qh_exec_put_id(qh_pb_buf *b, uint64_t id)
{
    qh_pb_put_varint_field(b, RQ_ID, id);
}

/* A TensorProto with the name, type and shape and no data: a query's inputs, and y. */
static void put_tensor_meta(qh_pb_buf *b, uint32_t num, const qmm_tensor *t, const char *name)
{
    qh_pb_buf sub;
    qh_pb_buf_init(&sub);
    for (int32_t i = 0; i < t->rank && i < QMM_MAX_RANK; i++)
        qh_pb_put_varint_field(&sub, TP_DIMS, (uint64_t)t->dims[i]);
    qh_pb_put_varint_field(&sub, TP_DATA_TYPE, (uint64_t)(uint32_t)t->dtype);
    qh_pb_put_string_field(&sub, TP_NAME, name);
    qh_pb_put_message_field(b, num, &sub);
    qh_pb_buf_free(&sub);
}

int qh_exec_put_call(qh_pb_buf *b, int kind, const qmm_call *c, char *why, size_t n)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    if (!d) {
        snprintf(why, n, "the call has no operator");
        return -1;
    }
    qh_pb_put_varint_field(b, RQ_KIND, (uint64_t)kind);
    qh_pb_put_string_field(b, RQ_DOMAIN, d->domain);
    qh_pb_put_string_field(b, RQ_OP_TYPE, d->op_type);
    qh_pb_put_varint_field(b, RQ_OPSET, (uint64_t)(int64_t)qmm_call_opset(c));
    for (int32_t i = 0; i < d->n_attrs; i++) {
        qh_pb_buf a;
        qh_pb_buf_init(&a);
        qh_pb_put_string_field(&a, AP_NAME, d->attrs[i].name);
        qh_pb_put_varint_field(&a, AP_I, (uint64_t)(int64_t)qmm_call_attr_value(c, i));
        qh_pb_put_varint_field(&a, AP_TYPE, AP_TYPE_INT);
        qh_pb_put_message_field(b, RQ_ATTRIBUTE, &a);
        qh_pb_buf_free(&a);
    }
    for (int32_t i = 0; i < d->n_inputs; i++) {
        const qmm_tensor *t = qmm_call_input_c(c, i);
        int present = qmm_tensor_present(t);
        qh_pb_put_string_field(b, RQ_NODE_INPUT, present ? d->inputs[i].name : "");
        if (!present)
            continue;
        if (kind != QH_EXEC_CALL) {
            put_tensor_meta(b, RQ_INPUT, t, d->inputs[i].name);
            continue;
        }
        uint8_t *bytes;
        size_t len;
        qh_error err;
        if (qh_encode_tensor(t, d->inputs[i].name, &bytes, &len, &err) != 0) {
            snprintf(why, n, "%s", err.msg);
            return -1;
        }
        qh_pb_put_bytes_field(b, RQ_INPUT, bytes, len);
        free(bytes);
    }
    put_tensor_meta(b, RQ_OUTPUT, qmm_call_output_c(c), d->output_name);
    if (b->failed) {
        snprintf(why, n, "out of memory encoding the request");
        return -1;
    }
    return 0;
}

/* The wire type each reply field must have. */
static uint32_t reply_wire(uint32_t num)
{
    return num == RP_KIND || num == RP_VERSION || num == RP_STATUS || num == RP_ID
               ? QH_PB_VARINT : QH_PB_LEN;
}

static const char *reply_field_name(uint32_t num)
{
    static const char *const names[] = {"", "kind", "version", "name", "description",
                                        "status", "message", "output", "id"};
    return num < sizeof names / sizeof names[0] ? names[num] : "?";
}

static void copy_string(char *dst, size_t size, const qh_pb_field *f)
{
    size_t k = f->len < size - 1 ? f->len : size - 1;
    memcpy(dst, f->data, k);
    dst[k] = '\0';
}

int qh_exec_read_reply(const uint8_t *p, size_t n, qh_exec_reply *r, char *why, size_t wn)
{
    memset(r, 0, sizeof *r);
    qh_pb_reader rd;
    qh_pb_reader_init(&rd, p, n);
    qh_pb_field f;
    char inner[256];
    int got;
    while ((got = qh_pb_next(&rd, &f, inner, sizeof inner)) == 1) {
        if (f.num > RP_ID)
            continue; /* a later protocol's field */
        if (f.wire != reply_wire(f.num)) {
            snprintf(why, wn, "Reply.%s: wire type %s, expected %s", reply_field_name(f.num),
                     qh_pb_wire_name(f.wire), qh_pb_wire_name(reply_wire(f.num)));
            return -1;
        }
        switch (f.num) {
        case RP_KIND: r->kind = (int64_t)f.u; break;
        case RP_VERSION: r->version = (int64_t)f.u; break;
        case RP_STATUS: r->status = (int64_t)f.u; break;
        case RP_ID:
            r->id = f.u;
            r->has_id = 1;
            break;
        case RP_NAME: copy_string(r->name, sizeof r->name, &f); break;
        case RP_DESCRIPTION: copy_string(r->description, sizeof r->description, &f); break;
        case RP_MESSAGE: copy_string(r->message, sizeof r->message, &f); break;
        case RP_OUTPUT:
            r->output = f.data;
            r->output_len = f.len;
            break;
        }
    }
    if (got < 0) {
        if (f.num)
            snprintf(why, wn, "Reply.%s: %s", reply_field_name(f.num), inner);
        else
            snprintf(why, wn, "Reply: %s", inner);
        return -1;
    }
    if (r->status < QMM_OK || r->status > QMM_INTERNAL) {
        snprintf(why, wn, "Reply.status: %lld is not a status (0 OK .. 4 INTERNAL)",
                 (long long)r->status);
        return -1;
    }
    return 0;
}
