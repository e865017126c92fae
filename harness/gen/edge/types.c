/* harness/gen/edge/types.c — the `types` edge suite (docs/edge-suites.md): every uint8/int8
 * combination under each opset and scale type. */
#include <math.h>

#include "harness/gen/edge_build.h"

/* A y_scale that keeps outputs of a random K-long dot product mostly inside the type. */
static double fitting_sy(double sa, double sb, int64_t k, double spread)
{
    double acc = spread * sqrt((double)(k > 0 ? k : 1));
    return sa * sb * acc / 48.0;
}

static void suite_types(qh_edge_builder *x)
{
    static const int32_t sdts[4] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16,
                                    QMM_DTYPE_BFLOAT16};
    for (int s = 0; s < 4; s++) {
        for (int t = 0; t < 8; t++) {
            int32_t ta = t & 4 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    tb = t & 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8,
                    ty = t & 1 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
            int32_t opset = s == 0 ? 10 : 21;
            qh_edge_case *c = qh_edge_add_case(
                x, QMM_OP_QLINEARMATMUL, opset, "%s%s%s-opset%d-%s", qh_edge_type_abbrev(ta),
                qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty), opset, qmm_dtype_name(sdts[s]));
            if (!c)
                return;
            qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
            qh_edge_int_tensor_full_range(x, c, &q->a, ta, DIMS(3, 5));
            qh_edge_int_tensor_full_range(x, c, &q->b, tb, DIMS(5, 4));
            double sa = qh_edge_short_scale(x, -6, -2), sb = qh_edge_short_scale(x, -6, -2);
            int64_t za = qh_rng_range(&x->rng, qh_edge_int_min(ta), qh_edge_int_max(ta));
            int64_t zb = qh_rng_range(&x->rng, qh_edge_int_min(tb), qh_edge_int_max(tb));
            int64_t zy = qh_rng_range(&x->rng, qh_edge_int_min(ty) + 64, qh_edge_int_max(ty) - 64);
            qh_edge_per_tensor_params(x, c, sdts[s], sa, za, sb, zb, fitting_sy(sa, sb, 5, 9000),
                                      zy, ty);
            qh_edge_tag(c, "types");
            qh_edge_describe(c, "a %s, b %s, y %s, opset %d, %s scales", qh_edge_type_abbrev(ta),
                             qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty), opset,
                             qmm_dtype_name(sdts[s]));
        }
    }
}

const qh_edge_suite qh_edge_suite_types = {
    "types", 11, suite_types,
    "all eight uint8/int8 combinations under opset 10 (float) and opset 21 "
    "(float, float16, bfloat16 scales)"};
