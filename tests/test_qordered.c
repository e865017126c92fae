/* tests/test_qordered.c — QOrderedMatMul (docs/semantics.md §4, docs/qorderedmatmul.md): the five
 * cublasLt layouts, the spec and ort-fp32 computations, every rejection, the harness's loader
 * and the committed vectors/qordered cases (which this file also generates).
 *
 * Every offset and every expected value is worked out by hand in the comment next to it;
 * the layout tests do not use the code under test to place data. Scales are written as host
 * floats: these tests assume a little-endian host, as the tensor format does.
 *
 * Regenerating vectors/qordered (docs/qorderedmatmul.md): with QMM_QORDERED_REGEN=DIR (and
 * QMM_SOURCE_DIR), `test_qordered --filter 'vectors/committed*'` writes the cases under DIR;
 * give it the source tree's vectors/qordered. */
#include "tests/cli_support.h"

#include <math.h>
#include <stdint.h>

#include "harness/invoke/backends.h"
#include "harness/io/case.h"
#include "harness/io/casedir.h"
#include "harness/judge/expect.h"
#include "harness/io/meta.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"
#include "tests/casefile_support.h"
#include "tests/tensor_support.h"

#define I8 QMM_DTYPE_INT8
#define U8 QMM_DTYPE_UINT8
#define F32 QMM_DTYPE_FLOAT
#define F16 QMM_DTYPE_FLOAT16
#define I32 QMM_DTYPE_INT32

enum { COL = QMM_ORDER_COL, ROW = QMM_ORDER_ROW, COL32 = QMM_ORDER_COL32,
       COL4 = QMM_ORDER_COL4_4R2_8C, COL32_2R = QMM_ORDER_COL32_2R_4R4 };

#define SF(x) mk(F32, (float[]){(x)}, 0)

static const qmm_tensor ABSENT = {0};

static qmm_call qom(qmm_tensor a, qmm_tensor sa, qmm_tensor b, qmm_tensor sb, qmm_tensor sy,
                    qmm_tensor bias, qmm_tensor c, qmm_tensor sc, qmm_tensor y, int oa, int ob,
                    int oy)
{
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_QORDEREDMATMUL;
    call.u.qorderedmatmul = (qmm_qorderedmatmul){
        .a = a, .scale_a = sa, .b = b, .scale_b = sb, .scale_y = sy, .bias = bias, .c = c,
        .scale_c = sc, .y = y, .order_a = oa, .order_b = ob, .order_y = oy};
    return call;
}

/* Runs `call` under `profile` into a fresh output (shape from call's y) and checks every
 * byte against `want`. */
static void expect_y(qmm_call call, qmm_profile profile, const int8_t *want, int64_t n)
{
    int8_t *y = malloc((size_t)(n ? n : 1));
    memset(y, 0x5a, (size_t)(n ? n : 1));
    call.u.qorderedmatmul.y.data = y;
    qmm_status st;
    qmm_status_code rc = qmm_ref_compute_profile(&call, profile, &st);
    cr_assert_eq(rc, QMM_OK, "%s", st.message);
    for (int64_t i = 0; i < n; i++)
        cr_expect_eq(y[i], want[i], "%s: y[%lld] = %d, want %d", qmm_profile_name(profile),
                     (long long)i, y[i], want[i]);
    free(y);
}

static void expect_invalid(qmm_call call, const char *needle)
{
    int8_t ybuf[4096];
    if (!call.u.qorderedmatmul.y.data)
        call.u.qorderedmatmul.y.data = ybuf;
    qmm_status st;
    qmm_status_code rc = qmm_ref_compute(&call, NULL, NULL, &st);
    cr_expect_eq(rc, QMM_INVALID_ARGUMENT, "rc %d (%s), want INVALID_ARGUMENT for '%s'", (int)rc,
                 st.message, needle);
    cr_expect(strstr(st.message, needle), "message '%s' lacks '%s'", st.message, needle);
    rc = qmm_validate_qorderedmatmul(&call.u.qorderedmatmul, &(qmm_qordered_plan){0}, &st);
    cr_expect_eq(rc, QMM_INVALID_ARGUMENT, "validate: rc %d for '%s'", (int)rc, needle);
}

/* ---- layouts: offsets by hand ------------------------------------------------------------ */

Test(layout, col_and_row)
{
    /* 3 x 2. COL: c*3 + r. ROW: r*2 + c. */
    cr_expect_eq(qmm_order_offset(COL, 3, 2, 0, 0), 0);
    cr_expect_eq(qmm_order_offset(COL, 3, 2, 1, 0), 1);
    cr_expect_eq(qmm_order_offset(COL, 3, 2, 0, 1), 3);
    cr_expect_eq(qmm_order_offset(COL, 3, 2, 2, 1), 5);
    cr_expect_eq(qmm_order_offset(ROW, 3, 2, 1, 0), 2);
    cr_expect_eq(qmm_order_offset(ROW, 3, 2, 0, 1), 1);
    cr_expect_eq(qmm_order_offset(ROW, 3, 2, 2, 1), 5);
}

Test(layout, col32)
{
    /* 2 x 64: tiles of 32 columns, each 32*2 = 64 bytes, rows of 32 inside a tile. */
    cr_expect_eq(qmm_order_offset(COL32, 2, 64, 0, 31), 31);
    cr_expect_eq(qmm_order_offset(COL32, 2, 64, 1, 0), 32);
    cr_expect_eq(qmm_order_offset(COL32, 2, 64, 0, 32), 64);
    cr_expect_eq(qmm_order_offset(COL32, 2, 64, 1, 33), 97); /* 64 + 32 + 1 */
    /* 3 x 32 is row-major: one tile */
    cr_expect_eq(qmm_order_offset(COL32, 3, 32, 2, 5), 69);
}

Test(layout, col4_4r2_8c)
{
    /* 8 x 32, one 256-byte tile: (r%2)*128 + ((c%32)/4)*16 + ((r%8)/2)*4 + c%4 */
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 0, 0), 0);
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 1, 0), 128); /* odd rows: second half */
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 2, 0), 4);   /* row pair 1 */
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 3, 0), 132);
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 0, 1), 1);
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 0, 4), 16); /* next group of 4 columns */
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 6, 5), 29); /* 0 + 16 + 12 + 1 */
    cr_expect_eq(qmm_order_offset(COL4, 8, 32, 7, 31), 255); /* 128 + 112 + 12 + 3 */
    /* 16 x 64: ld = 32*16 = 512; (9,33) = 512 + (9/8)*256 + 128 + 0 + 0 + 1 */
    cr_expect_eq(qmm_order_offset(COL4, 16, 64, 9, 33), 897);
    /* 64 x 32 (B transposed in the vectors): (3,5) = 128+16+4+1; (30,31) = 768+112+12+3;
     * (9,0) = 256+128; (40,2) = 5*256 + 2 */
    cr_expect_eq(qmm_order_offset(COL4, 64, 32, 3, 5), 149);
    cr_expect_eq(qmm_order_offset(COL4, 64, 32, 30, 31), 895);
    cr_expect_eq(qmm_order_offset(COL4, 64, 32, 9, 0), 384);
    cr_expect_eq(qmm_order_offset(COL4, 64, 32, 40, 2), 1282);
    /* 5 rows pad to 8 in the leading dimension: column tile 1 starts at 32*8 = 256 */
    cr_expect_eq(qmm_order_offset(COL4, 5, 64, 0, 32), 256);
    cr_expect_eq(qmm_order_offset(COL4, 5, 64, 4, 0), 8); /* (4%8)/2 = 2 */
}

Test(layout, col32_2r_4r4)
{
    /* 32 x 32, one 1024-byte block; row r lands in slot ((r%8)/2*4 + r/8)*2 + r%2:
     * r=0 -> 0, 1 -> 1, 2 -> (4+0)*2 = 8, 3 -> 9, 7 -> (12+0)*2+1 = 25, 8 -> (0+1)*2 = 2,
     * 9 -> 3, 10 -> (4+1)*2 = 10, 16 -> (0+2)*2 = 4, 31 -> (12+3)*2+1 = 31 */
    const int rows[] = {0, 1, 2, 3, 7, 8, 9, 10, 16, 31};
    const int slot[] = {0, 1, 8, 9, 25, 2, 3, 10, 4, 31};
    for (int i = 0; i < 10; i++) {
        cr_expect_eq(qmm_order_offset(COL32_2R, 32, 32, rows[i], 0), slot[i] * 32, "row %d",
                     rows[i]);
        cr_expect_eq(qmm_order_offset(COL32_2R, 32, 32, rows[i], 31), slot[i] * 32 + 31);
    }
    cr_expect_eq(qmm_order_offset(COL32_2R, 32, 32, 2, 5), 261); /* 8*32 + 5 */
    /* 64 x 64: ld = 32*64 = 2048; (33,40) = 2048 + 1024 + slot(1)*32 + 8 */
    cr_expect_eq(qmm_order_offset(COL32_2R, 64, 64, 33, 40), 3112);
    /* 32 x 64 (B transposed in the vectors): (10,40) = 1024 + 320 + 8; (7,3) = 800 + 3 */
    cr_expect_eq(qmm_order_offset(COL32_2R, 32, 64, 10, 40), 1352);
    cr_expect_eq(qmm_order_offset(COL32_2R, 32, 64, 7, 3), 803);
    /* 5 rows pad to 32: column tile 1 starts at 1024 */
    cr_expect_eq(qmm_order_offset(COL32_2R, 5, 64, 0, 32), 1024);
}

Test(layout, bijective_on_clean_shapes)
{
    /* Every order maps a clean rows x cols matrix one to one onto [0, rows*cols). */
    struct { int order, rows, cols; } shapes[] = {
        {COL, 3, 5},    {ROW, 3, 5},    {COL32, 3, 64},   {COL32, 1, 32},
        {COL4, 8, 32},  {COL4, 24, 64}, {COL32_2R, 32, 32}, {COL32_2R, 64, 96},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t n = (int64_t)shapes[s].rows * shapes[s].cols;
        unsigned char *seen = calloc((size_t)n, 1);
        for (int r = 0; r < shapes[s].rows; r++)
            for (int c = 0; c < shapes[s].cols; c++) {
                int64_t o = qmm_order_offset(shapes[s].order, shapes[s].rows, shapes[s].cols, r, c);
                cr_assert(o >= 0 && o < n, "order %d %dx%d (%d,%d) -> %lld", shapes[s].order,
                          shapes[s].rows, shapes[s].cols, r, c, (long long)o);
                cr_assert_eq(seen[o], 0, "order %d: offset %lld twice", shapes[s].order,
                             (long long)o);
                seen[o] = 1;
            }
        free(seen);
    }
}

Test(layout, out_of_range)
{
    cr_expect_eq(qmm_order_offset(5, 8, 32, 0, 0), -1);
    cr_expect_eq(qmm_order_offset(-1, 8, 32, 0, 0), -1);
    cr_expect_eq(qmm_order_offset(ROW, 8, 32, 8, 0), -1);
    cr_expect_eq(qmm_order_offset(ROW, 8, 32, 0, 32), -1);
    cr_expect_eq(qmm_order_offset(ROW, 8, 32, -1, 0), -1);
}

/* ---- the cases (shared by the value tests and the committed vectors) --------------------- */

/* A [2,3] ROW = [[1,2,3],[4,5,6]]; B logical [3,2] = [[1,2],[3,4],[5,6]] in COL order (its
 * columns one after the other). A*B = [[22,28],[49,64]]. */
static int8_t A23[] = {1, 2, 3, 4, 5, 6};
static int8_t B32[] = {1, 3, 5, 2, 4, 6};
/* batch 2: the second A is [[-1,0,1],[2,-2,0]]; times B = [[4,4],[-4,-4]] */
static int8_t A223[] = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, -2, 0};
/* B batch 2: the second B is [[1,0],[0,1],[0,0]]; A2 times it = [[-1,0],[2,-2]] */
static int8_t B232[] = {1, 3, 5, 2, 4, 6, 1, 0, 0, 0, 1, 0};
static int8_t C22[] = {1, -1, 2, 0};
static int8_t C222[] = {1, -1, 2, 0, -3, 1, 0, 4};
/* saturation: A [1,3] = [127,127,-128]; B columns (127,127,127), (-128,-128,-128), (1,0,0),
 * (0,0,1) */
static int8_t A13[] = {127, 127, -128};
static int8_t B34[] = {127, 127, 127, -128, -128, -128, 1, 0, 0, 0, 0, 1};

/* COL32 with COL4_4R2_8C: M=2, K=32, N=64.
 * A [2,32] in COL32 is row-major (one tile): A[0][0]=1, A[0][5]=3, A[0][31]=1, A[1][0]=2,
 * A[1][2]=3, A[1][5]=-1.
 * B logical [32,64]; transposed (64 x 32) in COL4_4R2_8C (offsets: see layout tests):
 * B[5][3]=2 at 149, B[31][30]=-3 at 895, B[0][9]=7 at 384, B[2][40]=5 at 1282. */
static int8_t A_c4[64], B_c4[2048];
/* COL32 with COL32_2R_4R4: M=2, K=64, N=32.
 * A [2,64] COL32: (c/32)*64 + 32r + c%32: A[0][3]=-4 at 3, A[1][40]=2 at 104.
 * B logical [64,32]; transposed (32 x 64) in COL32_2R_4R4: B[40][10]=6 at 1352,
 * B[3][7]=5 at 803. C [2,32] COL32 (row-major): C[0][7]=1 at 7, C[1][0]=-3 at 32. */
static int8_t A_c32[128], B_c32[2048], C_c32[64];
static float SB32[32];
static float BIAS32[32];

static void fill_col32_data(void)
{
    memset(A_c4, 0, sizeof A_c4);
    memset(B_c4, 0, sizeof B_c4);
    A_c4[0] = 1;
    A_c4[5] = 3;
    A_c4[31] = 1;
    A_c4[32 + 0] = 2;
    A_c4[32 + 2] = 3;
    A_c4[32 + 5] = -1;
    B_c4[149] = 2;
    B_c4[895] = -3;
    B_c4[384] = 7;
    B_c4[1282] = 5;
    memset(A_c32, 0, sizeof A_c32);
    memset(B_c32, 0, sizeof B_c32);
    memset(C_c32, 0, sizeof C_c32);
    A_c32[3] = -4;
    A_c32[104] = 2;
    B_c32[1352] = 6;
    B_c32[803] = 5;
    C_c32[7] = 1;
    C_c32[32] = -3;
    for (int j = 0; j < 32; j++) {
        SB32[j] = j == 7 ? 0.25f : 1.0f;
        BIAS32[j] = 0.0f;
    }
}

typedef struct vcase {
    const char *name; /* directory under vectors/qordered */
    const char *tags;
    const char *description;
    const char *profile; /* of the stored output; NULL: spec */
    qmm_status_code expect;
    qmm_call call;
    int8_t want[128]; /* hand-computed Y, in order_Y's layout */
    int64_t n;
} vcase;

static float sb2[2], bias2[2], bias4[4], sbv2[2];

/* The cases outlive get_case(), so their scalars live here (not in compound literals). */
static float fpool[16];
static int n_fpool;
static int8_t A11[] = {5};
static int8_t B12[] = {1, 1};

static qmm_tensor sfs(float x)
{
    fpool[n_fpool] = x;
    return mk(F32, &fpool[n_fpool++], 0);
}

/* Builds case `i` into *v; returns 0 past the last one. */
static int get_case(int i, vcase *v)
{
    fill_col32_data();
    n_fpool = 0;
    memset(v, 0, sizeof *v);
    v->expect = QMM_OK;
    switch (i) {
    case 0:
        /* alpha = 0.5*0.25/1 = 0.125: 22 -> 2.75 -> 3, 28 -> 3.5 -> 4 (tie, even),
         * 49 -> 6.125 -> 6, 64 -> 8 */
        v->name = "row/per-tensor-tie";
        v->tags = "qorderedmatmul, row, tie";
        v->description = "A ROW, B COL, Y ROW; per-tensor scales; a tie rounds to even";
        v->call = qom(mk(I8, A23, 2, 2, 3), sfs(0.5f), mk(I8, B32, 2, 3, 2), sfs(0.25f), sfs(1.0f),
                      ABSENT, ABSENT, ABSENT, mk(I8, NULL, 2, 2, 2), ROW, COL, ROW);
        memcpy(v->want, (int8_t[]){3, 4, 6, 8}, 4);
        v->n = 4;
        return 1;
    case 1:
        /* scale_B = [0.25, 0.5], bias = [0.25, -0.5]: column 0: 2.75+0.25 = 3,
         * 6.125+0.25 = 6.375 -> 6; column 1: 28*0.25-0.5 = 6.5 -> 6 (even),
         * 64*0.25-0.5 = 15.5 -> 16 (even) */
        sb2[0] = 0.25f;
        sb2[1] = 0.5f;
        bias2[0] = 0.25f;
        bias2[1] = -0.5f;
        v->name = "row/per-column-bias";
        v->tags = "qorderedmatmul, row, per-column, bias, tie";
        v->description = "per-column scale_B and a bias in output units; ties to even";
        v->call = qom(mk(I8, A23, 2, 2, 3), sfs(0.5f), mk(I8, B32, 2, 3, 2), mk(F32, sb2, 1, 2),
                      sfs(1.0f), mk(F32, bias2, 1, 2), ABSENT, ABSENT, mk(I8, NULL, 2, 2, 2), ROW,
                      COL, ROW);
        memcpy(v->want, (int8_t[]){3, 6, 6, 16}, 4);
        v->n = 4;
        return 1;
    case 2:
        /* scale_Y = 2, C [2,2] (batch 1) with scale_C = 1 adds C/2 = [0.5,-0.5,1,0]:
         * batch 0: [11,14,24.5,32] -> [11.5,13.5,25.5,32] -> [12,14,26,32];
         * batch 1: [2,2,-2,-2] -> [2.5,1.5,-1,-2] -> [2,2,-1,-2] */
        v->name = "row/c-batch-1";
        v->tags = "qorderedmatmul, row, c, batch";
        v->description = "batch 2 A, C of batch 1 broadcast over it";
        v->call = qom(mk(I8, A223, 3, 2, 2, 3), sfs(1.0f), mk(I8, B32, 2, 3, 2), sfs(1.0f),
                      sfs(2.0f), ABSENT, mk(I8, C22, 2, 2, 2), sfs(1.0f), mk(I8, NULL, 3, 2, 2, 2),
                      ROW, COL, ROW);
        memcpy(v->want, (int8_t[]){12, 14, 26, 32, 2, 2, -1, -2}, 8);
        v->n = 8;
        return 1;
    case 3:
        /* as case 2 with C [2,2,2]: batch 1 adds [-1.5,0.5,0,2]: [0.5,2.5,-2,0] ->
         * [0,2,-2,0] */
        v->name = "row/c-batch-a";
        v->tags = "qorderedmatmul, row, c, batch";
        v->description = "batch 2 A, C of batch 2";
        v->call = qom(mk(I8, A223, 3, 2, 2, 3), sfs(1.0f), mk(I8, B32, 2, 3, 2), sfs(1.0f),
                      sfs(2.0f), ABSENT, mk(I8, C222, 3, 2, 2, 2), sfs(1.0f),
                      mk(I8, NULL, 3, 2, 2, 2), ROW, COL, ROW);
        memcpy(v->want, (int8_t[]){12, 14, 26, 32, 0, 2, -2, 0}, 8);
        v->n = 8;
        return 1;
    case 4:
        /* B [2,3,2]: batch 0 as before, batch 1 gives [[-1,0],[2,-2]] */
        v->name = "row/b-batch-a";
        v->tags = "qorderedmatmul, row, batch";
        v->description = "batch 2 A and batch 2 B";
        v->call = qom(mk(I8, A223, 3, 2, 2, 3), sfs(1.0f), mk(I8, B232, 3, 2, 3, 2), sfs(1.0f),
                      sfs(1.0f), ABSENT, ABSENT, ABSENT, mk(I8, NULL, 3, 2, 2, 2), ROW, COL, ROW);
        memcpy(v->want, (int8_t[]){22, 28, 49, 64, -1, 0, 2, -2}, 8);
        v->n = 8;
        return 1;
    case 5:
        /* acc: 127*127*2 - 128*127 = 16002 -> 127; -128*127*2 + 128*128 = -16128 -> -128;
         * 127 + 0.5 = 127.5 -> 128 (even) -> 127; -128 - 0.5 = -128.5 -> -128 (even) */
        bias4[0] = 0.0f;
        bias4[1] = 0.0f;
        bias4[2] = 0.5f;
        bias4[3] = -0.5f;
        v->name = "row/saturate";
        v->tags = "qorderedmatmul, row, saturation";
        v->description = "results beyond int8 saturate to -128 / 127";
        v->call = qom(mk(I8, A13, 2, 1, 3), sfs(1.0f), mk(I8, B34, 2, 3, 4), sfs(1.0f), sfs(1.0f),
                      mk(F32, bias4, 1, 4), ABSENT, ABSENT, mk(I8, NULL, 2, 1, 4), ROW, COL, ROW);
        memcpy(v->want, (int8_t[]){127, -128, 127, -128}, 4);
        v->n = 4;
        return 1;
    case 6:
        /* Y = A*B: Y[0][3] = 3*2 = 6, Y[0][30] = 1*-3 = -3, Y[0][9] = 1*7 = 7,
         * Y[1][3] = -1*2 = -2, Y[1][9] = 2*7 = 14, Y[1][40] = 3*5 = 15; scale_Y = 4:
         * 1.5 -> 2, -0.75 -> -1, 1.75 -> 2, -0.5 -> 0 (even), 3.5 -> 4, 3.75 -> 4.
         * Y [2,64] COL32: (j/32)*64 + 32i + j%32: 3, 30, 9, 35, 41, 64+32+8 = 104 */
        v->name = "col32/col4_4r2_8c";
        v->tags = "qorderedmatmul, col32, col4_4r2_8c, tie";
        v->description = "A COL32, B transposed in COL4_4R2_8C, Y COL32";
        v->call = qom(mk(I8, A_c4, 2, 2, 32), sfs(1.0f), mk(I8, B_c4, 2, 32, 64), sfs(1.0f),
                      sfs(4.0f), ABSENT, ABSENT, ABSENT, mk(I8, NULL, 2, 2, 64), COL32, COL4,
                      COL32);
        v->n = 128;
        v->want[3] = 2;
        v->want[30] = -1;
        v->want[9] = 2;
        v->want[35] = 0;
        v->want[41] = 4;
        v->want[104] = 4;
        return 1;
    case 7:
        /* Y[1][10] = 2*6 = 12, Y[0][7] = -4*5 = -20; scale_A = 0.5, scale_B[7] = 0.25, other
         * columns 1: 12*0.5 = 6, -20*0.125 = -2.5; C adds 2*C: Y[0][7] = -2.5 + 2 = -0.5 -> 0,
         * Y[1][0] = -6. Y [2,32] COL32 = row-major: 7, 32, 42 */
        v->name = "col32/col32_2r_4r4-c";
        v->tags = "qorderedmatmul, col32, col32_2r_4r4, per-column, c";
        v->description = "A COL32 (two tiles), B transposed in COL32_2R_4R4, per-column "
                         "scale_B, C";
        v->call = qom(mk(I8, A_c32, 2, 2, 64), sfs(0.5f), mk(I8, B_c32, 2, 64, 32),
                      mk(F32, SB32, 1, 32), sfs(1.0f), ABSENT, mk(I8, C_c32, 2, 2, 32), sfs(2.0f),
                      mk(I8, NULL, 2, 2, 32), COL32, COL32_2R, COL32);
        v->n = 64;
        v->want[7] = 0;
        v->want[32] = -6;
        v->want[42] = 6;
        return 1;
    case 8:
        /* the same without C: Y[0][7] = -2.5 -> -2 (even), Y[1][10] = 6 */
        v->name = "col32/col32_2r_4r4";
        v->tags = "qorderedmatmul, col32, col32_2r_4r4, per-column, tie";
        v->description = "A COL32 (two tiles), B transposed in COL32_2R_4R4, per-column scale_B";
        v->call = qom(mk(I8, A_c32, 2, 2, 64), sfs(0.5f), mk(I8, B_c32, 2, 64, 32),
                      mk(F32, SB32, 1, 32), sfs(1.0f), ABSENT, ABSENT, ABSENT,
                      mk(I8, NULL, 2, 2, 32), COL32, COL32_2R, COL32);
        v->n = 64;
        v->want[7] = -2;
        v->want[42] = 6;
        return 1;
    case 9:
        /* ORT's per-column alpha is float(sB_j * float(sA/sY)) = 0.1f (0.100000001490116),
         * its scalar one float(float(sA*sB)/sY) = 0.100000008940697. acc 5: 0.1f*5 rounds to
         * 0.5 in float -> nearbyint 0; the exact value 0.500000007... -> 1 (spec). */
        sbv2[0] = 0.1f;
        sbv2[1] = 0.1f;
        v->name = "ort-fp32/per-column-alpha";
        v->tags = "qorderedmatmul, row, per-column, ort-fp32";
        v->description = "stored output follows ort-fp32: float alpha rounds 0.50000000745 "
                         "to the tie 0.5 (spec gives 1)";
        v->profile = "ort-fp32";
        v->call = qom(mk(I8, A11, 2, 1, 1), sfs(0.1f), mk(I8, B12, 2, 1, 2),
                      mk(F32, sbv2, 1, 2), sfs(0.1f), ABSENT, ABSENT, ABSENT,
                      mk(I8, NULL, 2, 1, 2), ROW, COL, ROW);
        memcpy(v->want, (int8_t[]){0, 0}, 2);
        v->n = 2;
        return 1;
    case 10:
        BIAS32[0] = 1.0f;
        v->name = "invalid/col32-bias";
        v->tags = "qorderedmatmul, invalid, col32, bias";
        v->description = "the COL32 combination takes no bias";
        v->expect = QMM_INVALID_ARGUMENT;
        v->call = qom(mk(I8, A_c32, 2, 2, 64), sfs(0.5f), mk(I8, B_c32, 2, 64, 32),
                      mk(F32, SB32, 1, 32), sfs(1.0f), mk(F32, BIAS32, 1, 32), ABSENT, ABSENT,
                      mk(I8, NULL, 2, 2, 32), COL32, COL32_2R, COL32);
        return 1;
    case 11:
        v->name = "invalid/order-combination";
        v->tags = "qorderedmatmul, invalid, orders";
        v->description = "A ROW with B COL4_4R2_8C is not an allowed combination";
        v->expect = QMM_INVALID_ARGUMENT;
        v->call = qom(mk(I8, A23, 2, 2, 3), sfs(0.5f), mk(I8, B32, 2, 3, 2), sfs(0.25f), sfs(1.0f),
                      ABSENT, ABSENT, ABSENT, mk(I8, NULL, 2, 2, 2), ROW, COL4, ROW);
        return 1;
    case 12:
        v->name = "invalid/col32-tile";
        v->tags = "qorderedmatmul, invalid, col32, tile";
        v->description = "order_A=COL32 needs K % 32 == 0 (K is 3)";
        v->expect = QMM_INVALID_ARGUMENT;
        v->call = qom(mk(I8, A23, 2, 2, 3), sfs(0.5f), mk(I8, B32, 2, 3, 2), sfs(0.25f), sfs(1.0f),
                      ABSENT, ABSENT, ABSENT, mk(I8, NULL, 2, 2, 2), COL32, COL4, COL32);
        return 1;
    default:
        return 0;
    }
}

Test(values, hand_computed_cases)
{
    vcase v;
    for (int i = 0; get_case(i, &v); i++) {
        if (v.expect != QMM_OK) {
            expect_invalid(v.call, "");
            continue;
        }
        qmm_profile p = QMM_PROFILE_SPEC;
        if (v.profile)
            cr_assert(qmm_profile_from_name(v.profile, &p));
        expect_y(v.call, p, v.want, v.n);
    }
}

/* Y is laid out in order_Y, not row-major: its expectation computed a part at a time comes
 * in whole matrices (qmm_ref_part_unit), and the parts put together are the whole. */
static void gather_part(void *ctx, int64_t first, int64_t count, const void *exact,
                        const void *alt)
{
    (void)alt;
    memcpy((int8_t *)ctx + first, exact, (size_t)count);
}

Test(values, parts_give_the_whole)
{
    vcase v;
    int checked = 0;
    for (int i = 0; get_case(i, &v); i++) {
        if (v.expect != QMM_OK || v.n == 0)
            continue;
        const qmm_tensor *y = &v.call.u.qorderedmatmul.y;
        int64_t unit = y->dims[y->rank - 2] * y->dims[y->rank - 1];
        cr_expect_eq(qmm_ref_part_unit(&v.call), unit, "%s", v.name);
        const char *profiles[] = {"spec", "ort-fp32"};
        for (int p = 0; p < 2; p++) {
            qh_expectation whole, parts;
            cr_assert_eq(qh_expect(&v.call, profiles[p], &whole), 0, "%s", whole.message);
            cr_assert_eq(qh_expect_plan(&v.call, profiles[p], &parts), 0, "%s", parts.message);
            int8_t got[4096];
            cr_assert(v.n <= (int64_t)sizeof got);
            memset(got, 0x5a, sizeof got);
            qh_expect_scan(&parts, 1, gather_part, got); /* 1: rounded up to a matrix */
            cr_expect_eq(parts.code, whole.code, "%s %s: %s", v.name, profiles[p],
                         parts.message);
            if (whole.code == QMM_OK)
                cr_expect_eq(memcmp(got, whole.exact.data, (size_t)v.n), 0, "%s %s", v.name,
                             profiles[p]);
            qh_expectation_free(&whole);
            qh_expectation_free(&parts);
            checked++;
        }
        if (unit > 1 && v.n > unit) { /* a part that is not whole matrices is refused */
            int8_t buf[4096];
            qmm_call c = v.call;
            c.u.qorderedmatmul.y.data = buf;
            qmm_ref_part half = {1, unit};
            qmm_status st;
            cr_expect_eq(qmm_ref_compute_part(&c, QMM_PROFILE_SPEC, &half, NULL, NULL, &st),
                         QMM_INVALID_ARGUMENT, "%s: %s", v.name, st.message);
        }
    }
    cr_expect_gt(checked, 8);
}

Test(values, invalid_cases_say_why)
{
    vcase v;
    get_case(10, &v);
    expect_invalid(v.call, "bias: not allowed with order_B=COL32_2R_4R4");
    get_case(11, &v);
    expect_invalid(v.call, "order_A=ROW, order_B=COL4_4R2_8C, order_Y=ROW: not an allowed");
    get_case(12, &v);
    expect_invalid(v.call, "A: order_A=COL32 needs columns % 32 == 0 (M x K: 2 x 3)");
}

Test(values, ort_fp32_differs_where_float_rounds)
{
    vcase v;
    get_case(9, &v);
    /* spec: 0.500000007 -> 1 */
    expect_y(v.call, QMM_PROFILE_SPEC, (int8_t[]){1, 1}, 2);
    /* a scalar scale_B takes ORT's other alpha, 0.100000008940697: 0.50000004 rounds up to
     * the float 0.50000006 -> 1 */
    qmm_call c = v.call;
    c.u.qorderedmatmul.scale_b = SF(0.1f);
    expect_y(c, QMM_PROFILE_ORT_FP32, (int8_t[]){1, 1}, 2);

    /* sA = float(1/3) = 0.3333333432674408, sB = 3: exact product 1.0000000298, float 1.0.
     * acc 2, bias 0.5: spec 2.50000006 -> 3; ort-fp32 2*1.0 + 0.5 = 2.5 -> 2 */
    c = qom(mk(I8, (int8_t[]){2}, 2, 1, 1), SF(1.0f / 3.0f), mk(I8, (int8_t[]){1}, 2, 1, 1),
            SF(3.0f), SF(1.0f), mk(F32, (float[]){0.5f}, 1, 1), ABSENT, ABSENT,
            mk(I8, NULL, 2, 1, 1), ROW, COL, ROW);
    expect_y(c, QMM_PROFILE_SPEC, (int8_t[]){3}, 1);
    expect_y(c, QMM_PROFILE_ORT_FP32, (int8_t[]){2}, 1);

    /* beta = float(sC/sY): C = 1, sC = 1, sY = 3 -> beta = 0.3333333432674408; acc 0 with
     * sA = sB = 1: t = 0 + beta*C = 0.33333334 -> 0 (both); with C = 3: float(3*beta) = 1.0
     * (1.0000000298 rounds to 1) -> 1 (both); spec 1 too. The C term goes through beta. */
    c = qom(mk(I8, (int8_t[]){0, 0}, 2, 1, 2), SF(1.0f), mk(I8, (int8_t[]){0, 0, 0, 0}, 2, 2, 2),
            SF(1.0f), SF(3.0f), ABSENT, mk(I8, (int8_t[]){1, 3}, 2, 1, 2), SF(1.0f),
            mk(I8, NULL, 2, 1, 2), ROW, COL, ROW);
    expect_y(c, QMM_PROFILE_ORT_FP32, (int8_t[]){0, 1}, 2);
    expect_y(c, QMM_PROFILE_SPEC, (int8_t[]){0, 1}, 2);

    /* alpha overflows float: float(3e38*3e38) = inf; inf*acc saturates, inf*0 is NaN -> 0
     * (what a saturating conversion gives); spec agrees on all three */
    c = qom(mk(I8, (int8_t[]){1, -1, 0}, 2, 3, 1), SF(3e38f), mk(I8, (int8_t[]){1}, 2, 1, 1),
            SF(3e38f), SF(1.0f), ABSENT, ABSENT, ABSENT, mk(I8, NULL, 2, 3, 1), ROW, COL, ROW);
    expect_y(c, QMM_PROFILE_ORT_FP32, (int8_t[]){127, -128, 0}, 3);
    expect_y(c, QMM_PROFILE_SPEC, (int8_t[]){127, -128, 0}, 3);
}

Test(values, other_profiles_are_unsupported)
{
    vcase v;
    get_case(0, &v);
    int8_t y[4];
    v.call.u.qorderedmatmul.y.data = y;
    qmm_status st;
    cr_expect_eq(qmm_ref_compute_profile(&v.call, QMM_PROFILE_ONNX_REF, &st), QMM_UNSUPPORTED);
    cr_expect(strstr(st.message, "QOrderedMatMul"), "%s", st.message);
    cr_expect_eq(qmm_ref_compute_profile(&v.call, QMM_PROFILE_ORION_FP16X16, &st),
                 QMM_UNSUPPORTED);
    /* validation still comes first */
    get_case(11, &v);
    v.call.u.qorderedmatmul.y.data = y;
    cr_expect_eq(qmm_ref_compute_profile(&v.call, QMM_PROFILE_ONNX_REF, &st),
                 QMM_INVALID_ARGUMENT);
}

Test(values, k_zero_and_empty)
{
    /* K = 0: every sum is 0, so Y = RNE(bias): bias [0.5, 1.5] -> [0, 2] */
    qmm_call c = qom(mk(I8, NULL, 2, 1, 0), SF(1.0f), mk(I8, NULL, 2, 0, 2), SF(1.0f), SF(1.0f),
                     mk(F32, (float[]){0.5f, 1.5f}, 1, 2), ABSENT, ABSENT,
                     mk(I8, NULL, 2, 1, 2), ROW, COL, ROW);
    expect_y(c, QMM_PROFILE_SPEC, (int8_t[]){0, 2}, 2);
    expect_y(c, QMM_PROFILE_ORT_FP32, (int8_t[]){0, 2}, 2);
    /* batch 0: nothing to compute */
    c = qom(mk(I8, NULL, 3, 0, 2, 3), SF(1.0f), mk(I8, B32, 2, 3, 2), SF(1.0f), SF(1.0f), ABSENT,
            ABSENT, ABSENT, mk(I8, NULL, 3, 0, 2, 2), ROW, COL, ROW);
    expect_y(c, QMM_PROFILE_SPEC, NULL, 0);
}

Test(values, int32_overflow_gives_the_wrapped_alternative)
{
    /* K = 131072, every product (-128)*(-128) = 16384: acc = 2^31, one past INT32_MAX.
     * Exact: saturates to 127; from the int32-wrapped acc (-2^31): -128. */
    const int k = 131072;
    int8_t *a = malloc((size_t)k), *b = malloc((size_t)k);
    memset(a, 0x80, (size_t)k);
    memset(b, 0x80, (size_t)k);
    int8_t y = 0, yw = 0;
    qmm_call c = qom(mk(I8, a, 2, 1, k), SF(1.0f), mk(I8, b, 2, k, 1), SF(1.0f), SF(1.0f),
                     ABSENT, ABSENT, ABSENT, mk(I8, &y, 2, 1, 1), ROW, COL, ROW);
    qmm_tensor w = mk(I8, &yw, 2, 1, 1);
    int overflow = 0;
    qmm_status st;
    cr_assert_eq(qmm_ref_compute(&c, &w, &overflow, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(overflow, 1);
    cr_expect_eq(y, 127);
    cr_expect_eq(yw, -128);
    qmm_ref_element e;
    cr_assert_eq(qmm_ref_explain(&c, 0, &e, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(e.acc, 2147483648LL);
    cr_expect_eq(e.overflow, 1);
    cr_expect_eq(e.wrapped, -128);
    /* ort-fp32 accumulates in int32 as cublasLt does: -2^31 -> -128 */
    expect_y(c, QMM_PROFILE_ORT_FP32, (int8_t[]){-128}, 1);
    free(a);
    free(b);
}

Test(values, explain_reads_y_in_its_layout)
{
    vcase v;
    int8_t y[128];
    get_case(6, &v);
    v.call.u.qorderedmatmul.y.data = y;
    qmm_ref_element e;
    qmm_status st;
    /* buffer index 104 of the COL32 Y [2,64] is Y[1][40]: acc 15, 15/4 = 3.75 -> 4 */
    cr_assert_eq(qmm_ref_explain(&v.call, 104, &e, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(e.acc, 15);
    cr_expect_eq(e.expected, 4);
    cr_expect_str_eq(e.scaled, "3.75");
    /* index 35 is Y[1][3]: acc -2, -0.5 -> 0 */
    cr_assert_eq(qmm_ref_explain(&v.call, 35, &e, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(e.acc, -2);
    cr_expect_eq(e.expected, 0);
    cr_expect_str_eq(e.scaled, "-0.5");
    cr_expect_eq(qmm_ref_explain(&v.call, 128, &e, &st), QMM_INVALID_ARGUMENT);
    /* with bias and C: case 7, index 7 is Y[0][7]: -2.5 + 2 = -0.5 */
    get_case(7, &v);
    v.call.u.qorderedmatmul.y.data = y;
    cr_assert_eq(qmm_ref_explain(&v.call, 7, &e, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(e.acc, -20);
    cr_expect_str_eq(e.scaled, "-0.5");
}

/* ---- rejections ----------------------------------------------------------------------- */

/* A 32x32x32 problem every order can lay out cleanly. */
static int8_t Z32[32 * 32];

static float ONE = 1.0f;

static qmm_call square(int oa, int ob, int oy)
{
    qmm_tensor s = mk(F32, &ONE, 0);
    return qom(mk(I8, Z32, 2, 32, 32), s, mk(I8, Z32, 2, 32, 32), s, s, ABSENT, ABSENT, ABSENT,
               mk(I8, NULL, 2, 32, 32), oa, ob, oy);
}

Test(invalid, every_order_combination)
{
    int allowed = 0;
    for (int oa = -1; oa <= 5; oa++)
        for (int ob = -1; ob <= 5; ob++)
            for (int oy = -1; oy <= 5; oy++) {
                qmm_call c = square(oa, ob, oy);
                int8_t y[32 * 32];
                c.u.qorderedmatmul.y.data = y;
                qmm_status st;
                qmm_status_code rc = qmm_ref_compute(&c, NULL, NULL, &st);
                int in_range = oa >= 0 && oa <= 4 && ob >= 0 && ob <= 4 && oy >= 0 && oy <= 4;
                int ok = (oa == ROW && ob == COL && oy == ROW) ||
                         (oa == COL32 && (ob == COL4 || ob == COL32_2R) && oy == COL32);
                if (ok) {
                    allowed++;
                    cr_expect_eq(rc, QMM_OK, "A %d B %d Y %d: %s", oa, ob, oy, st.message);
                } else {
                    cr_expect_eq(rc, QMM_INVALID_ARGUMENT, "A %d B %d Y %d accepted", oa, ob, oy);
                    cr_expect(strstr(st.message, in_range ? "not an allowed combination"
                                                          : "is not a cublasLt order"),
                              "A %d B %d Y %d: %s", oa, ob, oy, st.message);
                }
            }
    cr_expect_eq(allowed, 3);
}

Test(invalid, tiles)
{
    static int8_t buf[64 * 64];
    /* order_A=COL32 needs K % 32 == 0 */
    qmm_call c = qom(mk(I8, buf, 2, 2, 16), SF(1), mk(I8, buf, 2, 16, 32), SF(1), SF(1), ABSENT,
                     ABSENT, ABSENT, mk(I8, NULL, 2, 2, 32), COL32, COL4, COL32);
    expect_invalid(c, "A: order_A=COL32 needs columns % 32 == 0 (M x K: 2 x 16)");
    /* COL4_4R2_8C on B transposed (N x K): N = 36 is not a multiple of 8 */
    c = qom(mk(I8, buf, 2, 2, 32), SF(1), mk(I8, buf, 2, 32, 36), SF(1), SF(1), ABSENT, ABSENT,
            ABSENT, mk(I8, NULL, 2, 2, 36), COL32, COL4, COL32);
    expect_invalid(c, "B: order_B=COL4_4R2_8C needs rows % 8 == 0 and columns % 32 == 0 "
                      "(transposed, N x K: 36 x 32)");
    /* N = 40 suits COL4_4R2_8C (40 % 8 == 0) but not Y's COL32 */
    c = qom(mk(I8, buf, 2, 2, 32), SF(1), mk(I8, buf, 2, 32, 40), SF(1), SF(1), ABSENT, ABSENT,
            ABSENT, mk(I8, NULL, 2, 2, 40), COL32, COL4, COL32);
    expect_invalid(c, "Y: order_Y=COL32 needs columns % 32 == 0 (M x N: 2 x 40)");
    /* COL32_2R_4R4 needs N % 32 == 0: N = 40 fails on B first */
    c.u.qorderedmatmul.order_b = COL32_2R;
    expect_invalid(c, "B: order_B=COL32_2R_4R4 needs rows % 32 == 0 and columns % 32 == 0 "
                      "(transposed, N x K: 40 x 32)");
    /* a clean COL32_2R_4R4 problem with M not a multiple of anything is fine: M = 3 */
    c = qom(mk(I8, buf, 2, 3, 32), SF(1), mk(I8, buf, 2, 32, 32), SF(1), SF(1), ABSENT, ABSENT,
            ABSENT, mk(I8, NULL, 2, 3, 32), COL32, COL32_2R, COL32);
    int8_t y[96];
    c.u.qorderedmatmul.y.data = y;
    qmm_status st;
    cr_expect_eq(qmm_ref_compute(&c, NULL, NULL, &st), QMM_OK, "%s", st.message);
}

Test(invalid, shapes)
{
    qmm_call base = qom(mk(I8, A23, 2, 2, 3), SF(1), mk(I8, B32, 2, 3, 2), SF(1), SF(1), ABSENT,
                        ABSENT, ABSENT, mk(I8, NULL, 2, 2, 2), ROW, COL, ROW);
    qmm_call c = base;
    c.u.qorderedmatmul.a = mk(I8, A23, 1, 6);
    c.u.qorderedmatmul.y = mk(I8, NULL, 1, 2);
    expect_invalid(c, "A: rank 1; QOrderedMatMul takes a 2-D [M,K] or 3-D [batch,M,K] A");
    c = base;
    c.u.qorderedmatmul.a = mk(I8, A23, 4, 1, 1, 2, 3);
    expect_invalid(c, "A: rank 4");
    c = base;
    c.u.qorderedmatmul.b = mk(I8, B32, 1, 6);
    expect_invalid(c, "B: rank 1");
    c = base;
    c.u.qorderedmatmul.b = mk(I8, B32, 2, 2, 3);
    expect_invalid(c, "B: K mismatch: A has K=3, B has K=2");
    c = base; /* B batch 2 against a 2-D A (batch 1) */
    c.u.qorderedmatmul.b = mk(I8, B232, 3, 2, 3, 2);
    expect_invalid(c, "B: batch 2 must be 1 or A's batch (1)");
    c = base;
    c.u.qorderedmatmul.y = mk(I8, NULL, 2, 2, 3);
    expect_invalid(c, "Y: shape [2,3] differs from the expected [2,2]");
    c = base;
    c.u.qorderedmatmul.scale_a = mk(F32, (float[]){1, 1}, 1, 2);
    expect_invalid(c, "scale_A: shape [2], must be a scalar");
    c = base;
    c.u.qorderedmatmul.scale_y = mk(F32, (float[]){1, 1}, 2, 1, 2);
    expect_invalid(c, "scale_Y: shape [1,2], must be a scalar");
    c = base;
    c.u.qorderedmatmul.scale_b = mk(F32, (float[]){1, 1, 1}, 1, 3);
    expect_invalid(c, "scale_B: shape [3] is neither a scalar nor per-column [2]");
    c = base;
    c.u.qorderedmatmul.scale_b = mk(F32, (float[]){1, 1}, 2, 1, 2);
    expect_invalid(c, "scale_B: shape [1,2]");
    c = base;
    c.u.qorderedmatmul.bias = mk(F32, (float[]){1, 1, 1}, 1, 3);
    expect_invalid(c, "bias: shape [3], must be 1-D [N] = [2]");
    c = base;
    c.u.qorderedmatmul.bias = SF(1);
    expect_invalid(c, "bias: shape [], must be 1-D [N] = [2]");
    c = base;
    c.u.qorderedmatmul.c = mk(I8, C22, 2, 2, 2);
    expect_invalid(c, "scale_C: missing (C is given)");
    c = base;
    c.u.qorderedmatmul.scale_c = SF(1);
    expect_invalid(c, "scale_C: given without C");
    c = base;
    c.u.qorderedmatmul.c = mk(I8, C22, 2, 1, 4);
    c.u.qorderedmatmul.scale_c = SF(1);
    expect_invalid(c, "C: matrix 1 x 4 differs from Y's 2 x 2");
    c = base;
    c.u.qorderedmatmul.c = mk(I8, C22, 1, 4);
    c.u.qorderedmatmul.scale_c = SF(1);
    expect_invalid(c, "C: rank 1");
    c = base;
    c.u.qorderedmatmul.c = mk(I8, C222, 3, 2, 2, 2);
    c.u.qorderedmatmul.scale_c = SF(1);
    expect_invalid(c, "C: batch 2 must be 1 or A's batch (1)");
    c = base;
    c.u.qorderedmatmul.c = mk(I8, C22, 2, 2, 2);
    c.u.qorderedmatmul.scale_c = mk(F32, (float[]){1, 1}, 1, 2);
    expect_invalid(c, "scale_C: shape [2], must be a scalar");
    c = base;
    c.u.qorderedmatmul.a.dims[0] = -1;
    expect_invalid(c, "A: dim 0 is negative");
}

Test(invalid, types_and_values)
{
    qmm_call base = qom(mk(I8, A23, 2, 2, 3), SF(1), mk(I8, B32, 2, 3, 2), SF(1), SF(1), ABSENT,
                        ABSENT, ABSENT, mk(I8, NULL, 2, 2, 2), ROW, COL, ROW);
    qmm_call c = base;
    c.u.qorderedmatmul.a.dtype = U8;
    expect_invalid(c, "A: dtype uint8, QOrderedMatMul needs int8");
    c = base;
    c.u.qorderedmatmul.b.dtype = U8;
    expect_invalid(c, "B: dtype uint8");
    c = base;
    c.u.qorderedmatmul.scale_b = mk(F16, (uint16_t[]){0x3c00}, 0);
    expect_invalid(c, "scale_B: dtype float16, QOrderedMatMul needs float");
    c = base;
    c.u.qorderedmatmul.scale_y = ABSENT;
    expect_invalid(c, "scale_Y: missing");
    c = base;
    c.u.qorderedmatmul.bias = mk(I32, (int32_t[]){1, 1}, 1, 2);
    expect_invalid(c, "bias: dtype int32");
    c = base;
    c.u.qorderedmatmul.c = mk(U8, C22, 2, 2, 2);
    c.u.qorderedmatmul.scale_c = SF(1);
    expect_invalid(c, "C: dtype uint8");
    c = base;
    c.u.qorderedmatmul.y.dtype = U8;
    expect_invalid(c, "Y: dtype uint8 differs from the expected int8");
    c = base;
    c.u.qorderedmatmul.scale_a = SF(0.0f);
    expect_invalid(c, "scale_A[0]: must be finite and > 0");
    c = base;
    c.u.qorderedmatmul.scale_b = mk(F32, (float[]){1.0f, -1.0f}, 1, 2);
    expect_invalid(c, "scale_B[1]: must be finite and > 0");
    c = base;
    c.u.qorderedmatmul.scale_y = SF(INFINITY);
    expect_invalid(c, "scale_Y[0]: must be finite and > 0");
    c = base;
    c.u.qorderedmatmul.c = mk(I8, C22, 2, 2, 2);
    c.u.qorderedmatmul.scale_c = SF(NAN);
    expect_invalid(c, "scale_C[0]: must be finite and > 0");
    c = base;
    c.u.qorderedmatmul.bias = mk(F32, (float[]){0.0f, NAN}, 1, 2);
    expect_invalid(c, "bias[1]: must be finite");
    c = base;
    c.u.qorderedmatmul.a.data = NULL;
    expect_invalid(c, "A: data is NULL");
}

/* ---- backends ----------------------------------------------------------------------------- */

Test(backend, reference_profiles)
{
    vcase v;
    get_case(1, &v);
    int8_t y[4];
    v.call.u.qorderedmatmul.y.data = y;
    const char *opts[] = {"", "profile=ort-fp32", "profile=onnx-ref", "profile=orion-fp16x16"};
    const qmm_status_code want[] = {QMM_OK, QMM_OK, QMM_UNSUPPORTED, QMM_UNSUPPORTED};
    for (int i = 0; i < 4; i++) {
        qmm_status st;
        qmm_backend *be = qmm_reference_open(QMM_ABI_VERSION, opts[i], &st);
        cr_assert_not_null(be, "%s", st.message);
        cr_expect_eq(be->query(be, &v.call, &st), want[i], "%s: %s", opts[i], st.message);
        if (want[i] == QMM_OK) {
            memset(y, 0, sizeof y);
            cr_expect_eq(qmm_backend_run(be, &v.call, &st), QMM_OK, "%s", st.message);
            cr_expect(memcmp(y, v.want, 4) == 0, "%s: %d %d %d %d", opts[i], y[0], y[1], y[2],
                      y[3]);
        } else {
            cr_expect(strstr(st.message, "QOrderedMatMul"), "%s", st.message);
        }
        be->close(be);
    }
}

Test(backend, optimized_cpu_computes_it)
{
    /* optimized/cpu/qordered.c (it answered UNSUPPORTED before 2026-11-27) */
    vcase v;
    get_case(0, &v);
    int8_t y[4];
    v.call.u.qorderedmatmul.y.data = y;
    qh_backend b;
    qh_error err;
    cr_assert_eq(qh_backend_open("optimized", &b, &err), 0, "%s", err.msg);
    qmm_status st;
    cr_expect_eq(b.be->query(b.be, &v.call, &st), QMM_OK, "%s", st.message);
    cr_expect_eq(qmm_backend_run(b.be, &v.call, &st), QMM_OK, "%s", st.message);
    qh_backend_release(&b);
}

Test(backend, expectation_under_each_profile)
{
    /* qh_expect goes through qmm_ref_compute_profile: ort-fp32 must use the ORT form */
    vcase v;
    get_case(9, &v);
    v.call.u.qorderedmatmul.y.data = NULL;
    qh_expectation e;
    cr_assert_eq(qh_expect(&v.call, "ort-fp32", &e), 0, "%s", e.message);
    cr_expect_eq(e.code, QMM_OK, "%s", e.message);
    cr_expect_eq(((int8_t *)e.exact.data)[0], 0);
    qh_expectation_free(&e);
    cr_assert_eq(qh_expect(&v.call, "spec", &e), 0, "%s", e.message);
    cr_expect_eq(((int8_t *)e.exact.data)[0], 1);
    qh_expectation_free(&e);
    cr_assert_eq(qh_expect(&v.call, "onnx-ref", &e), 0, "%s", e.message);
    cr_expect_eq(e.code, QMM_UNSUPPORTED);
    qh_expectation_free(&e);
}

/* ---- the loader --------------------------------------------------------------------------- */

static qh_attr int_attr(const char *name, int64_t v)
{
    qh_attr a;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", name);
    a.type = QH_ATTR_INT;
    a.i = v;
    return a;
}

Test(loader, builds_from_node_inputs_and_attributes)
{
    qmm_tensor a = mk(I8, A23, 2, 2, 3), sa = SF(1), b = mk(I8, B32, 2, 3, 2), sb = SF(1),
               sy = SF(1), c = mk(I8, C22, 2, 2, 2), sc = SF(2);
    const qmm_tensor *in[8] = {&a, &sa, &b, &sb, &sy, NULL, &c, &sc};
    qh_attr attrs[3] = {int_attr("order_Y", 1), int_attr("order_A", 1), int_attr("order_B", 0)};
    qmm_call call;
    qh_error err;
    cr_assert_eq(qh_call_build_node("QOrderedMatMul", "com.microsoft", 1, in, 8, attrs, 3, &call,
                                    &err), 0, "%s", err.msg);
    cr_expect_eq(call.op, QMM_OP_QORDEREDMATMUL);
    const qmm_qorderedmatmul *q = &call.u.qorderedmatmul;
    cr_expect_eq(q->order_a, ROW);
    cr_expect_eq(q->order_b, COL);
    cr_expect_eq(q->order_y, ROW);
    cr_expect_eq(q->b.data, B32);
    cr_expect_eq(q->bias.dtype, QMM_DTYPE_UNDEFINED);
    cr_expect_eq(q->c.data, C22);
    cr_expect_eq(q->scale_c.data, sc.data);
    cr_expect_eq(q->y.dtype, I8);

    /* an out-of-range order passes through: the reference's verdict decides */
    attrs[0] = int_attr("order_Y", 9);
    cr_assert_eq(qh_call_build_node("QOrderedMatMul", "com.microsoft", 1, in, 5, attrs, 3, &call,
                                    &err), 0, "%s", err.msg);
    cr_expect_eq(call.u.qorderedmatmul.order_y, 9);
}

Test(loader, malformed_nodes)
{
    qmm_tensor a = mk(I8, A23, 2, 2, 3), s = SF(1), b = mk(I8, B32, 2, 3, 2);
    const qmm_tensor *in[8] = {&a, &s, &b, &s, &s, NULL, NULL, NULL};
    qh_attr attrs[4] = {int_attr("order_A", 1), int_attr("order_B", 0), int_attr("order_Y", 1),
                        int_attr("alpha", 1)};
    qmm_call call;
    qh_error err;
    struct { int n_in, n_attrs; int64_t opset; const char *needle; } bad[] = {
        {5, 2, 1, "required attribute order_Y is missing"},
        {5, 4, 1, "unknown attribute 'alpha'"},
        {4, 3, 1, "4 inputs, expected 5 to 8"},
        {5, 3, -1, "imports no com.microsoft opset"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(qh_call_build_node("QOrderedMatMul", "com.microsoft", bad[i].opset, in,
                                        bad[i].n_in, attrs, bad[i].n_attrs, &call, &err), -1);
        cr_expect(strstr(err.msg, bad[i].needle), "'%s' lacks '%s'", err.msg, bad[i].needle);
    }
    attrs[1].type = QH_ATTR_FLOAT;
    cr_expect_eq(qh_call_build_node("QOrderedMatMul", "com.microsoft", 1, in, 5, attrs, 3, &call,
                                    &err), -1);
    cr_expect(strstr(err.msg, "order_B must be an INT"), "%s", err.msg);
    /* an INT past 32 bits is an INT: the message says what is wrong with it */
    attrs[1] = int_attr("order_B", (int64_t)1 << 40);
    cr_expect_eq(qh_call_build_node("QOrderedMatMul", "com.microsoft", 1, in, 5, attrs, 3, &call,
                                    &err), -1);
    cr_expect(strstr(err.msg, "order_B is 1099511627776, outside the 32-bit range"), "%s",
              err.msg);
    attrs[1] = int_attr("order_B", 0);
    in[3] = NULL;
    cr_expect_eq(qh_call_build_node("QOrderedMatMul", "com.microsoft", 1, in, 5, attrs, 3, &call,
                                    &err), -1);
    cr_expect(strstr(err.msg, "required input 3 (scale_B) is missing"), "%s", err.msg);
    /* without attributes (the old entry point) the orders are missing */
    in[3] = &s;
    cr_expect_eq(qh_call_build("QOrderedMatMul", "com.microsoft", 1, in, 5, &call, &err), -1);
    cr_expect(strstr(err.msg, "order_A is missing"), "%s", err.msg);
}

/* ---- vectors/qordered: generated here, committed, run by qmmcheck -------------------------- */

static void write_case(const char *root, const vcase *v)
{
    static const char *const names[8] = {"A",       "scale_A", "B", "scale_B",
                                         "scale_Y", "bias",    "C", "scale_C"};
    const qmm_qorderedmatmul *q = &v->call.u.qorderedmatmul;
    const qmm_tensor *ins[8] = {&q->a, &q->scale_a, &q->b, &q->scale_b, &q->scale_y, &q->bias,
                                &q->c, &q->scale_c};
    char dir[1024];
    qh_error err;
    snprintf(dir, sizeof dir, "%s/%s", root, v->name);

    qh_model *m = calloc(1, sizeof *m);
    cr_assert(m);
    m->ir_version = 8;
    snprintf(m->producer_name, sizeof m->producer_name, "qmmcheck");
    m->n_opsets = 2;
    m->opsets[0].version = 17;
    snprintf(m->opsets[1].domain, sizeof m->opsets[1].domain, "com.microsoft");
    m->opsets[1].version = 1;
    snprintf(m->graph_name, sizeof m->graph_name, "qordered");
    snprintf(m->op_type, sizeof m->op_type, "QOrderedMatMul");
    snprintf(m->domain, sizeof m->domain, "com.microsoft");
    m->n_outputs = 1;
    snprintf(m->outputs[0], QH_NAME_MAX, "Y");
    qh_value_info_of(&m->graph_outputs[m->n_graph_outputs++], "Y", &q->y, 1);
    const char *an[3] = {"order_A", "order_B", "order_Y"};
    const int32_t av[3] = {q->order_a, q->order_b, q->order_y};
    m->n_attrs = 3;
    for (int i = 0; i < 3; i++)
        m->attrs[i] = int_attr(an[i], av[i]);

    qmm_tensor y = q->y;
    y.data = (void *)v->want;
    qh_meta meta;
    qh_meta_init(&meta);
    meta.expect = v->expect;
    char tags[512];
    snprintf(tags, sizeof tags, "%s", v->tags);
    for (char *tok = strtok(tags, ", "); tok; tok = strtok(NULL, ", "))
        snprintf(meta.tags[meta.n_tags++], sizeof meta.tags[0], "%s", tok);
    if (v->profile)
        snprintf(meta.profile, sizeof meta.profile, "%s", v->profile);
    snprintf(meta.provenance, sizeof meta.provenance, "tests/test_qordered.c, hand-computed");
    snprintf(meta.description, sizeof meta.description, "%s", v->description);
    qh_casedir c = {.model = m, .n_inputs = 8, .inputs = ins, .input_names = names,
                    .output = v->expect == QMM_OK ? &y : NULL, .meta = &meta};
    int rc = qh_casedir_write(dir, &c, &err);
    free(m);
    cr_assert_eq(rc, 0, "%s", err.msg);
}

static void write_all(const char *root)
{
    vcase v;
    for (int i = 0; get_case(i, &v); i++)
        write_case(root, &v);
}

TestSuite(vectors, .init = make_tmp, .fini = remove_tmp);

Test(vectors, committed_cases_match_the_generator)
{
    const char *regen = getenv("QMM_QORDERED_REGEN");
    if (regen && *regen)
        write_all(regen);
    char gen[512], cmd[2048], p[512];
    snprintf(gen, sizeof gen, "%s/gen", tmpdir);
    write_all(gen);
    snprintf(p, sizeof p, "%s/diff.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s/vectors/qordered' > '%s' 2>&1", gen,
             env("QMM_SOURCE_DIR"), p);
    int rc = system(cmd);
    char *out = slurp(p);
    cr_expect_eq(rc, 0, "vectors/qordered differs from the generator (regenerate with "
                 "QMM_QORDERED_REGEN, see the top of this file):\n%s", out);
    free(out);
}

Test(vectors, loader_reads_the_committed_cases)
{
    qh_case_list list;
    discover_committed("vectors/qordered", &list);
    qh_error err;
    vcase v;
    int n = 0;
    while (get_case(n, &v))
        n++;
    cr_expect_eq((int)list.count, n);
    for (size_t i = 0; i < list.count; i++) {
        qh_case c;
        cr_assert_eq(qh_case_load(&list.items[i], &c, &err), 0, "%s", err.msg);
        cr_expect_eq(c.oc.call.op, QMM_OP_QORDEREDMATMUL);
        cr_expect(c.oc.y_shape_known, "%s", list.items[i].name);
        qh_case_free(&c);
    }
    qh_case_list_free(&list);
}

Test(vectors, qmmcheck_runs_them)
{
    char *out = qmmcheck_expect(0, "run --backend reference --vectors vectors/qordered");
    cr_expect(strstr(out, "failed:0 mistrusted:0 skipped:0"), "%s", out);
    cr_expect(strstr(out, "error:0"), "%s", out);
    free(out);
    /* isolated: the orders travel to the worker */
    out = qmmcheck_expect(0, "run --backend reference --isolate --vectors vectors/qordered");
    cr_expect(strstr(out, "failed:0 mistrusted:0 skipped:0"), "%s", out);
    free(out);
    /* judged under ort-fp32: the spec-stored cases are still trusted against spec */
    out = qmmcheck_expect(0, "run --backend reference:profile=ort-fp32 --profile ort-fp32 "
                             "--vectors vectors/qordered");
    cr_expect(strstr(out, "mistrusted:0"), "%s", out);
    free(out);
    /* the optimized CPU backend computes every case (optimized/cpu/qordered.c) */
    out = qmmcheck_expect(0, "run --backend optimized --vectors vectors/qordered");
    cr_expect(strstr(out, "failed:0 mistrusted:0 skipped:0"), "%s", out);
    free(out);
}
