/* peers/common/peer_call.c — the ONNX front end's rules and the parameter decoding every peer
 * shares (see peer_call.h). The messages name the input and the rule, as docs/semantics.md §2.5
 * asks; the wording is the peers' own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "peer_call.h"

static int is_q8(int32_t t)
{
    return t == QMM_DTYPE_UINT8 || t == QMM_DTYPE_INT8;
}

static int is_float8(int32_t t)
{
    return t >= QMM_DTYPE_FLOAT8E4M3FN && t <= QMM_DTYPE_FLOAT8E5M2FNUZ;
}

/* Operand at y's rank, with numpy's promotion of a 1-D operand (`col`: b's column form). */
static void promote(const qmm_tensor *t, int rank, int col, int64_t *out)
{
    int64_t d[QMM_MAX_RANK + 1];
    int r = t->rank;
    memcpy(d, t->dims, sizeof(int64_t) * (size_t)r);
    if (r == 1) {
        d[1] = col ? 1 : d[0];
        d[0] = col ? d[0] : 1;
        r = 2;
    }
    for (int i = 0; i < rank; i++)
        out[i] = i < rank - r ? 1 : d[i - (rank - r)];
}

static qmm_status_code check_buffer(const qmm_tensor *t, const char *name, qmm_status *st)
{
    int64_t n = qmm_tensor_numel(t);
    if (n < 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: bad dimensions", name);
    if (n > 0 && !t->data)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: NULL buffer", name);
    return QMM_OK;
}

qmm_status_code peer_geometry(const qmm_tensor *a, const qmm_tensor *b, const qmm_tensor *y,
                              int32_t y_dtype, peer_geom *g, qmm_status *st)
{
    if (a->rank < 1 || a->rank > QMM_MAX_RANK || b->rank < 1 || b->rank > QMM_MAX_RANK)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: rank must be 1..%d",
                              a->rank < 1 || a->rank > QMM_MAX_RANK ? "a" : "b", QMM_MAX_RANK);
    if (check_buffer(a, "a", st) || check_buffer(b, "b", st))
        return QMM_INVALID_ARGUMENT;
    int ra = a->rank < 2 ? 2 : a->rank, rb = b->rank < 2 ? 2 : b->rank;
    memset(g, 0, sizeof *g);
    g->rank = ra > rb ? ra : rb;
    promote(a, g->rank, 0, g->a);
    promote(b, g->rank, 1, g->b);
    int r = g->rank;
    g->m = g->a[r - 2];
    g->k = g->a[r - 1];
    g->n = g->b[r - 1];
    if (g->b[r - 2] != g->k)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: K mismatch: a has %lld, b has %lld",
                              (long long)g->k, (long long)g->b[r - 2]);
    g->batch = 1;
    int64_t pa = 1, pb = 1;
    for (int i = 0; i < r - 2; i++) {
        if (g->a[i] != g->b[i] && g->a[i] != 1 && g->b[i] != 1)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "b: batch dimension %d does not broadcast (%lld vs %lld)", i,
                                  (long long)g->a[i], (long long)g->b[i]);
        g->y[i] = g->a[i] == 1 ? g->b[i] : g->a[i];
        g->batch *= g->y[i];
        pa *= g->a[i];
        pb *= g->b[i];
    }
    g->y[r - 2] = g->m;
    g->y[r - 1] = g->n;
    g->a_batched = pa > 1;
    g->b_batched = pb > 1;
    /* y's shape drops what the promotion added. */
    int64_t want[QMM_MAX_RANK];
    int wr = 0;
    for (int i = 0; i < r - 2; i++)
        want[wr++] = g->y[i];
    if (a->rank > 1)
        want[wr++] = g->m;
    if (b->rank > 1)
        want[wr++] = g->n;
    if (y->dtype != y_dtype)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y: dtype %d, expected %d", (int)y->dtype,
                              (int)y_dtype);
    int same = y->rank == wr;
    for (int i = 0; same && i < wr; i++)
        same = y->dims[i] == want[i];
    if (!same)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y: shape is not numpy.matmul's");
    return check_buffer(y, "y", st);
}

peer_form peer_form_of(const qmm_tensor *p, int64_t n)
{
    if (!qmm_tensor_present(p))
        return PEER_ABSENT;
    int64_t e = qmm_tensor_numel(p);
    if (e == 1)
        return PEER_TENSOR;
    if (p->rank < 1 || p->dims[p->rank - 1] != n || e != n)
        return PEER_OTHER;
    return PEER_COLUMN;
}

int64_t peer_param_index(peer_form f, int64_t j)
{
    return f == PEER_COLUMN ? j : 0;
}

/* [] and [1] are the same shape; nothing else is merged (§2.2). */
static int same_shape(const qmm_tensor *s, const qmm_tensor *z)
{
    int rs = s->rank == 1 && s->dims[0] == 1 ? 0 : s->rank;
    int rz = z->rank == 1 && z->dims[0] == 1 ? 0 : z->rank;
    if (rs != rz)
        return 0;
    for (int i = 0; i < rs; i++)
        if (s->dims[i] != z->dims[i])
            return 0;
    return 1;
}

static qmm_status_code check_operand(const qmm_tensor *t, const char *name, int32_t opset,
                                     qmm_status *st)
{
    if (is_q8(t->dtype) || (opset >= 21 && is_float8(t->dtype)))
        return QMM_OK;
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: dtype %d (%s) not allowed at opset %d",
                          name, (int)t->dtype, qmm_dtype_name(t->dtype), (int)opset);
}

static qmm_status_code check_zero_point(const qmm_tensor *z, const char *zname,
                                        const qmm_tensor *op, int optional, qmm_status *st)
{
    if (optional && !qmm_tensor_present(z))
        return QMM_OK;
    if (z->dtype != op->dtype)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: dtype %d differs from its operand's %d",
                              zname, (int)z->dtype, (int)op->dtype);
    return check_buffer(z, zname, st);
}

static qmm_status_code check_scale(const qmm_tensor *s, const char *name, qmm_status *st)
{
    if (check_buffer(s, name, st))
        return QMM_INVALID_ARGUMENT;
    int64_t n = qmm_tensor_numel(s);
    for (int64_t i = 0; i < n; i++) {
        float v = peer_scale(s, i);
        if (!(v > 0.0f) || isinf(v))
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s: element %lld must be finite and > 0", name, (long long)i);
    }
    return QMM_OK;
}

/* A parameter of more than one element may not have more dimensions than what it describes (a's
 * for a's, b's for b's, y's for y's; §2.2): it broadcasts to no shape of that tensor. The forms
 * alone would take [1,1,1,N] for a y of shape [N] as per-column. */
static qmm_status_code check_rank(const qmm_tensor *p, const char *name, int max,
                                  const char *target, qmm_status *st)
{
    if (!qmm_tensor_present(p) || qmm_tensor_numel(p) == 1 || p->rank <= max)
        return QMM_OK;
    return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                          "%s: rank %d is more than %s's %d: not per-tensor and broadcasts to no "
                          "shape of %s", name, (int)p->rank, target, max, target);
}

qmm_status_code peer_check_qlinear(const qmm_qlinearmatmul *q, qmm_status *st)
{
    if (q->opset < 10)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "opset %d: QLinearMatMul needs 10 or later",
                              (int)q->opset);
    if (check_operand(&q->a, "a", q->opset, st) || check_operand(&q->b, "b", q->opset, st) ||
        check_operand(&q->y_zero_point, "y_zero_point", q->opset, st))
        return QMM_INVALID_ARGUMENT;
    int32_t ts = q->a_scale.dtype;
    int ok_ts = ts == QMM_DTYPE_FLOAT ||
                (q->opset >= 21 && (ts == QMM_DTYPE_FLOAT16 || ts == QMM_DTYPE_BFLOAT16));
    if (!ok_ts)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "a_scale: dtype %d not allowed at opset %d",
                              (int)ts, (int)q->opset);
    if (q->b_scale.dtype != ts || q->y_scale.dtype != ts)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "scales: types differ");
    if (check_zero_point(&q->a_zero_point, "a_zero_point", &q->a, 0, st) ||
        check_zero_point(&q->b_zero_point, "b_zero_point", &q->b, 0, st))
        return QMM_INVALID_ARGUMENT;
    const qmm_tensor *s[3] = {&q->a_scale, &q->b_scale, &q->y_scale};
    const qmm_tensor *z[3] = {&q->a_zero_point, &q->b_zero_point, &q->y_zero_point};
    const char *names[3] = {"a_scale", "b_scale", "y_scale"};
    const char *const of[3] = {"a", "b", "y"};
    const int32_t ranks[3] = {q->a.rank, q->b.rank, q->y.rank};
    for (int i = 0; i < 3; i++) {
        if (!same_shape(s[i], z[i]))
            return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: shape differs from its zero point's",
                                  names[i]);
        /* the zero point has the scale's shape: checking the scale's rank covers both */
        if (check_buffer(z[i], "zero point", st) || check_scale(s[i], names[i], st) ||
            check_rank(s[i], names[i], ranks[i], of[i], st))
            return QMM_INVALID_ARGUMENT;
    }
    return QMM_OK;
}

qmm_status_code peer_query_qlinear(const qmm_qlinearmatmul *q, peer_forms_fn forms,
                                   qmm_status *st)
{
    peer_geom g;
    qmm_status ignored;
    if (peer_geometry(&q->a, &q->b, &q->y, q->y_zero_point.dtype, &g, &ignored) != QMM_OK)
        return qmm_status_ok(st); /* invalid: the operator function says so */
    return forms(q, &g, st);
}

qmm_status_code peer_admit_qlinear(const qmm_qlinearmatmul *q, peer_forms_fn forms, peer_geom *g,
                                   qmm_status *st)
{
    qmm_status_code rc = peer_check_qlinear(q, st);
    if (rc == QMM_OK)
        rc = peer_geometry(&q->a, &q->b, &q->y, q->y_zero_point.dtype, g, st);
    if (rc == QMM_OK)
        rc = forms(q, g, st);
    return rc;
}

static void close_table(qmm_backend *self)
{
    free(self);
}

qmm_backend *peer_qlinear_table(const char *name, const char *description, peer_query_fn query,
                                peer_qlinear_fn qlinearmatmul, qmm_status *st)
{
    qmm_backend *be = calloc(1, sizeof *be);
    if (!be) {
        qmm_status_oom(st, name, NULL);
        return NULL;
    }
    qmm_backend_init(be, name, description, NULL);
    be->query = query;
    be->qlinearmatmul = qlinearmatmul;
    be->close = close_table;
    qmm_status_ok(st);
    return be;
}

qmm_status_code peer_check_integer(const qmm_matmulinteger *c, qmm_status *st)
{
    if (!is_q8(c->a.dtype) || !is_q8(c->b.dtype))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: uint8 or int8 required",
                              is_q8(c->a.dtype) ? "b" : "a");
    if (check_zero_point(&c->a_zero_point, "a_zero_point", &c->a, 1, st) ||
        check_zero_point(&c->b_zero_point, "b_zero_point", &c->b, 1, st) ||
        check_rank(&c->a_zero_point, "a_zero_point", c->a.rank, "a", st) ||
        check_rank(&c->b_zero_point, "b_zero_point", c->b.rank, "b", st))
        return QMM_INVALID_ARGUMENT;
    return QMM_OK;
}

float peer_scale(const qmm_tensor *s, int64_t i)
{
    const unsigned char *p = s->data;
    uint32_t bits;
    if (s->dtype == QMM_DTYPE_FLOAT) {
        memcpy(&bits, p + 4 * i, 4);
    } else {
        uint32_t h = (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
        if (s->dtype == QMM_DTYPE_BFLOAT16) {
            bits = h << 16;
        } else {
            /* float16: every value is exact in float; ldexp rebuilds it from its fields. */
            int e = (int)(h >> 10 & 31);
            uint32_t f = h & 1023;
            float v = e == 31 ? (f ? NAN : INFINITY)
                      : e == 0 ? ldexpf((float)f, -24)
                               : ldexpf((float)(f | 1024), e - 25);
            return h & 0x8000 ? -v : v;
        }
    }
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

int32_t peer_q8(const qmm_tensor *t, int64_t i)
{
    if (!qmm_tensor_present(t))
        return 0;
    const unsigned char *p = t->data;
    return t->dtype == QMM_DTYPE_INT8 ? (int8_t)p[i] : p[i];
}

int64_t peer_batch_source(const peer_geom *g, const int64_t *dims, int64_t yb)
{
    int64_t src = 0, stride = 1;
    for (int i = g->rank - 3; i >= 0; i--) {
        int64_t idx = yb % g->y[i];
        yb /= g->y[i];
        src += (dims[i] == 1 ? 0 : idx) * stride;
        stride *= dims[i];
    }
    return src;
}

int peer_open_check(const char *name, uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check(name, harness_abi, st))
        return 0;
    return qmm_backend_no_options(name, options, st);
}
