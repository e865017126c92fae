/* tests/mutants/mutant.c — deliberately broken backends.
 *
 * One source, compiled once per mutant with -DQMM_MUTANT_<NAME>. Without a mutant macro it is
 * a correct (slow, exact) backend: validation, geometry and parameter indexing come from the
 * reference's public helpers, requantization is exact GMP arithmetic, and each mutant changes
 * exactly one thing a real kernel gets wrong. The default suites must kill every one of them
 * (tests/mutants/check_mutants.sh, docs/mutants.md).
 *
 * Every mutant accepts the options (comma-separated) threads=N (default 1; only the
 * thread-count mutant uses it) and only=TYPES: answer UNSUPPORTED to every call but the
 * simplest form of that one type combination (2-D a and b, per-tensor parameters, float32
 * scales; TYPES "u8s8u8" for QLinearMatMul's a, b, y, "u8s8" for MatMulInteger's a, b), as a
 * kernel that supports only that does (tests/mutants/check_simple_form.sh).
 */
#include <gmp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qmm/qmm.h"
#include "ops/qmm_ops.h"

#include "../plugin_support.h"

#ifndef QMM_MUTANT_NAME
#define QMM_MUTANT_NAME "none"
#endif

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

typedef struct mutant {
    int threads;
    char only[8]; /* only=TYPES, "" for every call */
} mutant;

static int64_t load8(const qmm_tensor *t, int64_t i)
{
    const unsigned char *p = t->data;
    return t->dtype == QMM_DTYPE_INT8 ? (int64_t)(int8_t)p[i] : (int64_t)p[i];
}

/* The zero point `zp` holds for output element (bi, i, j): 0 when the optional input is
 * absent. */
static int64_t zero_point(const qmm_tensor *zp, const qmm_param_map *m, const qmm_geometry *g,
                          int64_t bi, int64_t i, int64_t j)
{
    return qmm_tensor_present(zp) ? load8(zp, qmm_param_offset(m, g, bi, i, j)) : 0;
}

/* a's zero point, which one mutant ignores. */
static int64_t a_zero_point(const qmm_tensor *zp, const qmm_param_map *m, const qmm_geometry *g,
                            int64_t bi, int64_t i, int64_t j)
{
#ifdef QMM_MUTANT_IGNORE_A_ZERO_POINT
    (void)zp, (void)m, (void)g, (void)bi, (void)i, (void)j;
    return 0;
#else
    return zero_point(zp, m, g, bi, i, j);
#endif
}

/* sum_k (a - za)(b - zb) for one output element, with the accumulation mutants. */
static int64_t accumulate(const qmm_tensor *a, const qmm_tensor *b, const qmm_geometry *g,
                          int64_t bi, int64_t i, int64_t j, int64_t za, int64_t zb)
{
    int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
    int64_t bo = qmm_geometry_b_offset(g, bi) + j;
    int64_t k_end = g->k;
#ifdef QMM_MUTANT_DROP_LAST_K
    if (g->k % 4 != 0)
        k_end = g->k - 1; /* a tail loop that forgets the last element */
#endif
    int64_t acc = 0;
    for (int64_t k = 0; k < k_end; k++)
        acc += (load8(a, ao + k) - za) * (load8(b, bo + k * g->n) - zb);
#ifdef QMM_MUTANT_PAIR_SUM_SATURATION
    /* vpmaddubsw: u8 x s8 products summed in pairs and saturated to int16. Map the operands
     * into that domain (a as u8, b as s8) and add what saturation loses. */
    for (int64_t k = 0; k + 1 < g->k; k += 2) {
        int64_t au0 = load8(a, ao + k) + (a->dtype == QMM_DTYPE_INT8 ? 128 : 0);
        int64_t au1 = load8(a, ao + k + 1) + (a->dtype == QMM_DTYPE_INT8 ? 128 : 0);
        int64_t bs0 = load8(b, bo + k * g->n) - (b->dtype == QMM_DTYPE_UINT8 ? 128 : 0);
        int64_t bs1 = load8(b, bo + (k + 1) * g->n) - (b->dtype == QMM_DTYPE_UINT8 ? 128 : 0);
        int64_t pair = au0 * bs0 + au1 * bs1;
        int64_t sat = pair > 32767 ? 32767 : pair < -32768 ? -32768 : pair;
        acc += sat - pair;
    }
#endif
    return acc;
}

/* clamp(RNE(sa*sb*acc/sy) + zy) exactly, with the rounding mutants. */
static int64_t requantize(int64_t acc, double sa, double sb, double sy, int64_t zy,
                          int64_t qmin, int64_t qmax)
{
#ifdef QMM_MUTANT_FLOAT32_REQUANT
    float m = (float)((float)((float)sa * (float)sb) / (float)sy);
    float v = nearbyintf((float)acc * m);
    int64_t q = (int64_t)v + zy;
    return q < qmin ? qmin : q > qmax ? qmax : q;
#else
    mpq_t v, t;
    mpz_t q, r;
    mpq_inits(v, t, NULL);
    mpz_inits(q, r, NULL);
    mpq_set_si(v, (long)acc, 1);
    mpq_set_d(t, sa);
    mpq_mul(v, v, t);
    mpq_set_d(t, sb);
    mpq_mul(v, v, t);
    mpq_set_d(t, sy);
    mpq_div(v, v, t);
#ifdef QMM_MUTANT_ZP_BEFORE_ROUNDING
    mpq_set_si(t, (long)zy, 1);
    mpq_add(v, v, t);
#endif
    mpz_fdiv_qr(q, r, mpq_numref(v), mpq_denref(v));
    mpz_mul_2exp(r, r, 1);
    int c = mpz_cmp(r, mpq_denref(v));
#ifdef QMM_MUTANT_TIES_AWAY
    /* half away from zero: a tie rounds up for positive values, down for negative ones */
    if (c > 0 || (c == 0 && mpz_sgn(q) >= 0))
        mpz_add_ui(q, q, 1);
#else
    if (c > 0 || (c == 0 && mpz_odd_p(q)))
        mpz_add_ui(q, q, 1);
#endif
#ifndef QMM_MUTANT_ZP_BEFORE_ROUNDING
    if (zy >= 0)
        mpz_add_ui(q, q, (unsigned long)zy);
    else
        mpz_sub_ui(q, q, (unsigned long)-zy);
#endif
    int64_t out;
#ifdef QMM_MUTANT_WRAP_NOT_SATURATE
    (void)qmin;
    (void)qmax;
    int64_t low = (int64_t)mpz_fdiv_ui(q, 256);
    out = qmin < 0 && low > 127 ? low - 256 : low;
#else
    if (mpz_cmp_si(q, (long)qmin) < 0)
        out = qmin;
    else if (mpz_cmp_si(q, (long)qmax) > 0)
        out = qmax;
    else
        out = mpz_get_si(q);
#endif
    mpq_clears(v, t, NULL);
    mpz_clears(q, r, NULL);
    return out;
#endif
}

static void misbehave(const qmm_tensor *a, const qmm_tensor *y, const qmm_geometry *g)
{
#ifdef QMM_MUTANT_WRITE_PAST_OUTPUT
    size_t bytes = (size_t)qmm_tensor_numel(y) * qmm_dtype_size(y->dtype);
    ((volatile unsigned char *)y->data)[bytes] = 0; /* one byte past the end */
#endif
#ifdef QMM_MUTANT_WRITE_INPUT
    if (qmm_tensor_numel(a) > 0) {
        volatile unsigned char *p = a->data;
        p[0] = p[0]; /* "in-place" scratch use of an input */
    }
#endif
#ifdef QMM_MUTANT_CRASH_K0
    if (g->k == 0) {
        volatile int *volatile nowhere = NULL;
        *nowhere = 1; /* a NULL dereference */
    }
#endif
#ifdef QMM_MUTANT_HANG_M1
    if (g->m == 1)
        for (;;) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
#endif
    (void)a;
    (void)y;
    (void)g;
}

static qmm_status_code mutant_qlmm(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                   qmm_status *st)
{
    const mutant *mu = self->impl;
    qmm_plan plan;
    qmm_status_code rc = qmm_validate_qlinearmatmul(c, &plan, st);
    if (rc != QMM_OK)
        return rc;
    const char *f8 = qmm_qlinearmatmul_float8(c);
    if (f8) /* an integer kernel, like the optimized backend's */
        return qmm_status_set(st, QMM_UNSUPPORTED, "mutant: %s is float8", f8);
    const qmm_geometry g = plan.g;
    const qmm_param_map m_as = plan.maps[QMM_MAP_A_SCALE], m_az = plan.maps[QMM_MAP_A_ZERO_POINT],
                        m_bs = plan.maps[QMM_MAP_B_SCALE], m_bz = plan.maps[QMM_MAP_B_ZERO_POINT],
                        m_ys = plan.maps[QMM_MAP_Y_SCALE], m_yz = plan.maps[QMM_MAP_Y_ZERO_POINT];
    misbehave(&c->a, &c->y, &g);
    int64_t qmin = c->y.dtype == QMM_DTYPE_INT8 ? -128 : 0;
    int64_t qmax = c->y.dtype == QMM_DTYPE_INT8 ? 127 : 255;
    unsigned char *y = c->y.data;
    int64_t chunk = 0;
#ifdef QMM_MUTANT_THREAD_DEPENDENT
    if (mu->threads > 1 && g.m >= 2)
        chunk = (g.m + mu->threads - 1) / mu->threads;
#else
    (void)mu;
#endif
    for (int64_t bi = 0; bi < g.batch; bi++)
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                int64_t ai = i;
#ifdef QMM_MUTANT_ROW_PARAMS_PER_COLUMN
                /* a 1-D [M] a_scale / a_zero_point indexed like b's per-column [N] */
                if (c->a.rank == 2 && c->a_scale.rank == 1 && c->a_scale.dims[0] > 1)
                    ai = j % c->a_scale.dims[0];
#endif
                int64_t za = a_zero_point(&c->a_zero_point, &m_az, &g, bi, ai, j);
                int64_t zb = load8(&c->b_zero_point, qmm_param_offset(&m_bz, &g, bi, i, j));
                int64_t zy = load8(&c->y_zero_point, qmm_param_offset(&m_yz, &g, bi, i, j));
                double sa = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data,
                                             qmm_param_offset(&m_as, &g, bi, ai, j));
                int64_t bs_off = qmm_param_offset(&m_bs, &g, bi, i, j);
#ifdef QMM_MUTANT_IGNORE_B_SCALE_PER_COLUMN
                bs_off = 0;
#endif
                double sb = qmm_scale_decode(c->b_scale.dtype, c->b_scale.data, bs_off);
                double sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data,
                                             qmm_param_offset(&m_ys, &g, bi, i, j));
                int64_t acc = accumulate(&c->a, &c->b, &g, bi, i, j, za, zb);
                if (chunk && i > 0 && i % chunk == 0 && g.k > 0) {
                    /* the thread-count mutant: a chunk's first row inherits the previous
                     * row's last product, as with an accumulator not reset per chunk */
                    acc += (load8(&c->a, qmm_geometry_a_offset(&g, bi) + (i - 1) * g.k + g.k - 1) - za) *
                           (load8(&c->b, qmm_geometry_b_offset(&g, bi) + (g.k - 1) * g.n + j) - zb);
                }
                /* the spec accepts the int32-wrapped accumulator; kernels wrap */
                acc = (int64_t)(int32_t)(uint32_t)(uint64_t)acc;
                int64_t q = requantize(acc, sa, sb, sy, zy, qmin, qmax);
                y[(bi * g.m + i) * g.n + j] = (unsigned char)(q & 0xff);
            }
    return qmm_status_ok(st);
}

static qmm_status_code mutant_mmi(const qmm_backend *self, const qmm_matmulinteger *c,
                                  qmm_status *st)
{
    (void)self;
    qmm_plan plan;
    qmm_status_code rc = qmm_validate_matmulinteger(c, &plan, st);
    if (rc != QMM_OK)
        return rc;
    const qmm_geometry g = plan.g;
    const qmm_param_map m_az = plan.maps[QMM_MAP_A_ZERO_POINT],
                        m_bz = plan.maps[QMM_MAP_B_ZERO_POINT];
    misbehave(&c->a, &c->y, &g);
    unsigned char *y = c->y.data;
    for (int64_t bi = 0; bi < g.batch; bi++)
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                int64_t za = a_zero_point(&c->a_zero_point, &m_az, &g, bi, i, j);
                int64_t zb = zero_point(&c->b_zero_point, &m_bz, &g, bi, i, j);
                int32_t v = (int32_t)(uint32_t)(uint64_t)accumulate(&c->a, &c->b, &g, bi, i, j,
                                                                    za, zb);
                memcpy(y + 4 * ((bi * g.m + i) * g.n + j), &v, 4);
            }
    return qmm_status_ok(st);
}

/* "u8", "s8", or NULL for any other type. */
static const char *int8_abbrev(int32_t dtype)
{
    return dtype == QMM_DTYPE_UINT8 ? "u8" : dtype == QMM_DTYPE_INT8 ? "s8" : NULL;
}

/* Absent, [] or [1]. */
static int per_tensor(const qmm_tensor *t)
{
    return !qmm_tensor_present(t) || (t->rank <= 1 && qmm_tensor_numel(t) == 1);
}

/* The call is in the simplest form of the type combination `only` (see the top). */
static int in_simple_form(const qmm_call *call, const char *only)
{
    const qmm_tensor *a, *b, *params[6], *y_type = NULL;
    int np;
    if (call->op == QMM_OP_QLINEARMATMUL) {
        const qmm_qlinearmatmul *q = &call->u.qlinearmatmul;
        const qmm_tensor *p[6] = {&q->a_scale, &q->a_zero_point, &q->b_scale,
                                  &q->b_zero_point, &q->y_scale, &q->y_zero_point};
        for (int i = 0; i < 6; i++) {
            params[i] = p[i];
            if (!qmm_tensor_present(p[i]) || (i % 2 == 0 && p[i]->dtype != QMM_DTYPE_FLOAT))
                return 0;
        }
        a = &q->a, b = &q->b, y_type = &q->y_zero_point, np = 6;
    } else if (call->op == QMM_OP_MATMULINTEGER) {
        const qmm_matmulinteger *m = &call->u.matmulinteger;
        a = &m->a, b = &m->b, params[0] = &m->a_zero_point, params[1] = &m->b_zero_point, np = 2;
    } else {
        return 0;
    }
    for (int i = 0; i < np; i++)
        if (!per_tensor(params[i]))
            return 0;
    const char *ta = int8_abbrev(a->dtype), *tb = int8_abbrev(b->dtype);
    const char *ty = y_type ? int8_abbrev(y_type->dtype) : "";
    char types[8];
    if (!ta || !tb || !ty || a->rank != 2 || b->rank != 2)
        return 0;
    snprintf(types, sizeof types, "%s%s%s", ta, tb, ty);
    return strcmp(types, only) == 0;
}

static qmm_status_code mutant_query(const qmm_backend *self, const qmm_call *call,
                                    qmm_status *st)
{
    const mutant *mu = self->impl;
    if (call->op == QMM_OP_QORDEREDMATMUL)
        return qmm_status_set(st, QMM_UNSUPPORTED, "mutant: no QOrderedMatMul");
    if (mu->only[0] && !in_simple_form(call, mu->only))
        return qmm_status_set(st, QMM_UNSUPPORTED, "mutant: only the simplest %s form",
                              mu->only);
    return qmm_status_ok(st);
}

/* Parses "threads=N,only=TYPES" (either, both, or neither) into mu; 0, or -1. */
static int parse_options(const char *options, mutant *mu)
{
    mu->threads = 1;
    mu->only[0] = '\0';
    for (const char *o = options; *o;) {
        const char *end = strchr(o, ',');
        size_t len = end ? (size_t)(end - o) : strlen(o);
        char *num_end;
        if (len > 8 && strncmp(o, "threads=", 8) == 0) {
            long n = strtol(o + 8, &num_end, 10);
            if (num_end != o + len || n < 1 || n > 1024)
                return -1;
            mu->threads = (int)n;
        } else if (len > 5 && strncmp(o, "only=", 5) == 0 && len - 5 < sizeof mu->only) {
            memcpy(mu->only, o + 5, len - 5);
            mu->only[len - 5] = '\0';
        } else {
            return -1;
        }
        o = end ? end + 1 : o + len;
    }
    return 0;
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("mutant", harness_abi, st))
        return NULL;
    mutant parsed;
    if (parse_options(options, &parsed) != 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "mutant: unknown option '%s'", options);
        return NULL;
    }
    qmm_backend *be = plugin_table("mutant-" QMM_MUTANT_NAME, "a deliberately broken backend",
                                   sizeof(mutant), st);
    if (!be)
        return NULL;
    *(mutant *)be->impl = parsed;
    be->query = mutant_query;
    be->matmulinteger = mutant_mmi;
    be->qlinearmatmul = mutant_qlmm;
    return be;
}
