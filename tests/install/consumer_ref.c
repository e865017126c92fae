/* Uses the installed reference: the Orion documentation example must give [14, 13]. */
#include <stdio.h>

#include <qmm/reference.h>

int main(void)
{
    int8_t a[6] = {3, 4, 5, 2, 4, 3}, b[3] = {4, 8, 4}, y[2] = {0, 0};
    float sa = 2.0f, sb = 0.25f, sy = 6.0f;
    int8_t za = 1, zb = 0, zy = 10;
    qmm_qlinearmatmul c = {
        .a = {QMM_DTYPE_INT8, 2, {2, 3}, a},
        .a_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sa},
        .a_zero_point = {QMM_DTYPE_INT8, 0, {0}, &za},
        .b = {QMM_DTYPE_INT8, 2, {3, 1}, b},
        .b_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sb},
        .b_zero_point = {QMM_DTYPE_INT8, 0, {0}, &zb},
        .y_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sy},
        .y_zero_point = {QMM_DTYPE_INT8, 0, {0}, &zy},
        .y = {QMM_DTYPE_INT8, 2, {2, 1}, y},
        .opset = 21,
    };
    qmm_status st;
    qmm_backend *be = qmm_reference_open(QMM_ABI_VERSION, "", &st);
    if (!be || be->qlinearmatmul(be, &c, &st) != QMM_OK) {
        fprintf(stderr, "reference failed: %s\n", st.message);
        return 1;
    }
    be->close(be);
    printf("%d %d\n", y[0], y[1]);
    return !(y[0] == 14 && y[1] == 13);
}
