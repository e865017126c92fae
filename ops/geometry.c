/* ops/geometry.c — numpy.matmul shape rules (docs/semantics.md §1). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ops/qmm_ops.h"

void qmm_format_dims(char *buf, size_t n, int32_t rank, const int64_t *dims)
{
    size_t used = 0;
    if (n == 0)
        return;
    buf[0] = '\0';
    for (int32_t i = -1; i <= rank; i++) {
        char piece[32];
        if (i < 0)
            snprintf(piece, sizeof piece, "[");
        else if (i == rank)
            snprintf(piece, sizeof piece, "]");
        else
            snprintf(piece, sizeof piece, "%s%" PRId64, i ? "," : "", dims[i]);
        size_t len = strlen(piece);
        if (used + len >= n)
            return;
        memcpy(buf + used, piece, len + 1);
        used += len;
    }
}

qmm_status_code qmm_check_tensor(const qmm_tensor *t, const char *name, qmm_status *st)
{
    if (t->rank < 0 || t->rank > QMM_MAX_RANK)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: rank %d is out of range (0..%d)",
                              name, (int)t->rank, QMM_MAX_RANK);
    for (int32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 0)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "%s: dim %d is negative (%" PRId64 ")", name, (int)i,
                                  t->dims[i]);
    if (qmm_tensor_numel(t) < 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: element count overflows int64",
                              name);
    return QMM_OK;
}

qmm_status_code qmm_check_output(const qmm_tensor *y, const char *name, int32_t dtype,
                                 int32_t rank, const int64_t *dims, qmm_status *st)
{
    if (y->dtype != dtype)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: dtype %s differs from the expected %s",
                              name, qmm_dtype_name(y->dtype), qmm_dtype_name(dtype));
    int same = y->rank == rank;
    for (int32_t i = 0; same && i < y->rank; i++)
        same = y->dims[i] == dims[i];
    if (same)
        return QMM_OK;
    char got[128], want[128];
    if (y->rank >= 0 && y->rank <= QMM_MAX_RANK)
        qmm_format_dims(got, sizeof got, y->rank, y->dims);
    else
        snprintf(got, sizeof got, "(rank %d)", (int)y->rank);
    qmm_format_dims(want, sizeof want, rank, dims);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: shape %s differs from the expected %s",
                          name, got, want);
}

/* a*b when it fits int64 (both non-negative), else -1. */
static int64_t mul_or_neg(int64_t a, int64_t b)
{
    if (a < 0 || b < 0)
        return -1;
    if (a != 0 && b > INT64_MAX / a)
        return -1;
    return a * b;
}

qmm_status_code qmm_matmul_geometry(const qmm_tensor *a, const qmm_tensor *b, qmm_geometry *g,
                                    qmm_status *st)
{
    memset(g, 0, sizeof *g);
    if (a->rank == 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "a: rank 0 is invalid");
    if (b->rank == 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "b: rank 0 is invalid");
    if (qmm_check_tensor(a, "a", st) != QMM_OK ||
        qmm_check_tensor(b, "b", st) != QMM_OK)
        return QMM_INVALID_ARGUMENT;

    /* 1-D promotion: a [K] is one row, b [K] is one column. */
    int32_t ra = a->rank, rb = b->rank;
    int64_t ka = a->dims[ra - 1];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
    g->m = ra == 1 ? 1 : a->dims[ra - 2];
    g->n = rb == 1 ? 1 : b->dims[rb - 1];
    if (ka != kb)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "b: K mismatch: a has K=%" PRId64 ", b has K=%" PRId64, ka, kb);
    g->k = ka;

    int32_t bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0;
    int32_t br = bra > brb ? bra : brb;
    g->batch_rank = br;
    g->batch = 1;
    for (int32_t d = 0; d < br; d++) {
        /* right-aligned: batch dim d of the result is dim d-(br-bra) of a's batch dims */
        int32_t ia = d - (br - bra), ib = d - (br - brb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        int64_t dy;
        if (da == db || db == 1)
            dy = da;
        else if (da == 1)
            dy = db;
        else
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "a, b: batch dims do not broadcast (dim %d: %" PRId64
                                  " vs %" PRId64 ")",
                                  (int)d, da, db);
        g->batch_dims[d] = dy;
        g->a_dims[d] = da;
        g->b_dims[d] = db;
        g->batch = mul_or_neg(g->batch, dy);
        if (g->batch < 0)
            return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                  "a, b: broadcast batch element count overflows int64");
    }
    g->a_dims[br] = g->m;
    g->a_dims[br + 1] = g->k;
    g->b_dims[br] = g->k;
    g->b_dims[br + 1] = g->n;

    int32_t yr = br + (ra >= 2) + (rb >= 2);
    if (yr > QMM_MAX_RANK)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y: output rank %d exceeds %d",
                              (int)yr, QMM_MAX_RANK);
    g->y_rank = yr;
    for (int32_t d = 0; d < br; d++)
        g->y_dims[d] = g->batch_dims[d];
    int32_t p = br;
    if (ra >= 2)
        g->y_dims[p++] = g->m;
    if (rb >= 2)
        g->y_dims[p++] = g->n;
    if (mul_or_neg(mul_or_neg(g->batch, g->m), g->n) < 0)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT, "y: element count overflows int64");
    return QMM_OK;
}

/* Offset of matrix `batch_index` in an operand whose padded dims are `dims`: the batch
 * coordinate is taken over the broadcast shape and collapses to 0 where the operand has 1. */
static int64_t operand_offset(const qmm_geometry *g, const int64_t *dims, int64_t batch_index)
{
    int64_t offset = 0, stride = dims[g->batch_rank] * dims[g->batch_rank + 1];
    for (int32_t d = g->batch_rank - 1; d >= 0; d--) {
        int64_t c = batch_index % g->batch_dims[d];
        batch_index /= g->batch_dims[d];
        if (dims[d] != 1)
            offset += c * stride;
        stride *= dims[d];
    }
    return offset;
}

int64_t qmm_geometry_a_offset(const qmm_geometry *g, int64_t batch_index)
{
    return operand_offset(g, g->a_dims, batch_index);
}

int64_t qmm_geometry_b_offset(const qmm_geometry *g, int64_t batch_index)
{
    return operand_offset(g, g->b_dims, batch_index);
}
