/* harness/io/node_call.c — a node and its inputs as an operator call, and back (case.h): the
 * operator found by its domain and op_type in the table of ops/operator.h, the inputs in node
 * order, the attributes checked against the operator's; and the model whose node loads back as
 * a given call. */
#include "harness/io/case.h"

#include <stdio.h>
#include <string.h>

#include "harness/io/casedir.h"
#include "harness/base/clean.h"
#include "ops/qmm_ops.h"

qmm_tensor *qh_call_output(qmm_call *call)
{
    return qmm_call_output(call);
}

/* An attribute's name as a message quotes it: the name comes from the file. */
static const char *attr_name(char *buf, size_t size, const qh_attr *a)
{
    qh_clean_into(buf, size, a->name, strnlen(a->name, sizeof a->name), 64);
    return buf;
}

/* The node's attributes into the call. An operator without attributes takes none in any
 * opset: one that is there is not something the backends are told about, so the model is
 * malformed rather than the attribute silently ignored. Values pass through unchecked (within
 * int32), so that the reference's verdict on a bad one is INVALID_ARGUMENT like any other bad
 * input; a missing, mistyped or unknown attribute makes the model itself malformed. */
static int take_attrs(const qmm_op_desc *d, const qh_attr *attrs, int32_t n_attrs,
                      qmm_call *call, qh_error *err)
{
    char shown[80];
    if (d->n_attrs == 0 && n_attrs > 0) {
        snprintf(err->msg, sizeof err->msg,
                 "NodeProto.attribute: unknown attribute '%s' (%s takes no attributes)",
                 attr_name(shown, sizeof shown, &attrs[0]), d->op_type);
        return -1;
    }
    int seen[QMM_MAX_OP_ATTRS] = {0};
    for (int32_t i = 0; i < n_attrs; i++) {
        const qh_attr *a = &attrs[i];
        int32_t which = -1;
        for (int32_t w = 0; w < d->n_attrs; w++)
            if (strcmp(a->name, d->attrs[w].name) == 0)
                which = w;
        if (which < 0) {
            char known[128] = "";
            for (int32_t w = 0; w < d->n_attrs; w++) {
                size_t k = strlen(known);
                snprintf(known + k, sizeof known - k, "%s%s", w ? ", " : "", d->attrs[w].name);
            }
            snprintf(err->msg, sizeof err->msg, "%s: unknown attribute '%s' (it has %s)",
                     d->op_type, attr_name(shown, sizeof shown, a), known);
            return -1;
        }
        if (a->type != QH_ATTR_INT) {
            snprintf(err->msg, sizeof err->msg, "%s: attribute %s must be an INT (%s)",
                     d->op_type, a->name, d->attrs[which].what);
            return -1;
        }
        if (a->i < INT32_MIN || a->i > INT32_MAX) {
            snprintf(err->msg, sizeof err->msg,
                     "%s: attribute %s is %lld, outside the 32-bit range these operators take "
                     "(%s)", d->op_type, a->name, (long long)a->i, d->attrs[which].what);
            return -1;
        }
        *qmm_call_attr(call, which) = (int32_t)a->i;
        seen[which] = 1;
    }
    for (int32_t w = 0; w < d->n_attrs; w++)
        if (!seen[w] && d->attrs[w].required) {
            snprintf(err->msg, sizeof err->msg, "%s: required attribute %s is missing",
                     d->op_type, d->attrs[w].name);
            return -1;
        }
    return 0;
}

/* The node's inputs into the call: as many as the operator has at most, and at least up to
 * its last required one; a required one must be present. */
static int take_inputs(const qmm_op_desc *d, const qmm_tensor *const *in, int32_t n,
                       qmm_call *call, qh_error *err)
{
    int32_t n_min = 0;
    for (int32_t i = 0; i < d->n_inputs; i++)
        if (!d->inputs[i].optional)
            n_min = i + 1;
    if (n < n_min || n > d->n_inputs) {
        char want[32];
        if (n_min == d->n_inputs)
            snprintf(want, sizeof want, "%d", n_min);
        else
            snprintf(want, sizeof want, "%d to %d", n_min, d->n_inputs);
        snprintf(err->msg, sizeof err->msg, "NodeProto.input: %s: %d inputs, expected %s",
                 d->op_type, n, want);
        return -1;
    }
    for (int32_t i = 0; i < n; i++) {
        int present = in[i] && in[i]->dtype != QMM_DTYPE_UNDEFINED;
        if (!present && !d->inputs[i].optional) {
            snprintf(err->msg, sizeof err->msg,
                     "NodeProto.input: %s: required input %d (%s) is missing", d->op_type, i,
                     d->inputs[i].name);
            return -1;
        }
        if (in[i])
            *qmm_call_input(call, i) = *in[i];
    }
    return 0;
}

int qh_call_build(const char *op_type, const char *domain, int64_t opset,
                  const qmm_tensor *const *in, int32_t n, qmm_call *call, qh_error *err)
{
    return qh_call_build_node(op_type, domain, opset, in, n, NULL, 0, call, err);
}

/* "expected QLinearMatMul, MatMulInteger or com.microsoft QOrderedMatMul" */
static void known_operators(char *buf, size_t size)
{
    buf[0] = '\0';
    int32_t n = qmm_op_count();
    for (int32_t i = 0; i < n; i++) {
        const qmm_op_desc *d = qmm_op_at(i);
        size_t k = strlen(buf);
        snprintf(buf + k, size - k, "%s%s%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                 d->domain, d->domain[0] ? " " : "", d->op_type);
    }
}

int qh_call_build_node(const char *op_type, const char *domain, int64_t opset,
                       const qmm_tensor *const *in, int32_t n, const qh_attr *attrs,
                       int32_t n_attrs, qmm_call *call, qh_error *err)
{
    memset(call, 0, sizeof *call);
    const qmm_op_desc *d = qmm_op_lookup(domain, op_type);
    if (!d) {
        char op[QH_NAME_MAX * 2 + 2], shown[160], known[384];
        snprintf(op, sizeof op, "%s%s%s", domain, domain[0] ? "." : "", op_type);
        qh_clean_into(shown, sizeof shown, op, strlen(op), 128);
        known_operators(known, sizeof known);
        snprintf(err->msg, sizeof err->msg,
                 "NodeProto.op_type: unknown operator '%s' (expected %s)", shown, known);
        return -1;
    }
    /* no import of the operator's domain (opset -1) is a malformed model for every operator:
     * read as a call at "opset -1", which the validator refuses, an ai.onnx model stripped of
     * its opset_import made every backend's answer UNCHECKED, never FAILED; a com.microsoft
     * one must also import a version of at least 1 */
    if (opset < 0 || (d->import_required && opset < 1)) {
        snprintf(err->msg, sizeof err->msg,
                 "ModelProto.opset_import: %s: the model imports no %s opset (version %d)",
                 d->op_type, d->domain[0] ? d->domain : "ai.onnx", d->opset_min);
        return -1;
    }
    /* an operator whose call stores no opset (MatMulInteger) cannot carry one from before it
     * existed to the validator: a model importing an older opset is malformed (a MatMulInteger
     * at ai.onnx 1 was judged as if at 10) */
    if (d->opset_offset < 0 && opset < d->opset_min) {
        snprintf(err->msg, sizeof err->msg,
                 "ModelProto.opset_import: %s exists from %s opset %d on; the model imports %lld",
                 d->op_type, d->domain[0] ? d->domain : "ai.onnx", d->opset_min, (long long)opset);
        return -1;
    }
    /* the opset is stored as given (within int32): the validator decides what it allows */
    qmm_call_init(call, d->kind, (int32_t)opset);
    if (take_inputs(d, in, n, call, err) != 0 || take_attrs(d, attrs, n_attrs, call, err) != 0) {
        memset(call, 0, sizeof *call);
        return -1;
    }
    qmm_call_output(call)->dtype = qmm_call_output_dtype(call);
    return 0;
}

void qh_call_model(const qmm_call *call, const qmm_tensor *y, int y_shape_known, qh_model *m)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (!d)
        return;
    int32_t opset = qmm_call_opset(call);
    /* IR 5 is what opset 10 shipped with; opset 21 needs IR 10 */
    m->ir_version = opset >= 21 ? 10 : 5;
    m->n_opsets = 1;
    m->opsets[0].version = opset;
    snprintf(m->op_type, sizeof m->op_type, "%s", d->op_type);
    if (d->domain[0]) {
        /* com.microsoft 1 is used with ai.onnx opsets of this era */
        m->ir_version = 8;
        m->n_opsets = 2;
        m->opsets[0].version = 17;
        snprintf(m->opsets[1].domain, sizeof m->opsets[1].domain, "%s", d->domain);
        m->opsets[1].version = opset;
        snprintf(m->domain, sizeof m->domain, "%s", d->domain);
    }
    /* an optional attribute at its default is left out, as absent means the default: so an
     * attribute that the node's opset does not define yet (DequantizeLinear's output_dtype
     * before opset 23, 0 when unset) is never written, which runtimes would reject */
    m->n_attrs = 0;
    for (int32_t i = 0; i < d->n_attrs; i++) {
        int32_t v = qmm_call_attr_value(call, i);
        if (!d->attrs[i].required && v == d->attrs[i].def)
            continue;
        qh_attr *a = &m->attrs[m->n_attrs++];
        snprintf(a->name, sizeof a->name, "%s", d->attrs[i].name);
        a->type = QH_ATTR_INT;
        a->i = v;
    }
    m->n_outputs = 1;
    snprintf(m->outputs[0], sizeof m->outputs[0], "%s", d->output_name);
    m->n_graph_outputs = 1;
    qh_value_info_of(&m->graph_outputs[0], d->output_name, y, y_shape_known);
}
