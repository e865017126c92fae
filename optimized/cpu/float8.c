/* optimized/cpu/float8.c — QLinearMatMul-21 with a float8 a, b or y (docs/semantics.md §2.6),
 * exactly, on the variant's double GEMM tile (gemm-f64.h) and the thread pool.
 * docs/optimized.md, "Float8", has the argument; in short:
 *
 * Integers. Every finite float8 value times 2^shift of its type (bias + mbits - 1: 9, 10, 16,
 * 17) is an integer, so are uint8/int8 values (shift 0). With da = (a - za)·2^Sa and
 * db = (b - zb)·2^Sb, both integers, acc = Σ da·db is an integer and
 *     x = sa·sb·acc·2^-(Sa+Sb) / sy.
 * |da| < 2^19 for e4m3 (448·2^9 and the zero point's as much again), < 2^34 for e5m2.
 *
 * Chunks. A double holds every integer of magnitude up to 2^53. If every |da| <= MA and
 * |db| <= MB, a sum of kc products with kc·MA·MB <= 2^53 has every partial sum an integer of
 * magnitude <= 2^53: each product and each addition is exact, in any order, fused or not.
 * So K is cut into chunks of kc = floor(2^53 / (MA·MB)) (from the call's own maxima), each
 * chunk's sums converted to int64 exactly and added in 128-bit integers; a call with K <= kc
 * (every e4m3 call with K up to 2^15 or so) keeps the doubles as its accumulators.
 *
 * Limbs. Where MA·MB > 2^45 (e5m2: up to 2^68, not even one product fits), an operand with
 * more than 22 bits is split into limbs d = hi·2^s + lo, 0 <= lo < 2^s, s = ceil(bits/2), so
 * every limb has at most ~17 bits and every limb pair its own exact chunks; the pairs'
 * sums are recombined with their weights in 128-bit integers. No K is too long: past the
 * exact range the chunks only get more numerous, never inexact.
 *
 * Requantization. v = fl(fl(acc)·fl(fl(sa·sb)/sy))·2^-(Sa+Sb) (sa·sb exact: scales have at most
 * 24 bits; the power of two exact: nothing underflows), three roundings: |v - x| <= 2^-51|v|.
 * uint8/int8 y: requant_exact.h's decision on v (qmm_rq_decide). float8 y: w = fl(v + zy), and
 * if w - E and w + E (E = 2^-49(|v| + |w|), which bounds |w - (x + zy)| with room for the
 * roundings of the interval's ends) round to the same code, every value between does too
 * (rounding is monotone), x + zy's among them. Otherwise — and for uint8/int8 when v is
 * within 2^-28 of a half-integer — the exact decision: the sign of acc·P·2^-S + sy·d (P =
 * sa·sb, d = zy - h for a candidate midpoint h) as a floating-point expansion (the 128-bit
 * acc as three 42-bit parts, each product with its error by fma), then a binary search over the
 * midpoints of y's values (uint8/int8: the half-integers), ties to the even code.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/qmm_ops.h"
#include "optimized/cpu/opt_internal.h"
#include "optimized/qordered_exact.h"

typedef __int128 i128;

#define MR 6
#define TWO53 9007199254740992.0
#define ROW_BLOCK (8 * MR)    /* rows of a task */
#define PANELS_PER_TASK 16    /* column panels of a task */
#define KBLOCK 256            /* K values per kernel call (the A and B blocks stay cached) */
#define KBLOCK_INLINE 64      /* the same when a task converts its B block (16 panels) */

typedef struct f8_job {
    const qmm_opt_backend *ob;
    const qmm_qlinearmatmul *c;
    const qmm_geometry *g;
    const qmm_param_map *maps;
    int64_t bi;
    size_t m, n, k, nr, mgroups, npanels, rtasks, ctasks;
    int64_t lut_a[256], lut_b[256]; /* operand value · 2^shift by code */
    int la, lb;                     /* limbs of A, of B (1 or 2) */
    int split_a, split_b;           /* the high limb's weight 2^split */
    double *ap[2], *bp[2];          /* packed limbs: [group][k][MR], [panel][k][nr] */
    const uint8_t *araw, *braw;     /* this batch's matrices */
    int64_t *za, *zb;               /* this batch's scaled zero points by row, by column */
    uint64_t *maxima;               /* per maxima task */
    size_t ta, pa;                  /* maxima tasks of A, pack tasks of A (B's follow) */
    int b_inline;                   /* one row block: tasks convert their B blocks */
    int y_tensor;                   /* y_scale and y_zero_point have one element */
    double sy0;                     /* then y_scale's value */
    size_t kc;                      /* K chunk within which every limb pair's sums are exact */
    int direct;                     /* one limb pair, one chunk: the doubles are the sums */
    double inv;                     /* 2^-(Sa+Sb) */
    /* y */
    int y_f8;
    const qmm_float8_format *fy;
    int32_t qmin, qmax;
    int nv;                         /* float8 y: its finite values ascending, and their codes */
    double vals[256];
    uint8_t codes[256];
    double zy_val[256];             /* y_zero_point's value by code */
    double ymax, yunit;             /* float8 y: the largest finite value, 2^shift */
    double pow2neg[64];             /* 2^-e */
    int oom;
} f8_job;

static int shift_of(int32_t dtype)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    return f ? f->shift : 0;
}

static void make_lut(int32_t dtype, int64_t *lut)
{
    for (int code = 0; code < 256; code++)
        lut[code] = qmm_is_float8(dtype) ? qmm_float8_scaled(dtype, (uint8_t)code)
                    : dtype == QMM_DTYPE_INT8 ? (int64_t)(int8_t)code
                                              : (int64_t)code;
}

static int64_t param_scaled(const f8_job *J, const qmm_tensor *t, int map, int64_t i, int64_t j,
                            const int64_t *lut)
{
    return lut[((const uint8_t *)t->data)[qmm_param_offset(&J->maps[map], J->g, J->bi, i, j)]];
}

static int bits_of(uint64_t v)
{
    int b = 0;
    while (v >> b)
        b++;
    return b;
}

/* ---- packing, on the pool: the maxima first (they decide the limbs), then the limbs ---- */

#define PACK_ROWS 64 /* rows of A, or k rows of B, per maxima task */

static uint64_t mag_of(int64_t d)
{
    return (uint64_t)(d < 0 ? -d : d);
}

/* Task t < ta: A's rows [64t, 64t + 64); else B's k rows [64(t - ta), ...): max |d| into
 * J->maxima[t]. */
static void max_task(void *ctx, size_t t, int worker)
{
    (void)worker;
    f8_job *J = ctx;
    uint64_t max = 0;
    if (t < J->ta) {
        size_t i1 = (t + 1) * PACK_ROWS < J->m ? (t + 1) * PACK_ROWS : J->m;
        for (size_t i = t * PACK_ROWS; i < i1; i++)
            for (size_t k = 0; k < J->k; k++) {
                uint64_t v = mag_of(J->lut_a[J->araw[i * J->k + k]] - J->za[i]);
                max = v > max ? v : max;
            }
    } else {
        t -= J->ta;
        size_t k1 = (t + 1) * PACK_ROWS < J->k ? (t + 1) * PACK_ROWS : J->k;
        for (size_t k = t * PACK_ROWS; k < k1; k++)
            for (size_t j = 0; j < J->n; j++) {
                uint64_t v = mag_of(J->lut_b[J->braw[k * J->n + j]] - J->zb[j]);
                max = v > max ? v : max;
            }
        t += J->ta;
    }
    J->maxima[t] = max;
}

/* d into limb 0, or (split s > 0) lo into limb 0 and hi into limb 1: d = hi·2^s + lo,
 * 0 <= lo < 2^s */
static inline void put(double *lo, double *hi, size_t at, int64_t d, int s)
{
    if (!s) {
        lo[at] = (double)d;
        return;
    }
    int64_t l = d & (((int64_t)1 << s) - 1); /* two's complement: d mod 2^s */
    lo[at] = (double)l;
    hi[at] = (double)((d - l) / ((int64_t)1 << s));
}

/* Panels [p0, p1) of B's k rows [kb, kb + kn) into the limbs l[0], l[1] (panel q at
 * q·kn·nr, k-major), reading each row of B once, in order: the task's own conversion when the
 * call has one row block (every panel is then read once, so packing all of B first would only
 * write and read it through memory once more: 128 MB of doubles for a 4096 x 4096 B). */
static void pack_b_block(const f8_job *J, size_t p0, size_t p1, size_t kb, size_t kn,
                         double *const *l)
{
    size_t nr = J->nr;
    for (size_t k = 0; k < kn; k++) {
        const uint8_t *row = J->braw + (kb + k) * J->n;
        for (size_t p = p0; p < p1; p++) {
            size_t at = (p - p0) * kn * nr + k * nr, j = p * nr;
            if (j + nr <= J->n) {
                for (size_t c = 0; c < nr; c++)
                    put(l[0], l[1], at + c, J->lut_b[row[j + c]] - J->zb[j + c], J->split_b);
                continue;
            }
            for (size_t c = 0; c < nr; c++) /* the last panel: zero columns past N */
                put(l[0], l[1], at + c, j + c < J->n ? J->lut_b[row[j + c]] - J->zb[j + c] : 0,
                    J->split_b);
        }
    }
}

/* Task t < pa: A's row groups [8t, 8t + 8) (zero rows past M); else B's panels
 * [16(t - pa), ...) (zero columns past N). */
static void pack_task(void *ctx, size_t t, int worker)
{
    (void)worker;
    f8_job *J = ctx;
    if (t < J->pa) {
        size_t g1 = (t + 1) * 8 < J->mgroups ? (t + 1) * 8 : J->mgroups;
        for (size_t gr = t * 8; gr < g1; gr++) {
            size_t base = gr * J->k * MR;
            for (size_t r = 0; r < MR; r++) {
                size_t i = gr * MR + r;
                for (size_t k = 0; k < J->k; k++)
                    put(J->ap[0], J->ap[1], base + k * MR + r,
                        i < J->m ? J->lut_a[J->araw[i * J->k + k]] - J->za[i] : 0,
                        J->split_a);
            }
        }
        return;
    }
    t -= J->pa;
    size_t nr = J->nr, p1 = (t + 1) * 16 < J->npanels ? (t + 1) * 16 : J->npanels;
    for (size_t p = t * 16; p < p1; p++)
        for (size_t k = 0; k < J->k; k++) {
            size_t base = p * J->k * nr + k * nr;
            for (size_t c = 0; c < nr; c++) {
                size_t j = p * nr + c;
                put(J->bp[0], J->bp[1], base + c,
                    j < J->n ? J->lut_b[J->braw[k * J->n + j]] - J->zb[j] : 0, J->split_b);
            }
        }
}

/* ---- the exact decision ---- */

typedef struct expansion {
    double c[10]; /* nonoverlapping, increasing magnitude, zeros anywhere */
    int n;
} expansion;

static void grow(expansion *x, double b)
{
    double q = b;
    for (int i = 0; i < x->n; i++)
        qmm_qord_two_sum(q, x->c[i], &q, &x->c[i]);
    x->c[x->n++] = q;
}

/* The sign of acc·p·inv + sy·d, exactly: acc in three 42-bit parts (each exact in a double),
 * each product and its error (fma) exact doubles, scaled by the power of two inv exactly
 * (nothing reaches the subnormals: p >= 2^-298, inv >= 2^-34). */
static int sign_of(i128 acc, double p, double inv, double sy, double d)
{
    expansion e = {.n = 0};
    const i128 mask = ((i128)1 << 42) - 1;
    for (int part = 0; part < 3; part++) {
        i128 q = part < 2 ? acc & mask : acc; /* the top part keeps the sign */
        acc = part < 2 ? (acc - q) / ((i128)1 << 42) : 0;
        double t = ldexp((double)(int64_t)q, 42 * part);
        double pt = p * t;
        grow(&e, pt * inv);
        grow(&e, fma(p, t, -pt) * inv);
    }
    double s = sy * d;
    grow(&e, s);
    grow(&e, fma(sy, d, -s));
    for (int i = e.n - 1; i >= 0; i--)
        if (e.c[i] != 0.0)
            return e.c[i] > 0.0 ? 1 : -1;
    return 0;
}

/* clamp(RNE(x) + zy) exactly: the least r in [qmin - zy, qmax - zy] that x does not round
 * above. */
static int32_t exact_q8(const f8_job *J, i128 acc, double p, double sy, int32_t zy)
{
    int64_t lo = J->qmin - zy, hi = J->qmax - zy;
    while (lo < hi) {
        int64_t r = lo + (hi - lo) / 2;
        int s = sign_of(acc, p, J->inv, sy, -((double)r + 0.5));
        if (s > 0 || (s == 0 && (r & 1)))
            lo = r + 1;
        else
            hi = r;
    }
    return (int32_t)(lo + zy);
}

/* round_T3(x + zy) exactly: the value of y's nearest x + zy, ties to the even code, beyond
 * the ends the ends; a zero keeps the sign of x + zy where the type has -0 (+0 when exact). */
static uint8_t exact_f8(const f8_job *J, i128 acc, double p, double sy, double zy)
{
    int lo = 0, hi = J->nv - 1;
    while (lo < hi) {
        int i = lo + (hi - lo) / 2;
        double h = (J->vals[i] + J->vals[i + 1]) * 0.5; /* exact: one more bit */
        int s = sign_of(acc, p, J->inv, sy, zy - h);
        if (s > 0 || (s == 0 && !(J->codes[i + 1] & 1)))
            lo = i + 1;
        else
            hi = i;
    }
    if (J->vals[lo] != 0.0)
        return J->codes[lo];
    return sign_of(acc, p, J->inv, sy, zy) < 0 && !J->fy->fnuz ? 0x80 : 0x00;
}

/* The float8 y code of v, rounded to nearest, ties to even, saturating, a zero keeping v's
 * sign where the type has -0: qmm_float8_encode's result without its table look-up and loops
 * (tests/test_optimized_ops.c: every code, its midpoints and points between, every y type;
 * a tie never decides an element here anyway: the interval around it has ends on both
 * sides, which encode differently). */
static uint8_t encode_y(const f8_job *J, double v)
{
    const qmm_float8_format *f = J->fy;
    double a = fabs(v);
    unsigned mag;
    if (a >= J->ymax) {
        mag = f->max_code;
    } else {
        double t = a * J->yunit; /* in units of the smallest subnormal: exact */
        int e = 0;                /* the quantum 2^e: t's binary exponent less mbits */
        if (t >= (double)(2 << f->mbits)) {
            uint64_t bits;
            memcpy(&bits, &t, sizeof bits);
            e = (int)((bits >> 52) & 0x7ff) - 1023 - f->mbits; /* t is normal here */
        }
        /* ties to even: the even code; 2^-e exact (e <= 17) */
        int64_t u = (int64_t)rint(t * J->pow2neg[e]) << e;
        if (u < ((int64_t)1 << f->mbits)) {
            mag = (unsigned)u; /* zero or subnormal */
        } else {
            int b = 63 - __builtin_clzll((unsigned long long)u);
            mag = (unsigned)(b - f->mbits + 1) << f->mbits |
                  (unsigned)((u >> (b - f->mbits)) - ((int64_t)1 << f->mbits));
        }
    }
    if (mag == 0 && f->fnuz)
        return 0x00;
    return (uint8_t)((signbit(v) ? 0x80u : 0u) | mag);
}

/* One output element from its exact accumulator (acc, and acc_d = fl(acc)). */
static void element(const f8_job *J, i128 acc, double acc_d, double sa, double sb, double sy,
                    int64_t yo, size_t idx)
{
    const uint8_t *yz = J->c->y_zero_point.data;
    uint8_t *y = J->c->y.data;
    double p = sa * sb; /* exact: 24 + 24 bits at most */
    if (J->y_f8) {
        double zy = J->zy_val[yz[yo]];
        if (acc == 0) { /* x = 0 exactly: x + zy is zy, +0 for a zero */
            y[idx] = encode_y(J, 0.0 + zy);
            return;
        }
        double v = acc_d * (p / sy) * J->inv;
        double w = v + zy;
        double e = (fabs(v) + fabs(w)) * (1.0 / 562949953421312.0); /* 2^-49 */
        uint8_t lo = encode_y(J, w - e);
        if (lo == encode_y(J, w + e)) {
            y[idx] = lo;
            return;
        }
        y[idx] = exact_f8(J, acc, p, sy, zy);
        return;
    }
    int32_t zy = J->c->y_zero_point.dtype == QMM_DTYPE_INT8 ? (int32_t)(int8_t)yz[yo]
                                                           : (int32_t)yz[yo];
    int32_t q;
    if (acc == 0)
        q = qmm_rq_clamp_add(0, zy, J->qmin, J->qmax);
    else if (!qmm_rq_decide(acc_d * (p / sy) * J->inv, zy, J->qmin, J->qmax, &q))
        q = exact_q8(J, acc, p, sy, zy);
    y[idx] = (uint8_t)((uint32_t)q & 0xffu);
}

/* ---- the tasks: ROW_BLOCK rows x PANELS_PER_TASK panels each ---- */

static void task(void *ctx, size_t t, int worker)
{
    (void)worker;
    f8_job *J = ctx;
    size_t nr = J->nr;
    size_t g0 = (t / J->ctasks) * (ROW_BLOCK / MR), p0 = (t % J->ctasks) * PANELS_PER_TASK;
    size_t g1 = g0 + ROW_BLOCK / MR, p1 = p0 + PANELS_PER_TASK;
    g1 = g1 > J->mgroups ? J->mgroups : g1;
    p1 = p1 > J->npanels ? J->npanels : p1;
    size_t rows = (g1 - g0) * MR, ldc = (p1 - p0) * nr, cells = rows * ldc;
    int pairs = J->la * J->lb;
    double *cbuf = aligned_alloc(64, ((size_t)pairs * cells * sizeof(double) + 63) & ~(size_t)63);
    i128 *acc = J->direct ? NULL : malloc(cells * sizeof *acc + 1);
    double *bl[2] = {NULL, NULL};
    if (J->b_inline) {
        bl[0] = aligned_alloc(64, 2 * KBLOCK_INLINE * ldc * sizeof(double));
        bl[1] = bl[0] ? bl[0] + KBLOCK_INLINE * ldc : NULL;
    }
    if (!cbuf || (!J->direct && !acc) || (J->b_inline && !bl[0])) {
        free(cbuf);
        free(acc);
        free(bl[0]);
        __atomic_store_n(&J->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    if (acc)
        memset(acc, 0, cells * sizeof *acc);
    for (size_t k0 = 0; k0 < J->k || k0 == 0; k0 += J->kc) {
        size_t k1 = J->k - k0 < J->kc ? J->k : k0 + J->kc;
        memset(cbuf, 0, (size_t)pairs * cells * sizeof *cbuf);
        size_t kblock = bl[0] ? KBLOCK_INLINE : KBLOCK;
        for (size_t kb = k0; kb < k1; kb += kblock) {
            size_t kn = k1 - kb < kblock ? k1 - kb : kblock;
            if (bl[0]) /* B converted here, the block in cache (one row block) */
                pack_b_block(J, p0, p1, kb, kn, bl);
            for (size_t p = p0; p < p1; p++) {
                const double *b[2];
                if (bl[0]) {
                    b[0] = bl[0] + (p - p0) * kn * nr;
                    b[1] = bl[1] + (p - p0) * kn * nr;
                } else {
                    b[0] = J->bp[0] + p * J->k * nr + kb * nr;
                    b[1] = J->bp[1] ? J->bp[1] + p * J->k * nr + kb * nr : NULL;
                }
                for (int x = 0; x < J->la; x++)
                    for (int yl = 0; yl < J->lb; yl++) {
                        double *cp = cbuf + (size_t)(x * J->lb + yl) * cells;
                        for (size_t g = g0; g < g1; g++)
                            J->ob->v->f64_gemm(kn, J->ap[x] + g * J->k * MR + kb * MR, b[yl],
                                               cp + (g - g0) * MR * ldc + (p - p0) * nr, ldc);
                    }
            }
        }
        if (J->direct)
            break;
        for (int x = 0; x < J->la; x++)
            for (int yl = 0; yl < J->lb; yl++) {
                const double *cp = cbuf + (size_t)(x * J->lb + yl) * cells;
                int w = (x ? J->split_a : 0) + (yl ? J->split_b : 0);
                for (size_t i = 0; i < cells; i++)
                    acc[i] += (i128)(int64_t)cp[i] * ((i128)1 << w);
            }
        if (k1 >= J->k)
            break;
    }
    /* the epilogue of the block's valid elements */
    const qmm_qlinearmatmul *c = J->c;
    const qmm_param_map *ym = &J->maps[QMM_MAP_Y_SCALE];
    int64_t ybase = qmm_param_offset(ym, J->g, J->bi, 0, 0);
    size_t i1 = g1 * MR > J->m ? J->m : g1 * MR, j0 = p0 * nr, j1 = p1 * nr > J->n ? J->n : p1 * nr;
    double sb[PANELS_PER_TASK * 16];
    for (size_t j = j0; j < j1; j++)
        sb[j - j0] = qmm_scale_decode(
            c->b_scale.dtype, c->b_scale.data,
            qmm_param_offset(&J->maps[QMM_MAP_B_SCALE], J->g, J->bi, 0, (int64_t)j));
    for (size_t i = g0 * MR; i < i1; i++) {
        double sa = qmm_scale_decode(
            c->a_scale.dtype, c->a_scale.data,
            qmm_param_offset(&J->maps[QMM_MAP_A_SCALE], J->g, J->bi, (int64_t)i, 0));
        for (size_t j = j0; j < j1; j++) {
            size_t cell = (i - g0 * MR) * ldc + (j - j0);
            int64_t yo = J->y_tensor ? 0
                                     : ybase + ym->row_stride * (int64_t)i +
                                           ym->col_stride * (int64_t)j;
            double sy = J->y_tensor ? J->sy0
                                    : qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, yo);
            i128 a = J->direct ? (i128)(int64_t)cbuf[cell] : acc[cell];
            double ad = J->direct ? cbuf[cell] : (double)a;
            element(J, a, ad, sa, sb[j - j0], sy, yo, ((size_t)J->bi * J->m + i) * J->n + j);
        }
    }
    free(cbuf);
    free(acc);
    free(bl[0]);
}

/* y's finite values ascending, one zero (+0), with their codes. */
static void value_table(f8_job *J)
{
    J->nv = 0;
    for (int code = 0; code < 256; code++) {
        double v = qmm_float8_decode(J->fy->dtype, (uint8_t)code);
        if (!isfinite(v) || (v == 0.0 && code != 0))
            continue;
        int i = J->nv++;
        while (i > 0 && J->vals[i - 1] > v) { /* insertion: 253 values at most */
            J->vals[i] = J->vals[i - 1];
            J->codes[i] = J->codes[i - 1];
            i--;
        }
        J->vals[i] = v;
        J->codes[i] = (uint8_t)code;
    }
}

qmm_status_code qmm_opt_qlinearmatmul_float8(const qmm_opt_backend *ob,
                                             const qmm_qlinearmatmul *c, const qmm_plan *plan,
                                             qmm_status *st)
{
    const qmm_geometry *g = &plan->g;
    if (g->m == 0 || g->n == 0 || g->batch == 0)
        return qmm_status_ok(st);
    f8_job *J = calloc(1, sizeof *J);
    if (!J)
        return qmm_status_oom(st, ob->name, NULL);
    J->ob = ob;
    J->c = c;
    J->g = g;
    J->maps = plan->maps;
    J->m = (size_t)g->m;
    J->n = (size_t)g->n;
    J->k = (size_t)g->k;
    J->nr = (size_t)ob->v->f64_nr;
    J->mgroups = (J->m + MR - 1) / MR;
    J->npanels = (J->n + J->nr - 1) / J->nr;
    J->rtasks = (J->mgroups + ROW_BLOCK / MR - 1) / (ROW_BLOCK / MR);
    J->ctasks = (J->npanels + PANELS_PER_TASK - 1) / PANELS_PER_TASK;
    J->inv = ldexp(1.0, -(shift_of(c->a.dtype) + shift_of(c->b.dtype)));
    J->y_f8 = qmm_is_float8(c->y.dtype);
    J->fy = qmm_float8_format_of(c->y.dtype);
    J->qmin = c->y.dtype == QMM_DTYPE_INT8 ? -128 : 0;
    J->qmax = c->y.dtype == QMM_DTYPE_INT8 ? 127 : 255;
    if (J->y_f8) {
        value_table(J);
        J->ymax = J->vals[J->nv - 1];
        J->yunit = ldexp(1.0, J->fy->shift);
        for (int e = 0; e < 64; e++)
            J->pow2neg[e] = ldexp(1.0, -e);
        for (int code = 0; code < 256; code++)
            J->zy_val[code] = qmm_float8_decode(c->y.dtype, (uint8_t)code);
    }
    make_lut(c->a.dtype, J->lut_a);
    make_lut(c->b.dtype, J->lut_b);
    J->y_tensor = qmm_tensor_numel(&c->y_scale) == 1;
    J->sy0 = J->y_tensor ? qmm_scale_decode(c->y_scale.dtype, c->y_scale.data, 0) : 1.0;
    J->ta = (J->m + PACK_ROWS - 1) / PACK_ROWS;
    J->pa = (J->mgroups + 7) / 8;
    size_t tb = (J->k + PACK_ROWS - 1) / PACK_ROWS, pb = (J->npanels + 15) / 16;
    size_t kk = J->k ? J->k : 1;
    size_t an = J->mgroups * MR * kk, bn = J->npanels * J->nr * kk;
    J->za = malloc(J->m * sizeof *J->za);
    J->zb = malloc(J->n * sizeof *J->zb);
    J->maxima = calloc(J->ta + tb + 1, sizeof *J->maxima);
    void *blk = NULL;
    int cached = 0;
    qmm_status_code rc = QMM_OK;
    if (!J->za || !J->zb || !J->maxima) {
        rc = qmm_status_oom(st, ob->name, "for the float8 operands");
        goto out;
    }
    for (J->bi = 0; J->bi < g->batch; J->bi++) {
        J->araw = (const uint8_t *)c->a.data + qmm_geometry_a_offset(g, J->bi);
        J->braw = (const uint8_t *)c->b.data + qmm_geometry_b_offset(g, J->bi);
        for (size_t i = 0; i < J->m; i++)
            J->za[i] = param_scaled(J, &c->a_zero_point, QMM_MAP_A_ZERO_POINT, (int64_t)i, 0,
                                    J->lut_a);
        for (size_t j = 0; j < J->n; j++)
            J->zb[j] = param_scaled(J, &c->b_zero_point, QMM_MAP_B_ZERO_POINT, 0, (int64_t)j,
                                    J->lut_b);
        qmm_opt_pool_run(ob->pool, J->k ? J->ta + tb : 0, max_task, J);
        uint64_t ma = 0, mb = 0;
        for (size_t t = 0; J->k && t < J->ta + tb; t++) {
            uint64_t *mx = t < J->ta ? &ma : &mb;
            *mx = J->maxima[t] > *mx ? J->maxima[t] : *mx;
        }
        J->la = J->lb = 1;
        J->split_a = J->split_b = 0;
        unsigned __int128 prod = (unsigned __int128)ma * mb;
        if (prod > ((unsigned __int128)1 << 45)) { /* no product may need more than 53 bits */
            if (ma > ((uint64_t)1 << 22)) {
                J->la = 2;
                J->split_a = (bits_of(ma) + 1) / 2;
                ma = (uint64_t)1 << J->split_a; /* bounds lo (< 2^s) and |hi| (<= 2^(b-s)) */
            }
            if (mb > ((uint64_t)1 << 22)) {
                J->lb = 2;
                J->split_b = (bits_of(mb) + 1) / 2;
                mb = (uint64_t)1 << J->split_b;
            }
        }
        /* every limb pair's product is at most ma·mb now: kc of them sum below 2^53 */
        prod = (unsigned __int128)ma * mb;
        J->kc = prod == 0 ? J->k : (size_t)(((unsigned __int128)1 << 53) / prod);
        if (J->kc == 0) /* cannot happen: limbs have at most 17 bits and a sign */
            J->kc = 1;
        J->direct = J->la * J->lb == 1 && J->kc >= J->k;
        if (J->kc > J->k)
            J->kc = J->k ? J->k : 1;
        /* the limbs, in the backend's cached scratch (no fresh pages per call) */
        size_t need = ((size_t)(J->la * an + (J->rtasks == 1 ? 0 : J->lb * bn)) *
                           sizeof(double) + 64 * 4);
        if (blk) /* a later batch may need more limbs: asked again (the cached block grows) */
            qmm_opt_scratch_put(ob, blk, cached);
        blk = qmm_opt_scratch_get(ob, need, &cached);
        if (!blk) {
            rc = qmm_status_oom(st, ob->name, "for the float8 operands");
            goto out;
        }
        char *q = blk;
        size_t at = 0;
        double **slot[4] = {&J->ap[0], &J->ap[1], &J->bp[0], &J->bp[1]};
        J->b_inline = J->rtasks == 1;
        size_t len[4] = {an, J->la > 1 ? an : 0, J->b_inline ? 0 : bn,
                         J->lb > 1 && !J->b_inline ? bn : 0};
        for (int i = 0; i < 4; i++) {
            *slot[i] = len[i] ? (double *)(q + at) : NULL;
            at = (at + len[i] * sizeof(double) + 63) & ~(size_t)63;
        }
        qmm_opt_pool_run(ob->pool, J->pa + (J->b_inline ? 0 : pb), pack_task, J);
        J->oom = 0;
        qmm_opt_pool_run(ob->pool, J->rtasks * J->ctasks, task, J);
        if (J->oom) {
            rc = qmm_status_oom(st, ob->name, "for the float8 accumulators");
            goto out;
        }
    }
    rc = qmm_status_ok(st);
out:
    if (blk)
        qmm_opt_scratch_put(ob, blk, cached);
    free(J->za);
    free(J->zb);
    free(J->maxima);
    free(J);
    return rc;
}
