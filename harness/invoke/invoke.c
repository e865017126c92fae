/* harness/invoke/invoke.c — calling a backend, in process or in an isolated worker.
 *
 * Isolation: an isolated qh_backend has a worker process (harness/invoke/worker.c), which opens its
 * own instance of the backend (qmmcheck never loads an isolated plugin, and a backend's
 * threads do not survive fork anyway) and answers a hello. This file is the parent's side: it
 * sends one request at a time over a socket (harness/invoke/wire.h) — a call with every input tensor,
 * or "close" — and waits with a timeout. The output lives in a memfd that the parent creates
 * and sizes from its own data and that both map, so it exists once.
 *
 * Containment: the worker leads its own process group (a plugin's children die with it), its
 * stdout and stderr are a pipe the parent drains into the invocation, and it dies with
 * qmmcheck. The parent notices the worker's death by waitpid, not by EOF (a lingering child
 * may hold the socket), and every wait returns once qh_interrupted is set. A worker that dies
 * or hangs is killed with its group and the next call starts a fresh one.
 */
#define _GNU_SOURCE 1 /* memfd_create, MFD_*, F_ADD_SEALS */
#include "harness/invoke/invoke.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/io/case.h"
#include "harness/base/clean.h"
#include "harness/invoke/cpu.h"
#include "harness/invoke/exec.h"
#include "harness/invoke/guard.h"
#include "harness/invoke/strays.h"
#include "harness/base/tensor.h"
#include "harness/invoke/wire.h"
#include "harness/invoke/worker.h"

volatile sig_atomic_t qh_interrupted = 0;

#define DEFAULT_FILL 0xa5

static unsigned char fill_of(const qh_invoke_opts *o)
{
    return o && o->fill ? o->fill : DEFAULT_FILL;
}

/* ---- opening and closing ---------------------------------------------------------------- */

int qh_backend_open_isolated(const char *given, const qh_isolation *iso, qh_backend *out,
                             qh_error *err)
{
    char spec[sizeof out->spec]; /* a peer's name ("onednn") as its plugin's path */
    if (strlen(given) >= sizeof spec) {
        memset(out, 0, sizeof *out);
        qh_spec_too_long(err, strlen(given));
        return -1;
    }
    qh_spec_resolve_peer(given, spec, sizeof spec);
    char name[1024];
    snprintf(name, sizeof name, "%s", spec);
    char *colon = strchr(name, ':');
    if (colon)
        *colon = '\0';
    qh_open_printed_clear();
    int plugin = qh_spec_is_plugin(name) || qh_exec_is_spec(spec); /* isolated by default */
    int isolated = iso->isolate < 0 ? plugin : iso->isolate;
    if (qh_cpu_emulated(iso->cpu)) { /* only a worker can run under qemu (harness/invoke/cpu.h) */
        if (iso->isolate == 0) {
            snprintf(err->msg, sizeof err->msg, "--cpu %s runs the backend in an emulated "
                     "worker: it cannot be combined with --no-isolate", qh_cpu_name(iso->cpu));
            return -1;
        }
        if (qh_cpu_self_refused() && !qh_exec_is_spec(spec)) {
            snprintf(err->msg, sizeof err->msg, "--cpu %s: %s", qh_cpu_name(iso->cpu),
                     qh_cpu_self_refused());
            return -1;
        }
        isolated = 1;
    }
    if (!isolated) {
        if (qh_backend_open(spec, out, err) != 0)
            return -1;
        out->iso = *iso;
        if (plugin && !out->table.query)
            qh_warn_no_query(name);
        return 0;
    }
    memset(out, 0, sizeof *out);
    memcpy(out->spec, spec, strlen(spec) + 1); /* fits: spec is out->spec's size */
    out->is_plugin = plugin;
    out->isolated = 1;
    out->iso = *iso;
    if (qh_worker_open(out, err) != 0)
        return -1;
    if (plugin && !out->broken[0] && !out->has_query)
        qh_warn_no_query(name);
    return 0;
}

void qh_backend_close(qh_backend *b)
{
    qh_worker_stop(b);
    qh_backend_release(b);
}

/* ---- in process ----------------------------------------------------------------------- */

/* The call's inputs, copied: an in-process backend gets the copies, and a copy that differs
 * from its original afterwards is an input the backend wrote into (the isolated worker's
 * read-only pages catch that as it happens). Without them the expectation, computed from
 * the case's inputs after the backends ran, followed a backend that rewrote its inputs. */
typedef struct in_copies {
    int n;
    qmm_tensor *orig[QH_CALL_MAX_TENSORS];
    const char *names[QH_CALL_MAX_TENSORS];
    void *copy[QH_CALL_MAX_TENSORS];
    size_t bytes[QH_CALL_MAX_TENSORS];
} in_copies;

static void in_copies_free(in_copies *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->copy[i]);
}

/* Points c's inputs at copies of orig's; -1 when memory runs out. */
static int copy_inputs(qmm_call *orig, qmm_call *c, in_copies *k)
{
    memset(k, 0, sizeof *k);
    qmm_tensor *t[QH_CALL_MAX_TENSORS];
    const char *unused[QH_CALL_MAX_TENSORS];
    int n = qh_call_tensors(orig, k->orig, k->names) - 1; /* the output last */
    if (qh_call_tensors(c, t, unused) - 1 != n)
        return -1;
    for (int i = 0; i < n; i++, k->n = i) {
        k->bytes[i] = k->orig[i]->data ? qh_tensor_bytes(k->orig[i]) : 0;
        if (k->bytes[i] == 0)
            continue;
        if (!(k->copy[i] = malloc(k->bytes[i]))) {
            in_copies_free(k);
            return -1;
        }
        memcpy(k->copy[i], k->orig[i]->data, k->bytes[i]);
        t[i]->data = k->copy[i];
    }
    k->n = n;
    return 0;
}

/* The first input the backend wrote into, as an isolated call's guard reports it. */
static void check_inputs(const in_copies *k, qh_invocation *out)
{
    for (int i = 0; i < k->n; i++)
        if (k->copy[i] && memcmp(k->copy[i], k->orig[i]->data, k->bytes[i]) != 0) {
            out->outcome = QH_MISBEHAVED;
            out->cause = QH_CAUSE_GUARD;
            out->cause_arg = QH_GUARD_CAUSE(QH_GUARD_READ_ONLY, 1, i);
            snprintf(out->problem, sizeof out->problem, "wrote into input %s", k->names[i]);
            return;
        }
}

static int invoke_here(qh_backend *b, const qmm_call *call, unsigned char fill, int as_given,
                       qh_invocation *out)
{
    qmm_call orig = *call, c = *call;
    in_copies k = {0};
    if (!as_given && copy_inputs(&orig, &c, &k) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot copy the inputs");
        return -1;
    }
    qmm_call ask = c;
    if (qh_backend_ask(b, &ask, &out->st) == QMM_UNSUPPORTED) {
        out->code = QMM_UNSUPPORTED;
        check_inputs(&k, out);
        in_copies_free(&k);
        return 0;
    }
    qmm_status_ok(&out->st);
    qmm_tensor *y = qh_call_output(&c);
    out->y = *y;
    /* A poison fill makes an element the backend forgets to write unlikely to match. */
    if (qh_alloc_tensor(&out->y, fill) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        in_copies_free(&k);
        return -1;
    }
    y->data = out->y.data;
    out->code = qh_backend_call(b, &c, &out->st);
    out->outcome = qh_exec_take_event(b->be, out->problem, sizeof out->problem, &out->cause,
                                      &out->cause_arg);
    /* an exec: process's stderr, kept as a worker's output is (never passed through raw) */
    qh_exec_take_output(b->be, &out->output, &out->output_dropped);
    if (out->outcome == QH_RETURNED)
        check_inputs(&k, out);
    in_copies_free(&k);
    return 0;
}

double qh_mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int qh_poll_slice_ms(double deadline)
{
    int ms = 50; /* also the longest a death or a signal goes unnoticed */
    if (deadline > 0) {
        double left = deadline - qh_mono_seconds();
        if (left <= 0)
            return -1;
        if (left * 1000 < ms)
            ms = (int)(left * 1000) + 1;
    }
    return ms;
}

/* The deadline `timeout` seconds from now; 0 (none) when timeout is 0. */
static double deadline_after(double timeout)
{
    return timeout > 0 ? qh_mono_seconds() + timeout : 0;
}

/* W_GARBLED: the worker answered, but not in the protocol (a backend that wrote into the
 * worker's channel); it is killed like one that died, and says so */
enum { W_READY = 0, W_DIED = -1, W_HUNG = -2, W_INTR = -3, W_GARBLED = -4 };

/* The limit of a worker's start, or of an exec: process's start within a call, scaled for
 * the backend's CPU class; 0 for none (harness/invoke/cpu.h, qh_cpu_start_timeout). */
static double start_limit(const qh_backend *b)
{
    return qh_cpu_start_timeout(b->iso.cpu, b->iso.timeout_s, b->iso.start_s);
}

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
            if (qh_cpu_emulated(b->iso.cpu) && qh_cpu_qemu_out_of_memory(buf, (size_t)r))
                b->qemu_oom = 1; /* await ends the worker */
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
        int ms = qh_poll_slice_ms(deadline);
        if (ms < 0)
            return W_HUNG;
        struct pollfd p[2] = {{.fd = b->worker_fd, .events = events},
                              {.fd = b->worker_out, .events = POLLIN}};
        int np = b->worker_out >= 0 ? 2 : 1;
        int r = poll(p, (nfds_t)np, ms);
        if (r < 0 && errno != EINTR)
            return W_DIED;
        if (np == 2 && p[1].revents)
            drain(b);
        if (b->qemu_oom) /* qemu stops without dying when its own allocation fails; the
                          * worker is not reaped yet, so its group id is still its own */
            kill(-b->worker_pid, SIGKILL);
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
        qh_fd_msg m;
        qh_fd_msg_init(&m, (void *)rq, sizeof *rq);
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

const char *qh_cause_name(qh_cause c)
{
    static const char *const names[QH_CAUSE_COUNT] = {
        [QH_CAUSE_NONE] = "none",         [QH_CAUSE_SIGNAL] = "signal",
        [QH_CAUSE_EXITED] = "exited",     [QH_CAUSE_ENDED] = "ended",
        [QH_CAUSE_NO_ANSWER] = "no-answer", [QH_CAUSE_EMULATOR_OOM] = "emulator-oom",
        [QH_CAUSE_NOT_OPENED] = "not-opened", [QH_CAUSE_GUARD] = "guard",
        [QH_CAUSE_LEFT_OVER] = "left-over", [QH_CAUSE_DIED_BETWEEN] = "died-between",
        [QH_CAUSE_PROTOCOL] = "protocol", [QH_CAUSE_WRONG_OUTPUT] = "wrong-output",
    };
    return (unsigned)c < QH_CAUSE_COUNT ? names[c] : "?";
}

qh_cause qh_cause_of_status(int status, int32_t *arg)
{
    *arg = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return WIFSIGNALED(status) ? QH_CAUSE_SIGNAL : WIFEXITED(status) ? QH_CAUSE_EXITED
                                                                     : QH_CAUSE_ENDED;
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
    qh_strays_disown(b->worker_pid);
    qh_strays_reap_group(b->worker_pid); /* its group's orphans, adopted (strays.h) */
    drain(b);
    if (b->worker_out >= 0)
        close(b->worker_out);
    close(b->worker_fd);
    if (how)
        describe_end(status, how, size);
    b->end_cause = qh_cause_of_status(status, &b->end_arg);
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
        qh_worker_child(b, sv[1], op[1], parent);
    close(sv[1]);
    close(op[1]);
    if (pid < 0) {
        close(sv[0]);
        close(op[0]);
        return -1;
    }
    qh_strays_own(pid);
    setpgid(pid, pid); /* as the child does: whichever runs first */
    fcntl(op[0], F_SETFL, fcntl(op[0], F_GETFL) | O_NONBLOCK);
    b->worker_pid = pid;
    b->worker_fd = sv[0];
    b->worker_out = op[0];
    b->worker_dead = 0;
    b->qemu_oom = 0;
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
    /* which limit ended the wait: a start's (--start-timeout) or an emulated call's */
    char scaled[112] = "";
    int emulated = qh_cpu_emulated(b->iso.cpu);
    if (strcmp(what, "qmm_backend_open") == 0 && emulated && b->iso.start_s > 0)
        snprintf(scaled, sizeof scaled, " (a worker's start under emulation, CPU class %s: "
                 "--start-timeout x %d)", qh_cpu_name(b->iso.cpu), QH_CPU_TIMEOUT_FACTOR);
    else if (strcmp(what, "qmm_backend_open") == 0)
        snprintf(scaled, sizeof scaled, " (a worker's start%s%s; --start-timeout)",
                 emulated ? " under emulation, CPU class " : "",
                 emulated ? qh_cpu_name(b->iso.cpu) : "");
    else if (emulated)
        snprintf(scaled, sizeof scaled, " (--timeout x %d under emulation, CPU class %s)",
                 QH_CPU_TIMEOUT_FACTOR, qh_cpu_name(b->iso.cpu));
    b->why_cause = w == W_HUNG ? QH_CAUSE_NO_ANSWER : w == W_INTR ? QH_CAUSE_NONE
                   : w == W_GARBLED ? QH_CAUSE_ENDED
                   : b->qemu_oom ? QH_CAUSE_EMULATOR_OOM : b->end_cause;
    b->why_arg = b->why_cause == b->end_cause ? b->end_arg : 0;
    if (w == W_HUNG)
        snprintf(why, n, "%s%sno answer within %.3g s%s; worker killed", what, sep, timeout,
                 scaled);
    else if (w == W_INTR)
        snprintf(why, n, "%s%sinterrupted by signal %d; worker killed", what, sep,
                 (int)qh_interrupted);
    else if (w == W_GARBLED) /* before: "killed by SIGKILL", as if the backend had been */
        snprintf(why, n, "%s%sthe worker's answer was garbled (not the protocol's: something "
                 "in the worker wrote into its channel to qmmcheck); worker killed", what, sep);
    else if (b->qemu_oom)
        snprintf(why, n, "%s%sthe emulator (qemu-x86_64) ran out of memory: the backend's "
                 "allocations reached --memory-limit and left qemu none; worker killed", what,
                 sep);
    else
        snprintf(why, n, "%s%s%s", what, what[0] ? " crashed: " : "", how);
}

/* An emulated worker's data size came first (harness/invoke/wire.h, wire_base): sets its
 * RLIMIT_DATA from here, since qemu-user ignores the worker's own setrlimit, answers it, and
 * reads the hello's magic into *magic. */
static int set_emulated_limit(qh_backend *b, double deadline, uint32_t *magic)
{
    wire_base wb;
    int w = recv_all(b, (char *)&wb + sizeof wb.magic, sizeof wb - sizeof wb.magic, deadline);
    uint64_t limit = qh_worker_data_limit(b->iso.memory_limit, wb.data_in_use);
    struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
    if (w == W_READY && limit && prlimit(b->worker_pid, RLIMIT_DATA, &rl, NULL) != 0)
        w = W_DIED;
    char go = 1;
    if (w == W_READY)
        w = send_all(b, &go, 1, deadline);
    if (w == W_READY)
        w = recv_all(b, magic, sizeof *magic, deadline);
    return w;
}

/* Starts a worker and reads its hello. W_READY with *h (h->ok 0: the backend refused to
 * open, the worker is ended), or a failure with the worker ended and `why` set. */
static int worker_hello(qh_backend *b, double deadline, double timeout, wire_hello *h,
                        char *why, size_t n)
{
    if (worker_start(b) != 0) {
        snprintf(why, n, "cannot start a worker: %s", strerror(errno));
        b->why_cause = QH_CAUSE_ENDED;
        b->why_arg = 0;
        return W_DIED;
    }
    int w = recv_all(b, h, sizeof h->magic, deadline);
    if (w == W_READY && h->magic == BASE_MAGIC && qh_cpu_emulated(b->iso.cpu) &&
        !qh_exec_is_spec(b->spec))
        w = set_emulated_limit(b, deadline, &h->magic);
    if (w == W_READY)
        w = recv_all(b, (char *)h + sizeof h->magic, sizeof *h - sizeof h->magic, deadline);
    if (w == W_READY && h->magic != HELLO_MAGIC)
        w = W_GARBLED;
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
    double t = start_limit(b);
    wire_hello h;
    int w = worker_hello(b, deadline_after(t), t, &h, b->broken, sizeof b->broken);
    if (w != W_READY) {
        b->broken_how = outcome_of(w);
        return 0; /* broken: every call says why */
    }
    if (!h.ok) {
        /* with what the worker printed (an exec: process's stderr: a missing module, a
         * traceback): its last line, and its last lines for qh_open_printed */
        snprintf(err->msg, sizeof err->msg, "%s", h.message);
        qh_append_printed(err->msg, sizeof err->msg, 0, b->captured, b->captured_len,
                          b->captured_dropped);
        free(b->captured); /* a refused open is never closed: nothing else frees it */
        b->captured = NULL;
        b->captured_len = b->captured_dropped = 0;
        b->refused = h.refused != 0;
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
    if (pending && recv_all(b, &rep, sizeof rep, qh_mono_seconds() + 1) == W_READY &&
        rep.magic == REP_MAGIC && rep.exiting) {
        rep.problem[sizeof rep.problem - 1] = '\0';
        out->outcome = QH_MISBEHAVED;
        out->cause = QH_CAUSE_LEFT_OVER;
        out->cause_arg = rep.cause_arg;
        snprintf(out->problem, sizeof out->problem,
                 "a write left over from the previous call: %s", rep.problem);
        worker_end(b, NULL, 0);
        return 1;
    }
    worker_end(b, how, sizeof how);
    if (pending)
        return 0; /* garbage between calls: a fresh worker runs this one */
    out->outcome = QH_DIED;
    out->cause = QH_CAUSE_DIED_BETWEEN;
    snprintf(out->problem, sizeof out->problem,
             "the worker died after the previous call returned: %s", how);
    return 1;
}

/* The output the parent maps: a sealed memfd sized from the parent's own numbers, with a
 * page of room in front for the guard's canaries. */
static int make_output_map(size_t bytes, qh_invocation *out, int *memfd)
{
    size_t ps = qh_page_size();
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
    int n = qh_call_tensors(c, t, names);
    wire_request rq;
    memset(&rq, 0, sizeof rq);
    rq.magic = REQ_MAGIC;
    rq.kind = REQ_CALL;
    rq.seq = ++b->seq;
    rq.fill = fill;
    qh_wire_put_scalars(c, &rq);
    rq.n_tensors = n;
    rq.map_len = map_len;
    int w = send_request(b, &rq, memfd, deadline);
    for (int i = 0; w == W_READY && i < n; i++) {
        wire_tensor wt;
        memset(&wt, 0, sizeof wt);
        wt.dtype = t[i]->dtype;
        wt.rank = t[i]->rank;
        memcpy(wt.dims, t[i]->dims, sizeof wt.dims);
        wt.bytes = qh_tensor_bytes(t[i]);
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
    size_t ybytes = qh_tensor_bytes(y);
    double deadline = deadline_after(timeout);
    if (b->worker_pid > 0 && between_calls(b, out))
        return 0;
    if (b->worker_pid <= 0) {
        /* a fresh worker re-opens the backend within a start's time, and then the call has
         * its own (harness/invoke/cpu.h, qh_cpu_start_timeout) */
        wire_hello h;
        double start = start_limit(b);
        int w = worker_hello(b, deadline_after(start), start, &h, out->problem,
                             sizeof out->problem);
        deadline = deadline_after(timeout);
        int refused = w == W_READY && !h.ok;
        if (refused) {
            snprintf(out->problem, sizeof out->problem,
                     "qmm_backend_open failed in a restarted worker: %s", h.message);
            w = W_DIED;
        }
        if (w != W_READY) {
            out->outcome = outcome_of(w);
            out->cause = refused ? QH_CAUSE_NOT_OPENED : (qh_cause)b->why_cause;
            out->cause_arg = refused ? 0 : b->why_arg;
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
    /* the exec: process is starting afresh within the call: a start's time more (wire.h) */
    for (int notices = 0; w == W_READY && rep.magic == START_MAGIC && rep.seq == b->seq &&
                          notices < QH_WIRE_MAX_STARTS; notices++) {
        double start = start_limit(b);
        timeout = start > 0 && timeout > 0 ? start + timeout : 0;
        deadline = deadline_after(timeout);
        w = recv_all(b, &rep, sizeof rep, deadline);
    }
    if (w == W_READY && rep.magic == REP_MAGIC && rep.exiting) {
        /* the fault handler answered and the worker is exiting */
        rep.problem[sizeof rep.problem - 1] = '\0';
        out->outcome = QH_MISBEHAVED;
        out->cause = rep.late && rep.seq != b->seq ? QH_CAUSE_LEFT_OVER : QH_CAUSE_GUARD;
        out->cause_arg = rep.cause_arg;
        snprintf(out->problem, sizeof out->problem, "%s%s",
                 rep.late && rep.seq != b->seq ? "a write left over from the previous call: "
                                               : "", rep.problem);
        worker_end(b, NULL, 0);
        return 0;
    }
    if (w == W_READY && (rep.magic != REP_MAGIC || rep.seq != b->seq ||
                         rep.offset >= qh_page_size() ||
                         (ybytes && rep.offset + ybytes > out->y_map_len)))
        w = W_GARBLED; /* treat the worker as broken */
    if (w != W_READY) {
        explain(b, w, "", timeout, out->problem, sizeof out->problem);
        out->outcome = outcome_of(w);
        out->cause = (qh_cause)b->why_cause;
        out->cause_arg = b->why_arg;
        return 0;
    }
    if (ybytes) {
        out->y.data = (unsigned char *)out->y_map + rep.offset;
    } else if (qh_alloc_tensor(&out->y, fill) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        return -1;
    }
    /* what a worker may report of a call that returned (an exec: process's death too) */
    out->outcome = rep.outcome == QH_MISBEHAVED || rep.outcome == QH_DIED ||
                   rep.outcome == QH_MALFORMED ? (qh_invoke_outcome)rep.outcome : QH_RETURNED;
    if (out->outcome != QH_RETURNED) { /* the worker's word, as its sentence is: bounded */
        out->cause = rep.cause > QH_CAUSE_NONE && rep.cause < QH_CAUSE_COUNT ? (qh_cause)rep.cause
                                                                           : QH_CAUSE_ENDED;
        out->cause_arg = rep.cause_arg;
    }
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
    if (b->worker_pid <= 0) /* in process, an exec: process's close is reported too */
        return b->isolated ? 0 : (int)qh_exec_finish(b->be, why, n);
    double t = qh_cpu_timeout(b->iso.cpu, b->iso.timeout_s);
    double deadline = deadline_after(t);
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
        if (rep.outcome != QH_DIED && rep.outcome != QH_HUNG && rep.outcome != QH_MALFORMED)
            return 0;
        /* an exec: process's close that went wrong in the worker (qh_exec_finish) */
        snprintf(why, n, "%.*s", (int)sizeof rep.problem - 1, rep.problem);
        return rep.outcome;
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
        int rc = invoke_isolated(b, call,
                                 qh_cpu_timeout(b->iso.cpu, o ? o->timeout_s : b->iso.timeout_s),
                                 fill, out);
        take_output(b, out);
        return rc;
    }
    return invoke_here(b, call, fill, o && o->inputs_as_given, out);
}

int qh_invocation_detach(qh_invocation *inv)
{
    if (!inv->y_map || !inv->y.data)
        return 0;
    size_t bytes = qh_tensor_bytes(&inv->y);
    void *own = malloc(bytes ? bytes : 1);
    if (!own)
        return -1;
    memcpy(own, inv->y.data, bytes);
    munmap(inv->y_map, inv->y_map_len);
    inv->y_map = NULL;
    inv->y.data = own;
    return 0;
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

void qh_append_call_printed(char *msg, size_t size, const qh_invocation *inv)
{
    qh_append_printed(msg, size, 0, inv->output ? inv->output : "",
                      inv->output ? strlen(inv->output) : 0, inv->output_dropped);
}

void qh_append_open_printed(char *msg, size_t size, const qh_backend *b)
{
    qh_append_printed(msg, size, 0, b->captured ? b->captured : "",
                      b->captured ? b->captured_len : 0, b->captured_dropped);
}

void qh_backend_why_broken(const qh_backend *b, char *why, size_t size)
{
    qh_clean_into(why, size, b->broken, strnlen(b->broken, sizeof b->broken), 0);
    qh_append_open_printed(why, size, b);
}
