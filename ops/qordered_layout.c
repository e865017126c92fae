/* ops/qordered_layout.c — QOrderedMatMul's rules (com.microsoft, docs/semantics.md §4,
 * docs/qorderedmatmul.md): the cublasLt memory orders, Y's shape and every input rule. The
 * exact computation is reference/op-qorderedmatmul.c; the CUDA backend validates here too.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ops/qmm_ops.h"

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

/* The validation plan (ops/qmm_ops.h) under the short name the helpers here use. */
typedef qmm_qordered_plan qom_geom;

/* ---- validation --------------------------------------------------------------------- */

static qmm_status_code check_type(const qmm_tensor *t, const char *name, int32_t dtype,
                                  qmm_status *st)
{
    if (t->dtype == dtype)
        return qmm_check_tensor(t, name, st);
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
    qmm_format_dims(d, sizeof d, t->rank, t->dims);
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

/* The shape rules that fix y's shape (ranks, K); shared with qmm_qordered_y_shape(). */
static qmm_status_code operand_geometry(const qmm_tensor *a, const qmm_tensor *b, qom_geom *g,
                                        qmm_status *st)
{
    memset(g, 0, sizeof *g);
    QMM_TRY(qmm_check_tensor(a, "A", st));
    QMM_TRY(qmm_check_tensor(b, "B", st));
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
    QMM_TRY(qmm_check_output(y, "Y", QMM_DTYPE_INT8, g->y_rank, g->y_dims, st));
    return check_data(y, "Y", st);
}

static qmm_status_code validate(const qmm_qorderedmatmul *c, qom_geom *g, qmm_status *st)
{
    memset(g, 0, sizeof *g);
    QMM_TRY(check_orders(c, st));
    /* Types first: a shape message about a tensor of the wrong type would mislead. */
    QMM_TRY(check_type(&c->a, "A", QMM_DTYPE_INT8, st));
    QMM_TRY(check_type(&c->scale_a, "scale_A", QMM_DTYPE_FLOAT, st));
    QMM_TRY(check_type(&c->b, "B", QMM_DTYPE_INT8, st));
    QMM_TRY(check_type(&c->scale_b, "scale_B", QMM_DTYPE_FLOAT, st));
    QMM_TRY(check_type(&c->scale_y, "scale_Y", QMM_DTYPE_FLOAT, st));
    QMM_TRY(check_optional_type(&c->bias, "bias", QMM_DTYPE_FLOAT, st));
    QMM_TRY(check_optional_type(&c->c, "C", QMM_DTYPE_INT8, st));
    QMM_TRY(check_optional_type(&c->scale_c, "scale_C", QMM_DTYPE_FLOAT, st));

    QMM_TRY(operand_geometry(&c->a, &c->b, g, st));
    QMM_TRY(check_tiles(c->order_a, "order_A", "A", "M x K", g->m, g->k, st));
    if (c->order_b == QMM_ORDER_COL)
        QMM_TRY(check_tiles(c->order_b, "order_B", "B", "K x N", g->k, g->n, st));
    else
        QMM_TRY(check_tiles(c->order_b, "order_B", "B", "transposed, N x K", g->n, g->k, st));
    QMM_TRY(check_tiles(c->order_y, "order_Y", "Y", "M x N", g->m, g->n, st));

    QMM_TRY(check_scalar(&c->scale_a, "scale_A", st));
    QMM_TRY(check_scalar(&c->scale_y, "scale_Y", st));
    g->scalar_b = is_scalar(&c->scale_b);
    if (!g->scalar_b && !(c->scale_b.rank == 1 && c->scale_b.dims[0] == g->n)) {
        char d[128];
        qmm_format_dims(d, sizeof d, c->scale_b.rank, c->scale_b.dims);
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
            qmm_format_dims(d, sizeof d, c->bias.rank, c->bias.dims);
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "bias: shape %s, must be 1-D [N] = [%" PRId64 "]", d, g->n);
        }
    }
    QMM_TRY(check_c(c, g, st));
    QMM_TRY(check_y(&c->y, g, st));

    QMM_TRY(check_data(&c->a, "A", st));
    QMM_TRY(check_data(&c->scale_a, "scale_A", st));
    QMM_TRY(check_data(&c->b, "B", st));
    QMM_TRY(check_data(&c->scale_b, "scale_B", st));
    QMM_TRY(check_data(&c->scale_y, "scale_Y", st));
    QMM_TRY(check_data(&c->bias, "bias", st));
    QMM_TRY(check_data(&c->c, "C", st));
    QMM_TRY(check_data(&c->scale_c, "scale_C", st));
    QMM_TRY(qmm_check_scale_values(&c->scale_a, "scale_A", st));
    QMM_TRY(qmm_check_scale_values(&c->scale_b, "scale_B", st));
    QMM_TRY(qmm_check_scale_values(&c->scale_y, "scale_Y", st));
    if (qmm_tensor_present(&c->scale_c))
        QMM_TRY(qmm_check_scale_values(&c->scale_c, "scale_C", st));
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
    QMM_TRY(operand_geometry(a, b, &g, st));
    *rank = g.y_rank;
    memcpy(dims, g.y_dims, sizeof g.y_dims);
    return qmm_status_ok(st);
}

qmm_status_code qmm_validate_qorderedmatmul(const qmm_qorderedmatmul *c, qmm_qordered_plan *g,
                                            qmm_status *st)
{
    return validate(c, g, st);
}
