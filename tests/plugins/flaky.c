/* tests/plugins/flaky.c — a plugin that answers through the reference, except that some of its
 * answers are wrong (every element of y changed): a backend that is not deterministic, or that
 * fails only on large cases, for test_reduce.c. Options, comma-separated:
 *   wrong=N   only the first N operator calls this table answers are wrong (default: all);
 *             the count lives in the table, so it runs over every case of one qmmcheck
 *             command (in the isolated worker as in process)
 *   min-k=K   only calls whose K (a's last dimension) is at least K are wrong
 *   right=N   the first N calls are right, every later one wrong (a kernel that passes a
 *             check and then answers otherwise: bench's timed rounds)
 *   lazy=1    answers OK at once, y untouched, unless every byte of y is 0xa5 (qmmcheck's
 *             fill): right only where the caller refilled y since the last call
 *   cache=1   keeps its first answer and copies it into y on every later call without
 *             computing (right for bench's one fixed problem, far above any int8 peak)
 *   quote-name=1  its name holds quotes and a backslash, as a JSON field injection
 *   k-multiple=N  answers UNSUPPORTED (query and call) where K is not a multiple of N: a
 *             kernel whose capability depends on a dimension, not only on the form
 *   poison=N  right until a call whose y has at least N elements; that call and every later
 *             one wrong (scratch a large call leaves stale: a small case fails only after
 *             a large one, never on its own in a fresh process)
 *   poison-global=1  poison='s state in the library's globals, not the table: a table
 *             opened again in the same process is poisoned too (only a new process is not)
 *   slow-from-open=N  with FLAKY_OPEN_LOG naming a file: each open appends a line to it, and
 *             the table opened as the N-th or later sleeps 1 s in every call (a test can then
 *             signal qmmcheck while that table's calls run: reduce's confirmation, which
 *             opens the backend again)
 * MatMulInteger and QLinearMatMul only (QOrderedMatMul: UNSUPPORTED). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qmm/qmm.h"
#include "over_reference.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

typedef struct flaky {
    qmm_backend *ref;
    uint64_t calls, wrong; /* calls answered; how many of the first are wrong */
    uint64_t right;        /* how many of the first are right (before the wrong ones) */
    int64_t min_k;
    uint64_t lazy, cache, quote_name, k_multiple;
    uint64_t poison;  /* poison=N: the y size from which on (and after which) answers are wrong */
    int poisoned;
    uint64_t slow_from_open; /* slow-from-open=N */
    uint64_t poison_global;  /* poison-global=1: poisoned is the library's, not the table's */
    int slow;                /* this table was opened N-th or later: 1 s a call */
    unsigned char *kept; /* cache=1: the first answer */
    size_t kept_len;
} flaky;

/* lazy=1: 1 when some byte of y is not the fill (y answered before: nothing is done) */
static int not_refilled(const qmm_tensor *y)
{
    size_t n = (size_t)qmm_tensor_numel(y) * qmm_dtype_size(y->dtype);
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)y->data)[i] != 0xa5)
            return 1;
    return 0;
}

/* cache=1: 1 when y was answered from the first answer kept; else the answer is kept. */
static int from_cache(flaky *f, const qmm_tensor *y, int answered)
{
    size_t n = (size_t)qmm_tensor_numel(y) * qmm_dtype_size(y->dtype);
    if (f->kept && f->kept_len == n) {
        memcpy(y->data, f->kept, n);
        return 1;
    }
    if (answered && !f->kept && (f->kept = malloc(n ? n : 1)) != NULL) {
        memcpy(f->kept, y->data, n);
        f->kept_len = n;
    }
    return 0;
}

/* K: a's last dimension (0 for a scalar a) */
static int64_t k_of(const qmm_tensor *a)
{
    return a->rank > 0 ? a->dims[a->rank - 1] : 0;
}

/* k-multiple=N: 1 when K is not a multiple of N */
static int k_refused(const flaky *f, const qmm_tensor *a)
{
    return f->k_multiple > 1 && k_of(a) % (int64_t)f->k_multiple != 0;
}

static qmm_status_code f_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const flaky *f = self->impl;
    const qmm_backend *ref = f->ref;
    if (call->op == QMM_OP_QORDEREDMATMUL)
        return qmm_status_set(st, QMM_UNSUPPORTED, "flaky: QOrderedMatMul is not supported");
    const qmm_tensor *a = call->op == QMM_OP_MATMULINTEGER ? &call->u.matmulinteger.a
                          : call->op == QMM_OP_QLINEARMATMUL ? &call->u.qlinearmatmul.a
                                                             : NULL;
    if (a && k_refused(f, a))
        return qmm_status_set(st, QMM_UNSUPPORTED, "flaky: K is not a multiple of %llu",
                              (unsigned long long)f->k_multiple);
    return ref->query(ref, call, st);
}

/* The reference's answer, then every element's low byte flipped when this call is a wrong one. */
static qmm_status_code answer(const qmm_backend *self, qmm_call *call, const qmm_tensor *a,
                              const qmm_tensor *y, qmm_status *st)
{
    flaky *f = self->impl;
    if (f->slow) {
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
    }
    if (k_refused(f, a))
        return qmm_status_set(st, QMM_UNSUPPORTED, "flaky: K is not a multiple of %llu",
                              (unsigned long long)f->k_multiple);
    if ((f->lazy && not_refilled(y)) || (f->cache && from_cache(f, y, 0)))
        return qmm_status_ok(st);
    qmm_status_code rc = qmm_backend_run(f->ref, call, st);
    if (f->cache)
        from_cache(f, y, rc == QMM_OK);
    int64_t k = k_of(a);
    uint64_t nth = f->calls++;
    static int poisoned_globally; /* poison-global=1 */
    if (f->poison && (uint64_t)qmm_tensor_numel(y) >= f->poison) {
        f->poisoned = 1;
        poisoned_globally |= f->poison_global != 0;
    }
    int wrong = f->poison ? f->poisoned || (f->poison_global && poisoned_globally)
                          : nth >= f->right && nth - f->right < f->wrong && k >= f->min_k;
    if (wrong && rc == QMM_OK) {
        int64_t n = qmm_tensor_numel(y);
        size_t es = qmm_dtype_size(y->dtype);
        for (int64_t i = 0; i < n; i++)
            ((unsigned char *)y->data)[(size_t)i * es] ^= 1;
    }
    return rc;
}

static qmm_status_code f_mmi(const qmm_backend *self, const qmm_matmulinteger *c,
                             qmm_status *st)
{
    qmm_call call = {.op = QMM_OP_MATMULINTEGER, .u.matmulinteger = *c};
    return answer(self, &call, &c->a, &c->y, st);
}

static qmm_status_code f_qlmm(const qmm_backend *self, const qmm_qlinearmatmul *c,
                              qmm_status *st)
{
    qmm_call call = {.op = QMM_OP_QLINEARMATMUL, .u.qlinearmatmul = *c};
    return answer(self, &call, &c->a, &c->y, st);
}

static void f_close(qmm_backend *self)
{
    free(((flaky *)self->impl)->kept);
    over_reference_close(self);
}

/* "wrong=N,min-k=K,right=N" into f; 0, or -1 naming what it cannot read. */
static int parse(const char *options, flaky *f, qmm_status *st)
{
    char buf[256];
    f->wrong = UINT64_MAX;
    size_t len = strlen(options);
    if (len >= sizeof buf) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "flaky: options too long");
        return -1;
    }
    memcpy(buf, options, len + 1);
    static const char *const names[] = {"wrong=", "min-k=", "right=", "lazy=", "cache=",
                                         "quote-name=", "k-multiple=", "poison=",
                                         "slow-from-open=", "poison-global="};
    uint64_t *fields[] = {&f->wrong, (uint64_t *)&f->min_k, &f->right, &f->lazy, &f->cache,
                          &f->quote_name, &f->k_multiple, &f->poison, &f->slow_from_open,
                          &f->poison_global};
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *end = NULL;
        size_t i = 0, n = 0;
        while (i < sizeof names / sizeof names[0] &&
               strncmp(w, names[i], n = strlen(names[i])) != 0)
            i++;
        if (i < sizeof names / sizeof names[0])
            *fields[i] = strtoull(w + n, &end, 10);
        if (!end || end == w + n || *end) {
            qmm_status_set(st, QMM_INVALID_ARGUMENT, "flaky: unknown option '%s'", w);
            return -1;
        }
    }
    return 0;
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("flaky", harness_abi, st))
        return NULL;
    qmm_backend *be = over_reference_table(harness_abi, "flaky",
                                           "the reference, with some answers wrong",
                                           sizeof(flaky), st);
    if (!be)
        return NULL;
    if (parse(options, be->impl, st) != 0) {
        be->close(be);
        return NULL;
    }
    flaky *f = be->impl;
    const char *log = getenv("FLAKY_OPEN_LOG");
    if (f->slow_from_open && log) { /* this open's number: the lines before it, plus one */
        FILE *lf = fopen(log, "a+");
        uint64_t n = 1;
        if (lf) {
            rewind(lf);
            for (int c; (c = fgetc(lf)) != EOF;)
                n += c == '\n';
            fputs("open\n", lf);
            fclose(lf);
        }
        f->slow = n >= f->slow_from_open;
    }
    if (((flaky *)be->impl)->quote_name)
        be->name = "flaky\", \"checked\": true, \"status\": \"PASSED \\";
    be->close = f_close;
    be->query = f_query;
    be->matmulinteger = f_mmi;
    be->qlinearmatmul = f_qlmm;
    return be;
}
