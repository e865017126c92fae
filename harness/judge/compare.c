/* harness/judge/compare.c — the comparator. */
#include "harness/judge/compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        if (r->marks)
            qh_marks_set(r->marks, i);
    }
}

void qh_compare_start(const qmm_tensor *exact, const qmm_tensor *got, qh_compare *r)
{
    memset(r, 0, sizeof *r);
    if (!qh_tensor_same_shape(exact, got)) {
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


/* ---- where the mismatches lie ---------------------------------------------------------- */

static int32_t grid_side(int64_t n, int64_t cap, int64_t *step)
{
    *step = n <= cap ? 1 : (n + cap - 1) / cap;
    return (int32_t)(n <= 0 ? 0 : (n + *step - 1) / *step);
}

int qh_marks_init(qh_marks *m, const qmm_tensor *y)
{
    memset(m, 0, sizeof *m);
    m->cols = y->rank >= 1 ? y->dims[y->rank - 1] : 1;
    m->rows = y->rank >= 2 ? y->dims[y->rank - 2] : 1;
    m->batches = 1;
    for (int32_t d = 0; d + 2 < y->rank; d++)
        m->batches *= y->dims[d];
    m->grid_r = grid_side(m->rows, QH_MARKS_SIDE, &m->step_r);
    m->grid_c = grid_side(m->cols, QH_MARKS_SIDE, &m->step_c);
    m->grid_b = (int32_t)(m->batches < QH_MARKS_BATCHES ? m->batches : QH_MARKS_BATCHES);
    size_t cells = (size_t)m->grid_b * (size_t)m->grid_r * (size_t)m->grid_c;
    m->bits = calloc(cells / 8 + 1, 1);
    return m->bits ? 0 : -1;
}

void qh_marks_set(qh_marks *m, int64_t index)
{
    if (!m->bits || m->rows <= 0 || m->cols <= 0)
        return;
    int64_t c = index % m->cols, rest = index / m->cols;
    int64_t r = rest % m->rows, b = rest / m->rows;
    if (b >= m->grid_b) {
        m->outside++;
        return;
    }
    size_t cell = ((size_t)b * (size_t)m->grid_r + (size_t)(r / m->step_r)) * (size_t)m->grid_c +
                  (size_t)(c / m->step_c);
    m->bits[cell / 8] |= (unsigned char)(1u << (cell % 8));
}

int qh_marks_get(const qh_marks *m, int32_t b, int32_t r, int32_t c)
{
    size_t cell = ((size_t)b * (size_t)m->grid_r + (size_t)r) * (size_t)m->grid_c + (size_t)c;
    return m->bits && (m->bits[cell / 8] >> (cell % 8) & 1);
}

void qh_marks_free(qh_marks *m)
{
    free(m->bits);
    memset(m, 0, sizeof *m);
}
