/* harness/gen/edge/near-ties.c — the `near-ties` edge suite (docs/edge-suites.md): exact values a
 * hair from k+1/2, found by solving for the scales' mantissas, each kept only when the
 * floating-point pipeline it targets really rounds to the other side. */
#include <math.h>
#include <stdio.h>

#include "harness/gen/edge_build.h"
#include "harness/io/case.h"
#include "reference/qmm_reference.h"

static double round_to(int32_t dt, double v) { return qmm_round_to_scale_type(dt, v); }

/* The three pipelines a near-tie can fool, each returning the rounded value before the zero
 * point: all-float32 (ONNX Runtime's MLAS), the multiplier in the scale type then a double
 * product (the ONNX reference), and all-double. */
static double pipe_f32(double sa, double sb, double sy, int64_t acc)
{
    double m = round_to(QMM_DTYPE_FLOAT, round_to(QMM_DTYPE_FLOAT, sa * sb) / sy);
    double v = round_to(QMM_DTYPE_FLOAT, round_to(QMM_DTYPE_FLOAT, (double)acc) * m);
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

typedef struct near_tie {
    int64_t p, q; /* a − za and b − zb (K = 1): acc = p·q */
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
        int g1 = qh_edge_bit_length((uint64_t)cc) - qh_edge_bit_length((uint64_t)odd);
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
        int ea = -2 - mbits, eb = -2 - qh_edge_bit_length((uint64_t)mb);
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
static int near_tie_case(qh_edge_builder *x, int32_t ta, int32_t tb, int32_t ty, int32_t sdt,
                         const near_tie *t, int sigma, int s, char fooled, const char *name)
{
    int64_t za = ta == QMM_DTYPE_UINT8 ? (sigma > 0 ? 0 : 255) : 0, zb = 0;
    int64_t zy = ty == QMM_DTYPE_UINT8 ? (sigma > 0 ? 0 : 255) : 0;
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, qh_edge_opset_for_scales(sdt), "%s", name);
    if (!c)
        return 0;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    qh_edge_int_tensor(x, c, &q->a, ta, DIMS(1, 1), (const int64_t[]){za + t->p});
    qh_edge_int_tensor(x, c, &q->b, tb, DIMS(1, 1), (const int64_t[]){zb + t->q});
    qh_edge_per_tensor_params(x, c, sdt, t->sa, za, t->sb, zb, t->sy, zy, ty);
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
        qh_edge_drop_last_case(x);
        return 0;
    }
    int64_t acc = t->p * t->q;
    double exact =
        (double)((ty == QMM_DTYPE_UINT8 ? (int64_t)ybuf[0] : (int64_t)(int8_t)ybuf[0]) - zy);
    double r32 = pipe_f32(t->sa, t->sb, t->sy, acc);
    double rh = pipe_mult_in_type(sdt, t->sa, t->sb, t->sy, acc);
    double r64 = pipe_f64(t->sa, t->sb, t->sy, acc);
    int ok = fooled == '8'   ? r64 != exact
             : fooled == '4' ? r32 != exact && r64 == exact
                             : rh != exact && r64 == exact;
    if (!ok) {
        qh_edge_drop_last_case(x);
        return 0;
    }
    qmm_ref_element el;
    qmm_status est;
    const char *scaled = qmm_ref_explain(&call, 0, &el, &est) == QMM_OK ? el.scaled : "?";
    qh_edge_tag(c, "near-tie");
    qh_edge_tag(c, fooled == '8'   ? "float64-fooled"
                   : fooled == '4' ? "float32-fooled"
                                   : "scale-type-multiplier-fooled");
    qh_edge_tag(c, sigma > 0 ? "positive" : "negative");
    qh_edge_describe(c,
                     "acc %lld, scales %.17g %.17g %.17g (%s): exact %s rounds to %.0f; float32 "
                     "pipeline %.0f, multiplier-in-%s then double %.0f, float64 pipeline %.0f",
                     (long long)acc, t->sa, t->sb, t->sy, qmm_dtype_name(sdt), scaled, exact, r32,
                     qmm_dtype_name(sdt), rh, r64);
    return 1;
}

/* Finds and adds the near-tie `what-above|below[-sign]-<types>` that fools `fooled` with
 * `mbits`-bit scale mantissas of type `sdt` (the sign in the name only when `signed_name`). */
static void near_tie_kind(qh_edge_builder *x, char fooled, int mbits, int32_t sdt,
                          const char *what, int32_t ta, int32_t tb, int32_t ty, int above,
                          int sigma, int signed_name)
{
    int s = above ? 1 : -1;
    int made = 0;
    for (int attempt = 0; attempt < 400 && !made && !x->failed; attempt++) {
        /* the exact value rounds to n+1 (above) or n (below); the fooled pipeline lands on
         * the tie and rounds to even: pick n's parity so that even is the wrong answer */
        int64_t n = 2 * qh_rng_range(&x->rng, 5, ty == QMM_DTYPE_UINT8 ? 100 : 50) + (above ? 0 : 1);
        near_tie t;
        if (find_near_tie(&x->rng, mbits, sdt, n, sigma, s, &t) != 0)
            continue;
        char name[96];
        snprintf(name, sizeof name, "%s-%s%s-%s%s%s", what, above ? "above" : "below",
                 !signed_name ? "" : sigma > 0 ? "-pos" : "-neg", qh_edge_type_abbrev(ta),
                 qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty));
        made = near_tie_case(x, ta, tb, ty, sdt, &t, sigma, s, fooled, name);
    }
    if (!made)
        qh_edge_fail(x, "near-ties: no case found (generator bug)");
}

static void suite_near_ties(qh_edge_builder *x)
{
    /* (fooled pipeline, mantissa bits, scale type) */
    static const struct {
        char fooled;
        int mbits;
        int32_t sdt;
        const char *what;
    } kinds[] = {
        {'8', 24, QMM_DTYPE_FLOAT, "float64"},
        {'4', 12, QMM_DTYPE_FLOAT, "float32"},
        {'h', 11, QMM_DTYPE_FLOAT16, "float16-multiplier"},
        {'h', 8, QMM_DTYPE_BFLOAT16, "bfloat16-multiplier"},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int yi = 0; yi < 2; yi++) {
            for (int above = 0; above < 2; above++) {
                int32_t ty = yi ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
                int sigma = yi && above ? -1 : 1; /* one negative per int8 kind */
                near_tie_kind(x, kinds[k].fooled, kinds[k].mbits, kinds[k].sdt, kinds[k].what,
                              ty, ty, ty, above, sigma, 0);
            }
        }
    }
    /* the float-scale kinds in the simplest form of every type combination, both signs */
    for (int t = 0; t < 8; t++)
        for (size_t k = 0; k < 2; k++)
            for (int above = 0; above < 2; above++)
                for (int sigma = 1; sigma >= -1; sigma -= 2)
                    near_tie_kind(x, kinds[k].fooled, kinds[k].mbits, kinds[k].sdt,
                                  kinds[k].what, t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                                  t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                                  t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8, above, sigma, 1);
}

const qh_edge_suite qh_edge_suite_near_ties = {
    "near-ties", 2, suite_near_ties,
    "exact values within 2^-30..2^-60 of a half-integer, where float32, float16 "
    "or float64 requantization rounds to the other side"};
