/* harness/judge/compare.c — the comparator. */
#include "harness/judge/compare.h"

#include <stdio.h>
#include <string.h>

static int same_shape(const qmm_tensor *x, const qmm_tensor *y)
{
    if (x->dtype != y->dtype || x->rank != y->rank)
        return 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] != y->dims[i])
            return 0;
    return 1;
}

/* Elements [from, to) of got one by one, against the part buffers that start at element
 * `first`. */
static void compare_elements(const unsigned char *exact, const unsigned char *alt,
                             const qmm_tensor *got, int64_t first, int64_t from, int64_t to,
                             qh_compare *r)
{
    size_t es = qmm_dtype_size(got->dtype);
    qmm_tensor part = {.dtype = got->dtype, .data = (void *)exact};
    for (int64_t i = from; i < to; i++) {
        const unsigned char *e = exact + (size_t)(i - first) * es;
        const char *g = (const char *)got->data + (size_t)i * es;
        if (memcmp(e, g, es) == 0)
            continue;
        if (alt && memcmp(alt + (size_t)(i - first) * es, g, es) == 0)
            continue;
        if (r->n_kept < QH_COMPARE_KEEP) {
            r->expected[r->n_kept] = qh_tensor_int(&part, i - first);
            r->kept[r->n_kept++] = i;
        }
        r->errors++;
    }
}

void qh_compare_start(const qmm_tensor *exact, const qmm_tensor *got, qh_compare *r)
{
    memset(r, 0, sizeof *r);
    if (!same_shape(exact, got)) {
        r->shape_differs = 1;
        r->errors = 1;
        return;
    }
    r->total = qmm_tensor_numel(exact);
}

void qh_compare_part(const void *exact, const void *alt, const qmm_tensor *got, int64_t first,
                     int64_t count, qh_compare *r)
{
    if (r->shape_differs)
        return;
    size_t es = qmm_dtype_size(got->dtype);
    const unsigned char *ex = exact, *al = alt;
    /* A block that matches exactly is passed in one memcmp: a right answer of several GiB
     * costs one pass over memory, not a call per element. */
    const int64_t block = 4096;
    for (int64_t b0 = first, end = first + count; b0 < end; b0 += block) {
        int64_t b1 = end - b0 < block ? end : b0 + block;
        const unsigned char *e = ex + (size_t)(b0 - first) * es;
        const char *g = (const char *)got->data + (size_t)b0 * es;
        if (memcmp(e, g, (size_t)(b1 - b0) * es) != 0)
            compare_elements(ex, al, got, first, b0, b1, r);
    }
}

void qh_compare_outputs(const qmm_tensor *exact, const qmm_tensor *alt, const qmm_tensor *got,
                        qh_compare *r)
{
    qh_compare_start(exact, got, r);
    qh_compare_part(exact->data, alt ? alt->data : NULL, got, 0, r->total, r);
}

