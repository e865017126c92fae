/* tests/test_geometry.c — numpy.matmul geometry, parameter shape rules and maps, and exact
 * scale decoding (ops/geometry.c, params.c, scales.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "ops/qmm_ops.h"
#include "tests/tensor_support.h"

#define U8 QMM_DTYPE_UINT8

static qmm_geometry geom_ok(qmm_tensor a, qmm_tensor b)
{
    qmm_geometry g;
    qmm_status st;
    qmm_status_code rc = qmm_matmul_geometry(&a, &b, &g, &st);
    cr_assert_eq(rc, QMM_OK, "%s", st.message);
    return g;
}

static qmm_status geom_err(qmm_tensor a, qmm_tensor b)
{
    qmm_geometry g;
    qmm_status st;
    qmm_status_code rc = qmm_matmul_geometry(&a, &b, &g, &st);
    cr_assert_eq(rc, QMM_INVALID_ARGUMENT);
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
    return st;
}

/* ---- geometry ---- */

/* y's shape: its rank and every dimension. */
static void expect_y(const qmm_geometry *g, int32_t rank, const int64_t *dims)
{
    cr_assert_eq(g->y_rank, rank);
    for (int32_t d = 0; d < rank; d++)
        cr_assert_eq(g->y_dims[d], dims[d], "y dim %d", (int)d);
}

Test(geometry, plain_2d)
{
    qmm_geometry g = geom_ok(mk(U8, NULL, 2, 2, 3), mk(U8, NULL, 2, 3, 4));
    cr_assert_eq(g.m, 2);
    cr_assert_eq(g.k, 3);
    cr_assert_eq(g.n, 4);
    cr_assert_eq(g.batch, 1);
    cr_assert_eq(g.batch_rank, 0);
    expect_y(&g, 2, (const int64_t[]){2, 4});
    cr_assert_eq(qmm_geometry_a_offset(&g, 0), 0);
    cr_assert_eq(qmm_geometry_b_offset(&g, 0), 0);
}

Test(geometry, one_d_both_gives_rank_0)
{
    /* [3]·[3]: a -> [1,3], b -> [3,1], both inserted dims removed: shape [] */
    qmm_geometry g = geom_ok(mk(U8, NULL, 1, 3), mk(U8, NULL, 1, 3));
    cr_assert_eq(g.m, 1);
    cr_assert_eq(g.k, 3);
    cr_assert_eq(g.n, 1);
    expect_y(&g, 0, NULL);
}

Test(geometry, one_d_a)
{
    /* [3]·[3,4] -> [4] */
    qmm_geometry g = geom_ok(mk(U8, NULL, 1, 3), mk(U8, NULL, 2, 3, 4));
    cr_assert_eq(g.m, 1);
    cr_assert_eq(g.n, 4);
    expect_y(&g, 1, (const int64_t[]){4});
}

Test(geometry, one_d_b)
{
    /* [2,3]·[3] -> [2] */
    qmm_geometry g = geom_ok(mk(U8, NULL, 2, 2, 3), mk(U8, NULL, 1, 3));
    cr_assert_eq(g.m, 2);
    cr_assert_eq(g.n, 1);
    expect_y(&g, 1, (const int64_t[]){2});
}

Test(geometry, one_d_a_with_batched_b)
{
    /* [3]·[5,3,4] -> [5,4] */
    qmm_geometry g = geom_ok(mk(U8, NULL, 1, 3), mk(U8, NULL, 3, 5, 3, 4));
    cr_assert_eq(g.batch, 5);
    expect_y(&g, 2, (const int64_t[]){5, 4});
    /* b's matrix 2 starts at 2*3*4 = 24; a is shared */
    cr_assert_eq(qmm_geometry_b_offset(&g, 2), 24);
    cr_assert_eq(qmm_geometry_a_offset(&g, 2), 0);
}

Test(geometry, batch_broadcast)
{
    /* [2,1,M=2,K=3]·[3,K=3,N=4] -> [2,3,2,4] */
    qmm_geometry g = geom_ok(mk(U8, NULL, 4, 2, 1, 2, 3), mk(U8, NULL, 3, 3, 3, 4));
    cr_assert_eq(g.batch_rank, 2);
    cr_assert_eq(g.batch, 6);
    cr_assert_eq(g.batch_dims[0], 2);
    cr_assert_eq(g.batch_dims[1], 3);
    expect_y(&g, 4, (const int64_t[]){2, 3, 2, 4});
    /* padded operand dims: a [2,1,2,3], b [1,3,3,4] */
    cr_assert_eq(g.a_dims[0], 2);
    cr_assert_eq(g.a_dims[1], 1);
    cr_assert_eq(g.b_dims[0], 1);
    cr_assert_eq(g.b_dims[1], 3);
    /* batch index bi = 3*c0 + c1; a's matrix is c0 (size 2*3 = 6), b's is c1 (size 12) */
    for (int64_t bi = 0; bi < 6; bi++) {
        cr_assert_eq(qmm_geometry_a_offset(&g, bi), (bi / 3) * 6);
        cr_assert_eq(qmm_geometry_b_offset(&g, bi), (bi % 3) * 12);
    }
}

Test(geometry, empty_dims)
{
    qmm_geometry g = geom_ok(mk(U8, NULL, 2, 0, 3), mk(U8, NULL, 2, 3, 2)); /* M = 0 */
    cr_assert_eq(g.m, 0);
    cr_assert_eq(g.y_dims[0], 0);
    g = geom_ok(mk(U8, NULL, 2, 2, 3), mk(U8, NULL, 2, 3, 0)); /* N = 0 */
    cr_assert_eq(g.n, 0);
    g = geom_ok(mk(U8, NULL, 2, 2, 0), mk(U8, NULL, 2, 0, 3)); /* K = 0, y [2,3] */
    cr_assert_eq(g.k, 0);
    cr_assert_eq(g.y_dims[0], 2);
    cr_assert_eq(g.y_dims[1], 3);
    /* batch 0 against 1 broadcasts to 0 */
    g = geom_ok(mk(U8, NULL, 3, 0, 2, 3), mk(U8, NULL, 3, 1, 3, 4));
    cr_assert_eq(g.batch, 0);
    cr_assert_eq(g.y_dims[0], 0);
}

Test(geometry, errors)
{
    qmm_status st = geom_err(mk(U8, NULL, 0), mk(U8, NULL, 2, 3, 4));
    cr_assert(strstr(st.message, "a: rank 0"), "%s", st.message);
    st = geom_err(mk(U8, NULL, 2, 2, 3), mk(U8, NULL, 0));
    cr_assert(strstr(st.message, "b: rank 0"), "%s", st.message);
    st = geom_err(mk(U8, NULL, 2, 2, 3), mk(U8, NULL, 2, 4, 4));
    cr_assert(strstr(st.message, "b: K mismatch"), "%s", st.message);
    cr_assert(strstr(st.message, "K=3") && strstr(st.message, "K=4"), "%s", st.message);
    /* 0 is a real size: 0 vs 3 does not broadcast */
    st = geom_err(mk(U8, NULL, 3, 0, 2, 3), mk(U8, NULL, 3, 3, 3, 4));
    cr_assert(strstr(st.message, "batch"), "%s", st.message);
    st = geom_err(mk(U8, NULL, 3, 2, 2, 3), mk(U8, NULL, 3, 3, 3, 4));
    cr_assert(strstr(st.message, "batch"), "%s", st.message);
    st = geom_err(mk(U8, NULL, 2, -1, 3), mk(U8, NULL, 2, 3, 4));
    cr_assert(strstr(st.message, "a:"), "%s", st.message);
    qmm_tensor big = mk(U8, NULL, 8, 1, 1, 1, 1, 1, 1, 1, 1);
    big.rank = 9;
    st = geom_err(big, mk(U8, NULL, 2, 1, 1));
    cr_assert(strstr(st.message, "a:"), "%s", st.message);
    /* element counts: a [2^30,2^30,2^30] = 2^90 overflows */
    st = geom_err(mk(U8, NULL, 3, 1 << 30, 1 << 30, 1 << 30), mk(U8, NULL, 2, 1 << 30, 1));
    cr_assert(strstr(st.message, "a:") && strstr(st.message, "overflow"), "%s", st.message);
    /* a [2^30,2^30,1] (2^60) · b [1,2^30]: y = 2^30*2^30*2^30 overflows */
    st = geom_err(mk(U8, NULL, 3, 1 << 30, 1 << 30, 1), mk(U8, NULL, 2, 1, 1 << 30));
    cr_assert(strstr(st.message, "y:") && strstr(st.message, "overflow"), "%s", st.message);
}

/* ---- parameter maps ---- */

static qmm_param_map map_ok(qmm_tensor p, qmm_param_role role, qmm_tensor op, qmm_geometry *g)
{
    qmm_param_map m;
    qmm_status st;
    qmm_status_code rc = qmm_param_map_build(&p, "p", role, &op, g, &m, &st);
    cr_assert_eq(rc, QMM_OK, "%s", st.message);
    return m;
}

static void map_err(qmm_tensor p, qmm_param_role role, qmm_tensor op, qmm_geometry *g)
{
    qmm_param_map m;
    qmm_status st;
    qmm_status_code rc = qmm_param_map_build(&p, "my_param", role, &op, g, &m, &st);
    cr_assert_eq(rc, QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "my_param"), "%s", st.message);
}

Test(params, per_tensor_any_rank)
{
    qmm_tensor a = mk(U8, NULL, 2, 2, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_tensor shapes[3] = {mk(U8, NULL, 0), mk(U8, NULL, 1, 1), mk(U8, NULL, 3, 1, 1, 1)};
    for (int r = 0; r < 3; r++) {
        for (int role = 0; role < 3; role++) {
            qmm_param_map m = map_ok(shapes[r], (qmm_param_role)role, role == 1 ? b : a, &g);
            cr_assert_eq(m.row_stride, 0);
            cr_assert_eq(m.col_stride, 0);
            cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 0);
        }
    }
}

Test(params, per_row_m_and_m1)
{
    qmm_tensor a = mk(U8, NULL, 2, 2, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_param_map m = map_ok(mk(U8, NULL, 1, 2), QMM_PARAM_A, a, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 1); /* row 1 */
    m = map_ok(mk(U8, NULL, 2, 2, 1), QMM_PARAM_A, a, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 1);
    /* broadcastable to a means rank <= a's rank: [1,2,1] would make a 3-D */
    map_err(mk(U8, NULL, 3, 1, 2, 1), QMM_PARAM_A, a, &g);
    /* [K] for a [2,3] is neither per-tensor nor per-row; [1,3] and [2,3] vary along K */
    map_err(mk(U8, NULL, 1, 3), QMM_PARAM_A, a, &g);
    map_err(mk(U8, NULL, 2, 1, 3), QMM_PARAM_A, a, &g);
    map_err(mk(U8, NULL, 2, 2, 3), QMM_PARAM_A, a, &g);
    /* rank above a's and a mismatched M */
    map_err(mk(U8, NULL, 3, 2, 2, 1), QMM_PARAM_A, a, &g);
    map_err(mk(U8, NULL, 2, 3, 1), QMM_PARAM_A, a, &g);
}

Test(params, per_row_when_m_equals_k)
{
    /* a [3,3]: a 1-D [3] could mean either axis; the spec says per-row */
    qmm_tensor a = mk(U8, NULL, 2, 3, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_param_map m = map_ok(mk(U8, NULL, 1, 3), QMM_PARAM_A, a, &g);
    cr_assert_eq(m.row_stride, 1);
    cr_assert_eq(m.col_stride, 0);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 2, 0), 2);
}

Test(params, per_row_1d_only_for_2d_a)
{
    /* a [2,2,3]: a 1-D [2] aligns with K=3, so it is not allowed; [2,1] is */
    qmm_tensor a = mk(U8, NULL, 3, 2, 2, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    map_err(mk(U8, NULL, 1, 2), QMM_PARAM_A, a, &g);
    qmm_param_map m = map_ok(mk(U8, NULL, 2, 2, 1), QMM_PARAM_A, a, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 1, 1, 0), 1); /* batch does not matter */
}

Test(params, per_column_n_and_1n)
{
    qmm_tensor a = mk(U8, NULL, 2, 2, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_param_map m = map_ok(mk(U8, NULL, 1, 4), QMM_PARAM_B, b, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 3);
    m = map_ok(mk(U8, NULL, 2, 1, 4), QMM_PARAM_B, b, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 3);
    map_err(mk(U8, NULL, 2, 3, 1), QMM_PARAM_B, b, &g); /* varies along K */
    map_err(mk(U8, NULL, 2, 3, 4), QMM_PARAM_B, b, &g);
    map_err(mk(U8, NULL, 2, 2, 3), QMM_PARAM_B, b, &g);
    map_err(mk(U8, NULL, 1, 3), QMM_PARAM_B, b, &g);
}

Test(params, batched_parameters)
{
    /* a [2,M=3,K=4], b [2,K=4,N=5]; a param [2,3,1] has strides (3,1,-), b param [2,1,5]
     * strides (5,-,1) */
    qmm_tensor a = mk(U8, NULL, 3, 2, 3, 4), b = mk(U8, NULL, 3, 2, 4, 5);
    qmm_geometry g = geom_ok(a, b);
    qmm_param_map ma = map_ok(mk(U8, NULL, 3, 2, 3, 1), QMM_PARAM_A, a, &g);
    cr_assert_eq(qmm_param_offset(&ma, &g, 1, 2, 4), 1 * 3 + 2);
    qmm_param_map mb = map_ok(mk(U8, NULL, 3, 2, 1, 5), QMM_PARAM_B, b, &g);
    cr_assert_eq(qmm_param_offset(&mb, &g, 1, 2, 4), 1 * 5 + 4);
    /* a batch-only parameter [2,1,1] */
    ma = map_ok(mk(U8, NULL, 3, 2, 1, 1), QMM_PARAM_A, a, &g);
    cr_assert_eq(qmm_param_offset(&ma, &g, 1, 2, 4), 1);
}

Test(params, batched_parameter_of_broadcast_operand)
{
    /* a [2,1,M=2,K=3]·b [3,K=3,N=4] -> batch [2,3]; a's param [2,1,2,1] follows batch dim 0
     * (offset 2*c0 + i), b's param [3,1,4] follows batch dim 1 (offset 4*c1 + j) */
    qmm_tensor a = mk(U8, NULL, 4, 2, 1, 2, 3), b = mk(U8, NULL, 3, 3, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_param_map ma = map_ok(mk(U8, NULL, 4, 2, 1, 2, 1), QMM_PARAM_A, a, &g);
    qmm_param_map mb = map_ok(mk(U8, NULL, 3, 3, 1, 4), QMM_PARAM_B, b, &g);
    for (int64_t bi = 0; bi < 6; bi++) {
        cr_assert_eq(qmm_param_offset(&ma, &g, bi, 1, 2), 2 * (bi / 3) + 1);
        cr_assert_eq(qmm_param_offset(&mb, &g, bi, 1, 2), 4 * (bi % 3) + 2);
    }
    /* b's param may not claim a's batch dim: [2,1,1,4] has rank 4 > b's rank 3 */
    map_err(mk(U8, NULL, 4, 2, 1, 1, 4), QMM_PARAM_B, b, &g);
}

Test(params, y_broadcast)
{
    qmm_tensor a = mk(U8, NULL, 2, 2, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_tensor y = mk(U8, NULL, 2, 2, 4);
    qmm_param_map m = map_ok(mk(U8, NULL, 2, 2, 4), QMM_PARAM_Y, y, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 7);
    m = map_ok(mk(U8, NULL, 1, 4), QMM_PARAM_Y, y, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 3);
    m = map_ok(mk(U8, NULL, 2, 2, 1), QMM_PARAM_Y, y, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 3), 1);
    map_err(mk(U8, NULL, 1, 2), QMM_PARAM_Y, y, &g); /* [2] aligns with N=4 */
    map_err(mk(U8, NULL, 3, 2, 2, 4), QMM_PARAM_Y, y, &g);
}

Test(params, y_broadcast_with_1d_operand)
{
    /* [3]·[3,4] -> y [4]; a y param [4] follows j */
    qmm_tensor a = mk(U8, NULL, 1, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    qmm_tensor y = mk(U8, NULL, 1, 4);
    qmm_param_map m = map_ok(mk(U8, NULL, 1, 4), QMM_PARAM_Y, y, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 0, 3), 3);
    /* [2,3]·[3] -> y [2]; a y param [2] follows i */
    a = mk(U8, NULL, 2, 2, 3);
    b = mk(U8, NULL, 1, 3);
    g = geom_ok(a, b);
    y = mk(U8, NULL, 1, 2);
    m = map_ok(mk(U8, NULL, 1, 2), QMM_PARAM_Y, y, &g);
    cr_assert_eq(qmm_param_offset(&m, &g, 0, 1, 0), 1);
    /* 1-D a: per-row parameters can only be per-tensor */
    a = mk(U8, NULL, 1, 3);
    b = mk(U8, NULL, 2, 3, 4);
    g = geom_ok(a, b);
    map_err(mk(U8, NULL, 1, 3), QMM_PARAM_A, a, &g);
}

Test(params, empty_per_row)
{
    /* M = 0: a per-row parameter [0] has no elements and is allowed */
    qmm_tensor a = mk(U8, NULL, 2, 0, 3), b = mk(U8, NULL, 2, 3, 4);
    qmm_geometry g = geom_ok(a, b);
    map_ok(mk(U8, NULL, 1, 0), QMM_PARAM_A, a, &g);
    map_ok(mk(U8, NULL, 2, 0, 1), QMM_PARAM_A, a, &g);
}

/* ---- scale decoding ---- */

Test(scales, float16)
{
    uint16_t h[] = {0x3C00, 0x0001, 0x7BFF, 0x3555, 0xC000, 0x0400, 0x03FF, 0x0000, 0x7C00,
                    0x7E00};
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 0), 1.0);
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 1), ldexp(1, -24)); /* min subnormal */
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 2), 65504.0);      /* max */
    /* 0x3555: exponent 13 -> 2^-2, fraction 0x155 = 341: (1024+341)/1024/4 */
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 3), 1365.0 / 4096.0);
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 4), -2.0);
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 5), ldexp(1, -14)); /* min normal */
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 6), 1023 * ldexp(1, -24));
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 7), 0.0);
    cr_assert(isinf(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 8)));
    cr_assert(isnan(qmm_scale_decode(QMM_DTYPE_FLOAT16, h, 9)));
}

Test(scales, bfloat16)
{
    uint16_t h[] = {0x3F80, 0x4049, 0x0001, 0x7F7F, 0xBF00};
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_BFLOAT16, h, 0), 1.0);
    /* 0x4049: exponent 128 -> 2^1, fraction 0x49 = 73: 2*(128+73)/128 = 3.140625 */
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_BFLOAT16, h, 1), 3.140625);
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_BFLOAT16, h, 2), ldexp(1, -133)); /* subnormal */
    /* 0x7F7F: largest finite, (2 - 2^-7) * 2^127 */
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_BFLOAT16, h, 3), (2 - ldexp(1, -7)) * ldexp(1, 127));
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_BFLOAT16, h, 4), -0.5);
}

Test(scales, float32)
{
    float f[] = {0.0066f, 1.5f};
    uint32_t sub = 1; /* 2^-149, the smallest float32 subnormal */
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT, f, 0), (double)0.0066f);
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT, f, 1), 1.5);
    cr_assert_eq(qmm_scale_decode(QMM_DTYPE_FLOAT, &sub, 0), ldexp(1, -149));
}

Test(params, empty_parameter_with_huge_dims)
{
    /* Found by fuzz_matmulinteger: a zero point with a 0 dimension and huge others has no
     * elements, but the product of its other dims overflows int64 (UBSan: signed overflow in
     * the stride computation). It must be judged, not overflow. */
    qmm_tensor a = mk(U8, NULL, 6, 0, 65278, 55774, 57086, 65278, 65053);
    qmm_tensor b = mk(U8, NULL, 2, 65053, 1);
    qmm_geometry g = geom_ok(a, b);
    qmm_tensor zp = mk(U8, NULL, 6, 0, 65278, 55774, 57086, 65278, 1);
    map_ok(zp, QMM_PARAM_A, a, &g);
    qmm_param_map map;
    qmm_status st;
    qmm_tensor bad = mk(U8, NULL, 6, 0, 65278, 55774, 57086, 65278, 65053);
    cr_expect_eq(qmm_param_map_build(&bad, "a_zero_point", QMM_PARAM_A, &a, &g, &map, &st),
                 QMM_INVALID_ARGUMENT, "varies along K: not per-row");
}
