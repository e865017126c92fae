/* ops/params.c — which quantization parameter shapes are allowed (docs/semantics.md §2.2) and
 * where each output element finds its parameter.
 */
#include <string.h>

#include "ops/qmm_ops.h"

/* What an operand (or output) dimension means for the output coordinates. */
enum dim_role { ROLE_BATCH, ROLE_M, ROLE_K, ROLE_N, ROLE_M_OR_N };

typedef struct target_shape {
    int32_t rank;
    int64_t dims[QMM_MAX_RANK];
    enum dim_role role[QMM_MAX_RANK];
    int32_t batch_pos[QMM_MAX_RANK]; /* for ROLE_BATCH: index into the broadcast batch dims */
} target_shape;

/* Describes the shape a parameter must broadcast to. a and b keep their own (unpromoted)
 * shapes, whose batch dims are right-aligned with the broadcast batch shape. */
static void describe_target(qmm_param_role role, const qmm_tensor *operand,
                            const qmm_geometry *g, target_shape *t)
{
    memset(t, 0, sizeof *t);
    if (role == QMM_PARAM_Y) {
        t->rank = g->y_rank;
        for (int32_t p = 0; p < t->rank; p++) {
            t->dims[p] = g->y_dims[p];
            t->role[p] = ROLE_BATCH;
            t->batch_pos[p] = p;
        }
        int32_t extra = g->y_rank - g->batch_rank;
        if (extra == 2) {
            t->role[t->rank - 2] = ROLE_M;
            t->role[t->rank - 1] = ROLE_N;
        } else if (extra == 1) {
            /* One operand was 1-D, so one of M, N is a promoted 1 whose index is always 0;
             * this dim is the other one, and giving it to both i and j is exact. */
            t->role[t->rank - 1] = ROLE_M_OR_N;
        }
        return;
    }
    int32_t r = operand->rank;
    t->rank = r;
    for (int32_t p = 0; p < r; p++) {
        t->dims[p] = operand->dims[p];
        t->role[p] = ROLE_BATCH;
        t->batch_pos[p] = g->batch_rank - (r - 2) + p;
    }
    if (r == 1) {
        t->role[0] = ROLE_K;
    } else if (role == QMM_PARAM_A) {
        t->role[r - 2] = ROLE_M;
        t->role[r - 1] = ROLE_K;
    } else {
        t->role[r - 2] = ROLE_K;
        t->role[r - 1] = ROLE_N;
    }
}

/* Row-major strides of a dense tensor. An empty tensor may have huge other dimensions whose
 * product overflows; its strides are never used (nothing is read), so the product saturates
 * instead of overflowing. A non-empty tensor's product fits: validation bounded its count. */
static void dense_strides(const qmm_tensor *t, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t p = t->rank - 1; p >= 0; p--) {
        strides[p] = s;
        int64_t d = t->dims[p];
        s = d > 0 && s > INT64_MAX / d ? INT64_MAX : s * d;
    }
}

static qmm_status_code shape_error(const qmm_tensor *param, const char *name,
                                   qmm_param_role role, const target_shape *t, qmm_status *st)
{
    char ps[128], ts[128];
    qmm_format_dims(ps, sizeof ps, param->rank, param->dims);
    qmm_format_dims(ts, sizeof ts, t->rank, t->dims);
    const char *what = role == QMM_PARAM_A   ? "per-row for a"
                       : role == QMM_PARAM_B ? "per-column for b"
                                             : "broadcastable to y";
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: shape %s is not per-tensor or %s %s",
                          name, ps, what, ts);
}

qmm_status_code qmm_param_map_build(const qmm_tensor *param, const char *name,
                                    qmm_param_role role, const qmm_tensor *operand,
                                    const qmm_geometry *g, qmm_param_map *map, qmm_status *st)
{
    memset(map, 0, sizeof *map);
    map->batch_rank = g->batch_rank;
    if (qmm_check_tensor(param, name, st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;
    /* y's shape comes from the geometry, so `operand` may be NULL for QMM_PARAM_Y only */
    if (role != QMM_PARAM_Y && (!operand || operand->rank < 1 || operand->rank > QMM_MAX_RANK))
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: its operand has no valid shape",
                              name);
    if (qmm_tensor_numel(param) == 1)
        return QMM_OK; /* per-tensor, whatever its rank */

    int64_t strides[QMM_MAX_RANK];
    dense_strides(param, strides);

    /* The spec's own per-row wording: a 1-D [M] scale for a 2-D a. It is checked before the
     * broadcasting rule so that it wins when M == K. */
    if (role == QMM_PARAM_A && operand->rank == 2 && param->rank == 1 &&
        param->dims[0] == g->m) {
        map->row_stride = 1;
        return QMM_OK;
    }

    target_shape t;
    describe_target(role, operand, g, &t);
    if (param->rank > t.rank)
        return shape_error(param, name, role, &t, st);
    for (int32_t p = 0; p < param->rank; p++) {
        int32_t tp = t.rank - param->rank + p; /* right-aligned, as numpy broadcasts */
        int64_t d = param->dims[p];
        if (d == 1)
            continue;
        /* A parameter never varies along K: that would not be per-row / per-column. */
        if (d != t.dims[tp] || t.role[tp] == ROLE_K)
            return shape_error(param, name, role, &t, st);
        switch (t.role[tp]) {
        case ROLE_BATCH: map->batch_stride[t.batch_pos[tp]] = strides[p]; break;
        case ROLE_M: map->row_stride = strides[p]; break;
        case ROLE_N: map->col_stride = strides[p]; break;
        case ROLE_M_OR_N:
            map->row_stride = strides[p];
            map->col_stride = strides[p];
            break;
        case ROLE_K: break;
        }
    }
    return QMM_OK;
}

int64_t qmm_param_offset(const qmm_param_map *map, const qmm_geometry *g, int64_t batch_index,
                         int64_t i, int64_t j)
{
    int64_t offset = map->row_stride * i + map->col_stride * j;
    for (int32_t d = g->batch_rank - 1; d >= 0; d--) {
        int64_t c = batch_index % g->batch_dims[d];
        batch_index /= g->batch_dims[d];
        offset += map->batch_stride[d] * c;
    }
    return offset;
}
