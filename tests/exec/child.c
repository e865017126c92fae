/* tests/exec/child.c — an exec: backend for the tests (docs/exec-protocol.md), in C so the core
 * tests need no Python: it answers every call with the reference backend, or, as argv[1]
 * says, misbehaves in one way.
 *
 *   ok                  answers like the reference
 *   crash-once=PATH     the first call (while PATH does not exist) dies of SIGSEGV
 *   hang-once=PATH      the first call (while PATH does not exist) never answers
 *   slow=S              answers every call like the reference, S seconds late
 *   exit-on-call        every call exits with status 7 before answering
 *   forge               prints forged case lines on stderr and in its message (INTERNAL)
 *   forge-stdout        writes forged case lines on its stdout: the protocol channel
 *   flood=N,W           prints N lines of W control characters (0x01) and "the last line"
 *                       (no newline) on stderr, and answers INTERNAL
 *   oversize            answers a call with a frame length of 0xfffffff0
 *   bad-field           answers a call with Reply.status as a string
 *   wrong-shape         answers a call with a [1,1] output
 *   version=N           says protocol version N in its hello (else the version it is asked in)
 *   refuse-options      refuses any options in the hello (INVALID_ARGUMENT)
 *   spare-once=PATH     the first call (while PATH does not exist) is answered right, followed
 *                       in the same write by a spare query answer and a spare copy of the call
 *                       answer, nobody asked for; every later call is answered wrong (+1)
 *   wrong-id            answers a call with an id other than its request's
 *   exit-after-answer   exits (status 0) right after answering each call
 *   linger-exit         answers each call, then exits 0.3 s later without reading more
 *   exit-after-hello    answers the hello, then exits 0.3 s later without reading more
 *   fail-to-start       says why on stderr and exits 2 before reading the hello
 *   fail-to-start=HOW   prints on stderr and exits 1 before reading the hello: a Python
 *                       traceback (traceback), 35 lines with escape sequences, binary bytes,
 *                       forged case lines and no last newline (hostile), 100 MB (flood), or
 *                       one 1 MB line (long-line)
 *   close=HOW           on close: segv (SIGSEGV), exit9 (exit status 9), garbage (a malformed
 *                       answer) or silent (never answers)
 *   wrong-from-k=T      answers like the reference, but with the low bit of the output's last
 *                       byte flipped when the call's K (a's last dimension) is T or more
 *   alternate           answers like the reference on odd calls (1st, 3rd, ...) and with the
 *                       low bit of the output's first byte flipped on even ones
 *   flip-then-segv      answers odd calls with the low bit of the output's first byte flipped
 *                       and dies of SIGSEGV on even ones (a wrong answer, then a crash when
 *                       asked again)
 *   fill-then-segv      answers odd calls OK with every output byte 0xa5 (qmmcheck's fill:
 *                       it calls again to find unwritten elements) and dies of SIGSEGV on even
 *                       ones
 *   segv-on-options     in a process whose hello carried options (a --determinism variant),
 *                       every call dies of SIGSEGV
 *   restart-twice=PATH  each process answers its hello and then one request: it leaves the
 *                       request unread (exit 0) unless the process before it did (PATH says
 *                       which), and when it answers, it reads the request and ends, and a
 *                       child of it writes the answer once it is gone, so that the next
 *                       request starts a fresh process: each request then takes two fresh
 *                       processes, a call's query and run four
 *
 * Every reply repeats its request's id (docs/exec-protocol.md, version 2), but for wrong-id.
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/io/onnx_io.h"
#include "harness/io/pb.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

static const char *mode = "ok";

static int read_full(void *p, size_t n)
{
    char *s = p;
    while (n) {
        ssize_t r = read(0, s, n);
        if (r <= 0)
            return -1;
        s += r;
        n -= (size_t)r;
    }
    return 0;
}

static void write_full(const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t w = write(1, s, n);
        if (w <= 0)
            exit(1);
        s += w;
        n -= (size_t)w;
    }
}

/* Appends message `b` (consumed) to `out` as a frame. */
static void frame_into(qh_pb_buf *out, qh_pb_buf *b)
{
    uint8_t head[4] = {(uint8_t)b->len, (uint8_t)(b->len >> 8), (uint8_t)(b->len >> 16),
                       (uint8_t)(b->len >> 24)};
    qh_pb_put_raw(out, head, 4);
    qh_pb_put_raw(out, b->data, b->len);
    qh_pb_buf_free(b);
}

/* Sends message `b` (consumed) as one frame, in one write. */
static void send_frame(qh_pb_buf *b)
{
    qh_pb_buf out;
    qh_pb_buf_init(&out);
    frame_into(&out, b);
    write_full(out.data, out.len);
    qh_pb_buf_free(&out);
}

/* "crash-once=PATH": 1 the first time (PATH is made), 0 after. */
static int once(const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(mode, prefix, n) != 0)
        return 0;
    struct stat sb;
    if (stat(mode + n, &sb) == 0)
        return 0;
    FILE *f = fopen(mode + n, "w");
    if (f)
        fclose(f);
    return 1;
}

/* The call in a request: inputs by ONNX name, attributes by name, y's type and shape. */
typedef struct request {
    int64_t kind, version;
    uint64_t id;
    char domain[64], op_type[64];
    int64_t opset;
    qmm_call call;
    qh_tensor inputs[QMM_MAX_OP_INPUTS];
    int n_inputs;
    qmm_tensor y;
    char y_name[64];
    int has_options;
} request;

static void copy_str(char *dst, size_t size, const qh_pb_field *f)
{
    size_t k = f->len < size - 1 ? f->len : size - 1;
    memcpy(dst, f->data, k);
    dst[k] = '\0';
}

/* y's TensorProto (no data): dims, data_type, name. */
static void read_meta(const qh_pb_field *f, request *r)
{
    qh_pb_reader rd;
    qh_pb_reader_init(&rd, f->data, f->len);
    qh_pb_field g;
    char why[128];
    while (qh_pb_next(&rd, &g, why, sizeof why) == 1) {
        if (g.num == 1 && r->y.rank < QMM_MAX_RANK)
            r->y.dims[r->y.rank++] = (int64_t)g.u;
        else if (g.num == 2)
            r->y.dtype = (int32_t)g.u;
        else if (g.num == 8)
            copy_str(r->y_name, sizeof r->y_name, &g);
    }
}

static void read_attr(const qh_pb_field *f, request *r, const qmm_op_desc *d)
{
    qh_pb_reader rd;
    qh_pb_reader_init(&rd, f->data, f->len);
    qh_pb_field g;
    char why[128], name[64] = "";
    int64_t v = 0;
    while (qh_pb_next(&rd, &g, why, sizeof why) == 1) {
        if (g.num == 1)
            copy_str(name, sizeof name, &g);
        else if (g.num == 3)
            v = (int64_t)g.u;
    }
    for (int32_t i = 0; d && i < d->n_attrs; i++)
        if (strcmp(d->attrs[i].name, name) == 0)
            *qmm_call_attr(&r->call, i) = (int32_t)v;
}

static int read_request(request *r, uint8_t *buf, size_t len)
{
    memset(r, 0, sizeof *r);
    qh_pb_reader rd;
    qh_pb_reader_init(&rd, buf, len);
    qh_pb_field f;
    char why[256];
    /* the operator first: attributes and inputs are placed by its descriptor */
    while (qh_pb_next(&rd, &f, why, sizeof why) == 1) {
        if (f.num == 1)
            r->kind = (int64_t)f.u;
        else if (f.num == 2)
            r->version = (int64_t)f.u;
        else if (f.num == 3)
            r->has_options = f.len > 0;
        else if (f.num == 4)
            copy_str(r->domain, sizeof r->domain, &f);
        else if (f.num == 5)
            copy_str(r->op_type, sizeof r->op_type, &f);
        else if (f.num == 6)
            r->opset = (int64_t)f.u;
        else if (f.num == 11)
            r->id = f.u;
    }
    const qmm_op_desc *d = r->op_type[0] ? qmm_op_lookup(r->domain, r->op_type) : NULL;
    if (d)
        qmm_call_init(&r->call, d->kind, (int32_t)r->opset);
    qh_pb_reader_init(&rd, buf, len);
    while (qh_pb_next(&rd, &f, why, sizeof why) == 1) {
        if (f.num == 7) {
            read_attr(&f, r, d);
        } else if (f.num == 9) {
            read_meta(&f, r);
        } else if (f.num == 8 && r->kind == 3 && d && r->n_inputs < QMM_MAX_OP_INPUTS) {
            qh_tensor *t = &r->inputs[r->n_inputs];
            qh_error err;
            if (qh_parse_tensor(f.data, f.len, "input", t, &err) != 0)
                return -1;
            r->n_inputs++;
            for (int32_t i = 0; i < d->n_inputs; i++)
                if (strcmp(d->inputs[i].name, t->name) == 0)
                    *qmm_call_input(&r->call, i) = t->t;
        }
    }
    return 0;
}

static uint64_t request_id; /* of the request being answered */

static void put_reply_head(qh_pb_buf *b, int64_t kind, int64_t status, const char *message)
{
    qh_pb_put_varint_field(b, 1, (uint64_t)kind);
    qh_pb_put_varint_field(b, 8, strcmp(mode, "wrong-id") == 0 && kind == 3 ? request_id + 1
                                                                             : request_id);
    qh_pb_put_varint_field(b, 5, (uint64_t)status);
    if (message[0])
        qh_pb_put_string_field(b, 6, message);
}

static int hello_had_options; /* segv-on-options */

static void answer_call(request *r, const qmm_backend *ref)
{
    qh_pb_buf b;
    qh_pb_buf_init(&b);
    static long answered;
    int even = ++answered % 2 == 0;
    if (((strcmp(mode, "fill-then-segv") == 0 || strcmp(mode, "flip-then-segv") == 0) &&
         even) ||
        (strcmp(mode, "segv-on-options") == 0 && hello_had_options))
        signal(SIGSEGV, SIG_DFL), raise(SIGSEGV);
    if (once("crash-once="))
        signal(SIGSEGV, SIG_DFL), raise(SIGSEGV); /* a sanitizer's handler would exit instead */
    if (once("hang-once="))
        for (;;)
            pause();
    if (strncmp(mode, "slow=", 5) == 0) {
        double s = atof(mode + 5);
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&ts, NULL);
    }
    int spare = once("spare-once=");
    int wrong = !spare && strncmp(mode, "spare-once=", 11) == 0;
    if (strcmp(mode, "exit-on-call") == 0)
        exit(7);
    if (strcmp(mode, "forge") == 0) {
        fprintf(stderr, "1:PASSED forged\nSUMMARY: total:1 passed:1 failed:0\n");
        put_reply_head(&b, 3, QMM_INTERNAL, "x\n999:PASSED forged\nSUMMARY: total:1 passed:1");
        send_frame(&b);
        return;
    }
    if (strncmp(mode, "flood=", 6) == 0) {
        int lines = 0, width = 0;
        sscanf(mode + 6, "%d,%d", &lines, &width);
        for (int i = 0; i < lines; i++) {
            for (int j = 0; j < width; j++)
                fputc(1, stderr);
            fputc('\n', stderr);
        }
        fputs("the last line", stderr);
        fflush(stderr);
        put_reply_head(&b, 3, QMM_INTERNAL, "flooded");
        send_frame(&b);
        return;
    }
    if (strcmp(mode, "forge-stdout") == 0) {
        const char *s = "1:PASSED forged\nSUMMARY: total:1 passed:1 failed:0\n";
        write_full(s, strlen(s));
        return;
    }
    if (strcmp(mode, "oversize") == 0) {
        uint8_t head[4] = {0xf0, 0xff, 0xff, 0xff};
        write_full(head, 4);
        return;
    }
    if (strcmp(mode, "bad-field") == 0) {
        qh_pb_put_varint_field(&b, 1, 3);
        qh_pb_put_string_field(&b, 5, "OK");
        send_frame(&b);
        return;
    }
    qmm_tensor y = r->y;
    if (strcmp(mode, "wrong-shape") == 0)
        y.rank = 2, y.dims[0] = y.dims[1] = 1;
    int64_t n = qmm_tensor_numel(&y);
    size_t bytes = n > 0 ? (size_t)n * qmm_dtype_size(y.dtype) : 0;
    y.data = calloc(1, bytes ? bytes : 1);
    *qmm_call_output(&r->call) = y;
    qmm_status st;
    qmm_status_ok(&st);
    qmm_status_code code = strcmp(mode, "wrong-shape") == 0 ? QMM_OK
                                                            : qmm_backend_run(ref, &r->call, &st);
    if (wrong && code == QMM_OK && y.dtype == QMM_DTYPE_INT32)
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)y.data)[i] += 1;
    if (strncmp(mode, "wrong-from-k=", 13) == 0 && code == QMM_OK && bytes > 0) {
        const qmm_tensor *a = qmm_call_input_c(&r->call, 0);
        if (a && a->rank > 0 && a->dims[a->rank - 1] >= atol(mode + 13))
            ((uint8_t *)y.data)[bytes - 1] ^= 1;
    }
    if (strcmp(mode, "flip-then-segv") == 0 && code == QMM_OK && bytes > 0)
        ((uint8_t *)y.data)[0] ^= 1;
    if (strcmp(mode, "alternate") == 0 && even && code == QMM_OK && bytes > 0)
        ((uint8_t *)y.data)[0] ^= 1;
    if (strcmp(mode, "fill-then-segv") == 0 && code == QMM_OK)
        memset(y.data, 0xa5, bytes);
    put_reply_head(&b, 3, code, st.message);
    if (code == QMM_OK) {
        uint8_t *t;
        size_t len;
        qh_error err;
        if (qh_encode_tensor(&y, r->y_name, &t, &len, &err) == 0) {
            qh_pb_put_bytes_field(&b, 7, t, len);
            free(t);
        }
    }
    free(y.data);
    if (!spare) {
        send_frame(&b);
        return;
    }
    /* the answer, a spare query answer and a spare call answer: one write */
    qh_pb_buf all, q, again;
    qh_pb_buf_init(&all);
    qh_pb_buf_init(&q);
    qh_pb_buf_init(&again);
    qh_pb_put_raw(&again, b.data, b.len);
    put_reply_head(&q, 2, QMM_OK, "");
    frame_into(&all, &b);
    frame_into(&all, &q);
    frame_into(&all, &again);
    write_full(all.data, all.len);
    qh_pb_buf_free(&all);
}

/* What the close request does in close=HOW. */
static void misbehave_on_close(void)
{
    if (strcmp(mode, "close=segv") == 0)
        signal(SIGSEGV, SIG_DFL), raise(SIGSEGV);
    if (strcmp(mode, "close=exit9") == 0)
        exit(9);
    if (strcmp(mode, "close=silent") == 0)
        for (;;)
            pause();
    if (strcmp(mode, "close=garbage") == 0) {
        qh_pb_buf b;
        qh_pb_buf_init(&b);
        qh_pb_put_varint_field(&b, 1, 4);
        qh_pb_put_string_field(&b, 5, "OK");
        send_frame(&b);
        exit(0);
    }
}

static void linger_and_exit(void)
{
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    exit(0);
}

/* restart-twice=PATH, after the hello: waits for the next request; leaves it unread (exit 0)
 * unless PATH says the process before did; else returns 1: the request is to be read and then
 * answered by a child of this process once it has ended (ended_before_answering). */
static int restart_twice(const char *path)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    poll(&p, 1, -1);
    char last[16] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(last, sizeof last, f))
            last[0] = '\0';
        fclose(f);
    }
    int answer = strcmp(last, "left") == 0;
    f = fopen(path, "w");
    if (f) {
        fputs(answer ? "answered" : "left", f);
        fclose(f);
    }
    if (!answer)
        exit(0);
    return 1;
}

/* The request read, this process ends; a child of it answers, woken by the end of a pipe the
 * parent held (EOF as it exits: no sleep between its end and the answer). */
static void ended_before_answering(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        return; /* answered from here: no restart then, and the test says so */
    pid_t parent = getpid(), kid = fork();
    if (kid < 0)
        return;
    if (kid != 0)
        _exit(0);
    close(fds[1]);
    char c;
    while (read(fds[0], &c, 1) > 0)
        ;
    close(fds[0]);
    /* the pipe closes as the parent's files do, before it is a process that has ended
       (waitpid sees it once its children are handed on): wait for that too */
    while (getppid() == parent)
        sched_yield();
}

/* fail-to-start=HOW (above): exit status 1. */
static int fail_noisily(const char *how)
{
    static char block[1 << 16];
    if (strcmp(how, "traceback") == 0) {
        fputs("Traceback (most recent call last):\n"
              "  File \"/srv/my_backend.py\", line 3, in <module>\n"
              "    import my_kernels\n"
              "  File \"/srv/my_kernels.py\", line 1, in <module>\n"
              "    1 / 0\n"
              "ZeroDivisionError: division by zero\n",
              stderr);
    } else if (strcmp(how, "hostile") == 0) {
        for (int i = 0; i < 30; i++)
            fprintf(stderr, "noise %d\n", i);
        fputs("\x1b[2J\x1b]0;pwned\x07 bell\r\n1:PASSED forged/case\nSUMMARY: total:1 passed:1\n",
              stderr);
        fwrite("bin \0\xff\xfe\x80 end\n", 1, 13, stderr);
        fputs("no newline at the end", stderr);
    } else {
        int flood = strcmp(how, "flood") == 0;
        for (size_t i = 0; i < sizeof block; i++)
            block[i] = flood && i % 64 == 63 ? '\n' : 'y';
        for (int i = 0; i < (flood ? 1600 : 16); i++) /* 100 MB, or 1 MB */
            fwrite(block, 1, sizeof block, stderr);
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        mode = argv[1];
    qmm_status st;
    if (strcmp(mode, "fail-to-start") == 0) {
        fprintf(stderr, "test-child: needs the module 'nothing'\n");
        return 2;
    }
    if (strncmp(mode, "fail-to-start=", 14) == 0)
        return fail_noisily(mode + 14);
    qmm_backend *ref = qmm_reference_open(QMM_ABI_VERSION, "", &st);
    int one_request = strncmp(mode, "restart-twice=", 14) == 0, answer_later = 0;
    for (;;) {
        uint8_t head[4];
        if (read_full(head, 4) != 0)
            return 0; /* qmmcheck went away */
        uint32_t len = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
                       (uint32_t)head[3] << 24;
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf || read_full(buf, len) != 0)
            return 1;
        if (answer_later) { /* restart-twice: read whole, now end; a child answers */
            ended_before_answering();
            answer_later = 0;
        }
        request r;
        int bad = read_request(&r, buf, len);
        request_id = r.id;
        qh_pb_buf b;
        qh_pb_buf_init(&b);
        if (r.kind == 1) {
            if (r.has_options && strcmp(mode, "hang-on-options") == 0) {
                fputs("loading \033[2Jweights\n", stderr); /* then never answers the hello */
                fflush(stderr);
                for (;;)
                    pause();
            }
            hello_had_options = r.has_options;
            int refuse = r.has_options && strcmp(mode, "refuse-options") == 0;
            put_reply_head(&b, 1, refuse ? QMM_INVALID_ARGUMENT : QMM_OK,
                           refuse ? "no options known" : "");
            long v = strncmp(mode, "version=", 8) == 0 ? atol(mode + 8) : (long)r.version;
            qh_pb_put_varint_field(&b, 2, (uint64_t)v);
            qh_pb_put_string_field(&b, 3, "test-child");
            qh_pb_put_string_field(&b, 4, "the reference, over the exec protocol");
            send_frame(&b);
            if (strcmp(mode, "exit-after-hello") == 0)
                linger_and_exit();
            if (one_request)
                answer_later = restart_twice(mode + 14);
        } else if (r.kind == 2) {
            put_reply_head(&b, 2, QMM_OK, "");
            send_frame(&b);
            if (one_request)
                exit(0);
        } else if (r.kind == 3 && !bad) {
            answer_call(&r, ref);
            if (strcmp(mode, "exit-after-answer") == 0 || one_request)
                exit(0);
            if (strcmp(mode, "linger-exit") == 0)
                linger_and_exit();
        } else if (r.kind == 4) {
            misbehave_on_close();
            put_reply_head(&b, 4, QMM_OK, "");
            send_frame(&b);
            free(buf);
            ref->close(ref);
            return 0;
        }
        for (int i = 0; i < r.n_inputs; i++)
            qh_tensor_free(&r.inputs[i]);
        free(buf);
    }
}
