/* optimized/qmm_cuda.h — the CUDA backend (built only when CMake finds the CUDA toolkit:
 * QMM_CUDA=AUTO|ON; the harness then has the compile definition QMM_HAVE_CUDA).
 *
 * QLinearMatMul and MatMulInteger run as a cuBLASLt int8 GEMM on tensor cores (int32
 * accumulation) followed by an exact epilogue kernel: bit-exact with the `spec` profile for
 * every uint8/int8 type combination, parameter form and batch broadcast, producing the result of
 * the int32-wrapped accumulator where the exact one overflows (as the CPU backend does).
 * QOrderedMatMul runs through cublasLtMatmul on the cublasLt orders (COL32 with COL4_4R2_8C or
 * COL32_2R_4R4) or the ROW/COL form, with an exact epilogue. See docs/cuda.md.
 *
 * Options (comma-separated key=value, as `--backend cuda:device=1`):
 *   device=N     CUDA device ordinal (default 0)
 *   emulate=1    run the backend's whole pipeline on the host instead of a device: the same
 *                parameter flattening, operand shift, zero-point algebra and epilogue functions,
 *                with a plain loop in place of cuBLASLt. For testing on machines with no GPU;
 *                it needs no device and is slow.
 * When no CUDA device is usable (cudaGetDeviceCount fails or reports 0) the open still
 * succeeds, and every query and operator call answers UNSUPPORTED with the reason
 * "no CUDA device", so suites run with every case SKIPPED.
 *
 * Thread-safety: calls on one backend are serialised internally (one stream, one cuBLASLt
 * handle, one workspace). The CUDA runtime does not survive fork(): open the backend in the
 * process that uses it (qmmcheck's isolated workers open their own instance).
 */
#ifndef QMM_CUDA_H
#define QMM_CUDA_H

#include <stdint.h>

#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

qmm_backend *qmm_cuda_open(uint32_t harness_abi, const char *options, qmm_status *st);

/* Benchmark helper for bench/cublaslt_gemm.c: with the caller's uint8 A [m,k] and int8 B [k,n]
 * (host arrays, copied to the device once; per-tensor parameters, uint8 y), the medians of
 * `reps` timed runs (CUDA events, host transfers excluded), in seconds, of
 *   gemm_s:     a plain cuBLASLt int8 GEMM (int8 x int8 -> int32, the operands already in the
 *               layout it wants): the baseline;
 *   full_s:     this backend's device pipeline: the three stages below in a row;
 *   prepare_s:  its operand preparation alone (shift, padding, B's transposition, row and
 *               column sums);
 *   epilogue_s: its exact epilogue alone (int32 accumulators -> uint8 y).
 * UNSUPPORTED without a device. */
typedef struct qmm_cuda_bench_times {
    double gemm_s, full_s, prepare_s, epilogue_s;
} qmm_cuda_bench_times;

qmm_status_code qmm_cuda_bench_resident(const qmm_backend *be, int64_t m, int64_t k, int64_t n,
                                        const uint8_t *a, const int8_t *b, int reps,
                                        qmm_cuda_bench_times *times, qmm_status *st);

#ifdef __cplusplus
}
#endif

#endif /* QMM_CUDA_H */
