/* fuzz/decode.h — turning fuzzer bytes into an operator call, and back.
 *
 * Why structural decoding: a mutation that flips one byte should change one property of the
 * problem (a dimension, a type, a scale), not shift every later field. So the bytes that
 * describe the problem (types, shapes, parameter shapes and values, data modes) are consumed
 * from the END of the input, and the bytes of the tensors a and b from the FRONT. Growing or
 * shrinking the data leaves the structure alone, and vice versa. An exhausted tail reads as
 * zeros, which decode to the most ordinary problem (2-D, uint8, per-tensor, scale 2^-20 ...),
 * and an exhausted front is filled by a deterministic generator, so every input decodes.
 *
 * Each operator's tail layout, in the order it is consumed (the first byte is the input's last
 * byte), is written in decode.c above its codec table, and the exact encodings next to the
 * code that reads them; an operator's byte format is its row there, nothing here.
 *
 * qh_fz_encode() writes the bytes that decode to a given call (for turning ONNX vectors into
 * seeds); decode(encode(call)) == call for every call whose ranks and sizes the decoder can
 * reach (operands of rank <= 5, parameters of rank <= 7, within the size budget).
 */
#ifndef QMM_FUZZ_DECODE_H
#define QMM_FUZZ_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/call.h"
#include "qmm/qmm.h"

/* Work bounds: the reference does exact rational arithmetic per output element, so inputs
 * that would take more than a few milliseconds are rejected rather than run slowly. */
#define QH_FZ_MAX_OUTPUT 4096       /* output elements */
#define QH_FZ_MAX_MACS (1L << 18)   /* batch * M * N * K: 64x64x64 fits; also batch * M * N
                                       with empty dims counted as 1 (the reference's loops) */
#define QH_FZ_MAX_OPERAND (1L << 16) /* elements of a, of b, of any parameter */
#define QH_FZ_LLM_MACS (1L << 14)   /* the float-output operators (MatMulNBits, ...): rows * N *
                                       K; their reference computes several exact models */

/* A decoded problem. Every tensor buffer is owned here (freed by qh_fz_case_free). */
typedef struct qh_fz_case {
    qh_owned_call oc;       /* the call (y carries dtype and shape, rank 0 when a, b do not
                             * fit) and the buffers it owns (harness/base/call.h) */
    int64_t opset;          /* ai.onnx opset (com.microsoft for QOrderedMatMul) of the node */
    const char *op_type;    /* the descriptor's op_type (ops/operator.h) */
    char types[16];         /* "u8s8u8" (a, b, y; float8 "e4" "z4" "e5" "z5") or "u8s8" */
    int32_t n_inputs;       /* node inputs, in ONNX order; absent optional ones are UNDEFINED */
    qmm_tensor *inputs[8];  /* point into `oc.call` (qmm_call_input) */
} qh_fz_case;

void qh_fz_case_free(qh_fz_case *c);

/* The bytes that decode to `call` (any operator of the codec table, y ignored; `opset` matters
 * for QLinearMatMul and DequantizeLinear only); *out is malloc'd. -1 when the call is outside
 * what the decoder can produce (for QOrderedMatMul: valid calls, and calls that break only the
 * order, tile or COL32-bias rule; for the four float-output operators: valid calls, and
 * DequantizeLinear's with an axis out of range). */
int qh_fz_encode(const qmm_call *call, int64_t opset, uint8_t **out, size_t *len);

/* The decoder of operator `op`'s byte format (its row in decode.c's codec table), or NULL
 * when the fuzzer has none. A decoder gives 0 and a filled case, or -1 when the problem
 * exceeds the work bounds (the input is uninteresting, not wrong); the case is always safe to
 * free. QOrderedMatMul's (com.microsoft, opset 1) decodes valid problems in both order
 * combinations most of the time, one broken rule when the form byte asks for a twist. A
 * differential target passes qh_fz_decoder_of(QMM_OP_...) to QH_FZ_DIFF_TARGET. */
typedef int (*qh_fz_decoder)(const uint8_t *data, size_t len, qh_fz_case *c);
qh_fz_decoder qh_fz_decoder_of(qmm_op_kind op);

/* 1 when two calls are the same problem: op, opset (as far as the type rule tells opsets
 * apart), attributes, dtypes, shapes and input bytes. */
int qh_fz_same_call(const qmm_call *x, int64_t x_opset, const qmm_call *y, int64_t y_opset);

/* FNV-1a 64 of a byte string: names artifacts and corpus files by content. */
uint64_t qh_fz_hash(const uint8_t *data, size_t len);

#endif /* QMM_FUZZ_DECODE_H */
