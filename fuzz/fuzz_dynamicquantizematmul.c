/* fuzz/fuzz_dynamicquantizematmul.c — differential fuzz target: DynamicQuantizeMatMul
 * (com.microsoft), the reference against every other implementation (fuzz/differential.h),
 * judged by its accept rule (docs/semantics.md §10); inputs decode as in fuzz/decode.c's row
 * for the pair. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_dynamicquantizematmul", qh_fz_decoder_of(QMM_OP_DYNAMICQUANTIZEMATMUL))
