/* fuzz/fuzz_qlinearmatmul.c — differential fuzz target: QLinearMatMul, the reference against
 * every other implementation (fuzz/differential.h); inputs decode as in fuzz/decode.h. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_qlinearmatmul", qh_fz_decoder_of(QMM_OP_QLINEARMATMUL))
