/* examples/vendor-plugin/mykernels.c — what a kernel vendor writes: a qmm backend plugin built
 * only from the installed headers (<qmm/qmm.h>).
 *
 * It implements what a typical first kernel covers — 2-D QLinearMatMul and MatMulInteger with
 * per-tensor uint8/int8 parameters and float scales — and answers UNSUPPORTED, with a reason,
 * for everything else, so qmmcheck reports those cases as SKIPPED instead of failing them.
 * Requantization uses double precision: y = round_half_even(acc * sa*sb/sy) + zy. That is
 * right almost everywhere; the edge suites show where it is not (near-ties).
 *
 * Accumulation is exact in int64, then wrapped to int32 as a 32-bit accumulator would wrap: the
 * spec (semantics.md, "The int32 overflow rule") accepts that result where the exact sum does not
 * fit int32, and MatMulInteger's output is the wrapped sum. Option `threads=N` (1 to 64, default
 * 1) splits the rows of y among N threads, so that `qmmcheck run --determinism` (variants
 * threads=1;threads=2;threads=3) compares real threaded runs; any other option is refused.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <qmm/qmm.h>

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

static int is_q8(int32_t dtype)
{
    return dtype == QMM_DTYPE_UINT8 || dtype == QMM_DTYPE_INT8;
}

static int is_float8(int32_t dtype)
{
    return dtype >= QMM_DTYPE_FLOAT8E4M3FN && dtype <= QMM_DTYPE_FLOAT8E5M2FNUZ;
}

static int64_t load(const qmm_tensor *t, int64_t i)
{
    const unsigned char *p = t->data;
    return t->dtype == QMM_DTYPE_INT8 ? (int8_t)p[i] : p[i];
}

static int per_tensor(const qmm_tensor *t)
{
    return !qmm_tensor_present(t) || qmm_tensor_numel(t) == 1;
}

/* The one question qmmcheck asks before every call: do you do this? */
static qmm_status_code my_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    (void)self;
    const qmm_tensor *a, *b, *params[6];
    int np = 0;
    if (call->op == QMM_OP_QLINEARMATMUL) {
        const qmm_qlinearmatmul *q = &call->u.qlinearmatmul;
        a = &q->a;
        b = &q->b;
        const qmm_tensor *p[6] = {&q->a_scale, &q->a_zero_point, &q->b_scale,
                                  &q->b_zero_point, &q->y_scale, &q->y_zero_point};
        memcpy(params, p, sizeof p);
        np = 6;
        if (q->a_scale.dtype != QMM_DTYPE_FLOAT || q->b_scale.dtype != QMM_DTYPE_FLOAT ||
            q->y_scale.dtype != QMM_DTYPE_FLOAT)
            return qmm_status_set(st, QMM_UNSUPPORTED, "mykernels: float scales only");
        /* Opset 21's float8 forms are valid calls this kernel does not compute: UNSUPPORTED,
         * not the INVALID_ARGUMENT that check() gives a type no opset allows. */
        if (is_float8(q->a.dtype) || is_float8(q->b.dtype) || is_float8(q->y_zero_point.dtype))
            return qmm_status_set(st, QMM_UNSUPPORTED, "mykernels: float8 not implemented");
    } else if (call->op == QMM_OP_MATMULINTEGER) {
        a = &call->u.matmulinteger.a;
        b = &call->u.matmulinteger.b;
        params[np++] = &call->u.matmulinteger.a_zero_point;
        params[np++] = &call->u.matmulinteger.b_zero_point;
    } else {
        return qmm_status_set(st, QMM_UNSUPPORTED, "mykernels: %s not implemented",
                              qmm_op_name(call->op));
    }
    if (a->rank != 2 || b->rank != 2)
        return qmm_status_set(st, QMM_UNSUPPORTED, "mykernels: 2-D operands only");
    for (int i = 0; i < np; i++)
        if (!per_tensor(params[i]))
            return qmm_status_set(st, QMM_UNSUPPORTED, "mykernels: per-tensor parameters only");
    return qmm_status_ok(st);
}

/* Rejects what the operator's definition forbids, as the contract requires (semantics.md §2.5
 * and §3): operand types, zero points of another type than their operand's, K, y. */
static qmm_status_code check(const qmm_tensor *a, const qmm_tensor *b, const qmm_tensor *za,
                             const qmm_tensor *zb, const qmm_tensor *y, int32_t y_dtype,
                             qmm_status *st)
{
    if (!is_q8(a->dtype) || !is_q8(b->dtype))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "a, b: uint8 or int8 required");
    if ((qmm_tensor_present(za) && za->dtype != a->dtype) ||
        (qmm_tensor_present(zb) && zb->dtype != b->dtype))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "zero point type differs from its operand's");
    if (a->dims[1] != b->dims[0])
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: K mismatch (%lld vs %lld)",
                              (long long)a->dims[1], (long long)b->dims[0]);
    if (y->dtype != y_dtype || y->rank != 2 || y->dims[0] != a->dims[0] ||
        y->dims[1] != b->dims[1])
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y: wrong dtype or shape");
    return QMM_OK;
}

/* The backend's own state: the option threads=N. */
typedef struct my_impl {
    int threads;
} my_impl;

/* The exact sum of products, wrapped to int32 as a 32-bit accumulator wraps. No term or partial
 * sum overflows int64: each term is at most 255 * 255, and K would need 2^47 of them. The wrap
 * is written out, so that no conversion depends on the compiler. */
static int32_t dot_wrapped(const qmm_tensor *a, const qmm_tensor *b, int64_t i, int64_t j,
                           int64_t k, int64_t n, int64_t za, int64_t zb)
{
    int64_t acc = 0;
    for (int64_t kk = 0; kk < k; kk++)
        acc += (load(a, i * k + kk) - za) * (load(b, kk * n + j) - zb);
    uint32_t u = (uint32_t)acc; /* modulo 2^32: defined for unsigned types */
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

/* One call's rows: what each thread computes, rows [r0, r1) of y. */
typedef struct rows_job {
    void (*rows)(const void *ctx, int64_t r0, int64_t r1);
    const void *ctx;
    int64_t r0, r1;
} rows_job;

static void *rows_thread(void *arg)
{
    rows_job *job = arg;
    job->rows(job->ctx, job->r0, job->r1);
    return NULL;
}

/* Rows 0..m-1 split among the backend's threads; this thread takes the first share, and a share
 * whose thread cannot be started is computed here too. */
static void for_rows(const qmm_backend *self, int64_t m,
                     void (*rows)(const void *ctx, int64_t r0, int64_t r1), const void *ctx)
{
    enum { MAX_THREADS = 64 };
    int nt = ((const my_impl *)self->impl)->threads;
    if (m < nt)
        nt = (int)m;
    if (nt <= 1) {
        rows(ctx, 0, m);
        return;
    }
    pthread_t tid[MAX_THREADS];
    rows_job job[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < nt; t++)
        job[t] = (rows_job){rows, ctx, m * t / nt, m * (t + 1) / nt};
    for (int t = 1; t < nt; t++)
        started[t] = pthread_create(&tid[t], NULL, rows_thread, &job[t]) == 0;
    rows_thread(&job[0]);
    for (int t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            rows_thread(&job[t]);
    }
}

typedef struct ql_ctx {
    const qmm_qlinearmatmul *c;
    int64_t k, n, za, zb, zy, lo, hi;
    double mult;
} ql_ctx;

static void ql_rows(const void *ctx, int64_t r0, int64_t r1)
{
    const ql_ctx *q = ctx;
    unsigned char *y = q->c->y.data;
    for (int64_t i = r0; i < r1; i++)
        for (int64_t j = 0; j < q->n; j++) {
            int32_t acc = dot_wrapped(&q->c->a, &q->c->b, i, j, q->k, q->n, q->za, q->zb);
            double v = nearbyint((double)acc * q->mult) + (double)q->zy;
            int64_t r = v < (double)q->lo ? q->lo : v > (double)q->hi ? q->hi : (int64_t)v;
            y[i * q->n + j] = (unsigned char)r;
        }
}

static qmm_status_code my_qlinearmatmul(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                        qmm_status *st)
{
    qmm_status_code rc = my_query(self, &(qmm_call){.op = QMM_OP_QLINEARMATMUL,
                                                    .u.qlinearmatmul = *c}, st);
    if (rc != QMM_OK)
        return rc;
    /* QLinearMatMul's zero points are required inputs, and y's type is y_zero_point's */
    if (!qmm_tensor_present(&c->a_zero_point) || !qmm_tensor_present(&c->b_zero_point) ||
        !is_q8(c->y_zero_point.dtype))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "zero points: required, uint8 or int8");
    if (check(&c->a, &c->b, &c->a_zero_point, &c->b_zero_point, &c->y, c->y_zero_point.dtype,
              st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    float sa, sb, sy;
    memcpy(&sa, c->a_scale.data, 4);
    memcpy(&sb, c->b_scale.data, 4);
    memcpy(&sy, c->y_scale.data, 4);
    if (!(sa > 0 && sb > 0 && sy > 0) || isinf(sa) || isinf(sb) || isinf(sy))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "scales must be finite and > 0");
    int64_t lo = c->y.dtype == QMM_DTYPE_INT8 ? -128 : 0;
    ql_ctx q = {.c = c, .k = c->a.dims[1], .n = c->b.dims[1],
                .za = load(&c->a_zero_point, 0), .zb = load(&c->b_zero_point, 0),
                .zy = load(&c->y_zero_point, 0), .lo = lo, .hi = lo + 255,
                .mult = (double)sa * (double)sb / (double)sy};
    for_rows(self, c->a.dims[0], ql_rows, &q);
    return qmm_status_ok(st);
}

typedef struct mi_ctx {
    const qmm_matmulinteger *c;
    int64_t k, n, za, zb;
} mi_ctx;

static void mi_rows(const void *ctx, int64_t r0, int64_t r1)
{
    const mi_ctx *q = ctx;
    int32_t *y = q->c->y.data;
    for (int64_t i = r0; i < r1; i++)
        for (int64_t j = 0; j < q->n; j++)
            y[i * q->n + j] = dot_wrapped(&q->c->a, &q->c->b, i, j, q->k, q->n, q->za, q->zb);
}

static qmm_status_code my_matmulinteger(const qmm_backend *self, const qmm_matmulinteger *c,
                                        qmm_status *st)
{
    qmm_status_code rc = my_query(self, &(qmm_call){.op = QMM_OP_MATMULINTEGER,
                                                    .u.matmulinteger = *c}, st);
    if (rc != QMM_OK)
        return rc;
    if (check(&c->a, &c->b, &c->a_zero_point, &c->b_zero_point, &c->y, QMM_DTYPE_INT32, st) !=
        QMM_OK)
        return QMM_INVALID_ARGUMENT;
    mi_ctx q = {.c = c, .k = c->a.dims[1], .n = c->b.dims[1],
                .za = qmm_tensor_present(&c->a_zero_point) ? load(&c->a_zero_point, 0) : 0,
                .zb = qmm_tensor_present(&c->b_zero_point) ? load(&c->b_zero_point, 0) : 0};
    for_rows(self, c->a.dims[0], mi_rows, &q);
    return qmm_status_ok(st);
}

static void my_close(qmm_backend *self)
{
    free(self->impl);
    free(self);
}

/* The entry point qmmcheck looks up with dlsym. */
qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("mykernels", harness_abi, st)) /* qmm/backend.h */
        return NULL;
    my_impl opts = {.threads = 1};
    qmm_option opt;
    for (const char *cur = options; qmm_option_next(&cur, &opt);) {
        long v;
        if (!qmm_option_is(&opt, "threads")) {
            qmm_option_refuse(st, &opt, "mykernels knows only threads=N");
            return NULL;
        }
        if (!qmm_option_int(&opt, 1, 64, &v)) {
            qmm_option_refuse(st, &opt, "threads must be 1..64");
            return NULL;
        }
        opts.threads = (int)v;
    }
    qmm_backend *be = calloc(1, sizeof *be);
    my_impl *impl = malloc(sizeof *impl);
    if (!be || !impl) {
        free(be);
        free(impl);
        qmm_status_oom(st, "mykernels", NULL);
        return NULL;
    }
    *impl = opts;
    /* the ABI version, the table's size, the strings; every function NULL until set */
    qmm_backend_init(be, "mykernels", "example vendor kernels: 2-D, per-tensor", impl);
    be->query = my_query;
    be->qlinearmatmul = my_qlinearmatmul;
    be->matmulinteger = my_matmulinteger;
    be->close = my_close;
    return be;
}
