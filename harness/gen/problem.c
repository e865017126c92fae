/* harness/gen/problem.c — owned operator calls, the seeded random problem generator, and writing
 * a problem as an ONNX node-test directory (see problem.h). */
#include "harness/gen/problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/io/case.h"
#include "harness/io/casedir.h"
#include "harness/base/tensor.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

#define U8 QMM_DTYPE_UINT8
#define S8 QMM_DTYPE_INT8

void qh_problem_init(qh_problem *p, qmm_op_kind op, int32_t opset)
{
    memset(p, 0, sizeof *p);
    qmm_call_init(&p->call, op, opset);
}

void qh_problem_free(qh_problem *p)
{
    qh_owned_call_free(p);
}

int32_t qh_problem_n_inputs(const qh_problem *p)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    return d ? d->n_inputs : 0;
}

qmm_tensor *qh_problem_input(qh_problem *p, int32_t i)
{
    return qmm_call_input(&p->call, i);
}

const qmm_tensor *qh_problem_input_c(const qh_problem *p, int32_t i)
{
    return qmm_call_input_c(&p->call, i);
}

const char *qh_problem_input_name(const qh_problem *p, int32_t i)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    return d && i >= 0 && i < d->n_inputs ? d->inputs[i].name : "?";
}

void *qh_problem_tensor(qh_problem *p, qmm_tensor *t, int32_t dtype, int32_t rank,
                        const int64_t *dims)
{
    memset(t, 0, sizeof *t);
    if (rank < 0 || rank > QMM_MAX_RANK)
        return NULL;
    t->dtype = dtype;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    int64_t n = qmm_tensor_numel(t);
    /* at least one element, so a problem mutated to rank 0 still has an element to read */
    size_t bytes = qmm_dtype_bytes(dtype, n ? n : 1); /* sub-byte types packed */
    if (n < 0 || bytes == 0 || bytes > (size_t)QH_MAX_TENSOR_BYTES)
        return NULL;
    void *d = qh_owned_call_alloc(p, bytes);
    if (!d)
        return NULL;
    t->data = d;
    return d;
}

void qh_problem_finish(qh_problem *p)
{
    qmm_tensor *y = qmm_call_output(&p->call);
    p->y_shape_known = 0;
    if (!y)
        return;
    memset(y, 0, sizeof *y);
    y->dtype = qmm_call_output_dtype(&p->call);
    qmm_status st;
    int32_t rank;
    int64_t dims[QMM_MAX_RANK];
    if (qmm_call_desc(&p->call)->y_shape(&p->call, &rank, dims, &st) == QMM_OK) {
        y->rank = rank;
        memcpy(y->dims, dims, sizeof y->dims);
        p->y_shape_known = 1;
    }
}

static const char *short_type(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_UINT8: return "u8";
    case QMM_DTYPE_INT8: return "s8";
    default: return qmm_dtype_name(dtype);
    }
}

void qh_problem_types(const qh_problem *p, char *buf, size_t size)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    if (!d) {
        snprintf(buf, size, "?");
        return;
    }
    /* y's type is said only where the operator lets the inputs choose it */
    const qmm_tensor *y = d->output_dtype_input >= 0 ? qh_problem_input_c(p, d->output_dtype_input)
                                                     : NULL;
    snprintf(buf, size, "%s%s%s", short_type(qh_problem_input_c(p, d->a_input)->dtype),
             short_type(qh_problem_input_c(p, d->b_input)->dtype), y ? short_type(y->dtype) : "");
}

int qh_problem_has_float8(const qh_problem *p)
{
    return p->call.op == QMM_OP_QLINEARMATMUL &&
           qmm_qlinearmatmul_float8(&p->call.u.qlinearmatmul) != NULL;
}

int32_t qh_problem_scale_type(const qh_problem *p)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    const uint32_t floats = 1u << QMM_DTYPE_FLOAT | 1u << QMM_DTYPE_FLOAT16 |
                            1u << QMM_DTYPE_BFLOAT16;
    int32_t opset = qmm_call_opset(&p->call);
    for (int32_t i = 0; d && i < d->n_inputs; i++)
        if (d->input_types(opset, i) & floats)
            return qh_problem_input_c(p, i)->dtype; /* the first scale, as it is */
    return QMM_DTYPE_UNDEFINED;
}

void qh_problem_describe(const qh_problem *p, char *buf, size_t size)
{
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    size_t o = 0;
    char types[64];
    qh_problem_types(p, types, sizeof types);
#define PUT(...)                                                                             \
    do {                                                                                     \
        if (o < size)                                                                        \
            o += (size_t)snprintf(buf + o, size - o, __VA_ARGS__);                           \
    } while (0)
    if (!d) {
        PUT("no operator");
        return;
    }
    PUT("%s", d->op_type);
    if (d->opset_offset >= 0)
        PUT(" opset %d", qmm_call_opset(&p->call));
    for (int32_t i = 0; i < d->n_attrs; i++)
        PUT(" %s %d", d->attrs[i].name, qmm_call_attr_value(&p->call, i));
    PUT(" %s", types);
    if (qh_problem_scale_type(p) != QMM_DTYPE_UNDEFINED)
        PUT(" %s", qmm_dtype_name(qh_problem_scale_type(p)));
    for (int32_t i = 0; i < d->n_inputs; i++) {
        const qmm_tensor *t = qh_problem_input_c(p, i);
        int operand = i == d->a_input || i == d->b_input;
        if (!qmm_tensor_present(t) ||
            (!operand && qmm_tensor_numel(t) == 1 && t->rank == 0))
            continue; /* absent, or a per-tensor parameter: [] is the common case, not said */
        char dims[128];
        qh_format_dims(t, dims, sizeof dims);
        PUT(" %s%s", d->inputs[i].name, dims);
    }
#undef PUT
}

/* ---- the random generator ---------------------------------------------------------------- */



/* ---- float8 values (docs/semantics.md §2.6): codes, drawn over every finite one ---------- */

/* A finite code with extra weight where rounding is hard: ±0, subnormals, the largest finite
 * values and their neighbours; uniform over every finite code otherwise. */
static int64_t f8_code(qh_rng *r, int32_t dt)
{
    const qmm_float8_format *f = qmm_float8_format_of(dt);
    int neg = qh_rng_chance(r, 1, 2);
    unsigned sub = (1u << f->mbits) - 1u; /* the largest subnormal magnitude */
    int64_t u = qh_rng_range(r, 0, 99);
    unsigned mag;
    if (u < 10)
        mag = 0;
    else if (u < 30)
        mag = (unsigned)qh_rng_range(r, 1, sub);
    else if (u < 45)
        mag = f->max_code - (unsigned)qh_rng_range(r, 0, 2);
    else
        mag = (unsigned)qh_rng_range(r, 0, f->max_code);
    return qmm_float8_signed(dt, neg, mag);
}

/* A finite code within 3 codes of `zp`'s magnitude, with zp's sign: values close to it. */
static int64_t f8_near(qh_rng *r, int32_t dt, int64_t zp)
{
    return qmm_float8_signed(dt, zp & 0x80, (zp & 0x7f) + qh_rng_range(r, -3, 3));
}

/* A NaN or an infinity of float8 type dt: what a deliberately invalid float8 problem holds. */
static int64_t f8_not_finite(qh_rng *r, int32_t dt)
{
    const qmm_float8_format *f = qmm_float8_format_of(dt);
    if (f->fnuz)
        return 0x80;
    if (f->has_inf && qh_rng_chance(r, 1, 2))
        return qh_rng_chance(r, 1, 2) ? 0x7c : 0xfc;
    return f->has_inf ? 0x7e : 0x7f;
}

/* Dimension sizes: mostly small, sometimes medium, rarely large or empty. */
static int64_t pick_dim(qh_rng *r)
{
    int64_t u = qh_rng_range(r, 0, 99);
    if (u < 3)
        return 0;
    if (u < 83)
        return qh_rng_range(r, 1, 8);
    if (u < 98)
        return qh_rng_range(r, 9, 64);
    return qh_rng_range(r, 65, 300);
}

static int32_t pick_rank(qh_rng *r)
{
    int64_t u = qh_rng_range(r, 0, 99);
    return u < 10 ? 1 : u < 65 ? 2 : u < 90 ? 3 : 4;
}

/* A value within 3 of zero point zp, clamped to dt's range. */
static int64_t near_zp(qh_rng *r, int32_t dt, int64_t zp)
{
    if (qmm_is_float8(dt))
        return f8_near(r, dt, zp);
    int64_t v = zp + qh_rng_range(r, -3, 3);
    return v < qh_dtype_qmin(dt) ? qh_dtype_qmin(dt) : v > qh_dtype_qmax(dt) ? qh_dtype_qmax(dt) : v;
}

/* Any value of dt: uniform for uint8/int8, f8_code's draw for float8. */
static int64_t any_value(qh_rng *r, int32_t dt)
{
    return qmm_is_float8(dt) ? f8_code(r, dt) : qh_rng_range(r, qh_dtype_qmin(dt), qh_dtype_qmax(dt));
}

/* One end of dt's range, either (float8: the largest finite value of either sign). */
static int64_t extreme(qh_rng *r, int32_t dt)
{
    const qmm_float8_format *f = qmm_float8_format_of(dt);
    int low = qh_rng_chance(r, 1, 2);
    if (f)
        return qmm_float8_signed(dt, low, f->max_code);
    return low ? qh_dtype_qmin(dt) : qh_dtype_qmax(dt);
}

typedef struct value_mode {
    int kind; /* 0 uniform, 1 extremes only, 2 near the zero point, 3 constant */
    int64_t constant;
} value_mode;

static void fill_values(qh_rng *r, qmm_tensor *t, int64_t zp)
{
    value_mode m = {0, 0};
    int64_t u = qh_rng_range(r, 0, 99);
    m.kind = u < 60 ? 0 : u < 75 ? 1 : u < 90 ? 2 : 3;
    m.constant = any_value(r, t->dtype);
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        switch (m.kind) {
        case 1: v = extreme(r, t->dtype); break;
        case 2: v = near_zp(r, t->dtype, zp); break;
        case 3: v = m.constant; break;
        default: v = any_value(r, t->dtype); break;
        }
        qh_tensor_set_int(t, i, v);
    }
}

static int64_t pick_zp(qh_rng *r, int32_t dt, int kind)
{
    switch (kind) {
    case 0: return 0;
    case 1: return extreme(r, dt);
    default: return any_value(r, dt);
    }
}

/* A parameter shape for operand `rank`/`dims` (the operand's own shape): per-tensor ([] or
 * [1]), or per-row (role 'a': [M] for 2-D a, else [..,M,1]) / per-column (role 'b': [N] or
 * [..,1,N]); leading dims are the operand's batch dims or 1. */
static int32_t pick_param_shape(qh_rng *r, char role, int32_t rank, const int64_t *dims,
                                int64_t *out)
{
    if (rank < 2 || qh_rng_chance(r, 3, 5)) {
        if (qh_rng_chance(r, 1, 2))
            return 0;
        out[0] = 1;
        return 1;
    }
    int64_t m_or_n = role == 'a' ? dims[rank - 2] : dims[rank - 1];
    if (qh_rng_chance(r, 1, 3) && (role == 'b' || rank == 2)) {
        out[0] = m_or_n;
        return 1;
    }
    int32_t pr = (int32_t)qh_rng_range(r, 2, rank);
    for (int32_t i = 0; i < pr - 2; i++) {
        int64_t d = dims[rank - pr + i];
        out[i] = qh_rng_chance(r, 1, 2) ? d : 1;
    }
    out[pr - 2] = role == 'a' ? m_or_n : 1;
    out[pr - 1] = role == 'a' ? 1 : m_or_n;
    return pr;
}

/* y's parameters: per-tensor, or any shape broadcastable to y. */
static int32_t pick_y_param_shape(qh_rng *r, const qmm_tensor *y, int64_t *out)
{
    if (y->rank == 0 || qh_rng_chance(r, 3, 5)) {
        if (qh_rng_chance(r, 1, 2))
            return 0;
        out[0] = 1;
        return 1;
    }
    int32_t pr = (int32_t)qh_rng_range(r, 1, y->rank);
    for (int32_t i = 0; i < pr; i++) {
        int64_t d = y->dims[y->rank - pr + i];
        out[i] = qh_rng_chance(r, 2, 3) ? d : 1;
    }
    return pr;
}

/* 2^e exactly, for e in the double range. */
static double pow2(int e) { return ldexp(1.0, e); }

/* A random value with a 24-bit mantissa in [1, 2). */
static double mantissa(qh_rng *r) { return 1.0 + (double)qh_rng_range(r, 0, (1 << 23) - 1) / 8388608.0; }

/* Keeps a scale finite and > 0 after rounding to its type (float16 has a narrow range). */
static double fit_scale(int32_t dtype, double v)
{
    double lo = dtype == QMM_DTYPE_FLOAT16 ? pow2(-24) : pow2(-149);
    double hi = dtype == QMM_DTYPE_FLOAT16 ? 65504.0 : 3.0e38;
    if (!(v >= lo))
        v = lo;
    if (v > hi)
        v = hi;
    return qmm_round_to_scale_type(dtype, v);
}

typedef struct scale_plan {
    int mode;      /* 0 random, 1 powers of two, 2 tie-friendly, 3 extreme exponents */
    double sa, sb, sy;
} scale_plan;

static void fill_scales(qh_rng *r, qmm_tensor *t, double base, int mode)
{
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = base;
        if (n > 1) {
            if (mode == 0)
                v *= mantissa(r);
            else
                v *= pow2((int)qh_rng_range(r, 0, 1));
        }
        qh_tensor_set_scale(t, i, fit_scale(t->dtype, v));
    }
}

static void pick_scales(qh_rng *r, int64_t k, scale_plan *s)
{
    int64_t u = qh_rng_range(r, 0, 99);
    s->mode = u < 50 ? 0 : u < 75 ? 1 : u < 95 ? 2 : 3;
    /* typical |acc|: sqrt(K) times a typical product of centred values */
    double acc = 6400.0 * sqrt((double)(k > 0 ? k : 1));
    double target = pow2((int)qh_rng_range(r, 0, 7)); /* typical |y| before the zero point */
    int ea = (int)qh_rng_range(r, -10, 0), eb = (int)qh_rng_range(r, -10, 0);
    switch (s->mode) {
    case 0:
        s->sa = pow2(ea) * mantissa(r);
        s->sb = pow2(eb) * mantissa(r);
        s->sy = s->sa * s->sb * acc / target * mantissa(r);
        break;
    case 1:
    case 2: {
        s->sa = pow2(ea);
        s->sb = pow2(eb);
        /* tie-friendly: a multiplier of 1/2, 1/4 or 1/8 puts many results on .5 */
        int em = s->mode == 2 ? -(int)qh_rng_range(r, 1, 3)
                              : (int)lround(log2(target / acc));
        s->sy = s->sa * s->sb / pow2(em);
        break;
    }
    default: {
        /* subnormal or huge: float32 products of these under- or overflow */
        int big = qh_rng_chance(r, 1, 2);
        s->sa = big ? pow2(100) * mantissa(r) : pow2(-140) * mantissa(r);
        s->sb = big ? pow2(90) : pow2(-10);
        s->sy = s->sa * s->sb * acc / target;
        break;
    }
    }
}

/* One operand as drawn: its type, shape and how its zero point was picked. */
typedef struct operand_plan {
    int32_t dtype, rank;
    int64_t dims[QMM_MAX_RANK];
    int zkind;  /* pick_zp's kind for the zero point's further elements */
    int64_t z0; /* the zero point's first element, which the values are centred on */
} operand_plan;

/* QLinearMatMul's opset and scale type, or MatMulInteger; sets up p. */
static void pick_op(qh_problem *p, qh_rng *r, int qlm, int32_t *sdt)
{
    int32_t opset = 10;
    *sdt = QMM_DTYPE_FLOAT;
    if (qlm && qh_rng_chance(r, 3, 5)) {
        static const int32_t sts[3] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16, QMM_DTYPE_BFLOAT16};
        opset = 21;
        *sdt = sts[qh_rng_range(r, 0, 2)];
    }
    qh_problem_init(p, qlm ? QMM_OP_QLINEARMATMUL : QMM_OP_MATMULINTEGER, opset);
}

/* The budget's bounds (qh_random_opts): outputs, and batch*M*N*K multiplies. */
static int64_t max_outputs_of(const qh_random_opts *o)
{
    return o && o->max_outputs > 0 ? o->max_outputs : 4096;
}

static int64_t max_macs_of(const qh_random_opts *o)
{
    return o && o->max_macs > 0 ? o->max_macs : (int64_t)1 << 20;
}

/* Halves the largest of m, k, n until the problem is cheap enough for the exact reference. */
static void shrink_to_budget(const qh_random_opts *o, int32_t ra, int32_t rb, int64_t batch,
                             int64_t *m, int64_t *k, int64_t *n)
{
    int64_t max_out = max_outputs_of(o), max_macs = max_macs_of(o);
    for (;;) {
        int64_t mm = ra == 1 ? 1 : *m, nn = rb == 1 ? 1 : *n;
        if (batch * mm * nn <= max_out && batch * mm * nn * (*k ? *k : 1) <= max_macs)
            break;
        if (*m <= 1 && *n <= 1 && *k <= 1)
            break; /* only the batch is left, and it is bounded by 3^6 */
        int64_t *big = k;
        if (ra != 1 && *m >= *big)
            big = m;
        if (rb != 1 && *n >= *big)
            big = n;
        *big /= 2;
    }
}

/* The operand's leading dims: the shared batch dims bd (br of them), each sometimes 1. */
static void pick_batch_dims(qh_rng *r, operand_plan *x, const int64_t *bd, int32_t br)
{
    int32_t bx = x->rank >= 2 ? x->rank - 2 : 0;
    for (int32_t i = 0; i < bx; i++) {
        int64_t d = bd[br - bx + i];
        x->dims[i] = qh_rng_chance(r, 1, 3) ? 1 : d;
    }
}

/* One problem in LONG_K_IN has a long K, 1025 to 8192 (pick_dim's stop at 300), with
 * M <= 16 and M x N <= 255 (at most 2^18 multiplies: the reference's exact sums make a long
 * problem cost as much as a hundred others: diff ran 1.27x longer for them, 1.5x with
 * 2^20), which the default budget keeps whole: past 1024 is where the optimized
 * backend reads a uint8 A as it is (raw A, docs/optimized.md) and float8 sums grow longest.
 * Drawn from a stream of its own beside `r` (which it does not advance), so that every other
 * problem of a seed is what it was before the long ones came (2026-11-29); only where the
 * budget holds such a problem (255 outputs and 2^20 multiplies: an edge suite's smaller
 * budget draws none). Batch dims can still take it past the budget, which then halves K,
 * sometimes below 1025. */
enum { LONG_K_IN = 100 };

static void long_k(const qh_rng *r, const qh_random_opts *o, int64_t *m, int64_t *k, int64_t *n)
{
    if (max_outputs_of(o) < 255 || max_macs_of(o) < (int64_t)1 << 20)
        return;
    qh_rng side = {r->s ^ 0x4c4f4e474b4b4b4bu};
    if (!qh_rng_chance(&side, 1, LONG_K_IN))
        return;
    *m = qh_rng_range(&side, 1, 16);
    *n = qh_rng_range(&side, 1, 255 / *m < 32 ? 255 / *m : 32);
    int64_t most = ((int64_t)1 << 18) / (*m * *n);
    *k = qh_rng_range(&side, 1025, most < 8192 ? most : 8192);
}

/* Ranks and dims of a and b (their types already set); returns K. */
static int64_t pick_shapes(qh_rng *r, const qh_random_opts *o, operand_plan *a, operand_plan *b)
{
    a->rank = pick_rank(r);
    b->rank = pick_rank(r);
    int64_t m = pick_dim(r), k = pick_dim(r), n = pick_dim(r);
    long_k(r, o, &m, &k, &n);
    int32_t ba = a->rank >= 2 ? a->rank - 2 : 0, bb = b->rank >= 2 ? b->rank - 2 : 0;
    int32_t br = ba > bb ? ba : bb;
    int64_t bd[QMM_MAX_RANK];
    int64_t batch = 1;
    for (int32_t i = 0; i < br; i++) {
        bd[i] = qh_rng_chance(r, 1, 50) ? 0 : qh_rng_range(r, 1, 3);
        batch *= bd[i];
    }
    shrink_to_budget(o, a->rank, b->rank, batch, &m, &k, &n);
    pick_batch_dims(r, a, bd, br);
    pick_batch_dims(r, b, bd, br);
    if (a->rank == 1) {
        a->dims[0] = k;
    } else {
        a->dims[a->rank - 2] = m;
        a->dims[a->rank - 1] = k;
    }
    if (b->rank == 1) {
        b->dims[0] = k;
    } else {
        b->dims[b->rank - 2] = k;
        b->dims[b->rank - 1] = n;
    }
    return k;
}

/* A zero point's elements: x's z0 first, then fresh draws of x's kind. */
static void fill_zero_point(qh_rng *r, qmm_tensor *z, const operand_plan *x)
{
    int64_t cnt = qmm_tensor_numel(z);
    for (int64_t i = 0; i < cnt; i++)
        qh_tensor_set_int(z, i, i == 0 ? x->z0 : pick_zp(r, x->dtype, x->zkind));
}

/* MatMulInteger: each zero point absent (0) or of a random parameter shape. */
static int random_mmi_params(qh_problem *p, qh_rng *r, const operand_plan *a,
                             const operand_plan *b)
{
    qmm_matmulinteger *c = &p->call.u.matmulinteger;
    for (int side = 0; side < 2; side++) {
        const operand_plan *x = side ? b : a;
        qmm_tensor *z = side ? &c->b_zero_point : &c->a_zero_point;
        int64_t pd[QMM_MAX_RANK];
        if (qh_rng_chance(r, 3, 10))
            continue; /* absent: 0 */
        int32_t pr = pick_param_shape(r, side ? 'b' : 'a', x->rank, x->dims, pd);
        if (!qh_problem_tensor(p, z, x->dtype, pr, pd))
            return -1;
        fill_zero_point(r, z, x);
    }
    return 0;
}

/* Re-draws every value of t close to zero point zp. */
static void redraw_near(qh_rng *r, qmm_tensor *t, int64_t zp)
{
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        qh_tensor_set_int(t, i, near_zp(r, t->dtype, zp));
}

/* y's scale and zero point; the zero point's type decides y's type, and its shape needs y's
 * shape first. */
static int random_y_params(qh_problem *p, qh_rng *r, int32_t ty, int32_t sdt,
                           const scale_plan *sp)
{
    qmm_qlinearmatmul *c = &p->call.u.qlinearmatmul;
    int64_t pd[QMM_MAX_RANK];
    qmm_tensor ytmp;
    memset(&ytmp, 0, sizeof ytmp);
    c->y_zero_point.dtype = ty;
    qh_problem_finish(p);
    ytmp = c->y;
    int32_t pr = p->y_shape_known ? pick_y_param_shape(r, &ytmp, pd) : 0;
    if (!qh_problem_tensor(p, &c->y_scale, sdt, pr, pd) ||
        !qh_problem_tensor(p, &c->y_zero_point, ty, pr, pd))
        return -1;
    fill_scales(r, &c->y_scale, sp->sy, sp->mode);
    int zkind_y = (int)qh_rng_range(r, 0, 2);
    int64_t cnt = qmm_tensor_numel(&c->y_zero_point);
    for (int64_t i = 0; i < cnt; i++)
        qh_tensor_set_int(&c->y_zero_point, i,
                          zkind_y == 2 && !qmm_is_float8(ty)
                              ? qh_rng_range(r, qh_dtype_qmin(ty) / 2, qh_dtype_qmax(ty) / 2 + 64)
                              : pick_zp(r, ty, zkind_y));
    return 0;
}

/* log2 of a typical |value - zero point| of type dt: 80 for uint8/int8 (pick_scales assumes
 * 80·80 per product), an eighth of the largest finite value for float8. */
static int typical_log2(int32_t dt)
{
    const qmm_float8_format *f = qmm_float8_format_of(dt);
    return f ? ilogb(qmm_float8_decode(dt, f->max_code)) - 3 : 6;
}

/* Moves y_scale by a power of two (so tie-friendly plans keep their ties) for float8 operands'
 * wider range, and for a float8 y now and then towards its subnormals or its largest values:
 * without it most float8 results saturate. */
static void f8_rescale(qh_rng *r, scale_plan *sp, int32_t ta, int32_t tb, int32_t ty)
{
    /* 9, not log2(80·80) ≈ 12.6: the zero points at the extremes (±max) widen the differences;
     * chosen by counting saturated float8 results over a seeded run */
    int e = typical_log2(ta) + typical_log2(tb) - 9;
    if (qmm_is_float8(ty))
        e += (int)qh_rng_range(r, -4, 6);
    sp->sy *= pow2(e);
}

/* QLinearMatMul: a scale plan, then a's, b's and y's scales and zero points. */
static int random_qlm_params(qh_problem *p, qh_rng *r, const operand_plan *a,
                             const operand_plan *b, int32_t ty, int32_t sdt, int64_t k)
{
    qmm_qlinearmatmul *c = &p->call.u.qlinearmatmul;
    scale_plan sp;
    pick_scales(r, k, &sp);
    if (qmm_is_float8(a->dtype) || qmm_is_float8(b->dtype) || qmm_is_float8(ty))
        f8_rescale(r, &sp, a->dtype, b->dtype, ty);
    if (sp.mode == 2) {
        /* re-draw the operands close to their zero points so acc stays small */
        redraw_near(r, qh_problem_input(p, 0), a->z0);
        redraw_near(r, qh_problem_input(p, 3), b->z0);
    }
    for (int side = 0; side < 2; side++) {
        const operand_plan *x = side ? b : a;
        qmm_tensor *s = side ? &c->b_scale : &c->a_scale;
        qmm_tensor *z = side ? &c->b_zero_point : &c->a_zero_point;
        int64_t pd[QMM_MAX_RANK];
        int32_t pr = pick_param_shape(r, side ? 'b' : 'a', x->rank, x->dims, pd);
        if (!qh_problem_tensor(p, s, sdt, pr, pd) || !qh_problem_tensor(p, z, x->dtype, pr, pd))
            return -1;
        fill_scales(r, s, side ? sp.sb : sp.sa, sp.mode);
        fill_zero_point(r, z, x);
    }
    return random_y_params(p, r, ty, sdt, &sp);
}

/* Now and then, breaks one rule of docs/semantics.md §2.5 on purpose. */
static void maybe_break_rule(qh_problem *p, qh_rng *r, const qh_random_opts *o, int qlm,
                             int32_t sdt)
{
    if (!o || o->invalid_per_mille <= 0 || qh_rng_range(r, 0, 999) >= o->invalid_per_mille)
        return;
    qmm_tensor *a = qh_problem_input(p, 0);
    int kind = (int)qh_rng_range(r, 0, qlm ? 3 : 1);
    if (kind == 0 && qmm_is_float8(a->dtype) && qmm_tensor_numel(a) > 0) {
        /* a float8 value that is NaN or infinite (only float8 problems get here) */
        qh_tensor_set_int(a, qh_rng_range(r, 0, qmm_tensor_numel(a) - 1),
                          f8_not_finite(r, a->dtype));
    } else if (kind == 0) {
        a->rank = 0; /* the buffer always holds at least one element */
    } else if (kind == 1) {
        qmm_tensor *z = qlm ? &p->call.u.qlinearmatmul.a_zero_point
                            : &p->call.u.matmulinteger.a_zero_point;
        if (qmm_tensor_present(z))
            z->dtype = z->dtype == U8 ? S8 : U8;
        else
            a->rank = 0;
    } else if (kind == 2) {
        qmm_tensor *s = qh_rng_chance(r, 1, 2) ? &p->call.u.qlinearmatmul.b_scale
                                               : &p->call.u.qlinearmatmul.y_scale;
        static const double bad[4] = {0.0, -1.0, NAN, INFINITY};
        qh_tensor_set_scale(s, 0, bad[qh_rng_range(r, 0, 3)]);
    } else {
        /* float16/bfloat16 scales need opset 21; narrowing float to float16 keeps every
         * read inside the buffer */
        if (sdt == QMM_DTYPE_FLOAT)
            p->call.u.qlinearmatmul.a_scale.dtype = QMM_DTYPE_FLOAT16;
        p->call.u.qlinearmatmul.opset = 10;
    }
}

/* Whether this QLinearMatMul-21 problem takes float8 types: decided on a side stream derived
 * from r's state without advancing r, so a problem that does not is drawn exactly as before
 * float8 existed (seeds pinned by tests and reports keep their problems). */
static int float8_drawn(const qh_rng *r, const qh_random_opts *o)
{
    if (!o || o->float8_per_mille <= 0)
        return 0;
    qh_rng side = {r->s ^ 0xf1087e4d3fa5c0deu};
    return qh_rng_range(&side, 0, 999) < o->float8_per_mille;
}

/* T1, T2, T3 over every mix the opset-21 schema allows with at least one float8 type: float8
 * inputs with an integer output and the reverse included. */
static void pick_float8_types(qh_rng *r, int32_t *ta, int32_t *tb, int32_t *ty)
{
    static const int32_t all[6] = {U8, S8, QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FNUZ,
                                   QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2FNUZ};
    do {
        *ta = all[qh_rng_range(r, 0, 5)];
        *tb = all[qh_rng_range(r, 0, 5)];
        *ty = all[qh_rng_range(r, 0, 5)];
    } while (!qmm_is_float8(*ta) && !qmm_is_float8(*tb) && !qmm_is_float8(*ty));
}

/* QLinearMatMul or MatMulInteger: numpy.matmul operands with zero points (and scales). */
static int random_matmul(qh_problem *p, qh_rng *r, const qh_random_opts *o, int qlm)
{
    int32_t sdt;
    pick_op(p, r, qlm, &sdt);
    operand_plan a, b;
    int32_t ty;
    if (qlm && qmm_call_opset(&p->call) == 21 && float8_drawn(r, o)) {
        pick_float8_types(r, &a.dtype, &b.dtype, &ty);
    } else {
        a.dtype = qh_rng_chance(r, 1, 2) ? U8 : S8;
        b.dtype = qh_rng_chance(r, 1, 2) ? U8 : S8;
        ty = qh_rng_chance(r, 1, 2) ? U8 : S8;
    }
    int64_t k = pick_shapes(r, o, &a, &b);

    a.zkind = (int)qh_rng_range(r, 0, 2);
    b.zkind = (int)qh_rng_range(r, 0, 2);
    a.z0 = pick_zp(r, a.dtype, a.zkind);
    b.z0 = pick_zp(r, b.dtype, b.zkind);
    qmm_tensor *ta = qh_problem_input(p, 0);
    qmm_tensor *tb = qh_problem_input(p, qmm_call_desc(&p->call)->b_input);
    if (!qh_problem_tensor(p, ta, a.dtype, a.rank, a.dims) ||
        !qh_problem_tensor(p, tb, b.dtype, b.rank, b.dims))
        return -1;
    fill_values(r, ta, a.z0);
    fill_values(r, tb, b.z0);
    if ((qlm ? random_qlm_params(p, r, &a, &b, ty, sdt, k) : random_mmi_params(p, r, &a, &b)) != 0)
        return -1;
    maybe_break_rule(p, r, o, qlm, sdt);
    qh_problem_finish(p);
    return 0;
}


/* ---- QOrderedMatMul (docs/qorderedmatmul.md) ----------------------------------------------- */

/* A parameter of one element, [] or [1]. */
static int32_t scalar_shape(qh_rng *r, int64_t *dims)
{
    dims[0] = 1;
    return qh_rng_chance(r, 1, 2) ? 0 : 1;
}

/* The shapes: the ROW combination takes any M, K, N; the COL32 one needs K and N in whole
 * 32-wide tiles (M is free). Batches of B and C are 1 or A's. */
static void qom_shapes(qh_rng *r, const qh_random_opts *o, int col32, operand_plan *a,
                       operand_plan *b, int64_t *n_out)
{
    int64_t batch = qh_rng_chance(r, 1, 3) ? qh_rng_range(r, 1, 3) : 1;
    a->rank = batch > 1 || qh_rng_chance(r, 1, 4) ? 3 : 2;
    b->rank = a->rank == 3 && qh_rng_chance(r, 1, 3) ? 3 : 2;
    int64_t m = pick_dim(r), k, n;
    if (col32) {
        k = 32 * qh_rng_range(r, qh_rng_chance(r, 1, 20) ? 0 : 1, 2);
        n = 32 * qh_rng_range(r, 1, 2);
        int64_t max_out = max_outputs_of(o), max_macs = max_macs_of(o);
        while (m > 1 && (batch * m * n > max_out || batch * m * n * (k ? k : 1) > max_macs))
            m /= 2;
    } else {
        k = pick_dim(r);
        n = pick_dim(r);
        shrink_to_budget(o, 2, 2, batch, &m, &k, &n);
    }
    int64_t ad[3] = {batch, m, k}, bd[3] = {qh_rng_chance(r, 1, 2) ? 1 : batch, k, n};
    memcpy(a->dims, ad + (3 - a->rank), (size_t)a->rank * sizeof ad[0]);
    memcpy(b->dims, bd + (3 - b->rank), (size_t)b->rank * sizeof bd[0]);
    *n_out = n;
}

/* The optional inputs: bias [N] (ROW combination only), C with its scale. */
static int qom_optional(qh_problem *p, qh_rng *r, const operand_plan *a, int64_t n,
                        const scale_plan *sp)
{
    qmm_qorderedmatmul *c = &p->call.u.qorderedmatmul;
    int64_t d[3];
    if (c->order_b == QMM_ORDER_COL && qh_rng_chance(r, 1, 3)) {
        d[0] = n;
        if (!qh_problem_tensor(p, &c->bias, QMM_DTYPE_FLOAT, 1, d))
            return -1;
        for (int64_t j = 0; j < n; j++) /* output units: quarters, ties included */
            qh_tensor_set_scale(&c->bias, j, (double)qh_rng_range(r, -256, 256) / 4.0);
    }
    if (qh_rng_chance(r, 1, 3)) {
        int32_t rank = a->rank == 3 && qh_rng_chance(r, 1, 2) ? 3 : 2;
        d[0] = a->rank == 3 && qh_rng_chance(r, 1, 2) ? a->dims[0] : 1;
        d[rank - 2] = a->dims[a->rank - 2];
        d[rank - 1] = n;
        if (!qh_problem_tensor(p, &c->c, QMM_DTYPE_INT8, rank, d) ||
            !qh_problem_tensor(p, &c->scale_c, QMM_DTYPE_FLOAT, scalar_shape(r, d), d))
            return -1;
        fill_values(r, &c->c, 0);
        qh_tensor_set_scale(&c->scale_c, 0,
                            fit_scale(QMM_DTYPE_FLOAT, sp->sy * pow2((int)qh_rng_range(r, -2, 2))));
    }
    return 0;
}

/* Now and then, breaks one rule of docs/qorderedmatmul.md on purpose. */
static void qom_break_rule(qh_problem *p, qh_rng *r, const qh_random_opts *o)
{
    if (!o || o->invalid_per_mille <= 0 || qh_rng_range(r, 0, 999) >= o->invalid_per_mille)
        return;
    qmm_qorderedmatmul *c = &p->call.u.qorderedmatmul;
    static const double bad[4] = {0.0, -1.0, NAN, INFINITY};
    switch (qh_rng_range(r, 0, 2)) {
    case 0: c->order_y = qh_rng_chance(r, 1, 2) ? 7 : QMM_ORDER_COL; break;
    case 1: qh_tensor_set_scale(&c->scale_y, 0, bad[qh_rng_range(r, 0, 3)]); break;
    default: c->a.rank = 0; break; /* the buffer always holds at least one element */
    }
}

/* QOrderedMatMul: one of the two order combinations with clean tiles, int8 operands, float
 * scales (scale_B per column now and then), sometimes a bias and a C. */
static int random_qom(qh_problem *p, qh_rng *r, const qh_random_opts *o)
{
    qh_problem_init(p, QMM_OP_QORDEREDMATMUL, 1);
    qmm_qorderedmatmul *c = &p->call.u.qorderedmatmul;
    int col32 = qh_rng_chance(r, 1, 2);
    c->order_a = c->order_y = col32 ? QMM_ORDER_COL32 : QMM_ORDER_ROW;
    c->order_b = !col32 ? QMM_ORDER_COL
                 : qh_rng_chance(r, 1, 2) ? QMM_ORDER_COL4_4R2_8C : QMM_ORDER_COL32_2R_4R4;
    operand_plan a, b;
    int64_t n, d[1];
    qom_shapes(r, o, col32, &a, &b, &n);
    scale_plan sp;
    pick_scales(r, a.dims[a.rank - 1], &sp);
    int per_col = qh_rng_chance(r, 1, 3);
    d[0] = n;
    if (!qh_problem_tensor(p, &c->a, QMM_DTYPE_INT8, a.rank, a.dims) ||
        !qh_problem_tensor(p, &c->b, QMM_DTYPE_INT8, b.rank, b.dims) ||
        !qh_problem_tensor(p, &c->scale_a, QMM_DTYPE_FLOAT, scalar_shape(r, d), d) ||
        !qh_problem_tensor(p, &c->scale_y, QMM_DTYPE_FLOAT, scalar_shape(r, d), d))
        return -1;
    d[0] = n;
    if (!qh_problem_tensor(p, &c->scale_b, QMM_DTYPE_FLOAT, per_col ? 1 : scalar_shape(r, d), d))
        return -1;
    fill_values(r, &c->a, 0);
    fill_values(r, &c->b, 0);
    fill_scales(r, &c->scale_a, sp.sa, sp.mode);
    fill_scales(r, &c->scale_b, sp.sb, sp.mode);
    fill_scales(r, &c->scale_y, sp.sy, sp.mode);
    if (qom_optional(p, r, &a, n, &sp) != 0)
        return -1;
    qom_break_rule(p, r, o);
    qh_problem_finish(p);
    return 0;
}

/* ---- the float-output operators (docs/semantics.md §8-§10) ----------------------------------- */

/* A float value for an activation, bias or float zero point: random mantissa and sign,
 * exponents around 2^0, now and then 0, a subnormal of float32, a huge one, or (1 in 200)
 * an infinity or NaN. */
static double llm_float(qh_rng *r, int spread)
{
    int64_t u = qh_rng_range(r, 0, 199);
    double sign = qh_rng_chance(r, 1, 2) ? -1.0 : 1.0;
    if (u == 0)
        return qh_rng_chance(r, 1, 2) ? sign * INFINITY : NAN;
    if (u < 8)
        return 0.0;
    if (u < 10)
        return sign * mantissa(r) * pow2((int)qh_rng_range(r, -149, -127));
    if (u < 12)
        return sign * mantissa(r) * pow2((int)qh_rng_range(r, 60, 127));
    return sign * mantissa(r) * pow2((int)qh_rng_range(r, -spread, spread));
}

/* A scale: mostly positive, random mantissa, exponent -12..0; now and then 0, negative,
 * subnormal (of float32) or huge (docs/semantics.md §8: every one is valid). */
static double llm_scale(qh_rng *r, int mode)
{
    int64_t u = qh_rng_range(r, 0, 99);
    double v = mode == 1 ? pow2((int)qh_rng_range(r, -12, 0))
                         : mantissa(r) * pow2((int)qh_rng_range(r, -12, 0));
    if (u < 3)
        return 0.0;
    if (u < 13)
        return -v;
    if (u < 15)
        return mantissa(r) * pow2((int)qh_rng_range(r, -149, -127));
    if (u < 17)
        return mantissa(r) * pow2((int)qh_rng_range(r, 60, 120));
    return v;
}

static void fill_llm(qh_rng *r, qmm_tensor *t, int spread)
{
    int constant = qh_rng_chance(r, 1, 10);
    double c = llm_float(r, spread);
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++)
        qh_tensor_set_scale(t, i, constant ? c : llm_float(r, spread));
}

static void fill_llm_scales(qh_rng *r, qmm_tensor *t)
{
    int mode = (int)qh_rng_range(r, 0, 1);
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++)
        qh_tensor_set_scale(t, i, llm_scale(r, mode));
}

static void fill_bytes(qh_rng *r, qmm_tensor *t)
{
    unsigned char *d = t->data;
    size_t n = qmm_dtype_bytes(t->dtype, qmm_tensor_numel(t));
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)qh_rng_range(r, 0, 255);
    for (int64_t i = qmm_tensor_numel(t); n && qmm_dtype_size(t->dtype) == 0 &&
                                           qmm_dtype_bytes(t->dtype, i + 1) == n; i++)
        qh_tensor_set_int(t, i, 0); /* a packed type's padding bits stay zero */
}

static int32_t pick_t1(qh_rng *r)
{
    int64_t u = qh_rng_range(r, 0, 9);
    return u < 7 ? QMM_DTYPE_FLOAT : u < 9 ? QMM_DTYPE_FLOAT16 : QMM_DTYPE_BFLOAT16;
}

/* MatMulNBits: bits 2/4/8, block sizes 16..1024 (mostly small), K often not a multiple of the
 * block, A of rank 1..3 with M from {1, 2, small, 127..129, 257} under the budget, every
 * zero-point form (absent, packed uint8, T1; 2-D or flat; present but empty among the broken
 * rules), scales 2-D or flat (now and then 0, negative, subnormal or huge), bias or none, g_idx
 * now and then, accuracy levels 0..4, T1 mostly float. */
static int random_mnb(qh_problem *p, qh_rng *r, const qh_random_opts *o)
{
    qh_problem_init(p, QMM_OP_MATMULNBITS, 1);
    qmm_matmulnbits *c = &p->call.u.matmulnbits;
    static const int bitss[3] = {2, 4, 8};
    c->bits = bitss[qh_rng_range(r, 0, 2)];
    int64_t u = qh_rng_range(r, 0, 99);
    c->block_size = u < 85 ? 16 << qh_rng_range(r, 0, 3) : 16 << qh_rng_range(r, 4, 6);
    c->accuracy_level = qh_rng_chance(r, 1, 2) ? 4 : (int32_t)qh_rng_range(r, 0, 3);
    int64_t bs = c->block_size;
    int64_t k = qh_rng_chance(r, 1, 4) ? bs * qh_rng_range(r, 1, 3)
                                      : qh_rng_range(r, 1, bs * 2 + bs / 2);
    int64_t n = qh_rng_range(r, 1, qh_rng_chance(r, 1, 8) ? 40 : 6);
    static const int64_t ms[8] = {1, 1, 2, 3, 127, 128, 129, 257};
    int64_t m = qh_rng_chance(r, 1, 2) ? ms[qh_rng_range(r, 0, 7)] : qh_rng_range(r, 1, 9);
    /* the exact reference costs about a microsecond a multiply-add per model: mostly small,
     * now and then an LLM-like row count */
    int64_t max_macs = o && o->max_macs > 0 ? o->max_macs
                       : qh_rng_chance(r, 1, 20) ? (int64_t)1 << 16 : (int64_t)1 << 12;
    while (m > 1 && m * n * k > max_macs)
        m = (m + 1) / 2;
    while (n > 1 && m * n * k > max_macs)
        n = (n + 1) / 2;
    int32_t t1 = pick_t1(r);
    int64_t kb = (k + bs - 1) / bs, blob = bs * c->bits / 8;
    c->k = (int32_t)k;
    c->n = (int32_t)n;
    int64_t ad[3], d[3];
    int32_t ar = (int32_t)qh_rng_range(r, 1, 3);
    if (ar == 1)
        m = 1;
    ad[ar - 1] = k;
    if (ar >= 2)
        ad[ar - 2] = m;
    if (ar == 3)
        ad[0] = 1;
    d[0] = n, d[1] = kb, d[2] = blob;
    if (!qh_problem_tensor(p, &c->a, t1, ar, ad) ||
        !qh_problem_tensor(p, &c->b, QMM_DTYPE_UINT8, 3, d))
        return -1;
    int flat = qh_rng_chance(r, 1, 4);
    d[0] = flat ? n * kb : n;
    if (!qh_problem_tensor(p, &c->scales, t1, flat ? 1 : 2, d))
        return -1;
    int64_t zf = qh_rng_range(r, 0, 2); /* absent, packed uint8, T1 */
    int32_t zdt = zf == 1 ? QMM_DTYPE_UINT8 : t1;
    int64_t zcols = zf == 1 ? (kb * c->bits + 7) / 8 : kb;
    d[0] = flat ? n * zcols : n;
    d[1] = zcols;
    if (zf && !qh_problem_tensor(p, &c->zero_points, zdt, flat ? 1 : 2, d))
        return -1;
    d[0] = n;
    if (qh_rng_chance(r, 1, 2) && !qh_problem_tensor(p, &c->bias, t1, 1, d))
        return -1;
    d[0] = k;
    if (qh_rng_chance(r, 1, 20) && !qh_problem_tensor(p, &c->g_idx, QMM_DTYPE_INT32, 1, d))
        return -1;
    fill_llm(r, &c->a, 4);
    fill_bytes(r, &c->b);
    fill_llm_scales(r, &c->scales);
    if (zf == 1) {
        fill_bytes(r, &c->zero_points);
    } else if (zf == 2) {
        for (int64_t i = 0; i < qmm_tensor_numel(&c->zero_points); i++)
            qh_tensor_set_scale(&c->zero_points, i,
                                (double)qh_rng_range(r, 0, (1 << c->bits) - 1) +
                                    (qh_rng_chance(r, 1, 2) ? 0.5 : 0.0));
    }
    if (qmm_tensor_present(&c->bias))
        fill_llm(r, &c->bias, 2);
    for (int64_t i = 0; qmm_tensor_present(&c->g_idx) && i < k; i++)
        qh_tensor_set_int(&c->g_idx, i, qh_rng_chance(r, 9, 10) ? i / bs
                                                                : qh_rng_range(r, 0, kb - 1));
    if (o && qh_rng_range(r, 0, 999) < o->invalid_per_mille) /* a rule broken on purpose */
        switch (qh_rng_range(r, 0, 3)) {
        case 0: c->bits = 3; break;
        case 1: c->block_size = 48; break;
        case 2: /* present but empty (OpenVINO 32198 read it as absent) */
            d[0] = 0;
            if (!qh_problem_tensor(p, &c->zero_points, QMM_DTYPE_UINT8, 1, d))
                return -1;
            break;
        default: c->k = (int32_t)k + 1; break;
        }
    qh_problem_finish(p);
    return 0;
}

/* DequantizeLinear opset 21..25: x of every modelled integer type (float8 now and then, its
 * zero point 0; a packed int4, uint4, float4e2m1, int2 or uint2 one in four), scales float/float16/bfloat16, per tensor, per axis or blocked (a short last
 * block), output_dtype from opset 23. */
static int random_dql(qh_problem *p, qh_rng *r, const qh_random_opts *o)
{
    (void)o;
    qh_problem_init(p, QMM_OP_DEQUANTIZELINEAR, (int32_t)qh_rng_range(r, 21, 25));
    qmm_dequantizelinear *c = &p->call.u.dequantizelinear;
    static const int32_t xts[9] = {QMM_DTYPE_INT8, QMM_DTYPE_UINT8, QMM_DTYPE_INT16,
                                   QMM_DTYPE_UINT16, QMM_DTYPE_INT32, QMM_DTYPE_FLOAT8E4M3FN,
                                   QMM_DTYPE_FLOAT8E4M3FNUZ, QMM_DTYPE_FLOAT8E5M2,
                                   QMM_DTYPE_FLOAT8E5M2FNUZ};
    int32_t xt = xts[qh_rng_chance(r, 1, 6) ? qh_rng_range(r, 5, 8) : qh_rng_range(r, 0, 4)];
    /* now and then a packed sub-byte x of a type the opset has (docs/semantics.md §9) */
    static const int32_t packed[5] = {QMM_DTYPE_INT4, QMM_DTYPE_UINT4, QMM_DTYPE_FLOAT4E2M1,
                                      QMM_DTYPE_INT2, QMM_DTYPE_UINT2};
    int n_packed = c->opset >= 25 ? 5 : c->opset >= 23 ? 3 : 2;
    if (qh_rng_chance(r, 1, 4))
        xt = packed[qh_rng_range(r, 0, n_packed - 1)];
    int32_t st = pick_t1(r);
    int32_t rank = (int32_t)qh_rng_range(r, 1, 3);
    int64_t xd[3], sd[3];
    for (int32_t i = 0; i < rank; i++)
        xd[i] = qh_rng_range(r, 1, i == rank - 1 ? 70 : 6);
    int form = (int)qh_rng_range(r, 0, 2); /* per tensor, per axis, blocked */
    int32_t axis = (int32_t)qh_rng_range(r, -rank, rank - 1);
    int32_t ax = axis < 0 ? axis + rank : axis;
    int32_t srank = 0;
    if (form == 0) {
        srank = (int32_t)qh_rng_range(r, 0, 1);
        sd[0] = 1;
    } else if (form == 1) {
        srank = 1;
        sd[0] = xd[ax];
    } else {
        c->block_size = (int32_t)(qh_rng_chance(r, 1, 2) ? 16 << qh_rng_range(r, 0, 2)
                                                         : qh_rng_range(r, 1, 9));
        srank = rank;
        memcpy(sd, xd, sizeof sd);
        sd[ax] = (xd[ax] + c->block_size - 1) / c->block_size;
    }
    c->axis = axis;
    if (c->opset >= 23 && qh_rng_chance(r, 1, 3))
        c->output_dtype = pick_t1(r);
    if (!qh_problem_tensor(p, &c->x, xt, rank, xd) ||
        !qh_problem_tensor(p, &c->x_scale, st, srank, sd))
        return -1;
    int zp = qh_rng_chance(r, 1, 2);
    if (zp && !qh_problem_tensor(p, &c->x_zero_point, xt, srank, sd))
        return -1;
    if (qmm_is_float8(xt)) {
        for (int64_t i = 0; i < qmm_tensor_numel(&c->x); i++)
            qh_tensor_set_int(&c->x, i, f8_code(r, xt));
    } else {
        fill_bytes(r, &c->x);
        if (zp && xt != QMM_DTYPE_FLOAT4E2M1) /* float4e2m1's zero point stays 0 */
            fill_bytes(r, &c->x_zero_point);
    }
    fill_llm_scales(r, &c->x_scale);
    qh_problem_finish(p);
    return 0;
}

/* DynamicQuantizeMatMul and MatMulIntegerToFloat: the matmul shapes of pick_shapes (M now and
 * then 1, 2, 127, 128, 129 or 257), B int8 or
 * uint8, b_scale per tensor or per column with or without its zero point, a bias or none;
 * DynamicQuantizeMatMul's float A now and then with a constant, a zero or a non-finite element;
 * MatMulIntegerToFloat's T3 float or float16. */
static int random_i2f(qh_problem *p, qh_rng *r, const qh_random_opts *o, int dynamic)
{
    qh_problem_init(p, dynamic ? QMM_OP_DYNAMICQUANTIZEMATMUL : QMM_OP_MATMUL_INTEGER_TO_FLOAT,
                    1);
    operand_plan a, b;
    a.dtype = dynamic ? QMM_DTYPE_FLOAT : qh_rng_chance(r, 1, 2) ? U8 : S8;
    b.dtype = qh_rng_chance(r, 1, 2) ? U8 : S8;
    pick_shapes(r, o, &a, &b);
    /* now and then a row count where kernels switch paths (an M = 1 kernel on the last row of
     * M = 129), when the product stays small */
    static const int64_t llm_rows[6] = {1, 2, 127, 128, 129, 257};
    int64_t rows = qh_rng_chance(r, 1, 4) ? llm_rows[qh_rng_range(r, 0, 5)] : 0;
    if (rows && a.rank >= 2) {
        int64_t rest = b.rank >= 2 ? b.dims[b.rank - 1] : 1; /* N, then every batch dim */
        for (int32_t i = 0; i + 2 < a.rank; i++)
            rest *= a.dims[i];
        for (int32_t i = 0; i + 2 < b.rank; i++)
            rest *= b.dims[i];
        if (rows * rest <= 4096 && rows * rest * a.dims[a.rank - 1] <= (int64_t)1 << 16)
            a.dims[a.rank - 2] = rows;
    }
    int32_t ft = dynamic || qh_rng_chance(r, 3, 4) ? QMM_DTYPE_FLOAT : QMM_DTYPE_FLOAT16;
    qmm_tensor *ta = qh_problem_input(p, 0), *tb = qh_problem_input(p, 1);
    if (!qh_problem_tensor(p, ta, a.dtype, a.rank, a.dims) ||
        !qh_problem_tensor(p, tb, b.dtype, b.rank, b.dims))
        return -1;
    int64_t nd[1] = {b.rank >= 2 ? b.dims[b.rank - 1] : 1};
    int per_col = qh_rng_chance(r, 1, 2);
    int32_t sr = per_col ? 1 : (int32_t)qh_rng_range(r, 0, 1);
    if (!per_col)
        nd[0] = 1;
    qmm_tensor *bs, *bz, *bias;
    if (dynamic) {
        qmm_dynamicquantizematmul *c = &p->call.u.dynamicquantizematmul;
        bs = &c->b_scale, bz = &c->b_zero_point, bias = &c->bias;
        fill_llm(r, ta, 3);
    } else {
        qmm_matmul_integer_to_float *c = &p->call.u.matmul_integer_to_float;
        bs = &c->b_scale, bz = &c->b_zero_point, bias = &c->bias;
        int64_t one[1] = {1};
        int32_t ar = (int32_t)qh_rng_range(r, 0, 1);
        if (!qh_problem_tensor(p, &c->a_scale, ft, ar, one) ||
            (qh_rng_chance(r, 1, 2) && !qh_problem_tensor(p, &c->a_zero_point, a.dtype, ar, one)))
            return -1;
        fill_llm_scales(r, &c->a_scale);
        if (qmm_tensor_present(&c->a_zero_point))
            fill_bytes(r, &c->a_zero_point);
        fill_values(r, ta, 0);
    }
    fill_values(r, tb, 0);
    if (!qh_problem_tensor(p, bs, ft, sr, nd) ||
        (qh_rng_chance(r, 1, 2) && !qh_problem_tensor(p, bz, b.dtype, sr, nd)))
        return -1;
    fill_llm_scales(r, bs);
    if (qmm_tensor_present(bz))
        fill_bytes(r, bz);
    nd[0] = b.rank >= 2 ? b.dims[b.rank - 1] : 1;
    if (qh_rng_chance(r, 1, 2)) {
        if (!qh_problem_tensor(p, bias, ft, 1, nd))
            return -1;
        fill_llm(r, bias, 2);
    }
    qh_problem_finish(p);
    return 0;
}

/* ---- every operator ------------------------------------------------------------------------- */

int qh_problem_random(qh_problem *p, qh_rng *r, const qh_random_opts *o)
{
    switch (o ? o->float_op : QMM_OP_NONE) {
    case QMM_OP_MATMULNBITS: return random_mnb(p, r, o);
    case QMM_OP_DEQUANTIZELINEAR: return random_dql(p, r, o);
    case QMM_OP_DYNAMICQUANTIZEMATMUL: return random_i2f(p, r, o, 1);
    case QMM_OP_MATMUL_INTEGER_TO_FLOAT: return random_i2f(p, r, o, 0);
    default: break;
    }
    /* which operator: QLinearMatMul most of the time (the most rules), then QOrderedMatMul and
     * MatMulInteger; the choice is a computation (each has its own generator), not a name */
    int64_t u = qh_rng_range(r, 0, 99);
    if (u < 15)
        return random_qom(p, r, o);
    return random_matmul(p, r, o, u >= 30);
}

/* ---- writing ------------------------------------------------------------------------------ */

int qh_problem_write_dir(const char *dir, const qh_problem *p, const qmm_tensor *output,
                         const qh_meta *meta, qh_error *err)
{
    qh_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", dir);
        return -1;
    }
    qh_call_model(&p->call, qmm_call_output_c(&p->call), p->y_shape_known, m);
    snprintf(m->producer_name, sizeof m->producer_name, "qmmcheck");
    const char *leaf = strrchr(dir, '/');
    snprintf(m->graph_name, sizeof m->graph_name, "%s", leaf ? leaf + 1 : dir);
    int rc = qh_call_write_dir(dir, &p->call, m, output, meta, err);
    free(m);
    return rc;
}
