/* harness/invoke/exec.c — the `exec:` backend: a qmm_backend table whose calls are answered by a
 * long-lived process over docs/exec-protocol.md (harness/invoke/exec.h).
 *
 * The process's stdin and stdout are one end of a socketpair (sends never raise SIGPIPE); we
 * keep a copy of its end, so that when it dies what it left unread of a request can still be
 * counted. Its stderr is a pipe kept for the caller (qh_exec_take_output), or, in an isolated
 * worker, the worker's own capture; it dies with whoever started it (PR_SET_PDEATHSIG).
 *
 * Every request carries a fresh random id that the reply must repeat, and bytes waiting
 * before a request is sent came unasked: either is a protocol error, so an answer is never
 * taken for another request's. Every frame's length is checked against a limit before a
 * byte is allocated. A process that ends mid-call, or whose answer breaks the protocol, is
 * recorded as an event for the caller (qh_exec_take_event) and replaced by a fresh one on the
 * next query or call: after garbage the stream cannot be trusted to resync. A process that
 * ended after an answer is replaced before the next request, and a request that a process
 * died without reading a byte of is resent once to a fresh one.
 *
 * Waits notice qh_interrupted (SIGINT, SIGTERM) within 50 ms. A call's hang is not timed
 * here: the worker's --timeout kills the worker's process group, this process with it, and a
 * fresh worker starts a fresh process. Only close is bounded here (2 s to answer).
 */
#define _GNU_SOURCE 1 /* close_range, pipe2, strsignal, getrandom */
#include "harness/invoke/exec.h"
#include "harness/invoke/strays.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/io/onnx_io.h"
#include "harness/invoke/cpu.h"
#include "harness/invoke/exec_proto.h"
#include "ops/qmm_ops.h"

#define EXEC_MAX_WORDS 64
#define EXEC_SPEC_MAX 1024
#define EXEC_PROBLEM_MAX 256

typedef struct exec_state {
    qmm_backend table;
    char *argv[EXEC_MAX_WORDS + 1];
    char words[EXEC_SPEC_MAX];   /* argv's strings, NUL-separated */
    char options[EXEC_SPEC_MAX];
    char name[128], description[256];
    pid_t pid;                   /* 0 when no process runs (or it ended and was reaped) */
    char ended[128];             /* how it ended, once reaped */
    qh_cause end_cause;          /* the same as a code (QH_CAUSE_NONE: not reaped yet) */
    int32_t end_arg;
    int fd;                      /* our end of its stdin/stdout; -1 when no process */
    void (*on_restart)(void *);  /* qh_exec_on_restart's: before a fresh process's start */
    void *on_restart_ctx;
    int peer;                    /* its end, kept open: what it left unread of a request */
    int err;                     /* its stderr (read end); -1 when passed (in a worker) */
    char *cap;                   /* its stderr since the last qh_exec_take_output */
    size_t cap_len, cap_dropped;
    size_t sent, got;            /* bytes of this exchange's request sent, of its answer read */
    pthread_mutex_t mu;          /* one exchange at a time */
    qh_invoke_outcome event;     /* what the last query or call left for the caller */
    int query_event;             /* the event came from the query just before this call */
    qh_cause cause;              /* the event's cause and its argument */
    int32_t cause_arg;
    char problem[EXEC_PROBLEM_MAX];
} exec_state;

static qmm_status_code exec_query(const qmm_backend *self, const qmm_call *call,
                                  qmm_status *st);

int qh_exec_is_spec(const char *spec)
{
    return strncmp(spec, "exec", 4) == 0 && (spec[4] == ':' || spec[4] == ',');
}

/* ---- the command line ----------------------------------------------------------------- */

/* Splits `cmd` into words in s->words / s->argv: blanks separate, '...' is literal, "..."
 * takes \" and \\ escapes, a backslash outside quotes escapes the next character. */
static int split_words(exec_state *s, const char *cmd, char *why, size_t n)
{
    char *w = s->words;
    char *end = s->words + sizeof s->words - 1;
    int argc = 0;
    const char *p = cmd;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (argc == EXEC_MAX_WORDS) {
            snprintf(why, n, "more than %d words in the command", EXEC_MAX_WORDS);
            return -1;
        }
        s->argv[argc++] = w;
        char quote = 0;
        for (; *p && (quote || (*p != ' ' && *p != '\t')); p++) {
            char c = *p;
            if (quote == '\'' && c == '\'') {
                quote = 0;
                continue;
            }
            if (!quote && (c == '\'' || c == '"')) {
                quote = c;
                continue;
            }
            if (quote == '"' && c == '"') {
                quote = 0;
                continue;
            }
            if (c == '\\' && quote != '\'' && p[1] &&
                (!quote || p[1] == '"' || p[1] == '\\'))
                c = *++p;
            if (w == end) {
                snprintf(why, n, "command too long");
                return -1;
            }
            *w++ = c;
        }
        if (quote) {
            snprintf(why, n, "unterminated %c quote in the command", quote);
            return -1;
        }
        *w++ = '\0';
    }
    s->argv[argc] = NULL;
    if (argc == 0) {
        snprintf(why, n, "no command: write exec:PROGRAM [ARGS...]");
        return -1;
    }
    return 0;
}

/* ---- the process ------------------------------------------------------------------------ */

/* Set in an isolated worker: its stderr is already the capture the parent cleans, so a
 * process it starts writes there directly (and what it wrote before a hang is not lost). */
static int stderr_passed;

void qh_exec_pass_stderr(void)
{
    stderr_passed = 1;
}

static void describe_status(int status, char *buf, size_t size)
{
    if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, size, "ended");
}

/* Keeps what the process writes on its stderr: the first QH_OUTPUT_KEEP bytes since the
 * last qh_exec_take_output, the rest counted. Reads without blocking, boundedly. */
static void drain_stderr(exec_state *s)
{
    char buf[4096];
    for (int i = 0; i < 256 && s->err >= 0; i++) {
        ssize_t r = read(s->err, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;
        if (r <= 0) {
            close(s->err); /* every writer is gone */
            s->err = -1;
        } else {
            if (!s->cap)
                s->cap = malloc(QH_OUTPUT_KEEP + 1);
            size_t room = s->cap ? QH_OUTPUT_KEEP - s->cap_len : 0;
            size_t k = (size_t)r < room ? (size_t)r : room;
            if (k)
                memcpy(s->cap + s->cap_len, buf, k);
            s->cap_len += k;
            s->cap_dropped += (size_t)r - k;
        }
    }
}

/* Kills and reaps the process (if it still runs) and closes its channels. */
static void stop_process(exec_state *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        qh_strays_disown(s->pid);
    }
    drain_stderr(s);
    if (s->err >= 0)
        close(s->err);
    if (s->fd >= 0)
        close(s->fd);
    if (s->peer >= 0)
        close(s->peer);
    s->pid = 0;
    s->fd = s->peer = s->err = -1;
}

/* Has the process ended? Reaps it (its channels stay open: what it sent is still to be
 * read) and says how, into `how`; after that, says the same again. */
static int process_ended(exec_state *s, char *how, size_t n)
{
    if (s->pid > 0) {
        int status;
        if (waitpid(s->pid, &status, WNOHANG) != s->pid)
            return 0;
        qh_strays_disown(s->pid);
        describe_status(status, s->ended, sizeof s->ended);
        s->end_cause = qh_cause_of_status(status, &s->end_arg);
        s->pid = 0;
    }
    snprintf(how, n, "%s", s->ended);
    return 1;
}

/* Bytes waiting to be read on `fd` (our end: unasked ones; the process's end: the part of a
 * request it has not read). */
static int queued(int fd)
{
    int k = 0;
    return fd >= 0 && ioctl(fd, FIONREAD, &k) == 0 ? k : 0;
}

static int spawn(exec_state *s, char *why, size_t n)
{
    /* under an emulated CPU class the command runs under qemu (harness/invoke/cpu.h) */
    char *wrapped[EXEC_MAX_WORDS + 24], store[8192];
    int wrap = qh_cpu_wrap_command(s->argv, wrapped, sizeof wrapped / sizeof wrapped[0], store,
                                   sizeof store);
    if (wrap < 0) {
        snprintf(why, n, "cannot run %s: %s", s->argv[0], strerror(errno));
        return -1;
    }
    char *const *run = wrap > 0 ? wrapped : s->argv;
    int sv[2], ep[2], er[2] = {-1, -1}, e;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        goto fail;
    if (pipe2(ep, O_CLOEXEC) != 0) {
        e = errno;
        close(sv[0]);
        close(sv[1]);
        errno = e;
        goto fail;
    }
    if (!stderr_passed && pipe2(er, O_CLOEXEC) != 0) {
        e = errno;
        close(sv[0]);
        close(sv[1]);
        close(ep[0]);
        close(ep[1]);
        errno = e;
        goto fail;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* only async-signal-safe calls until exec */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(sv[1], 0);
        dup2(sv[1], 1);
        if (er[1] >= 0)
            dup2(er[1], 2);
        if (ep[1] != 3)
            dup2(ep[1], 3);
        fcntl(3, F_SETFD, FD_CLOEXEC);
        close_range(4, ~0u, 0);
        signal(SIGPIPE, SIG_DFL);
        execvp(run[0], run);
        e = errno;
        (void)!write(3, &e, sizeof e);
        _exit(127);
    }
    close(ep[1]);
    if (er[1] >= 0)
        close(er[1]);
    if (pid < 0) {
        e = errno;
        close(sv[0]);
        close(sv[1]);
        close(ep[0]);
        if (er[0] >= 0)
            close(er[0]);
        errno = e;
        goto fail;
    }
    e = 0;
    ssize_t r;
    while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    s->pid = pid;
    qh_strays_own(pid);
    s->end_cause = QH_CAUSE_NONE; /* the last process's end is not this one's */
    s->fd = sv[0];
    s->peer = sv[1]; /* kept: the socket outlives the process, so what of a request it never
                      * read can still be counted (queued) */
    s->err = er[0];
    if (s->err >= 0)
        fcntl(s->err, F_SETFL, fcntl(s->err, F_GETFL) | O_NONBLOCK);
    snprintf(s->ended, sizeof s->ended, "ended");
    if (r == (ssize_t)sizeof e) {
        stop_process(s);
        snprintf(why, n, "cannot run %s: %s", s->argv[0], strerror(e));
        return -1;
    }
    return 0;
fail:
    snprintf(why, n, "cannot start %s: %s", s->argv[0], strerror(errno));
    return -1;
}

/* ---- frames ----------------------------------------------------------------------------- */

/* How an exchange ended: XC_UNREAD is a death before the process read a byte of the
 * request (it may be resent to a fresh process); XC_HUNG, past the deadline (close only);
 * XC_REFUSED, a hello answered with a status other than OK (start only). */
enum { XC_OK = 0, XC_DIED = -1, XC_MALFORMED = -2, XC_UNREAD = -3, XC_HUNG = -4, XC_INTR = -5,
       XC_REFUSED = -6 };

/* Waits until our end is ready for `events`, keeping the process's stderr meanwhile.
 * XC_OK; XC_DIED (the process ended and nothing more is to be read: `how` says how),
 * XC_HUNG (deadline > 0 passed) or XC_INTR (qh_interrupted: SIGINT or SIGTERM). */
static int await(exec_state *s, short events, double deadline, char *how, size_t n)
{
    for (;;) {
        if (qh_interrupted)
            return XC_INTR;
        int ms = qh_poll_slice_ms(deadline);
        if (ms < 0)
            return XC_HUNG;
        struct pollfd p[2] = {{.fd = s->fd, .events = events}, {.fd = s->err, .events = POLLIN}};
        nfds_t np = s->err >= 0 ? 2 : 1;
        int r = poll(p, np, ms);
        if (r < 0 && errno != EINTR) {
            snprintf(how, n, "could not be waited for (%s)", strerror(errno));
            return XC_DIED;
        }
        if (np == 2 && r > 0 && p[1].revents)
            drain_stderr(s);
        if (r > 0 && p[0].revents)
            return XC_OK;
        /* no EOF comes while we hold its end of the socket: its death is seen here */
        if (process_ended(s, how, n))
            return events == POLLIN && queued(s->fd) > 0 ? XC_OK : XC_DIED;
    }
}

/* Sends the iovecs whole, counting s->sent. */
static int send_all(exec_state *s, struct iovec *iov, int cnt, char *how, size_t n)
{
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
    for (;;) {
        while (mh.msg_iovlen && mh.msg_iov->iov_len == 0) {
            mh.msg_iov++;
            mh.msg_iovlen--;
        }
        if (!mh.msg_iovlen)
            return XC_OK;
        ssize_t w = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = await(s, POLLOUT, 0, how, n);
            if (r != XC_OK)
                return r;
            continue;
        }
        if (w < 0) {
            snprintf(how, n, "stopped reading (%s)", strerror(errno));
            return XC_DIED;
        }
        s->sent += (size_t)w;
        for (size_t i = 0; i < mh.msg_iovlen && w > 0; i++) {
            size_t k = (size_t)w < mh.msg_iov[i].iov_len ? (size_t)w : mh.msg_iov[i].iov_len;
            mh.msg_iov[i].iov_base = (char *)mh.msg_iov[i].iov_base + k;
            mh.msg_iov[i].iov_len -= k;
            w -= (ssize_t)k;
        }
    }
}

/* Reads exactly len bytes, counting s->got. */
static int recv_exact(exec_state *s, uint8_t *p, size_t len, double deadline, char *how,
                      size_t n)
{
    while (len) {
        ssize_t got = recv(s->fd, p, len, MSG_DONTWAIT);
        if (got > 0) {
            p += got;
            len -= (size_t)got;
            s->got += (size_t)got;
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = await(s, POLLIN, deadline, how, n);
            if (r != XC_OK)
                return r;
            continue;
        }
        snprintf(how, n, "%s", got == 0 ? "closed its stdout" : strerror(errno));
        return XC_DIED;
    }
    return XC_OK;
}

/* One frame of at most `limit` bytes into *buf (malloc'd). */
static int recv_frame(exec_state *s, uint32_t limit, const char *what, double deadline,
                      uint8_t **buf, size_t *len, char *why, size_t n)
{
    *buf = NULL;
    uint8_t head[4];
    int r = recv_exact(s, head, 4, deadline, why, n);
    if (r != XC_OK)
        return r;
    uint32_t k = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
                 (uint32_t)head[3] << 24;
    if (k > limit) {
        snprintf(why, n, "frame length: %u bytes for the %s answer, more than its limit of %u",
                 k, what, limit);
        return XC_MALFORMED;
    }
    *buf = malloc(k ? k : 1);
    if (!*buf) {
        snprintf(why, n, "frame length: cannot allocate %u bytes", k);
        return XC_MALFORMED;
    }
    *len = k;
    r = recv_exact(s, *buf, k, deadline, why, n);
    if (r != XC_OK) {
        free(*buf);
        *buf = NULL;
    }
    return r;
}

/* A request id nobody can guess before the request is sent (never 0, which is a reply
 * without one). */
static int draw_id(uint64_t *id, char *why, size_t n)
{
    do {
        ssize_t r = getrandom(id, sizeof *id, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != (ssize_t)sizeof *id) {
            snprintf(why, n, "cannot draw a request id: %s", r < 0 ? strerror(errno) : "short");
            return -1;
        }
    } while (*id == 0);
    return 0;
}

/* Says how an exchange that did not end XC_OK ended, into `why`, from `how` (the process's
 * end, or what was wrong with its answer). */
static void explain(exec_state *s, int r, const char *what, double wait, const char *how,
                    char *why, size_t n)
{
    const char *prog = s->argv[0];
    if (r == XC_UNREAD)
        snprintf(why, n, "the backend process (%s) %s before reading the %s request", prog, how,
                 what);
    else if (r == XC_DIED && s->got > 0)
        snprintf(why, n, "the backend process (%s) %s in the middle of its %s answer", prog,
                 how, what);
    else if (r == XC_DIED)
        snprintf(why, n, "the backend process (%s) %s before answering the %s", prog, how,
                 what);
    else if (r == XC_HUNG)
        snprintf(why, n, "no answer to the %s request within %.3g s; the backend process (%s) "
                 "was killed", what, wait, prog);
    else if (r == XC_INTR)
        snprintf(why, n, "interrupted by signal %d; the backend process (%s) was killed",
                 (int)qh_interrupted, prog);
    else
        snprintf(why, n, "%s", how);
}

/* Sends the request in `b` with a fresh id and reads and decodes the answer, which must
 * repeat the id and the kind. Bytes waiting before the request was sent came unasked: an
 * error. Anything but XC_OK stops the process (after garbage the stream cannot be trusted
 * to be back in step). *frame holds the bytes the reply's pointers point into (the caller
 * frees it). `wait` > 0 bounds the wait for the answer, in seconds. */
static int exchange(exec_state *s, const qh_pb_buf *b, int kind, uint32_t limit, double wait,
                    qh_exec_reply *rep, uint8_t **frame, char *why, size_t n)
{
    *frame = NULL;
    const char *what = qh_exec_kind_name(kind);
    char how[EXEC_PROBLEM_MAX] = "";
    uint64_t id = 0;
    qh_pb_buf idb;
    qh_pb_buf_init(&idb);
    int r = XC_OK;
    int unasked = queued(s->fd);
    if (unasked > 0) {
        snprintf(how, sizeof how, "the backend process (%s) sent %d byte%s nobody asked for: "
                 "they were waiting before the %s request was sent", s->argv[0], unasked,
                 unasked == 1 ? "" : "s", what);
        r = XC_MALFORMED;
    } else if (b->failed) {
        snprintf(how, sizeof how, "out of memory encoding the %s", what);
        r = XC_MALFORMED;
    } else if (draw_id(&id, how, sizeof how) != 0) {
        r = XC_MALFORMED;
    }
    if (r == XC_OK) {
        qh_exec_put_id(&idb, id);
        size_t len = b->len + idb.len;
        uint8_t head[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                           (uint8_t)(len >> 24)};
        struct iovec iov[3] = {{head, 4}, {b->data, b->len}, {idb.data, idb.len}};
        s->sent = s->got = 0;
        double deadline = wait > 0 ? qh_mono_seconds() + wait : 0;
        size_t rlen = 0;
        r = idb.failed ? XC_MALFORMED : send_all(s, iov, 3, how, sizeof how);
        if (r == XC_OK)
            r = recv_frame(s, limit, what, deadline, frame, &rlen, how, sizeof how);
        if (r == XC_DIED && s->got == 0 && (size_t)queued(s->peer) >= s->sent)
            r = XC_UNREAD; /* it never read a byte of this request */
        if (r == XC_OK && qh_exec_read_reply(*frame, rlen, rep, how, sizeof how) != 0)
            r = XC_MALFORMED;
    }
    qh_pb_buf_free(&idb);
    /* a hello of another version is judged by its version alone (start) */
    int other_version = r == XC_OK && kind == QH_EXEC_HELLO &&
                        rep->version != QH_EXEC_PROTOCOL_VERSION;
    if (r == XC_OK && !other_version && !rep->has_id) {
        snprintf(how, sizeof how, "Reply.id: missing; a reply repeats the id of the %s "
                 "request it answers", what);
        r = XC_MALFORMED;
    } else if (r == XC_OK && !other_version && rep->id != id) {
        snprintf(how, sizeof how, "Reply.id: %llu, not the id of the %s request it must "
                 "answer (%llu): an answer to another request", (unsigned long long)rep->id,
                 what, (unsigned long long)id);
        r = XC_MALFORMED;
    } else if (r == XC_OK && rep->kind != kind) {
        snprintf(how, sizeof how, "Reply.kind: %lld (%s), expected %d (%s)",
                 (long long)rep->kind, qh_exec_kind_name(rep->kind), kind, what);
        r = XC_MALFORMED;
    }
    if (r != XC_OK) {
        explain(s, r, what, wait, how, why, n);
        stop_process(s);
        free(*frame);
        *frame = NULL;
    }
    return r;
}

/* Starts the process and exchanges hellos: XC_OK, or how it failed, with `why`: XC_REFUSED
 * when the process answered the hello with a status other than OK. */
static int start(exec_state *s, char *why, size_t n)
{
    if (spawn(s, why, n) != 0)
        return XC_DIED;
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    qh_exec_put_hello(&b, s->options);
    qh_exec_reply rep;
    uint8_t *frame;
    char e[EXEC_PROBLEM_MAX];
    int r = exchange(s, &b, QH_EXEC_HELLO, QH_EXEC_SMALL_MAX, 0, &rep, &frame, e, sizeof e);
    qh_pb_buf_free(&b);
    if (r == XC_OK && rep.version != QH_EXEC_PROTOCOL_VERSION) {
        snprintf(e, sizeof e,
                 "protocol version mismatch: the process speaks version %lld, this qmmcheck "
                 "speaks version %d (docs/exec-protocol.md)", (long long)rep.version,
                 QH_EXEC_PROTOCOL_VERSION);
        r = XC_MALFORMED;
    } else if (r == XC_OK && rep.status != QMM_OK) {
        snprintf(e, sizeof e, "refused to start: %s: %s",
                 qmm_status_name((qmm_status_code)rep.status), rep.message);
        r = XC_REFUSED;
    } else if (r == XC_OK && qh_cpu_check_process(s->pid, e, sizeof e) != 0) {
        r = XC_MALFORMED; /* an emulated process that escaped qemu: its answers are native */
    } else if (r == XC_OK) {
        snprintf(s->name, sizeof s->name, "%s", rep.name[0] ? rep.name : s->argv[0]);
        snprintf(s->description, sizeof s->description, "%s", rep.description);
    }
    free(frame);
    if (r != XC_OK) {
        stop_process(s);
        snprintf(why, n, "hello: %s", e);
    }
    return r;
}

/* ---- the table -------------------------------------------------------------------------- */

static void set_event(exec_state *s, qh_invoke_outcome ev, qh_cause cause, int32_t arg,
                      const char *problem)
{
    s->event = ev;
    s->cause = cause;
    s->cause_arg = arg;
    snprintf(s->problem, sizeof s->problem, "%s", problem);
}

/* An exchange that failed with `r` as the event: its outcome and cause. */
static void set_failed(exec_state *s, int r, const char *problem)
{
    if (r == XC_MALFORMED)
        set_event(s, QH_MALFORMED, QH_CAUSE_PROTOCOL, 0, problem);
    else if (r == XC_HUNG)
        set_event(s, QH_HUNG, QH_CAUSE_NO_ANSWER, 0, problem);
    else if (r == XC_INTR)
        set_event(s, QH_INTERRUPTED, QH_CAUSE_NONE, 0, problem);
    else if (s->end_cause != QH_CAUSE_NONE && s->pid == 0)
        set_event(s, QH_DIED, s->end_cause, s->end_arg, problem);
    else
        set_event(s, QH_DIED, QH_CAUSE_ENDED, 0, problem);
}

static qh_invoke_outcome outcome_of(int r)
{
    return r == XC_MALFORMED ? QH_MALFORMED : r == XC_HUNG ? QH_HUNG
           : r == XC_INTR    ? QH_INTERRUPTED : QH_DIED;
}

/* A process to talk to: the running one, or a fresh one when there is none or it ended
 * after its last answer (unless it left bytes behind: the exchange reports those). */
static int ensure_process(exec_state *s, char *why, size_t n)
{
    char how[128], e[EXEC_PROBLEM_MAX];
    if (s->fd >= 0 && queued(s->fd) == 0 && process_ended(s, how, sizeof how))
        stop_process(s);
    if (s->fd >= 0)
        return XC_OK;
    if (s->on_restart)
        s->on_restart(s->on_restart_ctx);
    int r = start(s, e, sizeof e);
    if (r != XC_OK)
        snprintf(why, n, "restarting the backend process failed: %s", e);
    return r == XC_INTR ? XC_INTR : r == XC_OK ? XC_OK : XC_DIED;
}

/* One request answered by a live process: a process that ended without reading a byte of
 * it is replaced and the request resent, once. */
static int request(exec_state *s, const qh_pb_buf *b, int kind, uint32_t limit,
                   qh_exec_reply *rep, uint8_t **frame, char *why, size_t n)
{
    *frame = NULL;
    for (int attempt = 0;; attempt++) {
        int r = ensure_process(s, why, n);
        if (r != XC_OK)
            return r;
        r = exchange(s, b, kind, limit, 0, rep, frame, why, n);
        if (r != XC_UNREAD)
            return r;
        if (attempt == 1) {
            size_t k = strlen(why);
            snprintf(why + k, n - k, " (it was resent once: the process before this one "
                     "ended without reading it too)");
            return XC_DIED;
        }
    }
}

static qmm_status_code answer_event(exec_state *s, qmm_status *st)
{
    return qmm_status_set(st, QMM_INTERNAL, "%s", s->problem);
}

static qmm_status_code exec_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    exec_state *s = self->impl;
    pthread_mutex_lock(&s->mu);
    s->event = QH_RETURNED;
    s->query_event = 0;
    qmm_status_code code = QMM_OK;
    char why[EXEC_PROBLEM_MAX];
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    if (qh_exec_put_call(&b, QH_EXEC_QUERY, call, why, sizeof why) != 0) {
        code = qmm_status_set(st, QMM_UNSUPPORTED, "%s", why);
    } else {
        qh_exec_reply rep;
        uint8_t *frame;
        int r = request(s, &b, QH_EXEC_QUERY, QH_EXEC_SMALL_MAX, &rep, &frame, why,
                        sizeof why);
        if (r == XC_OK && rep.status == QMM_UNSUPPORTED)
            code = qmm_status_set(st, QMM_UNSUPPORTED, "%s", rep.message);
        else if (r != XC_OK) {
            set_failed(s, r, why);
            s->query_event = 1; /* the call that follows answers it */
        }
        free(frame);
    }
    qh_pb_buf_free(&b);
    pthread_mutex_unlock(&s->mu);
    return code;
}

/* Copies the answer's output into y when its type and shape are y's; else an event. */
static qmm_status_code take_output(exec_state *s, const qh_exec_reply *rep, qmm_tensor *y,
                                   qmm_status *st)
{
    char why[EXEC_PROBLEM_MAX];
    if (!rep->output) {
        set_event(s, QH_MALFORMED, QH_CAUSE_PROTOCOL, 0,
                  "Reply.output: missing, and the status is OK");
        return answer_event(s, st);
    }
    qh_tensor t;
    qh_error err;
    if (qh_parse_tensor(rep->output, rep->output_len, "Reply.output", &t, &err) != 0) {
        set_event(s, QH_MALFORMED, QH_CAUSE_PROTOCOL, 0, err.msg);
        stop_process(s);
        return answer_event(s, st);
    }
    int same = t.t.dtype == y->dtype && t.t.rank == y->rank;
    for (int32_t i = 0; same && i < y->rank; i++)
        same = t.t.dims[i] == y->dims[i];
    if (!same) {
        char got[128] = "", want[128] = "";
        for (int32_t i = 0; i < t.t.rank; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "",
                     (long long)t.t.dims[i]);
        for (int32_t i = 0; i < y->rank; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "",
                     (long long)y->dims[i]);
        snprintf(why, sizeof why, "returned an output of type %s and shape [%s]; y is %s [%s]",
                 qmm_dtype_name(t.t.dtype), got, qmm_dtype_name(y->dtype), want);
        set_event(s, QH_MISBEHAVED, QH_CAUSE_WRONG_OUTPUT, 0, why);
        qh_tensor_free(&t);
        return answer_event(s, st);
    }
    int64_t numel = qmm_tensor_numel(y);
    if (numel > 0)
        memcpy(y->data, t.t.data, qmm_dtype_bytes(y->dtype, numel));
    qh_tensor_free(&t);
    return qmm_status_ok(st);
}

/* What a call's request and answer may hold: a frame's length is 32 bits. */
#define EXEC_FRAME_MAX ((uint64_t)UINT32_MAX)

static qmm_status_code exec_run(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    exec_state *s = self->impl;
    pthread_mutex_lock(&s->mu);
    qmm_status_code code;
    if (s->query_event && s->event != QH_RETURNED) {
        s->query_event = 0;
        code = answer_event(s, st);
        pthread_mutex_unlock(&s->mu);
        return code;
    }
    s->event = QH_RETURNED;
    s->query_event = 0;
    qmm_tensor *y = qmm_call_output(call);
    uint64_t ybytes = y ? qmm_dtype_bytes(y->dtype, qmm_tensor_numel(y)) : 0;
    char why[EXEC_PROBLEM_MAX];
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    if (!y) {
        code = qmm_status_set(st, QMM_UNSUPPORTED, "no output");
    } else if (ybytes > EXEC_FRAME_MAX - QH_EXEC_CALL_SLACK) {
        code = qmm_status_set(st, QMM_UNSUPPORTED,
                              "y is %llu bytes, more than the exec protocol's call answer "
                              "holds (%llu)", (unsigned long long)ybytes,
                              (unsigned long long)(EXEC_FRAME_MAX - QH_EXEC_CALL_SLACK));
    } else if (qh_exec_put_call(&b, QH_EXEC_CALL, call, why, sizeof why) != 0) {
        code = qmm_status_set(st, QMM_UNSUPPORTED, "%s", why);
    } else if ((uint64_t)b.len > EXEC_FRAME_MAX - 16) {
        code = qmm_status_set(st, QMM_UNSUPPORTED,
                              "the call request is %zu bytes, more than a frame holds (%llu)",
                              b.len, (unsigned long long)(EXEC_FRAME_MAX - 16));
    } else {
        qh_exec_reply rep;
        uint8_t *frame;
        int r = request(s, &b, QH_EXEC_CALL, (uint32_t)ybytes + QH_EXEC_CALL_SLACK, &rep,
                        &frame, why, sizeof why);
        if (r != XC_OK) {
            set_failed(s, r, why);
            code = answer_event(s, st);
        } else if (rep.status != QMM_OK) {
            code = qmm_status_set(st, (qmm_status_code)rep.status, "%s", rep.message);
        } else {
            code = take_output(s, &rep, y, st);
        }
        free(frame);
    }
    qh_pb_buf_free(&b);
    pthread_mutex_unlock(&s->mu);
    return code;
}

/* How long a process has to answer close, and then to exit. */
#define EXEC_CLOSE_ANSWER_S 2.0
#define EXEC_CLOSE_EXIT_S 1.0

/* Asks the process to close, within EXEC_CLOSE_ANSWER_S, and ends it: QH_RETURNED, or how
 * the close went wrong, with `why`. A process that ended after its last answer without
 * reading the close request has nothing to answer. */
static qh_invoke_outcome finish(exec_state *s, char *why, size_t n)
{
    qh_invoke_outcome out = QH_RETURNED;
    char how[128];
    if (s->fd >= 0 && queued(s->fd) == 0 && process_ended(s, how, sizeof how))
        stop_process(s);
    if (s->fd >= 0) {
        qh_pb_buf b;
        qh_pb_buf_init(&b);
        qh_exec_put_close(&b);
        qh_exec_reply rep;
        uint8_t *frame;
        char e[EXEC_PROBLEM_MAX];
        int r = exchange(s, &b, QH_EXEC_CLOSE, QH_EXEC_SMALL_MAX,
                         qh_cpu_timeout(qh_cpu_worker_class, EXEC_CLOSE_ANSWER_S), &rep,
                         &frame, e, sizeof e);
        qh_pb_buf_free(&b);
        free(frame);
        if (r == XC_OK) {
            for (int i = 0; i < (int)(EXEC_CLOSE_EXIT_S * 100) && !qh_interrupted &&
                            !process_ended(s, how, sizeof how); i++) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        } else if (r != XC_UNREAD) {
            out = outcome_of(r);
            snprintf(why, n, "close: %s", e);
        }
    }
    stop_process(s);
    return out;
}

static void exec_close(qmm_backend *self)
{
    exec_state *s = self->impl;
    char why[EXEC_PROBLEM_MAX];
    finish(s, why, sizeof why);
    free(s->cap);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

qmm_backend *qh_exec_open(uint32_t harness_abi, const char *rest, qmm_status *st)
{
    if (harness_abi != QMM_ABI_VERSION) {
        qmm_status_set(st, QMM_UNSUPPORTED, "exec: built for ABI %u, asked for %u",
                       QMM_ABI_VERSION, harness_abi);
        return NULL;
    }
    const char *colon = strchr(rest, ':');
    if (!colon) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "exec: write exec[,OPTIONS]:COMMAND");
        return NULL;
    }
    exec_state *s = calloc(1, sizeof *s);
    if (!s) {
        qmm_status_set(st, QMM_OUT_OF_MEMORY, "exec: out of memory");
        return NULL;
    }
    s->fd = s->peer = s->err = -1;
    const char *opts = rest[0] == ',' ? rest + 1 : rest;
    size_t olen = (size_t)(colon - opts);
    char why[EXEC_PROBLEM_MAX];
    if (olen >= sizeof s->options || split_words(s, colon + 1, why, sizeof why) != 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "exec: %s",
                       olen >= sizeof s->options ? "options too long" : why);
        free(s);
        return NULL;
    }
    memcpy(s->options, opts, olen);
    pthread_mutex_init(&s->mu, NULL);
    int started = start(s, why, sizeof why);
    if (started != XC_OK) {
        /* what it said on stderr (a missing module, a traceback) says why: cleaned here, with
         * room left for the "backend exec...: " that qh_backend_open puts before it. Only a
         * refusal in the hello is INVALID_ARGUMENT (--determinism). */
        char msg[QMM_STATUS_MESSAGE_MAX], spec[EXEC_SPEC_MAX];
        size_t shown = qh_clean_into(spec, sizeof spec, rest, strlen(rest), 0);
        qh_clean_into(msg, sizeof msg, "exec: ", 6, 0);
        qh_clean_into(msg + 6, sizeof msg - 6, why, strlen(why), 0);
        qh_append_printed(msg, sizeof msg, strlen("backend exec: ") + shown, s->cap, s->cap_len,
                          s->cap_dropped);
        qmm_status_set(st, started == XC_REFUSED ? QMM_INVALID_ARGUMENT : QMM_INTERNAL, "%s",
                       msg);
        pthread_mutex_destroy(&s->mu);
        free(s->cap);
        free(s);
        return NULL;
    }
    s->table = (qmm_backend){
        .abi_version = QMM_ABI_VERSION,
        .struct_size = sizeof(qmm_backend),
        .name = s->name,
        .description = s->description,
        .impl = s,
        .query = exec_query,
        .call = exec_run, /* every operator, through the generic entry: the process is told
                           * the operator and reads its inputs from the operator table */
        .close = exec_close,
    };
    return &s->table;
}

/* What the process of the last failed open on this thread printed, as detail lines
 * (qh_open_printed): at most OPEN_LINES_SHOWN lines and OPEN_BYTES_SHOWN cleaned bytes, which
 * with the count of those left out and one line cut at QH_CLEAN_LINE_MAX fit the buffer. */
#define OPEN_LINES_SHOWN 20
#define OPEN_BYTES_SHOWN 4096
static _Thread_local char
    open_printed[OPEN_BYTES_SHOWN + QH_CLEAN_LINE_MAX + 8 * OPEN_LINES_SHOWN + 128];

const char *qh_open_printed(void)
{
    return open_printed;
}

void qh_open_printed_clear(void)
{
    open_printed[0] = '\0';
}

void qh_append_printed(char *msg, size_t size, size_t reserve, const char *out, size_t n,
                       size_t dropped)
{
    open_printed[0] = '\0';
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    size_t len = strlen(msg), lines = 1, last = n;
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        lines += out[i] == '\n';
    while (last && out[last - 1] != '\n')
        last--;
    char note[128];
    if (dropped)
        snprintf(note, sizeof note, "; what it printed (%zu line%s kept, %zu bytes after them "
                 "dropped) ends: ", lines, lines == 1 ? "" : "s", dropped);
    else
        snprintf(note, sizeof note, "; what it printed (%zu line%s) ends: ", lines,
                 lines == 1 ? "" : "s");
    if (len + strlen(note) + reserve + 16 < size) {
        memcpy(msg + len, note, strlen(note) + 1);
        len += strlen(note);
        /* its last line, cut at 300 bytes: the lines in full follow the message (the
           message's own room, QH_ERROR_MAX, is sized for paths, not for a 1 MB line) */
        qh_clean_into(msg + len, size - len - reserve, out + last, n - last, 300);
    }
    qh_sb b = {0};
    qh_sb_detail_lines(&b, out, n, OPEN_LINES_SHOWN, OPEN_BYTES_SHOWN);
    snprintf(open_printed, sizeof open_printed, "%s", b.s ? b.s : "");
    qh_sb_free(&b);
}

qh_invoke_outcome qh_exec_take_event(const qmm_backend *be, char *problem, size_t n,
                                     qh_cause *cause, int32_t *cause_arg)
{
    if (!be || be->query != exec_query)
        return QH_RETURNED;
    exec_state *s = be->impl;
    pthread_mutex_lock(&s->mu);
    qh_invoke_outcome ev = s->event;
    if (ev != QH_RETURNED) {
        snprintf(problem, n, "%s", s->problem);
        *cause = s->cause;
        *cause_arg = s->cause_arg;
    }
    s->event = QH_RETURNED;
    s->query_event = 0;
    pthread_mutex_unlock(&s->mu);
    return ev;
}

void qh_exec_on_restart(qmm_backend *be, void (*fn)(void *ctx), void *ctx)
{
    if (!be || be->query != exec_query)
        return;
    exec_state *s = be->impl;
    pthread_mutex_lock(&s->mu);
    s->on_restart = fn;
    s->on_restart_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

qh_invoke_outcome qh_exec_finish(const qmm_backend *be, char *why, size_t n)
{
    if (n)
        why[0] = '\0';
    if (!be || be->query != exec_query)
        return QH_RETURNED;
    exec_state *s = be->impl;
    pthread_mutex_lock(&s->mu);
    qh_invoke_outcome out = finish(s, why, n);
    pthread_mutex_unlock(&s->mu);
    return out;
}

void qh_exec_take_output(const qmm_backend *be, char **text, size_t *dropped)
{
    if (!be || be->query != exec_query)
        return;
    exec_state *s = be->impl;
    pthread_mutex_lock(&s->mu);
    drain_stderr(s);
    if (s->cap_len) {
        s->cap[s->cap_len] = '\0';
        free(*text);
        *text = s->cap;
        s->cap = NULL;
    }
    *dropped = s->cap_dropped;
    s->cap_len = s->cap_dropped = 0;
    pthread_mutex_unlock(&s->mu);
}

int qh_exec_variant_spec(const char *base, const char *extra, char *out, size_t size)
{
    if (!qh_exec_is_spec(base))
        return 0;
    const char *colon = strchr(base, ':');
    snprintf(out, size, "%.*s,%s%s", (int)(colon - base), base, extra, colon);
    return 1;
}
