/* tests/report/stripe_case.c DIR — writes a MatMulInteger case whose right answer is 0
 * everywhere but one column: A (4 x 2 uint8) all ones, B (2 x 6 uint8) zero but column 2
 * (3, 4), so y (4 x 6 int32) is 7 in column 2 and 0 elsewhere. A backend that answers zeros
 * (tests/plugins/fake_backend.c, mode=zeros) gets exactly column 2 wrong: the HTML report's
 * picture must show it as one red column (tests/report/html.sh). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/io/onnx_io.h"

static int put(const char *dir, const char *file, int32_t dtype, int64_t rows, int64_t cols,
               const void *data, const char *name)
{
    qmm_tensor t = {.dtype = dtype, .rank = 2, .dims = {rows, cols}, .data = (void *)data};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    qh_error err;
    if (qh_write_tensor_file(path, &t, name, &err) != 0) {
        fprintf(stderr, "stripe_case: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stripe_case DIR\n");
        return 2;
    }
    char set[4096];
    snprintf(set, sizeof set, "%s/test_data_set_0", argv[1]);
    mkdir(argv[1], 0755);
    if (mkdir(set, 0755) != 0) {
        perror(set);
        return 1;
    }
    qh_model m;
    memset(&m, 0, sizeof m);
    m.ir_version = 5;
    m.n_opsets = 1;
    m.opsets[0].version = 10;
    snprintf(m.op_type, sizeof m.op_type, "MatMulInteger");
    snprintf(m.graph_name, sizeof m.graph_name, "stripe");
    m.n_inputs = 2;
    snprintf(m.inputs[0], sizeof m.inputs[0], "A");
    snprintf(m.inputs[1], sizeof m.inputs[1], "B");
    m.n_outputs = 1;
    snprintf(m.outputs[0], sizeof m.outputs[0], "Y");
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", argv[1]);
    qh_error err;
    if (qh_write_model_file(path, &m, &err) != 0) {
        fprintf(stderr, "stripe_case: %s\n", err.msg);
        return 1;
    }
    unsigned char a[4 * 2], b[2 * 6] = {0};
    int32_t y[4 * 6] = {0};
    memset(a, 1, sizeof a);
    b[0 * 6 + 2] = 3;
    b[1 * 6 + 2] = 4;
    for (int i = 0; i < 4; i++)
        y[i * 6 + 2] = 7;
    if (put(set, "input_0.pb", QMM_DTYPE_UINT8, 4, 2, a, "A") != 0 ||
        put(set, "input_1.pb", QMM_DTYPE_UINT8, 2, 6, b, "B") != 0 ||
        put(set, "output_0.pb", QMM_DTYPE_INT32, 4, 6, y, "Y") != 0)
        return 1;
    return 0;
}
