/* harness/invoke.c — calling a backend, in process or in an isolated worker.
 *
 * Isolation: each qh_backend gets a worker process, forked on first use, which opens its own
 * instance of the backend (a backend's threads do not survive fork, so the parent's instance
 * is never used across it). The parent sends one call at a time over a socket — every tensor
 * of the call, data included — and waits with a timeout. The worker places inputs and output
 * in guarded memory (harness/guard.h), runs the call, checks the canaries and sends back the
 * status and the output. A worker that dies or hangs is reaped (killed if needed) and the
 * next call forks a fresh one.
 */
#include "harness/invoke.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/case.h"
#include "harness/expect.h"
#include "harness/guard.h"

volatile sig_atomic_t qh_interrupted = 0;

/* ---- the tensors of a call, in a fixed order (the output last) ------------------------- */

#define QH_CALL_MAX_TENSORS 9

static int call_tensors(qmm_call *c, qmm_tensor **t, const char **names)
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

static size_t tensor_bytes(const qmm_tensor *t)
{
    if (!qmm_tensor_present(t))
        return 0;
    int64_t n = qmm_tensor_numel(t);
    size_t es = qmm_dtype_size(t->dtype);
    return n > 0 ? (size_t)n * es : 0;
}

/* ---- in process ----------------------------------------------------------------------- */

static int invoke_here(qh_backend *b, const qmm_call *call, const qh_invoke_opts *o,
                       qh_invocation *out)
{
    qmm_call c = *call;
    qmm_tensor *y = qh_call_output(&c);
    out->y = *y;
    /* A poison fill makes an element the backend forgets to write unlikely to match; the
     * runner asks for a second fill to tell an unwritten element from a written one. */
    if (qh_alloc_tensor(&out->y, o && o->fill ? o->fill : 0xa5) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        return -1;
    }
    y->data = out->y.data;
    qmm_status_ok(&out->st);
    out->code = qmm_backend_run(b->be, &c, &out->st);
    out->outcome = QH_RETURNED;
    return 0;
}

/* ---- wire helpers --------------------------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads exactly n bytes; waits at most until `deadline` (monotonic seconds, <= 0 for none).
 * Returns 0, -1 on EOF/error, -2 on timeout. */
static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int read_all(int fd, void *p, size_t n, double deadline)
{
    char *s = p;
    while (n) {
        if (deadline > 0) {
            double left = deadline - mono();
            if (left <= 0)
                return -2;
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr == 0)
                return -2;
            if (pr < 0)
                return -1;
        }
        ssize_t r = read(fd, s, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        s += r;
        n -= (size_t)r;
    }
    return 0;
}

typedef struct wire_tensor {
    int32_t dtype, rank;
    int64_t dims[QMM_MAX_RANK];
    uint64_t bytes;
} wire_tensor;

typedef struct wire_request {
    uint32_t magic;
    int32_t op, opset, order_a, order_b, order_y;
    int32_t n_tensors;
} wire_request;

typedef struct wire_reply {
    uint32_t magic;
    int32_t outcome; /* qh_invoke_outcome */
    int32_t code;
    char message[QMM_STATUS_MESSAGE_MAX];
    char problem[256];
    int32_t exiting; /* sent by the fault handler: the worker is gone after this */
    uint64_t bytes;  /* output bytes that follow */
} wire_reply;

#define REQ_MAGIC 0x514d4d51u /* "QMMQ" */
#define REP_MAGIC 0x524d4d51u /* "QMMR" */

/* ---- the worker ----------------------------------------------------------------------- */

static void report_fault(int fd, const char *sentence)
{
    /* async-signal-safe: no stdio, only memcpy and send */
    wire_reply r;
    memset(&r, 0, sizeof r);
    r.magic = REP_MAGIC;
    r.outcome = QH_MISBEHAVED;
    r.code = QMM_INTERNAL;
    r.exiting = 1;
    size_t n = strlen(sentence);
    if (n >= sizeof r.problem)
        n = sizeof r.problem - 1;
    memcpy(r.problem, sentence, n);
    (void)write_all(fd, &r, sizeof r);
}

static int serve_one(qh_backend *b, int fd)
{
    wire_request rq;
    if (read_all(fd, &rq, sizeof rq, 0) != 0 || rq.magic != REQ_MAGIC ||
        rq.n_tensors < 0 || rq.n_tensors > QH_CALL_MAX_TENSORS)
        return -1;
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = (qmm_op_kind)rq.op;
    if (call.op == QMM_OP_QLINEARMATMUL)
        call.u.qlinearmatmul.opset = rq.opset;
    if (call.op == QMM_OP_QORDEREDMATMUL) {
        call.u.qorderedmatmul.order_a = rq.order_a;
        call.u.qorderedmatmul.order_b = rq.order_b;
        call.u.qorderedmatmul.order_y = rq.order_y;
    }
    qmm_tensor *t[QH_CALL_MAX_TENSORS];
    const char *names[QH_CALL_MAX_TENSORS];
    int n = call_tensors(&call, t, names);
    if (n != rq.n_tensors)
        return -1;
    qh_guarded g[QH_CALL_MAX_TENSORS];
    memset(g, 0, sizeof g);
    int rc = -1;
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.magic = REP_MAGIC;
    for (int i = 0; i < n; i++) {
        wire_tensor wt;
        if (read_all(fd, &wt, sizeof wt, 0) != 0)
            goto done;
        t[i]->dtype = wt.dtype;
        t[i]->rank = wt.rank;
        memcpy(t[i]->dims, wt.dims, sizeof wt.dims);
        int is_out = i == n - 1;
        if (is_out) {
            if (qh_guard_output(&g[i], names[i], (size_t)wt.bytes, 0xa5) != 0)
                goto done;
        } else {
            void *tmp = malloc(wt.bytes ? (size_t)wt.bytes : 1);
            if (!tmp || read_all(fd, tmp, (size_t)wt.bytes, 0) != 0) {
                free(tmp);
                goto done;
            }
            int grc = qh_guard_input(&g[i], names[i], tmp, (size_t)wt.bytes);
            free(tmp);
            if (grc != 0)
                goto done;
        }
        t[i]->data = qmm_tensor_present(t[i]) ? g[i].data : NULL;
    }
    qh_guard_install_handler(g, n, fd, report_fault);
    qmm_status st;
    qmm_status_ok(&st);
    rep.code = qmm_backend_run(b->be, &call, &st);
    rep.outcome = QH_RETURNED;
    memcpy(rep.message, st.message, sizeof rep.message);
    size_t hit = qh_guard_canaries_hit(&g[n - 1]);
    if (hit) {
        rep.outcome = QH_MISBEHAVED;
        snprintf(rep.problem, sizeof rep.problem, "wrote %zu byte%s before the start of y",
                 hit, hit == 1 ? "" : "s");
    }
    rep.bytes = g[n - 1].len;
    if (write_all(fd, &rep, sizeof rep) != 0 ||
        write_all(fd, g[n - 1].data, g[n - 1].len) != 0)
        goto done;
    rc = 0;
done:
    for (int i = 0; i < n; i++)
        qh_guard_free(&g[i]);
    return rc;
}

static void worker_main(const char *spec, int fd)
{
    qh_backend b;
    qh_error err;
    if (qh_backend_open(spec, &b, &err) != 0) {
        fprintf(stderr, "qmmcheck worker: %s\n", err.msg);
        _exit(3);
    }
    while (serve_one(&b, fd) == 0) {
    }
    qh_backend_close(&b);
    _exit(0);
}

static int worker_start(qh_backend *b)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    fflush(NULL); /* no buffered output duplicated into the child */
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        worker_main(b->spec, sv[1]);
    }
    close(sv[1]);
    b->worker_pid = pid;
    b->worker_fd = sv[0];
    return 0;
}

/* Reaps the worker; returns a description of how it ended (static storage in `buf`). */
static const char *worker_reap(qh_backend *b, int kill_it, char *buf, size_t size)
{
    if (b->worker_pid <= 0)
        return "";
    if (kill_it)
        kill(b->worker_pid, SIGKILL);
    close(b->worker_fd);
    int status = 0;
    while (waitpid(b->worker_pid, &status, 0) < 0 && errno == EINTR) {
    }
    b->worker_pid = 0;
    b->worker_fd = -1;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
                           : sig == SIGABRT ? "SIGABRT" : sig == SIGFPE ? "SIGFPE"
                           : sig == SIGILL ? "SIGILL" : sig == SIGKILL ? "SIGKILL"
                           : sig == SIGTRAP ? "SIGTRAP" : "signal";
        snprintf(buf, size, "killed by %s (%s)", abbrev, strsignal(sig));
    } else if (WIFEXITED(status)) {
        snprintf(buf, size, "worker exited with status %d%s", WEXITSTATUS(status),
                 WEXITSTATUS(status) == 3 ? " (the backend could not be opened)" : "");
    } else {
        snprintf(buf, size, "worker ended");
    }
    return buf;
}

void qh_worker_stop(qh_backend *b)
{
    if (b->worker_pid > 0) {
        char buf[128];
        /* closing the socket ends the worker's loop; a wedged worker is killed */
        shutdown(b->worker_fd, SHUT_RDWR);
        int status;
        for (int i = 0; i < 50; i++) {
            if (waitpid(b->worker_pid, &status, WNOHANG) == b->worker_pid) {
                close(b->worker_fd);
                b->worker_pid = 0;
                b->worker_fd = -1;
                return;
            }
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        worker_reap(b, 1, buf, sizeof buf);
    }
}

static int invoke_isolated(qh_backend *b, const qmm_call *call, const qh_invoke_opts *o,
                           qh_invocation *out)
{
    qmm_call c = *call;
    qmm_tensor *t[QH_CALL_MAX_TENSORS];
    const char *names[QH_CALL_MAX_TENSORS];
    int n = call_tensors(&c, t, names);
    qmm_tensor *y = t[n - 1];
    out->y = *y;
    if (qh_alloc_tensor(&out->y, 0xa5) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        return -1;
    }
    if (b->worker_pid <= 0 && worker_start(b) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot start a worker: %s",
                 strerror(errno));
        return -1;
    }
    wire_request rq;
    memset(&rq, 0, sizeof rq);
    rq.magic = REQ_MAGIC;
    rq.op = c.op;
    rq.n_tensors = n;
    if (c.op == QMM_OP_QLINEARMATMUL)
        rq.opset = c.u.qlinearmatmul.opset;
    if (c.op == QMM_OP_QORDEREDMATMUL) {
        rq.order_a = c.u.qorderedmatmul.order_a;
        rq.order_b = c.u.qorderedmatmul.order_b;
        rq.order_y = c.u.qorderedmatmul.order_y;
    }
    int ok = write_all(b->worker_fd, &rq, sizeof rq) == 0;
    for (int i = 0; ok && i < n; i++) {
        wire_tensor wt;
        memset(&wt, 0, sizeof wt);
        wt.dtype = t[i]->dtype;
        wt.rank = t[i]->rank;
        memcpy(wt.dims, t[i]->dims, sizeof wt.dims);
        wt.bytes = i == n - 1 ? tensor_bytes(&out->y) : tensor_bytes(t[i]);
        ok = write_all(b->worker_fd, &wt, sizeof wt) == 0;
        if (ok && i < n - 1 && wt.bytes)
            ok = write_all(b->worker_fd, t[i]->data, (size_t)wt.bytes) == 0;
    }
    double deadline = o->timeout_s > 0 ? mono() + o->timeout_s : 0;
    wire_reply rep;
    int rr = ok ? read_all(b->worker_fd, &rep, sizeof rep, deadline) : -1;
    if (rr == 0 && rep.magic == REP_MAGIC && rep.exiting) {
        /* the fault handler answered and the worker is exiting */
        out->outcome = QH_MISBEHAVED;
        memcpy(out->problem, rep.problem, sizeof out->problem);
        out->problem[sizeof out->problem - 1] = '\0';
        char buf[128];
        worker_reap(b, 0, buf, sizeof buf);
        return 0;
    }
    if (rr == 0 && rep.magic == REP_MAGIC && rep.bytes == tensor_bytes(&out->y))
        rr = rep.bytes ? read_all(b->worker_fd, out->y.data, (size_t)rep.bytes, deadline) : 0;
    else if (rr == 0)
        rr = -1; /* a garbled reply: treat the worker as broken */
    if (rr == -2) {
        char buf[128];
        worker_reap(b, 1, buf, sizeof buf);
        out->outcome = QH_HUNG;
        snprintf(out->problem, sizeof out->problem, "no answer within %.3g s; worker killed",
                 o->timeout_s);
        return 0;
    }
    if (rr != 0) {
        char buf[160];
        out->outcome = QH_DIED;
        snprintf(out->problem, sizeof out->problem, "%s",
                 worker_reap(b, 1, buf, sizeof buf));
        return 0;
    }
    out->outcome = rep.outcome == QH_MISBEHAVED ? QH_MISBEHAVED : QH_RETURNED;
    out->code = (qmm_status_code)rep.code;
    qmm_status_set(&out->st, out->code, "%.*s", (int)sizeof rep.message - 1, rep.message);
    memcpy(out->problem, rep.problem, sizeof out->problem);
    out->problem[sizeof out->problem - 1] = '\0';
    return 0;
}

int qh_invoke(qh_backend *b, const qmm_call *call, const qh_invoke_opts *o, qh_invocation *out)
{
    memset(out, 0, sizeof *out);
    qmm_status_ok(&out->st);
    /* The capability query looks only at shapes and types, so it is asked in process. */
    if (b->be->query && b->be->query(b->be, call, &out->st) == QMM_UNSUPPORTED) {
        out->code = QMM_UNSUPPORTED;
        return 0;
    }
    qmm_status_ok(&out->st);
    if (o && o->isolate)
        return invoke_isolated(b, call, o, out);
    return invoke_here(b, call, o, out);
}

void qh_invocation_free(qh_invocation *inv)
{
    free(inv->y.data);
    inv->y.data = NULL;
    free(inv->output);
    inv->output = NULL;
}
