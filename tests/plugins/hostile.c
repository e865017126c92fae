/* tests/plugins/hostile.c — a plugin that misbehaves on purpose, built only from the public
 * headers. The option `mode=M` picks the misbehaviour (test_isolation.c drives each one):
 *   crash_open   qmm_backend_open dies with SIGSEGV
 *   hang_query   the capability query never returns
 *   crash_close  close dies with SIGSEGV
 *   old_table    returns a table from an older build: struct_size ends before qorderedmatmul
 *                and the allocation ends there too
 *   grow_dims    the query enlarges a.dims in the call it is given
 *   forge        the operator prints a forged case line and SUMMARY on stdout and stderr
 *   fork_abort   the operator forks a child that lingers 30 s, then aborts
 *   hang_run     the operator writes its pid to `pidfile=PATH`, then never returns
 *   big_alloc    the operator allocates and touches 256 MiB, answering OUT_OF_MEMORY when
 *                an allocation fails
 *   no_query     the table has no capability query
 *   tiny_table   struct_size claims a table smaller than any ABI's
 *   nowrite      the operator answers OK without writing y
 *   refuse_forged  the entry point refuses with a message holding a forged case line
 *   forged_name  the table's name holds a forged case line and SUMMARY
 *   hang_variant   qmm_backend_open never returns when given a `threads=` option (as a
 *                  --determinism variant is), and opens normally without one
 *   crash_variant  qmm_backend_open dies with SIGSEGV when given a `threads=` option
 *   crash_close_variant  close dies with SIGSEGV when it was opened with a `threads=` option
 *   zero_inputs  the operator sets every element of a to a's zero point and answers y = 0
 *                (MatMulInteger) or y = y's zero point (QLinearMatMul): right for the inputs
 *                as it left them (8-bit types, per-tensor zero points)
 *   exit0        the operator calls exit(0)
 *   escape       the operator starts a process in a session of its own (setsid, then a
 *                grandchild) that waits for qmmcheck to end (at most 20 s), then writes
 *                "FORGED" into `pidfile=PATH`; the operator writes zeros
 *   escape_watch as escape, but the process writes "FORGED" into `pidfile=PATH` as soon as
 *                PATH exists and is not empty (a report, written while qmmcheck still runs)
 *   garble       the operator writes 64 bytes of 'X' into fd 3 (the worker's channel to
 *                qmmcheck), then writes zeros
 *   parent_stdout  the operator opens its parent's standard output through
 *                /proc/PPID/fd/1 and writes a forged case line and SUMMARY into it
 * Otherwise the operator writes zeros. */
#define _DEFAULT_SOURCE /* usleep */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qmm/qmm.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

typedef struct hostile {
    char mode[32];
    int threads; /* opened with a threads= option, as a --determinism variant is */
    char pidfile[512];
} hostile;

static void crash(void)
{
    raise(SIGSEGV);
    abort();
}

static int is(const hostile *h, const char *mode)
{
    return strcmp(h->mode, mode) == 0;
}

static qmm_status_code h_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const hostile *h = self->impl;
    if (is(h, "hang_query"))
        for (;;)
            pause();
    if (is(h, "grow_dims") && call->op == QMM_OP_MATMULINTEGER) {
        /* the harness promised query a call it may not change; prove it gets a copy */
        qmm_call *c = (qmm_call *)call;
        c->u.matmulinteger.a.dims[0] *= 1 << 20;
    }
    return qmm_status_ok(st);
}

/* escape: a grandchild in a session of its own, left running when the operator returns */
/* Whether `path` exists and is not empty. */
static int written(const char *path)
{
    FILE *f = fopen(path, "r");
    int c = f ? fgetc(f) : EOF;
    if (f)
        fclose(f);
    return c != EOF;
}

static void escape(const char *path, int watch)
{
    pid_t parent = getppid(), child = fork();
    if (child != 0) {
        if (child > 0)
            waitpid(child, NULL, 0);
        return;
    }
    setsid();
    if (fork() == 0) {
        for (int i = 0; i < 20000 && watch && !written(path); i++)
            usleep(1000);
        for (int i = 0; i < 400 && !watch && kill(parent, 0) == 0; i++)
            usleep(50000);
        if (!watch)
            usleep(200000);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("FORGED\n", f);
            fclose(f);
        }
    }
    _exit(0);
}

static qmm_status_code h_run(const hostile *h, const qmm_tensor *y, qmm_status *st)
{
    if (is(h, "escape") || is(h, "escape_watch")) {
        escape(h->pidfile, is(h, "escape_watch"));
    } else if (is(h, "garble")) {
        char junk[64];
        memset(junk, 'X', sizeof junk);
        if (write(3, junk, sizeof junk) < 0)
            perror("hostile: garble");
    } else if (is(h, "parent_stdout")) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/1", (int)getppid());
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("\n99:PASSED forged-through-proc __REPRO: x\nSUMMARY: total:1 passed:1\n", f);
            fclose(f);
        }
    } else if (is(h, "forge")) {
        printf("\n1:PASSED forged-by-stdout __REPRO: x\nSUMMARY: total:1 passed:1 failed:0\n");
        fprintf(stderr, "\n2:PASSED forged-by-stderr\n");
    } else if (is(h, "fork_abort")) {
        if (fork() == 0) {
            sleep(30);
            _exit(0);
        }
        abort();
    } else if (is(h, "hang_run")) {
        FILE *f = fopen(h->pidfile, "w");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
        for (;;)
            pause();
    } else if (is(h, "big_alloc")) {
        size_t chunk = (size_t)16 << 20;
        void *blocks[16] = {0};
        int ok = 1;
        for (int i = 0; i < 16 && ok; i++) {
            blocks[i] = malloc(chunk);
            ok = blocks[i] != NULL;
            if (ok)
                memset(blocks[i], 1, chunk);
        }
        for (int i = 0; i < 16; i++)
            free(blocks[i]);
        if (!ok)
            return qmm_status_set(st, QMM_OUT_OF_MEMORY, "hostile: allocation failed");
    }
    int64_t n = qmm_tensor_numel(y);
    if (n > 0 && !is(h, "nowrite"))
        memset(y->data, 0, (size_t)n * qmm_dtype_size(y->dtype));
    return qmm_status_ok(st);
}

/* zero_inputs: a := its zero point (0 when absent), y := `y_value` (0 when absent). */
static qmm_status_code rewrite_inputs(const qmm_tensor *a, const qmm_tensor *az,
                                      const qmm_tensor *y, const qmm_tensor *yv, qmm_status *st)
{
    unsigned char za = az->data ? *(const unsigned char *)az->data : 0;
    memset(a->data, za, (size_t)qmm_tensor_numel(a));
    unsigned char v = yv && yv->data ? *(const unsigned char *)yv->data : 0;
    memset(y->data, v, (size_t)qmm_tensor_numel(y) * qmm_dtype_size(y->dtype));
    return qmm_status_ok(st);
}

static qmm_status_code h_mmi(const qmm_backend *self, const qmm_matmulinteger *c,
                             qmm_status *st)
{
    if (is(self->impl, "zero_inputs"))
        return rewrite_inputs(&c->a, &c->a_zero_point, &c->y, NULL, st);
    if (is(self->impl, "exit0"))
        exit(0);
    return h_run(self->impl, &c->y, st);
}

static qmm_status_code h_qlmm(const qmm_backend *self, const qmm_qlinearmatmul *c,
                              qmm_status *st)
{
    if (is(self->impl, "zero_inputs"))
        return rewrite_inputs(&c->a, &c->a_zero_point, &c->y, &c->y_zero_point, st);
    if (is(self->impl, "exit0"))
        exit(0);
    return h_run(self->impl, &c->y, st);
}

static void h_close(qmm_backend *self)
{
    hostile *h = self->impl;
    if (is(h, "crash_close") || (h->threads && is(h, "crash_close_variant")))
        crash();
    free(self->impl);
    free(self);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    (void)harness_abi;
    hostile *h = calloc(1, sizeof *h);
    if (!h) {
        qmm_status_set(st, QMM_OUT_OF_MEMORY, "hostile: out of memory");
        return NULL;
    }
    qmm_option opt;
    int threads = 0;
    for (const char *cur = options; qmm_option_next(&cur, &opt);) {
        threads |= qmm_option_is(&opt, "threads");
        char *dst = qmm_option_is(&opt, "mode") ? h->mode
                  : qmm_option_is(&opt, "pidfile") ? h->pidfile : NULL;
        size_t cap = dst == h->mode ? sizeof h->mode : sizeof h->pidfile;
        if (dst && (size_t)opt.value_len < cap)
            memcpy(dst, opt.value, (size_t)opt.value_len);
    }
    h->threads = threads;
    if (is(h, "crash_open") || (threads && is(h, "crash_variant")))
        crash();
    if (threads && is(h, "hang_variant"))
        for (;;)
            pause();
    if (is(h, "refuse_forged")) {
        free(h);
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "no\n999:PASSED forged\nSUMMARY: total:1 passed:1");
        return NULL;
    }
    /* an older build's table ends before qorderedmatmul: allocate exactly that much */
    size_t size = is(h, "old_table") ? offsetof(qmm_backend, qorderedmatmul) : sizeof(qmm_backend);
    qmm_backend *be = calloc(1, size);
    if (!be) {
        free(h);
        qmm_status_set(st, QMM_OUT_OF_MEMORY, "hostile: out of memory");
        return NULL;
    }
    be->abi_version = QMM_ABI_VERSION;
    be->struct_size = is(h, "tiny_table") ? 8 : (uint32_t)size;
    be->name = is(h, "forged_name") ? "hostile\n999:PASSED forged\nSUMMARY: total:1 passed:1"
                                    : "hostile";
    be->description = "misbehaves on purpose";
    be->impl = h;
    be->query = is(h, "no_query") ? NULL : h_query;
    be->matmulinteger = h_mmi;
    be->qlinearmatmul = h_qlmm;
    if (size == sizeof(qmm_backend))
        be->close = h_close;
    return be;
}
