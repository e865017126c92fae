/* harness/gen/edge/float8.c — the `float8` edge suite (docs/edge-suites.md, docs/semantics.md
 * §2.6): QLinearMatMul-21's float8 types at their ties, ends, subnormals and zeros. */
#include <math.h>

#include "harness/gen/edge_build.h"

static const int32_t f8types[4] = {QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FNUZ,
                                   QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2FNUZ};

static double f8v(int32_t dt, unsigned code) { return qmm_float8_decode(dt, (uint8_t)code); }

/* A finite code of `dt`, uniformly among them. */
static int64_t f8_draw(qh_edge_builder *x, int32_t dt)
{
    for (;;) {
        unsigned c = (unsigned)qh_rng_range(&x->rng, 0, 255);
        if (isfinite(f8v(dt, c)))
            return c;
    }
}

/* Case "<what>-<ty>": rows x_i = a_i · sa_i exactly: each wanted value split into an odd int8 a_i (or 0) and a
 * power-of-two per-row a_scale ([M], the spec's per-row form), b = 1, other scales 1, so the
 * reference sees exactly the x values asked for, then adds zy (a code of ty) and rounds. */
static qh_edge_case *rows_case(qh_edge_builder *x, const char *what, int32_t ty, int64_t zy,
                               const double *xs, int n)
{
    int64_t av[64];
    double sv[64];
    if (n > 64) {
        qh_edge_fail(x, "float8: too many rows (generator bug)");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        double m = xs[i];
        int e = 0;
        while (m != 0 && m != floor(m)) {
            m *= 2;
            e--;
        }
        while (m != 0 && fmod(m, 2) == 0) {
            m /= 2;
            e++;
        }
        if (fabs(m) > 127) {
            qh_edge_fail(x, "float8: a row value needs more than 7 bits (generator bug)");
            return NULL;
        }
        av[i] = (int64_t)m;
        sv[i] = ldexp(1, e);
    }
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 21, "%s-%s", what, qh_edge_type_abbrev(ty));
    if (!c)
        return NULL;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    qh_edge_int_tensor(x, c, &q->a, QMM_DTYPE_INT8, DIMS(n, 1), av);
    qh_edge_int_tensor_filled(x, c, &q->b, QMM_DTYPE_UINT8, DIMS(1, 1), 1);
    qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1, 0, 1, 0, 1, zy, ty);
    qh_edge_scale_tensor(x, c, &q->a_scale, QMM_DTYPE_FLOAT, DIMS(n), sv);
    qh_edge_int_tensor_filled(x, c, &q->a_zero_point, QMM_DTYPE_INT8, DIMS(n), 0);
    qh_edge_tag(c, "float8");
    return c;
}

/* Midpoints between neighbours, both signs: 0 and the smallest subnormal (to the even 0), two
 * subnormal pairs (odd and even lower neighbour), the largest subnormal and the smallest
 * normal, 1 and its neighbours, and the two pairs below the largest finite value. */
static void f8_ties(qh_edge_builder *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    unsigned one = qmm_float8_encode(ty, 1.0), sub_top = (1u << f->mbits) - 1u;
    unsigned lower[8] = {0, 1, 2, sub_top, one - 1, one, f->max_code - 2u, f->max_code - 1u};
    double xs[33];
    int n = 0;
    for (int i = 0; i < 8; i++) {
        double mid = (f8v(ty, lower[i]) + f8v(ty, lower[i] + 1)) / 2;
        xs[n++] = mid;
        xs[n++] = -mid;
    }
    xs[n++] = 0;
    qh_edge_case *c = rows_case(x, "ties", ty, 0, xs, n);
    if (!c)
        return;
    qh_edge_tag(c, "tie");
    qh_edge_tag(c, "subnormal");
    qh_edge_tag(c, "largest-finite");
    qh_edge_describe(
        c,
        "x exactly halfway between neighbouring %s values, both signs: 0 | smallest "
        "subnormal, two subnormal pairs (odd and even lower code), largest subnormal | "
        "smallest normal, around 1, the two pairs below the largest finite; ties go to "
        "the even code",
        qmm_dtype_name(ty));
    /* the same ties reached through y_zero_point: x + zy with zy = 1, x = mid - 1 */
    n = 0;
    for (int i = 4; i < 6; i++) {
        double mid = (f8v(ty, lower[i]) + f8v(ty, lower[i] + 1)) / 2;
        xs[n++] = mid - 1;
    }
    xs[n++] = -1; /* cancels zy exactly: +0 */
    c = rows_case(x, "ties-via-zero-point", ty, one, xs, n);
    if (!c)
        return;
    qh_edge_tag(c, "tie");
    qh_edge_tag(c, "odd-zp");
    qh_edge_describe(c, "y_zero_point 1.0: x + zy exactly halfway around 1 (added before the one "
                        "rounding), and x = -zy giving +0");
}

/* Both ends: the largest finite value, half an ulp past it, twice it, far beyond; then with
 * y_zero_point at the largest finite value of either sign. */
static void f8_saturation(qh_edge_builder *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    double max = f8v(ty, f->max_code), ulp = max - f8v(ty, f->max_code - 1u);
    double far = ldexp(127, 100);
    double xs[8] = {max, -max, max + ulp / 2, -(max + ulp / 2), 2 * max, -2 * max, far, -far};
    qh_edge_case *c = rows_case(x, "saturation", ty, 0, xs, 8);
    if (!c)
        return;
    qh_edge_tag(c, "saturation");
    qh_edge_tag(c, "high");
    qh_edge_tag(c, "low");
    qh_edge_tag(c, "largest-finite");
    qh_edge_describe(c,
                     "x at the largest finite %s value (%g), half an ulp past it, twice it and "
                     "127*2^100, both signs: all give the largest finite value of their sign "
                     "(saturate = 1)",
                     qmm_dtype_name(ty), max);
    for (int neg = 0; neg < 2; neg++) {
        double s = neg ? -1 : 1;
        double ys[4] = {0, s, -s * max, -s * 2 * max};
        c = rows_case(x, neg ? "zero-point-at-lowest" : "zero-point-at-largest", ty,
                      (int64_t)(f->max_code | (neg ? 0x80u : 0u)), ys, 4);
        if (!c)
            return;
        qh_edge_tag(c, "saturation");
        qh_edge_tag(c, neg ? "low" : "high");
        qh_edge_tag(c, "zp-at-bound");
        qh_edge_describe(c,
                         "y_zero_point %s%g: x = 0 keeps it, a step further saturates, x = -zy "
                         "gives +0, x = -2zy the other end",
                         neg ? "-" : "", max);
    }
}

/* Subnormal results: every subnormal exactly, a quarter and three quarters of the smallest,
 * both signs (a negative value that rounds to zero is -0 where the type has one). */
static void f8_subnormal_out(qh_edge_builder *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    double xs[32];
    int n = 0;
    for (unsigned m = 1; m < 1u << f->mbits; m++) {
        xs[n++] = f8v(ty, m);
        xs[n++] = -f8v(ty, m);
    }
    double tiny = f8v(ty, 1);
    double extra[4] = {tiny / 4, -tiny / 4, 3 * tiny / 4, -3 * tiny / 4};
    for (int i = 0; i < 4; i++)
        xs[n++] = extra[i];
    qh_edge_case *c = rows_case(x, "subnormal-out", ty, 0, xs, n);
    if (!c)
        return;
    qh_edge_tag(c, "subnormal");
    qh_edge_tag(c, f->fnuz ? "fnuz-zero" : "negative-zero");
    qh_edge_describe(c,
                     "results at every %s subnormal, and at a quarter and three quarters of the "
                     "smallest, both signs: -x/4 rounds to %s",
                     qmm_dtype_name(ty), f->fnuz ? "the one zero 0x00" : "-0 (0x80)");
}

/* Every finite code of ty through y = a (a ty, b = 1, all scales 1, zero points 0): each comes
 * back as itself, except -0, whose exact product 0 is +0; then the subnormals of ty into int8
 * with a_scale 2^(shift-1), so each lands on a half-integer or an integer. */
static void f8_codes(qh_edge_builder *x, int32_t ty)
{
    const qmm_float8_format *f = qmm_float8_format_of(ty);
    int64_t codes[256];
    int n = 0;
    for (unsigned code = 0; code < 256; code++)
        if (isfinite(f8v(ty, code)))
            codes[n++] = code;
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 21, "every-code-%s", qh_edge_type_abbrev(ty));
    if (!c)
        return;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    qh_edge_int_tensor(x, c, &q->a, ty, DIMS(n, 1), codes);
    qh_edge_int_tensor_filled(x, c, &q->b, QMM_DTYPE_UINT8, DIMS(1, 1), 1);
    qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1, 0, 1, 0, 1, 0, ty);
    qh_edge_tag(c, "float8");
    qh_edge_tag(c, "subnormal");
    qh_edge_tag(c, "largest-finite");
    qh_edge_tag(c, f->fnuz ? "fnuz-zero" : "negative-zero");
    qh_edge_describe(c, "every finite %s code (%d) as a and, unchanged, as y; -0 becomes +0",
                     qmm_dtype_name(ty), n);

    n = 0;
    for (unsigned m = 0; m < 1u << f->mbits; m++) {
        codes[n++] = m;
        if (m)
            codes[n++] = 0x80u | m;
    }
    c = qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 21, "subnormal-in-%s", qh_edge_type_abbrev(ty));
    if (!c)
        return;
    q = qh_edge_qlinearmatmul(c);
    qh_edge_int_tensor(x, c, &q->a, ty, DIMS(n, 1), codes);
    qh_edge_int_tensor_filled(x, c, &q->b, QMM_DTYPE_INT8, DIMS(1, 1), 1);
    qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, ldexp(1, f->shift - 1), 0, 1, 0, 1, 0,
                              QMM_DTYPE_INT8);
    qh_edge_tag(c, "float8");
    qh_edge_tag(c, "subnormal");
    qh_edge_tag(c, "tie");
    qh_edge_describe(c,
                     "every %s subnormal (and the zero) into int8 with a_scale 2^%d: m/2 rounds "
                     "half to even",
                     qmm_dtype_name(ty), f->shift - 1);
}

/* Zero points at the extremes: a holds ±largest, ±smallest subnormal and 0 with za = -largest
 * (a - za up to twice the largest), b likewise in the next float8 type with zb = +largest. */
static void f8_zero_points(qh_edge_builder *x, int ti)
{
    int32_t ta = f8types[ti], tb = f8types[(ti + 1) % 4];
    const qmm_float8_format *fa = qmm_float8_format_of(ta), *fb = qmm_float8_format_of(tb);
    qh_edge_case *c =
        qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 21, "zero-points-at-extremes-%s%su8",
                         qh_edge_type_abbrev(ta), qh_edge_type_abbrev(tb));
    if (!c)
        return;
    qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
    int64_t av[6] = {fa->max_code, 0x80 | fa->max_code, 0x01, 0x81, 0x00, fa->max_code};
    int64_t bv[6] = {fb->max_code, 0x80 | fb->max_code, 0x01, 0x00, 0x81, 0x80 | fb->max_code};
    qh_edge_int_tensor(x, c, &q->a, ta, DIMS(2, 3), av);
    qh_edge_int_tensor(x, c, &q->b, tb, DIMS(3, 2), bv);
    double big = f8v(ta, fa->max_code) * f8v(tb, fb->max_code);
    qh_edge_per_tensor_params(x, c, QMM_DTYPE_FLOAT, 1, 0x80 | fa->max_code, 1, fb->max_code,
                              ldexp(1, (int)log2(big) - 4), 128, QMM_DTYPE_UINT8);
    qh_edge_tag(c, "float8");
    qh_edge_tag(c, "zp-at-bound");
    qh_edge_tag(c, "largest-finite");
    qh_edge_describe(c,
                     "a_zero_point -largest %s, b_zero_point +largest %s: differences up to twice "
                     "the largest finite value",
                     qmm_dtype_name(ta), qmm_dtype_name(tb));
}

/* Type mixes: the float8 type as a, b and y alone and together, with uint8/int8 around it,
 * float/float16/bfloat16 scales in turn; random finite codes. */
static void f8_mixes(qh_edge_builder *x, int ti)
{
    int32_t t = f8types[ti], t2 = f8types[(ti + 1) % 4], t3 = f8types[(ti + 2) % 4];
    const int32_t mixes[5][3] = {{t, t, t},
                                 {t, QMM_DTYPE_INT8, QMM_DTYPE_UINT8},
                                 {QMM_DTYPE_UINT8, t, QMM_DTYPE_INT8},
                                 {QMM_DTYPE_INT8, QMM_DTYPE_UINT8, t},
                                 {t, t2, t3}};
    static const int32_t sdts[3] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16, QMM_DTYPE_BFLOAT16};
    for (int i = 0; i < 5; i++) {
        int32_t ta = mixes[i][0], tb = mixes[i][1], ty = mixes[i][2], sdt = sdts[(ti + i) % 3];
        qh_edge_case *c =
            qh_edge_add_case(x, QMM_OP_QLINEARMATMUL, 21, "mix-%s%s%s-%s", qh_edge_type_abbrev(ta),
                             qh_edge_type_abbrev(tb), qh_edge_type_abbrev(ty), qmm_dtype_name(sdt));
        if (!c)
            return;
        qmm_qlinearmatmul *q = qh_edge_qlinearmatmul(c);
        qmm_tensor *ops[2] = {&q->a, &q->b};
        const int32_t types[2] = {ta, tb};
        const int64_t dims[2][2] = {{3, 4}, {4, 2}};
        int64_t z[2];
        for (int o = 0; o < 2; o++) {
            int64_t v[12];
            for (int k = 0; k < dims[o][0] * dims[o][1]; k++)
                v[k] = qmm_is_float8(types[o]) ? f8_draw(x, types[o])
                                               : qh_rng_range(&x->rng, qh_edge_int_min(types[o]),
                                                              qh_edge_int_max(types[o]));
            qh_edge_int_tensor(x, c, ops[o], types[o], 2, dims[o], v);
            z[o] = qmm_is_float8(types[o]) ? f8_draw(x, types[o])
                                           : qh_rng_range(&x->rng, qh_edge_int_min(types[o]),
                                                          qh_edge_int_max(types[o]));
        }
        int64_t zy = qmm_is_float8(ty) ? f8_draw(x, ty) : (ty == QMM_DTYPE_UINT8 ? 128 : 0);
        double sa = qh_edge_short_scale(x, -2, 2), sb = qh_edge_short_scale(x, -2, 2);
        /* integer y: keep results mostly inside; float8 y: anything, it saturates */
        double sy =
            qmm_is_float8(ty) ? qh_edge_short_scale(x, -2, 6) : qh_edge_short_scale(x, 8, 14);
        qh_edge_per_tensor_params(x, c, sdt, sa, z[0], sb, z[1], sy, zy, ty);
        qh_edge_tag(c, "float8");
        qh_edge_tag(c, "types");
        qh_edge_describe(c, "a %s, b %s, y %s, %s scales, random finite values and zero points",
                         qmm_dtype_name(ta), qmm_dtype_name(tb), qmm_dtype_name(ty),
                         qmm_dtype_name(sdt));
    }
}

static void suite_float8(qh_edge_builder *x)
{
    for (int ti = 0; ti < 4; ti++) {
        int32_t t = f8types[ti];
        f8_ties(x, t);
        f8_saturation(x, t);
        f8_subnormal_out(x, t);
        f8_codes(x, t);
        f8_zero_points(x, ti);
        f8_mixes(x, ti);
    }
}

const qh_edge_suite qh_edge_suite_float8 = {
    "float8", 15, suite_float8,
    "QLinearMatMul-21's float8 types: ties with even and odd neighbours, saturation "
    "at both ends, subnormals in and out, every code through, signed and fnuz zeros, "
    "zero points at the extremes, mixes with uint8/int8"};
