/* optimized/cpu/gemm-f64-6x4-portable.c — the float8 path's exact double GEMM tile, the portable form (SSE2 on baseline x86-64):
 * optimized/cpu/gemm-f64.h. */
#define QMM_F64_NAME qmm_gemm_f64_6x4__portable
#define QMM_F64_VBYTES 16
#include "optimized/cpu/gemm-f64.h"
