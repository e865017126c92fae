/* harness/gen/edge/zero-points.c — the `zero-points` edge suite (docs/edge-suites.md):
 * MatMulInteger with and without zero points, per-row and per-column. */
#include "harness/gen/edge_build.h"

/* A MatMulInteger case "<form>-<a><b>": a [3,4] of type ta and b [4,2] of type tb, random. */
static qh_edge_case *random_case(qh_edge_builder *x, const char *form, int32_t ta, int32_t tb)
{
    qh_edge_case *c = qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "%s-%s%s", form,
                                       qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb));
    if (c) {
        qmm_matmulinteger *m = qh_edge_matmulinteger(c);
        qh_edge_int_tensor_full_range(x, c, &m->a, ta, DIMS(3, 4));
        qh_edge_int_tensor_full_range(x, c, &m->b, tb, DIMS(4, 2));
    }
    return c;
}

static void suite_zero_points(qh_edge_builder *x)
{
    static const char *const forms[4] = {"none", "a-only", "b-only", "both"};
    for (int t = 0; t < 4; t++) {
        int32_t ta = qh_edge_type_pairs[t][0], tb = qh_edge_type_pairs[t][1];
        for (int f = 0; f < 4; f++) {
            qh_edge_case *c = random_case(x, forms[f], ta, tb);
            if (!c)
                return;
            qmm_matmulinteger *m = qh_edge_matmulinteger(c);
            if (f & 1)
                qh_edge_int_tensor_full_range(x, c, &m->a_zero_point, ta, SCALAR);
            if (f & 2)
                qh_edge_int_tensor_full_range(x, c, &m->b_zero_point, tb, DIMS(1));
            qh_edge_tag(c, f == 0 ? "no-zero-points" : "zero-points");
            if (f == 2)
                qh_edge_tag(c, "omitted-optional-input");
            qh_edge_describe(c, "MatMulInteger %s%s, zero points: %s%s", qh_edge_type_abbrev(ta),
                             qh_edge_type_abbrev(tb), forms[f],
                             f == 2 ? " (a_zero_point omitted as \"\" in the node)" : "");
        }
    }
    static const struct {
        const char *name;
        qh_edge_shape za, zb;
    } shaped[] = {
        {"per-row-m", {1, {3}}, {0, {0}}},          {"per-row-m1", {2, {3, 1}}, {0, {0}}},
        {"per-column-n", {0, {0}}, {1, {2}}},       {"per-column-1n", {0, {0}}, {2, {1, 2}}},
        {"per-row-and-column", {1, {3}}, {1, {2}}},
    };
    for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; i++) {
        int32_t ta = qh_edge_type_pairs[i % 4][0], tb = qh_edge_type_pairs[(i + 1) % 4][1];
        qh_edge_case *c = random_case(x, shaped[i].name, ta, tb);
        if (!c)
            return;
        qmm_matmulinteger *m = qh_edge_matmulinteger(c);
        qh_edge_int_tensor_full_range(x, c, &m->a_zero_point, ta, shaped[i].za.rank,
                                      shaped[i].za.dims);
        qh_edge_int_tensor_full_range(x, c, &m->b_zero_point, tb, shaped[i].zb.rank,
                                      shaped[i].zb.dims);
        qh_edge_tag(c, "zero-points");
        qh_edge_tag(c, shaped[i].za.rank ? "per-row" : "per-column");
        qh_edge_describe(c, "MatMulInteger with %s zero points", shaped[i].name);
    }
    qh_edge_case *c = qh_edge_add_case(x, QMM_OP_MATMULINTEGER, 10, "ambiguous-m-equals-k-u8u8");
    if (!c)
        return;
    qmm_matmulinteger *m = qh_edge_matmulinteger(c);
    qh_edge_int_tensor_full_range(x, c, &m->a, QMM_DTYPE_UINT8, DIMS(4, 4));
    qh_edge_int_tensor_full_range(x, c, &m->b, QMM_DTYPE_UINT8, DIMS(4, 2));
    qh_edge_int_tensor_full_range(x, c, &m->a_zero_point, QMM_DTYPE_UINT8, DIMS(4));
    qh_edge_tag(c, "zero-points");
    qh_edge_tag(c, "ambiguous");
    qh_edge_tag(c, "per-row");
    qh_edge_describe(c, "a [4,4] with a_zero_point [4]: per-row, not broadcast along K");
}

const qh_edge_suite qh_edge_suite_zero_points = {
    "zero-points", 12, suite_zero_points,
    "MatMulInteger with and without zero points, per-row and per-column"};
