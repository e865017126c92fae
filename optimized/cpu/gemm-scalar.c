/* optimized/cpu/gemm-scalar.c — the portable 6x16 microkernel on the "pairs" layout. It is
 * the specification the SIMD kernels are tested against, so it is written for clarity; its
 * sums run in uint32 so that wrapping is defined. */
#include "optimized/cpu/opt_internal.h"

enum { MR = 6, NR = 16 };

void qmm_opt_kernel_scalar_6x16(size_t kgroups, const int32_t *a, const int8_t *b, int32_t *c,
                                size_t ldc, int accumulate)
{
    uint32_t acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            acc[r][j] = accumulate ? (uint32_t)c[(size_t)r * ldc + (size_t)j] : 0u;
    for (size_t t = 0; t < kgroups; t++) {
        const int32_t *ag = a + t * MR;
        const int8_t *bg = b + t * NR * 2;
        for (int r = 0; r < MR; r++) {
            uint32_t w = (uint32_t)ag[r];
            int32_t lo = (int32_t)(int16_t)(uint16_t)(w & 0xffffu);
            int32_t hi = (int32_t)(int16_t)(uint16_t)(w >> 16);
            for (int j = 0; j < NR; j++) {
                /* |lo*b0 + hi*b1| <= 2*255*128: exact in int32 */
                int32_t p = lo * bg[2 * j] + hi * bg[2 * j + 1];
                acc[r][j] += (uint32_t)p;
            }
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            c[(size_t)r * ldc + (size_t)j] = (int32_t)acc[r][j];
}
