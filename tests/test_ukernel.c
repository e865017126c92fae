/* tests/test_ukernel.c — every registered microkernel of the optimized backend, called
 * directly (not through the backend's matmul).
 *
 * For each variant of the table (kernels.c) this CPU runs (the others are skipped with the
 * missing feature), random and extreme A and B are packed with that variant's layout's
 * packers and its kernels are called on every tile: `kernel` (in one call, and with K split in
 * two calls, the second accumulating) and `kernel_rows` for a partial row group, `gemv` on the
 * unpacked B and `gemv_packed` on the packed one; the variant's `pack_b` and `colsum` are
 * compared with its layout's portable packer and column sums. Their int32 sums must equal the
 * portable C kernel of the same layout (gemm-portable.c, the layout's `kernel`; the portable
 * variant's `gemv`) bit for bit, and — after the zero-point corrections of opt_internal.h — a
 * naive triple loop of sum_k (a - za)(b - zb) modulo 2^32. A test also checks that the table
 * left no slot empty that the driver calls.
 * Shapes: m and n from 1 to past one tile, K = 0, 1, values that are not multiples of the
 * K group (3, 5, 63, 65, ...), a long K (4099) and one past int32 (33031).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
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

/* A variant's pack_b (panels and, for the layouts with them, column sums; possibly in one
 * pass) and its colsum against its layout's portable packer and column sums: the same bytes
 * and sums, whole and as the driver calls it, column range by column range (here one panel,
 * then the rest). */
static void check_pack_b(const qmm_opt_variant *v, const problem *p, size_t kgroups,
                         const int8_t *bpack, const int32_t *colsum)
{
    const qmm_opt_layout *L = v->layout;
    size_t nr = (size_t)L->nr, panels = (p->n + nr - 1) / nr;
    size_t pstride = kgroups * (size_t)L->kg * nr;
    int8_t *want = alloc0(panels * pstride), *split = alloc0(panels * pstride);
    int32_t *want_sum = alloc0(panels * nr * sizeof(int32_t));
    int32_t *split_sum = alloc0(panels * nr * sizeof(int32_t));
    int32_t *own_sum = alloc0(panels * nr * sizeof(int32_t));
    int sums = L->colsum != NULL;
    qmm_opt_pack_b(L, p->b, p->n, p->b_signed, p->k, kgroups, 0, p->n, want);
    if (sums) {
        L->colsum(want, kgroups, panels, pstride, want_sum);
        v->colsum(want, kgroups, panels, pstride, own_sum);
    }
    size_t j1 = nr < p->n ? nr : p->n;
    v->pack_b(v, p->b, p->n, p->b_signed, p->k, kgroups, 0, j1, split, sums ? split_sum : NULL);
    if (j1 < p->n)
        v->pack_b(v, p->b, p->n, p->b_signed, p->k, kgroups, j1, p->n, split + pstride,
                  sums ? split_sum + j1 : NULL);
    const char *name = v->name;
    cr_assert(memcmp(bpack, want, panels * pstride) == 0,
              CASE_FMT ": pack_b's panels differ from the layout's packer's", CASE_ARGS(name, p));
    cr_assert(memcmp(split, want, panels * pstride) == 0,
              CASE_FMT ": pack_b in two column ranges differs", CASE_ARGS(name, p));
    for (size_t j = 0; sums && j < p->n; j++)
        cr_assert(colsum[j] == want_sum[j] && split_sum[j] == want_sum[j] &&
                      own_sum[j] == want_sum[j],
                  CASE_FMT ": column %zu's sum: pack_b %d (in two ranges %d), colsum %d, "
                           "portable %d",
                  CASE_ARGS(name, p), j, colsum[j], split_sum[j], own_sum[j], want_sum[j]);
    free(want);
    free(split);
    free(want_sum);
    free(split_sum);
    free(own_sum);
}

/* K groups past K (AMX pads K to a multiple of 16 groups): pack_b fills them with zeros
 * and reads nothing there (before, the avx512vnni packer AMX shares read 4 rows past B's
 * end for each such group). */
static void check_padding_groups(const qmm_opt_variant *v, const problem *p, size_t kgroups)
{
    const qmm_opt_layout *L = v->layout;
    size_t nr = (size_t)L->nr, panels = (p->n + nr - 1) / nr, kpad = kgroups + 2;
    int8_t *bpack = alloc0(panels * kpad * (size_t)L->kg * nr);
    int32_t *colsum = alloc0(panels * nr * sizeof(int32_t));
    v->pack_b(v, p->b, p->n, p->b_signed, p->k, kpad, 0, p->n, bpack, L->colsum ? colsum : NULL);
    check_pack_b(v, p, kpad, bpack, colsum);
    free(bpack);
    free(colsum);
}

/* One kernel_pack call checked: row group g (A at ag), panels from pi (`panels` of them, the
 * second at pstride in the buffer `panel` of 2 * pstride bytes), against pack_b's panels at bp
 * (pbytes apart), the layout's column sums and `kernel`; `want` as check_kernel_pack says. */
typedef struct pack_case {
    const qmm_opt_variant *v;
    const problem *p;
    size_t kgroups, whole, ldc, pbytes, pstride;
    const int32_t *want;
    int8_t *panel;
    int32_t *tile, *ref;
} pack_case;

static void check_pack_call(const pack_case *pc, size_t panels, size_t g, size_t pi,
                            const int32_t *ag, const int8_t *bp)
{
    const qmm_opt_variant *v = pc->v;
    const qmm_opt_layout *L = v->layout;
    const problem *p = pc->p;
    const char *name = v->name;
    size_t mr = (size_t)L->mr, nr = (size_t)L->nr, whole = pc->whole, pbytes = pc->pbytes;
    size_t wbytes = whole * 4 * nr, pstride = pc->pstride;
    int8_t *panel = pc->panel;
    int32_t *tile = pc->tile, *ref = pc->ref, sums[128], ref_sums[128];
    memset(panel, 0x5a, 2 * pstride);
    for (size_t j = 0; j < 128; j++)
        sums[j] = 0x5a5a5a5a;
    for (int acc = 0; acc < 2; acc++)
        v->kernel_pack(whole, ag, p->b + pi * nr, p->n, p->b_signed, panels, panel, pstride,
                       sums, tile, nr, acc);
    v->kernel(mr, whole, ag, bp, ref, nr, 0);
    for (size_t q = 0; q < panels; q++) {
        L->colsum(bp + q * pbytes, whole, 1, pbytes, ref_sums + q * nr);
        cr_assert(memcmp(panel + q * pstride, bp + q * pbytes, wbytes) == 0,
                  CASE_FMT ": kernel_pack's panel %zu (of %zu) differs from pack_b's",
                  CASE_ARGS(name, p), pi + q, panels);
    }
    for (size_t j = 0; j < 64; j++)
        cr_assert(panel[wbytes + j] == 0x5a, CASE_FMT ": kernel_pack wrote past panel %zu's bytes",
                  CASE_ARGS(name, p), pi);
    /* one panel: nothing at the second panel's place, nor its sums */
    for (size_t j = 0; j < wbytes && panels == 1; j++)
        cr_assert(panel[pstride + j] == 0x5a,
                  CASE_FMT ": kernel_pack of one panel wrote a second (panel %zu)",
                  CASE_ARGS(name, p), pi);
    for (size_t j = panels * nr; j < 128; j++)
        cr_assert(sums[j] == 0x5a5a5a5a,
                  CASE_FMT ": kernel_pack of %zu panel(s) wrote column sum %zu",
                  CASE_ARGS(name, p), panels, j);
    for (size_t j = 0; j < panels * nr; j++)
        cr_assert(sums[j] == (int32_t)(2u * (uint32_t)ref_sums[j]),
                  CASE_FMT ": kernel_pack's column sum %zu (twice, %zu panels) %d, colsum %d",
                  CASE_ARGS(name, p), pi * nr + j, panels, sums[j], ref_sums[j]);
    for (size_t r = 0; r < mr; r++)
        for (size_t j = 0; j < nr; j++) {
            size_t i = g * mr + r, jj = pi * nr + j;
            uint32_t twice = 2u * (uint32_t)ref[r * nr + j];
            cr_assert(tile[r * nr + j] == (int32_t)twice,
                      CASE_FMT ": kernel_pack [%zu][%zu] (twice, %zu panels) %d, kernel %d",
                      CASE_ARGS(name, p), i, jj, panels, tile[r * nr + j], ref[r * nr + j]);
            if (whole == pc->kgroups && i < p->m)
                cr_assert(ref[r * nr + j] == pc->want[i * pc->ldc + jj],
                          CASE_FMT ": kernel [%zu][%zu] %d, portable kernel %d",
                          CASE_ARGS(name, p), i, jj, ref[r * nr + j], pc->want[i * pc->ldc + jj]);
        }
}

/* kernel_pack (where the variant has one) on every row group and whole panel, over B's
 * whole K groups, packing one panel and two (the second at a stride past its bytes, so that
 * a stride misread shows): the same panel bytes as pack_b, the column sums of its layout, the
 * tile of the layout's portable kernel (`want`, over all kgroups, where K is whole) or of
 * `kernel`; and with accumulate, both added. */
static void check_kernel_pack(const qmm_opt_variant *v, const problem *p, const int32_t *apack,
                              const int8_t *bpack, size_t kgroups, const int32_t *want,
                              size_t ldc)
{
    const qmm_opt_layout *L = v->layout;
    size_t mr = (size_t)L->mr, nr = (size_t)L->nr, whole = p->k / 4;
    if (!v->kernel_pack || whole == 0)
        return;
    size_t pstride = whole * 4 * nr + 64;
    pack_case pc = {.v = v, .p = p, .kgroups = kgroups, .whole = whole, .ldc = ldc,
                    .pbytes = kgroups * 4 * nr, .pstride = pstride, .want = want,
                    .panel = alloc0(2 * pstride), .tile = alloc0(mr * nr * sizeof(int32_t)),
                    .ref = alloc0(mr * nr * sizeof(int32_t))};
    for (size_t panels = 1; panels <= 2; panels++)
        for (size_t g = 0; g < (p->m + mr - 1) / mr; g++)
            for (size_t pi = 0; (pi + panels) * nr <= p->n; pi++)
                check_pack_call(&pc, panels, g, pi, apack + g * kgroups * mr,
                                bpack + pi * pc.pbytes);
    free(pc.panel);
    free(pc.tile);
    free(pc.ref);
}

/* kernel_raw_a (where the variant has one; uint8 A) on every full row group and panel over
 * A's whole K groups, read from A as it is: the tile of `kernel` on the packed A, once and
 * accumulated. */
static void check_kernel_raw_a(const qmm_opt_variant *v, const problem *p, const int32_t *apack,
                               const int8_t *bpack, size_t kgroups)
{
    const qmm_opt_layout *L = v->layout;
    size_t mr = (size_t)L->mr, nr = (size_t)L->nr, whole = p->k / 4;
    if (!v->kernel_raw_a || p->a_signed || whole == 0)
        return;
    size_t panels = (p->n + nr - 1) / nr, pbytes = kgroups * 4 * nr;
    int32_t *tile = alloc0(mr * nr * sizeof(int32_t)), *ref = alloc0(mr * nr * sizeof(int32_t));
    const char *name = v->name;
    for (size_t g = 0; (g + 1) * mr <= p->m; g++)
        for (size_t pi = 0; pi < panels; pi++) {
            const int8_t *bp = bpack + pi * pbytes;
            for (int acc = 0; acc < 2; acc++)
                v->kernel_raw_a(whole, p->a + g * mr * p->k, p->k, bp, tile, nr, acc);
            v->kernel(mr, whole, apack + g * kgroups * mr, bp, ref, nr, 0);
            for (size_t r = 0; r < mr; r++)
                for (size_t j = 0; j < nr; j++)
                    cr_assert(tile[r * nr + j] == (int32_t)(2u * (uint32_t)ref[r * nr + j]),
                              CASE_FMT ": kernel_raw_a [%zu][%zu] (twice) %d, kernel %d",
                              CASE_ARGS(name, p), g * mr + r, pi * nr + j, tile[r * nr + j],
                              ref[r * nr + j]);
        }
    free(tile);
    free(ref);
}

/* The overlapped kernels (kernel_rq on the packed A; kernel_raw_a_rq on A as it is, K a
 * multiple of 4), one call down one panel of `groups` row groups: tiles 1 .. groups - 1 are
 * multiplied, tile 0's sums (made by `kernel`) and then each multiplied tile's but the last
 * requantized beside the next. Checked: every multiplied tile's sums against the layout's
 * kernel; each requantized tile's masks (word 8 the AND of the rows' words 0-7; a tie, which
 * the float try cannot decide, never marked decided); every lane marked decided against the
 * exact row function (qmm_opt_requant_row) on the tile's sums with zr from its own rows; and
 * nothing written past the 32 columns of y, into the last tile's rows of y, or past the tiles
 * of c. The multipliers are powers of two (x * m exact): 2^-12 (results in range, ties where x
 * = 2048 mod 4096) and 2^-3 (most saturate). */
static void check_rq_run_case(const qmm_opt_variant *v, const problem *p, const int32_t *apack,
                              const int8_t *bpack, size_t kgroups, size_t pi, int raw, int sat_u8,
                              uint64_t *seed)
{
    const qmm_opt_layout *L = v->layout;
    size_t mr = (size_t)L->mr, nr = (size_t)L->nr, groups = p->m / mr;
    size_t ldc = nr + 3, ldy = nr + 5, rows = groups * mr;
    int32_t *c = alloc0(rows * ldc * sizeof(int32_t)), *want = alloc0(rows * ldc * 4);
    int32_t *zr = alloc0(rows * sizeof(int32_t)), *cp = alloc0(2 * nr * sizeof(int32_t));
    uint32_t *dec = alloc0(groups * 16 * sizeof(uint32_t));
    uint8_t *y = alloc0(rows * ldy);
    float *mf = (float *)(void *)(cp + nr);
    const int8_t *bp = bpack + pi * kgroups * 4 * nr;
    int32_t zy = sat_u8 ? 7 : -3, qmin = sat_u8 ? 0 : -128, qmax = sat_u8 ? 255 : 127;
    for (size_t j = 0; j < nr; j++) {
        cp[j] = (int32_t)(splitmix64(seed) % 2001) - 1000;
        mf[j] = j % 2 ? 0x1p-12f : 0x1p-3f;
    }
    for (size_t i = 0; i < rows; i++)
        zr[i] = (int32_t)(splitmix64(seed) % 100001) - 50000;
    memset(c, 0x5a, rows * ldc * sizeof(int32_t));
    memset(y, 0x5a, rows * ldy);
    memset(dec, 0x5a, groups * 16 * sizeof(uint32_t));
    for (size_t g = 0; g < groups; g++)
        L->kernel(mr, kgroups, apack + g * kgroups * mr, bp, want + g * mr * ldc, ldc, 0);
    qmm_opt_rq_tile rq;
    memset(&rq, 0, sizeof rq);
    rq.ldy = (int64_t)ldy;
    rq.zy = zy;
    rq.zr_rows = zr;
    rq.decided_out = dec;
    v->task_begin();
    v->kernel(mr, kgroups, apack, bp, c, ldc, 0); /* tile 0 */
    if (raw)
        v->kernel_raw_a_rq(groups - 1, kgroups, p->a + mr * p->k, p->k, bp, c + mr * ldc, ldc, cp,
                           y, &rq, sat_u8);
    else
        v->kernel_rq(groups - 1, kgroups, apack + kgroups * mr, bp, c + mr * ldc, ldc, cp, y, &rq,
                     sat_u8);
    v->task_end();
    const char *name = v->name, *form = raw ? "kernel_raw_a_rq" : "kernel_rq";
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < ldc; j++) {
            int32_t got = c[i * ldc + j];
            if (j >= nr ? got != 0x5a5a5a5a : got != want[i * ldc + j])
                cr_assert_fail(CASE_FMT ": %s, %zu tiles, panel %zu: sums [%zu][%zu] %d, want %d",
                               CASE_ARGS(name, p), form, groups - 1, pi, i, j, got,
                               j >= nr ? 0x5a5a5a5a : want[i * ldc + j]);
        }
    double m[32]; /* the multipliers as the exact row function takes them (sa = sy = 1) */
    cr_assert(nr <= 32, "%s: a %zu-column panel for the 32-column overlapped kernels", v->name, nr);
    for (size_t j = 0; j < nr; j++)
        m[j] = (double)mf[j];
    for (size_t t = 0; t + 1 < groups; t++) {
        uint32_t all = 0xffffffffu;
        for (size_t r = 0; r < mr; r++) {
            size_t i = t * mr + r;
            uint32_t d = dec[16 * t + r];
            all &= d;
            uint8_t exact[32];
            qmm_opt_requant_row(c + i * ldc, cp, (uint32_t)zr[i], nr, NULL, 1.0, m, m, 1.0, zy,
                                qmin, qmax, exact);
            for (size_t j = 0; j < nr; j++) {
                int32_t x = qmm_rq_wrap((uint32_t)c[i * ldc + j] - (uint32_t)zr[i] -
                                        (uint32_t)cp[j]);
                double vv = (double)x * m[j]; /* exact: m is a power of two */
                int tie = fabs(vv - floor(vv) - 0.5) == 0.0 && fabs(vv) < 512.0;
                int q = sat_u8 ? (int)exact[j] : (int)(int8_t)exact[j];
                int got = sat_u8 ? (int)y[i * ldy + j] : (int)(int8_t)y[i * ldy + j];
                if ((d >> j) & 1u) {
                    if (tie)
                        cr_assert_fail(CASE_FMT ": %s, tile %zu row %zu column %zu: a tie "
                                                "(x = %d) marked decided",
                                       CASE_ARGS(name, p), form, t, r, j, x);
                    if (got != q)
                        cr_assert_fail(CASE_FMT ": %s, tile %zu row %zu column %zu (x = %d, m "
                                                "= %g): y %d, exact %d",
                                       CASE_ARGS(name, p), form, t, r, j, x, m[j], got, q);
                }
            }
            for (size_t j = nr; j < ldy; j++)
                cr_assert(y[i * ldy + j] == 0x5a, CASE_FMT ": %s wrote y past its 32 columns",
                          CASE_ARGS(name, p), form);
        }
        cr_assert(dec[16 * t + 8] == all,
                  CASE_FMT ": %s, tile %zu: the tile's word %#x, the AND of its rows %#x",
                  CASE_ARGS(name, p), form, t, dec[16 * t + 8], all);
    }
    for (size_t i = (groups - 1) * mr; i < rows; i++)
        for (size_t j = 0; j < ldy; j++)
            cr_assert(y[i * ldy + j] == 0x5a, CASE_FMT ": %s wrote the last tile's y (row %zu)",
                      CASE_ARGS(name, p), form, i);
    free(c);
    free(want);
    free(zr);
    free(cp);
    free(dec);
    free(y);
}

static void check_rq_run(const qmm_opt_variant *v, const problem *p, const int32_t *apack,
                         const int8_t *bpack, size_t kgroups, uint64_t *seed)
{
    size_t mr = (size_t)v->layout->mr, nr = (size_t)v->layout->nr;
    if (!v->kernel_rq || p->m / mr < 2 || kgroups == 0)
        return;
    for (size_t pi = 0; pi < (p->n + nr - 1) / nr; pi++)
        for (int raw = 0; raw < 2; raw++)
            for (int sat = 0; sat < 2; sat++)
                if (!raw || (v->kernel_raw_a_rq && !p->a_signed && p->k % 4 == 0))
                    check_rq_run_case(v, p, apack, bpack, kgroups, pi, raw, sat, seed);
}

/* kernel_rows_dense, where the variant has one: the partial row group's words packed `rows`
 * a K group (the layout's packer with mr = rows, as matmul.c packs an A of fewer rows than a
 * group), whole and K split over two calls (the second accumulating), bit for bit against
 * the layout's kernel on the mr-word A (want). */
static void check_dense_rows(const qmm_opt_variant *v, const problem *p, const int32_t *apack,
                             const int8_t *bpack, size_t kgroups, const int32_t *want,
                             size_t ldc)
{
    if (!v->kernel_rows_dense)
        return;
    const qmm_opt_layout *L = v->layout;
    size_t mr = (size_t)L->mr, nr = (size_t)L->nr, kg = (size_t)L->kg;
    size_t groups = (p->m + mr - 1) / mr, panels = (p->n + nr - 1) / nr;
    size_t g = groups - 1, rows = p->m - g * mr; /* the only partial group is the last */
    if (rows == mr || kgroups == 0)
        return;
    int32_t *dense = alloc0(kgroups * rows * sizeof(int32_t));
    int32_t *tile = alloc0(rows * ldc * sizeof(int32_t));
    qmm_opt_layout Ld = *L;
    Ld.mr = (int)rows;
    L->pack_a(&Ld, p->a + g * mr * p->k, p->k, p->a_signed, rows, p->k, p->za + g * mr,
              kgroups, dense, NULL);
    const int32_t *ag = apack + g * kgroups * mr; /* the same words, mr a K group */
    for (size_t q = 0; q < kgroups; q++)
        for (size_t r = 0; r < rows; r++)
            cr_assert(dense[q * rows + r] == ag[q * mr + r],
                      CASE_FMT ": A packed %zu rows a group differs at K group %zu row %zu",
                      CASE_ARGS(v->name, p), rows, q, r);
    size_t k1 = kgroups / 2;
    for (size_t pi = 0; pi < panels; pi++) {
        const int8_t *bp = bpack + pi * kgroups * kg * nr;
        for (int split = 0; split < 2; split++) {
            memset(tile, 0x5a, rows * ldc * sizeof(int32_t));
            if (split) {
                v->kernel_rows_dense(rows, k1, dense, bp, tile, ldc, 0);
                v->kernel_rows_dense(rows, kgroups - k1, dense + k1 * rows, bp + k1 * kg * nr,
                                     tile, ldc, 1);
            } else {
                v->kernel_rows_dense(rows, kgroups, dense, bp, tile, ldc, 0);
            }
            for (size_t r = 0; r < rows; r++)
                for (size_t j = 0; j < nr; j++) {
                    int32_t got = tile[r * ldc + j], exp = want[(g * mr + r) * ldc + pi * nr + j];
                    if (got != exp)
                        cr_assert_fail(CASE_FMT ": kernel_rows_dense%s [%zu][%zu] %d, portable "
                                                "kernel %d",
                                       CASE_ARGS(v->name, p), split ? " (K in two calls)" : "",
                                       g * mr + r, pi * nr + j, got, exp);
                }
            for (size_t r = 0; r < rows; r++) /* nothing written past the tile's columns */
                for (size_t j = nr; j < ldc && j < nr + 3; j++)
                    cr_assert(tile[r * ldc + j] == 0x5a5a5a5a,
                              CASE_FMT ": kernel_rows_dense wrote past its tile",
                              CASE_ARGS(v->name, p));
        }
    }
    free(dense);
    free(tile);
}

/* The tile kernels: pack with the variant's packers, run `kernel` / `kernel_rows` on every
 * (row group, panel) tile, compare with the layout's portable kernel and the naive sums. */
static void check_tiles(const qmm_opt_variant *v, const problem *p)
{
    const qmm_opt_layout *L = v->layout;
    const char *name = v->name;
    size_t mr = (size_t)L->mr, nr = (size_t)L->nr, kg = (size_t)L->kg;
    size_t align = (size_t)L->kalign;
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

    L->pack_a(L, p->a, p->k, p->a_signed, p->m, p->k, p->za, kgroups, apack, rowsum);
    v->pack_b(v, p->b, p->n, p->b_signed, p->k, kgroups, 0, p->n, bpack,
              L->colsum ? colsum : NULL);
    check_pack_b(v, p, kgroups, bpack, colsum);
    /* garbage everywhere: a kernel that does not overwrite its tile, or writes past it into
     * the guard columns, shows */
    memset(got, 0x5a, groups * mr * ldc * sizeof(int32_t));
    memset(split, 0x5a, groups * mr * ldc * sizeof(int32_t));
    /* the second call of a split K starts on a K group the layout can start on (AMX: a tile) */
    size_t k1 = kgroups / 2 / align * align;

    v->task_begin();
    for (size_t g = 0; g < groups; g++) {
        size_t rows = p->m - g * mr < mr ? p->m - g * mr : mr;
        const int32_t *ag = apack + g * kgroups * mr;
        qmm_opt_kernel_ft *kernel = rows < mr ? v->kernel_rows : v->kernel;
        for (size_t pi = 0; pi < panels; pi++) {
            const int8_t *bp = bpack + pi * kgroups * kg * nr;
            size_t at = g * mr * ldc + pi * nr;
            kernel(rows, kgroups, ag, bp, got + at, ldc, 0);
            kernel(rows, k1, ag, bp, split + at, ldc, 0);
            kernel(rows, kgroups - k1, ag + k1 * mr, bp + k1 * kg * nr, split + at, ldc, 1);
            L->kernel(mr, kgroups, ag, bp, want + at, ldc, 0);
        }
    }
    v->task_end();
    check_dense_rows(v, p, apack, bpack, kgroups, want, ldc);
    check_padding_groups(v, p, kgroups);
    check_kernel_pack(v, p, apack, bpack, kgroups, want, ldc);
    check_kernel_raw_a(v, p, apack, bpack, kgroups);
    uint64_t rq_seed = p->m * 31 + p->n * 7 + p->k;
    check_rq_run(v, p, apack, bpack, kgroups, &rq_seed);

    /* the quads layouts' correction terms (opt_internal.h): zap = za (+128 for int8 a);
     * zbp = zb (-128 for uint8 b) for "pairs" and quads, zb (+128 for int8 b) for "unsigned
     * words" */
    uint32_t zap_shift = kg == 4 && p->a_signed ? 128u : 0u;
    uint32_t zbp_shift =
        L->b_unsigned ? (p->b_signed ? 128u : 0u) : (p->b_signed ? 0u : -128u);
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
                               CASE_ARGS(name, p), i, j, qmm_rq_wrap(acc),
                               qmm_rq_wrap(exact));
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
static void check_gemv(const qmm_opt_variant *v, const problem *p)
{
    const char *name = v->name;
    const qmm_opt_layout *L = v->layout;
    const qmm_opt_variant *portable = qmm_opt_variant_at(0);
    size_t kpairs = (p->k + 1) / 2, panels = (p->n + 15) / 16, ldc = panels * 16 + 3;
    int32_t *apack = alloc0(p->m * kpairs * sizeof(int32_t));
    int32_t *rowsum = alloc0(p->m * sizeof(int32_t));
    int8_t *bpack = alloc0(panels * kpairs * 2 * 16);
    int32_t *got = alloc0(p->m * ldc * sizeof(int32_t));
    int32_t *want = alloc0(p->m * ldc * sizeof(int32_t));
    qmm_opt_gemv_a.pack_a(&qmm_opt_gemv_a, p->a, p->k, p->a_signed, p->m, p->k, p->za, kpairs,
                          apack, rowsum);
    uint32_t zbp_shift = p->b_signed ? 128u : 0u;

    for (int packed = 0; packed < 2; packed++) {
        size_t width = packed ? panels * 16 : p->n;
        if (packed) {
            if (!L->b_unsigned)
                break; /* no small-M form on this layout's panels */
            L->pack_b(L, p->b, p->n, p->b_signed, p->k, kpairs, 0, p->n, bpack);
        }
        memset(got, 0x5a, p->m * ldc * sizeof(int32_t));
        if (packed) {
            v->gemv_packed(p->m, kpairs, apack, kpairs, bpack, kpairs * 32, panels, got, ldc);
            L->gemv_packed(p->m, kpairs, apack, kpairs, bpack, kpairs * 32, panels, want, ldc);
        } else {
            v->gemv(p->m, p->k, apack, kpairs, p->b, p->n, p->b_signed, p->n, got, ldc);
            portable->gemv(p->m, p->k, apack, kpairs, p->b, p->n, p->b_signed, p->n, want, ldc);
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
                                   CASE_ARGS(name, p), i, j, what, qmm_rq_wrap(acc),
                                   qmm_rq_wrap(exact));
            }
    }
    free(apack);
    free(rowsum);
    free(bpack);
    free(got);
    free(want);
}

/* Every type combination and fill for one shape. */
static void check_shape(const qmm_opt_variant *v, size_t m, size_t n, size_t k, int tiles,
                        uint64_t *seed)
{
    for (int sa = 0; sa < 2; sa++)
        for (int sb = 0; sb < 2; sb++)
            for (int f = 0; f < FILL_COUNT; f++) {
                problem p = problem_make(m, n, k, sa, sb, (fill)f, splitmix64(seed));
                if (tiles)
                    check_tiles(v, &p);
                else
                    check_gemv(v, &p);
                problem_free(&p);
            }
}

/* K = 0, 1, 2, values around every K group size (2, 4, 16 x 4), and longer */
static const size_t short_ks[] = {0, 1, 2, 3, 4, 5, 7, 63, 64, 65, 67};
static const size_t long_ks[] = {4096 + 3, 33031 /* past int32 for the farthest values */};
#define COUNT(x) (sizeof(x) / sizeof((x)[0]))

static void check_variant(int i)
{
    const qmm_opt_variant *v = qmm_opt_variant_at(i);
    const char *missing = qmm_opt_variant_missing(i);
    if (missing)
        cr_skip_test("%s (%s): %s", v->name, v->kernel_name, missing);
    size_t mr = (size_t)v->layout->mr, nr = (size_t)v->layout->nr;
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
                check_shape(v, ms[mi], ns[ni], short_ks[ki], 1, &seed);
    }
    for (size_t ki = 0; ki < COUNT(long_ks); ki++) {
        check_shape(v, 1, nr + 1, long_ks[ki], 1, &seed);
        check_shape(v, mr + 1, 2, long_ks[ki], 1, &seed);
    }
    /* runs of overlapped tiles (check_rq_run): four, K groups around the row steps' 8 */
    if (v->kernel_rq) {
        const size_t run_ks[] = {4, 28, 32, 36, 62, 64, 260, 1024};
        for (size_t ki = 0; ki < COUNT(run_ks); ki++)
            check_shape(v, 5 * mr + 3, 2 * nr, run_ks[ki], 1, &seed);
    }

    /* the small-M kernels take 1..4 rows; columns across their 32-column blocks and tails */
    const size_t gns[] = {1, 15, 16, 17, 31, 32, 33, 64 + 17};
    for (size_t m = 1; m <= 4; m++)
        for (size_t ni = 0; ni < COUNT(gns); ni++)
            for (size_t ki = 0; ki < COUNT(short_ks); ki++)
                check_shape(v, m, gns[ni], short_ks[ki], 0, &seed);
    for (size_t ki = 0; ki < COUNT(long_ks); ki++)
        check_shape(v, 4, 33, long_ks[ki], 0, &seed);
}

/* every variant of the table: a new one is checked as soon as it has a row */
enum { MAX_VARIANTS = 64 };

ParameterizedTestParameters(ukernel, every_variant)
{
    static int rows[MAX_VARIANTS];
    int n = qmm_opt_variant_count();
    for (int i = 0; i < n && i < MAX_VARIANTS; i++)
        rows[i] = i;
    return cr_make_param_array(int, rows, (size_t)(n < MAX_VARIANTS ? n : MAX_VARIANTS));
}

ParameterizedTest(int *row, ukernel, every_variant, .timeout = 600)
{
    check_variant(*row);
}

/* What the driver and the tests rely on the table to give every variant once it is filled
 * (kernels.c): a name isa= can take, a layout whose tile, packers and portable kernels are
 * there, and every slot the driver calls without looking — inherited where the row did not
 * override it. */
Test(ukernel, every_variant_is_complete)
{
    int n = qmm_opt_variant_count();
    cr_assert_leq(n, MAX_VARIANTS, "raise MAX_VARIANTS");
    cr_assert_null(qmm_opt_variant_at(n));
    cr_assert_null(qmm_opt_variant_missing(0), "variant 0 is the portable one, for any CPU");
    for (int i = 0; i < n; i++) {
        const qmm_opt_variant *v = qmm_opt_variant_at(i);
        const qmm_opt_layout *L = v->layout;
        cr_assert(v->name && L && L->name && v->kernel_name, "variant %d", i);
        cr_assert_eq(qmm_opt_variant_find(v->name, strlen(v->name)), i, "%s: name twice",
                     v->name);
        cr_assert(L->kg == 2 || L->kg == 4, "%s: K group %d", v->name, L->kg);
        cr_assert(L->kalign >= 1 && L->mr >= 1 && L->nr % 16 == 0, "%s: layout %s", v->name,
                  L->name);
        cr_assert(L->pack_a && L->pack_b && L->kernel && L->kernel_name, "%s: layout %s",
                  v->name, L->name);
        cr_assert(L->kg == 2 || L->colsum, "%s: quads without column sums", v->name);
        cr_assert(!L->b_unsigned == !L->gemv_packed, "%s: the unsigned words layout's small-M "
                  "kernel", v->name);
        cr_assert(!v->peak_loop == !v->peak, "%s: peak loop undescribed", v->name);
        cr_assert(v->check && v->kernel && v->kernel_rows && v->gemv && v->pack_b &&
                      v->requant_mults && v->requant_row && v->task_begin && v->task_end,
                  "%s: a slot left empty", v->name);
        cr_assert(v->gemv_rows >= 0 && v->gemv_rows <= QMM_OPT_GEMV_MAX_ROWS, "%s: gemv_rows",
                  v->name);
        cr_assert(v->gemv == qmm_opt_variant_at(0)->gemv || v->gemv_rows > 0,
                  "%s: a gemv of its own that no call runs", v->name);
        cr_assert(!L->colsum == !v->colsum, "%s: column sums", v->name);
        cr_assert(!L->gemv_packed == !v->gemv_packed, "%s: small-M packed kernel", v->name);
        cr_assert(!v->kernel_rows_dense || L->pack_a == qmm_opt_pack_a,
                  "%s: a dense A from a packer other than qmm_opt_pack_a", v->name);
    }
}

/* The portable variant overrides nothing that a layout gives (its kernels are its layout's
 * portable ones: isa=scalar runs qmm_gemm_s16s8_6x16c2__portable), and a variant that
 * overrides nothing inherits the portable variant's slots, not another's. */
Test(ukernel, variants_inherit_from_the_portable_one)
{
    const qmm_opt_variant *portable = qmm_opt_variant_at(0);
    cr_assert_eq(portable->kernel, portable->layout->kernel);
    cr_assert_str_eq(portable->kernel_name, portable->layout->kernel_name);
    cr_assert_eq(portable->kernel_rows, portable->kernel);
    cr_assert_eq(portable->requant_mults, qmm_opt_requant_mults_none);
    cr_assert_eq(portable->pack_b, qmm_opt_pack_b_sums);
    cr_assert_eq(portable->task_begin, qmm_opt_task_none);
    cr_assert_eq(portable->gemv_rows, 0, "the portable tile kernel runs small M");
    int avx2 = qmm_opt_variant_find("avx2", 4);
    cr_assert_geq(avx2, 1);
    const qmm_opt_variant *v = qmm_opt_variant_at(avx2);
    /* the AVX2 kernel is its own partial-rows kernel, and the layout's small-M form its
     * gemv_packed's specification; column sums it has none of; its float first try
     * (requant-avx2.c, since 2026-11-29) takes the range-checked multipliers */
    cr_assert_eq(v->kernel_rows, v->kernel);
    cr_assert_eq(v->pack_b, qmm_opt_pack_b_sums);
    cr_assert_eq(v->requant_mults, qmm_opt_requant_mults_f32);
    cr_assert_eq(v->task_begin, qmm_opt_task_none);
    cr_assert_null(v->colsum);
}
