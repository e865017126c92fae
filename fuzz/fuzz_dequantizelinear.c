/* fuzz/fuzz_dequantizelinear.c — differential fuzz target: DequantizeLinear (opset 21 to 25:
 * per tensor, per axis, blocked), the reference against every other implementation
 * (fuzz/differential.h), judged exactly (docs/semantics.md §9); inputs decode as in
 * fuzz/decode.c's DequantizeLinear row. */
#include "fuzz/differential.h"

QH_FZ_DIFF_TARGET("fuzz_dequantizelinear", qh_fz_decoder_of(QMM_OP_DEQUANTIZELINEAR))
