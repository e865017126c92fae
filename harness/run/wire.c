/* harness/run/wire.c — what both sides of the worker protocol share (harness/run/wire.h). */
#include "harness/run/wire.h"

#include <string.h>
#include <unistd.h>

int qh_call_tensors(qmm_call *c, qmm_tensor **t, const char **names)
{
    int n = 0;
#define T(field, nm) (t[n] = &(field), names[n] = (nm), n++)
    switch (c->op) {
    case QMM_OP_MATMULINTEGER: {
        qmm_matmulinteger *m = &c->u.matmulinteger;
        T(m->a, "A"); T(m->b, "B"); T(m->a_zero_point, "a_zero_point");
        T(m->b_zero_point, "b_zero_point"); T(m->y, "y");
        break;
    }
    case QMM_OP_QLINEARMATMUL: {
        qmm_qlinearmatmul *q = &c->u.qlinearmatmul;
        T(q->a, "a"); T(q->a_scale, "a_scale"); T(q->a_zero_point, "a_zero_point");
        T(q->b, "b"); T(q->b_scale, "b_scale"); T(q->b_zero_point, "b_zero_point");
        T(q->y_scale, "y_scale"); T(q->y_zero_point, "y_zero_point"); T(q->y, "y");
        break;
    }
    case QMM_OP_QORDEREDMATMUL: {
        qmm_qorderedmatmul *o = &c->u.qorderedmatmul;
        T(o->a, "a"); T(o->scale_a, "scale_A"); T(o->b, "b"); T(o->scale_b, "scale_B");
        T(o->scale_y, "scale_Y"); T(o->bias, "bias"); T(o->c, "C"); T(o->scale_c, "scale_C");
        T(o->y, "y");
        break;
    }
    case QMM_OP_NONE:
        break;
    }
#undef T
    return n;
}

size_t qh_tensor_bytes(const qmm_tensor *t)
{
    if (!qmm_tensor_present(t))
        return 0;
    int64_t n = qmm_tensor_numel(t);
    size_t es = qmm_dtype_size(t->dtype);
    return n > 0 ? (size_t)n * es : 0;
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
