/* harness/run/exec.c — the `exec:` backend: a qmm_backend table whose calls are answered by a
 * long-lived process over docs/exec-protocol.md (harness/run/exec.h).
 *
 * The process's stdin and stdout are one end of a socketpair (sends never raise SIGPIPE), its
 * stderr is ours (in a worker: the capture pipe the parent shows cleaned), and it dies with
 * whoever started it (PR_SET_PDEATHSIG). Every frame's length is checked against a limit
 * before a byte is allocated. A process that ends mid-call, or whose answer breaks the
 * protocol, is recorded as an event for the caller (qh_exec_take_event) and replaced by a
 * fresh one on the next query or call: after garbage the stream cannot be trusted to resync.
 * A hang is not detected here: the worker's --timeout kills the worker's process group, this
 * process with it, and a fresh worker starts a fresh process.
 */
#define _GNU_SOURCE 1 /* close_range, pipe2, strsignal */
#include "harness/run/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/io/onnx_io.h"
#include "harness/run/exec_proto.h"
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
    pid_t pid;                   /* 0 when no process runs */
    int fd;                      /* our end of its stdin/stdout */
    pthread_mutex_t mu;          /* one exchange at a time */
    qh_invoke_outcome event;     /* what the last query or call left for the caller */
    int query_event;             /* the event came from the query just before this call */
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

/* Kills and reaps the process (if it still runs) and closes the socket. */
static void stop_process(exec_state *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    if (s->fd >= 0)
        close(s->fd);
    s->pid = 0;
    s->fd = -1;
}

/* The process has ended (reaped here): how, into `how`. */
static int process_ended(exec_state *s, char *how, size_t n)
{
    int status;
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r != s->pid)
        return 0;
    describe_status(status, how, n);
    s->pid = 0;
    stop_process(s);
    return 1;
}

static int spawn(exec_state *s, char *why, size_t n)
{
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        goto fail;
    if (pipe2(ep, O_CLOEXEC) != 0) {
        close(sv[0]);
        close(sv[1]);
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
        if (ep[1] != 3)
            dup2(ep[1], 3);
        fcntl(3, F_SETFD, FD_CLOEXEC);
        close_range(4, ~0u, 0);
        signal(SIGPIPE, SIG_DFL);
        execvp(s->argv[0], s->argv);
        int e = errno;
        (void)!write(3, &e, sizeof e);
        _exit(127);
    }
    close(sv[1]);
    close(ep[1]);
    if (pid < 0) {
        close(sv[0]);
        close(ep[0]);
        goto fail;
    }
    int e = 0;
    ssize_t r;
    while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    s->pid = pid;
    s->fd = sv[0];
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

enum { XC_OK = 0, XC_DIED = -1, XC_MALFORMED = -2 };

/* The process ended or stopped talking: records how in `why`, stops it. */
static int died(exec_state *s, const char *when, char *why, size_t n)
{
    char how[128] = "closed its stdout";
    for (int i = 0; i < 100 && s->pid > 0; i++) { /* up to 1 s for its status */
        if (process_ended(s, how, sizeof how))
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    snprintf(why, n, "the backend process (%s) %s %s", s->argv[0], how, when);
    stop_process(s);
    return XC_DIED;
}

static int send_frame(exec_state *s, const uint8_t *p, size_t len, const char *when, char *why,
                      size_t n)
{
    uint8_t head[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                       (uint8_t)(len >> 24)};
    struct iovec iov[2] = {{head, 4}, {(void *)p, len}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    while (iov[0].iov_len + iov[1].iov_len) {
        ssize_t w = sendmsg(s->fd, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return died(s, when, why, n);
        for (int i = 0; i < 2 && w > 0; i++) {
            size_t k = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
            iov[i].iov_base = (char *)iov[i].iov_base + k;
            iov[i].iov_len -= k;
            w -= (ssize_t)k;
        }
        if (!iov[0].iov_len) {
            mh.msg_iov = &iov[1];
            mh.msg_iovlen = 1;
        }
    }
    return XC_OK;
}

/* Reads exactly len bytes, noticing the process's death even while a child of it keeps the
 * socket open. */
static int recv_exact(exec_state *s, uint8_t *p, size_t len, const char *when, char *why,
                      size_t n)
{
    while (len) {
        struct pollfd pf = {.fd = s->fd, .events = POLLIN};
        int r = poll(&pf, 1, 50);
        if (r < 0 && errno != EINTR)
            return died(s, when, why, n);
        if (r <= 0) {
            char how[128];
            if (process_ended(s, how, sizeof how)) {
                snprintf(why, n, "the backend process (%s) %s %s", s->argv[0], how, when);
                return XC_DIED;
            }
            continue;
        }
        ssize_t got = read(s->fd, p, len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return died(s, when, why, n);
        p += got;
        len -= (size_t)got;
    }
    return XC_OK;
}

/* One frame of at most `limit` bytes into *buf (malloc'd). */
static int recv_frame(exec_state *s, uint32_t limit, const char *what, uint8_t **buf,
                      size_t *len, char *why, size_t n)
{
    *buf = NULL;
    uint8_t head[4];
    char when[64];
    snprintf(when, sizeof when, "before answering the %s", what);
    int r = recv_exact(s, head, 4, when, why, n);
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
    snprintf(when, sizeof when, "in the middle of its %s answer", what);
    r = recv_exact(s, *buf, k, when, why, n);
    if (r != XC_OK) {
        free(*buf);
        *buf = NULL;
    }
    return r;
}

/* Sends the request in `b` (consumed) and reads and decodes the answer of the same kind.
 * *frame holds the bytes reply's pointers point into (the caller frees it). */
static int exchange(exec_state *s, qh_pb_buf *b, int kind, uint32_t limit, qh_exec_reply *rep,
                    uint8_t **frame, char *why, size_t n)
{
    *frame = NULL;
    const char *what = qh_exec_kind_name(kind);
    if (b->failed) {
        qh_pb_buf_free(b);
        snprintf(why, n, "out of memory encoding the %s", what);
        return XC_MALFORMED;
    }
    char when[64];
    snprintf(when, sizeof when, "before reading the %s", what);
    int r = send_frame(s, b->data, b->len, when, why, n);
    qh_pb_buf_free(b);
    size_t len = 0;
    if (r == XC_OK)
        r = recv_frame(s, limit, what, frame, &len, why, n);
    if (r == XC_OK && qh_exec_read_reply(*frame, len, rep, why, n) != 0)
        r = XC_MALFORMED;
    if (r == XC_OK && rep->kind != kind) {
        snprintf(why, n, "Reply.kind: %lld (%s), expected %d (%s)", (long long)rep->kind,
                 qh_exec_kind_name(rep->kind), kind, what);
        r = XC_MALFORMED;
    }
    if (r == XC_MALFORMED)
        stop_process(s); /* after garbage the stream cannot be trusted */
    return r;
}

/* Starts the process and exchanges hellos. */
static int start(exec_state *s, char *why, size_t n)
{
    if (spawn(s, why, n) != 0)
        return -1;
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    qh_exec_put_hello(&b, s->options);
    qh_exec_reply rep;
    uint8_t *frame;
    char e[EXEC_PROBLEM_MAX];
    int r = exchange(s, &b, QH_EXEC_HELLO, QH_EXEC_SMALL_MAX, &rep, &frame, e, sizeof e);
    if (r == XC_OK && rep.version != QH_EXEC_PROTOCOL_VERSION) {
        snprintf(e, sizeof e,
                 "protocol version mismatch: the process speaks version %lld, this qmmcheck "
                 "speaks version %d (docs/exec-protocol.md)", (long long)rep.version,
                 QH_EXEC_PROTOCOL_VERSION);
        r = XC_MALFORMED;
    } else if (r == XC_OK && rep.status != QMM_OK) {
        snprintf(e, sizeof e, "refused to start: %s: %s",
                 qmm_status_name((qmm_status_code)rep.status), rep.message);
        r = XC_MALFORMED;
    } else if (r == XC_OK) {
        snprintf(s->name, sizeof s->name, "%s", rep.name[0] ? rep.name : s->argv[0]);
        snprintf(s->description, sizeof s->description, "%s", rep.description);
    }
    free(frame);
    if (r != XC_OK) {
        stop_process(s);
        snprintf(why, n, "hello: %s", e);
        return -1;
    }
    return 0;
}

/* ---- the table -------------------------------------------------------------------------- */

static void set_event(exec_state *s, qh_invoke_outcome ev, const char *problem)
{
    s->event = ev;
    snprintf(s->problem, sizeof s->problem, "%s", problem);
}

/* A process to talk to: the running one, or a fresh one. */
static int ensure_process(exec_state *s)
{
    if (s->pid > 0)
        return 0;
    char why[EXEC_PROBLEM_MAX], p[EXEC_PROBLEM_MAX];
    if (start(s, why, sizeof why) == 0)
        return 0;
    snprintf(p, sizeof p, "restarting the backend process failed: %s", why);
    set_event(s, QH_DIED, p);
    return -1;
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
    if (ensure_process(s) != 0) {
        s->query_event = 1; /* the call that follows answers it */
    } else if (qh_exec_put_call(&b, QH_EXEC_QUERY, call, why, sizeof why) != 0) {
        qh_pb_buf_free(&b);
        code = qmm_status_set(st, QMM_UNSUPPORTED, "%s", why);
    } else {
        qh_exec_reply rep;
        uint8_t *frame;
        int r = exchange(s, &b, QH_EXEC_QUERY, QH_EXEC_SMALL_MAX, &rep, &frame, why,
                         sizeof why);
        if (r == XC_OK && rep.status == QMM_UNSUPPORTED)
            code = qmm_status_set(st, QMM_UNSUPPORTED, "%s", rep.message);
        else if (r != XC_OK) {
            set_event(s, r == XC_DIED ? QH_DIED : QH_MALFORMED, why);
            s->query_event = 1;
        }
        free(frame);
    }
    pthread_mutex_unlock(&s->mu);
    return code;
}

/* Copies the answer's output into y when its type and shape are y's; else an event. */
static qmm_status_code take_output(exec_state *s, const qh_exec_reply *rep, qmm_tensor *y,
                                   qmm_status *st)
{
    char why[EXEC_PROBLEM_MAX];
    if (!rep->output) {
        set_event(s, QH_MALFORMED, "Reply.output: missing, and the status is OK");
        return answer_event(s, st);
    }
    qh_tensor t;
    qh_error err;
    if (qh_parse_tensor(rep->output, rep->output_len, "Reply.output", &t, &err) != 0) {
        set_event(s, QH_MALFORMED, err.msg);
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
        set_event(s, QH_MISBEHAVED, why);
        qh_tensor_free(&t);
        return answer_event(s, st);
    }
    int64_t numel = qmm_tensor_numel(y);
    if (numel > 0)
        memcpy(y->data, t.t.data, (size_t)numel * qmm_dtype_size(y->dtype));
    qh_tensor_free(&t);
    return qmm_status_ok(st);
}

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
    size_t ybytes = y && qmm_tensor_numel(y) > 0
                        ? (size_t)qmm_tensor_numel(y) * qmm_dtype_size(y->dtype) : 0;
    char why[EXEC_PROBLEM_MAX];
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    if (ensure_process(s) != 0) {
        code = answer_event(s, st);
    } else if (!y || ybytes > UINT32_MAX - QH_EXEC_CALL_SLACK ||
               qh_exec_put_call(&b, QH_EXEC_CALL, call, why, sizeof why) != 0) {
        qh_pb_buf_free(&b);
        code = qmm_status_set(st, QMM_UNSUPPORTED, "%s", y ? why : "no output");
    } else {
        qh_exec_reply rep;
        uint8_t *frame;
        int r = exchange(s, &b, QH_EXEC_CALL, (uint32_t)ybytes + QH_EXEC_CALL_SLACK, &rep,
                         &frame, why, sizeof why);
        if (r != XC_OK) {
            set_event(s, r == XC_DIED ? QH_DIED : QH_MALFORMED, why);
            code = answer_event(s, st);
        } else if (rep.status != QMM_OK) {
            code = qmm_status_set(st, (qmm_status_code)rep.status, "%s", rep.message);
        } else {
            code = take_output(s, &rep, y, st);
        }
        free(frame);
    }
    pthread_mutex_unlock(&s->mu);
    return code;
}

static void exec_close(qmm_backend *self)
{
    exec_state *s = self->impl;
    if (s->pid > 0) {
        qh_pb_buf b;
        qh_pb_buf_init(&b);
        qh_exec_put_close(&b);
        qh_exec_reply rep;
        uint8_t *frame;
        char why[EXEC_PROBLEM_MAX];
        if (exchange(s, &b, QH_EXEC_CLOSE, QH_EXEC_SMALL_MAX, &rep, &frame, why,
                     sizeof why) == XC_OK) {
            char how[128];
            for (int i = 0; i < 100 && s->pid > 0 && !process_ended(s, how, sizeof how); i++) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
        free(frame);
    }
    stop_process(s);
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
    s->fd = -1;
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
    if (start(s, why, sizeof why) != 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "exec: %s", why);
        pthread_mutex_destroy(&s->mu);
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

qh_invoke_outcome qh_exec_take_event(const qmm_backend *be, char *problem, size_t n)
{
    if (!be || be->query != exec_query)
        return QH_RETURNED;
    exec_state *s = be->impl;
    pthread_mutex_lock(&s->mu);
    qh_invoke_outcome ev = s->event;
    if (ev != QH_RETURNED)
        snprintf(problem, n, "%s", s->problem);
    s->event = QH_RETURNED;
    s->query_event = 0;
    pthread_mutex_unlock(&s->mu);
    return ev;
}

int qh_exec_variant_spec(const char *base, const char *extra, char *out, size_t size)
{
    if (!qh_exec_is_spec(base))
        return 0;
    const char *colon = strchr(base, ':');
    snprintf(out, size, "%.*s,%s%s", (int)(colon - base), base, extra, colon);
    return 1;
}
