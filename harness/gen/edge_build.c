/* harness/gen/edge_build.c — the builders the edge suites make their cases with (see
 * edge_build.h). */
#include "harness/gen/edge_build.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/tensor.h"
#include "harness/base/array.h"

/* ---- cases ---- */

void qh_edge_fail(qh_edge_builder *x, const char *why)
{
    if (!x->failed)
        snprintf(x->why, sizeof x->why, "%s", why);
    x->failed = 1;
}

void qh_edge_tag(qh_edge_case *c, const char *tag)
{
    if (qh_meta_has_tag(&c->meta, tag) || c->meta.n_tags == QH_META_MAX_TAGS)
        return;
    snprintf(c->meta.tags[c->meta.n_tags++], sizeof c->meta.tags[0], "%s", tag);
}

void qh_edge_describe(qh_edge_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->meta.description, sizeof c->meta.description, fmt, ap);
    va_end(ap);
}

qh_edge_case *qh_edge_add_case(qh_edge_builder *x, qmm_op_kind op, int32_t opset,
                               const char *fmt, ...)
{
    qh_edge_cases *l = x->out;
    if (qh_array_reserve(&l->items, &l->cap, l->count, sizeof *l->items) != 0) {
        qh_edge_fail(x, "out of memory");
        return NULL;
    }
    qh_edge_case *c = &l->items[l->count++];
    memset(c, 0, sizeof *c);
    qh_meta_init(&c->meta);
    char leaf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(leaf, sizeof leaf, fmt, ap);
    va_end(ap);
    snprintf(c->name, sizeof c->name, "%s/%s/%s", qmm_op_desc_of(op)->slug, x->suite->name, leaf);
    snprintf(c->meta.provenance, sizeof c->meta.provenance,
             "qmmcheck edge generator, suite %s, seed %llu", x->suite->name,
             (unsigned long long)x->seed);
    qh_problem_init(&c->problem, op, opset);
    qh_edge_tag(c, x->suite->name);
    return c;
}

void qh_edge_drop_last_case(qh_edge_builder *x)
{
    qh_edge_case *c = &x->out->items[x->out->count - 1];
    qh_problem_free(&c->problem);
    x->out->count--;
}

qmm_qlinearmatmul *qh_edge_qlinearmatmul(qh_edge_case *c)
{
    return &c->problem.call.u.qlinearmatmul;
}

qmm_matmulinteger *qh_edge_matmulinteger(qh_edge_case *c)
{
    return &c->problem.call.u.matmulinteger;
}

/* ---- tensors ---- */

/* Allocates *t (zeroed, owned by the case's problem); its element count, or -1 with the build
 * failed, so that the callers' loops write nothing. */
static int64_t new_tensor(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t, int32_t dtype,
                          int32_t rank, const int64_t *dims)
{
    if (!qh_problem_tensor(&c->problem, t, dtype, rank, dims)) {
        qh_edge_fail(x, "out of memory");
        return -1;
    }
    return qmm_tensor_numel(t);
}

void qh_edge_int_tensor(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t, int32_t dtype,
                        int32_t rank, const int64_t *dims, const int64_t *values)
{
    int64_t n = new_tensor(x, c, t, dtype, rank, dims);
    for (int64_t i = 0; values && i < n; i++)
        qh_tensor_set_int(t, i, values[i]);
}

void qh_edge_int_tensor_filled(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                               int32_t dtype, int32_t rank, const int64_t *dims, int64_t value)
{
    int64_t n = new_tensor(x, c, t, dtype, rank, dims);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_int(t, i, value);
}

int64_t qh_edge_int_min(int32_t dtype) { return dtype == QMM_DTYPE_UINT8 ? 0 : -128; }
int64_t qh_edge_int_max(int32_t dtype) { return dtype == QMM_DTYPE_UINT8 ? 255 : 127; }

void qh_edge_int_tensor_random(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                               int32_t dtype, int32_t rank, const int64_t *dims, int64_t lo,
                               int64_t hi)
{
    int64_t n = new_tensor(x, c, t, dtype, rank, dims);
    if (lo < qh_edge_int_min(dtype))
        lo = qh_edge_int_min(dtype);
    if (hi > qh_edge_int_max(dtype))
        hi = qh_edge_int_max(dtype);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_int(t, i, qh_rng_range(&x->rng, lo, hi));
}

void qh_edge_int_tensor_full_range(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                                   int32_t dtype, int32_t rank, const int64_t *dims)
{
    qh_edge_int_tensor_random(x, c, t, dtype, rank, dims, qh_edge_int_min(dtype),
                              qh_edge_int_max(dtype));
}

void qh_edge_scale_tensor(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t, int32_t dtype,
                          int32_t rank, const int64_t *dims, const double *values)
{
    int64_t n = new_tensor(x, c, t, dtype, rank, dims);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(t, i, values[i]);
}

void qh_edge_scale_tensor_filled(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                                 int32_t dtype, int32_t rank, const int64_t *dims, double value)
{
    int64_t n = new_tensor(x, c, t, dtype, rank, dims);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(t, i, value);
}

double qh_edge_short_scale(qh_edge_builder *x, int e_lo, int e_hi)
{
    /* two statements: argument evaluation order is unspecified, and gcc and clang differ */
    double m = 1.0 + 0.25 * (double)qh_rng_range(&x->rng, 0, 3);
    return ldexp(m, (int)qh_rng_range(&x->rng, e_lo, e_hi));
}

void qh_edge_scale_tensor_random(qh_edge_builder *x, qh_edge_case *c, qmm_tensor *t,
                                 int32_t dtype, int32_t rank, const int64_t *dims, int e_lo,
                                 int e_hi)
{
    int64_t n = new_tensor(x, c, t, dtype, rank, dims);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(t, i, qh_edge_short_scale(x, e_lo, e_hi));
}

void qh_edge_per_tensor_params(qh_edge_builder *x, qh_edge_case *c, int32_t scale_type,
                               double sa, int64_t za, double sb, int64_t zb, double sy,
                               int64_t zy, int32_t ty)
{
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    qh_edge_scale_tensor_filled(x, c, &q->a_scale, scale_type, SCALAR, sa);
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, q->a.dtype, SCALAR, za);
    qh_edge_scale_tensor_filled(x, c, &q->b_scale, scale_type, SCALAR, sb);
    qh_edge_int_tensor_filled(x, c, &q->b_zero_point, q->b.dtype, SCALAR, zb);
    qh_edge_scale_tensor_filled(x, c, &q->y_scale, scale_type, SCALAR, sy);
    qh_edge_int_tensor_filled(x, c, &q->y_zero_point, ty, SCALAR, zy);
}

qmm_tensor *qh_edge_operand(qh_edge_case *c, int which)
{
    if (c->problem.call.op == QMM_OP_MATMULINTEGER)
        return which ? &qh_edge_matmulinteger(c)->b : &qh_edge_matmulinteger(c)->a;
    return which ? &qh_edge_qlinearmatmul(c)->b : &qh_edge_qlinearmatmul(c)->a;
}

void qh_edge_unit_params(qh_edge_builder *x, qh_edge_case *c, int64_t za, int64_t zb, double sy,
                         int64_t zy, int32_t ty)
{
    if (c->problem.call.op == QMM_OP_MATMULINTEGER) {
        qmm_matmulinteger *m = qh_edge_matmulinteger(c);
        qh_edge_int_tensor_filled(x, c, &m->a_zero_point, m->a.dtype, SCALAR, za);
        qh_edge_int_tensor_filled(x, c, &m->b_zero_point, m->b.dtype, SCALAR, zb);
    } else {
        qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1.0, za, 1.0, zb, sy, zy, ty);
    }
}

void qh_edge_random_params(qh_edge_builder *x, qh_edge_case *c, int32_t scale_type,
                           qh_edge_shape pa, qh_edge_shape pb, qh_edge_shape py, int32_t ty,
                           int y_scale_e_lo, int64_t y_zero_point_spread)
{
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    int64_t y_mid = ty == QMM_DTYPE_UINT8 ? 128 : 0;
    qh_edge_scale_tensor_random(x, c, &q->a_scale, scale_type, pa.rank, pa.dims, -6, -3);
    qh_edge_int_tensor_full_range(x, c, &q->a_zero_point, q->a.dtype, pa.rank, pa.dims);
    qh_edge_scale_tensor_random(x, c, &q->b_scale, scale_type, pb.rank, pb.dims, -6, -3);
    qh_edge_int_tensor_full_range(x, c, &q->b_zero_point, q->b.dtype, pb.rank, pb.dims);
    qh_edge_scale_tensor_random(x, c, &q->y_scale, scale_type, py.rank, py.dims, y_scale_e_lo,
                                4);
    qh_edge_int_tensor_random(x, c, &q->y_zero_point, ty, py.rank, py.dims,
                              y_mid - y_zero_point_spread, y_mid + y_zero_point_spread);
}

void qh_edge_random_operands_case(qh_edge_builder *x, qmm_op_kind op, const char *name,
                                  int32_t ra, const int64_t *ad, int32_t rb, const int64_t *bd,
                                  qh_edge_shape pa, qh_edge_shape pb, qh_edge_shape py, int idx)
{
    int32_t ta = qh_edge_type_pairs[idx % 4][0], tb = qh_edge_type_pairs[idx % 4][1];
    int32_t ty = idx % 2 ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
    qh_edge_case *c = qh_edge_add_case(x, op, 10, "%s", name);
    if (!c)
        return;
    qmm_tensor *a, *b;
    if (op == QMM_OP_MATMULINTEGER) {
        qmm_matmulinteger *m = qh_edge_matmulinteger(c);
        a = &m->a;
        b = &m->b;
        qh_edge_int_tensor_full_range(x, c, a, ta, ra, ad);
        qh_edge_int_tensor_full_range(x, c, b, tb, rb, bd);
        qh_edge_int_tensor_full_range(x, c, &m->a_zero_point, ta, pa.rank, pa.dims);
        qh_edge_int_tensor_full_range(x, c, &m->b_zero_point, tb, pb.rank, pb.dims);
    } else {
        qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
        a = &q->a;
        b = &q->b;
        qh_edge_int_tensor_full_range(x, c, a, ta, ra, ad);
        qh_edge_int_tensor_full_range(x, c, b, tb, rb, bd);
        qh_edge_random_params(x, c, QMM_DTYPE_FLOAT, pa, pb, py, ty, 3, 32);
    }
    qh_edge_tag(c, "batch");
    qh_edge_tag(c, "broadcast");
    char da[64], db[64];
    qh_format_dims(a, da, sizeof da);
    qh_format_dims(b, db, sizeof db);
    qh_edge_describe(c, "a %s times b %s, batch dims broadcast numpy-style", da, db);
}

/* ---- MatMulNBits ---- */

static const char *const nbits_zp_names[] = {"absent", "packed", "t1", "empty"};

void qh_edge_nbits_form(const qh_edge_nbits *s, char *buf, size_t size)
{
    static const char *const zp_text[] = {"no zero points (2^(bits-1))", "packed zero points",
                                          "T1 zero points", "an empty zero_points"};
    snprintf(buf, size, "M=%lld K=%lld N=%lld bits=%d block_size=%d accuracy_level=%d %s, %s%s%s",
             (long long)s->m, (long long)s->k, (long long)s->n, s->bits, s->block_size, s->level,
             qmm_dtype_name(s->t1 ? s->t1 : QMM_DTYPE_FLOAT), zp_text[s->zp],
             s->flat ? " (flat)" : "", s->bias ? ", bias" : "");
}

double qh_edge_short_signed(qh_edge_builder *x, int e_lo, int e_hi)
{
    double v = qh_edge_short_scale(x, e_lo, e_hi);
    return qh_rng_chance(&x->rng, 1, 2) ? -v : v;
}

qh_edge_case *qh_edge_nbits_case(qh_edge_builder *x, const qh_edge_nbits *s, const char *fmt,
                                 ...)
{
    char leaf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(leaf, sizeof leaf, fmt, ap);
    va_end(ap);
    qh_edge_case *c = qh_edge_add_case(x, QMM_OP_MATMULNBITS, 1, "%s", leaf);
    if (!c)
        return NULL;
    qmm_matmulnbits *q = &c->problem.call.u.matmulnbits;
    int32_t t1 = s->t1 ? s->t1 : QMM_DTYPE_FLOAT;
    int64_t bs = s->block_size, kb = (s->k + bs - 1) / bs, zcols = (kb * s->bits + 7) / 8;
    q->k = (int32_t)s->k;
    q->n = (int32_t)s->n;
    q->bits = s->bits;
    q->block_size = s->block_size;
    q->accuracy_level = s->level;
    int64_t ad[3] = {2, s->m, s->k};
    int32_t ar = s->a_rank ? s->a_rank : 2;
    int64_t n = new_tensor(x, c, &q->a, t1, ar, ad + 3 - ar);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(&q->a, i, qh_edge_short_signed(x, -3, 1));
    n = new_tensor(x, c, &q->b, QMM_DTYPE_UINT8, DIMS(s->n, kb, bs * s->bits / 8));
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_int(&q->b, i, qh_rng_range(&x->rng, 0, 255));
    if (s->flat)
        qh_edge_scale_tensor_random(x, c, &q->scales, t1, DIMS(s->n * kb), -6, -2);
    else
        qh_edge_scale_tensor_random(x, c, &q->scales, t1, DIMS(s->n, kb), -6, -2);
    if (s->zp == QH_NBITS_ZP_PACKED) {
        n = s->flat ? new_tensor(x, c, &q->zero_points, QMM_DTYPE_UINT8, DIMS(s->n * zcols))
                    : new_tensor(x, c, &q->zero_points, QMM_DTYPE_UINT8, DIMS(s->n, zcols));
        for (int64_t i = 0; i < n; i++)
            qh_tensor_set_int(&q->zero_points, i, qh_rng_range(&x->rng, 0, 255));
    } else if (s->zp == QH_NBITS_ZP_T1) {
        n = s->flat ? new_tensor(x, c, &q->zero_points, t1, DIMS(s->n * kb))
                    : new_tensor(x, c, &q->zero_points, t1, DIMS(s->n, kb));
        for (int64_t i = 0; i < n; i++) {
            double z = (double)qh_rng_range(&x->rng, 0, (1 << s->bits) - 1);
            qh_tensor_set_scale(&q->zero_points, i, qh_rng_chance(&x->rng, 1, 2) ? z + 0.5 : z);
        }
    } else if (s->zp == QH_NBITS_ZP_EMPTY) {
        new_tensor(x, c, &q->zero_points, QMM_DTYPE_UINT8, DIMS(0));
        c->meta.expect = QMM_INVALID_ARGUMENT;
        qh_edge_tag(c, "invalid");
    }
    if (s->bias) {
        n = new_tensor(x, c, &q->bias, t1, DIMS(s->n));
        for (int64_t i = 0; i < n; i++)
            qh_tensor_set_scale(&q->bias, i, qh_edge_short_signed(x, -2, 2));
    }
    char t[48];
    snprintf(t, sizeof t, "m-%lld", (long long)s->m);
    qh_edge_tag(c, t);
    snprintf(t, sizeof t, "zp-%s", nbits_zp_names[s->zp]);
    qh_edge_tag(c, t);
    qh_edge_tag(c, s->bias ? "bias" : "no-bias");
    if (s->k % bs)
        qh_edge_tag(c, "k-partial-block");
    if (s->flat)
        qh_edge_tag(c, "flat-params");
    return c;
}

int qh_edge_nbits_code(const qmm_matmulnbits *c, int64_t n, int64_t k)
{
    int64_t bs = c->block_size, kb = (c->k + bs - 1) / bs, blob = bs * c->bits / 8;
    int64_t bit = (k % bs) * c->bits;
    const uint8_t *b = c->b.data;
    return (b[(n * kb + k / bs) * blob + bit / 8] >> (bit % 8)) & ((1 << c->bits) - 1);
}

int qh_edge_nbits_zero_point(const qmm_matmulnbits *c, int64_t n, int64_t j)
{
    int64_t bs = c->block_size, kb = (c->k + bs - 1) / bs;
    if (!qmm_tensor_present(&c->zero_points))
        return 1 << (c->bits - 1);
    if (c->zero_points.dtype != QMM_DTYPE_UINT8) /* T1: its value, truncated */
        return (int)qmm_scale_decode(c->zero_points.dtype, c->zero_points.data, n * kb + j);
    int64_t bit = j * c->bits, zcols = (kb * c->bits + 7) / 8;
    const uint8_t *z = c->zero_points.data;
    return (z[n * zcols + bit / 8] >> (bit % 8)) & ((1 << c->bits) - 1);
}

/* ---- forms ---- */

/* A parameter in per-tensor form: absent, [] or [1]. */
static int per_tensor(const qmm_tensor *t)
{
    return !qmm_tensor_present(t) || (t->rank <= 1 && qmm_tensor_numel(t) == 1);
}

int qh_edge_simple_form(const qmm_call *call)
{
    if (call->op == QMM_OP_MATMULINTEGER) {
        const qmm_matmulinteger *m = &call->u.matmulinteger;
        return m->a.rank == 2 && m->b.rank == 2 && per_tensor(&m->a_zero_point) &&
               per_tensor(&m->b_zero_point);
    }
    if (call->op != QMM_OP_QLINEARMATMUL)
        return 0;
    const qmm_qlinearmatmul *q = &call->u.qlinearmatmul;
    const qmm_tensor *params[6] = {&q->a_scale, &q->a_zero_point, &q->b_scale,
                                   &q->b_zero_point, &q->y_scale, &q->y_zero_point};
    for (int i = 0; i < 6; i++)
        if (!qmm_tensor_present(params[i]) || !per_tensor(params[i]))
            return 0;
    const qmm_tensor *ints[3] = {&q->a, &q->b, &q->y_zero_point};
    for (int i = 0; i < 3; i++)
        if (ints[i]->dtype != QMM_DTYPE_UINT8 && ints[i]->dtype != QMM_DTYPE_INT8)
            return 0;
    return q->a.rank == 2 && q->b.rank == 2 && q->a_scale.dtype == QMM_DTYPE_FLOAT &&
           q->b_scale.dtype == QMM_DTYPE_FLOAT && q->y_scale.dtype == QMM_DTYPE_FLOAT;
}

/* ---- types and numbers ---- */

const int32_t qh_edge_type_pairs[4][2] = {{QMM_DTYPE_UINT8, QMM_DTYPE_UINT8},
                                          {QMM_DTYPE_INT8, QMM_DTYPE_INT8},
                                          {QMM_DTYPE_UINT8, QMM_DTYPE_INT8},
                                          {QMM_DTYPE_INT8, QMM_DTYPE_UINT8}};

const char *qh_edge_type_abbrev(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_UINT8: return "u8";
    case QMM_DTYPE_INT8: return "s8";
    case QMM_DTYPE_FLOAT8E4M3FN: return "e4m3fn";
    case QMM_DTYPE_FLOAT8E4M3FNUZ: return "e4m3fnuz";
    case QMM_DTYPE_FLOAT8E5M2: return "e5m2";
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return "e5m2fnuz";
    default: return "?";
    }
}

int32_t qh_edge_opset_for_scales(int32_t scale_type)
{
    return scale_type == QMM_DTYPE_FLOAT ? 10 : 21;
}

int qh_edge_bit_length(uint64_t v)
{
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}
