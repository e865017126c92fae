/* harness/gen/edge/ties.c — the `ties` edge suite (docs/edge-suites.md): exact ties k+1/2 from
 * multipliers of exactly 1/2 (or 1/6, which no binary format holds) with odd accumulators,
 * rounded before or after an odd or even y zero point. */
#include <stdio.h>

#include "harness/gen/edge_build.h"

/* The zero points the ties are built around (y's odd or even). */
static int64_t za_for(int32_t dt) { return dt == QMM_DTYPE_UINT8 ? 131 : -3; }
static int64_t zb_for(int32_t dt) { return dt == QMM_DTYPE_UINT8 ? 100 : 5; }
static int64_t zy_for(int32_t dt, int odd)
{
    return dt == QMM_DTYPE_UINT8 ? (odd ? 127 : 128) : (odd ? -5 : 0);
}

/* a − za rows [2i+1, 1], b − zb = [[s, s], [0, 2]]: acc = s(2i+1) and s(2i+1) + 2, all odd,
 * so a multiplier of exactly 1/2 puts every result on a tie. */
static void tie_case(qh_edge_builder *x, int32_t ta, int32_t tb, int32_t ty, int32_t sdt, int odd,
                     int neg, double sa, double sb, double sy, const char *name)
{
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, qh_edge_opset_for_scales(sdt), "%s", name);
    if (!c)
        return;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    int64_t za = za_for(ta), zb = zb_for(tb), s = neg ? -1 : 1;
    int64_t av[16], bv[4] = {zb + s, zb + s, zb, zb + 2};
    for (int i = 0; i < 8; i++) {
        av[2 * i] = za + 2 * i + 1;
        av[2 * i + 1] = za + 1;
    }
    qh_edge_int_tensor(x, c, &q->a, ta, DIMS(8, 2), av);
    qh_edge_int_tensor(x, c, &q->b, tb, DIMS(2, 2), bv);
    qh_edge_per_tensor_params(x, c, sdt, sa, za, sb, zb, sy, zy_for(ty, odd), ty);
    qh_edge_tag(c, "tie");
    qh_edge_tag(c, odd ? "odd-zp" : "even-zp");
    qh_edge_tag(c, neg ? "negative" : "positive");
    qh_edge_describe(
        c,
        "multiplier sa*sb/sy = %g*%g/%g = 1/2 exactly and every acc odd: each result is "
        "a tie k+1/2 (%s), rounded to even before adding y_zero_point %lld (%s)",
        sa, sb, sy, neg ? "mostly negative" : "positive", (long long)zy_for(ty, odd),
        odd ? "odd: add-then-round gives a different answer" : "even");
}

/* Three ways to a multiplier of exactly 1/2 with float scales: a's scale alone (the names
 * without a suffix), scales as small as real ones (2^-7 · 2^-3 / 2^-11) and a y_scale that is
 * not a power of two (0.75 · 0.5 / 0.75). */
static const struct {
    double sa, sb, sy;
    const char *suffix;
} halves[3] = {{0.5, 1.0, 1.0, ""},
               {0x1p-7, 0x1p-3, 0x1p-11, "-small-scales"},
               {0.75, 0.5, 0.75, "-sy-0.75"}};

static void suite_ties(qh_edge_builder *x)
{
    /* every rule in the simplest form (2-D, per-tensor, float scales) of every type
     * combination: (a, b, y) from t's bits */
    for (int t = 0; t < 8; t++) {
        int32_t ta = t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                tb = t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                ty = t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
        for (int h = 0; h < 3; h++)
            for (int odd = 0; odd < 2; odd++)
                for (int neg = 0; neg < 2; neg++) {
                    char name[96];
                    snprintf(name, sizeof name, "%s-zp-%s-%s%s%s%s", odd ? "odd" : "even",
                             neg ? "neg" : "pos", qh_edge_type_abbrev(ta),
                             qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty), halves[h].suffix);
                    tie_case(x, ta, tb, ty, QMM_DTYPE_FLOAT, odd, neg, halves[h].sa,
                             halves[h].sb, halves[h].sy, name);
                }
    }
    tie_case(x, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, QMM_DTYPE_FLOAT16, 1, 0, 0.25,
             4.0, 2.0, "odd-zp-pos-u8u8u8-float16");
    tie_case(x, QMM_DTYPE_INT8, QMM_DTYPE_INT8, QMM_DTYPE_INT8, QMM_DTYPE_BFLOAT16, 1, 1, 2.0,
             0.125, 0.5, "odd-zp-neg-s8s8s8-bfloat16");

    /* Ties through a multiplier no binary format holds: 1.5/9 = 1/6, acc = 3·odd. A float
     * pipeline computes fl(1/6) and lands a hair off the tie, on either side. */
    for (int t = 0; t < 8; t++) {
        for (int odd = 0; odd < 2; odd++) {
            int32_t ta = t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    tb = t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    ty = t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
            qh_edge_case *c =
                qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "inexact-multiplier-%s-zp-%s%s%s",
                                 odd ? "odd" : "even", qh_edge_type_abbrev(ta),
                                 qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty));
            if (!c)
                return;
            qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
            int64_t za = za_for(ta), zb = zb_for(tb);
            int64_t av[6], bv[2] = {zb + 1, zb - 1};
            for (int i = 0; i < 6; i++)
                av[i] = za + 3 * (2 * i + 1);
            qh_edge_int_tensor(x, c, &q->a, ta, DIMS(6, 1), av);
            qh_edge_int_tensor(x, c, &q->b, tb, DIMS(1, 2), bv);
            qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1.5, za, 1.0, zb, 9.0, zy_for(ty, odd),
                                      ty);
            qh_edge_tag(c, "tie");
            qh_edge_tag(c, "inexact-multiplier");
            qh_edge_tag(c, odd ? "odd-zp" : "even-zp");
            qh_edge_tag(c, "positive");
            qh_edge_tag(c, "negative");
            qh_edge_describe(c, "multiplier 1.5/9 = 1/6 (no binary fraction), acc = ±3, ±9, "
                                "... ±33: exact ties ±0.5 .. ±5.5 that float arithmetic misses");
        }
    }

    /* Per-row and per-column scales that keep every product a tie: 0.5·odd, 1.5·odd, 4.5·odd. */
    for (int yi = 0; yi < 2; yi++) {
        int32_t ty = yi ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                ta = yi ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8,
                tb = yi ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
        qh_edge_case *c = qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "per-row-col-odd-zp-%s%s%s",
                                           qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb),
                                           qh_edge_type_abbrev(ty));
        if (!c)
            return;
        qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
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
        qh_edge_int_tensor(x, c, &q->a, ta, DIMS(4, 3), av);
        qh_edge_int_tensor(x, c, &q->b, tb, DIMS(3, 2), bv);
        qh_edge_scale_tensor(x, c, &q->a_scale, QMM_DTYPE_FLOAT, DIMS(4),
                             (const double[]){0.5, 1.5, 0.5, 1.5});
        qh_edge_int_tensor(x, c, &q->a_zero_point, ta, DIMS(4), za);
        qh_edge_scale_tensor(x, c, &q->b_scale, QMM_DTYPE_FLOAT, DIMS(2),
                             (const double[]){1.0, 3.0});
        qh_edge_int_tensor(x, c, &q->b_zero_point, tb, DIMS(2), zb);
        qh_edge_scale_tensor_filled(x, c, &q->y_scale, QMM_DTYPE_FLOAT, SCALAR, 1.0);
        qh_edge_int_tensor_filled(x, c, &q->y_zero_point, ty, SCALAR, zy_for(ty, 1));
        qh_edge_tag(c, "tie");
        qh_edge_tag(c, "odd-zp");
        qh_edge_tag(c, "per-row");
        qh_edge_tag(c, "per-column");
        qh_edge_tag(c, "positive");
        qh_edge_tag(c, "negative");
        qh_edge_describe(c, "per-row a_scale [0.5,1.5,..] and per-column b_scale [1,3] with odd "
                            "accumulators: every element a tie, odd y_zero_point");
    }
}

const qh_edge_suite qh_edge_suite_ties = {
    "ties", 1, suite_ties,
    "exact rounding ties (x.5) with even and odd y zero points, both signs, exact and "
    "inexact multipliers"};
