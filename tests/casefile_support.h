/* tests/casefile_support.h — writing the files of a case directory from Criterion tests.
 *
 * Header-only, like cli_support.h, but apart from it: the plugin tests include cli_support.h
 * and build without the harness headers this one needs. */
#ifndef QMM_TESTS_CASEFILE_SUPPORT_H
#define QMM_TESTS_CASEFILE_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "harness/io/onnx_io.h"

/* Writes a tensor as DIR/FILE, a TensorProto named `name`, for case directories built by a
 * test. */
static inline void write_tensor(const char *dir, const char *file, int32_t dtype, int32_t rank,
                                const int64_t *dims, const void *data, const char *name)
{
    qmm_tensor t = {.dtype = dtype, .rank = rank, .data = (void *)data};
    for (int32_t i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    qh_error err;
    cr_assert(qh_write_tensor_file(path, &t, name, &err) == 0, "%s", err.msg);
}

#endif /* QMM_TESTS_CASEFILE_SUPPORT_H */
