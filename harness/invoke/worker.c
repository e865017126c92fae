/* harness/invoke/worker.c — the isolated worker: the process that runs a backend for qmmcheck.
 *
 * Forked by harness/invoke/invoke.c, it leads its own process group, dies with qmmcheck
 * (PR_SET_PDEATHSIG), writes its stdout and stderr into the parent's capture pipe and runs
 * under a data-size limit. It opens its own instance of the backend and answers a hello, then
 * serves one request at a time (harness/invoke/wire.h): it builds the call from the wire, asks the
 * capability query on a copy, places the inputs in guarded read-only memory and the output in
 * the parent's memfd inside a guarded region (harness/invoke/guard.h), runs a fresh copy of the call,
 * seals the output and answers. Its I/O blocks: it has nothing else to do.
 */
#define _GNU_SOURCE 1 /* close_range */
#include "harness/invoke/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/io/cpuclass.h"
#include "harness/invoke/cpu.h"
#include "harness/invoke/exec.h"
#include "harness/invoke/guard.h"
#include "harness/invoke/invoke.h"
#include "harness/invoke/wire.h"

/* Sends (`sending`) or reads exactly n bytes on fd; -1 at EOF or on an error. */
static int transfer_full(int fd, void *p, size_t n, int sending)
{
    char *s = p;
    while (n) {
        ssize_t r = sending ? send(fd, s, n, MSG_NOSIGNAL) : read(fd, s, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        s += r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
    return transfer_full(fd, (void *)p, n, 1);
}

static int read_full(int fd, void *p, size_t n)
{
    return transfer_full(fd, p, n, 0);
}

/* The regions of the call in progress, its number and whether it is still running (the
 * fault handler reads the last two). */
static qh_guarded w_regions[QH_CALL_MAX_TENSORS];
static volatile sig_atomic_t w_in_call;
static volatile uint32_t w_seq;

static void report_fault(int fd, int32_t cause_arg, const char *sentence)
{
    /* async-signal-safe: no stdio, only memcpy and send */
    wire_reply r = {.magic = REP_MAGIC, .seq = w_seq, .outcome = QH_MISBEHAVED,
                    .cause = QH_CAUSE_GUARD, .cause_arg = cause_arg, .code = QMM_INTERNAL,
                    .exiting = 1, .late = !w_in_call};
    size_t n = strlen(sentence);
    if (n >= sizeof r.problem)
        n = sizeof r.problem - 1;
    memcpy(r.problem, sentence, n);
    (void)write_full(fd, &r, sizeof r);
}

/* qh_exec_on_restart's hook: tells the parent, before the call's reply, that the exec:
 * process is starting afresh within the call (START_MAGIC, wire.h) */
static void notify_restart(void *ctx)
{
    wire_reply r;
    memset(&r, 0, sizeof r);
    r.magic = START_MAGIC;
    r.seq = w_seq;
    (void)write_full(*(int *)ctx, &r, sizeof r);
}

/* The request header, and the memfd that comes with it. */
static int recv_request(int fd, wire_request *rq, int *memfd)
{
    *memfd = -1;
    qh_fd_msg m;
    qh_fd_msg_init(&m, rq, sizeof *rq);
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
    size_t ps = qh_page_size();
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
    qh_wire_get_scalars(rq, call);
    qmm_tensor *t[QH_CALL_MAX_TENSORS];
    const char *names[QH_CALL_MAX_TENSORS];
    int n = qh_call_tensors(call, t, names);
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
        rep.outcome = qh_exec_finish(b->be, rep.problem, sizeof rep.problem);
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
    if (qh_backend_ask(b, &call, &st) == QMM_UNSUPPORTED) {
        rep.code = QMM_UNSUPPORTED;
    } else {
        qmm_call run = call; /* a fresh copy: the query may have changed its own */
        qmm_status_ok(&st);
        rep.code = qh_backend_call(b, &run, &st);
        qh_guard_seal(w_regions, n); /* a write from now on is a write after return */
        size_t hit = qh_guard_canaries_hit(&w_regions[n - 1]);
        if (hit) {
            rep.outcome = QH_MISBEHAVED;
            rep.cause = QH_CAUSE_GUARD;
            rep.cause_arg = QH_GUARD_CAUSE(QH_GUARD_BEFORE_START, 1, n - 1);
            snprintf(rep.problem, sizeof rep.problem, "wrote %zu byte%s before the start of y",
                     hit, hit == 1 ? "" : "s");
        }
    }
    qh_cause cause = QH_CAUSE_NONE;
    qh_invoke_outcome ev = qh_exec_take_event(b->be, rep.problem, sizeof rep.problem, &cause,
                                              &rep.cause_arg);
    if (ev != QH_RETURNED) {
        rep.outcome = ev;
        rep.cause = cause;
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
        h.refused = b.refused;
        (void)write_full(fd, &h, sizeof h);
        _exit(3);
    }
    h.ok = 1;
    h.has_query = b.table.query != NULL;
    static int parent_fd;
    parent_fd = fd;
    qh_exec_on_restart(b.be, notify_restart, &parent_fd);
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

/* The worker's data size now (VmData), before the backend is opened: qmmcheck's own
 * libraries (cuBLASLt's data alone is large) do not count against the backend's limit. Under
 * qemu-user this is the qemu process's (its translation cache too), which is what the kernel
 * counts. */
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

uint64_t qh_worker_data_limit(uint64_t limit, uint64_t base)
{
#ifdef QH_NO_MEMORY_LIMIT
    /* AddressSanitizer's shadow memory is a private mapping of terabytes: any limit would
     * fail the worker's first allocation, so the limit is not applied in such builds. */
    (void)limit;
    (void)base;
    return 0;
#else
    if (limit == QH_MEMORY_LIMIT_DEFAULT) {
        long pages = sysconf(_SC_PHYS_PAGES);
        limit = pages > 0 ? (uint64_t)pages * qh_page_size() / 2 : 0;
    }
    if (limit == 0)
        return 0;
    return limit > UINT64_MAX - base ? UINT64_MAX : limit + base;
#endif
}

/* The data-size limit: `limit` bytes beyond what the worker uses before opening the backend,
 * and `extra` more (an emulated exec: process's qemu). RLIMIT_DATA rather than RLIMIT_AS: it
 * counts the backend's heap (brk and private writable mappings, so large mallocs too) but not
 * the shared output the harness sized, nor address space merely reserved (guard zones, thread
 * stacks, code). */
static void apply_memory_limit(uint64_t limit, uint64_t extra)
{
    uint64_t total = qh_worker_data_limit(limit, data_in_use());
    if (total == 0)
        return;
    total = total > UINT64_MAX - extra ? UINT64_MAX : total + extra;
    struct rlimit rl = {(rlim_t)total, (rlim_t)total};
    (void)setrlimit(RLIMIT_DATA, &rl);
}

void qh_worker_emulated(const char *spec)
{
    /* qemu-user ignores a guest's setrlimit(RLIMIT_DATA): the parent sets it with prlimit */
    wire_base wb = {BASE_MAGIC, 0, data_in_use()};
    char go;
    setvbuf(stdout, NULL, _IONBF, 0);
    if (write_full(3, &wb, sizeof wb) != 0 || read_full(3, &go, 1) != 0)
        _exit(0);
    worker_main(spec, 3);
    _exit(0); /* not reached */
}

void qh_worker_child(const qh_backend *b, int sock, int out_w, pid_t parent)
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
    qh_exec_pass_stderr(); /* an exec: process's stderr is this capture already */
    if (qh_cpu_emulated(b->iso.cpu)) {
        /* qemu-user writes a crashed guest's core file into the working directory */
        struct rlimit none = {0, 0};
        (void)setrlimit(RLIMIT_CORE, &none);
        /* what a tool inside asks instead of /proc/cpuinfo, which qemu leaves the host's */
        setenv(QH_CPU_CLASS_ENV, qh_cpu_name(b->iso.cpu), 1);
    }
    if (qh_cpu_emulated(b->iso.cpu) && !qh_exec_is_spec(b->spec)) {
        /* the backend runs in this executable under qemu (harness/invoke/cpu.h) */
        wire_hello h;
        memset(&h, 0, sizeof h);
        h.magic = HELLO_MAGIC;
        qh_cpu_exec_worker(b->iso.cpu, b->spec, h.message, sizeof h.message);
        (void)write_full(3, &h, sizeof h);
        _exit(3);
    }
    qh_cpu_worker_class = b->iso.cpu; /* an exec: process starts under it (exec.c) */
    apply_memory_limit(b->iso.memory_limit,
                       qh_cpu_emulated(b->iso.cpu) ? QH_CPU_QEMU_ALLOWANCE : 0);
    worker_main(b->spec, 3);
    _exit(0); /* not reached: worker_main always exits */
}
