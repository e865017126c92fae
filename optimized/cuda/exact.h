/* optimized/cuda/exact.h — the exact decision for the QOrderedMatMul elements the device
 * epilogue leaves undecided (epilogue.h, qmm_cu_qord_element), in plain C on the host.
 *
 * Plain C11 with no CUDA header, so the tests can compile it without a toolkit. */
#ifndef QMM_CUDA_EXACT_H
#define QMM_CUDA_EXACT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sat_int8(RNE((sa * sb * acc + sc * cv) / sy + bias)) exactly (docs/semantics.md §4.3), for
 * what the validation admits: sa, sb, sy, sc positive finite float32 values, bias a finite
 * float32 value (0 when absent), all held in doubles; acc the int32 accumulator; cv the C
 * element (0 when absent, then sc is any such scale). */
int8_t qmm_cu_qord_exact(double sa, double sb, double sy, double bias, double sc, int32_t acc,
                         int8_t cv);

#ifdef __cplusplus
}
#endif

#endif /* QMM_CUDA_EXACT_H */
