/* harness/invoke.c — calling a backend, in process or in an isolated worker.
 *
 * Isolation: an isolated qh_backend has a worker process, which opens its own instance of the
 * backend (qmmcheck never loads an isolated plugin, and a backend's threads do not survive
 * fork anyway) and answers a hello. The parent sends one request at a time over a socket —
 * a call with every input tensor, or "close" — and waits with a timeout. The worker builds
 * the call from the wire, asks the capability query on a copy, places inputs and output in
 * guarded memory (harness/guard.h) and runs a fresh copy. The output lives in a memfd that
 * the parent created and sized from its own data and that both map, so it exists once.
 *
 * Containment: the worker leads its own process group (a plugin's children die with it),
 * its stdout and stderr are a pipe the parent drains into the invocation, it dies with
 * qmmcheck (PR_SET_PDEATHSIG), and it runs under a data-size limit. The parent notices the
 * worker's death by waitpid, not by EOF (a lingering child may hold the socket), and every
 * wait returns once qh_interrupted is set. A worker that dies or hangs is killed with its
 * group and the next call starts a fresh one.
 */
#define _GNU_SOURCE 1 /* memfd_create, MFD_*, F_ADD_SEALS */
#include "harness/invoke.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/case.h"
#include "harness/expect.h"
#include "harness/guard.h"

volatile sig_atomic_t qh_interrupted = 0;

#define DEFAULT_FILL 0xa5

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


static unsigned char fill_of(const qh_invoke_opts *o)
{
    return o && o->fill ? o->fill : DEFAULT_FILL;
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Runs the call: the function pointers come from the harness's copy of the table, `self` is
 * the table the backend gave (its impl lives behind it). */
static qmm_status_code run_op(const qmm_backend *tab, const qmm_backend *self, qmm_call *c,
                              qmm_status *st)
{
    switch (c->op) {
    case QMM_OP_MATMULINTEGER:
        if (tab->matmulinteger)
            return tab->matmulinteger(self, &c->u.matmulinteger, st);
        break;
    case QMM_OP_QLINEARMATMUL:
        if (tab->qlinearmatmul)
            return tab->qlinearmatmul(self, &c->u.qlinearmatmul, st);
        break;
    case QMM_OP_QORDEREDMATMUL:
        if (tab->qorderedmatmul)
            return tab->qorderedmatmul(self, &c->u.qorderedmatmul, st);
        break;
    case QMM_OP_NONE:
        break;
    }
    return qmm_status_set(st, QMM_UNSUPPORTED, "%s: operator %s not implemented",
                          tab->name ? tab->name : "backend", qmm_op_name(c->op));
}

/* The capability query, asked on a copy of the call so it cannot change what runs. */
static qmm_status_code ask_query(const qmm_backend *tab, const qmm_backend *self,
                                 const qmm_call *call, qmm_status *st)
{
    qmm_status_ok(st);
    if (!tab->query)
        return QMM_OK;
    qmm_call copy = *call;
    return tab->query(self, &copy, st) == QMM_UNSUPPORTED ? QMM_UNSUPPORTED : QMM_OK;
}

/* ---- in process ----------------------------------------------------------------------- */

static int invoke_here(qh_backend *b, const qmm_call *call, unsigned char fill,
                       qh_invocation *out)
{
    if (ask_query(&b->table, b->be, call, &out->st) == QMM_UNSUPPORTED) {
        out->code = QMM_UNSUPPORTED;
        return 0;
    }
    qmm_status_ok(&out->st);
    qmm_call c = *call;
    qmm_tensor *y = qh_call_output(&c);
    out->y = *y;
    /* A poison fill makes an element the backend forgets to write unlikely to match. */
    if (qh_alloc_tensor(&out->y, fill) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        return -1;
    }
    y->data = out->y.data;
    out->code = run_op(&b->table, b->be, &c, &out->st);
    out->outcome = QH_RETURNED;
    return 0;
}

/* ---- the wire ------------------------------------------------------------------------- */

typedef struct wire_hello {
    uint32_t magic;
    int32_t ok;        /* the backend is open */
    int32_t has_query;
    char message[512]; /* why it is not */
} wire_hello;

enum { REQ_CALL = 1, REQ_CLOSE = 2 };

typedef struct wire_request {
    uint32_t magic, kind, seq, fill;
    int32_t op, opset, order_a, order_b, order_y;
    int32_t n_tensors;
    uint64_t map_len; /* bytes of the output memfd sent with the request (0: none) */
} wire_request;

typedef struct wire_tensor {
    int32_t dtype, rank;
    int64_t dims[QMM_MAX_RANK];
    uint64_t bytes;
} wire_tensor;

typedef struct wire_reply {
    uint32_t magic, seq;
    int32_t outcome; /* qh_invoke_outcome */
    int32_t code;
    char message[QMM_STATUS_MESSAGE_MAX];
    char problem[256];
    int32_t exiting; /* sent by the fault handler: the worker is gone after this */
    int32_t late;    /* the fault came after the call `seq` returned */
    uint64_t offset; /* where y starts in the memfd */
} wire_reply;

#define HELLO_MAGIC 0x484d4d51u /* "QMMH" */
#define REQ_MAGIC 0x514d4d51u   /* "QMMQ" */
#define REP_MAGIC 0x524d4d51u   /* "QMMR" */

/* ---- the worker (blocking I/O: it has nothing else to do) ----------------------------- */

static int write_full(int fd, const void *p, size_t n)
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

static int read_full(int fd, void *p, size_t n)
{
    char *s = p;
    while (n) {
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

/* The regions of the call in progress, its number and whether it is still running (the
 * fault handler reads the last two). */
static qh_guarded w_regions[QH_CALL_MAX_TENSORS];
static volatile sig_atomic_t w_in_call;
static volatile uint32_t w_seq;

static void report_fault(int fd, const char *sentence)
{
    /* async-signal-safe: no stdio, only memcpy and send */
    wire_reply r;
    memset(&r, 0, sizeof r);
    r.magic = REP_MAGIC;
    r.seq = w_seq;
    r.outcome = QH_MISBEHAVED;
    r.code = QMM_INTERNAL;
    r.exiting = 1;
    r.late = !w_in_call;
    size_t n = strlen(sentence);
    if (n >= sizeof r.problem)
        n = sizeof r.problem - 1;
    memcpy(r.problem, sentence, n);
    (void)write_full(fd, &r, sizeof r);
}

/* A message of n bytes at p with room for one file descriptor (the output's memfd). */
typedef struct fd_msg {
    struct iovec iov;
    struct msghdr mh;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cb;
} fd_msg;

static void fd_msg_init(fd_msg *m, void *p, size_t n)
{
    memset(m, 0, sizeof *m);
    m->iov.iov_base = p;
    m->iov.iov_len = n;
    m->mh.msg_iov = &m->iov;
    m->mh.msg_iovlen = 1;
    m->mh.msg_control = m->cb.buf;
    m->mh.msg_controllen = sizeof m->cb.buf;
}

/* The request header, and the memfd that comes with it. */
static int recv_request(int fd, wire_request *rq, int *memfd)
{
    *memfd = -1;
    fd_msg m;
    fd_msg_init(&m, rq, sizeof *rq);
    ssize_t r;
    do
        r = recvmsg(fd, &m.mh, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return -1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m.mh); cm; cm = CMSG_NXTHDR(&m.mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(memfd, CMSG_DATA(cm), sizeof(int));
    return read_full(fd, (char *)rq + r, sizeof *rq - (size_t)r);
}

/* Places y in guarded memory whose data pages are the parent's memfd, so the parent reads
 * the output in place. The guard contract puts y's end at a page boundary; the bytes in
 * front of y in its first page (canaries) are carried over. *offset: where y starts. */
static int guard_shared_output(qh_guarded *g, const char *name, size_t len, unsigned char fill,
                               int memfd, uint64_t map_len, uint64_t *offset)
{
    if (qh_guard_output(g, name, len, fill) != 0)
        return -1;
    *offset = 0;
    if (len == 0)
        return 0;
    size_t ps = page_size();
    uintptr_t d = (uintptr_t)g->data, start = d / ps * ps, end = d + len;
    size_t head = (size_t)(d - start);
    if (memfd < 0 || end % ps != 0 || end - start > map_len)
        return -1;
    unsigned char *saved = malloc(head ? head : 1);
    if (!saved)
        return -1;
    memcpy(saved, (void *)start, head);
    void *m = mmap((void *)start, end - start, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                   memfd, 0);
    if (m != MAP_FAILED) {
        memcpy((void *)start, saved, head);
        memset(g->data, fill, len);
    }
    free(saved);
    *offset = head;
    return m == MAP_FAILED ? -1 : 0;
}

/* Reads one call from the wire into w_regions; 0, or -1 on a broken stream. */
static int receive_call(int fd, const wire_request *rq, int memfd, qmm_call *call,
                        uint64_t *offset)
{
    memset(call, 0, sizeof *call);
    call->op = (qmm_op_kind)rq->op;
    if (call->op == QMM_OP_QLINEARMATMUL)
        call->u.qlinearmatmul.opset = rq->opset;
    if (call->op == QMM_OP_QORDEREDMATMUL) {
        call->u.qorderedmatmul.order_a = rq->order_a;
        call->u.qorderedmatmul.order_b = rq->order_b;
        call->u.qorderedmatmul.order_y = rq->order_y;
    }
    qmm_tensor *t[QH_CALL_MAX_TENSORS];
    const char *names[QH_CALL_MAX_TENSORS];
    int n = call_tensors(call, t, names);
    if (n == 0 || n != rq->n_tensors)
        return -1;
    for (int i = 0; i < n; i++) {
        wire_tensor wt;
        if (read_full(fd, &wt, sizeof wt) != 0 || wt.rank < 0 || wt.rank > QMM_MAX_RANK)
            return -1;
        t[i]->dtype = wt.dtype;
        t[i]->rank = wt.rank;
        memcpy(t[i]->dims, wt.dims, sizeof wt.dims);
        int grc;
        if (i == n - 1) {
            grc = guard_shared_output(&w_regions[i], names[i], (size_t)wt.bytes,
                                      (unsigned char)rq->fill, memfd, rq->map_len, offset);
        } else {
            void *tmp = malloc(wt.bytes ? (size_t)wt.bytes : 1);
            grc = !tmp || read_full(fd, tmp, (size_t)wt.bytes) != 0
                      ? -1 : qh_guard_input(&w_regions[i], names[i], tmp, (size_t)wt.bytes);
            free(tmp);
        }
        if (grc != 0)
            return -1;
        t[i]->data = qmm_tensor_present(t[i]) ? w_regions[i].data : NULL;
    }
    return n;
}

static void release_regions(void)
{
    for (int i = 0; i < QH_CALL_MAX_TENSORS; i++)
        qh_guard_free(&w_regions[i]);
}

/* Serves one request; returns 0 to go on, -1 to exit. */
static int serve_one(qh_backend *b, int fd)
{
    wire_request rq;
    int memfd;
    if (recv_request(fd, &rq, &memfd) != 0 || rq.magic != REQ_MAGIC)
        return -1;
    w_seq = rq.seq;
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.magic = REP_MAGIC;
    rep.seq = rq.seq;
    if (rq.kind == REQ_CLOSE) {
        if (b->be && b->table.close)
            b->table.close(b->be);
        fflush(NULL);
        (void)write_full(fd, &rep, sizeof rep);
        _exit(0);
    }
    if (rq.kind != REQ_CALL || rq.n_tensors < 0 || rq.n_tensors > QH_CALL_MAX_TENSORS)
        return -1;
    qmm_call call;
    int n = receive_call(fd, &rq, memfd, &call, &rep.offset);
    if (memfd >= 0)
        close(memfd);
    if (n < 0) {
        release_regions();
        return -1;
    }
    qh_guard_install_handler(w_regions, n, fd, report_fault);
    w_in_call = 1;
    qmm_status st;
    rep.outcome = QH_RETURNED;
    if (ask_query(&b->table, b->be, &call, &st) == QMM_UNSUPPORTED) {
        rep.code = QMM_UNSUPPORTED;
    } else {
        qmm_call run = call; /* a fresh copy: the query may have changed its own */
        qmm_status_ok(&st);
        rep.code = run_op(&b->table, b->be, &run, &st);
        qh_guard_seal(w_regions, n); /* a write from now on is a write after return */
        size_t hit = qh_guard_canaries_hit(&w_regions[n - 1]);
        if (hit) {
            rep.outcome = QH_MISBEHAVED;
            snprintf(rep.problem, sizeof rep.problem, "wrote %zu byte%s before the start of y",
                     hit, hit == 1 ? "" : "s");
        }
    }
    w_in_call = 0;
    memcpy(rep.message, st.message, sizeof rep.message);
    fflush(NULL); /* what the call printed reaches the parent before the reply */
    int rc = write_full(fd, &rep, sizeof rep);
    /* retired, not freed: a late write still faults inside a region the handler knows */
    qh_guard_retire(w_regions, n);
    return rc;
}

static void worker_main(const char *spec, int fd)
{
    qh_backend b;
    qh_error err;
    wire_hello h;
    memset(&h, 0, sizeof h);
    h.magic = HELLO_MAGIC;
    if (qh_backend_open(spec, &b, &err) != 0) {
        snprintf(h.message, sizeof h.message, "%s", err.msg);
        (void)write_full(fd, &h, sizeof h);
        _exit(3);
    }
    h.ok = 1;
    h.has_query = b.table.query != NULL;
    if (write_full(fd, &h, sizeof h) != 0)
        _exit(0);
    while (serve_one(&b, fd) == 0) {
    }
    _exit(0); /* the parent is gone or garbled: no close, it asks for that explicitly */
}

#if defined(__SANITIZE_ADDRESS__)
#define QH_NO_MEMORY_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QH_NO_MEMORY_LIMIT 1
#endif
#endif

#ifndef QH_NO_MEMORY_LIMIT
/* The worker's data size now (VmData), before the backend is opened: qmmcheck's own
 * libraries (cuBLASLt's data alone is large) do not count against the backend's limit. */
static uint64_t data_in_use(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmData: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb * 1024;
}
#endif

/* The data-size limit: `limit` bytes beyond what the worker uses before opening the backend.
 * RLIMIT_DATA rather than RLIMIT_AS: it counts the backend's heap (brk and private writable
 * mappings, so large mallocs too) but not the shared output the harness sized, nor address
 * space merely reserved (guard zones, thread stacks, code). */
static void apply_memory_limit(uint64_t limit)
{
#ifdef QH_NO_MEMORY_LIMIT
    /* AddressSanitizer's shadow memory is a private mapping of terabytes: any limit would
     * fail the worker's first allocation, so the limit is not applied in such builds. */
    (void)limit;
#else
    if (limit == QH_MEMORY_LIMIT_DEFAULT) {
        long pages = sysconf(_SC_PHYS_PAGES);
        limit = pages > 0 ? (uint64_t)pages * page_size() / 2 : 0;
    }
    if (limit == 0)
        return;
    uint64_t base = data_in_use();
    limit = limit > UINT64_MAX - base ? UINT64_MAX : limit + base;
    struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
    (void)setrlimit(RLIMIT_DATA, &rl);
#endif
}

static void worker_child(const qh_backend *b, int sock, int out_w, pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* qmmcheck died before the line above */
        _exit(1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    dup2(out_w, 1);
    dup2(out_w, 2);
    dup2(sock, 3);
    /* nothing else of qmmcheck's (other workers' sockets, its stdout) stays open here */
    close_range(4, ~0u, 0);
    setvbuf(stdout, NULL, _IONBF, 0);
    apply_memory_limit(b->iso.memory_limit);
    worker_main(b->spec, 3);
}

/* ---- the parent: waiting on a worker ---------------------------------------------------- */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { W_READY = 0, W_DIED = -1, W_HUNG = -2, W_INTR = -3 };

static void capture(qh_backend *b, const char *p, size_t n)
{
    if (!b->captured)
        b->captured = malloc(QH_OUTPUT_KEEP + 1);
    size_t room = b->captured ? QH_OUTPUT_KEEP - b->captured_len : 0;
    size_t k = n < room ? n : room;
    if (k)
        memcpy(b->captured + b->captured_len, p, k);
    b->captured_len += k;
    b->captured_dropped += n - k;
}

/* Reads what the worker printed, without blocking (and boundedly: a chatty child of the
 * worker cannot keep the parent here). */
static void drain(qh_backend *b)
{
    char buf[4096];
    for (int i = 0; i < 256 && b->worker_out >= 0; i++) {
        ssize_t r = read(b->worker_out, buf, sizeof buf);
        if (r > 0) {
            capture(b, buf, (size_t)r);
        } else if (r == 0) {
            close(b->worker_out); /* every writer is gone */
            b->worker_out = -1;
        } else if (errno != EINTR) {
            break;
        }
    }
}

static void take_output(qh_backend *b, qh_invocation *out)
{
    /* everything the worker printed before it replied is in the pipe by now */
    if (b->worker_pid > 0)
        drain(b);
    if (b->captured_len) {
        b->captured[b->captured_len] = '\0';
        out->output = b->captured;
        b->captured = NULL;
    }
    out->output_dropped = b->captured_dropped;
    b->captured_len = 0;
    b->captured_dropped = 0;
}

/* Has the worker ended? Checked without reaping it, so its pid (its group's id) cannot be
 * reused before the group is killed. */
static int worker_gone(qh_backend *b)
{
    if (b->worker_dead)
        return 1;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)b->worker_pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == b->worker_pid)
        b->worker_dead = 1;
    return b->worker_dead;
}

/* Waits until the socket is ready for `events`, draining the worker's output meanwhile.
 * Returns W_READY, W_DIED (the worker ended and sent nothing more), W_HUNG (deadline, > 0)
 * or W_INTR (qh_interrupted). */
static int await(qh_backend *b, short events, double deadline)
{
    for (;;) {
        if (qh_interrupted)
            return W_INTR;
        int ms = 50; /* also the longest a death or a signal goes unnoticed */
        if (deadline > 0) {
            double left = deadline - mono();
            if (left <= 0)
                return W_HUNG;
            if (left * 1000 < ms)
                ms = (int)(left * 1000) + 1;
        }
        struct pollfd p[2] = {{.fd = b->worker_fd, .events = events},
                              {.fd = b->worker_out, .events = POLLIN}};
        int np = b->worker_out >= 0 ? 2 : 1;
        int r = poll(p, (nfds_t)np, ms);
        if (r < 0 && errno != EINTR)
            return W_DIED;
        if (np == 2 && p[1].revents)
            drain(b);
        if (r > 0 && p[0].revents)
            return W_READY;
        if (worker_gone(b)) {
            /* what it sent before it ended is still to be read */
            struct pollfd q = {.fd = b->worker_fd, .events = events};
            return poll(&q, 1, 0) > 0 && (q.revents & events) ? W_READY : W_DIED;
        }
    }
}

/* Sends (`sending`) or receives exactly n bytes on the worker's socket, waiting as await. */
static int transfer(qh_backend *b, void *p, size_t n, double deadline, int sending)
{
    char *s = p;
    while (n) {
        ssize_t r = sending ? send(b->worker_fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(b->worker_fd, s, n, MSG_DONTWAIT);
        if (r > 0) {
            s += r;
            n -= (size_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = await(b, sending ? POLLOUT : POLLIN, deadline);
            if (w != W_READY)
                return w;
        } else if (!(r < 0 && errno == EINTR)) {
            return W_DIED; /* EOF, or the socket is gone */
        }
    }
    return W_READY;
}

static int send_all(qh_backend *b, const void *p, size_t n, double deadline)
{
    return transfer(b, (void *)p, n, deadline, 1);
}

static int recv_all(qh_backend *b, void *p, size_t n, double deadline)
{
    return transfer(b, p, n, deadline, 0);
}

/* The request header, with the output's memfd attached when there is one. */
static int send_request(qh_backend *b, const wire_request *rq, int memfd, double deadline)
{
    if (memfd < 0)
        return send_all(b, rq, sizeof *rq, deadline);
    for (;;) {
        int r = await(b, POLLOUT, deadline);
        if (r != W_READY)
            return r;
        fd_msg m;
        fd_msg_init(&m, (void *)rq, sizeof *rq);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m.mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
        ssize_t w = sendmsg(b->worker_fd, &m.mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0)
            return send_all(b, (const char *)rq + w, sizeof *rq - (size_t)w, deadline);
        if (!(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
            return W_DIED;
    }
}

static void describe_end(int status, char *buf, size_t size)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
                           : sig == SIGABRT ? "SIGABRT" : sig == SIGFPE ? "SIGFPE"
                           : sig == SIGILL ? "SIGILL" : sig == SIGKILL ? "SIGKILL"
                           : sig == SIGTRAP ? "SIGTRAP" : "signal";
        snprintf(buf, size, "killed by %s (%s)", abbrev, strsignal(sig));
    } else if (WIFEXITED(status)) {
        snprintf(buf, size, "worker exited with status %d", WEXITSTATUS(status));
    } else {
        snprintf(buf, size, "worker ended");
    }
}

/* Kills the worker's process group (its children with it), reaps the worker and closes the
 * channels; `how` (may be NULL) says how the worker ended. */
static void worker_end(qh_backend *b, char *how, size_t size)
{
    if (how && size)
        how[0] = '\0';
    if (b->worker_pid <= 0)
        return;
    kill(-b->worker_pid, SIGKILL);
    kill(b->worker_pid, SIGKILL); /* in case it never got its own group */
    int status = 0;
    while (waitpid(b->worker_pid, &status, 0) < 0 && errno == EINTR) {
    }
    drain(b);
    if (b->worker_out >= 0)
        close(b->worker_out);
    close(b->worker_fd);
    if (how)
        describe_end(status, how, size);
    b->worker_pid = 0;
    b->worker_fd = -1;
    b->worker_out = -1;
    b->worker_dead = 0;
}

static int worker_start(qh_backend *b)
{
    int sv[2], op[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    if (pipe2(op, O_CLOEXEC) != 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    fflush(NULL); /* no buffered output duplicated into the child */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        worker_child(b, sv[1], op[1], parent);
    close(sv[1]);
    close(op[1]);
    if (pid < 0) {
        close(sv[0]);
        close(op[0]);
        return -1;
    }
    setpgid(pid, pid); /* as the child does: whichever runs first */
    fcntl(op[0], F_SETFL, fcntl(op[0], F_GETFL) | O_NONBLOCK);
    b->worker_pid = pid;
    b->worker_fd = sv[0];
    b->worker_out = op[0];
    b->worker_dead = 0;
    return 0;
}

static qh_invoke_outcome outcome_of(int w)
{
    return w == W_HUNG ? QH_HUNG : w == W_INTR ? QH_INTERRUPTED : QH_DIED;
}

/* Says why a wait on `what` ("qmm_backend_open", "close", "" for a call) ended badly,
 * ending the worker. */
static void explain(qh_backend *b, int w, const char *what, double timeout, char *why,
                    size_t n)
{
    char how[160];
    worker_end(b, how, sizeof how);
    const char *sep = what[0] ? ": " : "";
    if (w == W_HUNG)
        snprintf(why, n, "%s%sno answer within %.3g s; worker killed", what, sep, timeout);
    else if (w == W_INTR)
        snprintf(why, n, "%s%sinterrupted by signal %d; worker killed", what, sep,
                 (int)qh_interrupted);
    else
        snprintf(why, n, "%s%s%s", what, what[0] ? " crashed: " : "", how);
}

/* Starts a worker and reads its hello. W_READY with *h (h->ok 0: the backend refused to
 * open, the worker is ended), or a failure with the worker ended and `why` set. */
static int worker_hello(qh_backend *b, double deadline, double timeout, wire_hello *h,
                        char *why, size_t n)
{
    if (worker_start(b) != 0) {
        snprintf(why, n, "cannot start a worker: %s", strerror(errno));
        return W_DIED;
    }
    int w = recv_all(b, h, sizeof *h, deadline);
    if (w == W_READY && h->magic != HELLO_MAGIC)
        w = W_DIED;
    if (w != W_READY) {
        explain(b, w, "qmm_backend_open", timeout, why, n);
        return w;
    }
    h->message[sizeof h->message - 1] = '\0';
    if (!h->ok)
        worker_end(b, NULL, 0);
    return W_READY;
}

int qh_worker_open(qh_backend *b, qh_error *err)
{
    b->worker_fd = b->worker_out = -1;
    double t = b->iso.timeout_s;
    wire_hello h;
    int w = worker_hello(b, t > 0 ? mono() + t : 0, t, &h, b->broken, sizeof b->broken);
    if (w != W_READY)
        return 0; /* broken: every call says why */
    if (!h.ok) {
        snprintf(err->msg, sizeof err->msg, "%s", h.message);
        return -1;
    }
    b->has_query = h.has_query;
    return 0;
}

/* Before a call: did the worker report a late write, or die, after the previous call
 * returned? Then that is this call's answer (1); 0 when the worker is fine. */
static int between_calls(qh_backend *b, qh_invocation *out)
{
    struct pollfd p = {.fd = b->worker_fd, .events = POLLIN};
    int pending = poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
    if (!pending && !worker_gone(b))
        return 0;
    wire_reply rep;
    char how[160];
    if (pending && recv_all(b, &rep, sizeof rep, mono() + 1) == W_READY &&
        rep.magic == REP_MAGIC && rep.exiting) {
        rep.problem[sizeof rep.problem - 1] = '\0';
        out->outcome = QH_MISBEHAVED;
        snprintf(out->problem, sizeof out->problem,
                 "a write left over from the previous call: %s", rep.problem);
        worker_end(b, NULL, 0);
        return 1;
    }
    worker_end(b, how, sizeof how);
    if (pending)
        return 0; /* garbage between calls: a fresh worker runs this one */
    out->outcome = QH_DIED;
    snprintf(out->problem, sizeof out->problem,
             "the worker died after the previous call returned: %s", how);
    return 1;
}

/* The output the parent maps: a sealed memfd sized from the parent's own numbers, with a
 * page of room in front for the guard's canaries. */
static int make_output_map(size_t bytes, qh_invocation *out, int *memfd)
{
    size_t ps = page_size();
    size_t len = (bytes + 2 * ps - 1) / ps * ps;
    *memfd = memfd_create("qmm-y", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (*memfd < 0)
        return -1;
    /* sealed against shrinking, so the worker cannot make the parent's reads fault */
    if (ftruncate(*memfd, (off_t)len) != 0 ||
        fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        return -1;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, *memfd, 0);
    if (m == MAP_FAILED)
        return -1;
    out->y_map = m;
    out->y_map_len = len;
    return 0;
}

static int send_call(qh_backend *b, qmm_call *c, unsigned char fill, int memfd,
                     size_t map_len, double deadline)
{
    qmm_tensor *t[QH_CALL_MAX_TENSORS];
    const char *names[QH_CALL_MAX_TENSORS];
    int n = call_tensors(c, t, names);
    wire_request rq;
    memset(&rq, 0, sizeof rq);
    rq.magic = REQ_MAGIC;
    rq.kind = REQ_CALL;
    rq.seq = ++b->seq;
    rq.fill = fill;
    rq.op = c->op;
    rq.n_tensors = n;
    rq.map_len = map_len;
    if (c->op == QMM_OP_QLINEARMATMUL)
        rq.opset = c->u.qlinearmatmul.opset;
    if (c->op == QMM_OP_QORDEREDMATMUL) {
        rq.order_a = c->u.qorderedmatmul.order_a;
        rq.order_b = c->u.qorderedmatmul.order_b;
        rq.order_y = c->u.qorderedmatmul.order_y;
    }
    int w = send_request(b, &rq, memfd, deadline);
    for (int i = 0; w == W_READY && i < n; i++) {
        wire_tensor wt;
        memset(&wt, 0, sizeof wt);
        wt.dtype = t[i]->dtype;
        wt.rank = t[i]->rank;
        memcpy(wt.dims, t[i]->dims, sizeof wt.dims);
        wt.bytes = tensor_bytes(t[i]);
        w = send_all(b, &wt, sizeof wt, deadline);
        if (w == W_READY && i < n - 1 && wt.bytes)
            w = send_all(b, t[i]->data, (size_t)wt.bytes, deadline);
    }
    return w;
}

static int invoke_isolated(qh_backend *b, const qmm_call *call, double timeout,
                           unsigned char fill, qh_invocation *out)
{
    /* Our own copy: every byte count below comes from it, never from the worker. */
    qmm_call c = *call;
    qmm_tensor *y = qh_call_output(&c);
    if (!y) {
        snprintf(out->problem, sizeof out->problem, "the call has no operator");
        return -1;
    }
    out->y = *y;
    out->y.data = NULL;
    size_t ybytes = tensor_bytes(y);
    double deadline = timeout > 0 ? mono() + timeout : 0;
    if (b->worker_pid > 0 && between_calls(b, out))
        return 0;
    if (b->worker_pid <= 0) {
        /* a fresh worker re-opens the backend, within this call's time */
        wire_hello h;
        int w = worker_hello(b, deadline, timeout, &h, out->problem, sizeof out->problem);
        if (w == W_READY && !h.ok) {
            snprintf(out->problem, sizeof out->problem,
                     "qmm_backend_open failed in a restarted worker: %s", h.message);
            w = W_DIED;
        }
        if (w != W_READY) {
            out->outcome = outcome_of(w);
            return 0;
        }
    }
    int memfd = -1;
    if (ybytes && make_output_map(ybytes, out, &memfd) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output: %s",
                 strerror(errno));
        if (memfd >= 0)
            close(memfd);
        return -1;
    }
    int w = send_call(b, &c, fill, memfd, out->y_map_len, deadline);
    if (memfd >= 0)
        close(memfd);
    wire_reply rep;
    if (w == W_READY)
        w = recv_all(b, &rep, sizeof rep, deadline);
    if (w == W_READY && rep.magic == REP_MAGIC && rep.exiting) {
        /* the fault handler answered and the worker is exiting */
        rep.problem[sizeof rep.problem - 1] = '\0';
        out->outcome = QH_MISBEHAVED;
        snprintf(out->problem, sizeof out->problem, "%s%s",
                 rep.late && rep.seq != b->seq ? "a write left over from the previous call: "
                                               : "", rep.problem);
        worker_end(b, NULL, 0);
        return 0;
    }
    if (w == W_READY && (rep.magic != REP_MAGIC || rep.seq != b->seq ||
                         rep.offset >= page_size() ||
                         (ybytes && rep.offset + ybytes > out->y_map_len)))
        w = W_DIED; /* a garbled reply: treat the worker as broken */
    if (w != W_READY) {
        explain(b, w, "", timeout, out->problem, sizeof out->problem);
        out->outcome = outcome_of(w);
        return 0;
    }
    if (ybytes) {
        out->y.data = (unsigned char *)out->y_map + rep.offset;
    } else if (qh_alloc_tensor(&out->y, fill) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        return -1;
    }
    out->outcome = rep.outcome == QH_MISBEHAVED ? QH_MISBEHAVED : QH_RETURNED;
    out->code = (qmm_status_code)rep.code;
    qmm_status_set(&out->st, out->code, "%.*s", (int)sizeof rep.message - 1, rep.message);
    rep.problem[sizeof rep.problem - 1] = '\0';
    memcpy(out->problem, rep.problem, sizeof out->problem);
    return 0;
}

int qh_backend_finish(qh_backend *b, char *why, size_t n)
{
    if (n)
        why[0] = '\0';
    if (b->worker_pid <= 0)
        return 0;
    double t = b->iso.timeout_s;
    double deadline = t > 0 ? mono() + t : 0;
    wire_request rq;
    memset(&rq, 0, sizeof rq);
    rq.magic = REQ_MAGIC;
    rq.kind = REQ_CLOSE;
    rq.seq = ++b->seq;
    int w = send_all(b, &rq, sizeof rq, deadline);
    wire_reply rep;
    if (w == W_READY)
        w = recv_all(b, &rep, sizeof rep, deadline);
    if (w == W_READY && (rep.magic != REP_MAGIC || rep.seq != rq.seq || rep.exiting))
        w = W_DIED;
    if (w == W_READY) {
        worker_end(b, NULL, 0); /* and whatever children it left */
        return 0;
    }
    explain(b, w, "close", t, why, n);
    return outcome_of(w);
}

void qh_worker_stop(qh_backend *b)
{
    char why[256];
    qh_backend_finish(b, why, sizeof why);
    free(b->captured);
    b->captured = NULL;
    b->captured_len = b->captured_dropped = 0;
}

int qh_invoke(qh_backend *b, const qmm_call *call, const qh_invoke_opts *o, qh_invocation *out)
{
    memset(out, 0, sizeof *out);
    qmm_status_ok(&out->st);
    if (b->broken[0]) {
        snprintf(out->problem, sizeof out->problem, "%s", b->broken);
        take_output(b, out);
        return -1;
    }
    unsigned char fill = fill_of(o);
    if (b->isolated || (o && o->isolate)) {
        if (b->worker_pid <= 0)
            b->worker_fd = b->worker_out = -1;
        int rc = invoke_isolated(b, call, o ? o->timeout_s : b->iso.timeout_s, fill, out);
        take_output(b, out);
        return rc;
    }
    return invoke_here(b, call, fill, out);
}

void qh_invocation_free(qh_invocation *inv)
{
    if (inv->y_map)
        munmap(inv->y_map, inv->y_map_len);
    else
        free(inv->y.data);
    inv->y.data = NULL;
    inv->y_map = NULL;
    free(inv->output);
    inv->output = NULL;
}
