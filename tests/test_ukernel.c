/* tests/test_ukernel.c — every registered microkernel of the optimized backend, called
 * directly (not through the backend's matmul).
 *
 * For each row of the kernel table (kernels.c) this CPU runs (the others are skipped with the
 * missing feature), random and extreme A and B are packed with that variant's own packers and
 * its kernels are called on every tile: `kernel` (in one call, and with K split in two calls,
 * the second accumulating) and `kernel_rows` for a partial row group, `gemv` on the unpacked
 * B and `gemv_packed` on the packed one; a fused `pack_b` is compared with the packer and
 * `colsum` it replaces. Their int32 sums must equal the portable C kernel of the same layout
 * (gemm-portable.c, the row's `portable`) bit for bit, and — after the zero-point
 * corrections of opt_internal.h — a naive triple loop of sum_k (a - za)(b - zb) modulo 2^32.
 * A test also checks that every row carries what the driver relies on.
 * Shapes: m and n from 1 to past one tile, K = 0, 1, values that are not multiples of the
 * K group (3, 5, 63, 65, ...), a long K (4099) and one past int32 (33031).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"
#include "tests/rng_support.h"

/* How a case's values are drawn: uniform, or only the type's two extremes (0 and 255 for
 * uint8, -128 and 127 for int8), or every a and zb at one extreme and every b and za at the
 * other (the largest |a - za| * |b - zb|). */
typedef enum fill { FILL_RANDOM, FILL_EXTREMES, FILL_FARTHEST, FILL_COUNT } fill;

/* A value of an int8/uint8 operand as its stored byte. */
static uint8_t draw(uint64_t *s, fill f, int is_signed, int high)
{
    int lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
    int v = f == FILL_RANDOM     ? lo + (int)(splitmix64(s) % 256)
            : f == FILL_EXTREMES ? (splitmix64(s) & 1 ? hi : lo)
                                 : (high ? hi : lo);
    return (uint8_t)v;
}

static int32_t value(uint8_t byte, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)byte : (int32_t)byte;
}

/* One problem: M x K a, K x N b, per-row za, per-column zb. */
typedef struct problem {
    size_t m, n, k;
    int a_signed, b_signed;
    uint8_t *a, *b;
    int32_t *za, *zb;
    const char *fill_name;
} problem;

static void *alloc0(size_t bytes)
{
    /* 64-byte aligned like the driver's buffers; never size 0 */
    size_t size = (bytes + 64) / 64 * 64;
    void *p = aligned_alloc(64, size);
    cr_assert(p, "out of memory");
    memset(p, 0, size);
    return p;
}

static problem problem_make(size_t m, size_t n, size_t k, int a_signed, int b_signed, fill f,
                            uint64_t seed)
{
    static const char *const names[FILL_COUNT] = {"random", "extremes", "farthest"};
    problem p = {m, n, k, a_signed, b_signed, NULL, NULL, NULL, NULL, names[f]};
    uint64_t s = seed;
    p.a = alloc0(m * k);
    p.b = alloc0(k * n);
    p.za = alloc0(m * sizeof *p.za);
    p.zb = alloc0(n * sizeof *p.zb);
    for (size_t i = 0; i < m * k; i++)
        p.a[i] = draw(&s, f, a_signed, 0);
    for (size_t i = 0; i < k * n; i++)
        p.b[i] = draw(&s, f, b_signed, 1);
    for (size_t i = 0; i < m; i++)
        p.za[i] = value(draw(&s, f, a_signed, 1), a_signed);
    for (size_t j = 0; j < n; j++)
        p.zb[j] = value(draw(&s, f, b_signed, 0), b_signed);
    return p;
}

static void problem_free(problem *p)
{
    free(p->a);
    free(p->b);
    free(p->za);
    free(p->zb);
}

/* sum_k (a[i][k] - za[i]) * (b[k][j] - zb[j]) modulo 2^32 */
static uint32_t naive(const problem *p, size_t i, size_t j)
{
    uint32_t s = 0;
    for (size_t kk = 0; kk < p->k; kk++)
        s += (uint32_t)(value(p->a[i * p->k + kk], p->a_signed) - p->za[i]) *
             (uint32_t)(value(p->b[kk * p->n + j], p->b_signed) - p->zb[j]);
    return s;
}

#define CASE_FMT "%s %zux%zux%zu %s a, %s b, %s values"
#define CASE_ARGS(name, p)                                                                  \
    name, (p)->m, (p)->n, (p)->k, (p)->a_signed ? "int8" : "uint8",                          \
        (p)->b_signed ? "int8" : "uint8", (p)->fill_name

/* A row's fused pack_b (panels and column sums in one pass) against the two steps it
 * replaces (qmm_opt_pack_b, then the row's colsum): the same bytes and sums, whole and as the
 * driver calls it, column range by column range (here one panel, then the rest). */
static void check_fused_pack(const qmm_opt_isa_ops *ops, const problem *p, size_t kgroups,
                             const int8_t *bpack, const int32_t *colsum)
{
    size_t nr = (size_t)ops->nr, panels = (p->n + nr - 1) / nr, pstride = kgroups * 4 * nr;
    int8_t *want = alloc0(panels * pstride), *split = alloc0(panels * pstride);
    int32_t *want_sum = alloc0(panels * nr * sizeof(int32_t));
    int32_t *split_sum = alloc0(panels * nr * sizeof(int32_t));
    qmm_opt_pack_b(p->b, p->n, p->b_signed, p->k, kgroups, 0, p->n, ops->nr, 4, 0, want);
    ops->colsum(want, kgroups, panels, pstride, want_sum);
    size_t j1 = nr < p->n ? nr : p->n;
    ops->pack_b(p->b, p->n, p->b_signed, p->k, kgroups, 0, j1, split, split_sum);
    if (j1 < p->n)
        ops->pack_b(p->b, p->n, p->b_signed, p->k, kgroups, j1, p->n, split + pstride,
                    split_sum + j1);
    const char *name = ops->name;
    cr_assert(memcmp(bpack, want, panels * pstride) == 0,
              CASE_FMT ": pack_b's panels differ from qmm_opt_pack_b's", CASE_ARGS(name, p));
    cr_assert(memcmp(split, want, panels * pstride) == 0,
              CASE_FMT ": pack_b in two column ranges differs", CASE_ARGS(name, p));
    for (size_t j = 0; j < p->n; j++)
        cr_assert(colsum[j] == want_sum[j] && split_sum[j] == want_sum[j],
                  CASE_FMT ": column %zu's sum: pack_b %d (in two ranges %d), colsum %d",
                  CASE_ARGS(name, p), j, colsum[j], split_sum[j], want_sum[j]);
    free(want);
    free(split);
    free(want_sum);
    free(split_sum);
}

/* The tile kernels: pack with the variant's packers, run `kernel` / `kernel_rows` on every
 * (row group, panel) tile, compare with `portable` and with the naive sums. */
static void check_tiles(const qmm_opt_isa_ops *ops, const problem *p)
{
    const char *name = ops->name;
    size_t mr = (size_t)ops->mr, nr = (size_t)ops->nr, kg = (size_t)ops->kg;
    size_t align = ops->kalign > 1 ? (size_t)ops->kalign : 1;
    size_t kgroups = ((p->k + kg - 1) / kg + align - 1) / align * align;
    size_t groups = (p->m + mr - 1) / mr, panels = (p->n + nr - 1) / nr;
    size_t npad = panels * nr, ldc = npad + 3; /* 3 guard columns per row */
    int32_t *apack = alloc0(groups * kgroups * mr * sizeof(int32_t));
    int32_t *rowsum = alloc0(p->m * sizeof(int32_t));
    int8_t *bpack = alloc0(panels * kgroups * kg * nr);
    int32_t *colsum = alloc0(npad * sizeof(int32_t));
    int32_t *got = alloc0(groups * mr * ldc * sizeof(int32_t));
    int32_t *split = alloc0(groups * mr * ldc * sizeof(int32_t));
    int32_t *want = alloc0(groups * mr * ldc * sizeof(int32_t));

    if (ops->atiles)
        qmm_opt_pack_a_tiles(p->a, p->k, p->a_signed, p->m, p->k, p->za, ops->mr, kgroups,
                             apack, rowsum);
    else
        qmm_opt_pack_a(p->a, p->k, p->a_signed, p->m, p->k, p->za, ops->mr, ops->kg, apack,
                       rowsum);
    if (kg == 4 && ops->pack_b) {
        ops->pack_b(p->b, p->n, p->b_signed, p->k, kgroups, 0, p->n, bpack, colsum);
        check_fused_pack(ops, p, kgroups, bpack, colsum);
    } else {
        qmm_opt_pack_b(p->b, p->n, p->b_signed, p->k, kgroups, 0, p->n, ops->nr, ops->kg,
                       ops->uw, bpack);
        if (kg == 4)
            ops->colsum(bpack, kgroups, panels, kgroups * kg * nr, colsum);
    }
    /* garbage everywhere: a kernel that does not overwrite its tile, or writes past it into
     * the guard columns, shows */
    memset(got, 0x5a, groups * mr * ldc * sizeof(int32_t));
    memset(split, 0x5a, groups * mr * ldc * sizeof(int32_t));
    /* the second call of a split K starts on a K group the layout can start on (AMX: a tile) */
    size_t k1 = kgroups / 2 / align * align;

    if (ops->task_begin)
        ops->task_begin();
    for (size_t g = 0; g < groups; g++) {
        size_t rows = p->m - g * mr < mr ? p->m - g * mr : mr;
        const int32_t *ag = apack + g * kgroups * mr;
        for (size_t pi = 0; pi < panels; pi++) {
            const int8_t *bp = bpack + pi * kgroups * kg * nr;
            size_t at = g * mr * ldc + pi * nr;
            if (rows < mr && ops->kernel_rows) {
                ops->kernel_rows(rows, kgroups, ag, bp, got + at, ldc, 0);
                ops->kernel_rows(rows, k1, ag, bp, split + at, ldc, 0);
                ops->kernel_rows(rows, kgroups - k1, ag + k1 * mr, bp + k1 * kg * nr,
                                 split + at, ldc, 1);
            } else {
                ops->kernel(kgroups, ag, bp, got + at, ldc, 0);
                ops->kernel(k1, ag, bp, split + at, ldc, 0);
                ops->kernel(kgroups - k1, ag + k1 * mr, bp + k1 * kg * nr, split + at, ldc, 1);
            }
            ops->portable(kgroups, ag, bp, want + at, ldc, 0);
        }
    }
    if (ops->task_end)
        ops->task_end();

    /* the quads layouts' correction terms (opt_internal.h): zap = za (+128 for int8 a);
     * zbp = zb (-128 for uint8 b) for "pairs" and quads, zb (+128 for int8 b) for "unsigned
     * words" */
    uint32_t zap_shift = kg == 4 && p->a_signed ? 128u : 0u;
    uint32_t zbp_shift = ops->uw ? (p->b_signed ? 128u : 0u) : (p->b_signed ? 0u : -128u);
    for (size_t i = 0; i < p->m; i++) {
        uint32_t zap = kg == 4 ? (uint32_t)p->za[i] + zap_shift : 0u;
        for (size_t j = 0; j < npad + 3; j++) {
            size_t at = i * ldc + j;
            if (j >= npad) {
                if (got[at] != 0x5a5a5a5a)
                    cr_assert_fail(CASE_FMT ": kernel wrote past its tile at row %zu, column %zu",
                                   CASE_ARGS(name, p), i, j);
                continue;
            }
            if (got[at] != want[at])
                cr_assert_fail(CASE_FMT ": [%zu][%zu] kernel %d, portable kernel %d",
                               CASE_ARGS(name, p), i, j, got[at], want[at]);
            if (split[at] != want[at])
                cr_assert_fail(CASE_FMT ": [%zu][%zu] kernel in two calls (%zu + %zu K groups) "
                                        "%d, portable kernel %d",
                               CASE_ARGS(name, p), i, j, k1, kgroups - k1, split[at], want[at]);
            if (j >= p->n)
                continue;
            uint32_t zbp = (uint32_t)p->zb[j] + zbp_shift;
            uint32_t acc = (uint32_t)got[at] - zap * (uint32_t)colsum[j] -
                           zbp * (uint32_t)rowsum[i];
            uint32_t exact = naive(p, i, j);
            if (acc != exact)
                cr_assert_fail(CASE_FMT ": [%zu][%zu] corrected kernel sum %d, naive loop %d",
                               CASE_ARGS(name, p), i, j, qmm_opt_wrap_u32(acc),
                               qmm_opt_wrap_u32(exact));
        }
    }
    free(apack);
    free(rowsum);
    free(bpack);
    free(colsum);
    free(got);
    free(split);
    free(want);
}

/* The small-M kernels (rows <= 4): A as rows of int16 pairs a - za; `gemv` on B as it is
 * (row stride n), `gemv_packed` on the "unsigned words" panels. Both sum u(b) = b (+128 for
 * int8 b), so the correction is zbp = zb (+128 for int8 b) times the row sum. */
static void check_gemv(const qmm_opt_isa_ops *ops, const problem *p)
{
    const char *name = ops->name;
    size_t kpairs = (p->k + 1) / 2, panels = (p->n + 15) / 16, ldc = panels * 16 + 3;
    int32_t *apack = alloc0(p->m * kpairs * sizeof(int32_t));
    int32_t *rowsum = alloc0(p->m * sizeof(int32_t));
    int8_t *bpack = alloc0(panels * kpairs * 2 * 16);
    int32_t *got = alloc0(p->m * ldc * sizeof(int32_t));
    int32_t *want = alloc0(p->m * ldc * sizeof(int32_t));
    qmm_opt_pack_a(p->a, p->k, p->a_signed, p->m, p->k, p->za, 1, 2, apack, rowsum);
    uint32_t zbp_shift = p->b_signed ? 128u : 0u;

    for (int packed = 0; packed < 2; packed++) {
        size_t width = packed ? panels * 16 : p->n;
        if (packed) {
            if (!ops->gemv_packed)
                break;
            qmm_opt_pack_b(p->b, p->n, p->b_signed, p->k, kpairs, 0, p->n, 16, 2, 1, bpack);
        }
        memset(got, 0x5a, p->m * ldc * sizeof(int32_t));
        if (packed) {
            ops->gemv_packed(p->m, kpairs, apack, kpairs, bpack, kpairs * 32, panels, got, ldc);
            ops->gemv_packed_portable(p->m, kpairs, apack, kpairs, bpack, kpairs * 32, panels,
                                      want, ldc);
        } else {
            ops->gemv(p->m, p->k, apack, kpairs, p->b, p->n, p->b_signed, p->n, got, ldc);
            ops->gemv_portable(p->m, p->k, apack, kpairs, p->b, p->n, p->b_signed, p->n, want,
                               ldc);
        }
        const char *what = packed ? "gemv_packed" : "gemv";
        for (size_t i = 0; i < p->m; i++)
            for (size_t j = 0; j < ldc; j++) {
                size_t at = i * ldc + j;
                if (j >= width) {
                    if (got[at] != 0x5a5a5a5a)
                        cr_assert_fail(CASE_FMT ": %s wrote past its %zu columns at [%zu][%zu]",
                                       CASE_ARGS(name, p), what, width, i, j);
                    continue;
                }
                if (got[at] != want[at])
                    cr_assert_fail(CASE_FMT ": [%zu][%zu] %s %d, portable %d", CASE_ARGS(name, p),
                                   i, j, what, got[at], want[at]);
                if (j >= p->n)
                    continue;
                uint32_t zbp = (uint32_t)p->zb[j] + zbp_shift;
                uint32_t acc = (uint32_t)got[at] - zbp * (uint32_t)rowsum[i];
                uint32_t exact = naive(p, i, j);
                if (acc != exact)
                    cr_assert_fail(CASE_FMT ": [%zu][%zu] corrected %s sum %d, naive loop %d",
                                   CASE_ARGS(name, p), i, j, what, qmm_opt_wrap_u32(acc),
                                   qmm_opt_wrap_u32(exact));
            }
    }
    free(apack);
    free(rowsum);
    free(bpack);
    free(got);
    free(want);
}

/* Every type combination and fill for one shape. */
static void check_shape(const qmm_opt_isa_ops *ops, size_t m, size_t n, size_t k, int tiles,
                        uint64_t *seed)
{
    for (int sa = 0; sa < 2; sa++)
        for (int sb = 0; sb < 2; sb++)
            for (int f = 0; f < FILL_COUNT; f++) {
                problem p = problem_make(m, n, k, sa, sb, (fill)f, splitmix64(seed));
                if (tiles)
                    check_tiles(ops, &p);
                else
                    check_gemv(ops, &p);
                problem_free(&p);
            }
}

/* K = 0, 1, 2, values around every K group size (2, 4, 16 x 4), and longer */
static const size_t short_ks[] = {0, 1, 2, 3, 4, 5, 7, 63, 64, 65, 67};
static const size_t long_ks[] = {4096 + 3, 33031 /* past int32 for the farthest values */};
#define COUNT(x) (sizeof(x) / sizeof((x)[0]))

static void check_isa(int i)
{
    const qmm_opt_isa_ops *ops = qmm_opt_kernel_row(i);
    const char *missing = qmm_opt_kernel_missing(i);
    if (missing)
        cr_skip_test("%s (%s): %s", ops->name, ops->kernel_name, missing);
    cr_assert(ops->portable, "%s: no portable kernel for its layout", ops->name);
    size_t mr = (size_t)ops->mr, nr = (size_t)ops->nr;
    uint64_t seed = 0x75ce1u + (uint64_t)i;

    /* rows: every count up to 9, then around half a group (AMX's rows form changes at 4 and
     * 16), one group and two; columns: partial, full and past-one panels */
    const size_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, mr / 2, mr / 2 + 1, mr - 1, mr, mr + 1,
                         2 * mr + 1};
    const size_t ns[] = {1, 2, nr - 1, nr, nr + 1, 2 * nr + 3};
    for (size_t mi = 0; mi < COUNT(ms); mi++) {
        if (mi >= 9 && ms[mi] <= 9)
            continue; /* counted already */
        for (size_t ni = 0; ni < COUNT(ns); ni++)
            for (size_t ki = 0; ki < COUNT(short_ks); ki++)
                check_shape(ops, ms[mi], ns[ni], short_ks[ki], 1, &seed);
    }
    for (size_t ki = 0; ki < COUNT(long_ks); ki++) {
        check_shape(ops, 1, nr + 1, long_ks[ki], 1, &seed);
        check_shape(ops, mr + 1, 2, long_ks[ki], 1, &seed);
    }

    if (!ops->gemv)
        return;
    /* the small-M kernels take 1..4 rows; columns across their 32-column blocks and tails */
    const size_t gns[] = {1, 15, 16, 17, 31, 32, 33, 64 + 17};
    for (size_t m = 1; m <= 4; m++)
        for (size_t ni = 0; ni < COUNT(gns); ni++)
            for (size_t ki = 0; ki < COUNT(short_ks); ki++)
                check_shape(ops, m, gns[ni], short_ks[ki], 0, &seed);
    for (size_t ki = 0; ki < COUNT(long_ks); ki++)
        check_shape(ops, 4, 33, long_ks[ki], 0, &seed);
}

/* every row of the kernel table: a new ISA is checked as soon as it has one */
enum { MAX_ROWS = 64 };

ParameterizedTestParameters(ukernel, every_isa)
{
    static int rows[MAX_ROWS];
    int n = qmm_opt_kernel_count();
    for (int i = 0; i < n && i < MAX_ROWS; i++)
        rows[i] = i;
    return cr_make_param_array(int, rows, (size_t)(n < MAX_ROWS ? n : MAX_ROWS));
}

ParameterizedTest(int *row, ukernel, every_isa, .timeout = 600)
{
    check_isa(*row);
}

/* What the driver and the tests rely on a row to carry: a name isa= can take, a layout with
 * a portable kernel for every kernel form the row has, the quads layouts' column sums. */
Test(ukernel, every_row_is_complete)
{
    int n = qmm_opt_kernel_count();
    cr_assert_leq(n, MAX_ROWS, "raise MAX_ROWS");
    cr_assert_null(qmm_opt_kernel_row(0)->check, "row 0 is the portable variant, for any CPU");
    cr_assert_null(qmm_opt_kernel_row(n));
    for (int i = 0; i < n; i++) {
        const qmm_opt_isa_ops *r = qmm_opt_kernel_row(i);
        cr_assert(r->name && r->layout && r->kernel_name && r->portable, "row %d", i);
        cr_assert_eq(qmm_opt_kernel_find(r->name, strlen(r->name)), i, "%s: name twice",
                     r->name);
        cr_assert(r->kg == 2 || r->kg == 4, "%s: K group %d", r->name, r->kg);
        cr_assert(!r->peak_loop == !r->peak || !r->kernel, "%s: peak loop undescribed", r->name);
        if (qmm_opt_kernel_missing(i))
            continue; /* off x86 the x86 rows have no kernels */
        cr_assert(r->kernel && r->requant_row, "%s", r->name);
        cr_assert(!r->gemv || r->gemv_portable, "%s: gemv without its portable form", r->name);
        cr_assert(!r->gemv_packed || r->gemv_packed_portable, "%s: gemv_packed without its "
                  "portable form", r->name);
        cr_assert(r->kg == 2 || r->colsum, "%s: quads without column sums", r->name);
    }
}
