/* harness/gen/edge/params.c — the `params` edge suite (docs/edge-suites.md): every quantization
 * parameter form, and the ambiguous ones. */
#include "harness/gen/edge_build.h"

/* A QLinearMatMul with random operands and the given parameter shapes (for each of a's, b's and
 * y's parameters; a scale and its zero point share the shape). */
static void params_case(qh_edge_builder *x, const char *name, const char *what, const char *tag1,
                        const char *tag2, int32_t ra, const int64_t *ad, int32_t rb,
                        const int64_t *bd, qh_edge_shape pa, qh_edge_shape pb, qh_edge_shape py,
                        int idx)
{
    int32_t ta = qh_edge_type_pairs[idx % 4][0], tb = qh_edge_type_pairs[idx % 4][1],
            ty = idx % 3 ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
    int32_t sdt = idx % 5 == 4 ? QMM_DTYPE_FLOAT16 : QMM_DTYPE_FLOAT;
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, qh_edge_opset_for_scales(sdt), "%s", name);
    if (!c)
        return;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    qh_edge_int_tensor_full_range(x, c, &q->a, ta, ra, ad);
    qh_edge_int_tensor_full_range(x, c, &q->b, tb, rb, bd);
    qh_edge_random_params(x, c, sdt, pa, pb, py, ty, 2, 64);
    qh_edge_tag(c, tag1);
    if (tag2)
        qh_edge_tag(c, tag2);
    qh_edge_describe(c, "%s", what);
}

static void suite_params(qh_edge_builder *x)
{
    const int64_t a2[2] = {3, 4}, b2[2] = {4, 2};
    const int64_t a3[3] = {2, 3, 4}, b3[3] = {2, 4, 2};
    qh_edge_shape s0 = {0, {0}}, s1 = {1, {1}};
    int i = 0;
    params_case(x, "per-tensor-rank0", "every parameter a scalar []", "per-tensor", NULL, 2, a2, 2,
                b2, s0, s0, s0, i++);
    params_case(x, "per-tensor-rank1", "every parameter [1]", "per-tensor", NULL, 2, a2, 2, b2, s1,
                s1, s1, i++);
    params_case(x, "per-row-m", "a_scale/a_zero_point [M] (the spec's wording)", "per-row", NULL, 2,
                a2, 2, b2, (qh_edge_shape){1, {3}}, s0, s0, i++);
    params_case(x, "per-row-m1", "a parameters [M,1]", "per-row", NULL, 2, a2, 2, b2,
                (qh_edge_shape){2, {3, 1}}, s0, s0, i++);
    params_case(x, "per-row-bm1-3d", "3-D a, a parameters [B,M,1]", "per-row", "batch", 3, a3, 3,
                b3, (qh_edge_shape){3, {2, 3, 1}}, s0, s0, i++);
    params_case(x, "per-row-1m1-3d", "3-D a, a parameters [1,M,1]", "per-row", "batch", 3, a3, 3,
                b3, (qh_edge_shape){3, {1, 3, 1}}, s0, s0, i++);
    params_case(x, "per-row-m1-3d", "3-D a, a parameters [M,1] (broadcast over the batch)",
                "per-row", "batch", 3, a3, 3, b3, (qh_edge_shape){2, {3, 1}}, s0, s0, i++);
    params_case(x, "per-column-n", "b parameters [N]", "per-column", NULL, 2, a2, 2, b2, s0,
                (qh_edge_shape){1, {2}}, s0, i++);
    params_case(x, "per-column-1n", "b parameters [1,N]", "per-column", NULL, 2, a2, 2, b2, s0,
                (qh_edge_shape){2, {1, 2}}, s0, i++);
    params_case(x, "per-column-b1n-3d", "3-D b, b parameters [B,1,N]", "per-column", "batch", 3, a3,
                3, b3, s0, (qh_edge_shape){3, {2, 1, 2}}, s0, i++);
    params_case(x, "per-column-n-3d", "3-D b, b parameters [N]", "per-column", "batch", 3, a3, 3,
                b3, s0, (qh_edge_shape){1, {2}}, s0, i++);
    params_case(x, "per-row-and-column", "a [M], b [N], y per-tensor", "per-row", "per-column", 2,
                a2, 2, b2, (qh_edge_shape){1, {3}}, (qh_edge_shape){1, {2}}, s0, i++);
    params_case(x, "y-mn", "y parameters [M,N]: one per output element", "y-broadcast", NULL, 2, a2,
                2, b2, s0, s0, (qh_edge_shape){2, {3, 2}}, i++);
    params_case(x, "y-n", "y parameters [N]", "y-broadcast", NULL, 2, a2, 2, b2, s0, s0,
                (qh_edge_shape){1, {2}}, i++);
    params_case(x, "y-m1", "y parameters [M,1]", "y-broadcast", NULL, 2, a2, 2, b2, s0, s0,
                (qh_edge_shape){2, {3, 1}}, i++);
    params_case(x, "y-b1n-3d", "3-D y, y parameters [B,1,N]", "y-broadcast", "batch", 3, a3, 3, b3,
                s0, s0, (qh_edge_shape){3, {2, 1, 2}}, i++);
    params_case(x, "y-bmn-3d", "3-D y, y parameters [B,M,N]", "y-broadcast", "batch", 3, a3, 3, b3,
                s0, s0, (qh_edge_shape){3, {2, 3, 2}}, i++);
    params_case(x, "all-forms-3d", "a [B,M,1], b [B,1,N], y [B,M,N]", "per-row", "per-column", 3,
                a3, 3, b3, (qh_edge_shape){3, {2, 3, 1}}, (qh_edge_shape){3, {2, 1, 2}},
                (qh_edge_shape){3, {2, 3, 2}}, i++);
    /* the ambiguous cousins: [M] when M == K reads per-row (numpy would broadcast it along K);
     * [N] for y when M == N runs along N */
    const int64_t sq[2] = {4, 4};
    params_case(x, "ambiguous-a-m-equals-k",
                "a [4,4] with a parameters [4]: per-row (the "
                "spec), not numpy's broadcast along K",
                "ambiguous", "per-row", 2, sq, 2, b2, (qh_edge_shape){1, {4}}, s0, s0, i++);
    params_case(x, "ambiguous-b-n-equals-k", "b [4,4] with b parameters [4]: per-column",
                "ambiguous", "per-column", 2, a2, 2, sq, s0, (qh_edge_shape){1, {4}}, s0, i++);
    params_case(x, "ambiguous-y-n-m-equals-n",
                "y [4,4] with y parameters [4]: along N (numpy "
                "broadcasting), not per-row",
                "ambiguous", "y-broadcast", 2, sq, 2, sq, s0, s0, (qh_edge_shape){1, {4}}, i++);
    params_case(x, "ambiguous-all-square",
                "a, b, y all [4,4]; a [4] per-row, b [4] "
                "per-column, y [4] along N",
                "ambiguous", "per-row", 2, sq, 2, sq, (qh_edge_shape){1, {4}},
                (qh_edge_shape){1, {4}}, (qh_edge_shape){1, {4}}, i++);
}

const qh_edge_suite qh_edge_suite_params = {
    "params", 5, suite_params,
    "every quantization parameter form (per-tensor, per-row, per-column, y "
    "broadcast) and the ambiguous [M] when M == K"};
