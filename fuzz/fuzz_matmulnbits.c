/* fuzz/fuzz_matmulnbits.c — differential fuzz target: MatMulNBits (com.microsoft), the
 * reference against every other implementation (fuzz/differential.h), judged by the operator's
 * accept rule (docs/semantics.md §8.4); inputs decode as in fuzz/decode.c's MatMulNBits row. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_matmulnbits", qh_fz_decoder_of(QMM_OP_MATMULNBITS))
