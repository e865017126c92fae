/* fuzz/fuzz_matmul_integer_to_float.c — differential fuzz target: MatMulIntegerToFloat
 * (com.microsoft), the reference against every other implementation (fuzz/differential.h),
 * judged by its accept rule (docs/semantics.md §10); inputs decode as in fuzz/decode.c's row
 * for the pair. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_matmul_integer_to_float",
                  qh_fz_decoder_of(QMM_OP_MATMUL_INTEGER_TO_FLOAT))
