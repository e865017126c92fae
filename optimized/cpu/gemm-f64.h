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

/* The twelve accumulators are named variables, not an array: GCC 12 at -O2 kept an array of
 * them in memory (a load and a store around every add, 2.5 G MAC/s on the Zen 4 against ~30
 * now). */
#define QMM_F64_LD(r, h) (*(const qmm_f64_vec *)(c + (size_t)(r) * ldc + (h) * QMM_F64_VL))
#define QMM_F64_ST(r, h, v) (*(qmm_f64_vec *)(c + (size_t)(r) * ldc + (h) * QMM_F64_VL) = (v))

void QMM_F64_NAME(size_t kc, const double *a, const double *b, double *c, size_t ldc)
{
    qmm_f64_vec c00 = QMM_F64_LD(0, 0), c01 = QMM_F64_LD(0, 1), c10 = QMM_F64_LD(1, 0),
                c11 = QMM_F64_LD(1, 1), c20 = QMM_F64_LD(2, 0), c21 = QMM_F64_LD(2, 1),
                c30 = QMM_F64_LD(3, 0), c31 = QMM_F64_LD(3, 1), c40 = QMM_F64_LD(4, 0),
                c41 = QMM_F64_LD(4, 1), c50 = QMM_F64_LD(5, 0), c51 = QMM_F64_LD(5, 1);
    for (size_t k = 0; k < kc; k++) {
        const qmm_f64_vec b0 = *(const qmm_f64_vec *)(b + k * QMM_F64_NR);
        const qmm_f64_vec b1 = *(const qmm_f64_vec *)(b + k * QMM_F64_NR + QMM_F64_VL);
        const double *ak = a + k * 6;
        c00 += b0 * ak[0];
        c01 += b1 * ak[0];
        c10 += b0 * ak[1];
        c11 += b1 * ak[1];
        c20 += b0 * ak[2];
        c21 += b1 * ak[2];
        c30 += b0 * ak[3];
        c31 += b1 * ak[3];
        c40 += b0 * ak[4];
        c41 += b1 * ak[4];
        c50 += b0 * ak[5];
        c51 += b1 * ak[5];
    }
    QMM_F64_ST(0, 0, c00);
    QMM_F64_ST(0, 1, c01);
    QMM_F64_ST(1, 0, c10);
    QMM_F64_ST(1, 1, c11);
    QMM_F64_ST(2, 0, c20);
    QMM_F64_ST(2, 1, c21);
    QMM_F64_ST(3, 0, c30);
    QMM_F64_ST(3, 1, c31);
    QMM_F64_ST(4, 0, c40);
    QMM_F64_ST(4, 1, c41);
    QMM_F64_ST(5, 0, c50);
    QMM_F64_ST(5, 1, c51);
}
