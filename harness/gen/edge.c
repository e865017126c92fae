/* harness/gen/edge.c — the edge-case suites (see edge.h and docs/edge-suites.md).
 *
 * Every case is constructed so that the property it targets holds by arithmetic, not by luck:
 * ties come from power-of-two (or odd-denominator) multipliers with odd accumulators; near-ties
 * from solving mb·c − my·D = ±1 (so the exact value sits 1/(my·2^G) from a half-integer);
 * overflow from K·65025 crossing 2^31. The reference then computes what the answer is.
 */
#include "harness/gen/edge.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/io/case.h"
#include "harness/run/expect.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

#define U8 QMM_DTYPE_UINT8
#define S8 QMM_DTYPE_INT8
#define F32 QMM_DTYPE_FLOAT
#define F16 QMM_DTYPE_FLOAT16
#define BF16 QMM_DTYPE_BFLOAT16
#define QLM QMM_OP_QLINEARMATMUL
#define MMI QMM_OP_MATMULINTEGER

/* DIMS(2, 3) expands to "rank, dims" arguments. */
#define DIMS(...)                                                                            \
    (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#define SCALAR 0, NULL

typedef struct ctx {
    const qh_edge_suite *suite;
    uint64_t seed;
    qh_rng rng;
    qh_edge_cases *out;
    int failed;          /* memory ran out, or a search found nothing */
    char why[256];
} ctx;

static const qh_edge_suite suites[] = {
    {"ties", "exact rounding ties (x.5) with even and odd y zero points, both signs, exact and "
             "inexact multipliers",
     1},
    {"near-ties", "exact values within 2^-30..2^-60 of a half-integer, where float32, float16 "
                  "or float64 requantization rounds to the other side",
     2},
    {"saturation", "results at, just past and far past both ends of uint8 and int8, zero "
                   "points at the extremes",
     3},
    {"extremes", "uint8 255 against int8 -128/127 (and zero-point extremes): sums that break "
                 "saturating int16 pair sums, K = 2, 4, 64",
     4},
    {"params", "every quantization parameter form (per-tensor, per-row, per-column, y "
               "broadcast) and the ambiguous [M] when M == K",
     5},
    {"broadcast", "numpy batch broadcasting up to rank 5, with batched parameters", 6},
    {"one-d", "1-D operands ([K] promoted and squeezed), including [K]·[K] -> []", 7},
    {"empty", "M = 0, N = 0, K = 0 (every sum 0) and batch 0", 8},
    {"overflow", "K = 33025 (acc fits int32) and K = 33026 (acc overflows) with extreme "
                 "values",
     9},
    {"scales", "float32/float16/bfloat16 subnormal scales, scale products that under- or "
               "overflow the scale type",
     10},
    {"types", "all eight uint8/int8 combinations under opset 10 (float) and opset 21 "
              "(float, float16, bfloat16 scales)",
     11},
    {"zero-points", "MatMulInteger with and without zero points, per-row and per-column", 12},
    {"invalid", "one case per input rule of docs/semantics.md §2.5/§3: expected INVALID_ARGUMENT",
     13},
    {"random", "seeded random problems over the whole operator space (the diff generator)",
     14},    {"float8", "QLinearMatMul-21's float8 types: ties with even and odd neighbours, saturation "
               "at both ends, subnormals in and out, every code through, signed and fnuz zeros, "
               "zero points at the extremes, mixes with uint8/int8",
     15},
};

#define N_SUITES (sizeof suites / sizeof suites[0])

size_t qh_edge_suite_count(void) { return N_SUITES; }

const qh_edge_suite *qh_edge_suite_at(size_t i) { return i < N_SUITES ? &suites[i] : NULL; }

const qh_edge_suite *qh_edge_suite_find(const char *name)
{
    for (size_t i = 0; i < N_SUITES; i++)
        if (strcmp(suites[i].name, name) == 0)
            return &suites[i];
    return NULL;
}

/* ---- building cases ---------------------------------------------------------------------- */

static void fail(ctx *x, const char *why)
{
    if (!x->failed)
        snprintf(x->why, sizeof x->why, "%s", why);
    x->failed = 1;
}

static void tag(qh_edge_case *c, const char *t)
{
    if (qh_meta_has_tag(&c->meta, t) || c->meta.n_tags == QH_META_MAX_TAGS)
        return;
    snprintf(c->meta.tags[c->meta.n_tags++], sizeof c->meta.tags[0], "%s", t);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void describe(qh_edge_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->meta.description, sizeof c->meta.description, fmt, ap);
    va_end(ap);
}

/* A scratch case absorbs a builder's writes once memory has run out, so builders need no
 * error paths of their own; the build then fails as a whole. */
static qh_edge_case scratch_case(void)
{
    qh_edge_case c;
    memset(&c, 0, sizeof c);
    return c;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static qh_edge_case *add_case(ctx *x, qmm_op_kind op, int32_t opset, const char *fmt, ...)
{
    qh_edge_cases *l = x->out;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        qh_edge_case *items = realloc(l->items, cap * sizeof *items);
        if (!items) {
            fail(x, "out of memory");
            return NULL;
        }
        l->items = items;
        l->cap = cap;
    }
    qh_edge_case *c = &l->items[l->count++];
    *c = scratch_case();
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
    tag(c, x->suite->name);
    return c;
}

static void drop_last_case(ctx *x)
{
    qh_edge_case *c = &x->out->items[x->out->count - 1];
    qh_problem_free(&c->problem);
    x->out->count--;
}

static qmm_qlinearmatmul *qlm_of(qh_edge_case *c) { return &c->problem.call.u.qlinearmatmul; }
static qmm_matmulinteger *mmi_of(qh_edge_case *c) { return &c->problem.call.u.matmulinteger; }

static int alloc_t(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
                   const int64_t *dims)
{
    if (!qh_problem_tensor(&c->problem, t, dt, rank, dims)) {
        fail(x, "out of memory");
        return -1;
    }
    return 0;
}

/* Integer tensor from values (NULL: all zero). */
static void tq(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
               const int64_t *dims, const int64_t *vals)
{
    if (alloc_t(x, c, t, dt, rank, dims) != 0)
        return;
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; vals && i < n; i++)
        qh_tensor_set_int(t, i, vals[i]);
}

static void tqc(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
                const int64_t *dims, int64_t v)
{
    if (alloc_t(x, c, t, dt, rank, dims) != 0)
        return;
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_int(t, i, v);
}

static int64_t lo_of(int32_t dt) { return dt == U8 ? 0 : -128; }
static int64_t hi_of(int32_t dt) { return dt == U8 ? 255 : 127; }

/* Uniform values in [lo, hi] clamped to the type. */
static void tqr(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
                const int64_t *dims, int64_t lo, int64_t hi)
{
    if (alloc_t(x, c, t, dt, rank, dims) != 0)
        return;
    if (lo < lo_of(dt))
        lo = lo_of(dt);
    if (hi > hi_of(dt))
        hi = hi_of(dt);
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_int(t, i, qh_rng_range(&x->rng, lo, hi));
}

static void tqfull(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
                   const int64_t *dims)
{
    tqr(x, c, t, dt, rank, dims, lo_of(dt), hi_of(dt));
}

static void ts(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
               const int64_t *dims, const double *vals)
{
    if (alloc_t(x, c, t, dt, rank, dims) != 0)
        return;
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(t, i, vals[i]);
}

static void tsc(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
                const int64_t *dims, double v)
{
    if (alloc_t(x, c, t, dt, rank, dims) != 0)
        return;
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(t, i, v);
}

/* A scale with a short mantissa (1, 1.25, 1.5, 1.75 times 2^e), exact in every scale type;
 * per-element variation for parameter vectors. */
static double short_scale(ctx *x, int e_lo, int e_hi)
{
    /* two statements: argument evaluation order is unspecified, and gcc and clang differ */
    double m = 1.0 + 0.25 * (double)qh_rng_range(&x->rng, 0, 3);
    return ldexp(m, (int)qh_rng_range(&x->rng, e_lo, e_hi));
}

static void tsr(ctx *x, qh_edge_case *c, qmm_tensor *t, int32_t dt, int32_t rank,
                const int64_t *dims, int e_lo, int e_hi)
{
    if (alloc_t(x, c, t, dt, rank, dims) != 0)
        return;
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_scale(t, i, short_scale(x, e_lo, e_hi));
}

/* Per-tensor ([]) parameters; zero point types follow a and b, y's is `ty`. */
static void qlm_scalars(ctx *x, qh_edge_case *c, int32_t sdt, double sa, int64_t za, double sb,
                        int64_t zb, double sy, int64_t zy, int32_t ty)
{
    qmm_qlinearmatmul *q = qlm_of(c);
    tsc(x, c, &q->a_scale, sdt, SCALAR, sa);
    tqc(x, c, &q->a_zero_point, q->a.dtype, SCALAR, za);
    tsc(x, c, &q->b_scale, sdt, SCALAR, sb);
    tqc(x, c, &q->b_zero_point, q->b.dtype, SCALAR, zb);
    tsc(x, c, &q->y_scale, sdt, SCALAR, sy);
    tqc(x, c, &q->y_zero_point, ty, SCALAR, zy);
}

static const char *tname(int32_t dt)
{
    switch (dt) {
    case U8: return "u8";
    case S8: return "s8";
    case QMM_DTYPE_FLOAT8E4M3FN: return "e4m3fn";
    case QMM_DTYPE_FLOAT8E4M3FNUZ: return "e4m3fnuz";
    case QMM_DTYPE_FLOAT8E5M2: return "e5m2";
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return "e5m2fnuz";
    default: return "?";
    }
}

static const char *sname(int32_t sdt)
{
    return sdt == F32 ? "float" : sdt == F16 ? "float16" : sdt == BF16 ? "bfloat16" : "?";
}

static int32_t opset_for(int32_t sdt) { return sdt == F32 ? 10 : 21; }

/* A y_scale that keeps outputs of a random K-long dot product mostly inside the type. */
static double fitting_sy(double sa, double sb, int64_t k, double spread)
{
    double acc = spread * sqrt((double)(k > 0 ? k : 1));
    return sa * sb * acc / 48.0;
}

/* ---- suite: ties ------------------------------------------------------------------------- */

static const int32_t combos[4][2] = {{U8, U8}, {S8, S8}, {U8, S8}, {S8, U8}};

static int64_t za_for(int32_t dt) { return dt == U8 ? 131 : -3; }
static int64_t zb_for(int32_t dt) { return dt == U8 ? 100 : 5; }
static int64_t zy_for(int32_t dt, int odd) { return dt == U8 ? (odd ? 127 : 128) : (odd ? -5 : 0); }

/* a − za rows [2i+1, 1], b − zb = [[s, s], [0, 2]]: acc = s(2i+1) and s(2i+1) + 2, all odd,
 * so a multiplier of exactly 1/2 puts every result on a tie. */
static void tie_case(ctx *x, int32_t ta, int32_t tb, int32_t ty, int32_t sdt, int odd, int neg,
                     double sa, double sb, double sy, const char *name)
{
    qh_edge_case *c = add_case(x, QLM, opset_for(sdt), "%s", name);
    if (!c)
        return;
    qmm_qlinearmatmul *q = qlm_of(c);
    int64_t za = za_for(ta), zb = zb_for(tb), s = neg ? -1 : 1;
    int64_t av[16], bv[4] = {zb + s, zb + s, zb, zb + 2};
    for (int i = 0; i < 8; i++) {
        av[2 * i] = za + 2 * i + 1;
        av[2 * i + 1] = za + 1;
    }
    tq(x, c, &q->a, ta, DIMS(8, 2), av);
    tq(x, c, &q->b, tb, DIMS(2, 2), bv);
    qlm_scalars(x, c, sdt, sa, za, sb, zb, sy, zy_for(ty, odd), ty);
    tag(c, "tie");
    tag(c, odd ? "odd-zp" : "even-zp");
    tag(c, neg ? "negative" : "positive");
    describe(c,
             "multiplier sa*sb/sy = %g*%g/%g = 1/2 exactly and every acc odd: each result is "
             "a tie k+1/2 (%s), rounded to even before adding y_zero_point %lld (%s)",
             sa, sb, sy, neg ? "mostly negative" : "positive", (long long)zy_for(ty, odd),
             odd ? "odd: add-then-round gives a different answer" : "even");
}

static void suite_ties(ctx *x)
{
    int idx = 0;
    for (int yi = 0; yi < 2; yi++) {
        int32_t ty = yi ? S8 : U8;
        for (int odd = 0; odd < 2; odd++) {
            for (int neg = 0; neg < 2; neg++, idx++) {
                int32_t ta = combos[idx % 4][0], tb = combos[idx % 4][1];
                char name[96];
                snprintf(name, sizeof name, "%s-zp-%s-%s%s%s", odd ? "odd" : "even",
                         neg ? "neg" : "pos", tname(ta), tname(tb), tname(ty));
                tie_case(x, ta, tb, ty, F32, odd, neg, 0.5, 1.0, 1.0, name);
            }
        }
    }
    tie_case(x, U8, U8, U8, F16, 1, 0, 0.25, 4.0, 2.0, "odd-zp-pos-u8u8u8-float16");
    tie_case(x, S8, S8, S8, BF16, 1, 1, 2.0, 0.125, 0.5, "odd-zp-neg-s8s8s8-bfloat16");

    /* Ties through a multiplier no binary format holds: 1.5/9 = 1/6, acc = 3·odd. A float
     * pipeline computes fl(1/6) and lands a hair off the tie, on either side. */
    for (int yi = 0; yi < 2; yi++) {
        for (int odd = 0; odd < 2; odd++) {
            int32_t ty = yi ? S8 : U8, ta = yi ? S8 : U8, tb = yi ? U8 : S8;
            qh_edge_case *c = add_case(x, QLM, 10, "inexact-multiplier-%s-zp-%s%s%s",
                                       odd ? "odd" : "even", tname(ta), tname(tb), tname(ty));
            if (!c)
                return;
            qmm_qlinearmatmul *q = qlm_of(c);
            int64_t za = za_for(ta), zb = zb_for(tb);
            int64_t av[6], bv[2] = {zb + 1, zb - 1};
            for (int i = 0; i < 6; i++)
                av[i] = za + 3 * (2 * i + 1);
            tq(x, c, &q->a, ta, DIMS(6, 1), av);
            tq(x, c, &q->b, tb, DIMS(1, 2), bv);
            qlm_scalars(x, c, F32, 1.5, za, 1.0, zb, 9.0, zy_for(ty, odd), ty);
            tag(c, "tie");
            tag(c, "inexact-multiplier");
            tag(c, odd ? "odd-zp" : "even-zp");
            tag(c, "positive");
            tag(c, "negative");
            describe(c, "multiplier 1.5/9 = 1/6 (no binary fraction), acc = ±3, ±9, ... ±33: "
                        "exact ties ±0.5 .. ±5.5 that float arithmetic misses");
        }
    }

    /* Per-row and per-column scales that keep every product a tie: 0.5·odd, 1.5·odd, 4.5·odd. */
    for (int yi = 0; yi < 2; yi++) {
        int32_t ty = yi ? S8 : U8, ta = yi ? U8 : S8, tb = yi ? S8 : U8;
        qh_edge_case *c =
            add_case(x, QLM, 10, "per-row-col-odd-zp-%s%s%s", tname(ta), tname(tb), tname(ty));
        if (!c)
            return;
        qmm_qlinearmatmul *q = qlm_of(c);
        int64_t za[4] = {za_for(ta), za_for(ta) + 1, za_for(ta) - 1, za_for(ta) + 2};
        int64_t zb[2] = {zb_for(tb), zb_for(tb) - 1};
        int64_t av[4 * 3], bv[3 * 2];
        /* row i: a − za_i = [1 + 2i, 0, 0]; column j: b − zb_j = [1 − 2j, 1, 1] */
        for (int i = 0; i < 4; i++) {
            av[3 * i] = za[i] + 1 + 2 * i;
            av[3 * i + 1] = za[i];
            av[3 * i + 2] = za[i];
        }
        for (int j = 0; j < 2; j++) {
            bv[j] = zb[j] + 1 - 2 * j;
            bv[2 + j] = zb[j] + 1;
            bv[4 + j] = zb[j] + 1;
        }
        tq(x, c, &q->a, ta, DIMS(4, 3), av);
        tq(x, c, &q->b, tb, DIMS(3, 2), bv);
        ts(x, c, &q->a_scale, F32, DIMS(4), (const double[]){0.5, 1.5, 0.5, 1.5});
        tq(x, c, &q->a_zero_point, ta, DIMS(4), za);
        ts(x, c, &q->b_scale, F32, DIMS(2), (const double[]){1.0, 3.0});
        tq(x, c, &q->b_zero_point, tb, DIMS(2), zb);
        tsc(x, c, &q->y_scale, F32, SCALAR, 1.0);
        tqc(x, c, &q->y_zero_point, ty, SCALAR, zy_for(ty, 1));
        tag(c, "tie");
        tag(c, "odd-zp");
        tag(c, "per-row");
        tag(c, "per-column");
        tag(c, "positive");
        tag(c, "negative");
        describe(c, "per-row a_scale [0.5,1.5,..] and per-column b_scale [1,3] with odd "
                    "accumulators: every element a tie, odd y_zero_point");
    }
}

/* ---- suite: near-ties -------------------------------------------------------------------- */

static double round_to(int32_t dt, double v) { return qmm_round_to_scale_type(dt, v); }

/* The three pipelines a near-tie can fool, each returning the rounded value before the zero
 * point: all-float32 (ONNX Runtime's MLAS), the multiplier in the scale type then a double
 * product (the ONNX reference), and all-double. */
static double pipe_f32(double sa, double sb, double sy, int64_t acc)
{
    double m = round_to(F32, round_to(F32, sa * sb) / sy);
    double v = round_to(F32, round_to(F32, (double)acc) * m);
    return rint(v);
}

static double pipe_mult_in_type(int32_t sdt, double sa, double sb, double sy, int64_t acc)
{
    double m = round_to(sdt, round_to(sdt, sa * sb) / sy);
    double v = (double)acc * m;
    return rint(v);
}

static double pipe_f64(double sa, double sb, double sy, int64_t acc)
{
    double m = sa * sb / sy;
    double v = (double)acc * m;
    return rint(v);
}

/* Inverse of a modulo m (a, m coprime, m > 1), or -1. */
static int64_t mod_inverse(int64_t a, int64_t m)
{
    int64_t t = 0, nt = 1, r = m, nr = a % m;
    while (nr != 0) {
        int64_t qt = r / nr, tmp;
        tmp = t - qt * nt;
        t = nt;
        nt = tmp;
        tmp = r - qt * nr;
        r = nr;
        nr = tmp;
    }
    if (r != 1)
        return -1;
    return t < 0 ? t + m : t;
}

static int bitlen(uint64_t v)
{
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

typedef struct near_tie {
    int64_t p, q;          /* a − za and b − zb (K = 1): acc = p·q */
    double sa, sb, sy;
} near_tie;

/* Finds scales with `mbits`-bit mantissas and acc = p·q such that sa·sb·acc/sy equals
 * σ(n + 1/2) + σ·s/(my·2^G) (s = ±1): from ma·mb·acc − my·(2n+1)·2^(G−1) = s, solved for mb
 * and my as a linear Diophantine equation. */
static int find_near_tie(qh_rng *r, int mbits, int32_t sdt, int64_t n, int sigma, int s,
                         near_tie *out)
{
    int64_t top = (int64_t)1 << mbits;
    for (long tries = 0; tries < 4000000; tries++) {
        int64_t p = 2 * qh_rng_range(r, 16, 63) + 1, q = 2 * qh_rng_range(r, 16, 63) + 1;
        int64_t acc = p * q;
        int64_t ma = (top >> 1) | (2 * qh_rng_range(r, 0, (top >> 2) - 1) + 1);
        int64_t cc = ma * acc; /* odd, < 2^(mbits+14) */
        int64_t odd = 2 * n + 1;
        int g1 = bitlen((uint64_t)cc) - bitlen((uint64_t)odd);
        if (g1 < 1)
            continue;
        int64_t d = odd << g1; /* D = (2n+1)·2^(G−1), about c */
        int64_t inv = mod_inverse(cc % d, d);
        if (inv < 0)
            continue;
        int64_t mb = s > 0 ? inv : d - inv;
        if (mb <= 0 || mb >= top)
            continue;
        uint64_t prod = (uint64_t)mb * (uint64_t)cc; /* < 2^62 */
        int64_t my = (int64_t)((prod - (uint64_t)(int64_t)s) / (uint64_t)d);
        if (my <= 0 || my >= top)
            continue;
        int ea = -2 - mbits, eb = -2 - bitlen((uint64_t)mb);
        int ey = ea + eb + g1 + 1;
        out->p = sigma * p;
        out->q = q;
        out->sa = ldexp((double)ma, ea);
        out->sb = ldexp((double)mb, eb);
        out->sy = ldexp((double)my, ey);
        if (round_to(sdt, out->sa) != out->sa || round_to(sdt, out->sb) != out->sb ||
            round_to(sdt, out->sy) != out->sy || !(out->sy > 0) || isinf(round_to(sdt, out->sy)))
            continue;
        return 0;
    }
    return -1;
}

/* Adds one near-tie case; returns 1 when the pipeline named by `fooled` ('4' float32,
 * 'h' multiplier in the scale type, '8' double) rounds differently from the exact value and
 * every more precise pipeline does not, 0 when not (the case is dropped). */
static int near_tie_case(ctx *x, int32_t ty, int32_t sdt, const near_tie *t, int sigma, int s,
                         char fooled, const char *name)
{
    int32_t ta = ty, tb = ty;
    int64_t za = ta == U8 ? (sigma > 0 ? 0 : 255) : 0, zb = 0;
    int64_t zy = ty == U8 ? (sigma > 0 ? 0 : 255) : 0;
    qh_edge_case *c = add_case(x, QLM, opset_for(sdt), "%s", name);
    if (!c)
        return 0;
    qmm_qlinearmatmul *q = qlm_of(c);
    tq(x, c, &q->a, ta, DIMS(1, 1), (const int64_t[]){za + t->p});
    tq(x, c, &q->b, tb, DIMS(1, 1), (const int64_t[]){zb + t->q});
    qlm_scalars(x, c, sdt, t->sa, za, t->sb, zb, t->sy, zy, ty);
    if (x->failed)
        return 0;
    /* the exact answer, from the reference */
    qh_problem_finish(&c->problem);
    qmm_call call = c->problem.call;
    qmm_tensor *y = qh_call_output(&call);
    unsigned char ybuf[8] = {0};
    y->data = ybuf;
    qmm_status st;
    if (qmm_ref_compute(&call, NULL, NULL, &st) != QMM_OK) {
        drop_last_case(x);
        return 0;
    }
    int64_t acc = t->p * t->q;
    double exact = (double)((ty == U8 ? (int64_t)ybuf[0] : (int64_t)(int8_t)ybuf[0]) - zy);
    double r32 = pipe_f32(t->sa, t->sb, t->sy, acc);
    double rh = pipe_mult_in_type(sdt, t->sa, t->sb, t->sy, acc);
    double r64 = pipe_f64(t->sa, t->sb, t->sy, acc);
    int ok = fooled == '8'   ? r64 != exact
             : fooled == '4' ? r32 != exact && r64 == exact
                             : rh != exact && r64 == exact;
    if (!ok) {
        drop_last_case(x);
        return 0;
    }
    qmm_ref_element el;
    qmm_status est;
    const char *scaled = qmm_ref_explain(&call, 0, &el, &est) == QMM_OK ? el.scaled : "?";
    tag(c, "near-tie");
    tag(c, fooled == '8' ? "float64-fooled" : fooled == '4' ? "float32-fooled"
                                                          : "scale-type-multiplier-fooled");
    tag(c, sigma > 0 ? "positive" : "negative");
    describe(c,
             "acc %lld, scales %.17g %.17g %.17g (%s): exact %s rounds to %.0f; float32 "
             "pipeline %.0f, multiplier-in-%s then double %.0f, float64 pipeline %.0f",
             (long long)acc, t->sa, t->sb, t->sy, sname(sdt), scaled, exact, r32, sname(sdt),
             rh, r64);
    return 1;
}

static void suite_near_ties(ctx *x)
{
    /* (fooled pipeline, mantissa bits, scale type) */
    static const struct {
        char fooled;
        int mbits;
        int32_t sdt;
        const char *what;
    } kinds[] = {
        {'8', 24, F32, "float64"},
        {'4', 12, F32, "float32"},
        {'h', 11, F16, "float16-multiplier"},
        {'h', 8, BF16, "bfloat16-multiplier"},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int yi = 0; yi < 2; yi++) {
            for (int above = 0; above < 2; above++) {
                int32_t ty = yi ? S8 : U8;
                int sigma = yi && above ? -1 : 1; /* one negative per int8 kind */
                int s = above ? 1 : -1;
                int made = 0;
                for (int attempt = 0; attempt < 400 && !made && !x->failed; attempt++) {
                    /* the exact value rounds to n+1 (above) or n (below); the fooled
                     * pipeline lands on the tie and rounds to even: pick n's parity so that
                     * even is the wrong answer */
                    int64_t n = 2 * qh_rng_range(&x->rng, 5, ty == U8 ? 100 : 50) + (above ? 0 : 1);
                    near_tie t;
                    if (find_near_tie(&x->rng, kinds[k].mbits, kinds[k].sdt, n, sigma, s, &t) != 0)
                        continue;
                    char name[96];
                    snprintf(name, sizeof name, "%s-%s-%s%s%s", kinds[k].what,
                             above ? "above" : "below", tname(ty), tname(ty), tname(ty));
                    made = near_tie_case(x, ty, kinds[k].sdt, &t, sigma, s, kinds[k].fooled, name);
                }
                if (!made)
                    fail(x, "near-ties: no case found (generator bug)");
            }
        }
    }
}

/* ---- suite: saturation ------------------------------------------------------------------- */

/* Rows of a (K = 4, b − zb = 1, sa = 1/2): row sums 2t give results t (half-integers). */
static void saturation_case(ctx *x, int32_t ty, int high, int extreme_zp)
{
    int32_t ta = S8, tb = ty;
    int64_t zy = extreme_zp ? (high ? hi_of(ty) : lo_of(ty)) : (ty == U8 ? 128 : 0);
    /* targets t relative to the bound qmax − zy (high) or qmin − zy (low) */
    double bound = (double)((high ? hi_of(ty) : lo_of(ty)) - zy);
    double off[8] = {-0.5, 0, 0.5, 1, 1.5, 2.5, 20, 200};
    int64_t av[8 * 4];
    int rows = 0;
    for (int i = 0; i < 8; i++) {
        double t = high ? bound + off[i] : bound - off[i];
        int64_t sum = (int64_t)llround(2 * t);
        if (sum > 4 * 127 || sum < -4 * 128)
            continue;
        for (int k = 0; k < 4; k++) {
            int64_t part = sum / (4 - k);
            if (part > 127)
                part = 127;
            if (part < -128)
                part = -128;
            av[4 * rows + k] = part;
            sum -= part;
        }
        rows++;
    }
    qh_edge_case *c = add_case(x, QLM, 10, "%s-%s-%s%s%s", high ? "high" : "low",
                               extreme_zp ? "zp-at-bound" : "zp-mid", tname(ta), tname(tb),
                               tname(ty));
    if (!c)
        return;
    qmm_qlinearmatmul *q = qlm_of(c);
    int64_t zb = ty == U8 ? 7 : -7;
    tq(x, c, &q->a, ta, DIMS(rows, 4), av);
    tqc(x, c, &q->b, tb, DIMS(4, 1), zb + 1);
    qlm_scalars(x, c, F32, 0.5, 0, 1.0, zb, 1.0, zy, ty);
    tag(c, "saturation");
    tag(c, high ? "high" : "low");
    tag(c, "tie");
    describe(c, "results around the %s end (%g before adding y_zero_point %lld): just "
                "inside, on it, ties just past it (x.5 rounds to even, then clamps), far past",
             high ? "upper" : "lower", bound, (long long)zy);
}

static void suite_saturation(ctx *x)
{
    for (int yi = 0; yi < 2; yi++)
        for (int high = 0; high < 2; high++)
            for (int ez = 0; ez < 2; ez++)
                saturation_case(x, yi ? S8 : U8, high, ez);
    /* random full-range operands with a tiny y_scale: nearly everything clamps, both ends */
    for (int idx = 0; idx < 4; idx++) {
        int32_t ta = combos[idx][0], tb = combos[idx][1], ty = idx % 2 ? U8 : S8;
        qh_edge_case *c = add_case(x, QLM, 10, "both-ends-random-%s%s%s", tname(ta),
                                   tname(tb), tname(ty));
        if (!c)
            return;
        qmm_qlinearmatmul *q = qlm_of(c);
        tqfull(x, c, &q->a, ta, DIMS(5, 16));
        tqfull(x, c, &q->b, tb, DIMS(16, 6));
        qlm_scalars(x, c, F32, 0.75, ta == U8 ? 128 : 0, 1.25, tb == U8 ? 128 : 0, 0.5,
                    ty == U8 ? 128 : 0, ty);
        tag(c, "saturation");
        tag(c, "high");
        tag(c, "low");
        describe(c, "full-range random operands, multiplier 1.875: most results clamp at one "
                    "end or the other");
    }
}

/* ---- suite: extremes --------------------------------------------------------------------- */

static void suite_extremes(ctx *x)
{
    static const int64_t ks[3] = {2, 4, 64};
    for (int ki = 0; ki < 3; ki++) {
        int64_t k = ks[ki];
        for (int rev = 0; rev < 2; rev++) {
            /* u8 255 against s8 -128 (column 0) and 127 (column 1), or the types swapped;
             * row 1 alternates to mix signs inside a pair */
            int32_t ta = rev ? S8 : U8, tb = rev ? U8 : S8;
            int64_t *av = malloc(sizeof(int64_t) * (size_t)(2 * k));
            int64_t *bv = malloc(sizeof(int64_t) * (size_t)(k * 2));
            if (!av || !bv) {
                free(av);
                free(bv);
                fail(x, "out of memory");
                return;
            }
            for (int64_t i = 0; i < k; i++) {
                if (!rev) {
                    av[i] = 255;
                    av[k + i] = i % 2 ? 0 : 255;
                    bv[2 * i] = -128;
                    bv[2 * i + 1] = 127;
                } else {
                    av[i] = -128;
                    av[k + i] = 127;
                    bv[2 * i] = 255;
                    bv[2 * i + 1] = i % 2 ? 0 : 255;
                }
            }
            for (int op = 0; op < 2; op++) {
                qh_edge_case *c;
                if (op == 0) {
                    c = add_case(x, MMI, 10, "%s%s-k%lld", tname(ta), tname(tb), (long long)k);
                    if (!c)
                        break;
                    qmm_matmulinteger *m = mmi_of(c);
                    tq(x, c, &m->a, ta, DIMS(2, k), av);
                    tq(x, c, &m->b, tb, DIMS(k, 2), bv);
                } else {
                    int32_t ty = rev ? U8 : S8;
                    c = add_case(x, QLM, 10, "%s%s%s-k%lld", tname(ta), tname(tb), tname(ty),
                                 (long long)k);
                    if (!c)
                        break;
                    qmm_qlinearmatmul *q = qlm_of(c);
                    tq(x, c, &q->a, ta, DIMS(2, k), av);
                    tq(x, c, &q->b, tb, DIMS(k, 2), bv);
                    /* |acc| <= 255·128·K; y = acc / 2^e lands within ±128 */
                    int e = bitlen((uint64_t)(255 * 128 * k)) - 7;
                    qlm_scalars(x, c, F32, 1.0, 0, 1.0, 0, ldexp(1.0, e), ty == U8 ? 128 : 0, ty);
                }
                tag(c, "extreme-values");
                tag(c, "int16-pair-sum");
                describe(c, "255·(−128) and 255·127 products, K = %lld: any two of them "
                            "overflow a saturating int16 pair sum (vpmaddubsw)",
                         (long long)k);
            }
            free(av);
            free(bv);
        }
    }
    /* zero points at the far end: every centred value is ±255, products 65025 */
    for (int op = 0; op < 2; op++) {
        int64_t k = 64;
        qh_edge_case *c = op == 0 ? add_case(x, MMI, 10, "zp-extremes-u8s8-k64")
                                  : add_case(x, QLM, 10, "zp-extremes-u8s8u8-k64");
        if (!c)
            return;
        qmm_tensor *a = op ? &qlm_of(c)->a : &mmi_of(c)->a;
        qmm_tensor *b = op ? &qlm_of(c)->b : &mmi_of(c)->b;
        tqc(x, c, a, U8, DIMS(2, k), 0);
        if (a->data)
            memset(a->data, 255, (size_t)k); /* row 0: 255 − 255 = 0 ... row 1: 0 − 255 */
        tqc(x, c, b, S8, DIMS(k, 2), -128);
        if (op == 0) {
            tqc(x, c, &mmi_of(c)->a_zero_point, U8, SCALAR, 255);
            tqc(x, c, &mmi_of(c)->b_zero_point, S8, SCALAR, 127);
        } else {
            qlm_scalars(x, c, F32, 1.0, 255, 1.0, 127, ldexp(1.0, 16), 128, U8);
        }
        tag(c, "extreme-values");
        tag(c, "int16-pair-sum");
        tag(c, "zero-point-extremes");
        describe(c, "a_zero_point 255 and b_zero_point 127 against a = 0 and b = -128: "
                    "centred values -255 and -255, each product 65025 > int16");
    }
}

/* ---- suite: params ----------------------------------------------------------------------- */

/* A QLinearMatMul with random operands and the given parameter shapes (rank/dims for each of
 * a, b, y parameters; a scale and its zero point share the shape). */
typedef struct pshape {
    int32_t rank;
    int64_t dims[6];
} pshape;

static void params_case(ctx *x, const char *name, const char *what, const char *tag1,
                        const char *tag2, int32_t ra, const int64_t *ad, int32_t rb,
                        const int64_t *bd, pshape pa, pshape pb, pshape py, int idx)
{
    int32_t ta = combos[idx % 4][0], tb = combos[idx % 4][1], ty = idx % 3 ? U8 : S8;
    int32_t sdt = idx % 5 == 4 ? F16 : F32;
    qh_edge_case *c = add_case(x, QLM, opset_for(sdt), "%s", name);
    if (!c)
        return;
    qmm_qlinearmatmul *q = qlm_of(c);
    tqfull(x, c, &q->a, ta, ra, ad);
    tqfull(x, c, &q->b, tb, rb, bd);
    tsr(x, c, &q->a_scale, sdt, pa.rank, pa.dims, -6, -3);
    tqfull(x, c, &q->a_zero_point, ta, pa.rank, pa.dims);
    tsr(x, c, &q->b_scale, sdt, pb.rank, pb.dims, -6, -3);
    tqfull(x, c, &q->b_zero_point, tb, pb.rank, pb.dims);
    tsr(x, c, &q->y_scale, sdt, py.rank, py.dims, 2, 4);
    tqr(x, c, &q->y_zero_point, ty, py.rank, py.dims, ty == U8 ? 64 : -64, ty == U8 ? 192 : 64);
    tag(c, tag1);
    if (tag2)
        tag(c, tag2);
    describe(c, "%s", what);
}

static void suite_params(ctx *x)
{
    const int64_t a2[2] = {3, 4}, b2[2] = {4, 2};
    const int64_t a3[3] = {2, 3, 4}, b3[3] = {2, 4, 2};
    pshape s0 = {0, {0}}, s1 = {1, {1}};
    int i = 0;
    params_case(x, "per-tensor-rank0", "every parameter a scalar []", "per-tensor", NULL, 2, a2,
                2, b2, s0, s0, s0, i++);
    params_case(x, "per-tensor-rank1", "every parameter [1]", "per-tensor", NULL, 2, a2, 2, b2,
                s1, s1, s1, i++);
    params_case(x, "per-row-m", "a_scale/a_zero_point [M] (the spec's wording)", "per-row", NULL,
                2, a2, 2, b2, (pshape){1, {3}}, s0, s0, i++);
    params_case(x, "per-row-m1", "a parameters [M,1]", "per-row", NULL, 2, a2, 2, b2,
                (pshape){2, {3, 1}}, s0, s0, i++);
    params_case(x, "per-row-bm1-3d", "3-D a, a parameters [B,M,1]", "per-row", "batch", 3, a3,
                3, b3, (pshape){3, {2, 3, 1}}, s0, s0, i++);
    params_case(x, "per-row-1m1-3d", "3-D a, a parameters [1,M,1]", "per-row", "batch", 3, a3,
                3, b3, (pshape){3, {1, 3, 1}}, s0, s0, i++);
    params_case(x, "per-row-m1-3d", "3-D a, a parameters [M,1] (broadcast over the batch)",
                "per-row", "batch", 3, a3, 3, b3, (pshape){2, {3, 1}}, s0, s0, i++);
    params_case(x, "per-column-n", "b parameters [N]", "per-column", NULL, 2, a2, 2, b2, s0,
                (pshape){1, {2}}, s0, i++);
    params_case(x, "per-column-1n", "b parameters [1,N]", "per-column", NULL, 2, a2, 2, b2, s0,
                (pshape){2, {1, 2}}, s0, i++);
    params_case(x, "per-column-b1n-3d", "3-D b, b parameters [B,1,N]", "per-column", "batch", 3,
                a3, 3, b3, s0, (pshape){3, {2, 1, 2}}, s0, i++);
    params_case(x, "per-column-n-3d", "3-D b, b parameters [N]", "per-column", "batch", 3, a3,
                3, b3, s0, (pshape){1, {2}}, s0, i++);
    params_case(x, "per-row-and-column", "a [M], b [N], y per-tensor", "per-row", "per-column", 2,
                a2, 2, b2, (pshape){1, {3}}, (pshape){1, {2}}, s0, i++);
    params_case(x, "y-mn", "y parameters [M,N]: one per output element", "y-broadcast", NULL, 2,
                a2, 2, b2, s0, s0, (pshape){2, {3, 2}}, i++);
    params_case(x, "y-n", "y parameters [N]", "y-broadcast", NULL, 2, a2, 2, b2, s0, s0,
                (pshape){1, {2}}, i++);
    params_case(x, "y-m1", "y parameters [M,1]", "y-broadcast", NULL, 2, a2, 2, b2, s0, s0,
                (pshape){2, {3, 1}}, i++);
    params_case(x, "y-b1n-3d", "3-D y, y parameters [B,1,N]", "y-broadcast", "batch", 3, a3, 3,
                b3, s0, s0, (pshape){3, {2, 1, 2}}, i++);
    params_case(x, "y-bmn-3d", "3-D y, y parameters [B,M,N]", "y-broadcast", "batch", 3, a3, 3,
                b3, s0, s0, (pshape){3, {2, 3, 2}}, i++);
    params_case(x, "all-forms-3d", "a [B,M,1], b [B,1,N], y [B,M,N]", "per-row", "per-column", 3,
                a3, 3, b3, (pshape){3, {2, 3, 1}}, (pshape){3, {2, 1, 2}},
                (pshape){3, {2, 3, 2}}, i++);
    /* the ambiguous cousins: [M] when M == K reads per-row (numpy would broadcast it along K);
     * [N] for y when M == N runs along N */
    const int64_t sq[2] = {4, 4};
    params_case(x, "ambiguous-a-m-equals-k", "a [4,4] with a parameters [4]: per-row (the "
                "spec), not numpy's broadcast along K",
                "ambiguous", "per-row", 2, sq, 2, b2, (pshape){1, {4}}, s0, s0, i++);
    params_case(x, "ambiguous-b-n-equals-k", "b [4,4] with b parameters [4]: per-column",
                "ambiguous", "per-column", 2, a2, 2, sq, s0, (pshape){1, {4}}, s0, i++);
    params_case(x, "ambiguous-y-n-m-equals-n", "y [4,4] with y parameters [4]: along N (numpy "
                "broadcasting), not per-row",
                "ambiguous", "y-broadcast", 2, sq, 2, sq, s0, s0, (pshape){1, {4}}, i++);
    params_case(x, "ambiguous-all-square", "a, b, y all [4,4]; a [4] per-row, b [4] "
                "per-column, y [4] along N",
                "ambiguous", "per-row", 2, sq, 2, sq, (pshape){1, {4}}, (pshape){1, {4}},
                (pshape){1, {4}}, i++);
}

/* ---- suite: broadcast -------------------------------------------------------------------- */

static void bcast_case(ctx *x, qmm_op_kind op, const char *name, int32_t ra, const int64_t *ad,
                       int32_t rb, const int64_t *bd, pshape pa, pshape pb, pshape py, int idx)
{
    int32_t ta = combos[idx % 4][0], tb = combos[idx % 4][1], ty = idx % 2 ? U8 : S8;
    qh_edge_case *c = add_case(x, op, 10, "%s", name);
    if (!c)
        return;
    if (op == MMI) {
        qmm_matmulinteger *m = mmi_of(c);
        tqfull(x, c, &m->a, ta, ra, ad);
        tqfull(x, c, &m->b, tb, rb, bd);
        tqfull(x, c, &m->a_zero_point, ta, pa.rank, pa.dims);
        tqfull(x, c, &m->b_zero_point, tb, pb.rank, pb.dims);
    } else {
        qmm_qlinearmatmul *q = qlm_of(c);
        tqfull(x, c, &q->a, ta, ra, ad);
        tqfull(x, c, &q->b, tb, rb, bd);
        tsr(x, c, &q->a_scale, F32, pa.rank, pa.dims, -6, -3);
        tqfull(x, c, &q->a_zero_point, ta, pa.rank, pa.dims);
        tsr(x, c, &q->b_scale, F32, pb.rank, pb.dims, -6, -3);
        tqfull(x, c, &q->b_zero_point, tb, pb.rank, pb.dims);
        tsr(x, c, &q->y_scale, F32, py.rank, py.dims, 3, 4);
        tqr(x, c, &q->y_zero_point, ty, py.rank, py.dims, ty == U8 ? 96 : -32, ty == U8 ? 160 : 32);
    }
    tag(c, "batch");
    tag(c, "broadcast");
    char da[64], db[64];
    qh_format_dims(op == MMI ? &mmi_of(c)->a : &qlm_of(c)->a, da, sizeof da);
    qh_format_dims(op == MMI ? &mmi_of(c)->b : &qlm_of(c)->b, db, sizeof db);
    describe(c, "a %s times b %s, batch dims broadcast numpy-style", da, db);
}

static void suite_broadcast(ctx *x)
{
    pshape s0 = {0, {0}};
    int i = 0;
    for (int op = 0; op < 2; op++) {
        qmm_op_kind k = op ? MMI : QLM;
        bcast_case(x, k, "a3-b2", DIMS(2, 3, 4), DIMS(4, 5), s0, s0, s0, i++);
        bcast_case(x, k, "a2-b3", DIMS(3, 4), DIMS(2, 4, 5), s0, s0, s0, i++);
        bcast_case(x, k, "a1bk-bbkn", DIMS(1, 3, 4), DIMS(2, 4, 5), s0, s0, s0, i++);
        bcast_case(x, k, "a4-b3-mixed-ones", DIMS(2, 1, 3, 4), DIMS(3, 4, 2), s0, s0, s0, i++);
        bcast_case(x, k, "a4-b4-crossed", DIMS(2, 1, 3, 4), DIMS(1, 3, 4, 2), s0, s0, s0, i++);
        bcast_case(x, k, "a5-b4", DIMS(2, 1, 2, 2, 3), DIMS(3, 1, 3, 2), s0, s0, s0, i++);
    }
    bcast_case(x, QLM, "batched-params", DIMS(2, 1, 3, 4), DIMS(3, 4, 2),
               (pshape){4, {2, 1, 3, 1}}, (pshape){3, {3, 1, 2}}, (pshape){4, {2, 3, 1, 2}},
               i++);
    bcast_case(x, MMI, "batched-zero-points", DIMS(2, 1, 3, 4), DIMS(3, 4, 2),
               (pshape){4, {2, 1, 3, 1}}, (pshape){3, {3, 1, 2}}, s0, i++);
}

/* ---- suite: one-d ------------------------------------------------------------------------ */

static void suite_one_d(ctx *x)
{
    pshape s0 = {0, {0}};
    int i = 0;
    for (int op = 0; op < 2; op++) {
        qmm_op_kind k = op ? MMI : QLM;
        bcast_case(x, k, "k-kn", DIMS(5), DIMS(5, 3), s0, s0, s0, i++);
        bcast_case(x, k, "mk-k", DIMS(3, 5), DIMS(5), s0, s0, s0, i++);
        bcast_case(x, k, "k-k", DIMS(7), DIMS(7), s0, s0, s0, i++);
        bcast_case(x, k, "k-bkn", DIMS(4), DIMS(2, 4, 3), s0, s0, s0, i++);
        bcast_case(x, k, "bmk-k", DIMS(2, 3, 4), DIMS(4), s0, s0, s0, i++);
    }
    bcast_case(x, QLM, "k-kn-per-column", DIMS(5), DIMS(5, 3), s0, (pshape){1, {3}},
               (pshape){1, {3}}, i++);
    bcast_case(x, QLM, "mk-k-per-row", DIMS(3, 5), DIMS(5), (pshape){1, {3}}, s0,
               (pshape){1, {3}}, i++);
    bcast_case(x, MMI, "mk-k-per-row-zp", DIMS(3, 5), DIMS(5), (pshape){1, {3}}, s0, s0, i++);
    for (size_t j = x->out->count - 13; j < x->out->count; j++) {
        qh_edge_case *c = &x->out->items[j];
        c->meta.n_tags = 1; /* keep the suite tag, replace batch/broadcast */
        tag(c, "1-d");
    }
}

/* ---- suite: empty ------------------------------------------------------------------------ */

static void suite_empty(ctx *x)
{
    pshape s0 = {0, {0}};
    int i = 0;
    for (int op = 0; op < 2; op++) {
        qmm_op_kind k = op ? MMI : QLM;
        bcast_case(x, k, "m0", DIMS(0, 3), DIMS(3, 2), s0, s0, s0, i++);
        bcast_case(x, k, "n0", DIMS(2, 3), DIMS(3, 0), s0, s0, s0, i++);
        bcast_case(x, k, "k0", DIMS(2, 0), DIMS(0, 3), s0, s0, s0, i++);
        bcast_case(x, k, "batch0", DIMS(0, 2, 3), DIMS(3, 2), s0, s0, s0, i++);
        bcast_case(x, k, "k0-1d", DIMS(0), DIMS(0), s0, s0, s0, i++);
    }
    bcast_case(x, QLM, "k0-per-row-col", DIMS(3, 0), DIMS(0, 2), (pshape){1, {3}},
               (pshape){1, {2}}, (pshape){2, {3, 2}}, i++);
    bcast_case(x, QLM, "m0-per-row", DIMS(0, 3), DIMS(3, 2), (pshape){1, {0}}, s0, s0, i++);
    bcast_case(x, MMI, "k0-zero-points", DIMS(3, 0), DIMS(0, 2), (pshape){1, {3}},
               (pshape){1, {2}}, s0, i++);
    for (size_t j = x->out->count - 13; j < x->out->count; j++) {
        qh_edge_case *c = &x->out->items[j];
        c->meta.n_tags = 1;
        tag(c, "empty");
        if (strstr(c->name, "/k0"))
            tag(c, "k0");
        describe(c, "an empty dimension: %s", strstr(c->name, "/k0")
                                                  ? "K = 0, every sum is 0 (y = y_zero_point)"
                                                  : "the output has no elements");
    }
}

/* ---- suite: overflow --------------------------------------------------------------------- */

static void overflow_case(ctx *x, qmm_op_kind op, int32_t t, int64_t k)
{
    /* centred a = +255 everywhere; b column 0 centred +255, column 1 centred −255 */
    int64_t za = t == U8 ? 0 : 127, av = t == U8 ? 255 : -128; /* s8: -128 − 127 = −255 */
    int64_t zb[2], bv[2];
    if (t == U8) {
        zb[0] = 0, bv[0] = 255, zb[1] = 255, bv[1] = 0;
    } else {
        zb[0] = 127, bv[0] = -128, zb[1] = -128, bv[1] = 127;
    }
    qh_edge_case *c = op == MMI ? add_case(x, MMI, 10, "%s%s-k%lld", tname(t), tname(t), (long long)k)
                                : add_case(x, QLM, 10, "%s%s%s-k%lld", tname(t), tname(t), tname(t),
                                           (long long)k);
    if (!c)
        return;
    qmm_tensor *a = op == MMI ? &mmi_of(c)->a : &qlm_of(c)->a;
    qmm_tensor *b = op == MMI ? &mmi_of(c)->b : &qlm_of(c)->b;
    tqc(x, c, a, t, DIMS(1, k), av);
    tqc(x, c, b, t, DIMS(k, 2), 0);
    for (int64_t i = 0; b->data && i < k; i++) {
        qh_tensor_set_int(b, 2 * i, bv[0]);
        qh_tensor_set_int(b, 2 * i + 1, bv[1]);
    }
    if (op == MMI) {
        tqc(x, c, &mmi_of(c)->a_zero_point, t, SCALAR, za);
        tq(x, c, &mmi_of(c)->b_zero_point, t, DIMS(2), zb);
    } else {
        qmm_qlinearmatmul *q = qlm_of(c);
        tsc(x, c, &q->a_scale, F32, SCALAR, 1.0);
        tqc(x, c, &q->a_zero_point, t, SCALAR, za);
        tsc(x, c, &q->b_scale, F32, DIMS(2), 1.0);
        tq(x, c, &q->b_zero_point, t, DIMS(2), zb);
        tsc(x, c, &q->y_scale, F32, SCALAR, ldexp(1.0, 25));
        tqc(x, c, &q->y_zero_point, t, SCALAR, t == U8 ? 128 : 0);
    }
    tag(c, "k-large");
    tag(c, "extreme-values");
    describe(c, "K = %lld, every product ±65025: acc = ±%lld, which %s int32%s", (long long)k,
             (long long)(65025 * k), 65025 * k > 2147483647 ? "does not fit" : "still fits",
             op == MMI ? " (MatMulInteger: the int32-wrapped sum is the answer)"
                       : " (y_scale 2^25: the exact and the wrapped acc give ±64 and ∓64)");
}

static void suite_overflow(ctx *x)
{
    overflow_case(x, MMI, U8, 33025);
    overflow_case(x, MMI, U8, 33026);
    overflow_case(x, MMI, S8, 33026);
    overflow_case(x, QLM, U8, 33025);
    overflow_case(x, QLM, U8, 33026);
    overflow_case(x, QLM, S8, 33026);
}

/* ---- suite: scales ----------------------------------------------------------------------- */

static void scales_case(ctx *x, const char *name, int32_t sdt, double sa, double sb, double sy,
                        int small_acc, const char *tag1, const char *what)
{
    int idx = (int)(x->out->count % 4);
    int32_t ta = combos[idx][0], tb = combos[idx][1], ty = idx % 2 ? S8 : U8;
    qh_edge_case *c = add_case(x, QLM, opset_for(sdt), "%s", name);
    if (!c)
        return;
    qmm_qlinearmatmul *q = qlm_of(c);
    int64_t za = ta == U8 ? 128 : 0, zb = tb == U8 ? 128 : 0;
    if (small_acc) {
        tqr(x, c, &q->a, ta, DIMS(3, 4), za - 2, za + 2);
        tqr(x, c, &q->b, tb, DIMS(4, 3), zb - 2, zb + 2);
    } else {
        tqr(x, c, &q->a, ta, DIMS(3, 4), za - 60, za + 60);
        tqr(x, c, &q->b, tb, DIMS(4, 3), zb - 60, zb + 60);
    }
    qlm_scalars(x, c, sdt, sa, za, sb, zb, sy, ty == U8 ? 128 : 0, ty);
    tag(c, tag1);
    describe(c, "%s (a_scale %.9g, b_scale %.9g, y_scale %.9g)", what, sa, sb, sy);
}

static void suite_scales(ctx *x)
{
    scales_case(x, "float32-subnormal-a", F32, 1.5 * ldexp(1, -140), ldexp(1, -4), ldexp(1, -138), 0,
                "subnormal", "a_scale is a float32 subnormal");
    scales_case(x, "float32-subnormal-bits", F32, 291 * ldexp(1, -149), ldexp(1, 20),
                ldexp(1, -116), 0, "subnormal", "a_scale 0x00000123 (291·2^-149)");
    scales_case(x, "float32-subnormal-y", F32, ldexp(1, -135), ldexp(1, -10), 3 * ldexp(1, -148),
                1, "subnormal", "y_scale a float32 subnormal, product sa·sb subnormal too");
    scales_case(x, "float32-product-underflow", F32, 1.5 * ldexp(1, -75), ldexp(1, -76),
                ldexp(1, -146), 0, "underflow",
                "sa·sb = 1.5·2^-151 underflows float32 to 0; the exact multiplier is 1.5·2^-5");
    scales_case(x, "float32-product-overflow", F32, ldexp(1, 70), ldexp(1, 60),
                1.5 * ldexp(1, 127), 1, "overflow",
                "sa·sb = 2^130 overflows float32 to inf; the exact multiplier is 16/3");
    scales_case(x, "float32-huge-and-tiny", F32, ldexp(1, 100), ldexp(1, -100) * 1.25,
                ldexp(1, 5), 0, "huge", "a_scale 2^100 against b_scale 1.25·2^-100");
    scales_case(x, "float16-subnormal", F16, ldexp(1, -20), 0.125, 3 * ldexp(1, -24), 1,
                "subnormal", "a_scale and y_scale float16 subnormals; multiplier 2/3");
    scales_case(x, "float16-product-underflow", F16, ldexp(1, -12), ldexp(1, -14),
                ldexp(1, -14) * ldexp(1, -6) * 1.5, 0, "underflow",
                "sa·sb = 2^-26 is below half the smallest float16 subnormal: 0 in float16");
    scales_case(x, "float16-product-overflow", F16, 60000, 2.0, 65504, 1, "overflow",
                "sa·sb = 120000 overflows float16 (max 65504) to inf");
    scales_case(x, "float16-max", F16, 65504, 65504, 65504, 1, "huge",
                "every scale the largest float16");
    scales_case(x, "bfloat16-subnormal", BF16, ldexp(1, -130), ldexp(1, 10), ldexp(1, -115), 0,
                "subnormal", "a_scale a bfloat16 subnormal (2^-130)");
    scales_case(x, "bfloat16-coarse", BF16, 1.0078125, 1.9921875, 1.0078125 * 1.9921875 * 97, 0,
                "coarse-mantissa", "8-bit mantissas: the product needs 16 bits");
    scales_case(x, "bfloat16-product-overflow", BF16, ldexp(1, 90), ldexp(1, 40),
                1.5 * ldexp(1, 127), 1, "overflow", "sa·sb = 2^130 overflows bfloat16 to inf");
}

/* ---- suite: types ------------------------------------------------------------------------ */

static void suite_types(ctx *x)
{
    static const int32_t sdts[4] = {F32, F32, F16, BF16};
    for (int s = 0; s < 4; s++) {
        for (int t = 0; t < 8; t++) {
            int32_t ta = t & 4 ? S8 : U8, tb = t & 2 ? S8 : U8, ty = t & 1 ? S8 : U8;
            int32_t opset = s == 0 ? 10 : 21;
            qh_edge_case *c = add_case(x, QLM, opset, "%s%s%s-opset%d-%s", tname(ta), tname(tb),
                                       tname(ty), opset, sname(sdts[s]));
            if (!c)
                return;
            qmm_qlinearmatmul *q = qlm_of(c);
            tqfull(x, c, &q->a, ta, DIMS(3, 5));
            tqfull(x, c, &q->b, tb, DIMS(5, 4));
            double sa = short_scale(x, -6, -2), sb = short_scale(x, -6, -2);
            int64_t za = qh_rng_range(&x->rng, lo_of(ta), hi_of(ta));
            int64_t zb = qh_rng_range(&x->rng, lo_of(tb), hi_of(tb));
            int64_t zy = qh_rng_range(&x->rng, lo_of(ty) + 64, hi_of(ty) - 64);
            qlm_scalars(x, c, sdts[s], sa, za, sb, zb, fitting_sy(sa, sb, 5, 9000), zy, ty);
            tag(c, "types");
            describe(c, "a %s, b %s, y %s, opset %d, %s scales", tname(ta), tname(tb), tname(ty),
                     opset, sname(sdts[s]));
        }
    }
}

/* ---- suite: zero-points (MatMulInteger) -------------------------------------------------- */

static void suite_zero_points(ctx *x)
{
    static const char *const forms[4] = {"none", "a-only", "b-only", "both"};
    for (int t = 0; t < 4; t++) {
        int32_t ta = combos[t][0], tb = combos[t][1];
        for (int f = 0; f < 4; f++) {
            qh_edge_case *c = add_case(x, MMI, 10, "%s-%s%s", forms[f], tname(ta), tname(tb));
            if (!c)
                return;
            qmm_matmulinteger *m = mmi_of(c);
            tqfull(x, c, &m->a, ta, DIMS(3, 4));
            tqfull(x, c, &m->b, tb, DIMS(4, 2));
            if (f & 1)
                tqfull(x, c, &m->a_zero_point, ta, SCALAR);
            if (f & 2)
                tqfull(x, c, &m->b_zero_point, tb, DIMS(1));
            tag(c, f == 0 ? "no-zero-points" : "zero-points");
            if (f == 2)
                tag(c, "omitted-optional-input");
            describe(c, "MatMulInteger %s%s, zero points: %s%s", tname(ta), tname(tb), forms[f],
                     f == 2 ? " (a_zero_point omitted as \"\" in the node)" : "");
        }
    }
    static const struct {
        const char *name;
        pshape za, zb;
    } shaped[] = {
        {"per-row-m", {1, {3}}, {0, {0}}},
        {"per-row-m1", {2, {3, 1}}, {0, {0}}},
        {"per-column-n", {0, {0}}, {1, {2}}},
        {"per-column-1n", {0, {0}}, {2, {1, 2}}},
        {"per-row-and-column", {1, {3}}, {1, {2}}},
    };
    for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; i++) {
        int32_t ta = combos[i % 4][0], tb = combos[(i + 1) % 4][1];
        qh_edge_case *c = add_case(x, MMI, 10, "%s-%s%s", shaped[i].name, tname(ta), tname(tb));
        if (!c)
            return;
        qmm_matmulinteger *m = mmi_of(c);
        tqfull(x, c, &m->a, ta, DIMS(3, 4));
        tqfull(x, c, &m->b, tb, DIMS(4, 2));
        tqfull(x, c, &m->a_zero_point, ta, shaped[i].za.rank, shaped[i].za.dims);
        tqfull(x, c, &m->b_zero_point, tb, shaped[i].zb.rank, shaped[i].zb.dims);
        tag(c, "zero-points");
        tag(c, shaped[i].za.rank ? "per-row" : "per-column");
        describe(c, "MatMulInteger with %s zero points", shaped[i].name);
    }
    qh_edge_case *c = add_case(x, MMI, 10, "ambiguous-m-equals-k-u8u8");
    if (!c)
        return;
    qmm_matmulinteger *m = mmi_of(c);
    tqfull(x, c, &m->a, U8, DIMS(4, 4));
    tqfull(x, c, &m->b, U8, DIMS(4, 2));
    tqfull(x, c, &m->a_zero_point, U8, DIMS(4));
    tag(c, "zero-points");
    tag(c, "ambiguous");
    tag(c, "per-row");
    describe(c, "a [4,4] with a_zero_point [4]: per-row, not broadcast along K");
}

/* ---- suite: invalid ---------------------------------------------------------------------- */

/* A valid 2x3 · 3x2 uint8 QLinearMatMul to break one rule of; `c` receives it. */
static qh_edge_case *invalid_base(ctx *x, const char *name, int32_t sdt, const char *rule)
{
    qh_edge_case *c = add_case(x, QLM, opset_for(sdt), "%s", name);
    if (!c)
        return NULL;
    c->meta.expect = QMM_INVALID_ARGUMENT;
    qmm_qlinearmatmul *q = qlm_of(c);
    tqfull(x, c, &q->a, U8, DIMS(2, 3));
    tqfull(x, c, &q->b, U8, DIMS(3, 2));
    qlm_scalars(x, c, sdt, 0.5, 128, 0.25, 128, 4.0, 128, U8);
    tag(c, "invalid");
    tag(c, rule);
    return c;
}

static void suite_invalid(ctx *x)
{
    qh_edge_case *c;
    qmm_qlinearmatmul *q;
#define BASE(name, rule, what)                                                              \
    if (!(c = invalid_base(x, name, F32, rule)))                                            \
        return;                                                                             \
    q = qlm_of(c);                                                                          \
    describe(c, "%s", what)

    BASE("rank0-a", "rank-0", "a is a scalar (rank 0)");
    tqc(x, c, &q->a, U8, SCALAR, 7);
    BASE("rank0-b", "rank-0", "b is a scalar (rank 0)");
    tqc(x, c, &q->b, U8, SCALAR, 7);
    BASE("k-mismatch", "k-mismatch", "a [2,3] times b [4,2]");
    tqfull(x, c, &q->b, U8, DIMS(4, 2));
    BASE("batch-mismatch", "batch-broadcast", "a [2,2,3] times b [3,3,2]: batch 2 vs 3");
    tqfull(x, c, &q->a, U8, DIMS(2, 2, 3));
    tqfull(x, c, &q->b, U8, DIMS(3, 3, 2));
    BASE("zp-type-a", "zero-point-type", "a uint8, a_zero_point int8");
    tqc(x, c, &q->a_zero_point, S8, SCALAR, 0);
    BASE("zp-type-b", "zero-point-type", "b uint8, b_zero_point int8");
    tqc(x, c, &q->b_zero_point, S8, SCALAR, 0);
    BASE("a-scale-shape-k", "parameter-shape", "a [2,3] with a_scale/a_zero_point [3] (K)");
    tsc(x, c, &q->a_scale, F32, DIMS(3), 0.5);
    tqc(x, c, &q->a_zero_point, U8, DIMS(3), 128);
    BASE("a-scale-shape-mk", "parameter-shape", "a_scale/a_zero_point [2,3]: varies along K");
    tsc(x, c, &q->a_scale, F32, DIMS(2, 3), 0.5);
    tqc(x, c, &q->a_zero_point, U8, DIMS(2, 3), 128);
    BASE("b-scale-shape-k1", "parameter-shape", "b_scale/b_zero_point [3,1]: per-row of b");
    tsc(x, c, &q->b_scale, F32, DIMS(3, 1), 0.25);
    tqc(x, c, &q->b_zero_point, U8, DIMS(3, 1), 128);
    BASE("y-scale-shape", "parameter-shape", "y [2,2] with y_scale/y_zero_point [3]");
    tsc(x, c, &q->y_scale, F32, DIMS(3), 4.0);
    tqc(x, c, &q->y_zero_point, U8, DIMS(3), 128);
    BASE("scale-zp-shapes-differ", "scale-zero-point-shape",
         "a_scale [2] (per-row) but a_zero_point [] (per-tensor)");
    tsc(x, c, &q->a_scale, F32, DIMS(2), 0.5);
    BASE("scale-zp-shapes-differ-1n", "scale-zero-point-shape",
         "b_scale [1,2] but b_zero_point [2]");
    tsc(x, c, &q->b_scale, F32, DIMS(1, 2), 0.25);
    tqc(x, c, &q->b_zero_point, U8, DIMS(2), 128);
    BASE("scale-zero", "scale-value", "a_scale = 0");
    tsc(x, c, &q->a_scale, F32, SCALAR, 0.0);
    BASE("scale-negative-zero", "scale-value", "b_scale = -0.0");
    tsc(x, c, &q->b_scale, F32, SCALAR, -0.0);
    BASE("scale-negative", "scale-value", "b_scale = -0.25");
    tsc(x, c, &q->b_scale, F32, SCALAR, -0.25);
    BASE("scale-nan", "scale-value", "y_scale = NaN");
    tsc(x, c, &q->y_scale, F32, SCALAR, NAN);
    BASE("scale-inf", "scale-value", "a_scale = +inf");
    tsc(x, c, &q->a_scale, F32, SCALAR, INFINITY);
    BASE("scale-one-bad-element", "scale-value", "per-row a_scale [0.5, 0]");
    ts(x, c, &q->a_scale, F32, DIMS(2), (const double[]){0.5, 0.0});
    tqc(x, c, &q->a_zero_point, U8, DIMS(2), 128);
    if (!(c = invalid_base(x, "scale-nan-float16", F16, "scale-value")))
        return;
    tsc(x, c, &qlm_of(c)->b_scale, F16, SCALAR, NAN);
    describe(c, "b_scale = NaN (float16)");
    BASE("type-a-int16", "type", "a int16 (not a QLinearMatMul type)");
    tqc(x, c, &q->a, QMM_DTYPE_INT16, DIMS(2, 3), 1);
    tqc(x, c, &q->a_zero_point, QMM_DTYPE_INT16, SCALAR, 0);
    BASE("type-y-int32", "type", "y_zero_point (and so y) int32");
    tqc(x, c, &q->y_zero_point, QMM_DTYPE_INT32, SCALAR, 0);
    BASE("type-scale-int32", "type", "a_scale int32 (not a scale type)");
    tsc(x, c, &q->a_scale, QMM_DTYPE_FLOAT, SCALAR, 0.5);
    q->a_scale.dtype = QMM_DTYPE_INT32; /* same 4 bytes, relabelled */
    BASE("type-float16-scales-opset10", "type", "float16 scales need opset 21");
    tsc(x, c, &q->a_scale, F16, SCALAR, 0.5);
    tsc(x, c, &q->b_scale, F16, SCALAR, 0.25);
    tsc(x, c, &q->y_scale, F16, SCALAR, 4.0);
    if (!(c = invalid_base(x, "type-scales-differ", F16, "type")))
        return;
    tsc(x, c, &qlm_of(c)->b_scale, F32, SCALAR, 0.25);
    describe(c, "a_scale float16 but b_scale float (one type TS for all scales)");
    BASE("type-float8-opset10", "type", "float8e4m3fn operands need opset 21");
    tqc(x, c, &q->a, QMM_DTYPE_FLOAT8E4M3FN, DIMS(2, 3), 0x38);
    tqc(x, c, &q->a_zero_point, QMM_DTYPE_FLOAT8E4M3FN, SCALAR, 0);
#undef BASE
    /* MatMulInteger */
    static const char *const names[5] = {"rank0", "k-mismatch", "zp-type", "zp-shape-k",
                                         "type-int16"};
    static const char *const rules[5] = {"rank-0", "k-mismatch", "zero-point-type",
                                         "parameter-shape", "type"};
    static const char *const what[5] = {"A is a scalar", "A [2,3] times B [4,2]",
                                        "A uint8, a_zero_point int8",
                                        "a_zero_point [3] (K) for A [2,3]", "A int16"};
    for (int i = 0; i < 5; i++) {
        c = add_case(x, MMI, 10, "%s", names[i]);
        if (!c)
            return;
        c->meta.expect = QMM_INVALID_ARGUMENT;
        qmm_matmulinteger *m = mmi_of(c);
        if (i == 0)
            tqc(x, c, &m->a, U8, SCALAR, 3);
        else if (i == 4)
            tqc(x, c, &m->a, QMM_DTYPE_INT16, DIMS(2, 3), 3);
        else
            tqfull(x, c, &m->a, U8, DIMS(2, 3));
        tqfull(x, c, &m->b, U8, 2, i == 1 ? (const int64_t[]){4, 2} : (const int64_t[]){3, 2});
        if (i == 2)
            tqc(x, c, &m->a_zero_point, S8, SCALAR, 0);
        if (i == 3)
            tqc(x, c, &m->a_zero_point, U8, DIMS(3), 0);
        tag(c, "invalid");
        tag(c, rules[i]);
        describe(c, "%s", what[i]);
    }
    /* docs/semantics.md §2.6: NaN and infinity are not quantized values (last, so the cases
     * above draw the values they always drew) */
    static const struct {
        const char *name, *what;
        int32_t dt;
        int input; /* 0: a, 1: b, 2: y_zero_point */
        int64_t code;
    } bad8[3] = {
        {"float8-nan-a", "a float8e4m3fn with one NaN code (0x7f)", QMM_DTYPE_FLOAT8E4M3FN, 0,
         0x7f},
        {"float8-inf-b", "b float8e5m2 with one -inf code (0xfc)", QMM_DTYPE_FLOAT8E5M2, 1, 0xfc},
        {"float8-nan-y-zero-point", "y_zero_point float8e4m3fnuz 0x80, its one NaN",
         QMM_DTYPE_FLOAT8E4M3FNUZ, 2, 0x80},
    };
    for (int i = 0; i < 3; i++) {
        if (!(c = invalid_base(x, bad8[i].name, F32, "float8-value")))
            return;
        c->problem.call.u.qlinearmatmul.opset = 21;
        q = qlm_of(c);
        int32_t dt = bad8[i].dt;
        if (bad8[i].input == 2) {
            tqc(x, c, &q->y_zero_point, dt, SCALAR, bad8[i].code);
        } else {
            qmm_tensor *t = bad8[i].input ? &q->b : &q->a;
            int64_t vals[6] = {0x38, 0x30, 0x40, 0x38, 0x38, 0x38};
            vals[4] = bad8[i].code;
            tq(x, c, t, dt, 2, bad8[i].input ? (const int64_t[]){3, 2} : (const int64_t[]){2, 3},
               vals);
            tqc(x, c, bad8[i].input ? &q->b_zero_point : &q->a_zero_point, dt, SCALAR, 0);
        }
        describe(c, "%s", bad8[i].what);
    }
}

/* ---- suite: random ----------------------------------------------------------------------- */

static void suite_random(ctx *x)
{
    qh_random_opts o = {.invalid_per_mille = 100, .max_outputs = 256, .max_macs = 1 << 14};
    for (int i = 0; i < 40 && !x->failed; i++) {
        qh_rng r;
        qh_rng_seed(&r, x->seed, (uint64_t)i);
        qh_problem p;
        if (qh_problem_random(&p, &r, &o) != 0) {
            qh_problem_free(&p);
            fail(x, "out of memory");
            return;
        }
        char types[32];
        qh_problem_types(&p, types, sizeof types);
        qh_edge_case *c = add_case(x, p.call.op, 0, "%02d-%s", i, types);
        if (!c) {
            qh_problem_free(&p);
            return;
        }
        qh_problem_free(&c->problem);
        c->problem = p;
        /* the generator decides validity; the reference's verdict is recorded as is */
        c->meta.expect = QMM_UNSUPPORTED; /* placeholder: "whatever the reference says" */
        char d[QH_META_TEXT_MAX];
        qh_problem_finish(&c->problem);
        qh_problem_describe(&c->problem, d, sizeof d);
        describe(c, "random problem %d of seed %llu: %s", i, (unsigned long long)x->seed, d);
    }
}

/* ---- suite: float8 (docs/semantics.md §2.6) --------------------------------------------- */

static const int32_t f8types[4] = {QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FNUZ,
                                   QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2FNUZ};

static double f8v(int32_t dt, unsigned code) { return qmm_float8_decode(dt, (uint8_t)code); }

/* A finite code of `dt`, uniformly among them. */
static int64_t f8_draw(ctx *x, int32_t dt)
{
    for (;;) {
        unsigned c = (unsigned)qh_rng_range(&x->rng, 0, 255);
        if (isfinite(f8v(dt, c)))
            return c;
    }
}

/* Case "<what>-<ty>": rows x_i = a_i · sa_i exactly: each wanted value split into an odd int8 a_i (or 0) and a
 * power-of-two per-row a_scale ([M], the spec's per-row form), b = 1, other scales 1, so the
 * reference sees exactly the x values asked for, then adds zy (a code of ty) and rounds. */
static qh_edge_case *rows_case(ctx *x, const char *what, int32_t ty, int64_t zy,
                               const double *xs, int n)
{
    int64_t av[64];
    double sv[64];
    if (n > 64) {
        fail(x, "float8: too many rows (generator bug)");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        double m = xs[i];
        int e = 0;
        while (m != 0 && m != floor(m)) {
            m *= 2;
            e--;
        }
        while (m != 0 && fmod(m, 2) == 0) {
            m /= 2;
            e++;
        }
        if (fabs(m) > 127) {
            fail(x, "float8: a row value needs more than 7 bits (generator bug)");
            return NULL;
        }
        av[i] = (int64_t)m;
        sv[i] = ldexp(1, e);
    }
    qh_edge_case *c = add_case(x, QLM, 21, "%s-%s", what, tname(ty));
    if (!c)
        return NULL;
    qmm_qlinearmatmul *q = qlm_of(c);
    tq(x, c, &q->a, S8, DIMS(n, 1), av);
    tqc(x, c, &q->b, U8, DIMS(1, 1), 1);
    qlm_scalars(x, c, F32, 1, 0, 1, 0, 1, zy, ty);
    ts(x, c, &q->a_scale, F32, DIMS(n), sv);
    tqc(x, c, &q->a_zero_point, S8, DIMS(n), 0);
    tag(c, "float8");
    return c;
}

/* Midpoints between neighbours, both signs: 0 and the smallest subnormal (to the even 0), two
 * subnormal pairs (odd and even lower neighbour), the largest subnormal and the smallest
 * normal, 1 and its neighbours, and the two pairs below the largest finite value. */
static void f8_ties(ctx *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    unsigned one = qmm_float8_encode(ty, 1.0), sub_top = (1u << f->mbits) - 1u;
    unsigned lower[8] = {0, 1, 2, sub_top, one - 1, one, f->max_code - 2u, f->max_code - 1u};
    double xs[33];
    int n = 0;
    for (int i = 0; i < 8; i++) {
        double mid = (f8v(ty, lower[i]) + f8v(ty, lower[i] + 1)) / 2;
        xs[n++] = mid;
        xs[n++] = -mid;
    }
    xs[n++] = 0;
    qh_edge_case *c = rows_case(x, "ties", ty, 0, xs, n);
    if (!c)
        return;
    tag(c, "tie");
    tag(c, "subnormal");
    tag(c, "largest-finite");
    describe(c, "x exactly halfway between neighbouring %s values, both signs: 0 | smallest "
                "subnormal, two subnormal pairs (odd and even lower code), largest subnormal | "
                "smallest normal, around 1, the two pairs below the largest finite; ties go to "
                "the even code", qmm_dtype_name(ty));
    /* the same ties reached through y_zero_point: x + zy with zy = 1, x = mid - 1 */
    n = 0;
    for (int i = 4; i < 6; i++) {
        double mid = (f8v(ty, lower[i]) + f8v(ty, lower[i] + 1)) / 2;
        xs[n++] = mid - 1;
    }
    xs[n++] = -1; /* cancels zy exactly: +0 */
    c = rows_case(x, "ties-via-zero-point", ty, one, xs, n);
    if (!c)
        return;
    tag(c, "tie");
    tag(c, "odd-zp");
    describe(c, "y_zero_point 1.0: x + zy exactly halfway around 1 (added before the one "
                "rounding), and x = -zy giving +0");
}

/* Both ends: the largest finite value, half an ulp past it, twice it, far beyond; then with
 * y_zero_point at the largest finite value of either sign. */
static void f8_saturation(ctx *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    double max = f8v(ty, f->max_code), ulp = max - f8v(ty, f->max_code - 1u);
    double far = ldexp(127, 100);
    double xs[8] = {max, -max, max + ulp / 2, -(max + ulp / 2), 2 * max, -2 * max, far, -far};
    qh_edge_case *c = rows_case(x, "saturation", ty, 0, xs, 8);
    if (!c)
        return;
    tag(c, "saturation");
    tag(c, "high");
    tag(c, "low");
    tag(c, "largest-finite");
    describe(c, "x at the largest finite %s value (%g), half an ulp past it, twice it and "
                "127*2^100, both signs: all give the largest finite value of their sign "
                "(saturate = 1)", qmm_dtype_name(ty), max);
    for (int neg = 0; neg < 2; neg++) {
        double s = neg ? -1 : 1;
        double ys[4] = {0, s, -s * max, -s * 2 * max};
        c = rows_case(x, neg ? "zero-point-at-lowest" : "zero-point-at-largest", ty,
                      (int64_t)(f->max_code | (neg ? 0x80u : 0u)), ys, 4);
        if (!c)
            return;
        tag(c, "saturation");
        tag(c, neg ? "low" : "high");
        tag(c, "zp-at-bound");
        describe(c, "y_zero_point %s%g: x = 0 keeps it, a step further saturates, x = -zy "
                    "gives +0, x = -2zy the other end", neg ? "-" : "", max);
    }
}

/* Subnormal results: every subnormal exactly, a quarter and three quarters of the smallest,
 * both signs (a negative value that rounds to zero is -0 where the type has one). */
static void f8_subnormal_out(ctx *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    double xs[32];
    int n = 0;
    for (unsigned m = 1; m < 1u << f->mbits; m++) {
        xs[n++] = f8v(ty, m);
        xs[n++] = -f8v(ty, m);
    }
    double tiny = f8v(ty, 1);
    double extra[4] = {tiny / 4, -tiny / 4, 3 * tiny / 4, -3 * tiny / 4};
    for (int i = 0; i < 4; i++)
        xs[n++] = extra[i];
    qh_edge_case *c = rows_case(x, "subnormal-out", ty, 0, xs, n);
    if (!c)
        return;
    tag(c, "subnormal");
    tag(c, f->fnuz ? "fnuz-zero" : "negative-zero");
    describe(c, "results at every %s subnormal, and at a quarter and three quarters of the "
                "smallest, both signs: -x/4 rounds to %s", qmm_dtype_name(ty),
             f->fnuz ? "the one zero 0x00" : "-0 (0x80)");
}

/* Every finite code of ty through y = a (a ty, b = 1, all scales 1, zero points 0): each comes
 * back as itself, except -0, whose exact product 0 is +0; then the subnormals of ty into int8
 * with a_scale 2^(shift-1), so each lands on a half-integer or an integer. */
static void f8_codes(ctx *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    int64_t codes[256];
    int n = 0;
    for (unsigned code = 0; code < 256; code++)
        if (isfinite(f8v(ty, code)))
            codes[n++] = code;
    qh_edge_case *c = add_case(x, QLM, 21, "every-code-%s", tname(ty));
    if (!c)
        return;
    qmm_qlinearmatmul *q = qlm_of(c);
    tq(x, c, &q->a, ty, DIMS(n, 1), codes);
    tqc(x, c, &q->b, U8, DIMS(1, 1), 1);
    qlm_scalars(x, c, F32, 1, 0, 1, 0, 1, 0, ty);
    tag(c, "float8");
    tag(c, "subnormal");
    tag(c, "largest-finite");
    tag(c, f->fnuz ? "fnuz-zero" : "negative-zero");
    describe(c, "every finite %s code (%d) as a and, unchanged, as y; -0 becomes +0",
             qmm_dtype_name(ty), n);

    n = 0;
    for (unsigned m = 0; m < 1u << f->mbits; m++) {
        codes[n++] = m;
        if (m)
            codes[n++] = 0x80u | m;
    }
    c = add_case(x, QLM, 21, "subnormal-in-%s", tname(ty));
    if (!c)
        return;
    q = qlm_of(c);
    tq(x, c, &q->a, ty, DIMS(n, 1), codes);
    tqc(x, c, &q->b, S8, DIMS(1, 1), 1);
    qlm_scalars(x, c, F32, ldexp(1, f->shift - 1), 0, 1, 0, 1, 0, S8);
    tag(c, "float8");
    tag(c, "subnormal");
    tag(c, "tie");
    describe(c, "every %s subnormal (and the zero) into int8 with a_scale 2^%d: m/2 rounds "
                "half to even", qmm_dtype_name(ty), f->shift - 1);
}

/* Zero points at the extremes: a holds ±largest, ±smallest subnormal and 0 with za = -largest
 * (a - za up to twice the largest), b likewise in the next float8 type with zb = +largest. */
static void f8_zero_points(ctx *x, int ti)
{
    int32_t ta = f8types[ti], tb = f8types[(ti + 1) % 4];
    const qmm_float8_format *fa = qmm_float8_format_of(ta), *fb = qmm_float8_format_of(tb);
    qh_edge_case *c = add_case(x, QLM, 21, "zero-points-at-extremes-%s%su8", tname(ta),
                               tname(tb));
    if (!c)
        return;
    qmm_qlinearmatmul *q = qlm_of(c);
    int64_t av[6] = {fa->max_code, 0x80 | fa->max_code, 0x01, 0x81, 0x00, fa->max_code};
    int64_t bv[6] = {fb->max_code, 0x80 | fb->max_code, 0x01, 0x00, 0x81, 0x80 | fb->max_code};
    tq(x, c, &q->a, ta, DIMS(2, 3), av);
    tq(x, c, &q->b, tb, DIMS(3, 2), bv);
    double big = f8v(ta, fa->max_code) * f8v(tb, fb->max_code);
    qlm_scalars(x, c, F32, 1, 0x80 | fa->max_code, 1, fb->max_code, ldexp(1, (int)log2(big) - 4),
                128, U8);
    tag(c, "float8");
    tag(c, "zp-at-bound");
    tag(c, "largest-finite");
    describe(c, "a_zero_point -largest %s, b_zero_point +largest %s: differences up to twice "
                "the largest finite value", qmm_dtype_name(ta), qmm_dtype_name(tb));
}

/* Type mixes: the float8 type as a, b and y alone and together, with uint8/int8 around it,
 * float/float16/bfloat16 scales in turn; random finite codes. */
static void f8_mixes(ctx *x, int ti)
{
    int32_t t = f8types[ti], t2 = f8types[(ti + 1) % 4], t3 = f8types[(ti + 2) % 4];
    const int32_t mixes[5][3] = {{t, t, t}, {t, S8, U8}, {U8, t, S8}, {S8, U8, t}, {t, t2, t3}};
    static const int32_t sdts[3] = {F32, F16, BF16};
    for (int i = 0; i < 5; i++) {
        int32_t ta = mixes[i][0], tb = mixes[i][1], ty = mixes[i][2], sdt = sdts[(ti + i) % 3];
        qh_edge_case *c = add_case(x, QLM, 21, "mix-%s%s%s-%s", tname(ta), tname(tb),
                                   tname(ty), sname(sdt));
        if (!c)
            return;
        qmm_qlinearmatmul *q = qlm_of(c);
        qmm_tensor *ops[2] = {&q->a, &q->b};
        const int32_t types[2] = {ta, tb};
        const int64_t dims[2][2] = {{3, 4}, {4, 2}};
        int64_t z[2];
        for (int o = 0; o < 2; o++) {
            int64_t v[12];
            for (int k = 0; k < dims[o][0] * dims[o][1]; k++)
                v[k] = qmm_is_float8(types[o]) ? f8_draw(x, types[o])
                                               : qh_rng_range(&x->rng, lo_of(types[o]),
                                                              hi_of(types[o]));
            tq(x, c, ops[o], types[o], 2, dims[o], v);
            z[o] = qmm_is_float8(types[o]) ? f8_draw(x, types[o])
                                           : qh_rng_range(&x->rng, lo_of(types[o]),
                                                          hi_of(types[o]));
        }
        int64_t zy = qmm_is_float8(ty) ? f8_draw(x, ty) : (ty == U8 ? 128 : 0);
        double sa = short_scale(x, -2, 2), sb = short_scale(x, -2, 2);
        /* integer y: keep results mostly inside; float8 y: anything, it saturates */
        double sy = qmm_is_float8(ty) ? short_scale(x, -2, 6) : short_scale(x, 8, 14);
        qlm_scalars(x, c, sdt, sa, z[0], sb, z[1], sy, zy, ty);
        tag(c, "float8");
        tag(c, "types");
        describe(c, "a %s, b %s, y %s, %s scales, random finite values and zero points",
                 qmm_dtype_name(ta), qmm_dtype_name(tb), qmm_dtype_name(ty), sname(sdt));
    }
}

static void suite_float8(ctx *x)
{
    for (int ti = 0; ti < 4; ti++) {
        int32_t t = f8types[ti];
        f8_ties(x, t);
        f8_saturation(x, t);
        f8_subnormal_out(x, t);
        f8_codes(x, t);
        f8_zero_points(x, ti);
        f8_mixes(x, ti);
    }
}

/* ---- expected outputs -------------------------------------------------------------------- */

static int compute_expected(qh_edge_case *c, qh_error *err)
{
    qh_problem_finish(&c->problem);
    int whatever = c->meta.expect == QMM_UNSUPPORTED; /* random suite: take the verdict */
    int meant_invalid = c->meta.expect == QMM_INVALID_ARGUMENT;
    c->meta.expect = QMM_OK;
    qmm_call call = c->problem.call;
    qmm_tensor *y = qh_call_output(&call);
    qmm_tensor alt = *y;
    if (qh_alloc_tensor(y, 0) != 0 || qh_alloc_tensor(&alt, 0) != 0) {
        free(y->data);
        snprintf(err->msg, sizeof err->msg, "%s: cannot allocate the output", c->name);
        return -1;
    }
    qmm_status st;
    qmm_status_ok(&st);
    int overflow = 0;
    qmm_status_code code = qmm_ref_compute(&call, &alt, &overflow, &st);
    free(alt.data);
    if (code == QMM_OK && !meant_invalid) {
        c->output = *y;
        c->has_output = 1;
        c->overflow = overflow;
        if (overflow)
            tag(c, "overflow-permitted");
        return 0;
    }
    free(y->data);
    if (code == QMM_INVALID_ARGUMENT && (meant_invalid || whatever)) {
        c->meta.expect = QMM_INVALID_ARGUMENT;
        if (whatever)
            tag(c, "invalid");
        return 0;
    }
    snprintf(err->msg, sizeof err->msg,
             "%s: generator bug: meant %s, the reference answers %s: %s", c->name,
             meant_invalid ? "invalid" : "valid", qmm_status_name(code), st.message);
    return -1;
}

/* Tags every case can be found by: operator, types, opset and scale type (where the call
 * has them), attributes. */
static void common_tags(qh_edge_case *c)
{
    const qh_problem *p = &c->problem;
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    char t[64];
    tag(c, d->slug);
    qh_problem_types(p, t, sizeof t);
    tag(c, t);
    if (d->opset_offset >= 0) {
        snprintf(t, sizeof t, "opset%d", qmm_call_opset(&p->call));
        tag(c, t);
        snprintf(t, sizeof t, "%s-scales", qmm_dtype_name(qh_problem_scale_type(p)));
        tag(c, t);
    }
    for (int32_t i = 0; i < d->n_attrs; i++) {
        snprintf(t, sizeof t, "%s-%d", d->attrs[i].name, qmm_call_attr_value(&p->call, i));
        tag(c, t);
    }
}

typedef void (*suite_fn)(ctx *x);

static suite_fn suite_builder(const char *name)
{
    static const struct {
        const char *name;
        suite_fn fn;
    } table[] = {
        {"ties", suite_ties},         {"near-ties", suite_near_ties},
        {"saturation", suite_saturation}, {"extremes", suite_extremes},
        {"params", suite_params},     {"broadcast", suite_broadcast},
        {"one-d", suite_one_d},       {"empty", suite_empty},
        {"overflow", suite_overflow}, {"scales", suite_scales},
        {"types", suite_types},       {"zero-points", suite_zero_points},
        {"invalid", suite_invalid},   {"random", suite_random},
        {"float8", suite_float8},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].fn;
    return NULL;
}

int qh_edge_build(const qh_edge_suite *suite, uint64_t seed, qh_edge_cases *out, qh_error *err)
{
    suite_fn fn = suite_builder(suite->name);
    if (!fn) {
        snprintf(err->msg, sizeof err->msg, "suite %s: no builder", suite->name);
        return -1;
    }
    ctx x;
    memset(&x, 0, sizeof x);
    x.suite = suite;
    x.seed = seed;
    x.out = out;
    qh_rng_seed(&x.rng, seed, 0x5eed);
    size_t first = out->count;
    fn(&x);
    if (x.failed) {
        snprintf(err->msg, sizeof err->msg, "suite %s: %s", suite->name, x.why);
        return -1;
    }
    for (size_t i = first; i < out->count; i++) {
        common_tags(&out->items[i]);
        if (compute_expected(&out->items[i], err) != 0)
            return -1;
    }
    /* names must be unique: two cases in one directory would overwrite each other */
    for (size_t i = first; i < out->count; i++)
        for (size_t j = i + 1; j < out->count; j++)
            if (strcmp(out->items[i].name, out->items[j].name) == 0) {
                snprintf(err->msg, sizeof err->msg, "suite %s: duplicate case name %s",
                         suite->name, out->items[i].name);
                return -1;
            }
    return 0;
}

void qh_edge_cases_free(qh_edge_cases *c)
{
    for (size_t i = 0; i < c->count; i++) {
        qh_problem_free(&c->items[i].problem);
        if (c->items[i].has_output)
            free(c->items[i].output.data);
    }
    free(c->items);
    memset(c, 0, sizeof *c);
}

int qh_edge_write(const char *root, const qh_edge_case *c, qh_error *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, c->name);
    return qh_problem_write_dir(dir, &c->problem, c->has_output ? &c->output : NULL, &c->meta,
                                err);
}
