/* harness/invoke/wire.c — what both sides of the worker protocol share (harness/invoke/wire.h). */
#include "harness/invoke/wire.h"

#include <string.h>
#include <unistd.h>

int qh_call_tensors(qmm_call *c, qmm_tensor **t, const char **names)
{
    const qmm_op_desc *d = qmm_call_desc(c);
    if (!d)
        return 0;
    int n = 0;
    for (int32_t i = 0; i < d->n_inputs; i++, n++) {
        t[n] = qmm_call_input(c, i);
        names[n] = d->inputs[i].name;
    }
    /* the output is "y" for every operator, as include/qmm/ops.h names it and the guards'
     * messages have always said (docs/isolation.md), whatever the node calls it */
    t[n] = qmm_call_output(c);
    names[n] = "y";
    return n + 1;
}

void qh_wire_put_scalars(const qmm_call *c, wire_request *rq)
{
    rq->op = c->op;
    rq->opset = qmm_call_opset(c);
    for (int32_t i = 0; i < QMM_MAX_OP_ATTRS; i++)
        rq->attrs[i] = qmm_call_attr_value(c, i);
}

void qh_wire_get_scalars(const wire_request *rq, qmm_call *c)
{
    qmm_call_init(c, (qmm_op_kind)rq->op, rq->opset);
    for (int32_t i = 0; i < QMM_MAX_OP_ATTRS; i++) {
        int32_t *a = qmm_call_attr(c, i);
        if (a)
            *a = rq->attrs[i];
    }
}

size_t qh_tensor_bytes(const qmm_tensor *t)
{
    if (!qmm_tensor_present(t))
        return 0;
    return qmm_dtype_bytes(t->dtype, qmm_tensor_numel(t)); /* sub-byte types packed */
}

size_t qh_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void qh_fd_msg_init(qh_fd_msg *m, void *p, size_t n)
{
    memset(m, 0, sizeof *m);
    m->iov.iov_base = p;
    m->iov.iov_len = n;
    m->mh.msg_iov = &m->iov;
    m->mh.msg_iovlen = 1;
    m->mh.msg_control = m->cb.buf;
    m->mh.msg_controllen = sizeof m->cb.buf;
}
