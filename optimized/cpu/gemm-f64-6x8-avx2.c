/* optimized/cpu/gemm-f64-6x8-avx2.c — the float8 path's exact double GEMM tile, AVX2 (ymm; no
 * -mfma: a CPU with AVX2 need not have FMA):
 * optimized/cpu/gemm-f64.h. */
#define QMM_F64_NAME qmm_gemm_f64_6x8__avx2
#define QMM_F64_VBYTES 32
#include "optimized/cpu/gemm-f64.h"
