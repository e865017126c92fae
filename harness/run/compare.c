/* harness/run/compare.c — the comparator. */
#include "harness/run/compare.h"

#include <stdio.h>
#include <string.h>

int64_t qh_tensor_int(const qmm_tensor *t, int64_t i)
{
    const unsigned char *p = (const unsigned char *)t->data;
    switch (t->dtype) {
    case QMM_DTYPE_UINT8: return p[i];
    case QMM_DTYPE_INT8: return (int8_t)p[i];
    case QMM_DTYPE_UINT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case QMM_DTYPE_INT16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case QMM_DTYPE_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case QMM_DTYPE_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
    case QMM_DTYPE_FLOAT8E4M3FN:
    case QMM_DTYPE_FLOAT8E4M3FNUZ:
    case QMM_DTYPE_FLOAT8E5M2:
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return p[i]; /* the code: equal codes, equal outputs */
    default: return 0;
    }
}

static int same_shape(const qmm_tensor *x, const qmm_tensor *y)
{
    if (x->dtype != y->dtype || x->rank != y->rank)
        return 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] != y->dims[i])
            return 0;
    return 1;
}

/* Elements [from, to) one by one. */
static void compare_elements(const qmm_tensor *exact, const qmm_tensor *alt,
                             const qmm_tensor *got, int64_t from, int64_t to, qh_compare *r)
{
    size_t es = qmm_dtype_size(exact->dtype);
    for (int64_t i = from; i < to; i++) {
        const char *e = (const char *)exact->data + (size_t)i * es;
        const char *g = (const char *)got->data + (size_t)i * es;
        if (memcmp(e, g, es) == 0)
            continue;
        if (alt && memcmp((const char *)alt->data + (size_t)i * es, g, es) == 0)
            continue;
        if (r->n_kept < QH_COMPARE_KEEP)
            r->kept[r->n_kept++] = i;
        r->errors++;
    }
}

void qh_compare_outputs(const qmm_tensor *exact, const qmm_tensor *alt, const qmm_tensor *got,
                        qh_compare *r)
{
    memset(r, 0, sizeof *r);
    if (!same_shape(exact, got)) {
        r->shape_differs = 1;
        r->errors = 1;
        return;
    }
    int64_t n = qmm_tensor_numel(exact);
    size_t es = qmm_dtype_size(exact->dtype);
    r->total = n;
    /* A block that matches exactly is passed in one memcmp: a right answer of several GiB
     * costs one pass over memory, not a call per element. */
    const int64_t block = 4096;
    for (int64_t b0 = 0; b0 < n; b0 += block) {
        int64_t b1 = n - b0 < block ? n : b0 + block;
        const char *e = (const char *)exact->data + (size_t)b0 * es;
        const char *g = (const char *)got->data + (size_t)b0 * es;
        if (memcmp(e, g, (size_t)(b1 - b0) * es) != 0)
            compare_elements(exact, alt, got, b0, b1, r);
    }
}

void qh_format_dims(const qmm_tensor *t, char *buf, size_t size)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int32_t i = 0; i < t->rank && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (o < size)
        snprintf(buf + o, size - o, "]");
}
