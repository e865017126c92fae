/* reference/qordered.c — QOrderedMatMul (com.microsoft, docs/semantics.md §4,
 * docs/qorderedmatmul.md): the cublasLt memory orders, every input rule, the exact `spec`
 * computation, the `ort-fp32` form and the per-element explanation.
 *
 * Like compute.c the accumulator is an exact int64 and requantization is done on exact GMP
 * rationals; the ort-fp32 form rounds every step to float32 through
 * qmm_round_to_scale_type(), so it depends neither on the FP environment nor on the
 * compiler's float evaluation (this file is compiled with -ffp-contract=off as well).
 */
#include <gmp.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reference/ref_internal.h"

/* ---- layouts ------------------------------------------------------------------------ */

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

int64_t qmm_order_offset(int order, int64_t rows, int64_t cols, int64_t r, int64_t c)
{
    if (rows < 0 || cols < 0 || r < 0 || c < 0 || r >= rows || c >= cols)
        return -1;
    switch (order) {
    case QMM_ORDER_COL: return c * rows + r;
    case QMM_ORDER_ROW: return r * cols + c;
    case QMM_ORDER_COL32: return (c / 32) * 32 * rows + 32 * r + c % 32;
    case QMM_ORDER_COL4_4R2_8C: {
        /* 32-column tiles of 8-row blocks of 256 bytes: even rows in the first 128 bytes,
         * odd rows in the second, each as eight 4x4 groups of (row pair, 4 columns). */
        int64_t ld = 32 * round_up(rows, 8);
        return (c / 32) * ld + (r / 8) * 256 + (r % 2) * 128 + ((c % 32) / 4) * 16 +
               ((r % 8) / 2) * 4 + c % 4;
    }
    case QMM_ORDER_COL32_2R_4R4: {
        /* 32x32 blocks of 1024 bytes; within a block row r' lands in row slot
         * ((r'%8)/2*4 + r'/8)*2 + r'%2, which is a permutation of 0..31. */
        int64_t ld = 32 * round_up(rows, 32);
        int64_t rr = r % 32;
        return (c / 32) * ld + (r / 32) * 1024 + (((rr % 8) / 2 * 4 + rr / 8) * 2 + rr % 2) * 32 +
               c % 32;
    }
    default: return -1;
    }
}

static const char *order_name(int32_t order)
{
    switch (order) {
    case QMM_ORDER_COL: return "COL";
    case QMM_ORDER_ROW: return "ROW";
    case QMM_ORDER_COL32: return "COL32";
    case QMM_ORDER_COL4_4R2_8C: return "COL4_4R2_8C";
    case QMM_ORDER_COL32_2R_4R4: return "COL32_2R_4R4";
    default: return "invalid";
    }
}

/* The tile a clean layout needs: the layout maps a rows x cols matrix one to one onto
 * [0, rows*cols) only when both are multiples of these (the cublasLt formulas pad otherwise,
 * and a tensor holds exactly rows*cols elements). */
static void order_tile(int32_t order, int64_t *row_mult, int64_t *col_mult)
{
    *row_mult = 1;
    *col_mult = 1;
    if (order == QMM_ORDER_COL32) {
        *col_mult = 32;
    } else if (order == QMM_ORDER_COL4_4R2_8C) {
        *row_mult = 8;
        *col_mult = 32;
    } else if (order == QMM_ORDER_COL32_2R_4R4) {
        *row_mult = 32;
        *col_mult = 32;
    }
}

/* ---- validation --------------------------------------------------------------------- */

/* What validation learns about a call. */
typedef struct qom_geom {
    int64_t batch;   /* batch_A: a.dims[0] for a 3-D A, else 1 */
    int64_t m, k, n;
    int64_t b_batch; /* 1 or batch */
    int64_t c_batch; /* 1 or batch; 0 without C */
    int scalar_b;    /* scale_B has one element */
    int32_t y_rank;
    int64_t y_dims[QMM_MAX_RANK];
} qom_geom;

#define TRY(expr)                                                                         \
    do {                                                                                  \
        qmm_status_code try_rc_ = (expr);                                                 \
        if (try_rc_ != QMM_OK)                                                            \
            return try_rc_;                                                               \
    } while (0)

static qmm_status_code check_type(const qmm_tensor *t, const char *name, int32_t dtype,
                                  qmm_status *st)
{
    if (t->dtype == dtype)
        return qmm_ref_check_tensor(t, name, st);
    if (t->dtype == QMM_DTYPE_UNDEFINED)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: missing (dtype undefined)", name);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: dtype %s, QOrderedMatMul needs %s",
                          name, qmm_dtype_name(t->dtype), qmm_dtype_name(dtype));
}

static qmm_status_code check_optional_type(const qmm_tensor *t, const char *name, int32_t dtype,
                                           qmm_status *st)
{
    return qmm_tensor_present(t) ? check_type(t, name, dtype, st) : QMM_OK;
}

static qmm_status_code check_orders(const qmm_qorderedmatmul *c, qmm_status *st)
{
    const int32_t orders[3] = {c->order_a, c->order_b, c->order_y};
    const char *names[3] = {"order_A", "order_B", "order_Y"};
    for (int i = 0; i < 3; i++)
        if (orders[i] < QMM_ORDER_COL || orders[i] > QMM_ORDER_COL32_2R_4R4)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s: %d is not a cublasLt order (COL=0, ROW=1, COL32=2, "
                                  "COL4_4R2_8C=3, COL32_2R_4R4=4)",
                                  names[i], (int)orders[i]);
    int row_combo = c->order_b == QMM_ORDER_COL && c->order_a == QMM_ORDER_ROW &&
                    c->order_y == QMM_ORDER_ROW;
    int col32_combo = (c->order_b == QMM_ORDER_COL4_4R2_8C ||
                       c->order_b == QMM_ORDER_COL32_2R_4R4) &&
                      c->order_a == QMM_ORDER_COL32 && c->order_y == QMM_ORDER_COL32;
    if (!row_combo && !col32_combo)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "order_A=%s, order_B=%s, order_Y=%s: not an allowed combination "
                              "(allowed: A ROW, B COL, Y ROW; or A COL32, B COL4_4R2_8C or "
                              "COL32_2R_4R4, Y COL32)",
                              order_name(c->order_a), order_name(c->order_b),
                              order_name(c->order_y));
    return QMM_OK;
}

/* [] and [1] both mean one element, as everywhere in qmmcheck (docs/semantics.md §2.2). */
static int is_scalar(const qmm_tensor *t)
{
    return t->rank == 0 || (t->rank == 1 && t->dims[0] == 1);
}

static qmm_status_code check_scalar(const qmm_tensor *t, const char *name, qmm_status *st)
{
    if (is_scalar(t))
        return QMM_OK;
    char d[128];
    qmm_ref_format_dims(d, sizeof d, t->rank, t->dims);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: shape %s, must be a scalar ([] or [1])",
                          name, d);
}

/* A matrix stored in `order` must tile cleanly (order_tile). `what` says which of the
 * tensor's dims are the layout's rows and columns, e.g. "B transposed: N x K". */
static qmm_status_code check_tiles(int32_t order, const char *oname, const char *tname,
                                   const char *what, int64_t rows, int64_t cols, qmm_status *st)
{
    int64_t rm, cm;
    order_tile(order, &rm, &cm);
    if (rows % rm == 0 && cols % cm == 0)
        return QMM_OK;
    if (rm > 1 && cm > 1)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "%s: %s=%s needs rows %% %" PRId64 " == 0 and columns %% %" PRId64
                              " == 0 (%s: %" PRId64 " x %" PRId64 ")",
                              tname, oname, order_name(order), rm, cm, what, rows, cols);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                          "%s: %s=%s needs columns %% %" PRId64 " == 0 (%s: %" PRId64
                          " x %" PRId64 ")",
                          tname, oname, order_name(order), cm, what, rows, cols);
}

static qmm_status_code check_data(const qmm_tensor *t, const char *name, qmm_status *st)
{
    if (qmm_tensor_present(t) && qmm_tensor_numel(t) > 0 && t->data == NULL)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: data is NULL", name);
    return QMM_OK;
}

static qmm_status_code check_positive(const qmm_tensor *s, const char *name, qmm_status *st)
{
    int64_t n = qmm_tensor_numel(s);
    for (int64_t i = 0; i < n; i++) {
        double v = qmm_scale_decode(s->dtype, s->data, i);
        if (!(isfinite(v) && v > 0))
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s[%" PRId64 "]: must be finite and > 0 (got %g)", name, i, v);
    }
    return QMM_OK;
}

/* The shape rules that fix y's shape (ranks, K); shared with qmm_qordered_y_shape(). */
static qmm_status_code operand_geometry(const qmm_tensor *a, const qmm_tensor *b, qom_geom *g,
                                        qmm_status *st)
{
    memset(g, 0, sizeof *g);
    TRY(qmm_ref_check_tensor(a, "A", st));
    TRY(qmm_ref_check_tensor(b, "B", st));
    if (a->rank != 2 && a->rank != 3)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "A: rank %d; QOrderedMatMul takes a 2-D [M,K] or 3-D [batch,M,K] A",
                              (int)a->rank);
    if (b->rank != 2 && b->rank != 3)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "B: rank %d; QOrderedMatMul takes a 2-D [K,N] or 3-D [batch,K,N] B",
                              (int)b->rank);
    g->batch = a->rank == 3 ? a->dims[0] : 1;
    g->m = a->dims[a->rank - 2];
    g->k = a->dims[a->rank - 1];
    if (b->dims[b->rank - 2] != g->k)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "B: K mismatch: A has K=%" PRId64 ", B has K=%" PRId64, g->k,
                              b->dims[b->rank - 2]);
    g->n = b->dims[b->rank - 1];
    g->b_batch = b->rank == 3 ? b->dims[0] : 1;
    if (g->b_batch != 1 && g->b_batch != g->batch)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "B: batch %" PRId64 " must be 1 or A's batch (%" PRId64 ")",
                              g->b_batch, g->batch);
    g->y_rank = a->rank;
    memcpy(g->y_dims, a->dims, sizeof g->y_dims);
    g->y_dims[g->y_rank - 1] = g->n;
    return QMM_OK;
}

static qmm_status_code check_c(const qmm_qorderedmatmul *c, qom_geom *g, qmm_status *st)
{
    const qmm_tensor *t = &c->c;
    if (!qmm_tensor_present(t)) {
        if (qmm_tensor_present(&c->scale_c))
            return qmm_status_set(st, QMM_INVALID_ARGUMENT, "scale_C: given without C");
        return QMM_OK;
    }
    if (!qmm_tensor_present(&c->scale_c))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "scale_C: missing (C is given)");
    if (t->rank != 2 && t->rank != 3)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "C: rank %d; C is 2-D [M,N] or 3-D [batch,M,N]", (int)t->rank);
    if (t->dims[t->rank - 2] != g->m || t->dims[t->rank - 1] != g->n)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "C: matrix %" PRId64 " x %" PRId64 " differs from Y's %" PRId64
                              " x %" PRId64,
                              t->dims[t->rank - 2], t->dims[t->rank - 1], g->m, g->n);
    g->c_batch = t->rank == 3 ? t->dims[0] : 1;
    if (g->c_batch != 1 && g->c_batch != g->batch)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "C: batch %" PRId64 " must be 1 or A's batch (%" PRId64 ")",
                              g->c_batch, g->batch);
    return check_scalar(&c->scale_c, "scale_C", st);
}

static qmm_status_code check_y(const qmm_tensor *y, const qom_geom *g, qmm_status *st)
{
    if (y->dtype != QMM_DTYPE_INT8)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "Y: dtype %s differs from the expected int8",
                              qmm_dtype_name(y->dtype));
    int same = y->rank == g->y_rank;
    for (int32_t i = 0; same && i < y->rank; i++)
        same = y->dims[i] == g->y_dims[i];
    if (!same) {
        char got[128], want[128];
        if (y->rank >= 0 && y->rank <= QMM_MAX_RANK)
            qmm_ref_format_dims(got, sizeof got, y->rank, y->dims);
        else
            snprintf(got, sizeof got, "(rank %d)", (int)y->rank);
        qmm_ref_format_dims(want, sizeof want, g->y_rank, g->y_dims);
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "Y: shape %s differs from the expected %s",
                              got, want);
    }
    return check_data(y, "Y", st);
}

static qmm_status_code validate(const qmm_qorderedmatmul *c, qom_geom *g, qmm_status *st)
{
    memset(g, 0, sizeof *g);
    TRY(check_orders(c, st));
    /* Types first: a shape message about a tensor of the wrong type would mislead. */
    TRY(check_type(&c->a, "A", QMM_DTYPE_INT8, st));
    TRY(check_type(&c->scale_a, "scale_A", QMM_DTYPE_FLOAT, st));
    TRY(check_type(&c->b, "B", QMM_DTYPE_INT8, st));
    TRY(check_type(&c->scale_b, "scale_B", QMM_DTYPE_FLOAT, st));
    TRY(check_type(&c->scale_y, "scale_Y", QMM_DTYPE_FLOAT, st));
    TRY(check_optional_type(&c->bias, "bias", QMM_DTYPE_FLOAT, st));
    TRY(check_optional_type(&c->c, "C", QMM_DTYPE_INT8, st));
    TRY(check_optional_type(&c->scale_c, "scale_C", QMM_DTYPE_FLOAT, st));

    TRY(operand_geometry(&c->a, &c->b, g, st));
    TRY(check_tiles(c->order_a, "order_A", "A", "M x K", g->m, g->k, st));
    if (c->order_b == QMM_ORDER_COL)
        TRY(check_tiles(c->order_b, "order_B", "B", "K x N", g->k, g->n, st));
    else
        TRY(check_tiles(c->order_b, "order_B", "B", "transposed, N x K", g->n, g->k, st));
    TRY(check_tiles(c->order_y, "order_Y", "Y", "M x N", g->m, g->n, st));

    TRY(check_scalar(&c->scale_a, "scale_A", st));
    TRY(check_scalar(&c->scale_y, "scale_Y", st));
    g->scalar_b = is_scalar(&c->scale_b);
    if (!g->scalar_b && !(c->scale_b.rank == 1 && c->scale_b.dims[0] == g->n)) {
        char d[128];
        qmm_ref_format_dims(d, sizeof d, c->scale_b.rank, c->scale_b.dims);
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "scale_B: shape %s is neither a scalar nor per-column [%" PRId64 "]",
                              d, g->n);
    }
    if (qmm_tensor_present(&c->bias)) {
        if (c->order_b != QMM_ORDER_COL)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "bias: not allowed with order_B=%s (the COL32 combination has "
                                  "no bias)",
                                  order_name(c->order_b));
        if (c->bias.rank != 1 || c->bias.dims[0] != g->n) {
            char d[128];
            qmm_ref_format_dims(d, sizeof d, c->bias.rank, c->bias.dims);
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "bias: shape %s, must be 1-D [N] = [%" PRId64 "]", d, g->n);
        }
    }
    TRY(check_c(c, g, st));
    TRY(check_y(&c->y, g, st));

    TRY(check_data(&c->a, "A", st));
    TRY(check_data(&c->scale_a, "scale_A", st));
    TRY(check_data(&c->b, "B", st));
    TRY(check_data(&c->scale_b, "scale_B", st));
    TRY(check_data(&c->scale_y, "scale_Y", st));
    TRY(check_data(&c->bias, "bias", st));
    TRY(check_data(&c->c, "C", st));
    TRY(check_data(&c->scale_c, "scale_C", st));
    TRY(check_positive(&c->scale_a, "scale_A", st));
    TRY(check_positive(&c->scale_b, "scale_B", st));
    TRY(check_positive(&c->scale_y, "scale_Y", st));
    if (qmm_tensor_present(&c->scale_c))
        TRY(check_positive(&c->scale_c, "scale_C", st));
    if (qmm_tensor_present(&c->bias))
        for (int64_t j = 0; j < g->n; j++) {
            double v = qmm_scale_decode(QMM_DTYPE_FLOAT, c->bias.data, j);
            if (!isfinite(v))
                return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                      "bias[%" PRId64 "]: must be finite (got %g)", j, v);
        }
    return qmm_status_ok(st);
}

qmm_status_code qmm_qordered_y_shape(const qmm_tensor *a, const qmm_tensor *b, int32_t *rank,
                                     int64_t dims[QMM_MAX_RANK], qmm_status *st)
{
    qom_geom g;
    TRY(operand_geometry(a, b, &g, st));
    *rank = g.y_rank;
    memcpy(dims, g.y_dims, sizeof g.y_dims);
    return qmm_status_ok(st);
}

qmm_status_code qmm_validate_qorderedmatmul(const qmm_qorderedmatmul *c, qmm_status *st)
{
    qom_geom g;
    return validate(c, &g, st);
}

/* ---- element access ----------------------------------------------------------------- */

static int64_t a_offset(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                        int64_t k)
{
    return bi * g->m * g->k + qmm_order_offset(c->order_a, g->m, g->k, i, k);
}

/* B is logically [K,N]. In COL order it is the K x N matrix column-major; in the COL32
 * combination it is transposed first (an N x K matrix) and then laid out. */
static int64_t b_offset(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t k,
                        int64_t j)
{
    int64_t base = (g->b_batch == 1 ? 0 : bi) * g->k * g->n;
    if (c->order_b == QMM_ORDER_COL)
        return base + qmm_order_offset(QMM_ORDER_COL, g->k, g->n, k, j);
    return base + qmm_order_offset(c->order_b, g->n, g->k, j, k);
}

/* Y and C share order_Y (ORT lays C out as order_A, which equals order_Y in both allowed
 * combinations). */
static int64_t y_offset(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                        int64_t j)
{
    return bi * g->m * g->n + qmm_order_offset(c->order_y, g->m, g->n, i, j);
}

static int64_t c_value(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                       int64_t j)
{
    int64_t off = (g->c_batch == 1 ? 0 : bi) * g->m * g->n +
                  qmm_order_offset(c->order_y, g->m, g->n, i, j);
    return qmm_ref_load_q8(&c->c, off);
}

static int64_t exact_acc(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi, int64_t i,
                         int64_t j)
{
    int64_t acc = 0;
    for (int64_t k = 0; k < g->k; k++)
        acc += qmm_ref_load_q8(&c->a, a_offset(c, g, bi, i, k)) *
               qmm_ref_load_q8(&c->b, b_offset(c, g, bi, k, j));
    return acc;
}

static double scale_b_at(const qmm_qorderedmatmul *c, const qom_geom *g, int64_t j)
{
    return qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_b.data, g->scalar_b ? 0 : j);
}

static int fits_int32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

static void store_i8(const qmm_tensor *y, int64_t index, int64_t v)
{
    unsigned char *p = y->data;
    p[index] = (unsigned char)(v & 0xff);
}

/* ---- spec: exact rationals ---------------------------------------------------------- */

typedef struct exact {
    mpq_t value, tmp;
    mpz_t z, q, r;
} exact;

static void exact_init(exact *x)
{
    mpq_inits(x->value, x->tmp, NULL);
    mpz_inits(x->z, x->q, x->r, NULL);
}

static void exact_clear(exact *x)
{
    mpq_clears(x->value, x->tmp, NULL);
    mpz_clears(x->z, x->q, x->r, NULL);
}

/* x->tmp = v for an int64 v, exactly (mpz_set_si takes a long, which may be 32 bits). */
static void tmp_set_i64(exact *x, int64_t v)
{
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    mpz_import(x->z, 1, 1, sizeof mag, 0, 0, &mag);
    if (v < 0)
        mpz_neg(x->z, x->z);
    mpq_set_z(x->tmp, x->z);
}

/* x->value = sA*sB_j*acc/sY + bias_j + sC*C/sY, exactly: every float is the binary fraction
 * it encodes (mpq_set_d is exact). */
static void exact_value(exact *x, const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi,
                        int64_t i, int64_t j, int64_t acc)
{
    double sa = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_a.data, 0);
    double sy = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_y.data, 0);
    tmp_set_i64(x, acc);
    mpq_set(x->value, x->tmp);
    mpq_set_d(x->tmp, sa);
    mpq_mul(x->value, x->value, x->tmp);
    mpq_set_d(x->tmp, scale_b_at(c, g, j));
    mpq_mul(x->value, x->value, x->tmp);
    if (qmm_tensor_present(&c->c)) {
        /* (sA*sB*acc + sC*C) / sY, with one division at the end */
        double sc = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_c.data, 0);
        mpq_t cv;
        mpq_init(cv);
        tmp_set_i64(x, c_value(c, g, bi, i, j));
        mpq_set(cv, x->tmp);
        mpq_set_d(x->tmp, sc);
        mpq_mul(cv, cv, x->tmp);
        mpq_add(x->value, x->value, cv);
        mpq_clear(cv);
    }
    mpq_set_d(x->tmp, sy);
    mpq_div(x->value, x->value, x->tmp);
    if (qmm_tensor_present(&c->bias)) {
        mpq_set_d(x->tmp, qmm_scale_decode(QMM_DTYPE_FLOAT, c->bias.data, j));
        mpq_add(x->value, x->value, x->tmp);
    }
}

/* sat_int8(RNE(x->value)). */
static int64_t exact_round(exact *x)
{
    /* floor division: value = q + r/den with 0 <= r < den */
    mpz_fdiv_qr(x->q, x->r, mpq_numref(x->value), mpq_denref(x->value));
    mpz_mul_2exp(x->r, x->r, 1);
    int cmp = mpz_cmp(x->r, mpq_denref(x->value));
    if (cmp > 0 || (cmp == 0 && mpz_odd_p(x->q)))
        mpz_add_ui(x->q, x->q, 1);
    if (mpz_cmp_si(x->q, -128) < 0)
        return -128;
    if (mpz_cmp_si(x->q, 127) > 0)
        return 127;
    return (int64_t)mpz_get_si(x->q);
}

typedef struct qom_result {
    int64_t acc, expected, wrapped;
} qom_result;

/* Leaves x->value holding the exact value from the exact accumulator. */
static void spec_element(exact *x, const qmm_qorderedmatmul *c, const qom_geom *g, int64_t bi,
                         int64_t i, int64_t j, qom_result *out)
{
    out->acc = exact_acc(c, g, bi, i, j);
    out->wrapped = 0;
    if (!fits_int32(out->acc)) {
        exact_value(x, c, g, bi, i, j, qmm_ref_wrap_int32(out->acc));
        out->wrapped = exact_round(x);
    }
    exact_value(x, c, g, bi, i, j, out->acc);
    out->expected = exact_round(x);
    if (fits_int32(out->acc))
        out->wrapped = out->expected;
}

qmm_status_code qmm_ref_qom_compute(qmm_qorderedmatmul *c, qmm_tensor *yw, int *any_overflow,
                                    qmm_status *st)
{
    if (any_overflow)
        *any_overflow = 0;
    qom_geom g;
    TRY(validate(c, &g, st));
    if (yw) {
        int same = yw->dtype == c->y.dtype && yw->rank == c->y.rank;
        for (int32_t d = 0; same && d < c->y.rank; d++)
            same = yw->dims[d] == c->y.dims[d];
        if (!same)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "y_wrapped: dtype and shape must equal Y's");
        TRY(check_data(yw, "y_wrapped", st));
    }
    exact x;
    exact_init(&x);
    int overflow = 0;
    for (int64_t bi = 0; bi < g.batch; bi++)
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                qom_result r;
                spec_element(&x, c, &g, bi, i, j, &r);
                int64_t idx = y_offset(c, &g, bi, i, j);
                store_i8(&c->y, idx, r.expected);
                if (yw)
                    store_i8(yw, idx, r.wrapped);
                overflow |= !fits_int32(r.acc);
            }
    exact_clear(&x);
    if (any_overflow)
        *any_overflow = overflow;
    return qmm_status_ok(st);
}

/* ---- ort-fp32: ONNX Runtime's cublasLt epilogue in float32 -------------------------- */

static double fl32(double v)
{
    return qmm_round_to_scale_type(QMM_DTYPE_FLOAT, v);
}

/* nearbyintf under the default rounding mode: ties to even. |v| < 2^52 here or v is
 * integral already, so the int64 truncation and the fraction are exact. */
static double rne(double v)
{
    const double two52 = 4503599627370496.0;
    if (!(v > -two52 && v < two52))
        return v;
    int64_t t = (int64_t)v;
    double d = v - (double)t;
    int odd = t % 2 != 0;
    if (d > 0.5 || (d == 0.5 && odd))
        return (double)(t + 1);
    if (d < -0.5 || (d == -0.5 && odd))
        return (double)(t - 1);
    return (double)t;
}

static qmm_status_code compute_ort_fp32(qmm_qorderedmatmul *c, const qom_geom *g,
                                        qmm_status *st)
{
    double sa = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_a.data, 0);
    double sy = qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_y.data, 0);
    /* ORT: a scalar scale_B gives alpha = sA*sB/sY in float; a vector one is scaled
     * element-wise by float(double(sA)/sY) (cublasSscal). Division in double then rounding
     * to float equals the correctly rounded float quotient (53 >= 2*24 + 2). */
    double rescale = fl32(sa / sy);
    double beta = 0;
    if (qmm_tensor_present(&c->c))
        beta = fl32(qmm_scale_decode(QMM_DTYPE_FLOAT, c->scale_c.data, 0) / sy);
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double sb = scale_b_at(c, g, j);
                double alpha = g->scalar_b ? fl32(fl32(sa * sb) / sy) : fl32(sb * rescale);
                int32_t acc = qmm_ref_wrap_int32(exact_acc(c, g, bi, i, j));
                double t = fl32(alpha * fl32((double)acc));
                if (qmm_tensor_present(&c->bias))
                    t = fl32(t + qmm_scale_decode(QMM_DTYPE_FLOAT, c->bias.data, j));
                if (qmm_tensor_present(&c->c))
                    t = fl32(t + fl32(beta * (double)c_value(c, g, bi, i, j)));
                int64_t r;
                if (isnan(t))
                    r = 0; /* a saturating float->int8 conversion (cvt.sat) gives 0 for NaN */
                else if (t <= -128.0)
                    r = -128;
                else if (t >= 127.0)
                    r = 127;
                else
                    r = (int64_t)rne(t);
                store_i8(&c->y, y_offset(c, g, bi, i, j), r);
            }
    return qmm_status_ok(st);
}

qmm_status_code qmm_ref_qom_compute_profile(qmm_qorderedmatmul *c, qmm_profile p,
                                            qmm_status *st)
{
    if (p == QMM_PROFILE_SPEC)
        return qmm_ref_qom_compute(c, NULL, NULL, st);
    qom_geom g;
    TRY(validate(c, &g, st));
    if (p == QMM_PROFILE_ORT_FP32)
        return compute_ort_fp32(c, &g, st);
    return qmm_status_set(st, QMM_UNSUPPORTED, "%s: QOrderedMatMul is defined under spec and "
                          "ort-fp32 only", qmm_profile_name(p) ? qmm_profile_name(p) : "profile");
}

/* ---- explanation -------------------------------------------------------------------- */

/* The (i, j) whose offset in an m x n matrix laid out in `order` is `want`. */
static int locate(int32_t order, int64_t m, int64_t n, int64_t want, int64_t *pi, int64_t *pj)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            if (qmm_order_offset(order, m, n, i, j) == want) {
                *pi = i;
                *pj = j;
                return 1;
            }
    return 0;
}

qmm_status_code qmm_ref_qom_explain(const qmm_qorderedmatmul *c, int64_t index,
                                    qmm_ref_element *e, qmm_status *st)
{
    memset(e, 0, sizeof *e);
    qom_geom g;
    TRY(validate(c, &g, st));
    int64_t count = g.batch * g.m * g.n;
    if (index < 0 || index >= count)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "index: %" PRId64 " is outside Y (%" PRId64 " elements)", index,
                              count);
    /* `index` is a position in Y's buffer, which is laid out in order_Y: find the (i, j) it
     * holds. Validation made the layout a bijection, so the search always succeeds. */
    int64_t bi = index / (g.m * g.n), i = 0, j = 0;
    if (!locate(c->order_y, g.m, g.n, index % (g.m * g.n), &i, &j))
        return qmm_status_set(st, QMM_INTERNAL, "index: %" PRId64 " is no element of Y's layout",
                              index);
    exact x;
    exact_init(&x);
    qom_result r;
    spec_element(&x, c, &g, bi, i, j, &r);
    qmm_ref_decimal(x.value, e->scaled, sizeof e->scaled);
    exact_clear(&x);
    e->acc = r.acc;
    e->expected = r.expected;
    e->wrapped = r.wrapped;
    e->overflow = !fits_int32(r.acc);
    return qmm_status_ok(st);
}
