/* optimized/cpu/gemm-f64-6x16-avx512.c — the float8 path's exact double GEMM tile, AVX-512F (zmm):
 * optimized/cpu/gemm-f64.h. */
#define QMM_F64_NAME qmm_gemm_f64_6x16__avx512
#define QMM_F64_VBYTES 64
#include "optimized/cpu/gemm-f64.h"
