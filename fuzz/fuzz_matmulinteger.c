/* fuzz/fuzz_matmulinteger.c — differential fuzz target: MatMulInteger, the reference against
 * every other implementation (fuzz/differential.h); inputs decode as in fuzz/decode.h. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_matmulinteger", qh_fz_decoder_of(QMM_OP_MATMULINTEGER))
