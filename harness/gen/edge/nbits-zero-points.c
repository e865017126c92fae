/* harness/gen/edge/nbits-zero-points.c — the `nbits-zero-points` edge suite
 * (docs/edge-suites.md): every MatMulNBits zero-point form for bits 2, 4 and 8. */
#include <stdio.h>

#include "harness/gen/edge_build.h"

static void zp_case(qh_edge_builder *x, int bits, int zp, int flat, int32_t t1, int fill,
                    const char *name, const char *what)
{
    /* K = 43 over blocks of 16: three blocks, the last short; three zero points per column,
     * so a packed row has a partly used last byte (2- and 4-bit) */
    qh_edge_nbits s = {.m = 2, .k = 43, .n = 3, .bits = bits, .block_size = 16,
                       .level = bits == 4 ? 4 : 0, .t1 = t1, .zp = zp, .flat = flat,
                       .bias = bits != 2};
    qh_edge_case *c = qh_edge_nbits_case(x, &s, "bits%d-%s", bits, name);
    if (!c)
        return;
    qmm_matmulnbits *q = &c->problem.call.u.matmulnbits;
    for (int64_t i = 0; fill >= 0 && i < qmm_tensor_numel(&q->zero_points); i++)
        qh_tensor_set_int(&q->zero_points, i, fill);
    char form[160];
    qh_edge_nbits_form(&s, form, sizeof form);
    qh_edge_describe(c, "%s: %s", form, what);
}

static void suite_nbits_zero_points(qh_edge_builder *x)
{
    static const int bitss[3] = {2, 4, 8};
    for (int b = 0; b < 3; b++) {
        int bits = bitss[b];
        zp_case(x, bits, QH_NBITS_ZP_ABSENT, 0, 0, -1, "absent",
                "zero_points absent: every block's zero point is 2^(bits-1), not 0");
        zp_case(x, bits, QH_NBITS_ZP_PACKED, 0, 0, -1, "packed",
                "packed uint8 zero points [N, ceil(k_blocks*bits/8)], low bits first, random "
                "bits in the unused part of the last byte");
        zp_case(x, bits, QH_NBITS_ZP_PACKED, 1, 0, -1, "packed-flat",
                "packed uint8 zero points and scales flat ([N*...])");
        zp_case(x, bits, QH_NBITS_ZP_PACKED, 0, 0, 0, "packed-min",
                "packed zero points all 0: every code counts positive");
        zp_case(x, bits, QH_NBITS_ZP_PACKED, 0, 0, 255, "packed-max",
                "packed zero points all 2^bits - 1: every code counts negative or zero");
        zp_case(x, bits, QH_NBITS_ZP_T1, 0, 0, -1, "t1-float",
                "unpacked float zero points [N, k_blocks], half of them half-integers");
        zp_case(x, bits, QH_NBITS_ZP_T1, 1, 0, -1, "t1-float-flat",
                "unpacked float zero points and scales flat [N*k_blocks]");
        zp_case(x, bits, QH_NBITS_ZP_T1, 0, QMM_DTYPE_FLOAT16, -1, "t1-float16",
                "T1 float16: A, scales, zero points, bias and Y float16");
        zp_case(x, bits, QH_NBITS_ZP_T1, 0, QMM_DTYPE_BFLOAT16, -1, "t1-bfloat16",
                "T1 bfloat16: A, scales, zero points, bias and Y bfloat16");
        zp_case(x, bits, QH_NBITS_ZP_EMPTY, 0, 0, -1, "empty",
                "zero_points present but empty ([0]): INVALID_ARGUMENT (OpenVINO 32198 read it "
                "as absent); leave the input out instead");
    }
}

const qh_edge_suite qh_edge_suite_nbits_zero_points = {
    "nbits-zero-points", 18, suite_nbits_zero_points,
    "MatMulNBits zero points absent (2^(bits-1)), packed (2-D, flat, extremes), float/float16/"
    "bfloat16, empty (invalid), for bits 2/4/8"};
