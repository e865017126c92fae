/* harness/gen/edge/saturation.c — the `saturation` edge suite (docs/edge-suites.md): results
 * just inside, on, a tie past and far past both ends of uint8 and int8. */
#include <math.h>

#include "harness/gen/edge_build.h"

/* Rows of a − za (K = 4, b − zb = 1, sa = 1/2): row sums 2t give results t (half-integers). */
static void saturation_case(qh_edge_builder *x, int32_t ta, int32_t tb, int32_t ty, int high,
                            int extreme_zp)
{
    int64_t za = ta == QMM_DTYPE_UINT8 ? 128 : 0; /* a − za spans int8's range either way */
    int64_t zy = extreme_zp ? (high ? qh_edge_int_max(ty) : qh_edge_int_min(ty))
                            : (ty == QMM_DTYPE_UINT8 ? 128 : 0);
    /* targets t relative to the bound qmax − zy (high) or qmin − zy (low) */
    double bound = (double)((high ? qh_edge_int_max(ty) : qh_edge_int_min(ty)) - zy);
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
            av[4 * rows + k] = za + part;
            sum -= part;
        }
        rows++;
    }
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "%s-%s-%s%s%s", high ? "high" : "low",
                         extreme_zp ? "zp-at-bound" : "zp-mid", qh_edge_type_abbrev(ta),
                         qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty));
    if (!c)
        return;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    int64_t zb = tb == QMM_DTYPE_UINT8 ? 7 : -7;
    qh_edge_int_tensor(x, c, &q->a, ta, DIMS(rows, 4), av);
    qh_edge_int_tensor_filled(x, c, &q->b, tb, DIMS(4, 1), zb + 1);
    qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 0.5, za, 1.0, zb, 1.0, zy, ty);
    qh_edge_tag(c, "saturation");
    qh_edge_tag(c, high ? "high" : "low");
    qh_edge_tag(c, "tie");
    qh_edge_describe(c,
                     "results around the %s end (%g before adding y_zero_point %lld): just "
                     "inside, on it, ties just past it (x.5 rounds to even, then clamps), far past",
                     high ? "upper" : "lower", bound, (long long)zy);
}

static void suite_saturation(qh_edge_builder *x)
{
    /* every type combination, (a, b, y) from t's bits */
    for (int t = 0; t < 8; t++)
        for (int high = 0; high < 2; high++)
            for (int ez = 0; ez < 2; ez++)
                saturation_case(x, t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                                t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                                t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8, high, ez);
    /* random full-range operands with a tiny y_scale: nearly everything clamps, both ends
     * (the four pairs into one y type each, then into the other) */
    for (int idx = 0; idx < 8; idx++) {
        int32_t ta = qh_edge_type_pairs[idx % 4][0], tb = qh_edge_type_pairs[idx % 4][1],
                ty = (idx % 2) ^ (idx / 4) ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
        qh_edge_case *c = qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 10, "both-ends-random-%s%s%s",
                                           qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb),
                                           qh_edge_type_abbrev(ty));
        if (!c)
            return;
        qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
        qh_edge_int_tensor_full_range(x, c, &q->a, ta, DIMS(5, 16));
        qh_edge_int_tensor_full_range(x, c, &q->b, tb, DIMS(16, 6));
        qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 0.75, ta == QMM_DTYPE_UINT8 ? 128 : 0,
                                  1.25, tb == QMM_DTYPE_UINT8 ? 128 : 0, 0.5,
                                  ty == QMM_DTYPE_UINT8 ? 128 : 0, ty);
        qh_edge_tag(c, "saturation");
        qh_edge_tag(c, "high");
        qh_edge_tag(c, "low");
        qh_edge_describe(c,
                         "full-range random operands, multiplier 1.875: most results clamp at one "
                         "end or the other");
    }
}

const qh_edge_suite qh_edge_suite_saturation = {
    "saturation", 3, suite_saturation,
    "results at, just past and far past both ends of uint8 and int8, zero "
    "points at the extremes"};
