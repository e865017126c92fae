/* harness/base/array.h — room for one more element in a growable array (items, count, cap),
 * and for more bytes in a growable byte buffer. */
#ifndef QMM_HARNESS_ARRAY_H
#define QMM_HARNESS_ARRAY_H

#include <stdint.h>
#include <stdlib.h>

/* Makes room for element `count` of *items (elements of `size` bytes, *cap allocated): doubles
 * the allocation (64 at first) when full. 0, or -1 when memory runs out (*items unchanged). */
static inline int qh_array_reserve(void *items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    if (ncap > SIZE_MAX / size)
        return -1;
    void *p = realloc(*(void **)items, ncap * size);
    if (!p)
        return -1;
    *(void **)items = p;
    *cap = ncap;
    return 0;
}

/* Makes *data (a byte buffer, *cap bytes allocated) hold at least `need` bytes: doubles the
 * allocation (`first` bytes at first) until it does, or takes `need` itself when doubling
 * would overflow. 0, or -1 when memory runs out (*data unchanged). */
static inline int qh_bytes_reserve(void *data, size_t *cap, size_t need, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : first;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    void *p = realloc(*(void **)data, ncap);
    if (!p)
        return -1;
    *(void **)data = p;
    *cap = ncap;
    return 0;
}

#endif /* QMM_HARNESS_ARRAY_H */
