/* optimized/cpu/gemm-f64.h — the float8 path's double GEMM tile (optimized/cpu/float8.c), one
 * source for every ISA: included by gemm-f64-6x4-portable.c (16-byte vectors: SSE2 on
 * baseline x86-64, plain code elsewhere), gemm-f64-6x8-avx2.c (-mavx2) and
 * gemm-f64-6x16-avx512.c (-mavx512f), each defining QMM_F64_NAME and QMM_F64_VBYTES first.
 *
 * c[r*ldc + j] += sum_{k < kc} a[k*6 + r] * b[k*NR + j] for r < 6, j < NR = 2 vectors of
 * doubles: 12 vector accumulators, two B loads and six broadcasts per k. Every operand is an
 * integer and the caller bounds kc so that every product and partial sum is an integer below
 * 2^53 (float8.c, "chunks"): then each product and each sum is exact whatever the order, and
 * with or without fused multiply-add (a fused one rounds the exact a*b + c once: exact too).
 * a, b and c are 8·NR-byte aligned, ldc a multiple of NR.
 */
#include <stddef.h>

#include "optimized/cpu/opt_internal.h"

typedef double qmm_f64_vec __attribute__((vector_size(QMM_F64_VBYTES)));

#define QMM_F64_VL (QMM_F64_VBYTES / 8)
#define QMM_F64_NR (2 * QMM_F64_VL)

qmm_opt_f64_gemm_ft QMM_F64_NAME;

void QMM_F64_NAME(size_t kc, const double *a, const double *b, double *c, size_t ldc)
{
    qmm_f64_vec acc[6][2];
    for (int r = 0; r < 6; r++)
        for (int h = 0; h < 2; h++)
            acc[r][h] = *(const qmm_f64_vec *)(c + (size_t)r * ldc + (size_t)h * QMM_F64_VL);
    for (size_t k = 0; k < kc; k++) {
        const qmm_f64_vec b0 = *(const qmm_f64_vec *)(b + k * QMM_F64_NR);
        const qmm_f64_vec b1 = *(const qmm_f64_vec *)(b + k * QMM_F64_NR + QMM_F64_VL);
        const double *ak = a + k * 6;
        for (int r = 0; r < 6; r++) {
            acc[r][0] += b0 * ak[r];
            acc[r][1] += b1 * ak[r];
        }
    }
    for (int r = 0; r < 6; r++)
        for (int h = 0; h < 2; h++)
            *(qmm_f64_vec *)(c + (size_t)r * ldc + (size_t)h * QMM_F64_VL) = acc[r][h];
}
