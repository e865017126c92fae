/* examples/vendor-plugin/mykernels.c — what a kernel vendor writes: a qmm backend plugin built
 * only from the installed headers (<qmm/qmm.h>).
 *
 * It implements what a typical first kernel covers — 2-D QLinearMatMul and MatMulInteger with
 * per-tensor uint8/int8 parameters and float scales — and answers UNSUPPORTED, with a reason,
 * for everything else, so qmmcheck reports those cases as SKIPPED instead of failing them.
 * Requantization uses double precision: y = round_half_even(acc * sa*sb/sy) + zy. That is
 * right almost everywhere; the edge suites show where it is not (near-ties).
 */
#include <math.h>
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

/* Rejects what the operator's definition forbids, as the contract requires. */
static qmm_status_code check(const qmm_tensor *a, const qmm_tensor *b, const qmm_tensor *y,
                             int32_t y_dtype, qmm_status *st)
{
    if (!is_q8(a->dtype) || !is_q8(b->dtype))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "a, b: uint8 or int8 required");
    if (a->dims[1] != b->dims[0])
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: K mismatch (%lld vs %lld)",
                              (long long)a->dims[1], (long long)b->dims[0]);
    if (y->dtype != y_dtype || y->rank != 2 || y->dims[0] != a->dims[0] ||
        y->dims[1] != b->dims[1])
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y: wrong dtype or shape");
    return QMM_OK;
}

static qmm_status_code my_qlinearmatmul(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                        qmm_status *st)
{
    qmm_status_code rc = my_query(self, &(qmm_call){.op = QMM_OP_QLINEARMATMUL,
                                                    .u.qlinearmatmul = *c}, st);
    if (rc != QMM_OK)
        return rc;
    if (check(&c->a, &c->b, &c->y, c->y_zero_point.dtype, st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    if (c->a_zero_point.dtype != c->a.dtype || c->b_zero_point.dtype != c->b.dtype)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "zero point type differs from its operand's");
    float sa, sb, sy;
    memcpy(&sa, c->a_scale.data, 4);
    memcpy(&sb, c->b_scale.data, 4);
    memcpy(&sy, c->y_scale.data, 4);
    if (!(sa > 0 && sb > 0 && sy > 0) || isinf(sa) || isinf(sb) || isinf(sy))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "scales must be finite and > 0");
    int64_t m = c->a.dims[0], k = c->a.dims[1], n = c->b.dims[1];
    int64_t za = load(&c->a_zero_point, 0), zb = load(&c->b_zero_point, 0);
    int64_t zy = load(&c->y_zero_point, 0);
    int64_t lo = c->y.dtype == QMM_DTYPE_INT8 ? -128 : 0, hi = lo + 255;
    double mult = (double)sa * (double)sb / (double)sy;
    unsigned char *y = c->y.data;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (int64_t kk = 0; kk < k; kk++)
                acc += (int32_t)((load(&c->a, i * k + kk) - za) * (load(&c->b, kk * n + j) - zb));
            double v = nearbyint((double)acc * mult) + (double)zy;
            int64_t q = v < (double)lo ? lo : v > (double)hi ? hi : (int64_t)v;
            y[i * n + j] = (unsigned char)q;
        }
    return qmm_status_ok(st);
}

static qmm_status_code my_matmulinteger(const qmm_backend *self, const qmm_matmulinteger *c,
                                        qmm_status *st)
{
    qmm_status_code rc = my_query(self, &(qmm_call){.op = QMM_OP_MATMULINTEGER,
                                                    .u.matmulinteger = *c}, st);
    if (rc != QMM_OK)
        return rc;
    if (check(&c->a, &c->b, &c->y, QMM_DTYPE_INT32, st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    int64_t m = c->a.dims[0], k = c->a.dims[1], n = c->b.dims[1];
    int64_t za = qmm_tensor_present(&c->a_zero_point) ? load(&c->a_zero_point, 0) : 0;
    int64_t zb = qmm_tensor_present(&c->b_zero_point) ? load(&c->b_zero_point, 0) : 0;
    int32_t *y = c->y.data;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint32_t acc = 0; /* wraps like int32 hardware, without signed-overflow UB */
            for (int64_t kk = 0; kk < k; kk++)
                acc += (uint32_t)((load(&c->a, i * k + kk) - za) * (load(&c->b, kk * n + j) - zb));
            y[i * n + j] = (int32_t)acc;
        }
    return qmm_status_ok(st);
}

static void my_close(qmm_backend *self)
{
    free(self);
}

/* The entry point qmmcheck looks up with dlsym. */
qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("mykernels", harness_abi, st)) /* qmm/backend.h */
        return NULL;
    if (!qmm_backend_no_options("mykernels", options, st))
        return NULL;
    qmm_backend *be = calloc(1, sizeof *be);
    if (!be) {
        qmm_status_oom(st, "mykernels", NULL);
        return NULL;
    }
    /* the ABI version, the table's size, the strings; every function NULL until set */
    qmm_backend_init(be, "mykernels", "example vendor kernels: 2-D, per-tensor", NULL);
    be->query = my_query;
    be->qlinearmatmul = my_qlinearmatmul;
    be->matmulinteger = my_matmulinteger;
    be->close = my_close;
    return be;
}
