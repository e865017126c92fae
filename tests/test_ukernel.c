/* tests/test_ukernel.c — every registered microkernel of the optimized backend, called
 * directly (not through the backend's matmul).
 *
 * For each ISA variant this CPU runs (the others are skipped with the reason), random and
 * extreme A and B are packed with that variant's own packers and its kernels are called on
 * every tile: `kernel` (in one call, and with K split in two calls, the second accumulating)
 * and `kernel_rows` for a partial row group, `gemv` on the unpacked B and `gemv_packed` on the
 * packed one. Their int32 sums must equal the portable C kernel of the same layout
 * (gemm-portable.c, the table's `portable`) bit for bit, and — after the zero-point
 * corrections of opt_internal.h — a naive triple loop of sum_k (a - za)(b - zb) modulo 2^32.
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

/* The tile kernels: pack with the variant's packers, run `kernel` / `kernel_rows` on every
 * (row group, panel) tile, compare with `portable` and with the naive sums. */
static void check_tiles(const qmm_opt_isa_ops *ops, const problem *p)
{
    const char *name = qmm_opt_isa_name(ops->isa);
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
    const char *name = qmm_opt_isa_name(ops->isa);
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
            qmm_gemv_s16u8_r4x16c2__portable(p->m, kpairs, apack, kpairs, bpack, kpairs * 32,
                                         panels, want, ldc);
        } else {
            ops->gemv(p->m, p->k, apack, kpairs, p->b, p->n, p->b_signed, p->n, got, ldc);
            qmm_gemv_s16u8_r4__portable(p->m, p->k, apack, kpairs, p->b, p->n, p->b_signed, p->n,
                                  want, ldc);
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

static void check_isa(qmm_opt_isa isa)
{
    const char *missing = qmm_opt_isa_missing(isa);
    if (missing)
        cr_skip_test("%s: %s", qmm_opt_isa_name(isa), missing);
    const qmm_opt_isa_ops *ops = qmm_opt_isa_table(isa);
    cr_assert(ops->portable, "%s: no portable kernel for its layout", qmm_opt_isa_name(isa));
    size_t mr = (size_t)ops->mr, nr = (size_t)ops->nr;
    uint64_t seed = 0x75ce1u + (uint64_t)isa;

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
ParameterizedTestParameters(ukernel, every_isa)
{
    static qmm_opt_isa isas[QMM_OPT_ISA_COUNT];
    for (int i = 0; i < QMM_OPT_ISA_COUNT; i++)
        isas[i] = (qmm_opt_isa)i;
    return cr_make_param_array(qmm_opt_isa, isas, QMM_OPT_ISA_COUNT);
}

ParameterizedTest(qmm_opt_isa *isa, ukernel, every_isa, .timeout = 600)
{
    check_isa(*isa);
}
