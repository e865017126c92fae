/* harness/gen/edge/scales.c — the `scales` edge suite (docs/edge-suites.md): subnormal scales,
 * and scale products that under- or overflow the scale type. */
#include <math.h>

#include "harness/gen/edge_build.h"

static void scales_case(qh_edge_builder *x, const char *name, int32_t sdt, double sa, double sb,
                        double sy, int small_acc, const char *tag1, const char *what)
{
    int idx = (int)(x->out->count % 4);
    int32_t ta = qh_edge_type_pairs[idx][0], tb = qh_edge_type_pairs[idx][1],
            ty = idx % 2 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, qh_edge_opset_for_scales(sdt), "%s", name);
    if (!c)
        return;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    int64_t za = ta == QMM_DTYPE_UINT8 ? 128 : 0, zb = tb == QMM_DTYPE_UINT8 ? 128 : 0;
    if (small_acc) {
        qh_edge_int_tensor_random(x, c, &q->a, ta, DIMS(3, 4), za - 2, za + 2);
        qh_edge_int_tensor_random(x, c, &q->b, tb, DIMS(4, 3), zb - 2, zb + 2);
    } else {
        qh_edge_int_tensor_random(x, c, &q->a, ta, DIMS(3, 4), za - 60, za + 60);
        qh_edge_int_tensor_random(x, c, &q->b, tb, DIMS(4, 3), zb - 60, zb + 60);
    }
    qh_edge_per_tensor_params(x, c, sdt, sa, za, sb, zb, sy, ty == QMM_DTYPE_UINT8 ? 128 : 0, ty);
    qh_edge_tag(c, tag1);
    qh_edge_describe(c, "%s (a_scale %.9g, b_scale %.9g, y_scale %.9g)", what, sa, sb, sy);
}

static void suite_scales(qh_edge_builder *x)
{
    scales_case(x, "float32-subnormal-a", QMM_DTYPE_FLOAT, 1.5 * ldexp(1, -140), ldexp(1, -4),
                ldexp(1, -138), 0, "subnormal", "a_scale is a float32 subnormal");
    scales_case(x, "float32-subnormal-bits", QMM_DTYPE_FLOAT, 291 * ldexp(1, -149), ldexp(1, 20),
                ldexp(1, -116), 0, "subnormal", "a_scale 0x00000123 (291·2^-149)");
    scales_case(x, "float32-subnormal-y", QMM_DTYPE_FLOAT, ldexp(1, -135), ldexp(1, -10),
                3 * ldexp(1, -148), 1, "subnormal",
                "y_scale a float32 subnormal, product sa·sb subnormal too");
    scales_case(x, "float32-product-underflow", QMM_DTYPE_FLOAT, 1.5 * ldexp(1, -75), ldexp(1, -76),
                ldexp(1, -146), 0, "underflow",
                "sa·sb = 1.5·2^-151 underflows float32 to 0; the exact multiplier is 1.5·2^-5");
    scales_case(x, "float32-product-overflow", QMM_DTYPE_FLOAT, ldexp(1, 70), ldexp(1, 60),
                1.5 * ldexp(1, 127), 1, "overflow",
                "sa·sb = 2^130 overflows float32 to inf; the exact multiplier is 16/3");
    scales_case(x, "float32-huge-and-tiny", QMM_DTYPE_FLOAT, ldexp(1, 100), ldexp(1, -100) * 1.25,
                ldexp(1, 5), 0, "huge", "a_scale 2^100 against b_scale 1.25·2^-100");
    scales_case(x, "float16-subnormal", QMM_DTYPE_FLOAT16, ldexp(1, -20), 0.125, 3 * ldexp(1, -24),
                1, "subnormal", "a_scale and y_scale float16 subnormals; multiplier 2/3");
    scales_case(x, "float16-product-underflow", QMM_DTYPE_FLOAT16, ldexp(1, -12), ldexp(1, -14),
                ldexp(1, -14) * ldexp(1, -6) * 1.5, 0, "underflow",
                "sa·sb = 2^-26 is below half the smallest float16 subnormal: 0 in float16");
    scales_case(x, "float16-product-overflow", QMM_DTYPE_FLOAT16, 60000, 2.0, 65504, 1, "overflow",
                "sa·sb = 120000 overflows float16 (max 65504) to inf");
    scales_case(x, "float16-max", QMM_DTYPE_FLOAT16, 65504, 65504, 65504, 1, "huge",
                "every scale the largest float16");
    scales_case(x, "bfloat16-subnormal", QMM_DTYPE_BFLOAT16, ldexp(1, -130), ldexp(1, 10),
                ldexp(1, -115), 0, "subnormal", "a_scale a bfloat16 subnormal (2^-130)");
    scales_case(x, "bfloat16-coarse", QMM_DTYPE_BFLOAT16, 1.0078125, 1.9921875,
                1.0078125 * 1.9921875 * 97, 0, "coarse-mantissa",
                "8-bit mantissas: the product needs 16 bits");
    scales_case(x, "bfloat16-product-overflow", QMM_DTYPE_BFLOAT16, ldexp(1, 90), ldexp(1, 40),
                1.5 * ldexp(1, 127), 1, "overflow", "sa·sb = 2^130 overflows bfloat16 to inf");
}

const qh_edge_suite qh_edge_suite_scales = {
    "scales", 10, suite_scales,
    "float32/float16/bfloat16 subnormal scales, scale products that under- or "
    "overflow the scale type"};
