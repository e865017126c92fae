/* ops/validate.c — every input rule of docs/semantics.md §2.5, §2.6 and §3, in one place, so the
 * computation can assume a well-formed call.
 */
#include <math.h>
#include <string.h>

#include "ops/qmm_ops.h"

/* [] and [1] both mean "one element" and count as the same shape; nothing else is merged. */
static int same_param_shape(const qmm_tensor *s, const qmm_tensor *z)
{
    int32_t rs = s->rank == 1 && s->dims[0] == 1 ? 0 : s->rank;
    int32_t rz = z->rank == 1 && z->dims[0] == 1 ? 0 : z->rank;
    if (rs != rz)
        return 0;
    for (int32_t i = 0; i < rs; i++)
        if (s->dims[i] != z->dims[i])
            return 0;
    return 1;
}

static qmm_status_code check_same_shape(const qmm_tensor *s, const char *sname,
                                        const qmm_tensor *z, const char *zname, qmm_status *st)
{
    if (same_param_shape(s, z))
        return QMM_OK;
    char a[128], b[128];
    qmm_format_dims(a, sizeof a, s->rank, s->dims);
    qmm_format_dims(b, sizeof b, z->rank, z->dims);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s and %s: shapes differ (%s vs %s)", sname,
                          zname, a, b);
}

/* Operand types: uint8/int8 always, float8 only from opset 21 on (`opset` 0: never). */
static qmm_status_code check_operand_type(const qmm_tensor *t, const char *name, int32_t opset,
                                          qmm_status *st)
{
    if (qmm_is_q8(t->dtype))
        return QMM_OK;
    if (qmm_is_float8(t->dtype)) {
        if (opset >= 21)
            return QMM_OK;
        if (opset > 0)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s: dtype %d (%s) needs opset 21 (this node is opset %d)",
                                  name, (int)t->dtype, qmm_dtype_name(t->dtype), (int)opset);
    }
    if (t->dtype == QMM_DTYPE_UNDEFINED)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: missing (dtype undefined)", name);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: unsupported dtype %d (%s)", name,
                          (int)t->dtype, qmm_dtype_name(t->dtype));
}

static qmm_status_code check_zero_point_type(const qmm_tensor *zp, const char *zname,
                                             const qmm_tensor *op, const char *oname,
                                             qmm_status *st)
{
    if (zp->dtype == op->dtype)
        return QMM_OK;
    if (zp->dtype == QMM_DTYPE_UNDEFINED)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: missing (dtype undefined)", zname);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: dtype %s differs from %s's %s", zname,
                          qmm_dtype_name(zp->dtype), oname, qmm_dtype_name(op->dtype));
}

static qmm_status_code check_scale_type(const qmm_tensor *s, const char *name, int32_t opset,
                                        qmm_status *st)
{
    if (s->dtype == QMM_DTYPE_FLOAT)
        return QMM_OK;
    if (qmm_is_scale_type(s->dtype)) {
        if (opset >= 21)
            return QMM_OK;
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "%s: dtype %s needs opset 21 (opset %d allows float only)", name,
                              qmm_dtype_name(s->dtype), (int)opset);
    }
    if (s->dtype == QMM_DTYPE_UNDEFINED)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: missing (dtype undefined)", name);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: unsupported dtype %d (%s) for a scale",
                          name, (int)s->dtype, qmm_dtype_name(s->dtype));
}

static qmm_status_code check_data(const qmm_tensor *t, const char *name, qmm_status *st)
{
    if (qmm_tensor_numel(t) > 0 && t->data == NULL)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: data is NULL", name);
    return QMM_OK;
}

static qmm_status_code check_output(const qmm_tensor *y, const char *name, int32_t dtype,
                                    const qmm_geometry *g, qmm_status *st)
{
    QMM_TRY(qmm_check_output(y, name, dtype, g->y_rank, g->y_dims, st));
    return check_data(y, name, st);
}

/* Builds a parameter's map, then checks it has its partner's shape. */
static qmm_status_code build_pair(const qmm_tensor *s, const char *sname, const qmm_tensor *z,
                                  const char *zname, qmm_param_role role,
                                  const qmm_tensor *operand, const qmm_geometry *g,
                                  qmm_param_map *smap, qmm_param_map *zmap, qmm_status *st)
{
    if (qmm_param_map_build(s, sname, role, operand, g, smap, st) != QMM_OK ||
        qmm_param_map_build(z, zname, role, operand, g, zmap, st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    return check_same_shape(s, sname, z, zname, st);
}

qmm_status_code qmm_validate_qlinearmatmul(const qmm_qlinearmatmul *c, qmm_plan *plan,
                                           qmm_status *st)
{
    memset(plan, 0, sizeof *plan);
    qmm_geometry *g = &plan->g;
    qmm_param_map *maps = plan->maps;
    int32_t opset = c->opset;
    if (opset < 10)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "opset %d: QLinearMatMul exists from opset 10 on", (int)opset);

    /* Types first: a shape message about a tensor of the wrong type would mislead. */
    QMM_TRY(check_operand_type(&c->a, "a", opset, st));
    QMM_TRY(check_operand_type(&c->b, "b", opset, st));
    QMM_TRY(check_operand_type(&c->y_zero_point, "y_zero_point", opset, st));
    QMM_TRY(check_zero_point_type(&c->a_zero_point, "a_zero_point", &c->a, "a", st));
    QMM_TRY(check_zero_point_type(&c->b_zero_point, "b_zero_point", &c->b, "b", st));
    QMM_TRY(check_scale_type(&c->a_scale, "a_scale", opset, st));
    QMM_TRY(check_scale_type(&c->b_scale, "b_scale", opset, st));
    QMM_TRY(check_scale_type(&c->y_scale, "y_scale", opset, st));
    const qmm_tensor *later_scales[2] = {&c->b_scale, &c->y_scale};
    const char *later_names[2] = {"b_scale", "y_scale"};
    for (int i = 0; i < 2; i++)
        if (later_scales[i]->dtype != c->a_scale.dtype)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s: dtype %s differs from a_scale's %s (all scales share "
                                  "one type)",
                                  later_names[i], qmm_dtype_name(later_scales[i]->dtype),
                                  qmm_dtype_name(c->a_scale.dtype));

    QMM_TRY(qmm_matmul_geometry(&c->a, &c->b, g, st));
    QMM_TRY(build_pair(&c->a_scale, "a_scale", &c->a_zero_point, "a_zero_point", QMM_PARAM_A, &c->a,
                   g, &maps[QMM_MAP_A_SCALE], &maps[QMM_MAP_A_ZERO_POINT], st));
    QMM_TRY(build_pair(&c->b_scale, "b_scale", &c->b_zero_point, "b_zero_point", QMM_PARAM_B, &c->b,
                   g, &maps[QMM_MAP_B_SCALE], &maps[QMM_MAP_B_ZERO_POINT], st));
    QMM_TRY(build_pair(&c->y_scale, "y_scale", &c->y_zero_point, "y_zero_point", QMM_PARAM_Y, &c->y,
                   g, &maps[QMM_MAP_Y_SCALE], &maps[QMM_MAP_Y_ZERO_POINT], st));
    QMM_TRY(check_output(&c->y, "y", c->y_zero_point.dtype, g, st));

    QMM_TRY(check_data(&c->a, "a", st));
    QMM_TRY(check_data(&c->a_scale, "a_scale", st));
    QMM_TRY(check_data(&c->a_zero_point, "a_zero_point", st));
    QMM_TRY(check_data(&c->b, "b", st));
    QMM_TRY(check_data(&c->b_scale, "b_scale", st));
    QMM_TRY(check_data(&c->b_zero_point, "b_zero_point", st));
    QMM_TRY(check_data(&c->y_scale, "y_scale", st));
    QMM_TRY(check_data(&c->y_zero_point, "y_zero_point", st));
    QMM_TRY(qmm_check_scale_values(&c->a_scale, "a_scale", st));
    QMM_TRY(qmm_check_scale_values(&c->b_scale, "b_scale", st));
    QMM_TRY(qmm_check_scale_values(&c->y_scale, "y_scale", st));

    /* Float8 inputs must hold values: NaN and infinities have no exact meaning (§2.6). */
    const qmm_tensor *values[5] = {&c->a, &c->a_zero_point, &c->b, &c->b_zero_point,
                                   &c->y_zero_point};
    const char *value_names[5] = {"a", "a_zero_point", "b", "b_zero_point", "y_zero_point"};
    for (int i = 0; i < 5; i++)
        QMM_TRY(qmm_check_float8_values(values[i], value_names[i], st));
    return qmm_status_ok(st);
}

const char *qmm_qlinearmatmul_float8(const qmm_qlinearmatmul *c)
{
    if (qmm_is_float8(c->a.dtype))
        return "a";
    if (qmm_is_float8(c->b.dtype))
        return "b";
    return qmm_is_float8(c->y_zero_point.dtype) ? "y" : NULL;
}

qmm_status_code qmm_validate_matmulinteger(const qmm_matmulinteger *c, qmm_plan *plan,
                                           qmm_status *st)
{
    memset(plan, 0, sizeof *plan);
    qmm_geometry *g = &plan->g;
    qmm_param_map *maps = plan->maps;
    QMM_TRY(check_operand_type(&c->a, "a", 0, st));
    QMM_TRY(check_operand_type(&c->b, "b", 0, st));
    if (qmm_tensor_present(&c->a_zero_point))
        QMM_TRY(check_zero_point_type(&c->a_zero_point, "a_zero_point", &c->a, "a", st));
    if (qmm_tensor_present(&c->b_zero_point))
        QMM_TRY(check_zero_point_type(&c->b_zero_point, "b_zero_point", &c->b, "b", st));

    QMM_TRY(qmm_matmul_geometry(&c->a, &c->b, g, st));
    maps[QMM_MAP_A_ZERO_POINT].batch_rank = g->batch_rank;
    maps[QMM_MAP_B_ZERO_POINT].batch_rank = g->batch_rank;
    if (qmm_tensor_present(&c->a_zero_point))
        QMM_TRY(qmm_param_map_build(&c->a_zero_point, "a_zero_point", QMM_PARAM_A, &c->a, g,
                                &maps[QMM_MAP_A_ZERO_POINT], st));
    if (qmm_tensor_present(&c->b_zero_point))
        QMM_TRY(qmm_param_map_build(&c->b_zero_point, "b_zero_point", QMM_PARAM_B, &c->b, g,
                                &maps[QMM_MAP_B_ZERO_POINT], st));
    QMM_TRY(check_output(&c->y, "y", QMM_DTYPE_INT32, g, st));

    QMM_TRY(check_data(&c->a, "a", st));
    QMM_TRY(check_data(&c->b, "b", st));
    if (qmm_tensor_present(&c->a_zero_point))
        QMM_TRY(check_data(&c->a_zero_point, "a_zero_point", st));
    if (qmm_tensor_present(&c->b_zero_point))
        QMM_TRY(check_data(&c->b_zero_point, "b_zero_point", st));
    return qmm_status_ok(st);
}

/* ---- the float-output operators (docs/semantics.md §8-§10) -------------------------------- */

static qmm_status_code invalid(qmm_status *st, const char *name, const char *rule, int64_t got)
{
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: %s (got %lld)", name, rule,
                          (long long)got);
}

static qmm_status_code check_shape_is(const qmm_tensor *t, const char *name, int32_t rank,
                                      const int64_t *dims, const char *what, qmm_status *st)
{
    int same = t->rank == rank;
    for (int32_t i = 0; same && i < rank; i++)
        same = t->dims[i] == dims[i];
    if (same)
        return QMM_OK;
    char got[128], want[128];
    qmm_format_dims(got, sizeof got, t->rank, t->dims);
    qmm_format_dims(want, sizeof want, rank, dims);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: shape %s, expected %s (%s)", name, got,
                          want, what);
}

/* [rows, cols] or the same elements flat, [rows * cols]: the two forms ORT accepts. */
static qmm_status_code check_matrix_or_flat(const qmm_tensor *t, const char *name, int64_t rows,
                                            int64_t cols, const char *what, qmm_status *st)
{
    int64_t flat[1] = {rows * cols}, two[2] = {rows, cols};
    if (t->rank == 1)
        return check_shape_is(t, name, 1, flat, what, st);
    return check_shape_is(t, name, 2, two, what, st);
}

static qmm_status_code check_float_type(const qmm_tensor *t, const char *name, int32_t want,
                                        const char *whose, qmm_status *st)
{
    if (t->dtype == want)
        return QMM_OK;
    if (t->dtype == QMM_DTYPE_UNDEFINED)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: missing (dtype undefined)", name);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: dtype %s differs from %s's %s", name,
                          qmm_dtype_name(t->dtype), whose, qmm_dtype_name(want));
}

int64_t qmm_nbits_block(const qmm_tensor *g_idx, const qmm_nbits_plan *p, int64_t k)
{
    if (qmm_tensor_present(g_idx)) {
        const unsigned char *d = (const unsigned char *)g_idx->data + 4 * k;
        uint32_t u = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                     (uint32_t)d[3] << 24;
        return u <= INT32_MAX ? (int64_t)u : (int64_t)u - 4294967296LL;
    }
    return k / p->block_size;
}

int64_t qmm_nbits_code(const qmm_tensor *b, const qmm_nbits_plan *p, int64_t n, int64_t k)
{
    int64_t blk = k / p->block_size, in = k % p->block_size;
    int64_t bit = in * p->bits;
    const unsigned char *row = (const unsigned char *)b->data + (n * p->k_blocks + blk) * p->blob_size;
    return (row[bit / 8] >> (bit % 8)) & ((1 << p->bits) - 1);
}

int64_t qmm_nbits_zero_point(const qmm_tensor *zp, const qmm_nbits_plan *p, int64_t n,
                             int64_t block)
{
    if (p->zp_form != QMM_NBITS_ZP_PACKED)
        return (int64_t)1 << (p->bits - 1);
    int64_t bit = block * p->bits;
    const unsigned char *row = (const unsigned char *)zp->data + n * p->zp_row;
    return (row[bit / 8] >> (bit % 8)) & ((1 << p->bits) - 1);
}

static qmm_status_code nbits_attrs(const qmm_matmulnbits *c, qmm_status *st)
{
    if (c->k < 1)
        return invalid(st, "K", "must be at least 1", c->k);
    if (c->n < 1)
        return invalid(st, "N", "must be at least 1", c->n);
    if (c->bits != 2 && c->bits != 4 && c->bits != 8)
        return invalid(st, "bits", "must be 2, 4 or 8", c->bits);
    if (c->block_size < 16 || (c->block_size & (c->block_size - 1)) != 0)
        return invalid(st, "block_size", "must be a power of 2 and at least 16", c->block_size);
    if (c->accuracy_level < 0 || c->accuracy_level > 4)
        return invalid(st, "accuracy_level", "must be 0 to 4", c->accuracy_level);
    return QMM_OK;
}

qmm_status_code qmm_validate_matmulnbits(const qmm_matmulnbits *c, qmm_nbits_plan *p,
                                         qmm_status *st)
{
    memset(p, 0, sizeof *p);
    QMM_TRY(nbits_attrs(c, st));
    p->k = c->k;
    p->n = c->n;
    p->bits = c->bits;
    p->block_size = c->block_size;
    p->level = c->accuracy_level;
    p->k_blocks = (p->k + c->block_size - 1) / c->block_size;
    p->blob_size = (int64_t)c->block_size * c->bits / 8;
    p->zp_row = (p->k_blocks * c->bits + 7) / 8;
    const qmm_tensor *in[6] = {&c->a, &c->b, &c->scales, &c->zero_points, &c->g_idx, &c->bias};
    const char *names[6] = {"A", "B", "scales", "zero_points", "g_idx", "bias"};
    for (int i = 0; i < 6; i++)
        if (qmm_tensor_present(in[i]) || i == 0 || i == 1 || i == 2)
            QMM_TRY(qmm_check_tensor(in[i], names[i], st));

    if (!qmm_is_scale_type(c->a.dtype))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "A: dtype %s is not a T1 (float, float16 or bfloat16)",
                              qmm_dtype_name(c->a.dtype));
    p->t1 = c->a.dtype;
    if (c->a.rank < 1)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "A: rank 0 is invalid");
    if (c->a.dims[c->a.rank - 1] != p->k)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "A: last dim %lld differs from the attribute K=%lld",
                              (long long)c->a.dims[c->a.rank - 1], (long long)p->k);
    p->rows = 1;
    for (int32_t i = 0; i + 1 < c->a.rank; i++)
        p->rows *= c->a.dims[i];

    if (c->b.dtype != QMM_DTYPE_UINT8)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "B: dtype %s, expected uint8",
                              qmm_dtype_name(c->b.dtype));
    int64_t bdims[3] = {p->n, p->k_blocks, p->blob_size};
    QMM_TRY(check_shape_is(&c->b, "B", 3, bdims, "[N, ceil(K/block_size), block_size*bits/8]",
                           st));
    QMM_TRY(check_float_type(&c->scales, "scales", p->t1, "A", st));
    QMM_TRY(check_matrix_or_flat(&c->scales, "scales", p->n, p->k_blocks,
                                 "[N, ceil(K/block_size)] or flat", st));

    p->zp_form = QMM_NBITS_ZP_DEFAULT;
    if (qmm_tensor_present(&c->zero_points)) {
        if (qmm_tensor_numel(&c->zero_points) == 0)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "zero_points: present but empty (leave the input out for "
                                  "the default zero point)");
        if (c->zero_points.dtype == QMM_DTYPE_UINT8) {
            p->zp_form = QMM_NBITS_ZP_PACKED;
            QMM_TRY(check_matrix_or_flat(&c->zero_points, "zero_points", p->n, p->zp_row,
                                         "uint8 packed: [N, ceil(ceil(K/block_size)*bits/8)] "
                                         "or flat",
                                         st));
        } else if (c->zero_points.dtype == p->t1) {
            p->zp_form = QMM_NBITS_ZP_FLOAT;
            QMM_TRY(check_matrix_or_flat(&c->zero_points, "zero_points", p->n, p->k_blocks,
                                         "A's type, unpacked: [N, ceil(K/block_size)] or flat",
                                         st));
        } else {
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "zero_points: dtype %s, expected uint8 (packed) or A's %s",
                                  qmm_dtype_name(c->zero_points.dtype), qmm_dtype_name(p->t1));
        }
    }
    if (qmm_tensor_present(&c->g_idx)) {
        int64_t gd[1] = {p->k};
        if (c->g_idx.dtype != QMM_DTYPE_INT32)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT, "g_idx: dtype %s, expected int32",
                                  qmm_dtype_name(c->g_idx.dtype));
        QMM_TRY(check_shape_is(&c->g_idx, "g_idx", 1, gd, "[K]", st));
        QMM_TRY(check_data(&c->g_idx, "g_idx", st));
        for (int64_t k = 0; k < p->k; k++) {
            int64_t blk = qmm_nbits_block(&c->g_idx, p, k);
            if (blk < 0 || blk >= p->k_blocks)
                return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                      "g_idx[%lld]: block %lld is outside 0..%lld",
                                      (long long)k, (long long)blk,
                                      (long long)(p->k_blocks - 1));
        }
    }
    if (qmm_tensor_present(&c->bias)) {
        int64_t nd[1] = {p->n};
        QMM_TRY(check_float_type(&c->bias, "bias", p->t1, "A", st));
        QMM_TRY(check_shape_is(&c->bias, "bias", 1, nd, "[N]", st));
    }
    int64_t ydims[QMM_MAX_RANK];
    memcpy(ydims, c->a.dims, sizeof ydims);
    ydims[c->a.rank - 1] = p->n;
    QMM_TRY(qmm_check_output(&c->y, "Y", p->t1, c->a.rank, ydims, st));
    for (int i = 0; i < 6; i++)
        if (qmm_tensor_present(in[i]))
            QMM_TRY(check_data(in[i], names[i], st));
    return check_data(&c->y, "Y", st);
}

/* ---- DequantizeLinear ---- */

/* The opset a T1 of DequantizeLinear is allowed from (21: int4/uint4 with block_size; 23:
 * float4e2m1; 25: int2/uint2), 0 for a type this checker does not model. */
static int32_t dql_x_type_opset(int32_t t)
{
    if (qmm_is_q8(t) || t == QMM_DTYPE_INT16 || t == QMM_DTYPE_UINT16 ||
        t == QMM_DTYPE_INT32 || qmm_is_float8(t) || t == QMM_DTYPE_INT4 ||
        t == QMM_DTYPE_UINT4)
        return 21;
    if (t == QMM_DTYPE_FLOAT4E2M1)
        return 23;
    if (t == QMM_DTYPE_INT2 || t == QMM_DTYPE_UINT2)
        return 25;
    return 0;
}

/* float4e2m1's value: sign, 2 exponent bits (bias 1), 1 mantissa bit; no infinity or NaN. */
static double float4e2m1_decode(unsigned code)
{
    unsigned e = code >> 1 & 3, m = code & 1;
    double v = e ? ldexp(1.0 + 0.5 * m, (int)e - 1) : 0.5 * m;
    return code & 8 ? -v : v;
}

double qmm_dql_x_value(const qmm_tensor *x, int64_t i)
{
    const unsigned char *d = x->data;
    switch (x->dtype) {
    case QMM_DTYPE_UINT4:
    case QMM_DTYPE_UINT2:
    case QMM_DTYPE_INT4:
    case QMM_DTYPE_INT2: return qmm_packed_int(d, x->dtype, i);
    case QMM_DTYPE_FLOAT4E2M1: return float4e2m1_decode(qmm_packed_code(d, x->dtype, i));
    case QMM_DTYPE_UINT8: return d[i];
    case QMM_DTYPE_INT8: return (double)(int8_t)d[i];
    case QMM_DTYPE_UINT16: return (double)(d[2 * i] | d[2 * i + 1] << 8);
    case QMM_DTYPE_INT16: return (double)(int16_t)(uint16_t)(d[2 * i] | d[2 * i + 1] << 8);
    case QMM_DTYPE_INT32: {
        uint32_t u = (uint32_t)d[4 * i] | (uint32_t)d[4 * i + 1] << 8 |
                     (uint32_t)d[4 * i + 2] << 16 | (uint32_t)d[4 * i + 3] << 24;
        return u <= INT32_MAX ? (double)u : (double)u - 4294967296.0;
    }
    default: return qmm_float8_decode(x->dtype, d[i]);
    }
}

int64_t qmm_dql_param_offset(const qmm_dql_plan *p, int64_t index)
{
    if (p->form == QMM_DQL_PER_TENSOR)
        return 0;
    int64_t o = index / (p->axis_len * p->inner), rest = index % (p->axis_len * p->inner);
    int64_t a = rest / p->inner, in = rest % p->inner;
    if (p->form == QMM_DQL_PER_AXIS)
        return a;
    return (o * p->s_axis + a / p->block) * p->inner + in;
}

qmm_status_code qmm_validate_dequantizelinear(const qmm_dequantizelinear *c, qmm_dql_plan *p,
                                              qmm_status *st)
{
    memset(p, 0, sizeof *p);
    if (c->opset < 21)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "opset %d: DequantizeLinear is modelled from opset 21 on "
                              "(blocked quantization)",
                              (int)c->opset);
    QMM_TRY(qmm_check_tensor(&c->x, "x", st));
    QMM_TRY(qmm_check_tensor(&c->x_scale, "x_scale", st));
    int32_t since = dql_x_type_opset(c->x.dtype);
    if (since == 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "x: dtype %d (%s) is not one of DequantizeLinear's T1 this "
                              "checker models (int8, uint8, int16, uint16, int32, float8, "
                              "int4, uint4, float4e2m1, int2, uint2)",
                              (int)c->x.dtype, qmm_dtype_name(c->x.dtype));
    if (c->opset < since)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "x: dtype %s needs opset %d (this node is opset %d)",
                              qmm_dtype_name(c->x.dtype), (int)since, (int)c->opset);
    int e8m0 = c->x_scale.dtype == QMM_DTYPE_FLOAT8E8M0;
    if (!qmm_is_scale_type(c->x_scale.dtype) && !e8m0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "x_scale: dtype %s is not float, float16, bfloat16 or float8e8m0",
                              qmm_dtype_name(c->x_scale.dtype));
    if (e8m0 && c->opset < 24)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "x_scale: dtype float8e8m0 needs opset 24 (this node is opset %d)",
                              (int)c->opset);
    if (e8m0 && c->output_dtype == 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "output_dtype: must be set when x_scale is float8e8m0 (y would be "
                              "float8e8m0, not float, float16 or bfloat16)");
    p->y_dtype = c->x_scale.dtype;
    if (c->output_dtype != 0) {
        if (c->opset < 23)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "output_dtype: needs opset 23 (this node is opset %d)",
                                  (int)c->opset);
        if (!qmm_is_scale_type(c->output_dtype))
            return invalid(st, "output_dtype", "must be float (1), float16 (10) or bfloat16 (16)",
                           c->output_dtype);
        p->y_dtype = c->output_dtype;
    }
    int present_zp = qmm_tensor_present(&c->x_zero_point);
    if (present_zp) {
        QMM_TRY(qmm_check_tensor(&c->x_zero_point, "x_zero_point", st));
        QMM_TRY(check_zero_point_type(&c->x_zero_point, "x_zero_point", &c->x, "x", st));
        QMM_TRY(check_same_shape(&c->x_scale, "x_scale", &c->x_zero_point, "x_zero_point", st));
    }
    int32_t r = c->x.rank;
    p->numel = qmm_tensor_numel(&c->x);
    p->outer = p->inner = 1;
    p->axis_len = 1;
    int64_t sn = qmm_tensor_numel(&c->x_scale);
    if (c->block_size < 0)
        return invalid(st, "block_size", "must be 0 (not blocked) or positive", c->block_size);
    if (c->block_size == 0 && sn == 1 && c->x_scale.rank <= 1) {
        p->form = QMM_DQL_PER_TENSOR;
        p->axis_len = p->numel;
    } else {
        if (r < 1)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "x_scale: not one element, so x needs an axis (x has rank 0)");
        if (c->axis < -r || c->axis >= r)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "axis: %d is outside [-%d, %d] (x has rank %d)", (int)c->axis,
                                  (int)r, (int)(r - 1), (int)r);
        p->axis = c->axis < 0 ? c->axis + r : c->axis;
        for (int32_t i = 0; i < p->axis; i++)
            p->outer *= c->x.dims[i];
        p->axis_len = c->x.dims[p->axis];
        for (int32_t i = p->axis + 1; i < r; i++)
            p->inner *= c->x.dims[i];
        if (c->block_size == 0) {
            p->form = QMM_DQL_PER_AXIS;
            int64_t d[1] = {p->axis_len};
            QMM_TRY(check_shape_is(&c->x_scale, "x_scale", 1, d,
                                   "per axis: 1-D, x's dim at axis", st));
        } else {
            p->form = QMM_DQL_BLOCKED;
            p->block = c->block_size;
            p->s_axis = (p->axis_len + p->block - 1) / p->block;
            int64_t d[QMM_MAX_RANK];
            memcpy(d, c->x.dims, sizeof d);
            d[p->axis] = p->s_axis;
            QMM_TRY(check_shape_is(&c->x_scale, "x_scale", r, d,
                                   "blocked: x's shape with ceil(dim/block_size) at axis", st));
        }
    }
    QMM_TRY(qmm_check_output(&c->y, "y", p->y_dtype, r, c->x.dims, st));
    QMM_TRY(check_data(&c->x, "x", st));
    QMM_TRY(check_data(&c->x_scale, "x_scale", st));
    if (present_zp) {
        QMM_TRY(check_data(&c->x_zero_point, "x_zero_point", st));
        int fx = qmm_is_float8(c->x.dtype) || c->x.dtype == QMM_DTYPE_FLOAT4E2M1;
        for (int64_t i = 0; fx && i < qmm_tensor_numel(&c->x_zero_point); i++)
            if (qmm_dql_x_value(&c->x_zero_point, i) != 0.0)
                return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                      "x_zero_point[%lld]: must be 0 for a %s x", (long long)i,
                                      qmm_dtype_name(c->x.dtype));
    }
    return check_data(&c->y, "y", st);
}

/* ---- DynamicQuantizeMatMul and MatMulIntegerToFloat ---- */

/* b_scale per tensor (one element) or per column ([N]); b_zero_point, when present, of b's type
 * and b_scale's shape; bias [N] of `ft`. */
static qmm_status_code i2f_params(const qmm_tensor *b, const qmm_tensor *bs,
                                  const qmm_tensor *bz, const qmm_tensor *bias, int32_t ft,
                                  qmm_i2f_plan *p, qmm_status *st)
{
    int64_t n = p->g.n;
    QMM_TRY(check_float_type(bs, "b_scale", ft, "the scales", st));
    int64_t nd[1] = {n};
    if (qmm_tensor_numel(bs) == 1 && bs->rank <= 1)
        p->b_per_column = 0;
    else {
        QMM_TRY(check_shape_is(bs, "b_scale", 1, nd, "per tensor [] or [1], or per column [N]",
                               st));
        p->b_per_column = 1;
    }
    if (qmm_tensor_present(bz)) {
        QMM_TRY(check_zero_point_type(bz, "b_zero_point", b, "B", st));
        QMM_TRY(check_same_shape(bs, "b_scale", bz, "b_zero_point", st));
        QMM_TRY(check_data(bz, "b_zero_point", st));
    }
    if (qmm_tensor_present(bias)) {
        QMM_TRY(check_float_type(bias, "bias", ft, "the output", st));
        QMM_TRY(check_shape_is(bias, "bias", 1, nd, "[N]", st));
        QMM_TRY(check_data(bias, "bias", st));
    }
    return check_data(bs, "b_scale", st);
}

qmm_status_code qmm_validate_dynamicquantizematmul(const qmm_dynamicquantizematmul *c,
                                                   qmm_i2f_plan *p, qmm_status *st)
{
    memset(p, 0, sizeof *p);
    if (c->a.dtype != QMM_DTYPE_FLOAT)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "A: dtype %s, expected float",
                              qmm_dtype_name(c->a.dtype));
    QMM_TRY(check_operand_type(&c->b, "B", 0, st));
    QMM_TRY(qmm_matmul_geometry(&c->a, &c->b, &p->g, st));
    QMM_TRY(i2f_params(&c->b, &c->b_scale, &c->b_zero_point, &c->bias, QMM_DTYPE_FLOAT, p, st));
    QMM_TRY(check_output(&c->y, "Y", QMM_DTYPE_FLOAT, &p->g, st));
    QMM_TRY(check_data(&c->a, "A", st));
    return check_data(&c->b, "B", st);
}

qmm_status_code qmm_validate_matmul_integer_to_float(const qmm_matmul_integer_to_float *c,
                                                     qmm_i2f_plan *p, qmm_status *st)
{
    memset(p, 0, sizeof *p);
    QMM_TRY(check_operand_type(&c->a, "A", 0, st));
    QMM_TRY(check_operand_type(&c->b, "B", 0, st));
    int32_t ft = c->a_scale.dtype;
    if (ft != QMM_DTYPE_FLOAT && ft != QMM_DTYPE_FLOAT16)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "a_scale: dtype %s is not a T3 (float or float16)",
                              qmm_dtype_name(ft));
    QMM_TRY(qmm_matmul_geometry(&c->a, &c->b, &p->g, st));
    if (!(qmm_tensor_numel(&c->a_scale) == 1 && c->a_scale.rank <= 1))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "a_scale: must be one element ([] or [1]): A is quantized per "
                              "tensor");
    if (qmm_tensor_present(&c->a_zero_point)) {
        QMM_TRY(check_zero_point_type(&c->a_zero_point, "a_zero_point", &c->a, "A", st));
        QMM_TRY(check_same_shape(&c->a_scale, "a_scale", &c->a_zero_point, "a_zero_point", st));
        QMM_TRY(check_data(&c->a_zero_point, "a_zero_point", st));
    }
    QMM_TRY(i2f_params(&c->b, &c->b_scale, &c->b_zero_point, &c->bias, ft, p, st));
    QMM_TRY(check_output(&c->y, "Y", ft, &p->g, st));
    QMM_TRY(check_data(&c->a_scale, "a_scale", st));
    QMM_TRY(check_data(&c->a, "A", st));
    return check_data(&c->b, "B", st);
}
