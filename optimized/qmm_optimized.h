/* optimized/qmm_optimized.h — the optimized CPU backend: open, and the prepack API.
 *
 * The backend computes QLinearMatMul and MatMulInteger bit-exactly under the `spec` profile
 * (docs/semantics.md §6): every uint8/int8 type combination, every parameter form, batch
 * broadcasting. Accumulation is int32 and wraps modulo 2^32 (for K >= 33026 an element's exact sum
 * may not fit; the spec accepts the result computed from the wrapped sum, and this backend always
 * produces exactly that one). The wrapped sum is then requantized exactly.
 *
 * Options (comma-separated key=value, as `--backend optimized:isa=avx2,threads=2`):
 *   isa=NAME|auto  microkernel family, one of qmm_optimized_isa_variant's names (default auto:
 *                  the best this CPU has; the environment variable QMM_ISA, when set,
 *                  replaces auto); an unknown name's error message lists them all
 *   threads=N      worker threads, 1..256 (default: online CPUs)
 * Asking for an ISA the CPU lacks is not an error: the open succeeds and every query answers
 * UNSUPPORTED with the reason, so no illegal instruction is ever executed.
 *
 * Output is bitwise identical for every thread count and every ISA.
 */
#ifndef QMM_OPTIMIZED_H
#define QMM_OPTIMIZED_H

#include <stdint.h>

#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the backend (same contract as the plugin entry point, see qmm/backend.h). The table's
 * operator functions are safe to call concurrently; concurrent calls share the thread pool
 * (a call that finds it busy runs on its own thread, with the same result). */
qmm_backend *qmm_optimized_open(uint32_t harness_abi, const char *options, qmm_status *st);

/* ---- prepack API: pack a constant B once, reuse it across calls ------------------------
 *
 * A packed B holds b's values in the microkernel layout of one backend (its ISA decides the
 * layout) for every batch matrix of b. It does not depend on b_zero_point or b_scale, so one
 * packed B serves calls with any parameters. The values are copied: the caller may free or
 * change b's buffer after packing.
 *
 * Ownership: the caller owns the packed B and frees it with qmm_optimized_packed_b_free, after
 * the last call that uses it and before closing the backend. A packed B is read-only once
 * made, so several threads may use one concurrently.
 *
 * qmm_optimized_pack_b: `be` must come from qmm_optimized_open; b is uint8 or int8, rank >= 1
 * (a 1-D b is one column). Returns NULL with st set on failure (UNSUPPORTED when the backend's
 * ISA is missing on this CPU, INVALID_ARGUMENT for a bad tensor, OUT_OF_MEMORY). */
typedef struct qmm_optimized_packed_b qmm_optimized_packed_b;

qmm_optimized_packed_b *qmm_optimized_pack_b(const qmm_backend *be, const qmm_tensor *b,
                                             qmm_status *st);
void qmm_optimized_packed_b_free(qmm_optimized_packed_b *pb);

/* As be->qlinearmatmul / be->matmulinteger, with B taken from `pb`. call->b must still carry
 * the dtype and shape that were packed (INVALID_ARGUMENT otherwise); call->b.data is not read
 * and may be NULL. `pb` must have been packed by the same backend. */
qmm_status_code qmm_optimized_qlinearmatmul_packed(const qmm_backend *be,
                                                   const qmm_qlinearmatmul *call,
                                                   const qmm_optimized_packed_b *pb,
                                                   qmm_status *st);
qmm_status_code qmm_optimized_matmulinteger_packed(const qmm_backend *be,
                                                   const qmm_matmulinteger *call,
                                                   const qmm_optimized_packed_b *pb,
                                                   qmm_status *st);

/* The ISA the backend runs (one of qmm_optimized_isa_variant's names) and its thread count,
 * for tools such as `qmmcheck bench`. NULL / 0 when `be` is not an optimized backend. */
const char *qmm_optimized_isa(const qmm_backend *be);
int qmm_optimized_threads(const qmm_backend *be);

/* The i-th ISA variant the backend has, from 0 (the portable "scalar"), in the order of the
 * backend's kernel table (optimized/cpu/kernels.c); NULL past the last. These are the names
 * isa= accepts besides auto, whether or not this CPU can run them; tools that try every
 * variant iterate over this list. */
const char *qmm_optimized_isa_variant(int i);

/* What the i-th variant is, for listings (`qmmcheck list --backends`). */
typedef struct qmm_optimized_variant {
    const char *name;    /* as qmm_optimized_isa_variant */
    const char *kernel;  /* its main microkernel, named for its types, tile and ISA */
    const char *layout;  /* its packing layout, in words */
    int mr, nr, kgroup;  /* tile rows x columns, k values per K group */
    const char *missing; /* NULL when this CPU (and OS) runs it, else why not */
} qmm_optimized_variant;

/* Fills *v for variant i; 0 past the last variant, else 1. */
int qmm_optimized_variant_info(int i, qmm_optimized_variant *v);

/* Measures this machine's int8 peak for `threads` threads running for about `seconds`: a
 * dedicated loop of independent multiply-accumulates with no memory traffic, the best
 * runnable variant's own instruction sequence (the last in qmm_optimized_isa_variant's order
 * that has one and is not a separate ceiling, below). Returns int8 ops per second (2 per
 * multiply-accumulate) and sets *loop to a description of the sequence; 0 when the CPU runs
 * none of them. */
double qmm_optimized_peak_ops(int threads, double seconds, const char **loop);

/* The same for a variant whose loop is a ceiling of its own (AMX's tile multiply, operands in
 * tile registers), reported beside the peak: benchmarks take percentages against
 * qmm_optimized_peak_ops whichever variant runs. 0 (and *loop untouched) when variant i has
 * no such loop or this CPU or OS cannot run it. */
double qmm_optimized_peak_ceiling_ops(int variant, int threads, double seconds,
                                      const char **loop);

#ifdef __cplusplus
}
#endif

#endif /* QMM_OPTIMIZED_H */
