/* optimized/cuda/layout_check.c — checks the element-offset formulas of docs/semantics.md §4.2 for
 * the five cublasLt orders against what cublasLtMatrixTransform actually does on this device.
 *
 * For each order and shape (R, C <= 127, clean tiles for the tiled orders), a ROW-order matrix
 * holding r (pass 1) or c (pass 2) in element (r, c) is transformed into the order; the
 * formula must put r and c at offset(r, c) for every element, which pins down every offset.
 * Exit 0: all formulas hold; 1: a mismatch (printed); 77: no CUDA device (skipped). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "optimized/cuda/epilogue.h"
#include "optimized/cuda/lt.h"

static const char *const order_names[] = {"COL", "ROW", "COL32", "COL4_4R2_8C",
                                          "COL32_2R_4R4"};

static size_t order_bytes(int order, int64_t rows, int64_t cols)
{
    if (order <= 1)
        return (size_t)(rows * cols);
    return (size_t)(qmm_lt_order_ld(order, rows, cols) * ((cols + 31) / 32));
}

/* Transforms host ROW matrix `src` into `order`; dst receives order_bytes bytes. */
static int transform(cublasLtHandle_t lt, int order, int64_t rows, int64_t cols,
                     const int8_t *src, int8_t *dst)
{
    size_t nsrc = (size_t)(rows * cols), ndst = order_bytes(order, rows, cols);
    int8_t *ds = NULL, *dd = NULL;
    const qmm_lt_matrix from = {CUDA_R_8I, rows, cols, cols, QMM_ORDER_ROW, "ROW layout"};
    const qmm_lt_matrix to = {CUDA_R_8I, rows, cols, qmm_lt_order_ld(order, rows, cols), order,
                              "ordered layout"};
    const char *what;
    int ok = cudaMalloc((void **)&ds, nsrc) == cudaSuccess &&
             cudaMalloc((void **)&dd, ndst) == cudaSuccess &&
             cudaMemset(dd, 0x7f, ndst) == cudaSuccess &&
             cudaMemcpy(ds, src, nsrc, cudaMemcpyHostToDevice) == cudaSuccess &&
             qmm_lt_transform(lt, 0, ds, &from, dd, &to, "transform", &what) ==
                 CUBLAS_STATUS_SUCCESS &&
             cudaMemcpy(dst, dd, ndst, cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(ds);
    cudaFree(dd);
    return ok ? 0 : -1;
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("layout_check: no CUDA device: skipped\n");
        return 77;
    }
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
        printf("layout_check: cannot create a cuBLASLt handle\n");
        return 1;
    }
    static const int64_t shapes[][2] = {{8, 32}, {24, 64}, {32, 32}, {64, 96}, {96, 96}, {5, 7}};
    int failures = 0;
    for (int order = 0; order < 5; order++) {
        int checked = 0, bad = 0;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int64_t R = shapes[s][0], C = shapes[s][1];
            if (order >= 2 && C % 32 != 0)
                continue;
            if ((order == 3 && R % 8 != 0) || (order == 4 && R % 32 != 0))
                continue;
            size_t n = (size_t)(R * C), nd = order_bytes(order, R, C);
            int8_t *src = malloc(n), *dst = malloc(nd);
            if (!src || !dst)
                return 1;
            for (int pass = 0; pass < 2; pass++) {
                for (int64_t r = 0; r < R; r++)
                    for (int64_t c = 0; c < C; c++)
                        src[r * C + c] = (int8_t)(pass == 0 ? r : c);
                if (transform(lt, order, R, C, src, dst) != 0) {
                    printf("layout_check: %s %lldx%lld: cublasLtMatrixTransform failed\n",
                           order_names[order], (long long)R, (long long)C);
                    bad++;
                    break;
                }
                for (int64_t r = 0; r < R; r++)
                    for (int64_t c = 0; c < C; c++) {
                        int64_t o = qmm_cu_order_offset(order, r, c, R, C);
                        int want = (int)(pass == 0 ? r : c);
                        if (o < 0 || (size_t)o >= nd || dst[o] != want) {
                            if (bad < 5)
                                printf("layout_check: %s %lldx%lld: element (%lld, %lld): "
                                       "formula offset %lld holds %d, expected %d\n",
                                       order_names[order], (long long)R, (long long)C,
                                       (long long)r, (long long)c, (long long)o,
                                       o >= 0 && (size_t)o < nd ? dst[o] : -1, want);
                            bad++;
                        }
                    }
            }
            checked++;
            free(src);
            free(dst);
        }
        printf("layout_check: %-13s %s (%d shapes)\n", order_names[order],
               bad ? "MISMATCH" : "matches cublasLtMatrixTransform", checked);
        failures += bad != 0;
    }
    cublasLtDestroy(lt);
    return failures ? 1 : 0;
}
