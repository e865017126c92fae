/* fuzz/fuzz_qorderedmatmul.c — differential fuzz target: QOrderedMatMul (com.microsoft), the
 * reference against every implementation that supports it (fuzz/differential.h); inputs decode
 * as in fuzz/decode.h. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_qorderedmatmul", qh_fz_decoder_of(QMM_OP_QORDEREDMATMUL))
