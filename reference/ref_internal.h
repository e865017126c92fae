/* reference/ref_internal.h — what the reference backend's own files share. Nothing here is part
 * of the operator interface or of qmm_reference.h's contract. The rules the computation relies
 * on (geometry, parameter maps, validation) are ops/qmm_ops.h.
 *
 * Each operator is one file, reference/op-<slug>.c, defining one `const qmm_ref_op
 * qmm_ref_op_<slug>`; reference/CMakeLists.txt finds those files and generates the registry
 * (qmm_ref_ops), so adding an operator to the reference is adding its file.
 */
#ifndef QMM_REF_INTERNAL_H
#define QMM_REF_INTERNAL_H

#include <gmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

/* ---- the operators (op-*.c) and their registry ---- */

/* One operator's exact computation. */
typedef struct qmm_ref_op {
    qmm_op_kind kind;
    /* The spec result, validating first: qmm_ref_compute_part's contract (part NULL: the whole
     * of y; y_wrapped may be NULL; *any_overflow starts at 0). NULL for an operator whose
     * `accept`, given no intervals (out NULL), validates and stores the spec's value in y, and
     * whose accumulators never wrap: qmm_ref_spec_part computes through it. */
    qmm_status_code (*compute)(qmm_call *call, const qmm_ref_part *part, qmm_tensor *y_wrapped,
                               int *any_overflow, qmm_status *st);
    /* qmm_ref_explain's contract (*e starts zeroed). */
    qmm_status_code (*explain)(const qmm_call *call, int64_t index, qmm_ref_element *e,
                               qmm_status *st);
    /* y is not row-major (QOrderedMatMul's order_Y): a part holds whole matrices of y */
    int whole_matrices;
    /* qmm_ref_accept_part's contract, for an operator judged by accepted values; NULL for
     * one judged bit for bit */
    qmm_status_code (*accept)(const qmm_call *call, const qmm_ref_part *part,
                              qmm_ref_accept *out, qmm_status *st);
} qmm_ref_op;

/* Every op-*.c file's operator, NULL-terminated (generated: ref_ops.c in the build tree). */
extern const qmm_ref_op *const qmm_ref_ops[];

/* The registered operator of `kind`; NULL when the reference has none. */
const qmm_ref_op *qmm_ref_op_of(qmm_op_kind kind);

/* The spec computation of a part of y (NULL: all of it), for qmm_ref_compute and
 * qmm_ref_compute_part (compute.c). */
qmm_status_code qmm_ref_spec_part(qmm_call *call, const qmm_ref_part *part,
                                  qmm_tensor *y_wrapped, int *any_overflow, qmm_status *st);

/* QOrderedMatMul under ort-fp32 (op-qorderedmatmul.c; validating first), for profiles.c. */
qmm_status_code qmm_ref_qom_compute_ort_fp32(qmm_qorderedmatmul *c, const qmm_ref_part *part,
                                             qmm_status *st);

/* ---- walking the output (compute.c) ---- */

/* The output elements a computation visits, in row-major (batch, i, j) order: all of y's, or
 * those of a part. Empty when y is: no loop runs over the batches of an empty output. Each
 * step looks at the stop flag (qmm_ref_set_stop_flag): once it is raised the walk ends early
 * with `stopped` set, and the computation answers qmm_ref_walk_end's INTERNAL. */
typedef struct qmm_ref_walk {
    int64_t m, n;       /* y's matrices are m x n */
    int64_t bi, i, j;   /* the element visited */
    int64_t idx;        /* its row-major index in y */
    int64_t first, end; /* the elements [first, end) are visited */
    int stopped;
} qmm_ref_walk;

/* A walk over y = batch matrices of m x n (the counts validated: their product fits int64),
 * or over `part` of them. QMM_INVALID_ARGUMENT when the part is negative, goes past y, or
 * (whole_matrices) does not start and end at a matrix boundary. */
qmm_status_code qmm_ref_walk_start(qmm_ref_walk *w, int64_t batch, int64_t m, int64_t n,
                                   const qmm_ref_part *part, int whole_matrices, qmm_status *st);

extern const volatile sig_atomic_t *qmm_ref_stop;

/* 1 while the walk has an element to visit; 0 at its end or when the stop flag is raised. */
static inline int qmm_ref_walk_more(qmm_ref_walk *w)
{
    if (w->idx >= w->end)
        return 0;
    if (qmm_ref_stop && *qmm_ref_stop) {
        w->stopped = 1;
        return 0;
    }
    return 1;
}

static inline void qmm_ref_walk_next(qmm_ref_walk *w)
{
    w->idx++;
    if (++w->j == w->n) {
        w->j = 0;
        if (++w->i == w->m) {
            w->i = 0;
            w->bi++;
        }
    }
}

/* Where an element at row-major (or, for whole matrices, buffer) position `at` of y goes in
 * the buffer being written: the part's buffer starts at its first element. */
static inline int64_t qmm_ref_walk_slot(const qmm_ref_walk *w, int64_t at)
{
    return at - w->first;
}

/* After the loop: QMM_OK, or QMM_INTERNAL "interrupted" when the stop flag ended it. */
qmm_status_code qmm_ref_walk_end(const qmm_ref_walk *w, qmm_status *st);

/* ---- helpers of the exact computation (compute.c) ---- */

static inline int qmm_ref_fits_int32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

/* Stores the low byte of v as element `index` of an 8-bit y. */
static inline void qmm_ref_store_q8(const qmm_tensor *y, int64_t index, int64_t v)
{
    unsigned char *p = y->data;
    p[index] = (unsigned char)(v & 0xff);
}

/* Scratch numbers for exact requantization, reused across elements: `value` is the exact
 * result before rounding, the others are working space. */
typedef struct qmm_ref_exact {
    mpq_t value, tmp, kept;
    mpz_t z, q, r;
} qmm_ref_exact;

void qmm_ref_exact_init(qmm_ref_exact *x);
void qmm_ref_exact_clear(qmm_ref_exact *x);

/* x->tmp = v, exactly (mpz_set_si takes a long, which may be 32 bits). */
void qmm_ref_exact_tmp_i64(qmm_ref_exact *x, int64_t v);

/* x->value *= sa*sb/sy exactly; the scales are doubles holding their exact values. */
void qmm_ref_scale_rational(qmm_ref_exact *x, double sa, double sb, double sy);

/* x->value = sa*sb*acc/sy exactly. */
void qmm_ref_scaled_value(qmm_ref_exact *x, double sa, double sb, double sy, int64_t acc);

/* clamp(RNE(x->value) + zy, qmin, qmax): round first, then add the zero point
 * (docs/semantics.md §2.3), saturating before leaving GMP. */
int64_t qmm_ref_round_saturate(qmm_ref_exact *x, int64_t zy, int64_t qmin, int64_t qmax);

/* Zero point `zp` at output element (bi, i, j) through its parameter map; 0 for an absent
 * optional one. */
int64_t qmm_ref_zero_point(const qmm_tensor *zp, const qmm_param_map *map,
                           const qmm_geometry *g, int64_t bi, int64_t i, int64_t j);

/* sum_k (a - za)(b - zb) for output element (bi, i, j) of a row-major matmul, exactly. */
int64_t qmm_ref_matmul_acc(const qmm_tensor *a, const qmm_tensor *b, const qmm_geometry *g,
                           int64_t bi, int64_t i, int64_t j, int64_t za, int64_t zb);

/* QMM_OK when y_wrapped fits y (the same dtype and shape, data where there are elements);
 * otherwise INVALID_ARGUMENT, the message naming y as `y_name` ("y", "Y"). */
qmm_status_code qmm_ref_check_wrapped(const qmm_tensor *yw, const qmm_tensor *y,
                                      const char *y_name, qmm_status *st);

/* The (bi, i, j) of element `index` of a row-major y; INVALID_ARGUMENT outside y. */
qmm_status_code qmm_ref_element_at(const qmm_geometry *g, int64_t index, int64_t *bi,
                                   int64_t *i, int64_t *j, qmm_status *st);

/* An exact rational as the decimal qmm_ref_element.scaled holds ("3.5", "-0.333..."). */
void qmm_ref_decimal(mpq_srcptr v, char *out, size_t n);

/* ---- exact float values and error bounds (accept.c; docs/semantics.md §8.4) ---- */

/* The floating-point formats a bound is computed for: p significand bits (the leading one
 * included), emin the least normal exponent, emax the greatest. */
typedef struct qmm_ref_fmt {
    int p, emin, emax;
} qmm_ref_fmt;

/* float, float16 or bfloat16 (any other type: float's). */
qmm_ref_fmt qmm_ref_fmt_of(int32_t dtype);

/* v rounded to nearest, ties to even, in `f` (subnormals, overflow to +-inf), as a double. */
double qmm_ref_round_q(mpq_srcptr v, qmm_ref_fmt f);
/* The same rounded towards +inf (dir 1), -inf (-1) or to nearest (0). */
double qmm_ref_round_q_dir(mpq_srcptr v, qmm_ref_fmt f, int dir);

/* The double holding x * 2^sh exactly as an integer, into z (x finite, x * 2^sh an integer). */
void qmm_ref_mpz_scaled(mpz_t z, double x, int sh);

/* An interval from a model's exact value R and the sum of magnitudes S it is bounded by
 * (R = r / 2^sh, S = s / 2^sh): E = gamma_n * S + 2 * n_under * eta, gamma_n = n u / (1 - n u)
 * with u = 2^-p of the accumulation format `acc` and eta = 2^(emin - p) its underflow unit;
 * lo, hi = RU_y(R - E), RD_y(R + E) when y is in `acc`'s format, else RN_y(R -+ E). Inconclusive when n u >= 1/2 or when a partial sum may overflow
 * `acc` ((1 + gamma_n) S + E >= its largest finite value). */
void qmm_ref_interval_bound(qmm_ref_interval *iv, const mpz_t r, const mpz_t s, int sh,
                            int64_t n, int64_t n_under, qmm_ref_fmt acc, qmm_ref_fmt y,
                            const char *model);

/* An interval holding one value exactly (lo = hi = v; NaN: any NaN). */
void qmm_ref_interval_value(qmm_ref_interval *iv, double v, const char *model);

/* Any value, inconclusively (a non-finite input the bound does not model). */
void qmm_ref_interval_any(qmm_ref_interval *iv, const char *model);

/* Stores v (a value of y's float type) as element `index` of y (float, float16, bfloat16). */
void qmm_ref_store_float(const qmm_tensor *y, int64_t index, double v);

/* y_wrapped (when not NULL) = the part of y just computed: the float operators have no
 * wrapped accumulator of their own. */
void qmm_ref_copy_wrapped(qmm_tensor *yw, const qmm_tensor *y, const qmm_ref_part *part);

/* The bits qmm_ref_element.expected holds for a float y's value v. */
int64_t qmm_ref_float_bits(int32_t dtype, double v);

/* One element of an integer product with a float epilogue (DynamicQuantizeMatMul,
 * MatMulIntegerToFloat; docs/semantics.md §10.2): the exact accumulator, A's and B's scales
 * and the bias (0 when absent). */
typedef struct qmm_ref_i2f_elem {
    int64_t acc;
    double sa, sb, bias;
    int has_bias;
} qmm_ref_i2f_elem;

/* B's side of the element at column j, the same in both operators: b's scale (element pj: j
 * per column, else 0) in type ft, and the bias; returns b's zero point there (0 when absent). */
int64_t qmm_ref_i2f_b_side(qmm_ref_i2f_elem *e, const qmm_tensor *b_zero_point,
                           const qmm_tensor *b_scale, const qmm_tensor *bias, int32_t ft,
                           int64_t pj, int64_t j);

/* The epilogue RN32(RN32(RN32(acc) * RN32(sa * sb)) + bias), the value compute writes; and
 * every value accepted: that, with the bias fused (FMA), and both again from the
 * int32-wrapped accumulator when acc does not fit int32. A y that is not float: inconclusive
 * (not modelled). */
double qmm_ref_i2f_value(int64_t acc, const qmm_ref_i2f_elem *e);
void qmm_ref_i2f_accept(qmm_ref_accept *out, const qmm_ref_i2f_elem *e, int32_t y_dtype);
/* The element where a walk puts it: its accepted values in out[slot] when out is given
 * (judging), else the value into y[slot] (compute). */
void qmm_ref_i2f_put(qmm_ref_accept *out, const qmm_tensor *y, int64_t slot,
                     const qmm_ref_i2f_elem *e);
/* qmm_ref_explain's fields for the element (y of type y_dtype); returns the value. */
double qmm_ref_i2f_explain(qmm_ref_element *out, const qmm_ref_i2f_elem *e, int32_t y_dtype);

#endif /* QMM_REF_INTERNAL_H */
