/* reference/op-matmulnbits.c — MatMulNBits (com.microsoft), docs/semantics.md §8: the exact
 * value of each model an implementation may follow and its proven bound (reference/accept.c).
 *
 * Models of one output element y[i, n] (K = the attribute, zp the block's zero point, s its
 * scale, q the code):
 *   dequantize-first  b^ = RN_T1((q - zp) s)  (float zp: RN_T1(RN_T1(q - zp) s)), then
 *                     R = sum_k a b^ + bias, summed in float in any order, with or without FMA:
 *                     |y - R| <= gamma_{K+1} (sum |a b^| + |bias|) + 2 K eta;
 *   scale-factored    R = sum_k a (q - zp) s + bias exactly (the scale or zp*s applied in any
 *                     grouping): gamma_{K+3} (sum |a| (|q| + |zp|) |s| + |bias|) + 6 K eta;
 *   T1-accumulation   (float16/bfloat16 T1) dequantize-first accumulated in T1 itself: usually
 *                     inconclusive;
 *   int8-a-block-B    (accuracy_level 4, float T1, integer zero points) a quantized per block of
 *                     B elements of its row, symmetric int8: sa = RN32(max|a| / 127),
 *                     qa = RNE(RN32(a * RN32(127 / max|a|))); R = sum sa qa (q - zp) s + bias,
 *                     bound gamma_{K+3} (sum |sa qa (q - zp) s| + |bias|) + 6 K eta. B is the
 *                     weight block and, above 256, also 256 (ONNX Runtime's x86 kernels).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference/ref_internal.h"

#define SH1 300 /* a * b^: two values of 2^-149 granularity */
#define SH2 450 /* a * (q - zp) * s */

enum { M_DEQ, M_FACT, M_T1, M_INT8_BLOCK, M_INT8_256, M_COUNT };

typedef struct nbits_sums {
    mpz_t r[M_COUNT], s[M_COUNT];
    mpz_t x, y, t;
    int any[M_COUNT]; /* a non-finite value: the model is inconclusive */
    int used[M_COUNT];
} nbits_sums;

/* Applies `fn` (mpz_init, mpz_clear) to each integer of w: the one list of them. */
static void sums_each(nbits_sums *w, void (*fn)(mpz_ptr))
{
    for (int m = 0; m < M_COUNT; m++) {
        fn(w->r[m]);
        fn(w->s[m]);
    }
    fn(w->x);
    fn(w->y);
    fn(w->t);
}

/* r += t, s += |t| for model m. */
static void add_term(nbits_sums *w, int m, const mpz_t t)
{
    mpz_add(w->r[m], w->r[m], t);
    if (mpz_sgn(t) < 0)
        mpz_sub(w->s[m], w->s[m], t);
    else
        mpz_add(w->s[m], w->s[m], t);
}

/* r += sign-carrying t, s += the separate magnitude m_t for model m. */
static void add_term_mag(nbits_sums *w, int m, const mpz_t t, const mpz_t mag)
{
    mpz_add(w->r[m], w->r[m], t);
    mpz_add(w->s[m], w->s[m], mag);
}

static double t1_at(int32_t t1, const qmm_tensor *t, int64_t i)
{
    return qmm_scale_decode(t1, t->data, i);
}

/* The element's scale, zero point (as a double: integer or T1) and code. */
typedef struct nbits_weight {
    double s, zp, q;
} nbits_weight;

static nbits_weight weight_at(const qmm_matmulnbits *c, const qmm_nbits_plan *p, int64_t n,
                              int64_t k)
{
    nbits_weight w;
    int64_t blk = qmm_nbits_block(&c->g_idx, p, k);
    w.s = t1_at(p->t1, &c->scales, n * p->k_blocks + blk);
    w.zp = p->zp_form == QMM_NBITS_ZP_FLOAT
               ? t1_at(p->t1, &c->zero_points, n * p->k_blocks + blk)
               : (double)qmm_nbits_zero_point(&c->zero_points, p, n, blk);
    w.q = (double)qmm_nbits_code(&c->b, p, n, k);
    return w;
}

/* b^ of the dequantize-first model: one rounding of an exact double, or two for a float zp. */
static double dequantized(const qmm_nbits_plan *p, nbits_weight w)
{
    if (p->zp_form == QMM_NBITS_ZP_FLOAT)
        return qmm_round_to_scale_type(p->t1, qmm_round_to_scale_type(p->t1, w.q - w.zp) * w.s);
    return qmm_round_to_scale_type(p->t1, (w.q - w.zp) * w.s);
}

static int level4(const qmm_nbits_plan *p)
{
    return p->level == 4 && p->t1 == QMM_DTYPE_FLOAT && p->zp_form != QMM_NBITS_ZP_FLOAT;
}

/* The level-4 activation quantization of a's row over [start, start + len): sa and the codes,
 * computed in float as the named model says (docs/semantics.md §8.3). */
static float quantize_block(const qmm_matmulnbits *c, int64_t row, int64_t start, int64_t len,
                            float *qa)
{
    float mx = 0.0f;
    for (int64_t k = start; k < start + len; k++) {
        float v = (float)qmm_scale_decode(QMM_DTYPE_FLOAT, c->a.data, row * c->k + k);
        v = fabsf(v);
        if (v > mx)
            mx = v;
    }
    volatile float scale = mx / 127.0f;
    volatile float inv = mx != 0.0f ? 127.0f / mx : 0.0f;
    for (int64_t k = start; k < start + len; k++) {
        volatile float v = (float)qmm_scale_decode(QMM_DTYPE_FLOAT, c->a.data, row * c->k + k);
        volatile float prod = v * inv;
        qa[k - start] = (float)qmm_round_half_even((double)prod);
    }
    return scale;
}

static void int8_model(nbits_sums *w, int model, const qmm_matmulnbits *c,
                       const qmm_nbits_plan *p, int64_t row, int64_t n, int64_t ablock)
{
    w->used[model] = 1;
    float *codes = malloc((size_t)(ablock < p->k ? ablock : p->k) * sizeof *codes);
    if (!codes) {
        w->any[model] = 1;
        return;
    }
    for (int64_t start = 0; start < p->k && !w->any[model]; start += ablock) {
        int64_t len = p->k - start < ablock ? p->k - start : ablock;
        float sa = quantize_block(c, row, start, len, codes);
        /* the largest integer block sum an implementation may form, 127 * 255 * len: its
         * product with sa or with s, the tail's first multiplication in either grouping, may
         * overflow where the exact term does not; the bound's proof assumes no overflow */
        double isum_max = 127.0 * 255.0 * (double)len;
        for (int64_t k = start; k < start + len && !w->any[model]; k++) {
            nbits_weight wt = weight_at(c, p, n, k);
            /* a NaN in A: its code is the implementation's (and no integer here) */
            if (!isfinite(sa) || !isfinite(wt.s) || !isfinite(codes[k - start]) ||
                fabs((double)sa) * isum_max >= FLT_MAX || fabs(wt.s) * isum_max >= FLT_MAX) {
                w->any[model] = 1;
                break;
            }
            /* sa * s * qa * (q - zp): (sa 2^150)(s 2^150) qa (q - zp) */
            qmm_ref_mpz_scaled(w->x, (double)sa, 150);
            qmm_ref_mpz_scaled(w->y, wt.s, 150);
            mpz_mul(w->t, w->x, w->y);
            mpz_mul_si(w->t, w->t, (long)codes[k - start] * (long)(wt.q - wt.zp));
            add_term(w, model, w->t);
        }
    }
    free(codes);
}

/* Adds bias (scaled by 2^sh) to the models in use. */
static void add_bias(nbits_sums *w, const qmm_matmulnbits *c, const qmm_nbits_plan *p,
                     int64_t n)
{
    if (!qmm_tensor_present(&c->bias))
        return;
    double bias = t1_at(p->t1, &c->bias, n);
    for (int m = 0; m < M_COUNT; m++) {
        if (!w->used[m])
            continue;
        if (!isfinite(bias)) {
            w->any[m] = 1;
            continue;
        }
        qmm_ref_mpz_scaled(w->t, bias, m == M_FACT ? SH2 : SH1);
        add_term(w, m, w->t);
    }
}

/* Every model's sums for element (row, n). */
static void element_sums(nbits_sums *w, const qmm_matmulnbits *c, const qmm_nbits_plan *p,
                         int64_t row, int64_t n)
{
    for (int m = 0; m < M_COUNT; m++) {
        mpz_set_ui(w->r[m], 0);
        mpz_set_ui(w->s[m], 0);
        w->any[m] = 0;
        w->used[m] = 0;
    }
    w->used[M_DEQ] = w->used[M_FACT] = 1;
    w->used[M_T1] = p->t1 != QMM_DTYPE_FLOAT;
    for (int64_t k = 0; k < p->k; k++) {
        double a = t1_at(p->t1, &c->a, row * p->k + k);
        nbits_weight wt = weight_at(c, p, n, k);
        double bh = dequantized(p, wt);
        if (!isfinite(a) || !isfinite(bh))
            w->any[M_DEQ] = w->any[M_T1] = 1;
        else {
            qmm_ref_mpz_scaled(w->x, a, 150);
            qmm_ref_mpz_scaled(w->y, bh, 150);
            mpz_mul(w->t, w->x, w->y);
            add_term(w, M_DEQ, w->t);
            add_term(w, M_T1, w->t);
        }
        if (!isfinite(a) || !isfinite(wt.s) || !isfinite(wt.zp))
            w->any[M_FACT] = 1;
        else {
            /* a (q - zp) s exactly, and its magnitude |a| (|q| + |zp|) |s| */
            qmm_ref_mpz_scaled(w->x, a, 150);
            qmm_ref_mpz_scaled(w->y, wt.s, 150);
            mpz_mul(w->x, w->x, w->y);
            qmm_ref_mpz_scaled(w->y, wt.q - wt.zp, 150);
            mpz_mul(w->t, w->x, w->y);
            mpz_abs(w->x, w->x);
            qmm_ref_mpz_scaled(w->y, fabs(wt.q) + fabs(wt.zp), 150);
            mpz_mul(w->y, w->x, w->y);
            add_term_mag(w, M_FACT, w->t, w->y);
        }
    }
    if (level4(p)) {
        int64_t bs = p->block_size;
        int8_model(w, M_INT8_BLOCK, c, p, row, n, bs);
        if (bs > 256)
            int8_model(w, M_INT8_256, c, p, row, n, 256);
    }
    add_bias(w, c, p, n);
}

static const char *model_name(int m, int64_t bs)
{
    switch (m) {
    case M_DEQ: return "dequantize-first";
    case M_FACT: return "scale-factored";
    case M_T1: return "T1-accumulation";
    case M_INT8_256: return "int8-a-block-256";
    default: break;
    }
    static const char *const names[] = {"int8-a-block-16",  "int8-a-block-32",
                                        "int8-a-block-64",  "int8-a-block-128",
                                        "int8-a-block-256", "int8-a-block-512",
                                        "int8-a-block-1024", "int8-a-block-large"};
    int i = 0;
    for (int64_t b = 16; b < bs && i < 7; b *= 2)
        i++;
    return names[i];
}

/* The accepted intervals of element (row, n) from its sums. */
static void element_accept(const nbits_sums *w, const qmm_nbits_plan *p, qmm_ref_accept *out)
{
    qmm_ref_fmt f32 = qmm_ref_fmt_of(QMM_DTYPE_FLOAT), t1 = qmm_ref_fmt_of(p->t1);
    int64_t k = p->k;
    out->n = 0;
    for (int m = 0; m < M_COUNT; m++) {
        if (!w->used[m])
            continue;
        qmm_ref_interval *iv = &out->iv[out->n++];
        const char *name = model_name(m, p->block_size);
        if (w->any[m]) {
            qmm_ref_interval_any(iv, name);
            continue;
        }
        int64_t n = m == M_DEQ || m == M_T1 ? k + 1 : k + 3;
        int64_t under = m == M_DEQ || m == M_T1 ? k : 3 * k;
        qmm_ref_interval_bound(iv, w->r[m], w->s[m], m == M_FACT ? SH2 : SH1, n, under,
                               m == M_T1 ? t1 : f32, t1, name);
    }
}

/* y's value written by compute: the dequantize-first model's R rounded once (NaN when a
 * non-finite input leaves it undetermined). */
static double nearest(const nbits_sums *w, const qmm_nbits_plan *p, mpq_t q)
{
    if (w->any[M_DEQ])
        return NAN;
    mpz_set(mpq_numref(q), w->r[M_DEQ]);
    mpz_set_ui(mpq_denref(q), 1);
    mpz_mul_2exp(mpq_denref(q), mpq_denref(q), SH1);
    mpq_canonicalize(q);
    return qmm_ref_round_q(q, qmm_ref_fmt_of(p->t1));
}

typedef qmm_status_code (*mnb_visit)(void *ctx, const nbits_sums *w, const qmm_nbits_plan *p,
                                     int64_t slot);

static qmm_status_code mnb_walk(const qmm_matmulnbits *c, const qmm_ref_part *part,
                                mnb_visit visit, void *ctx, qmm_status *st)
{
    qmm_nbits_plan p;
    QMM_TRY(qmm_validate_matmulnbits(c, &p, st));
    qmm_ref_walk wk;
    QMM_TRY(qmm_ref_walk_start(&wk, 1, p.rows, p.n, part, 0, st));
    nbits_sums w;
    sums_each(&w, mpz_init);
    qmm_status_code rc = QMM_OK;
    for (; rc == QMM_OK && qmm_ref_walk_more(&wk); qmm_ref_walk_next(&wk)) {
        element_sums(&w, c, &p, wk.i, wk.j);
        rc = visit(ctx, &w, &p, qmm_ref_walk_slot(&wk, wk.idx));
    }
    sums_each(&w, mpz_clear);
    QMM_TRY(rc);
    return qmm_ref_walk_end(&wk, st);
}

typedef struct compute_ctx {
    const qmm_tensor *y;
    mpq_t q;
} compute_ctx;

static qmm_status_code visit_compute(void *ctx, const nbits_sums *w, const qmm_nbits_plan *p,
                                     int64_t slot)
{
    compute_ctx *cc = ctx;
    qmm_ref_store_float(cc->y, slot, nearest(w, p, cc->q));
    return QMM_OK;
}

static qmm_status_code mnb_compute(qmm_call *call, const qmm_ref_part *part, qmm_tensor *yw,
                                   int *any_overflow, qmm_status *st)
{
    (void)any_overflow;
    qmm_matmulnbits *c = &call->u.matmulnbits;
    if (yw && qmm_ref_check_wrapped(yw, &c->y, "Y", st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    compute_ctx cc = {.y = &c->y};
    mpq_init(cc.q);
    qmm_status_code rc = mnb_walk(c, part, visit_compute, &cc, st);
    if (rc == QMM_OK)
        qmm_ref_copy_wrapped(yw, &c->y, part);
    mpq_clear(cc.q);
    return rc;
}

static qmm_status_code visit_accept(void *ctx, const nbits_sums *w, const qmm_nbits_plan *p,
                                    int64_t slot)
{
    qmm_ref_accept *out = ctx;
    element_accept(w, p, &out[slot]);
    return QMM_OK;
}

static qmm_status_code mnb_accept(const qmm_call *call, const qmm_ref_part *part,
                                  qmm_ref_accept *out, qmm_status *st)
{
    return mnb_walk(&call->u.matmulnbits, part, visit_accept, out, st);
}

typedef struct explain_ctx {
    qmm_ref_element *e;
    mpq_t q;
} explain_ctx;

static qmm_status_code visit_explain(void *ctx, const nbits_sums *w, const qmm_nbits_plan *p,
                                     int64_t slot)
{
    (void)slot;
    explain_ctx *ec = ctx;
    double v = nearest(w, p, ec->q);
    ec->e->expected = qmm_ref_float_bits(p->t1, v);
    ec->e->wrapped = ec->e->expected;
    if (!w->any[M_DEQ])
        qmm_ref_decimal(ec->q, ec->e->scaled, sizeof ec->e->scaled);
    else
        strcpy(ec->e->scaled, "nan");
    return QMM_OK;
}

static qmm_status_code mnb_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                   qmm_status *st)
{
    explain_ctx ec = {.e = e};
    mpq_init(ec.q);
    qmm_ref_part one = {index, 1};
    qmm_status_code rc = QMM_OK;
    const qmm_tensor *y = &call->u.matmulnbits.y;
    if (index < 0 || index >= qmm_tensor_numel(y))
        rc = qmm_status_set(st, QMM_INVALID_ARGUMENT, "element %lld is outside Y",
                            (long long)index);
    else
        rc = mnb_walk(&call->u.matmulnbits, &one, visit_explain, &ec, st);
    mpq_clear(ec.q);
    return rc;
}

const qmm_ref_op qmm_ref_op_matmulnbits = {QMM_OP_MATMULNBITS, mnb_compute, mnb_explain, 0,
                                           mnb_accept};
