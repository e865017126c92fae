/* reference/op-qlinearmatmul.c — QLinearMatMul's exact `spec` computation and the
 * per-element explanation (docs/semantics.md §2.3, §2.6): the exact accumulator, then
 * sa*sb*acc/sy requantized on exact GMP rationals; for an integer y rounded half to even, then
 * the zero point added and the result saturated; for a float8 y, x + zy rounded once to the
 * type. A float8 operand's values are integers times powers of two, so the accumulator is an
 * exact dyadic rational. The profiles' forms are reference/profiles.c.
 */
#include <gmp.h>
#include <math.h>

#include "reference/ref_internal.h"

static void q8_range(int32_t dtype, int64_t *qmin, int64_t *qmax)
{
    if (dtype == QMM_DTYPE_INT8) {
        *qmin = -128;
        *qmax = 127;
    } else {
        *qmin = 0;
        *qmax = 255;
    }
}

/* ---- the float8 forms (docs/semantics.md §2.6) ---------------------------------------------- */

/* 2^shift: every value of the type times it is an integer (0 for uint8/int8). */
static int shift_of(int32_t dtype)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    return f ? f->shift : 0;
}

/* Element `index` of an operand or zero point times 2^shift_of(its type), exactly. */
static int64_t load_scaled(const qmm_tensor *t, int64_t index)
{
    if (qmm_is_float8(t->dtype))
        return qmm_float8_scaled(t->dtype, ((const unsigned char *)t->data)[index]);
    return qmm_load_q8(t, index);
}

static int64_t param_scaled(const qmm_tensor *zp, const qmm_param_map *map,
                            const qmm_geometry *g, int64_t bi, int64_t i, int64_t j)
{
    return load_scaled(zp, qmm_param_offset(map, g, bi, i, j));
}

/* rq->value = Σ_k (a - za)(b - zb) exactly, for operands of which one at least is float8:
 * the sum of integers (a - za)·2^Sa · (b - zb)·2^Sb (each factor below 2^35, so a term may
 * not fit int64 but each factor does) divided by 2^(Sa + Sb). */
static void float8_acc(const qmm_qlinearmatmul *c, const qmm_geometry *g, qmm_ref_exact *rq,
                       int64_t bi, int64_t i, int64_t j, int64_t za, int64_t zb)
{
    int64_t ao = qmm_geometry_a_offset(g, bi) + i * g->k;
    int64_t bo = qmm_geometry_b_offset(g, bi) + j;
    mpz_set_ui(rq->q, 0);
    for (int64_t k = 0; k < g->k; k++) {
        qmm_ref_exact_tmp_i64(rq, load_scaled(&c->a, ao + k) - za);
        mpz_set(rq->r, rq->z);
        qmm_ref_exact_tmp_i64(rq, load_scaled(&c->b, bo + k * g->n) - zb);
        mpz_addmul(rq->q, rq->r, rq->z);
    }
    mpq_set_z(rq->value, rq->q);
    mpq_div_2exp(rq->value, rq->value, (mp_bitcnt_t)(shift_of(c->a.dtype) + shift_of(c->b.dtype)));
}

/* The float8 code nearest to rq->kept (docs/semantics.md §2.6): ties to even, magnitudes at
 * or beyond the largest finite saturated to it, an exact 0 is +0, a nonzero value that rounds
 * to zero keeps its sign where the type has -0. The rounding is done on the exact rational;
 * the rounded value, a float8 value, is a double exactly, and qmm_float8_encode only encodes
 * it. Clobbers rq->value. */
static int64_t round_float8(qmm_ref_exact *rq, int32_t dtype)
{
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    int sign = mpq_sgn(rq->kept);
    if (sign == 0)
        return 0x00;
    mpq_abs(rq->kept, rq->kept);
    /* |v| in units of the smallest subnormal, 2^-shift */
    mpq_mul_2exp(rq->kept, rq->kept, (mp_bitcnt_t)f->shift);
    int64_t max_units = qmm_float8_scaled(dtype, f->max_code);
    qmm_ref_exact_tmp_i64(rq, max_units);
    if (mpq_cmp(rq->kept, rq->tmp) >= 0)
        return sign < 0 ? 0x80 | f->max_code : f->max_code;
    /* the binade: below 2^(mbits+1) units the quantum is one unit, then it doubles */
    int e = 0;
    for (;;) {
        qmm_ref_exact_tmp_i64(rq, (int64_t)1 << (f->mbits + 1 + e));
        if (mpq_cmp(rq->kept, rq->tmp) < 0)
            break;
        e++;
    }
    mpq_div_2exp(rq->kept, rq->kept, (mp_bitcnt_t)e);
    mpq_swap(rq->value, rq->kept); /* qmm_ref_round_saturate rounds rq->value */
    int64_t n = qmm_ref_round_saturate(rq, 0, 0, (int64_t)1 << (f->mbits + 2));
    mpq_swap(rq->value, rq->kept);
    double mag = ldexp((double)n, e - f->shift);
    return qmm_float8_encode(dtype, sign < 0 ? -mag : mag);
}

/* Everything about one QLinearMatMul element; rq->value is left holding sa*sb*acc/sy. */
typedef struct qlm_result {
    int64_t acc, expected, wrapped;
    int int_acc; /* a and b are both uint8/int8: acc is the exact integer, §2.4 applies */
} qlm_result;

/* The output code from rq->value = sa*sb*acc/sy (left unchanged): §2.3 for uint8/int8, §2.6
 * for float8. */
static int64_t requantize(const qmm_qlinearmatmul *c, qmm_ref_exact *rq, int64_t zy_scaled)
{
    if (qmm_is_float8(c->y.dtype)) {
        /* x + zy, exactly, then rounded once */
        qmm_ref_exact_tmp_i64(rq, zy_scaled);
        mpq_div_2exp(rq->tmp, rq->tmp, (mp_bitcnt_t)shift_of(c->y.dtype));
        mpq_add(rq->kept, rq->value, rq->tmp);
        return round_float8(rq, c->y.dtype);
    }
    int64_t qmin, qmax;
    q8_range(c->y.dtype, &qmin, &qmax);
    return qmm_ref_round_saturate(rq, zy_scaled, qmin, qmax);
}

/* Leaves rq->value holding sa*sb*acc/sy, exactly. */
static void qlm_element(const qmm_qlinearmatmul *c, const qmm_geometry *g,
                        const qmm_param_map *maps, qmm_ref_exact *rq, int64_t bi, int64_t i,
                        int64_t j, qlm_result *out)
{
    int64_t za = param_scaled(&c->a_zero_point, &maps[QMM_MAP_A_ZERO_POINT], g, bi, i, j);
    int64_t zb = param_scaled(&c->b_zero_point, &maps[QMM_MAP_B_ZERO_POINT], g, bi, i, j);
    int64_t zy = param_scaled(&c->y_zero_point, &maps[QMM_MAP_Y_ZERO_POINT], g, bi, i, j);
    double sa = qmm_scale_decode(c->a_scale.dtype, c->a_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_A_SCALE], g, bi, i, j));
    double sb = qmm_scale_decode(c->b_scale.dtype, c->b_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_B_SCALE], g, bi, i, j));
    double sy = qmm_scale_decode(c->y_scale.dtype, c->y_scale.data,
                                 qmm_param_offset(&maps[QMM_MAP_Y_SCALE], g, bi, i, j));

    out->int_acc = qmm_is_q8(c->a.dtype) && qmm_is_q8(c->b.dtype);
    if (!out->int_acc) {
        /* a rational accumulator: no int32 to overflow, no wrapped alternative */
        out->acc = 0;
        float8_acc(c, g, rq, bi, i, j, za, zb);
        qmm_ref_scale_rational(rq, sa, sb, sy);
        out->expected = out->wrapped = requantize(c, rq, zy);
        return;
    }
    out->acc = qmm_ref_matmul_acc(&c->a, &c->b, g, bi, i, j, za, zb);
    out->wrapped = 0;
    if (!qmm_ref_fits_int32(out->acc)) {
        qmm_ref_scaled_value(rq, sa, sb, sy, qmm_wrap_int32(out->acc));
        out->wrapped = requantize(c, rq, zy);
    }
    qmm_ref_scaled_value(rq, sa, sb, sy, out->acc);
    out->expected = requantize(c, rq, zy);
    if (qmm_ref_fits_int32(out->acc))
        out->wrapped = out->expected;
}

static int overflowed(const qlm_result *r)
{
    return r->int_acc && !qmm_ref_fits_int32(r->acc);
}

static qmm_status_code qlm_compute(qmm_call *call, const qmm_ref_part *part, qmm_tensor *yw,
                                   int *any_overflow, qmm_status *st)
{
    qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    qmm_plan plan;
    QMM_TRY(qmm_validate_qlinearmatmul(c, &plan, st));
    const qmm_geometry *g = &plan.g;
    const qmm_param_map *maps = plan.maps;
    if (yw && qmm_ref_check_wrapped(yw, &c->y, "y", st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    qmm_ref_walk w;
    QMM_TRY(qmm_ref_walk_start(&w, g->batch, g->m, g->n, part, 0, st));
    qmm_ref_exact rq;
    qmm_ref_exact_init(&rq);
    int overflow = 0;
    for (; qmm_ref_walk_more(&w); qmm_ref_walk_next(&w)) {
        qlm_result r;
        qlm_element(c, g, maps, &rq, w.bi, w.i, w.j, &r);
        int64_t idx = qmm_ref_walk_slot(&w, w.idx);
        qmm_ref_store_q8(&c->y, idx, r.expected);
        if (yw)
            qmm_ref_store_q8(yw, idx, r.wrapped);
        overflow |= overflowed(&r);
    }
    qmm_ref_exact_clear(&rq);
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_ref_walk_end(&w, st);
}

static qmm_status_code qlm_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    const qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
    qmm_plan plan;
    int64_t bi, i, j;
    QMM_TRY(qmm_validate_qlinearmatmul(c, &plan, st));
    QMM_TRY(qmm_ref_element_at(&plan.g, index, &bi, &i, &j, st));
    qmm_ref_exact rq;
    qmm_ref_exact_init(&rq);
    qlm_result r;
    qlm_element(c, &plan.g, plan.maps, &rq, bi, i, j, &r);
    qmm_ref_decimal(rq.value, e->scaled, sizeof e->scaled);
    qmm_ref_exact_clear(&rq);
    e->acc = r.acc;
    e->expected = r.expected;
    e->wrapped = r.wrapped;
    e->overflow = overflowed(&r);
    return qmm_status_ok(st);
}

const qmm_ref_op qmm_ref_op_qlinearmatmul = {QMM_OP_QLINEARMATMUL, qlm_compute, qlm_explain, 0,
                                             NULL};
