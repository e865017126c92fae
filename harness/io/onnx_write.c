/* harness/io/onnx_write.c — writing ONNX node-test files without libprotobuf: a TensorProto
 * (dims, data_type, name, raw_data) and a one-node ModelProto, from the structs the reader
 * fills, so that reading what was written gives the same struct back (fuzz/fuzz_onnx_*.c check
 * it).
 */
#include "harness/io/onnx_io.h"

#include <stdlib.h>
#include <string.h>

#include "harness/io/onnx_proto.h"
#include "harness/io/pb.h"

int qh_encode_tensor(const qmm_tensor *t, const char *name, uint8_t **out, size_t *len,
                     qh_error *err)
{
    const char *what = name && name[0] ? name : "<tensor>";
    *out = NULL;
    *len = 0;
    if (qmm_dtype_bits(t->dtype) == 0)
        return qh_fail(err, "%s: TensorProto.data_type: cannot encode data type %ld (%s)",
                       what, (long)t->dtype, qh_onnx_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > QMM_MAX_RANK)
        return qh_fail(err, "%s: TensorProto.dims: rank %ld out of range", what,
                       (long)t->rank);
    int64_t numel = qmm_tensor_numel(t);
    if (numel < 0)
        return qh_fail(err, "%s: TensorProto.dims: negative or overflowing dimensions",
                       what);
    size_t bytes = qmm_dtype_bytes(t->dtype, numel); /* sub-byte types packed as onnx packs */
    if (bytes > (size_t)QH_MAX_TENSOR_BYTES)
        return qh_fail(err, "%s: TensorProto.dims: payload exceeds %lld bytes", what,
                       (long long)QH_MAX_TENSOR_BYTES);
    if (bytes && !t->data)
        return qh_fail(err, "%s: TensorProto.raw_data: no data", what);
    if (name && strlen(name) > QH_NAME_MAX - 1)
        return qh_fail(err, "%s: TensorProto.name: longer than %d bytes", what,
                       QH_NAME_MAX - 1);

    qh_pb_buf b;
    qh_pb_buf_init(&b);
    for (int32_t i = 0; i < t->rank; i++)
        qh_pb_put_varint_field(&b, QH_TF_DIMS, (uint64_t)t->dims[i]);
    qh_pb_put_varint_field(&b, QH_TF_DATA_TYPE, (uint64_t)t->dtype);
    if (name && name[0])
        qh_pb_put_string_field(&b, QH_TF_NAME, name);
    /* a packed type's padding bits past the last element are written zero, as onnx writes
     * them and the reader requires, whatever the bytes in memory hold there */
    unsigned bits = qmm_dtype_bits(t->dtype);
    int64_t pad = bits < 8 && bytes ? (int64_t)(bytes * 8 / bits) - numel : 0;
    unsigned char last = bytes ? ((const unsigned char *)t->data)[bytes - 1] : 0;
    qh_pb_put_tag(&b, QH_TF_RAW, QH_PB_LEN);
    qh_pb_put_varint(&b, (uint64_t)bytes);
    qh_pb_put_raw(&b, t->data, bytes - (pad > 0));
    if (pad > 0) {
        last &= (unsigned char)((1u << (8 - pad * bits)) - 1);
        qh_pb_put_raw(&b, &last, 1);
    }
    *out = qh_pb_buf_take(&b, len);
    if (!*out)
        return qh_fail(err, "%s: TensorProto: out of memory", what);
    return 0;
}

/* Checks a fixed-array string from a caller-built model before it is encoded. */
static int model_str_ok(const char *s, const char *field, qh_error *err)
{
    if (memchr(s, 0, QH_NAME_MAX) == NULL)
        return qh_fail(err, "<model>: %s: not NUL-terminated within %d bytes", field,
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
        return qh_fail(err, "<model>: ModelProto: a count is out of range");
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
            return qh_fail(err, "<model>: AttributeProto.type: attribute '%s' has type %ld",
                           a->name, (long)a->type);
    }
    for (int32_t k = 0; k < 2; k++) {
        const qh_value_info *v = k ? m->graph_outputs : m->graph_inputs;
        int32_t n = k ? m->n_graph_outputs : m->n_graph_inputs;
        for (int32_t i = 0; i < n; i++) {
            if (model_str_ok(v[i].name, "ValueInfoProto.name", err))
                return -1;
            if (v[i].rank < -1 || v[i].rank > QMM_MAX_RANK || v[i].elem_type < 0)
                return qh_fail(err, "<model>: ValueInfoProto.type: value '%s' has rank %ld",
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
        return qh_fail(err, "<model>: ModelProto: out of memory");
    return 0;
}

/* ---- files ----------------------------------------------------------------------------- */

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
