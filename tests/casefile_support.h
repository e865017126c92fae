/* tests/casefile_support.h — writing the files of a case directory from Criterion tests.
 *
 * Header-only, like cli_support.h, but apart from it: the plugin tests include cli_support.h
 * and build without the harness headers this one needs. */
#ifndef QMM_TESTS_CASEFILE_SUPPORT_H
#define QMM_TESTS_CASEFILE_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/io/case.h"
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

/* Makes DIR/test_data_set_0 and writes DIR/model.onnx: IR 5, default-domain opset 10, one
 * `op_type` node in graph `graph` with the `n_inputs` names in `inputs` and the output
 * `output`. */
static inline void write_case_model(const char *dir, const char *op_type, const char *graph,
                                    const char *const *inputs, int32_t n_inputs,
                                    const char *output)
{
    char path[1024];
    snprintf(path, sizeof path, "mkdir -p '%s/test_data_set_0'", dir);
    cr_assert(system(path) == 0);
    qh_model m;
    memset(&m, 0, sizeof m);
    m.ir_version = 5;
    m.n_opsets = 1;
    m.opsets[0].version = 10;
    snprintf(m.op_type, sizeof m.op_type, "%s", op_type);
    snprintf(m.graph_name, sizeof m.graph_name, "%s", graph);
    m.n_inputs = n_inputs;
    for (int32_t i = 0; i < n_inputs; i++)
        snprintf(m.inputs[i], sizeof m.inputs[i], "%s", inputs[i]);
    m.n_outputs = 1;
    snprintf(m.outputs[0], sizeof m.outputs[0], "%s", output);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    qh_error err;
    cr_assert(qh_write_model_file(path, &m, &err) == 0, "%s", err.msg);
}

/* The cases under `tree` (relative to the source directory, QMM_SOURCE_DIR) into *list, at
 * least one; the caller frees the list. */
static inline void discover_committed(const char *tree, qh_case_list *list)
{
    const char *src = getenv("QMM_SOURCE_DIR");
    cr_assert_not_null(src, "QMM_SOURCE_DIR is not set (run through ctest)");
    char root[1024];
    snprintf(root, sizeof root, "%s/%s", src, tree);
    qh_error err;
    memset(list, 0, sizeof *list);
    cr_assert_eq(qh_discover(root, list, NULL, &err), 0, "%s", err.msg);
    cr_assert_gt(list->count, 0, "no case under %s", root);
}

#endif /* QMM_TESTS_CASEFILE_SUPPORT_H */
