/* tests/tensor_support.h — building qmm_tensor values in Criterion tests.
 *
 * Header-only on purpose, like cli_support.h: each test executable is one .c file, and the
 * tests that write tensors by hand share this helper. */
#ifndef QMM_TESTS_TENSOR_SUPPORT_H
#define QMM_TESTS_TENSOR_SUPPORT_H

#include <stdarg.h>
#include <string.h>

#include "qmm/tensor.h"

/* A tensor of `rank` dims given as ints over `data` (borrowed; may be NULL where only the
 * shape matters). */
static inline qmm_tensor mk(int32_t dtype, void *data, int rank, ...)
{
    qmm_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    t.data = data;
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        t.dims[i] = va_arg(ap, int);
    va_end(ap);
    return t;
}

#endif /* QMM_TESTS_TENSOR_SUPPORT_H */
