/* tests/test_reference.c — the reference backend: values, validation, explain, open().
 * Every expected value is worked out by hand in the comment next to it.
 * Scales and float16 words are written as host floats/uint16s: these tests assume a
 * little-endian host, as the tensor format does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ops/operator.h"
#include "reference/qmm_reference.h"
#include "tests/tensor_support.h"

#define U8 QMM_DTYPE_UINT8
#define I8 QMM_DTYPE_INT8
#define F32 QMM_DTYPE_FLOAT
#define F16 QMM_DTYPE_FLOAT16
#define BF16 QMM_DTYPE_BFLOAT16
#define I32 QMM_DTYPE_INT32

/* Scalars (rank 0); compound literals live until the end of the enclosing block. */
#define SF(x) mk(F32, (float[]){(x)}, 0)
#define SU8(x) mk(U8, (uint8_t[]){(x)}, 0)
#define SI8(x) mk(I8, (int8_t[]){(x)}, 0)

static qmm_call qlm(qmm_tensor a, qmm_tensor as, qmm_tensor az, qmm_tensor b, qmm_tensor bs,
                    qmm_tensor bz, qmm_tensor ys, qmm_tensor yz, qmm_tensor y, int opset)
{
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_QLINEARMATMUL;
    c.u.qlinearmatmul = (qmm_qlinearmatmul){.a = a, .a_scale = as, .a_zero_point = az, .b = b,
                                            .b_scale = bs, .b_zero_point = bz, .y_scale = ys,
                                            .y_zero_point = yz, .y = y, .opset = opset};
    return c;
}

static qmm_call mmi(qmm_tensor a, qmm_tensor b, qmm_tensor az, qmm_tensor bz, qmm_tensor y)
{
    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_MATMULINTEGER;
    c.u.matmulinteger = (qmm_matmulinteger){.a = a, .b = b, .a_zero_point = az,
                                            .b_zero_point = bz, .y = y};
    return c;
}

static const qmm_tensor ABSENT = {0};

static void compute_ok(qmm_call *c)
{
    qmm_status st;
    qmm_status_code rc = qmm_ref_compute(c, NULL, NULL, &st);
    cr_assert_eq(rc, QMM_OK, "%s", st.message);
    cr_assert_eq(st.code, QMM_OK);
    cr_assert_str_empty(st.message);
}

/* Expects `code` and a message containing `needle` (the input's name and/or the rule). */
static void compute_fails(qmm_call *c, qmm_status_code code, const char *needle)
{
    qmm_status st;
    qmm_status_code rc = qmm_ref_compute(c, NULL, NULL, &st);
    cr_assert_eq(rc, code, "rc %d, message: %s", (int)rc, st.message);
    cr_assert_eq(st.code, code);
    cr_assert(strstr(st.message, needle), "message '%s' lacks '%s'", st.message, needle);
}

static void expect_u8(const uint8_t *got, const uint8_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "element %zu: got %u, want %u", i, got[i], want[i]);
}

static void expect_i8(const int8_t *got, const int8_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "element %zu: got %d, want %d", i, got[i], want[i]);
}

static void expect_i32(const int32_t *got, const int32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "element %zu: got %d, want %d", i, got[i], want[i]);
}

/* ---- published examples ---- */

Test(values, orion_example)
{
    /* row 0: (3-1)*4 + (4-1)*8 + (5-1)*4 = 48; 2*0.25*48/6 = 4; 4 + 10 = 14
     * row 1: (2-1)*4 + (4-1)*8 + (3-1)*4 = 36; 2*0.25*36/6 = 3; 3 + 10 = 13 */
    int8_t a[] = {3, 4, 5, 2, 4, 3}, b[] = {4, 8, 4}, y[2];
    qmm_call c = qlm(mk(I8, a, 2, 2, 3), SF(2), SI8(1), mk(I8, b, 2, 3, 1), SF(0.25f), SI8(0),
                     SF(6), SI8(10), mk(I8, y, 2, 2, 1), 10);
    compute_ok(&c);
    expect_i8(y, (int8_t[]){14, 13}, 2);
}

Test(values, onnx_2d_example)
{
    /* The ONNX operator documentation's uint8 example; its published output. */
    uint8_t a[] = {208, 236, 0, 238, 3, 214, 255, 29};
    uint8_t b[] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
    uint8_t y[6];
    qmm_call c = qlm(mk(U8, a, 2, 2, 4), SF(0.0066f), SU8(113), mk(U8, b, 2, 4, 3),
                     SF(0.00705f), SU8(114), SF(0.0107f), SU8(118), mk(U8, y, 2, 2, 3), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){168, 115, 255, 1, 66, 151}, 6);
}

Test(values, matmulinteger_onnx_example)
{
    /* A - 12 = [[-1,-5,-9],[-2,-6,-10],[-3,-7,-11],[-4,-8,-12]], B = [[1,4],[2,5],[3,6]]:
     * row 0: -1-10-27 = -38, -4-25-54 = -83; row 1: -2-12-30 = -44, -8-30-60 = -98;
     * row 2: -3-14-33 = -50, -12-35-66 = -113; row 3: -4-16-36 = -56, -16-40-72 = -128 */
    uint8_t a[] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0};
    uint8_t b[] = {1, 4, 2, 5, 3, 6};
    int32_t y[8];
    qmm_call c = mmi(mk(U8, a, 2, 4, 3), mk(U8, b, 2, 3, 2), SU8(12), SU8(0),
                     mk(I32, y, 2, 4, 2));
    compute_ok(&c);
    expect_i32(y, (int32_t[]){-38, -83, -44, -98, -50, -113, -56, -128}, 8);
}

Test(values, matmulinteger_absent_zero_points)
{
    /* [[1,2]]·[[3],[4]] = 11 with both zero points 0 by default */
    uint8_t a[] = {1, 2};
    int8_t b[] = {3, 4};
    int32_t y[1];
    qmm_call c = mmi(mk(U8, a, 2, 1, 2), mk(I8, b, 2, 2, 1), ABSENT, ABSENT, mk(I32, y, 2, 1, 1));
    compute_ok(&c);
    cr_assert_eq(y[0], 11);
}

/* ---- rounding: ties to even, zero point after rounding ---- */

/* a = [5,7,-5,-7] (one column), b = [[1]], sa = sb = 1, sy = 2: the exact values are
 * 2.5, 3.5, -2.5, -3.5 and RNE gives 2, 4, -2, -4. */
static void tie_case(int8_t zy, const int8_t *want)
{
    int8_t a[] = {5, 7, -5, -7}, b[] = {1}, y[4];
    qmm_call c = qlm(mk(I8, a, 2, 4, 1), SF(1), SI8(0), mk(I8, b, 2, 1, 1), SF(1), SI8(0),
                     SF(2), SI8(zy), mk(I8, y, 2, 4, 1), 10);
    compute_ok(&c);
    expect_i8(y, want, 4);
}

Test(rounding, ties_to_even_zp0)
{
    tie_case(0, (int8_t[]){2, 4, -2, -4});
}

Test(rounding, ties_odd_zero_point)
{
    /* round first, then add 1: 3, 5, -1, -3. Adding first would round 3.5, 4.5, -1.5, -2.5
     * to 4, 4, -2, -2: every element differs. */
    tie_case(1, (int8_t[]){3, 5, -1, -3});
}

Test(rounding, ties_even_zero_point)
{
    /* +2: 4, 6, 0, -2 (an even zero point cannot tell the two orders apart) */
    tie_case(2, (int8_t[]){4, 6, 0, -2});
}

Test(rounding, near_ties_uint8)
{
    /* sy = 4: acc 9 -> 2.25 -> 2, acc 11 -> 2.75 -> 3, acc 10 -> 2.5 -> 2, acc 14 -> 3.5 -> 4 */
    uint8_t a[] = {9, 11, 10, 14}, b[] = {1}, y[4];
    qmm_call c = qlm(mk(U8, a, 2, 4, 1), SF(1), SU8(0), mk(U8, b, 2, 1, 1), SF(1), SU8(0),
                     SF(4), SU8(0), mk(U8, y, 2, 4, 1), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){2, 3, 2, 4}, 4);
}

/* ---- parameter shapes ---- */

/* a = [[10,20],[30,40]], b = [[1,2],[3,4]], a_scale {1,2}, a_zero_point {0,10}:
 * row 0 (za 0): 10*1+20*3 = 70, 10*2+20*4 = 100; times 1 -> 70, 100
 * row 1 (za 10): 20*1+30*3 = 110, 20*2+30*4 = 160; times 2 -> 220, 320 -> 255.
 * M == K == 2, so this also pins the spec's reading of a 1-D [M] as per-row. */
static void per_row_case(int rank)
{
    uint8_t a[] = {10, 20, 30, 40}, b[] = {1, 2, 3, 4}, y[4];
    float as[] = {1, 2};
    uint8_t az[] = {0, 10};
    qmm_tensor ts = rank == 1 ? mk(F32, as, 1, 2) : mk(F32, as, 2, 2, 1);
    qmm_tensor tz = rank == 1 ? mk(U8, az, 1, 2) : mk(U8, az, 2, 2, 1);
    qmm_call c = qlm(mk(U8, a, 2, 2, 2), ts, tz, mk(U8, b, 2, 2, 2), SF(1), SU8(0), SF(1),
                     SU8(0), mk(U8, y, 2, 2, 2), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){70, 100, 220, 255}, 4);
}

Test(params, per_row_m)
{
    per_row_case(1);
}

Test(params, per_row_m1)
{
    per_row_case(2);
}

/* a = [[1,2],[3,4]], b = [[10,20],[30,40]], b_scale {1,2}, b_zero_point {0,10}:
 * col 0 (zb 0): 1*10+2*30 = 70, 3*10+4*30 = 150
 * col 1 (zb 10): 1*10+2*30 = 70 -> *2 = 140; 3*10+4*30 = 150 -> 300 -> 255 */
static void per_col_case(int rank)
{
    uint8_t a[] = {1, 2, 3, 4}, b[] = {10, 20, 30, 40}, y[4];
    float bs[] = {1, 2};
    uint8_t bz[] = {0, 10};
    qmm_tensor ts = rank == 1 ? mk(F32, bs, 1, 2) : mk(F32, bs, 2, 1, 2);
    qmm_tensor tz = rank == 1 ? mk(U8, bz, 1, 2) : mk(U8, bz, 2, 1, 2);
    qmm_call c = qlm(mk(U8, a, 2, 2, 2), SF(1), SU8(0), mk(U8, b, 2, 2, 2), ts, tz, SF(1),
                     SU8(0), mk(U8, y, 2, 2, 2), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){70, 140, 150, 255}, 4);
}

Test(params, per_column_n)
{
    per_col_case(1);
}

Test(params, per_column_1n)
{
    per_col_case(2);
}

Test(params, batched_parameters)
{
    /* a [2,2,1] = {1,2 | 3,4}, a_scale [2,2,1] = {1,2 | 1,2}, a_zp = {0,0 | 1,1}
     * b [2,1,2] = {5,6 | 7,8}, b_scale [2,1,2] = {1,1 | 2,2}, b_zp = {0,2 | 0,1}
     * batch 0: a-za = 1, 2; b-zb = 5, 4
     *   (0,0) 1*5*1*1 = 5; (0,1) 1*4 = 4; (1,0) 2*5*2 = 20; (1,1) 2*4*2 = 16
     * batch 1: a-za = 2, 3; b-zb = 7, 7
     *   (0,0) 2*7*1*2 = 28; (0,1) 28; (1,0) 3*7*2*2 = 84; (1,1) 84 */
    uint8_t a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, y[8];
    float as[] = {1, 2, 1, 2}, bs[] = {1, 1, 2, 2};
    uint8_t az[] = {0, 0, 1, 1}, bz[] = {0, 2, 0, 1};
    qmm_call c = qlm(mk(U8, a, 3, 2, 2, 1), mk(F32, as, 3, 2, 2, 1), mk(U8, az, 3, 2, 2, 1),
                     mk(U8, b, 3, 2, 1, 2), mk(F32, bs, 3, 2, 1, 2), mk(U8, bz, 3, 2, 1, 2),
                     SF(1), SU8(0), mk(U8, y, 3, 2, 2, 2), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){5, 4, 20, 16, 28, 28, 84, 84}, 8);
}

Test(params, y_params_mn)
{
    /* a = [[1],[2]], b = [[3,4]]: acc = [[3,4],[6,8]]
     * y_scale [2,2] = {1,2,3,4}, y_zp = {0,1,2,3}: 3/1+0 = 3, 4/2+1 = 3, 6/3+2 = 4,
     * 8/4+3 = 5 */
    uint8_t a[] = {1, 2}, b[] = {3, 4}, y[4];
    float ys[] = {1, 2, 3, 4};
    uint8_t yz[] = {0, 1, 2, 3};
    qmm_call c = qlm(mk(U8, a, 2, 2, 1), SF(1), SU8(0), mk(U8, b, 2, 1, 2), SF(1), SU8(0),
                     mk(F32, ys, 2, 2, 2), mk(U8, yz, 2, 2, 2), mk(U8, y, 2, 2, 2), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){3, 3, 4, 5}, 4);
}

Test(params, y_params_n)
{
    /* same acc; y_scale [2] = {1,2}, y_zp [2] = {10,20}: 3+10 = 13, 2+20 = 22, 6+10 = 16,
     * 4+20 = 24 */
    uint8_t a[] = {1, 2}, b[] = {3, 4}, y[4];
    float ys[] = {1, 2};
    uint8_t yz[] = {10, 20};
    qmm_call c = qlm(mk(U8, a, 2, 2, 1), SF(1), SU8(0), mk(U8, b, 2, 1, 2), SF(1), SU8(0),
                     mk(F32, ys, 1, 2), mk(U8, yz, 1, 2), mk(U8, y, 2, 2, 2), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){13, 22, 16, 24}, 4);
}

Test(params, scalar_and_one_element_shapes_mix)
{
    /* [] scale with a [1] zero point count as the same shape: Orion's example again */
    int8_t a[] = {3, 4, 5, 2, 4, 3}, b[] = {4, 8, 4}, y[2];
    qmm_call c = qlm(mk(I8, a, 2, 2, 3), SF(2), mk(I8, (int8_t[]){1}, 1, 1), mk(I8, b, 2, 3, 1),
                     mk(F32, (float[]){0.25f}, 1, 1), SI8(0), SF(6), SI8(10),
                     mk(I8, y, 2, 2, 1), 10);
    compute_ok(&c);
    expect_i8(y, (int8_t[]){14, 13}, 2);
}

/* ---- scale types ---- */

Test(scales, float16_subnormal_and_max)
{
    /* sa = 0x0001 = 2^-24, sb = 0x7BFF = 65504, sy = 0x3C00 = 1; acc = 255*255 = 65025:
     * 65504*65025/2^24 = 133106175/524288 = 253.8798... -> 254 */
    uint8_t a[] = {255}, b[] = {255}, y[1];
    uint16_t sa = 0x0001, sb = 0x7BFF, sy = 0x3C00;
    qmm_call c = qlm(mk(U8, a, 2, 1, 1), mk(F16, &sa, 0), SU8(0), mk(U8, b, 2, 1, 1),
                     mk(F16, &sb, 0), SU8(0), mk(F16, &sy, 0), SU8(0), mk(U8, y, 2, 1, 1), 21);
    compute_ok(&c);
    cr_assert_eq(y[0], 254);
}

Test(scales, bfloat16)
{
    /* sa = 0x3F80 = 1, sb = 0x4049 = 3.140625, sy = 0x4000 = 2; acc = 4:
     * 3.140625*4/2 = 6.28125 -> 6; plus zy 100 = 106 */
    uint8_t a[] = {2}, b[] = {2}, y[1];
    uint16_t sa = 0x3F80, sb = 0x4049, sy = 0x4000;
    qmm_call c = qlm(mk(U8, a, 2, 1, 1), mk(BF16, &sa, 0), SU8(0), mk(U8, b, 2, 1, 1),
                     mk(BF16, &sb, 0), SU8(0), mk(BF16, &sy, 0), SU8(100), mk(U8, y, 2, 1, 1),
                     21);
    compute_ok(&c);
    cr_assert_eq(y[0], 106);
}

Test(scales, float32_subnormal)
{
    /* sa = 2^-149 (bits 0x00000001), sb = 2^100 (0x71800000), sy = 2^-48 (0x27800000):
     * sa*sb/sy = 2^-1; acc 5 -> 2.5 -> 2; acc 7 -> 3.5 -> 4 */
    uint8_t a[] = {5, 7}, b[] = {1}, y[2];
    uint32_t sa = 0x00000001u, sb = 0x71800000u, sy = 0x27800000u;
    qmm_call c = qlm(mk(U8, a, 2, 2, 1), mk(F32, &sa, 0), SU8(0), mk(U8, b, 2, 1, 1),
                     mk(F32, &sb, 0), SU8(0), mk(F32, &sy, 0), SU8(0), mk(U8, y, 2, 2, 1), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){2, 4}, 2);
}

/* ---- shapes ---- */

Test(shapes, k_zero)
{
    /* K = 0: every sum is 0, so every output is clamp(0 + zy) = 7 */
    uint8_t y[6];
    memset(y, 0xAA, sizeof y);
    qmm_call c = qlm(mk(U8, NULL, 2, 2, 0), SF(1), SU8(3), mk(U8, NULL, 2, 0, 3), SF(1), SU8(5),
                     SF(1), SU8(7), mk(U8, y, 2, 2, 3), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){7, 7, 7, 7, 7, 7}, 6);
}

Test(shapes, one_d_both)
{
    /* [1,2,3]·[4,5,6] = 4+10+18 = 32, y shape [] */
    uint8_t a[] = {1, 2, 3}, b[] = {4, 5, 6}, y[1];
    qmm_call c = qlm(mk(U8, a, 1, 3), SF(1), SU8(0), mk(U8, b, 1, 3), SF(1), SU8(0), SF(1),
                     SU8(0), mk(U8, y, 0), 10);
    compute_ok(&c);
    cr_assert_eq(y[0], 32);
}

Test(shapes, one_d_a)
{
    /* [1,2]·[[1,2,3],[4,5,6]] = [1+8, 2+10, 3+12] = [9,12,15], y shape [3] */
    uint8_t a[] = {1, 2}, b[] = {1, 2, 3, 4, 5, 6}, y[3];
    qmm_call c = qlm(mk(U8, a, 1, 2), SF(1), SU8(0), mk(U8, b, 2, 2, 3), SF(1), SU8(0), SF(1),
                     SU8(0), mk(U8, y, 1, 3), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){9, 12, 15}, 3);
}

Test(shapes, one_d_b)
{
    /* [[1,2],[3,4]]·[5,6] = [5+12, 15+24] = [17,39], y shape [2] */
    uint8_t a[] = {1, 2, 3, 4}, b[] = {5, 6}, y[2];
    qmm_call c = qlm(mk(U8, a, 2, 2, 2), SF(1), SU8(0), mk(U8, b, 1, 2), SF(1), SU8(0), SF(1),
                     SU8(0), mk(U8, y, 1, 2), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){17, 39}, 2);
}

Test(shapes, empty_outputs)
{
    /* M = 0, N = 0 and batch 0 are valid and write nothing; NULL data is fine when empty */
    uint8_t a[6] = {0}, b[12] = {0};
    qmm_call c = qlm(mk(U8, NULL, 2, 0, 3), SF(1), SU8(0), mk(U8, b, 2, 3, 2), SF(1), SU8(0),
                     SF(1), SU8(0), mk(U8, NULL, 2, 0, 2), 10);
    compute_ok(&c);
    c = qlm(mk(U8, a, 2, 2, 3), SF(1), SU8(0), mk(U8, NULL, 2, 3, 0), SF(1), SU8(0), SF(1),
            SU8(0), mk(U8, NULL, 2, 2, 0), 10);
    compute_ok(&c);
    c = qlm(mk(U8, NULL, 3, 0, 2, 3), SF(1), SU8(0), mk(U8, b, 2, 3, 4), SF(1), SU8(0), SF(1),
            SU8(0), mk(U8, NULL, 3, 0, 2, 4), 10);
    compute_ok(&c);
}

Test(shapes, batch_broadcast_values)
{
    /* a [2,1,1,1] = {1,2}, b [3,1,1] = {10,20,30}: y [2,3,1,1] = a[c0]*b[c1] =
     * {10,20,30, 20,40,60} */
    uint8_t a[] = {1, 2}, b[] = {10, 20, 30};
    int32_t y[6];
    qmm_call c = mmi(mk(U8, a, 4, 2, 1, 1, 1), mk(U8, b, 3, 3, 1, 1), ABSENT, ABSENT,
                     mk(I32, y, 4, 2, 3, 1, 1));
    compute_ok(&c);
    expect_i32(y, (int32_t[]){10, 20, 30, 20, 40, 60}, 6);
}

Test(shapes, batch_broadcast_qlinear)
{
    /* a [2,1,M=1,K=2] = {1,2 | 3,4}, b [3,K=2,N=1] = {1,1 | 1,0 | 0,1}:
     * y[c0][c1] = a[c0]·b[c1]: c0=0: 3, 1, 2; c0=1: 7, 3, 4 */
    uint8_t a[] = {1, 2, 3, 4}, b[] = {1, 1, 1, 0, 0, 1}, y[6];
    qmm_call c = qlm(mk(U8, a, 4, 2, 1, 1, 2), SF(1), SU8(0), mk(U8, b, 3, 3, 2, 1), SF(1),
                     SU8(0), SF(1), SU8(0), mk(U8, y, 4, 2, 3, 1, 1), 10);
    compute_ok(&c);
    expect_u8(y, (uint8_t[]){3, 1, 2, 7, 3, 4}, 6);
}

/* ---- the walk over y: empty outputs, parts, the stop flag ---- */

/* A [65536,65536,65536,0,2] · B [2,2] has no element, and neither has y: no profile loops
 * over its 2^48 empty batches (the reference used to, for hours). */
Test(walk, an_empty_output_of_2_48_batches_costs_nothing, .timeout = 30)
{
    uint8_t b[4] = {1, 2, 3, 4};
    int8_t bs[4] = {1, 2, 3, 4};
    for (int p = 0; p < qmm_profile_count(); p++) {
        const char *name = qmm_profile_name((qmm_profile)p);
        qmm_call c = mmi(mk(U8, NULL, 5, 65536, 65536, 65536, 0, 2), mk(U8, b, 2, 2, 2), ABSENT,
                         ABSENT, mk(I32, NULL, 5, 65536, 65536, 65536, 0, 2));
        qmm_status st;
        qmm_status_code rc = qmm_ref_compute_profile(&c, (qmm_profile)p, &st);
        cr_expect(rc == QMM_OK || rc == QMM_UNSUPPORTED, "%s: %s", name, st.message);
        /* int8 QLinearMatMul: every profile defines it, orion-fp16x16 included */
        c = qlm(mk(I8, NULL, 5, 65536, 65536, 65536, 0, 2), SF(1), SI8(0), mk(I8, bs, 2, 2, 2),
                SF(1), SI8(0), SF(1), SI8(0), mk(I8, NULL, 5, 65536, 65536, 65536, 0, 2), 10);
        rc = qmm_ref_compute_profile(&c, (qmm_profile)p, &st);
        cr_expect(rc == QMM_OK || rc == QMM_UNSUPPORTED, "%s: %s", name, st.message);
    }
}

/* Every part of y, under every profile that computes the call, holds what the whole
 * computation writes there; parts of 1, 7 and all elements. */
static void expect_parts_give_the_whole(qmm_call c)
{
    qmm_tensor *y = qmm_call_output(&c);
    int64_t n = qmm_tensor_numel(y);
    size_t es = qmm_dtype_size(y->dtype);
    unsigned char whole[4096], wrapped[4096], part[4096], part_w[4096];
    cr_assert((size_t)n * es <= sizeof whole);
    for (int p = 0; p < qmm_profile_count(); p++) {
        const char *name = qmm_profile_name((qmm_profile)p);
        qmm_status st;
        y->data = whole;
        qmm_tensor yw = *y;
        yw.data = wrapped;
        int spec = p == QMM_PROFILE_SPEC, overflow = 0;
        qmm_status_code rc = spec ? qmm_ref_compute(&c, &yw, &overflow, &st)
                                  : qmm_ref_compute_profile(&c, (qmm_profile)p, &st);
        if (rc != QMM_OK)
            continue; /* a profile that does not compute it: nothing to split */
        const int64_t sizes[] = {1, 7, n};
        for (int s = 0; s < 3; s++)
            for (int64_t first = 0; first < n; first += sizes[s]) {
                qmm_ref_part pt = {first, n - first < sizes[s] ? n - first : sizes[s]};
                y->data = part;
                yw.data = part_w;
                int po = 0;
                rc = qmm_ref_compute_part(&c, (qmm_profile)p, &pt, spec ? &yw : NULL, &po, &st);
                cr_assert_eq(rc, QMM_OK, "%s: part [%lld, +%lld): %s", name, (long long)first,
                             (long long)pt.count, st.message);
                cr_expect_eq(memcmp(part, whole + first * (int64_t)es, (size_t)pt.count * es), 0,
                             "%s: part [%lld, +%lld) differs", name, (long long)first,
                             (long long)pt.count);
                if (spec)
                    cr_expect_eq(memcmp(part_w, wrapped + first * (int64_t)es,
                                        (size_t)pt.count * es), 0, "spec: wrapped part differs");
            }
    }
    /* a part past y's end is refused */
    qmm_ref_part past = {n - 1, 2};
    qmm_status st;
    y->data = part;
    cr_expect_eq(qmm_ref_compute_part(&c, QMM_PROFILE_SPEC, &past, NULL, NULL, &st),
                 QMM_INVALID_ARGUMENT, "%s", st.message);
    cr_expect_eq(qmm_ref_part_unit(&c), 1);
}

Test(walk, parts_give_the_whole)
{
    /* batched and broadcast: a [2,1,3,4], b [3,4,5] -> y [2,3,3,5], 90 elements */
    uint8_t a[24], b[60];
    int8_t as[24], bs[60];
    for (int i = 0; i < 24; i++) {
        a[i] = (uint8_t)(i * 7 % 13);
        as[i] = (int8_t)(i * 5 % 11 - 5);
    }
    for (int i = 0; i < 60; i++) {
        b[i] = (uint8_t)(i * 3 % 17);
        bs[i] = (int8_t)(i * 3 % 9 - 4);
    }
    unsigned char ybuf[90 * 4];
    expect_parts_give_the_whole(qlm(mk(U8, a, 4, 2, 1, 3, 4), SF(0.5f), SU8(3),
                                    mk(U8, b, 3, 3, 4, 5), SF(0.25f), SU8(2), SF(3.0f), SU8(100),
                                    mk(U8, ybuf, 4, 2, 3, 3, 5), 10));
    expect_parts_give_the_whole(qlm(mk(I8, as, 4, 2, 1, 3, 4), SF(0.5f), SI8(1),
                                    mk(I8, bs, 3, 3, 4, 5), SF(0.25f), SI8(0), SF(2.0f), SI8(3),
                                    mk(I8, ybuf, 4, 2, 3, 3, 5), 10));
    expect_parts_give_the_whole(mmi(mk(I8, as, 4, 2, 1, 3, 4), mk(I8, bs, 3, 3, 4, 5), SI8(1),
                                    SI8(-2), mk(I32, ybuf, 4, 2, 3, 3, 5)));
}

/* Once the stop flag is raised, a computation stops and says so; lowered, it runs. */
Test(walk, the_stop_flag_stops_a_computation)
{
    static volatile sig_atomic_t stop = 1;
    uint8_t a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    int32_t y[4];
    qmm_call c = mmi(mk(U8, a, 2, 2, 2), mk(U8, b, 2, 2, 2), ABSENT, ABSENT, mk(I32, y, 2, 2, 2));
    qmm_ref_set_stop_flag(&stop);
    compute_fails(&c, QMM_INTERNAL, "interrupted");
    qmm_status st;
    cr_expect_eq(qmm_ref_compute_profile(&c, QMM_PROFILE_ONNX_REF, &st), QMM_INTERNAL);
    stop = 0;
    compute_ok(&c);
    qmm_ref_set_stop_flag(NULL);
    expect_i32(y, (int32_t[]){19, 22, 43, 50}, 4);
}

/* Where an int32 accumulator overflows, spec (under the default accumulation) alone has a second
 * accepted result: every other profile, spec+ACC included, wraps as it wraps, so a part asks for
 * the wrapped result under spec only (INVALID_ARGUMENT elsewhere) and reports an overflow under
 * spec only, MatMulInteger under onnx-ref (computed as spec computes it) included. */
Test(walk, only_spec_has_a_second_accepted_result)
{
    const int k = 33026; /* 255 * -255 per term: the exact sum is below INT32_MIN */
    uint8_t *a = malloc(k);
    int8_t *b = malloc(k);
    cr_assert(a && b);
    memset(a, 255, k);
    memset(b, 0x80, k);
    uint32_t sy = 0x4B800000u; /* 2^24 */
    int8_t y, yw;
    int32_t y32, yw32;
    qmm_call calls[2] = {
        qlm(mk(U8, a, 2, 1, k), SF(1), SU8(0), mk(I8, b, 2, k, 1), SF(1), SI8(127),
            mk(F32, &sy, 0), SI8(0), mk(I8, &y, 2, 1, 1), 10),
        mmi(mk(U8, a, 2, 1, k), mk(I8, b, 2, k, 1), SU8(0), SI8(127), mk(I32, &y32, 2, 1, 1)),
    };
    qmm_tensor wrapped[2] = {mk(I8, &yw, 2, 1, 1), mk(I32, &yw32, 2, 1, 1)};
    qmm_ref_part whole = {0, 1};
    int spec_plus = 0;
    for (int c = 0; c < 2; c++)
        for (int p = 0; p < qmm_profile_count(); p++) {
            const char *name = qmm_profile_name((qmm_profile)p);
            spec_plus += c == 0 && strncmp(name, "spec+", 5) == 0;
            qmm_status st;
            int any = -1;
            qmm_status_code rc = qmm_ref_compute_part(&calls[c], (qmm_profile)p, &whole,
                                                      &wrapped[c], &any, &st);
            if (p == QMM_PROFILE_SPEC) {
                cr_expect_eq(rc, QMM_OK, "%s", st.message);
                cr_expect_eq(any, 1, "spec: the overflow is reported");
                continue;
            }
            cr_expect_eq(rc, QMM_INVALID_ARGUMENT, "%s: a wrapped result was given (%s)", name,
                         st.message);
            any = -1;
            rc = qmm_ref_compute_part(&calls[c], (qmm_profile)p, &whole, NULL, &any, &st);
            cr_expect_eq(any, 0, "%s: an overflow reported (%s)", name, st.message);
        }
    cr_expect_gt(spec_plus, 0, "no spec+ACC profile was tried");
    cr_expect_eq(yw, 127); /* spec's wrapped QLinearMatMul result */
    free(a);
    free(b);
}

/* ---- saturation ---- */

Test(saturation, both_ends)
{
    /* a = [127,-128] (one column), b = [[127]]: acc = 16129, -16256; sy = 1 */
    int8_t a[] = {127, -128}, b[] = {127}, yi[2];
    uint8_t yu[2];
    qmm_call c = qlm(mk(I8, a, 2, 2, 1), SF(1), SI8(0), mk(I8, b, 2, 1, 1), SF(1), SI8(0),
                     SF(1), SI8(0), mk(I8, yi, 2, 2, 1), 10);
    compute_ok(&c);
    expect_i8(yi, (int8_t[]){127, -128}, 2);
    c = qlm(mk(I8, a, 2, 2, 1), SF(1), SI8(0), mk(I8, b, 2, 1, 1), SF(1), SI8(0), SF(1), SU8(0),
            mk(U8, yu, 2, 2, 1), 10);
    compute_ok(&c);
    expect_u8(yu, (uint8_t[]){255, 0}, 2);
}

Test(saturation, zero_point_pushes_over)
{
    /* sy = 1000: acc 16129 -> 16.129 -> 16; zy 120 -> 136 -> 127 (int8);
     * acc -16256 -> -16.256 -> -16; zy -120 -> -136 -> -128 */
    int8_t a[] = {127, -128}, b[] = {127}, y[2];
    int8_t yz[] = {120, -120};
    qmm_call c = qlm(mk(I8, a, 2, 2, 1), SF(1), SI8(0), mk(I8, b, 2, 1, 1), SF(1), SI8(0),
                     mk(F32, (float[]){1000, 1000}, 2, 2, 1), mk(I8, yz, 2, 2, 1),
                     mk(I8, y, 2, 2, 1), 10);
    compute_ok(&c);
    expect_i8(y, (int8_t[]){127, -128}, 2);
}

Test(saturation, huge_scale_ratio)
{
    /* sa = sb = 3.4e38-ish (0x7F7FFFFF), sy = 2^-149: the value is ~10^121; must saturate */
    uint8_t a[] = {1}, b[] = {1}, y[1];
    uint32_t big = 0x7F7FFFFFu, tiny = 1u;
    qmm_call c = qlm(mk(U8, a, 2, 1, 1), mk(F32, &big, 0), SU8(0), mk(U8, b, 2, 1, 1),
                     mk(F32, &big, 0), SU8(0), mk(F32, &tiny, 0), SU8(0), mk(U8, y, 2, 1, 1),
                     10);
    compute_ok(&c);
    cr_assert_eq(y[0], 255);
}

/* ---- int32 accumulator overflow ---- */

/* a uint8 all 255 (za 0), b int8 all -128 (zb 127): every term is 255 * (-255) = -65025. */
static void overflow_case(int k, int8_t *y, int8_t *yw, int *any)
{
    uint8_t *a = malloc((size_t)k);
    int8_t *b = malloc((size_t)k);
    cr_assert(a && b);
    memset(a, 255, (size_t)k);
    memset(b, 0x80, (size_t)k);
    /* sy = 2^24 (float bits 0x4B800000) */
    uint32_t sy = 0x4B800000u;
    qmm_call c = qlm(mk(U8, a, 2, 1, k), SF(1), SU8(0), mk(I8, b, 2, k, 1), SF(1), SI8(127),
                     mk(F32, &sy, 0), SI8(0), mk(I8, y, 2, 1, 1), 10);
    qmm_tensor w = mk(I8, yw, 2, 1, 1);
    qmm_status st;
    cr_assert_eq(qmm_ref_compute(&c, &w, any, &st), QMM_OK, "%s", st.message);
    qmm_ref_element e;
    cr_assert_eq(qmm_ref_explain(&c, 0, &e, &st), QMM_OK, "%s", st.message);
    cr_assert_eq(e.acc, -65025LL * k);
    cr_assert_eq(e.overflow, *any);
    cr_assert_eq(e.expected, *y);
    cr_assert_eq(e.wrapped, *yw);
    free(a);
    free(b);
}

Test(overflow, k33025_fits_int32)
{
    /* acc = -65025*33025 = -2147450625 >= INT32_MIN: no overflow.
     * -2147450625 / 2^24 = -127.998... -> -128; the wrapped result is the same */
    int8_t y = 0, yw = 0;
    int any = -1;
    overflow_case(33025, &y, &yw, &any);
    cr_assert_eq(any, 0);
    cr_assert_eq(y, -128);
    cr_assert_eq(yw, -128);
}

Test(overflow, k33026_wraps)
{
    /* acc = -65025*33026 = -2147515650 < INT32_MIN = -2147483648: overflow.
     * exact: -2147515650 / 2^24 = -128.0019... -> -128
     * wrapped: -2147515650 + 2^32 = 2147451646; / 2^24 = 127.998... -> 128 -> 127 */
    int8_t y = 0, yw = 0;
    int any = -1;
    overflow_case(33026, &y, &yw, &any);
    cr_assert_eq(any, 1);
    cr_assert_eq(y, -128);
    cr_assert_eq(yw, 127);
}

Test(overflow, matmulinteger_wraps)
{
    /* exact -2147515650 wraps to -2147515650 + 2^32 = 2147451646; K = 33025 gives
     * -2147450625 unchanged */
    const int k = 33026;
    uint8_t *a = malloc(k);
    int8_t *b = malloc(k);
    cr_assert(a && b);
    memset(a, 255, k);
    memset(b, 0x80, k);
    int32_t y[1], yw[1];
    int any = 0;
    qmm_call c = mmi(mk(U8, a, 2, 1, k), mk(I8, b, 2, k, 1), SU8(0), SI8(127),
                     mk(I32, y, 2, 1, 1));
    qmm_tensor w = mk(I32, yw, 2, 1, 1);
    qmm_status st;
    cr_assert_eq(qmm_ref_compute(&c, &w, &any, &st), QMM_OK, "%s", st.message);
    cr_assert_eq(y[0], 2147451646);
    cr_assert_eq(yw[0], 2147451646);
    qmm_ref_element e;
    cr_assert_eq(qmm_ref_explain(&c, 0, &e, &st), QMM_OK);
    cr_assert_eq(e.acc, -2147515650LL);
    cr_assert_eq(e.overflow, 1);
    cr_assert_eq(e.expected, 2147451646);
    cr_assert_str_empty(e.scaled);

    c.u.matmulinteger.a.dims[1] = k - 1;
    c.u.matmulinteger.b.dims[0] = k - 1;
    cr_assert_eq(qmm_ref_compute(&c, NULL, NULL, &st), QMM_OK, "%s", st.message);
    cr_assert_eq(y[0], -2147450625);
    free(a);
    free(b);
}

/* ---- invalid input ---- */

/* A valid 2x3 · 3x2 uint8 call whose pieces each test breaks one at a time. */
typedef struct base {
    uint8_t a[6], b[6], y[4];
    float one;
    uint8_t zero;
} base;

static qmm_call base_call(base *s)
{
    memset(s, 1, sizeof *s);
    s->one = 1;
    s->zero = 0;
    return qlm(mk(U8, s->a, 2, 2, 3), mk(F32, &s->one, 0), mk(U8, &s->zero, 0),
               mk(U8, s->b, 2, 3, 2), mk(F32, &s->one, 0), mk(U8, &s->zero, 0),
               mk(F32, &s->one, 0), mk(U8, &s->zero, 0), mk(U8, s->y, 2, 2, 2), 10);
}

Test(invalid, base_is_valid)
{
    base s;
    qmm_call c = base_call(&s);
    compute_ok(&c);
    expect_u8(s.y, (uint8_t[]){3, 3, 3, 3}, 4);
}

Test(invalid, rank0)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.a.rank = 0;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a: rank 0");
}

Test(invalid, k_mismatch)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.b.dims[0] = 2;
    c.u.qlinearmatmul.b.dims[1] = 3; /* b [2,3] */
    c.u.qlinearmatmul.y.dims[1] = 3;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b: K mismatch");
}

Test(invalid, batch_does_not_broadcast)
{
    uint8_t a[12] = {0}, b[18] = {0}, y[24];
    qmm_call c = qlm(mk(U8, a, 3, 2, 2, 3), SF(1), SU8(0), mk(U8, b, 3, 3, 3, 2), SF(1), SU8(0),
                     SF(1), SU8(0), mk(U8, y, 3, 3, 2, 2), 10);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "batch dims do not broadcast");
}

Test(invalid, zero_point_type)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.a_zero_point.dtype = I8;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_zero_point: dtype int8 differs from a's uint8");
    c = base_call(&s);
    c.u.qlinearmatmul.b_zero_point.dtype = I8;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b_zero_point");
    c = base_call(&s);
    c.u.qlinearmatmul.y.dtype = I8; /* y must be y_zero_point's uint8 */
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y: dtype");
}

Test(invalid, parameter_shape)
{
    base s;
    float f[6] = {1, 1, 1, 1, 1, 1};
    uint8_t z[6] = {0};
    qmm_call c = base_call(&s);
    /* b [3,2]: a [2,3] parameter varies along K */
    c.u.qlinearmatmul.b_scale = mk(F32, f, 2, 2, 3);
    c.u.qlinearmatmul.b_zero_point = mk(U8, z, 2, 2, 3);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b_scale: shape [2,3] is not per-tensor");
    c = base_call(&s);
    c.u.qlinearmatmul.a_scale = mk(F32, f, 1, 3); /* [K] for a [2,3] */
    c.u.qlinearmatmul.a_zero_point = mk(U8, z, 1, 3);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_scale");
    c = base_call(&s);
    c.u.qlinearmatmul.y_scale = mk(F32, f, 1, 3); /* [3] vs y [2,2] */
    c.u.qlinearmatmul.y_zero_point = mk(U8, z, 1, 3);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y_scale");
    c = base_call(&s);
    c.u.qlinearmatmul.b_zero_point = mk(U8, z, 2, 3, 1); /* scale fine, zero point not */
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b_zero_point");
}

Test(invalid, scale_and_zero_point_shapes_differ)
{
    base s;
    float f[2] = {1, 1};
    uint8_t z[2] = {0};
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.a_scale = mk(F32, f, 1, 2);
    c.u.qlinearmatmul.a_zero_point = mk(U8, z, 2, 2, 1);
    compute_fails(&c, QMM_INVALID_ARGUMENT,
                  "a_scale and a_zero_point: shapes differ ([2] vs [2,1])");
    /* [1,1] and [] are not the same shape (only [] and [1] are) */
    c = base_call(&s);
    c.u.qlinearmatmul.y_zero_point = mk(U8, z, 2, 1, 1);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y_scale and y_zero_point");
}

static void bad_scale(float v, const char *needle)
{
    base s;
    qmm_call c = base_call(&s);
    float sc[2] = {1, v};
    uint8_t z[2] = {0};
    c.u.qlinearmatmul.a_scale = mk(F32, sc, 1, 2);
    c.u.qlinearmatmul.a_zero_point = mk(U8, z, 1, 2);
    compute_fails(&c, QMM_INVALID_ARGUMENT, needle);
}

Test(invalid, scale_values)
{
    bad_scale(0.0f, "a_scale[1]: must be finite and > 0 (got 0)");
    bad_scale(-0.0f, "a_scale[1]");
    bad_scale(-1.0f, "a_scale[1]: must be finite and > 0 (got -1)");
    bad_scale(NAN, "a_scale[1]");
    bad_scale(INFINITY, "a_scale[1]");
    base s;
    qmm_call c = base_call(&s);
    float neg = -1;
    c.u.qlinearmatmul.y_scale = mk(F32, &neg, 0);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y_scale[0]: must be finite and > 0 (got -1)");
}

Test(invalid, unsupported_type_codes)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.a.dtype = QMM_DTYPE_INT64;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a: unsupported dtype 7 (int64)");
    c = base_call(&s);
    c.u.qlinearmatmul.b_scale.dtype = QMM_DTYPE_DOUBLE;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b_scale");
    c = base_call(&s);
    c.u.qlinearmatmul.y_zero_point.dtype = QMM_DTYPE_INT32;
    c.u.qlinearmatmul.y.dtype = QMM_DTYPE_INT32;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y_zero_point");
    c = base_call(&s);
    c.u.qlinearmatmul.a_scale.dtype = QMM_DTYPE_UNDEFINED; /* every input is required */
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_scale");
}

Test(invalid, float16_scale_at_opset10)
{
    base s;
    qmm_call c = base_call(&s);
    uint16_t h = 0x3C00;
    c.u.qlinearmatmul.a_scale = mk(F16, &h, 0);
    c.u.qlinearmatmul.b_scale = mk(F16, &h, 0);
    c.u.qlinearmatmul.y_scale = mk(F16, &h, 0);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_scale");
    c.u.qlinearmatmul.opset = 13; /* 11..20 follow opset 10's rules */
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_scale");
    c.u.qlinearmatmul.opset = 21;
    compute_ok(&c);
    expect_u8(s.y, (uint8_t[]){3, 3, 3, 3}, 4);
}

Test(invalid, mixed_scale_types)
{
    base s;
    qmm_call c = base_call(&s);
    uint16_t h = 0x3C00;
    c.u.qlinearmatmul.opset = 21;
    c.u.qlinearmatmul.y_scale = mk(BF16, &h, 0);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y_scale");
}

Test(invalid, opset)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.opset = 9;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "opset 9");
}

Test(invalid, float8)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.a.dtype = QMM_DTYPE_FLOAT8E4M3FN;
    c.u.qlinearmatmul.a_zero_point.dtype = QMM_DTYPE_FLOAT8E4M3FN;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a:"); /* opset 10 */
    /* opset 21 computes it: a's codes 0x01 are float8e4m3fn's 2^-9, so each element is
     * RNE(3 * 2^-9) = 0 (docs/semantics.md §2.6; tests/test_float8.c has the rest) */
    c.u.qlinearmatmul.opset = 21;
    compute_ok(&c);
    expect_u8(s.y, (uint8_t[]){0, 0, 0, 0}, 4);
    /* a NaN code is invalid, named with its index */
    s.a[4] = 0x7f;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a[4]: float8e4m3fn code 0x7f is NaN");
    s.a[4] = 0x01;
    c.u.qlinearmatmul.b.dims[0] = 4;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "K mismatch");
}

Test(invalid, output_shape_and_data)
{
    base s;
    qmm_call c = base_call(&s);
    c.u.qlinearmatmul.y.dims[1] = 3;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y: shape [2,3] differs from the expected [2,2]");
    c = base_call(&s);
    c.u.qlinearmatmul.y.rank = 1;
    c.u.qlinearmatmul.y.dims[0] = 4;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y: shape [4]");
    c = base_call(&s);
    c.u.qlinearmatmul.a.data = NULL;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a: data is NULL");
    c = base_call(&s);
    c.u.qlinearmatmul.y.data = NULL;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y: data is NULL");
    c = base_call(&s);
    c.u.qlinearmatmul.b_scale.data = NULL;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b_scale: data is NULL");
}

Test(invalid, matmulinteger)
{
    uint8_t a[6] = {0}, b[6] = {0}, z[3] = {0};
    int32_t y[4];
    qmm_call c = mmi(mk(U8, a, 2, 2, 3), mk(U8, b, 2, 3, 2), ABSENT, ABSENT, mk(I32, y, 2, 2, 2));
    compute_ok(&c);
    c.u.matmulinteger.y.dtype = U8;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "y: dtype");
    c.u.matmulinteger.y.dtype = I32;
    c.u.matmulinteger.a_zero_point = SI8(0);
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_zero_point: dtype int8 differs from a's uint8");
    c.u.matmulinteger.a_zero_point = mk(U8, z, 1, 3); /* [K] is not per-row */
    compute_fails(&c, QMM_INVALID_ARGUMENT, "a_zero_point: shape [3]");
    c.u.matmulinteger.a_zero_point = ABSENT;
    c.u.matmulinteger.b_zero_point = mk(U8, z, 2, 3, 1); /* [K,1] is not per-column */
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b_zero_point");
    c.u.matmulinteger.b_zero_point = ABSENT;
    c.u.matmulinteger.b.dtype = QMM_DTYPE_INT16;
    compute_fails(&c, QMM_INVALID_ARGUMENT, "b: unsupported dtype 5 (int16)");
}

Test(invalid, matmulinteger_per_row_zero_points)
{
    /* a = [[5,6],[7,8]] with za [2] = {5,7} -> rows [0,1],[0,1]; b = I (zb [1,2] = {0,0}):
     * y = [[0,1],[0,1]] */
    uint8_t a[] = {5, 6, 7, 8}, b[] = {1, 0, 0, 1}, za[] = {5, 7}, zb[] = {0, 0};
    int32_t y[4];
    qmm_call c = mmi(mk(U8, a, 2, 2, 2), mk(U8, b, 2, 2, 2), mk(U8, za, 1, 2),
                     mk(U8, zb, 2, 1, 2), mk(I32, y, 2, 2, 2));
    compute_ok(&c);
    expect_i32(y, (int32_t[]){0, 1, 0, 1}, 4);
}

/* ---- explain ---- */

static qmm_ref_element explain_one(uint8_t av, float sa, float sy, int64_t index)
{
    static const uint8_t b[] = {1};
    uint8_t a[] = {av, av};
    uint8_t y[2];
    qmm_call c = qlm(mk(U8, a, 2, 2, 1), mk(F32, &sa, 0), SU8(0), mk(U8, (void *)b, 2, 1, 1),
                     SF(1), SU8(0), mk(F32, &sy, 0), SU8(0), mk(U8, y, 2, 2, 1), 10);
    qmm_ref_element e;
    qmm_status st;
    cr_assert_eq(qmm_ref_explain(&c, index, &e, &st), QMM_OK, "%s", st.message);
    return e;
}

Test(explain, terminating)
{
    /* 7/2 = 3.5 exactly; RNE -> 4 */
    qmm_ref_element e = explain_one(7, 1, 2, 1);
    cr_assert_eq(e.acc, 7);
    cr_assert_eq(e.overflow, 0);
    cr_assert_eq(e.expected, 4);
    cr_assert_eq(e.wrapped, 4);
    cr_assert_str_eq(e.scaled, "3.5");
    /* 2^-12 * 1 / 1 = 0.000244140625 */
    e = explain_one(1, 1.0f / 4096, 1, 0);
    cr_assert_str_eq(e.scaled, "0.000244140625");
    cr_assert_eq(e.expected, 0);
    /* 12 exactly: no decimal point */
    e = explain_one(12, 1, 1, 0);
    cr_assert_str_eq(e.scaled, "12");
}

Test(explain, non_terminating)
{
    /* 1/3: thirty 3s, truncated */
    qmm_ref_element e = explain_one(1, 1, 3, 0);
    cr_assert_str_eq(e.scaled, "0.333333333333333333333333333333...");
    /* 20/3 = 6.666...: truncated, not rounded to ...667 */
    e = explain_one(20, 1, 3, 0);
    cr_assert_str_eq(e.scaled, "6.666666666666666666666666666666...");
    cr_assert_eq(e.expected, 7);
    /* 1/300: leading zeros of a value below 1 are not significant. 300.0f is exact. */
    e = explain_one(1, 1, 300, 0);
    cr_assert_str_eq(e.scaled, "0.00333333333333333333333333333333...");
}

Test(explain, negative_values)
{
    /* int8: -7/2 = -3.5 -> -4; -1/3 */
    int8_t a[] = {-7, -1}, b[] = {1}, y[2];
    float sy[] = {2, 3};
    qmm_call c = qlm(mk(I8, a, 2, 2, 1), SF(1), SI8(0), mk(I8, b, 2, 1, 1), SF(1), SI8(0),
                     mk(F32, sy, 2, 2, 1), mk(I8, (int8_t[]){0, 0}, 2, 2, 1),
                     mk(I8, y, 2, 2, 1), 10);
    qmm_ref_element e;
    qmm_status st;
    cr_assert_eq(qmm_ref_explain(&c, 0, &e, &st), QMM_OK, "%s", st.message);
    cr_assert_str_eq(e.scaled, "-3.5");
    cr_assert_eq(e.expected, -4);
    cr_assert_eq(qmm_ref_explain(&c, 1, &e, &st), QMM_OK, "%s", st.message);
    cr_assert_str_eq(e.scaled, "-0.333333333333333333333333333333...");
    cr_assert_eq(e.expected, 0);
    cr_assert_eq(qmm_ref_explain(&c, 2, &e, &st), QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "index"), "%s", st.message);
}

static qmm_ref_element explain_bits(uint32_t sa, uint32_t sy)
{
    uint8_t a[] = {1}, b[] = {1}, y[1];
    qmm_call c = qlm(mk(U8, a, 2, 1, 1), mk(F32, &sa, 0), SU8(0), mk(U8, b, 2, 1, 1),
                     mk(F32, &sa, 0), SU8(0), mk(F32, &sy, 0), SU8(0), mk(U8, y, 2, 1, 1),
                     10);
    qmm_ref_element e;
    qmm_status st;
    cr_assert_eq(qmm_ref_explain(&c, 0, &e, &st), QMM_OK, "%s", st.message);
    return e;
}

Test(explain, extreme_magnitudes)
{
    /* sa = sb = 0x7F7FFFFF = 2^128 - 2^104, sy = 2^-149: (2^128 - 2^104)^2 * 2^149 is an
     * integer of 122 digits (checked with Python's fractions) and is printed in full */
    qmm_ref_element e = explain_bits(0x7F7FFFFFu, 1u);
    cr_assert_str_eq(e.scaled, "8263198624827981933819245716348984112772173276772875675453804596"
                               "2211211254479916879974137777453279847094789397558801203200");
    cr_assert_eq(e.expected, 255);
    /* sa = sb = 2^-149, sy = 0x7F7FFFFF: 2^-298 / ((2^24-1) 2^104) does not terminate (2^24-1
     * has a factor 3) and has 128 leading zeros, too long for the fixed form: a truncated
     * scientific form (digits from Python's fractions, cut after 30) */
    e = explain_bits(1u, 0x7F7FFFFFu);
    cr_assert_str_eq(e.scaled, "5.77061198007136207174139246782...e-129");
    cr_assert_eq(e.expected, 0);
}

/* ---- the backend table ---- */

Test(backend, open_and_query)
{
    qmm_status st;
    qmm_backend *be = qmm_reference_open(QMM_ABI_VERSION, "", &st);
    cr_assert_not_null(be, "%s", st.message);
    cr_assert_eq(st.code, QMM_OK);
    cr_assert_str_eq(be->name, "reference");
    cr_assert_eq(be->abi_version, QMM_ABI_VERSION);
    cr_assert_eq(be->struct_size, sizeof(qmm_backend));
    cr_assert_not_null(be->qorderedmatmul);

    qmm_call c;
    memset(&c, 0, sizeof c);
    c.op = QMM_OP_MATMULINTEGER;
    cr_assert_eq(be->query(be, &c, &st), QMM_OK); /* even an empty, invalid call */
    c.op = QMM_OP_QLINEARMATMUL;
    cr_assert_eq(be->query(be, &c, &st), QMM_OK);
    c.op = QMM_OP_QORDEREDMATMUL; /* supported; validation belongs to the call */
    cr_assert_eq(be->query(be, &c, &st), QMM_OK);
    cr_assert_eq(qmm_backend_run(be, &c, &st), QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "not an allowed combination"), "%s", st.message);

    /* Orion's example through the table */
    int8_t a[] = {3, 4, 5, 2, 4, 3}, b[] = {4, 8, 4}, y[2];
    c = qlm(mk(I8, a, 2, 2, 3), SF(2), SI8(1), mk(I8, b, 2, 3, 1), SF(0.25f), SI8(0), SF(6),
            SI8(10), mk(I8, y, 2, 2, 1), 10);
    cr_assert_eq(qmm_backend_run(be, &c, &st), QMM_OK, "%s", st.message);
    expect_i8(y, (int8_t[]){14, 13}, 2);
    c.u.qlinearmatmul.a.rank = 0;
    cr_assert_eq(qmm_backend_run(be, &c, &st), QMM_INVALID_ARGUMENT);
    be->close(be);

    be = qmm_reference_open(QMM_ABI_VERSION, "profile=spec", &st);
    cr_assert_not_null(be, "%s", st.message);
    be->close(be);
}

Test(backend, open_errors)
{
    qmm_status st;
    cr_assert_null(qmm_reference_open(QMM_ABI_VERSION + 1, "", &st));
    cr_assert_eq(st.code, QMM_UNSUPPORTED);
    cr_assert_null(qmm_reference_open(QMM_ABI_VERSION, "bogus=1", &st));
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "bogus"), "%s", st.message);
    cr_assert_null(qmm_reference_open(QMM_ABI_VERSION, "profile=nonsense", &st));
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
    cr_assert(strstr(st.message, "profile=nonsense"), "%s", st.message);
    cr_assert_null(qmm_reference_open(QMM_ABI_VERSION, "profile", &st));
    cr_assert_eq(st.code, QMM_INVALID_ARGUMENT);
}
