/* ops/validate.c — every input rule of docs/semantics.md §2.5, §2.6 and §3, in one place, so the
 * computation can assume a well-formed call.
 */
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
