/* harness/run/reduce.c — shrinking a failing case while it keeps failing the same way
 * (harness/run/reduce.h; docs/formats.md "Reduced cases").
 *
 * The case is held as a qh_problem (it owns its tensors). A step builds a candidate from the
 * current smallest case, and the candidate replaces it when it is judged to fail in the same
 * class. Shape steps work on logical dimensions (M, N, K and each broadcast batch dim, counted
 * from the innermost), so that a and b and every parameter that varies along a dimension are
 * cut together; an axis of size 1 that only broadcasts is left alone. Candidates are judged
 * through a case directory and qh_eval_case, so what reduce calls failing is what run calls
 * failing. */
#define _GNU_SOURCE /* mkdtemp, pipe2 */
#include "harness/invoke/strays.h"
#include "harness/run/reduce.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <ftw.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/io/casedir.h"
#include "harness/base/clean.h"
#include "harness/base/fileio.h"
#include "harness/io/onnx_io.h"
#include "harness/judge/compare.h"
#include "harness/judge/expect.h"
#include "harness/invoke/cpu.h"
#include "harness/invoke/invoke.h"
#include "harness/base/strbuf.h"
#include "ops/qmm_ops.h"

int qh_reducible_status(qh_case_status s)
{
    return qh_case_status_is_bad(s) || s == QH_UNCHECKED;
}

/* A mismatch is one class whatever its count; any other reason is its kind (qh_judge_cause:
 * cut before what varies with the input or comes from the backend, numbers written '#').
 * This is the class as printed; reduce compares verdicts' codes (qh_verdict_same_class). */
void qh_failure_class(qh_case_status status, const char *summary, char *buf, size_t size)
{
    const char *s = summary ? summary : "";
    size_t n = snprintf(buf, size, "%s", qh_case_status_name(status));
    if (n >= size)
        return;
    if (strncmp(s, "errors:", 7) == 0) {
        snprintf(buf + n, size - n, " errors");
        return;
    }
    char kind[256];
    qh_judge_cause(s, kind, sizeof kind);
    if (kind[0])
        snprintf(buf + n, size - n, " %s", kind);
}

/* ---- the logical dimensions ---------------------------------------------------------- */

enum { L_K, L_M, L_N, L_BATCH, L_NONE = -1 }; /* L_BATCH + d: batch dim d from the innermost */

/* Which logical dimension axis `axis` of operand a (is_a) or b runs along. */
static int operand_axis(const qmm_tensor *t, int is_a, int32_t axis)
{
    int32_t r = t->rank;
    if (r == 1)
        return L_K;
    if (axis == r - 1)
        return is_a ? L_K : L_N;
    if (axis == r - 2)
        return is_a ? L_M : L_K;
    return L_BATCH + (r - 3 - axis);
}

/* Which logical dimension axis `axis` of input `in` runs along: the operands by numpy.matmul,
 * a parameter right-aligned with what it is per-row, per-column or broadcast to (its ONNX
 * name says which: a_*, b_*, y_*; ops/params.c). L_NONE where that cannot be said. */
static int input_axis(const qh_problem *p, const qmm_geometry *g, int32_t in, int32_t axis)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    const qmm_tensor *t = qh_problem_input_c(p, in);
    const qmm_tensor *a = qh_problem_input_c(p, d->a_input), *b = qh_problem_input_c(p, d->b_input);
    if (in == d->a_input || in == d->b_input)
        return operand_axis(t, in == d->a_input, axis);
    const char *name = d->inputs[in].name;
    if (strncmp(name, "a_", 2) == 0) {
        if (a->rank == 2 && t->rank == 1 && t->dims[0] == g->m)
            return L_M; /* the spec's 1-D per-row form */
        int32_t tp = a->rank - t->rank + axis;
        return tp < 0 ? L_NONE : operand_axis(a, 1, tp);
    }
    if (strncmp(name, "b_", 2) == 0) {
        int32_t tp = b->rank - t->rank + axis;
        return tp < 0 ? L_NONE : operand_axis(b, 0, tp);
    }
    if (strncmp(name, "y_", 2) == 0) {
        int32_t tp = g->y_rank - t->rank + axis;
        if (tp < 0)
            return L_NONE;
        if (tp < g->batch_rank)
            return L_BATCH + (g->batch_rank - 1 - tp);
        if (g->y_rank - g->batch_rank == 2)
            return tp == g->y_rank - 2 ? L_M : L_N;
        return a->rank == 1 ? L_N : L_M; /* one operand was 1-D */
    }
    return L_NONE;
}

static int geometry_of(const qh_problem *p, qmm_geometry *g)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    qmm_status st;
    return qmm_matmul_geometry(qh_problem_input_c(p, d->a_input),
                               qh_problem_input_c(p, d->b_input), g, &st) == QMM_OK ? 0 : -1;
}

/* The size of logical dimension L, or -1 (no geometry, no such batch dim). */
static int64_t logical_size(const qmm_geometry *g, int L)
{
    if (L == L_K)
        return g->k;
    if (L == L_M)
        return g->m;
    if (L == L_N)
        return g->n;
    int32_t dpos = g->batch_rank - 1 - (L - L_BATCH);
    return dpos >= 0 ? g->batch_dims[dpos] : -1;
}

/* "batch=[2,3] M=4 N=5 K=6", or the operands' shapes when they do not fit. */
static void shape_text(const qh_problem *p, char *buf, size_t size)
{
    qmm_geometry g;
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    /* operands that are not an [M, K] by [K, N] pair (a packed B whose N is y's but not b's
     * last dimension, an elementwise operator's one tensor): the operator's own dimensions,
     * not M, N and K read off the wrong axes */
    int32_t rank = 0;
    int64_t y[QMM_MAX_RANK];
    qmm_status st;
    int pair = d && !d->elementwise && geometry_of(p, &g) == 0 &&
               d->y_shape(&p->call, &rank, y, &st) == QMM_OK && rank >= 1 && y[rank - 1] == g.n;
    if (!pair) {
        qh_problem_describe(p, buf, size);
        return;
    }
    char dims[96];
    qmm_format_dims(dims, sizeof dims, g.batch_rank, g.batch_dims);
    snprintf(buf, size, "batch=%s M=%lld N=%lld K=%lld", dims, (long long)g.m, (long long)g.n,
             (long long)g.k);
}

/* ---- building candidates ------------------------------------------------------------- */

/* What a shape step keeps of logical dimension `L`: n of the old indices from lo on, passing
 * over `skip` (-1: none); `drop` removes the axis (n is then 1). */
typedef struct cut {
    int L;
    int64_t lo, n;
    int drop;
    int64_t skip;
} cut;

/* dst = src with the call's inputs copied (or cut, when c is not NULL). -1 (dst left empty)
 * when memory runs out or the cut does not apply. */
static int build(const qh_problem *src, qh_problem *dst, const cut *c)
{
    const qmm_op_desc *d = qmm_call_desc(&src->call);
    qmm_geometry g;
    memset(&g, 0, sizeof g);
    qh_problem_init(dst, src->call.op, qmm_call_opset(&src->call));
    if (c && geometry_of(src, &g) != 0)
        return -1;
    int64_t old_n = c ? logical_size(&g, c->L) : 0;
    for (int32_t i = 0; i < d->n_attrs; i++)
        *qmm_call_attr(&dst->call, i) = qmm_call_attr_value(&src->call, i);
    for (int32_t in = 0; in < d->n_inputs; in++) {
        const qmm_tensor *s = qh_problem_input_c(src, in);
        qmm_tensor *t = qh_problem_input(dst, in);
        if (!qmm_tensor_present(s))
            continue;
        int64_t lo[QMM_MAX_RANK] = {0}, skip[QMM_MAX_RANK], dims[QMM_MAX_RANK];
        int64_t stride[QMM_MAX_RANK], st = 1;
        int32_t drop = -1;
        for (int32_t ax = s->rank - 1; ax >= 0; ax--) {
            dims[ax] = s->dims[ax];
            skip[ax] = -1;
            stride[ax] = st;
            st *= s->dims[ax] > 0 ? s->dims[ax] : 1;
            if (!c || input_axis(src, &g, in, ax) != c->L)
                continue;
            if (c->drop)
                drop = ax;
            if (s->dims[ax] == old_n) { /* a size-1 axis that only broadcasts stays */
                lo[ax] = c->lo;
                dims[ax] = c->n;
                skip[ax] = c->skip;
            }
        }
        unsigned char *out = qh_problem_tensor(dst, t, s->dtype, s->rank, dims);
        if (!out) {
            qh_problem_free(dst);
            return -1;
        }
        int64_t total = qmm_tensor_numel(t);
        for (int64_t o = 0; o < total; o++) {
            int64_t rem = o, off = 0;
            for (int32_t ax = s->rank - 1; ax >= 0; ax--) {
                int64_t at = lo[ax] + rem % dims[ax];
                off += (skip[ax] >= 0 && at >= skip[ax] ? at + 1 : at) * stride[ax];
                rem /= dims[ax];
            }
            qh_tensor_copy_element(t, o, s, off);
        }
        if (drop >= 0) { /* its one index stays: the data is laid out the same without it */
            memmove(&t->dims[drop], &t->dims[drop + 1],
                    sizeof t->dims[0] * (size_t)(t->rank - 1 - drop));
            t->rank--;
        }
    }
    qh_problem_finish(dst);
    return 0;
}

/* 1 when a and b have the same inputs, byte for byte. */
static int same_problem(const qh_problem *a, const qh_problem *b)
{
    int32_t n = qh_problem_n_inputs(a);
    for (int32_t in = 0; in < n; in++) {
        if (!qh_tensor_same(qh_problem_input_c(a, in), qh_problem_input_c(b, in)))
            return 0;
    }
    return 1;
}

/* ---- judging ----------------------------------------------------------------------------- */

typedef struct reducer {
    const qh_reduce_opts *o;
    qh_backend *b;
    qh_reduce_result *r;
    const qh_verdict *want; /* the case's verdict (r->verdict): each candidate must fail in
                             * its class */
    int need_valid;     /* the case passed the operator's validator: so must each candidate */
    double t0, last_progress;
    int64_t fold_next;  /* fold_k's next (k, j) pair, as k * K + j from the top: where the
                           last round's share of pairs stopped */
    int64_t fold_left;  /* ... pairs not yet offered since its last success (-1: all of them) */
} reducer;

/* A problem as a case in memory, as it would load once written without a stored output or
 * qmm.meta (the problem keeps its buffers). */
static void case_of_problem(const qh_problem *p, qh_case *c)
{
    memset(c, 0, sizeof *c);
    qh_meta_init(&c->meta);
    c->oc.call = p->call;
    c->oc.y_shape_known = p->y_shape_known;
}

/* Judges the case `c` in memory as run does, into v (initialised here; free it). */
static void judge(const reducer *z, qh_case *c, qh_verdict *v)
{
    qh_eval_opts eo = {.profile = z->o->profile, .invoke = z->o->invoke};
    qh_verdict_init(v);
    qh_judge_case(c, z->b, &eo, v);
}

/* The verdict's class and its summary (cleaned), as reduce prints them (sized as the
 * result's). */
static void class_and_summary(const qh_verdict *v, char *cls, char *summary)
{
    const char *s = v->summary.s ? v->summary.s : "";
    qh_failure_class(v->status, s, cls, sizeof ((qh_reduce_result *)0)->cls);
    qh_clean_into(summary, sizeof ((qh_reduce_result *)0)->summary, s, strlen(s), 0);
}

/* Judges the case `c` n times as run would: how many times it failed in the case's class (the
 * last such summary kept); the first other class in `other` (when not NULL). */
static int judge_alike(reducer *z, qh_case *c, int n, char *other, size_t size)
{
    int alike = 0;
    for (int i = 0; i < n; i++) {
        qh_verdict v;
        judge(z, c, &v);
        char cls[sizeof z->r->cls], summary[sizeof z->r->summary];
        class_and_summary(&v, cls, summary);
        if (qh_verdict_same_class(&v, z->want)) {
            memcpy(z->r->summary, summary, sizeof summary);
            alike++;
        } else if (other && i == alike) { /* the first that differs */
            snprintf(other, size, "%s", cls);
        }
        qh_verdict_free(&v);
    }
    return alike;
}

/* Judges `p` in memory as run would: 1 when it fails in the case's class (its summary kept),
 * 0 when not. */
static int fails_alike(reducer *z, const qh_problem *p)
{
    qh_case c;
    case_of_problem(p, &c);
    return judge_alike(z, &c, 1, NULL, 0);
}

/* Whether the budget is spent; says where the reduction is every 2 s when asked. */
static int out_of_budget(reducer *z)
{
    double now = qh_mono_seconds();
    qh_reduce_result *r = z->r;
    if (z->o->progress && now - z->last_progress >= 2.0) {
        char shape[128];
        shape_text(&r->best, shape, sizeof shape);
        fprintf(stderr, "reduce: %llu tries, %llu kept, now %s\n", (unsigned long long)r->tries,
                (unsigned long long)r->accepted, shape);
        z->last_progress = now;
    }
    if ((z->o->max_tries && r->tries >= z->o->max_tries) ||
        (z->o->seconds > 0 && now - z->t0 >= z->o->seconds))
        r->budget_spent = 1;
    return r->budget_spent || qh_interrupted; /* SIGINT/SIGTERM: stop where it is */
}

/* Takes `cand` (built, owned): it becomes the smallest case when it differs from it, is valid
 * where it must be, and fails alike. Returns 1 when it did. */
static int offer(reducer *z, qh_problem *cand)
{
    qh_reduce_result *r = z->r;
    qmm_status st;
    int take = !out_of_budget(z) && !same_problem(cand, &r->best) &&
               (!z->need_valid || qmm_call_desc(&cand->call)->validate(&cand->call, &st) == QMM_OK);
    if (take) {
        r->tries++;
        take = fails_alike(z, cand) == 1;
    }
    if (!take) {
        qh_problem_free(cand);
        return 0;
    }
    qh_problem_free(&r->best);
    r->best = *cand;
    r->accepted++;
    return 1;
}

/* Offers the smallest case cut as `c` says (nothing is built once the budget is spent). */
static int offer_cut(reducer *z, cut c)
{
    qh_problem cand;
    return !out_of_budget(z) && build(&z->r->best, &cand, &c) == 0 && offer(z, &cand);
}

/* ---- the steps ------------------------------------------------------------------------- */

/* Logical dimension L down to `min`: halves first, then one index less (the last, the first,
 * then each one between: a K index whose products are 0 can go wherever it is). */
static int shrink_dim(reducer *z, int L, int64_t min)
{
    int progress = 0;
    for (;;) {
        qmm_geometry g;
        if (out_of_budget(z) || geometry_of(&z->r->best, &g) != 0)
            return progress;
        int64_t n = logical_size(&g, L);
        if (n <= min)
            return progress;
        int64_t half = n / 2;
        int ok = (half >= min && half > 0 && offer_cut(z, (cut){L, 0, half, 0, -1})) ||
                 (n - half >= min && n - half < n &&
                  offer_cut(z, (cut){L, half, n - half, 0, -1})) ||
                 offer_cut(z, (cut){L, 0, n - 1, 0, -1}) || offer_cut(z, (cut){L, 1, n - 1, 0, -1});
        for (int64_t i = n - 2; i > 0 && !ok && !out_of_budget(z); i--)
            ok = offer_cut(z, (cut){L, 0, n - 1, 0, i});
        if (!ok)
            return progress;
        progress = 1;
    }
}

/* Batch dims from the outermost: dropped (keeping its first or last index), else cut to 1. */
static int shrink_batch(reducer *z)
{
    qmm_geometry g;
    if (geometry_of(&z->r->best, &g) != 0)
        return 0;
    int progress = 0;
    for (int32_t dist = g.batch_rank - 1; dist >= 0 && !out_of_budget(z); dist--) {
        int L = L_BATCH + dist;
        int64_t n = g.batch_dims[g.batch_rank - 1 - dist];
        if (offer_cut(z, (cut){L, 0, 1, 1, -1}) ||
            (n > 1 && offer_cut(z, (cut){L, n - 1, 1, 1, -1}))) {
            progress = 1;
            continue;
        }
        progress |= shrink_dim(z, L, 1);
    }
    return progress;
}

static int is_param(const qh_problem *p, int32_t in)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    return in != d->a_input && in != d->b_input;
}

/* A parameter with more than one element becomes per-tensor: its first or its last value,
 * as a scalar or with its rank kept (dims all 1), whichever the validator takes. */
static int params_per_tensor(reducer *z)
{
    int progress = 0;
    for (int32_t in = 0; in < qh_problem_n_inputs(&z->r->best); in++) {
        const qmm_tensor *t = qh_problem_input_c(&z->r->best, in);
        int64_t n = qmm_tensor_numel(t);
        if (!is_param(&z->r->best, in) || !qmm_tensor_present(t) || n <= 1)
            continue;
        int done = 0;
        for (int k = 0; k < 4 && !done && !out_of_budget(z); k++) {
            qh_problem cand;
            if (build(&z->r->best, &cand, NULL) != 0)
                continue;
            const qmm_tensor *s = qh_problem_input_c(&z->r->best, in);
            qmm_tensor *c = qh_problem_input(&cand, in);
            int64_t ones[QMM_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
            int64_t from = k & 1 ? n - 1 : 0;
            unsigned char *d = qh_problem_tensor(&cand, c, s->dtype, k < 2 ? 0 : s->rank, ones);
            if (!d) {
                qh_problem_free(&cand);
                continue;
            }
            qh_tensor_copy_element(c, 0, s, from);
            qh_problem_finish(&cand);
            done = offer(z, &cand);
        }
        progress |= done;
    }
    return progress;
}

/* What a value step writes into the elements it covers. */
enum value_step { TO_ZERO, HALVED, TO_ONE, TO_POWER_OF_TWO };

static double power_of_two_near(double v)
{
    return v > 0 && isfinite(v) ? exp2(round(log2(v))) : v;
}

/* Offers input `in` with elements [from, to) changed as `how` says. */
static int offer_values(reducer *z, int32_t in, int64_t from, int64_t to, enum value_step how)
{
    qh_problem cand;
    if (out_of_budget(z) || build(&z->r->best, &cand, NULL) != 0)
        return 0;
    qmm_tensor *t = qh_problem_input(&cand, in);
    for (int64_t i = from; i < to; i++) {
        if (how == TO_ZERO || how == HALVED) {
            int64_t v = qh_tensor_int(t, i);
            qh_tensor_set_int(t, i, how == TO_ZERO ? 0 : v / 2);
        } else {
            double v = qmm_scale_decode(t->dtype, t->data, i);
            qh_tensor_set_scale(t, i, how == TO_ONE ? 1.0 : power_of_two_near(v));
        }
    }
    return offer(z, &cand);
}

/* Every input whose elements are integers (scales: 0) changed as `how` says: the whole
 * tensor, then halves, quarters, ... single elements. */
static int simplify_values(reducer *z, int scales, enum value_step how)
{
    int progress = 0;
    for (int32_t in = 0; in < qh_problem_n_inputs(&z->r->best); in++) {
        const qmm_tensor *t = qh_problem_input_c(&z->r->best, in);
        if (!qmm_tensor_present(t) || !!qmm_is_scale_type(t->dtype) != scales)
            continue;
        int64_t n = qmm_tensor_numel(t);
        for (int64_t chunk = n; chunk >= 1 && !out_of_budget(z); chunk /= 2)
            for (int64_t from = 0; from < n && !out_of_budget(z); from += chunk) {
                int64_t to = from + chunk < n ? from + chunk : n;
                progress |= offer_values(z, in, from, to, how);
            }
    }
    return progress;
}

/* The input that is operand `ab`'s ('a', 'b') zero point, or -1 when the operator has none. */
static int32_t zero_point_input(const qmm_op_desc *d, char ab)
{
    for (int32_t in = 0; in < d->n_inputs; in++)
        if (d->inputs[in].name[0] == ab && strcmp(d->inputs[in].name + 1, "_zero_point") == 0)
            return in;
    return -1;
}

/* The per-tensor zero point of operand `ab` ('a', 'b'): 0 when absent; -1 (in *ok = 0) when
 * it varies. */
static int64_t operand_zero_point(const qh_problem *p, char ab, int *ok)
{
    int32_t in = zero_point_input(qmm_call_desc(&p->call), ab);
    const qmm_tensor *t = in < 0 ? NULL : qh_problem_input_c(p, in);
    if (!t || !qmm_tensor_present(t))
        return 0;
    if (qmm_tensor_numel(t) != 1)
        *ok = 0;
    return qmm_tensor_numel(t) == 1 ? qh_tensor_int(t, 0) : -1;
}

/* The (a - za, b - zb) pair whose product is `target`, each in its type's range: b's
 * difference as small as it can be, so that the values stay simple. 0, or -1 when no pair
 * fits. */
static int factor_pair(int64_t target, const int64_t lo[2], const int64_t zp[2], int64_t out[2])
{
    for (int64_t db = 1; db <= 256; db++)
        for (int sign = 1; sign >= -1; sign -= 2) {
            int64_t b = sign * db, a = target / b;
            if (target % b != 0 || a + zp[0] < lo[0] || a + zp[0] > lo[0] + 255 ||
                b + zp[1] < lo[1] || b + zp[1] > lo[1] + 255)
                continue;
            out[0] = a + zp[0];
            out[1] = b + zp[1];
            return 0;
        }
    return -1;
}

/* One output element (batch, M and N all 1): index k of K is folded into index j, whose pair
 * (a[j], b[j]) takes values whose product is both indices' products, so that the accumulator
 * stays what it was with one index less. A bug that needs a particular accumulator (a rounding
 * tie) keeps it while K shrinks. There are K^2 pairs: a round offers at most FOLD_K_OFFERS of
 * them, the next round going on from there, so that the other steps (the values, the scales)
 * get their turn: at K = 2000 a round offered up to 4M candidates, every try of the budget,
 * and the values and scales were never simplified. */
enum { FOLD_K_OFFERS = 256 };
static int fold_k(reducer *z)
{
    const qh_problem *p = &z->r->best;
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    qmm_geometry g;
    int ok = 1;
    int64_t zp[2] = {operand_zero_point(p, 'a', &ok), operand_zero_point(p, 'b', &ok)};
    if (!ok || geometry_of(p, &g) != 0 || g.batch != 1 || g.m != 1 || g.n != 1 || g.k < 2)
        return 0;
    const qmm_tensor *a = qh_problem_input_c(p, d->a_input);
    const qmm_tensor *b = qh_problem_input_c(p, d->b_input);
    int64_t lo[2] = {a->dtype == QMM_DTYPE_INT8 ? -128 : 0,
                     b->dtype == QMM_DTYPE_INT8 ? -128 : 0};
    int64_t pairs = g.k * g.k, offers = 0, start = z->fold_next % pairs, n = 0;
    for (; n < pairs && offers < FOLD_K_OFFERS; n++) {
        if (out_of_budget(z))
            break;
        int64_t at = (start + n) % pairs;
        int64_t k = g.k - 1 - at / g.k, j = at % g.k; /* k from the top, as before */
        int64_t pair[2], target = 0;
        for (int64_t i = j; i >= 0; i = i == j && k != j ? k : -1) /* j, then k */
            target += (qh_tensor_int(a, i) - zp[0]) * (qh_tensor_int(b, i) - zp[1]);
        qh_problem cand;
        if (j == k || factor_pair(target, lo, zp, pair) != 0)
            continue;
        if (build(p, &cand, &(cut){L_K, 0, g.k - 1, 0, k}) != 0)
            continue;
        qh_tensor_set_int(qh_problem_input(&cand, d->a_input), j > k ? j - 1 : j, pair[0]);
        qh_tensor_set_int(qh_problem_input(&cand, d->b_input), j > k ? j - 1 : j, pair[1]);
        offers++;
        if (offer(z, &cand)) {
            z->fold_next = at; /* K is one less: about where it was */
            z->fold_left = -1;
            return 1;
        }
    }
    z->fold_next = (start + n) % pairs; /* the next round goes on from here */
    if (z->fold_left < 0 || z->fold_left > pairs)
        z->fold_left = pairs;
    z->fold_left -= n;
    /* pairs still untried since the last success keep the rounds going, as a success would */
    return z->fold_left > 0 && !out_of_budget(z);
}

/* A per-tensor zero point of a or b becomes 0, the operand shifted by what it was, so that
 * every difference a - za (b - zb) stays: taken when the operand stays in its type's range. */
static int recenter(reducer *z)
{
    const qmm_op_desc *d = qmm_call_desc(&z->r->best.call);
    int progress = 0;
    for (int k = 0; k < 2 && !out_of_budget(z); k++) {
        int32_t in = zero_point_input(d, "ab"[k]), op = k ? d->b_input : d->a_input;
        const qmm_tensor *zt = in < 0 ? NULL : qh_problem_input_c(&z->r->best, in);
        if (!zt || !qmm_tensor_present(zt) || qmm_tensor_numel(zt) != 1 ||
            qh_tensor_int(zt, 0) == 0)
            continue;
        qh_problem cand;
        if (build(&z->r->best, &cand, NULL) != 0)
            continue;
        int64_t zp = qh_tensor_int(zt, 0);
        qmm_tensor *t = qh_problem_input(&cand, op);
        int64_t lo = t->dtype == QMM_DTYPE_INT8 ? -128 : 0, n = qmm_tensor_numel(t), i = 0;
        for (; i < n && qh_tensor_int(t, i) - zp >= lo && qh_tensor_int(t, i) - zp <= lo + 255;
             i++)
            qh_tensor_set_int(t, i, qh_tensor_int(t, i) - zp);
        qh_tensor_set_int(qh_problem_input(&cand, in), 0, 0);
        if (i < n)
            qh_problem_free(&cand);
        else
            progress |= offer(z, &cand);
    }
    return progress;
}

/* ---- the driver -------------------------------------------------------------------------- */

/* The loaded case as a problem that owns copies of its inputs. */
static int problem_of_case(const qh_case *c, qh_problem *p)
{
    qh_problem view;
    memset(&view, 0, sizeof view);
    view.call = c->oc.call;
    return build(&view, p, NULL);
}

/* How many times the case, its rewrite and the result are each judged. */
static int confirmations(const qh_reduce_opts *o)
{
    return o->confirm > 0 ? o->confirm : QH_REDUCE_CONFIRM;
}

/* A backend that did not judge `what` alike each time: err says so; returns 2. */
static int inconclusive(qh_error *err, const char *what, const char *cls, int alike, int n,
                        const char *other)
{
    snprintf(err->msg, sizeof err->msg, "%s: it was %s in %d of %d judgments and %s in the "
             "others: the backend does not answer the same way every time; inconclusive, "
             "nothing written", what, cls, alike, n, other);
    return 2;
}

/* Judges the case itself (loaded once) as run does, several times: 0 when it fails (its class
 * in r), 1 when it does not, 2 (err saying why) when its verdicts differ. */
static int judge_case(const qh_case_ref *ref, qh_case *c, reducer *z, qh_error *err)
{
    char other[sizeof z->r->cls];
    int n = confirmations(z->o);
    judge(z, c, &z->r->verdict);
    z->r->status = z->r->verdict.status;
    class_and_summary(&z->r->verdict, z->r->cls, z->r->summary);
    int alike = 1 + judge_alike(z, c, n - 1, other, sizeof other);
    if (alike < n)
        return inconclusive(err, ref->dir, z->r->cls, alike, n, other);
    return qh_reducible_status(z->r->status) ? 0 : 1;
}

/* The case rewritten as reduce judges candidates (no stored output, no qmm.meta) must fail
 * alike, every time, or no step could be trusted. 1 when it does; -1 (err) when it never does
 * while the case itself still fails alike each time, judged in turn with it: its stored output
 * (or the shape a stored output lends an invalid call) is then part of the failure; 2 (err)
 * when the backend's verdicts change, which is never blamed on the case. */
static int judge_rewrite(const qh_case_ref *ref, qh_case *c, reducer *z, qh_error *err)
{
    qh_case rw;
    case_of_problem(&z->r->best, &rw);
    char other[sizeof z->r->cls], what[PATH_MAX + 64];
    int n = confirmations(z->o), alike = judge_alike(z, &rw, n, other, sizeof other);
    snprintf(what, sizeof what, "%s rewritten (without its stored output)", ref->dir);
    if (alike == n)
        return 1;
    if (alike > 0)
        return inconclusive(err, what, z->r->cls, alike, n, other);
    int again = 0, rewritten = 0;
    for (int i = 0; i < n; i++) {
        again += judge_alike(z, c, 1, NULL, 0);
        rewritten += judge_alike(z, &rw, 1, NULL, 0);
    }
    if (again < n || rewritten > 0) {
        snprintf(err->msg, sizeof err->msg, "%s: judged again in turn %d times each, the case was "
                 "%s in %d and its rewrite (without its stored output) in %d (in 0 of %d "
                 "before): the backend does not answer the same way every time; inconclusive, "
                 "nothing written", ref->dir, n, z->r->cls, again, rewritten, n);
        return 2;
    }
    snprintf(err->msg, sizeof err->msg, "%s: rewritten (without its stored output), the case no "
             "longer fails the same way (%s, %d times of %d, while the case itself is %s every "
             "time); it cannot be reduced", ref->dir, other, 2 * n, 2 * n, z->r->cls);
    return -1;
}

/* Rounds of every step until one shrinks nothing or the budget is spent. */
static void reduce_rounds(reducer *z)
{
    for (int progress = 1; progress && !z->r->budget_spent;) {
        progress = shrink_batch(z);
        progress |= shrink_dim(z, L_M, 0);
        progress |= shrink_dim(z, L_N, 0);
        progress |= shrink_dim(z, L_K, 0);
        progress |= fold_k(z);
        progress |= params_per_tensor(z);
        progress |= recenter(z);
        progress |= simplify_values(z, 0, TO_ZERO);
        progress |= simplify_values(z, 1, TO_ONE);
        progress |= simplify_values(z, 1, TO_POWER_OF_TWO);
        progress |= simplify_values(z, 0, HALVED);
    }
}

int qh_reduce_case(const qh_case_ref *ref, qh_backend *b, const qh_reduce_opts *o,
                   qh_reduce_result *r, qh_error *err)
{
    memset(r, 0, sizeof *r);
    reducer z = {.o = o, .b = b, .r = r, .want = &r->verdict, .fold_left = -1};
    z.t0 = z.last_progress = qh_mono_seconds();
    qh_case c;
    if (qh_case_load(ref, &c, err) != 0)
        return -1; /* err names the file */
    int rc = judge_case(ref, &c, &z, err);
    if (rc == 0 && problem_of_case(&c, &r->best) != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", ref->dir);
        rc = -1;
    }
    if (rc != 0) {
        qh_case_free(&c);
        return rc;
    }
    qmm_status st;
    shape_text(&r->best, r->before, sizeof r->before);
    z.need_valid = qmm_call_desc(&r->best.call)->validate(&r->best.call, &st) == QMM_OK;
    r->tries++; /* the rewrite counts as one try, however many times it is judged */
    rc = judge_rewrite(ref, &c, &z, err);
    qh_case_free(&c);
    if (rc == 1)
        reduce_rounds(&z);
    shape_text(&r->best, r->after, sizeof r->after);
    r->seconds = qh_mono_seconds() - z.t0;
    if (qh_interrupted) { /* the judgments under way, and any confirmation, did not happen */
        snprintf(err->msg, sizeof err->msg,
                 "interrupted by signal %d after %llu tries (the smallest failing case so far: "
                 "%s): nothing written", (int)qh_interrupted, (unsigned long long)r->tries,
                 r->after);
        return -1;
    }
    return rc == 1 ? 0 : rc;
}

void qh_reduce_result_free(qh_reduce_result *r)
{
    qh_verdict_free(&r->verdict);
    qh_problem_free(&r->best);
}

/* ---- writing a case where an earlier one may be ---------------------------------------- */

/* 1 when `name` is PREFIX, decimal digits, SUFFIX. */
static int numbered(const char *name, const char *prefix, const char *suffix)
{
    size_t p = strlen(prefix), n = strlen(name), x = strlen(suffix);
    if (n <= p + x || strncmp(name, prefix, p) != 0 || strcmp(name + n - x, suffix) != 0)
        return 0;
    return strspn(name + p, "0123456789") == n - p - x;
}

/* The entries of a case directory (depth 0) or of one of its data sets (depth 1): how many
 * there are when each is a case's file (model.onnx, qmm.meta, test_data_set_N/ holding
 * input_N.pb and output_N.pb: regular files and real directories), else -1 with the first
 * other one in `why`. With `remove`, each of the case's files is removed, and each data set
 * once empty; anything else is left where it is. */
static int case_entries(const char *dir, int depth, int remove, char *why, size_t size)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, size, "%s cannot be read: %s", dir, strerror(errno));
        return -1;
    }
    int count = 0, other = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        char path[PATH_MAX];
        struct stat st;
        int set = depth == 0 && numbered(n, "test_data_set_", "");
        int file = depth == 0 ? strcmp(n, "model.onnx") == 0 || strcmp(n, "qmm.meta") == 0
                              : numbered(n, "input_", ".pb") || numbered(n, "output_", ".pb");
        int ok = (size_t)snprintf(path, sizeof path, "%s/%s", dir, n) < sizeof path &&
                 lstat(path, &st) == 0 &&
                 ((set && S_ISDIR(st.st_mode)) || (file && S_ISREG(st.st_mode)));
        char inner[PATH_MAX] = ""; /* what in a data set is not a case's file */
        if (ok && set)
            ok = case_entries(path, 1, remove, inner, sizeof inner) >= 0 &&
                 (!remove || rmdir(path) == 0);
        else if (ok && remove)
            ok = unlink(path) == 0;
        if (!ok && !other++)
            snprintf(why, size, "%s", inner[0] ? inner : path);
        count++;
    }
    closedir(d);
    return other ? -1 : count;
}

int qh_case_dir_replaceable(const char *dir, char *why, size_t size)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(why, size, "%s: %s", dir, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, size, "%s exists and is %s, not a directory", dir, qh_file_kind(st.st_mode));
        return 0;
    }
    char first[PATH_MAX], meta[PATH_MAX];
    int n = case_entries(dir, 0, 0, first, sizeof first);
    if (n == 0)
        return 1; /* empty */
    qh_meta m;
    qh_error err;
    snprintf(meta, sizeof meta, "%s/qmm.meta", dir);
    if (n > 0 && qh_meta_read_file(meta, &m, &err) == 0 &&
        (qh_meta_has_tag(&m, "diff") || qh_meta_has_tag(&m, "reduced")))
        return 1;
    if (n > 0)
        snprintf(first, sizeof first, "%s has no qmm.meta tagged diff or reduced", dir);
    snprintf(why, size, "%s is not a case qmmcheck wrote (%s); it is left as it is: name a new "
             "or empty directory, or one where qmmcheck diff or reduce wrote a case", dir, first);
    return 0;
}

int qh_case_stage_open(const char *dir, qh_case_stage *s, qh_error *err)
{
    memset(s, 0, sizeof *s);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--; /* "out/" names the directory out */
    if (len == 0 || len >= sizeof s->to) {
        snprintf(err->msg, sizeof err->msg, "%s: path too long or empty", dir);
        return -1;
    }
    memcpy(s->to, dir, len);
    if (!qh_case_dir_replaceable(s->to, err->msg, sizeof err->msg))
        return -1;
    const char *slash = strrchr(s->to, '/');
    const char *leaf = slash ? slash + 1 : s->to;
    if (!*leaf || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0) {
        snprintf(err->msg, sizeof err->msg, "%s: name the case's own directory (not . or ..)",
                 s->to);
        return -1;
    }
    char parent[sizeof s->to];
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - s->to) : 1,
             slash ? s->to : ".");
    if (parent[0] && qh_mkdirs(parent, err) != 0)
        return -1;
    /* hidden, so that run does not take it for a case; the leaf cut to fit NAME_MAX */
    if ((size_t)snprintf(s->tmp, sizeof s->tmp, "%s/.%.200s.qmmcheck-XXXXXX", parent, leaf) >=
            sizeof s->tmp ||
        (size_t)snprintf(s->dir, sizeof s->dir, "%s/%s", s->tmp, leaf) >= sizeof s->dir) {
        snprintf(err->msg, sizeof err->msg, "%s: path too long", s->to);
        s->tmp[0] = '\0'; /* nothing made: nothing to discard */
        return -1;
    }
    if (!mkdtemp(s->tmp)) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot create a directory beside it: %s", s->to,
                 strerror(errno));
        s->tmp[0] = '\0';
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s/%s", s->tmp, leaf); /* as long as before */
    return 0;
}

void qh_case_stage_discard(qh_case_stage *s)
{
    char why[PATH_MAX];
    if (!s->tmp[0])
        return;
    if (case_entries(s->dir, 0, 1, why, sizeof why) >= 0)
        rmdir(s->dir);
    rmdir(s->tmp);
    s->tmp[0] = '\0';
}

int qh_case_stage_publish(qh_case_stage *s, char *note, size_t size, qh_error *err)
{
    note[0] = '\0';
    char old[sizeof s->dir + 16], why[PATH_MAX];
    snprintf(old, sizeof old, "%s.earlier", s->dir); /* beside the new case, never its name */
    struct stat st;
    int had = lstat(s->to, &st) == 0;
    /* checked again: it may have changed since qh_case_stage_open */
    if (!qh_case_dir_replaceable(s->to, err->msg, sizeof err->msg)) {
        qh_case_stage_discard(s);
        return -1;
    }
    if (had && rename(s->to, old) != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot move the earlier case aside: %s", s->to,
                 strerror(errno));
        qh_case_stage_discard(s);
        return -1;
    }
    if (rename(s->dir, s->to) != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot rename the new case into place: %s",
                 s->to, strerror(errno));
        if (had)
            rename(old, s->to);
        qh_case_stage_discard(s);
        return -1;
    }
    int n = had ? case_entries(old, 0, 1, why, sizeof why) : 0;
    if (had && (n < 0 || rmdir(old) != 0)) {
        snprintf(note, size, "replaced the case qmmcheck wrote earlier at %s; what else it held "
                 "is kept in %s (%s)", s->to, old, n < 0 ? why : "not empty");
        s->tmp[0] = '\0';
        return 0;
    }
    if (n > 0)
        snprintf(note, size, "replaced the case qmmcheck wrote earlier at %s", s->to);
    rmdir(s->tmp);
    s->tmp[0] = '\0';
    return 0;
}

/* The written case at `dir` judged by its own __REPRO line run in a new qmmcheck process (this
 * executable): 1 when that line's status is r's, 0 when not (`other` what it was, or how the
 * process ended), -1 with err when it could not be run. For a backend in this process, which a
 * reopen would not start afresh (dlopen gives the same library and its globals). */
static int repro_line_agrees(const char *dir, const qh_backend *b, const qh_reduce_opts *o,
                             const qh_reduce_result *r, char *other, size_t other_size,
                             qh_error *err)
{
    char exe[PATH_MAX];
    if (qh_self_exe(exe, sizeof exe) <= 0)
        return qh_fail(err, "cannot find qmmcheck's own executable to run the reduced case's "
                       "__REPRO line: %s", strerror(errno));
    qh_case_ref ref = {.dir = (char *)dir, .name = (char *)dir, .data_set = 0};
    char *line = qh_cpu_repro(qh_repro_command(&ref, b->spec, o->profile, &b->iso),
                              b->iso.cpu ? qh_cpu_name(b->iso.cpu) : NULL);
    static const char word[] = "qmmcheck";
    if (!line || strncmp(line, word, sizeof word - 1) != 0) {
        free(line);
        return qh_fail(err, "%s", "out of memory");
    }
    qh_sb cmd = {0};
    qh_sb_shell_word(&cmd, exe);
    qh_sb_puts(&cmd, line + sizeof word - 1);
    qh_sb_puts(&cmd, " 2>&1");
    free(line);
    int fds[2];
    if (!cmd.s || pipe2(fds, O_CLOEXEC) != 0) {
        qh_sb_free(&cmd);
        return qh_fail(err, "cannot run the reduced case's __REPRO line: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        /* bash, as the line says (docs/formats.md): its $'...' words, which a name that is not
           UTF-8 gets, are not sh's (dash read the directory's name as written) */
        execl("/bin/bash", "bash", "-c", cmd.s, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    qh_sb_free(&cmd);
    if (pid < 0) {
        close(fds[0]);
        return qh_fail(err, "cannot run the reduced case's __REPRO line: %s", strerror(errno));
    }
    qh_strays_own(pid);
    /* its output (the case line first), within the call's timeout twice and a minute */
    double limit = (o->invoke.timeout_s > 0 ? 2 * o->invoke.timeout_s : 60) + 60;
    double t0 = qh_mono_seconds();
    char out[8192];
    size_t len = 0;
    int killed = 0;
    for (;;) {
        double left = limit - (qh_mono_seconds() - t0);
        if (left <= 0) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        char buf[4096];
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got <= 0)
            break;
        size_t take = (size_t)got < sizeof out - 1 - len ? (size_t)got : sizeof out - 1 - len;
        memcpy(out + len, buf, take);
        len += take;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    qh_strays_disown(pid);
    out[len] = '\0';
    /* "1:STATUS name ..." */
    const char *at = strncmp(out, "1:", 2) == 0 ? out : strstr(out, "\n1:");
    if (at && *at == '\n')
        at++;
    char got[32] = "";
    if (at)
        sscanf(at + 2, "%31[A-Z]", got);
    if (got[0] && strcmp(got, qh_case_status_name(r->status)) == 0)
        return 1;
    if (got[0])
        snprintf(other, other_size, "%s", got);
    else if (killed)
        snprintf(other, other_size, "no verdict within %.0f s (killed)", limit);
    else if (WIFSIGNALED(status))
        snprintf(other, other_size, "no verdict (the process was killed by signal %d)",
                 WTERMSIG(status));
    else
        snprintf(other, other_size, "no verdict (exit %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

int qh_reduce_write(const char *dir, qh_reduce_result *r, qh_backend *b,
                    const qh_reduce_opts *o, const qh_meta *tags, const char *provenance,
                    char *note, size_t note_size, qh_error *err)
{
    qh_meta m;
    qh_meta_init(&m);
    for (int32_t i = 0; tags && i < tags->n_tags && m.n_tags < QH_META_MAX_TAGS - 1; i++)
        if (strcmp(tags->tags[i], "reduced") != 0)
            snprintf(m.tags[m.n_tags++], sizeof m.tags[0], "%s", tags->tags[i]);
    snprintf(m.tags[m.n_tags++], sizeof m.tags[0], "reduced");
    if (tags) /* the CPU class the failure was obtained under */
        snprintf(m.cpu_class, sizeof m.cpu_class, "%s", tags->cpu_class);
    if (o->profile && strcmp(o->profile, QH_DEFAULT_PROFILE) != 0)
        snprintf(m.profile, sizeof m.profile, "%s", o->profile);
    qh_clean_into(m.provenance, sizeof m.provenance, provenance, strlen(provenance), 0);
    char desc[sizeof m.description];
    snprintf(desc, sizeof desc, "reduced from %s to %s; %s (%s)", r->before, r->after,
             qh_case_status_name(r->status), r->summary);
    qh_clean_into(m.description, sizeof m.description, desc, strlen(desc), 0);
    qh_expectation e;
    const qmm_tensor *expected = NULL;
    int have_e = qh_expect(&r->best.call, o->profile, &e) == 0;
    if (have_e && e.code == QMM_OK)
        expected = &e.exact;
    else if (have_e && e.code == QMM_INVALID_ARGUMENT)
        m.expect = QMM_INVALID_ARGUMENT;
    qh_strays_end(); /* nothing a backend left running writes over the case (strays.h) */
    qh_case_stage st;
    int rc = qh_case_stage_open(dir, &st, err);
    if (rc == 0 && qh_problem_write_dir(st.dir, &r->best, expected, &m, err) != 0)
        rc = -1;
    if (have_e)
        qh_expectation_free(&e);
    /* judged again as written (loaded once), as its __REPRO line will: --confirm times by the
     * backend every candidate ran on (its answers must not change), then once by the backend
     * opened again (isolated: a new worker), as a repro starts it: state that larger calls
     * left in the first (stale scratch) made a case fail there that its own repro line then
     * PASSED */
    qh_case c;
    int loaded = 0;
    if (rc == 0) {
        qh_case_ref ref = {.dir = st.dir, .name = st.dir, .data_set = 0};
        if (qh_case_load(&ref, &c, err) != 0)
            rc = -1;
        else
            loaded = 1;
    }
    char other[sizeof r->cls];
    if (rc == 0) {
        reducer z = {.o = o, .b = b, .r = r, .want = &r->verdict, .fold_left = -1};
        int n = confirmations(o);
        r->confirmed = judge_alike(&z, &c, n, other, sizeof other);
        if (r->confirmed < n)
            rc = inconclusive(err, "the reduced case as written", r->cls, r->confirmed, n,
                              other);
    }
    if (rc == 0 && !b->isolated) {
        /* in this process a reopen keeps the library's globals: its __REPRO line itself, in a
           new qmmcheck process */
        int same = repro_line_agrees(st.dir, b, o, r, other, sizeof other, err);
        if (same < 0)
            rc = -1;
        else if (!same)
            rc = inconclusive(err, "the reduced case as written, judged by its __REPRO line in "
                              "a new process", r->cls, 0, 1, other);
    } else if (rc == 0) {
        qh_backend fresh;
        qh_error oerr;
        if (qh_backend_open_isolated(b->spec, &b->iso, &fresh, &oerr) != 0) {
            snprintf(err->msg, sizeof err->msg, "the backend, opened again to confirm the "
                     "reduced case: %s", oerr.msg);
            rc = -1;
        } else {
            qh_reduce_opts fo = *o;
            fo.invoke.isolate = fresh.isolated;
            reducer z = {.o = &fo, .b = &fresh, .r = r, .want = &r->verdict, .fold_left = -1};
            if (judge_alike(&z, &c, 1, other, sizeof other) < 1)
                rc = inconclusive(err, "the reduced case as written, judged by the backend "
                                  "opened again (as its __REPRO line runs it)", r->cls, 0, 1,
                                  other);
            qh_backend_close(&fresh);
        }
    }
    if (loaded)
        qh_case_free(&c);
    if (rc != 0) {
        qh_case_stage_discard(&st);
        return rc;
    }
    return qh_case_stage_publish(&st, note, note_size, err);
}

char *qh_reduce_report(const qh_reduce_result *r, const char *dir, const qh_backend *be,
                       const char *profile, const char *indent)
{
    qh_sb b = {0};
    qh_sb_printf(&b, "%sREDUCED %s -> %s in %llu tries (%llu kept, %.1f s, confirmed by %d "
                 "judgments)%s\n", indent, r->before, r->after, (unsigned long long)r->tries,
                 (unsigned long long)r->accepted, r->seconds, r->confirmed,
                 r->budget_spent ? "; the budget ran out first" : "");
    char desc[512];
    qh_problem_describe(&r->best, desc, sizeof desc);
    qh_sb_printf(&b, "%s    %s\n", indent, desc);
    qh_case_ref ref = {.dir = (char *)dir, .name = (char *)dir, .data_set = 0};
    char *repro = qh_repro_command(&ref, be->spec, profile, &be->iso);
    qh_sb line = {0};
    qh_sb_printf(&line, "%s %s (%s) __REPRO: %s", qh_case_status_name(r->status), dir,
                 r->summary, repro ? repro : "");
    char *c = qh_clean_dup(line.s ? line.s : "", line.len, 0); /* the spec, the summary */
    qh_sb_printf(&b, "%s%s\n", indent, c ? c : "");
    free(c);
    free(repro);
    qh_sb_free(&line);
    return qh_sb_take(&b);
}
