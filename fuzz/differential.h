/* fuzz/differential.h — the reference against every other implementation, one input at a time.
 *
 * Shared by the differential targets (fuzz_qlinearmatmul.c, fuzz_matmulinteger.c,
 * fuzz_qorderedmatmul.c). The implementations compared with the reference (the spec profile,
 * overflow-permitted alternative accepted) are:
 *   - every built-in backend but the reference; for `optimized`, each ISA variant
 *     (every row of its kernel table, as qmm_optimized_isa_variant lists them) single-threaded and
 *     with QMM_FUZZ_THREADS threads
 *     (default 3: an odd count splits work unevenly); for `cuda` (when built), the device and
 *     its host emulation `cuda:emulate=1`. A variant whose capability query answers
 *     UNSUPPORTED for a plain problem (an ISA this CPU lacks, no CUDA device) is dropped at
 *     start-up; one that answers UNSUPPORTED for a given call (the optimized backend on
 *     QOrderedMatMul) is left out of that call's comparison;
 *   - each backend in QMM_FUZZ_BACKEND: a plugin ("path.so[:options]") or an external process
 *     ("exec:COMMAND", docs/exec-protocol.md), several separated by ';'.
 * QMM_FUZZ_BUILTINS=0 leaves the built-ins out (to fuzz one plugin at full speed);
 * QMM_FUZZ_DEBUG=1 prints each decoded problem (types and shapes) and each implementation it
 * runs on stderr.
 *
 * Which built-in runs: the input's LAST byte picks one (byte mod the number of open
 * built-ins, in the order above: ISA variant, then thread count), and the bytes before it
 * are the decoder's (fuzz/decode.h). Running every variant on every input made the targets
 * several times slower (fuzz/README.md, "Throughput"); with the pick in the input, the
 * engine's coverage feedback steers which variant and thread count a problem meets, and a
 * one-byte mutation moves a problem to another variant. Plugins run on every input.
 * QMM_FUZZ_VARIANTS=all runs every built-in on every input instead; the replay driver
 * (driver.c) sets it unless the environment says otherwise, so ctest's corpus replay
 * compares every variant on every seed.
 *
 * A difference (values, or statuses: one INVALID_ARGUMENT, the other OK; UNSUPPORTED never
 * counts) writes an ONNX case directory under QMM_FUZZ_ARTIFACTS (default: the working
 * directory), prints both outputs and the first differing elements, and aborts with the
 * signature `reference-<backend>-<op>-<types>-difference`.
 */
#ifndef QMM_FUZZ_DIFFERENTIAL_H
#define QMM_FUZZ_DIFFERENTIAL_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz/decode.h" /* qh_fz_case, qh_fz_decoder */

/* Reads the environment and opens the plugins. Safe before fork (no threads are started:
 * built-in backends, which may start thread pools, open on the first input instead, so an
 * AFL++ fork server can call this before __AFL_INIT). Idempotent. */
void qh_fz_diff_setup(void);

/* Decodes one input and compares every implementation with the reference; returns normally
 * when they agree, aborts when they do not. `target` names the fuzz target in reports. */
void qh_fz_diff_one(const char *target, qh_fz_decoder decode, const uint8_t *data, size_t len);

/* The entry points of a differential target: LLVMFuzzerInitialize runs the setup (before an
 * AFL++ fork server forks), LLVMFuzzerTestOneInput one input through `decoder`. */
#define QH_FZ_DIFF_TARGET(target, decoder)                                                  \
    int LLVMFuzzerInitialize(int *argc, char ***argv);                                      \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                           \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                                       \
    {                                                                                       \
        (void)argc;                                                                         \
        (void)argv;                                                                         \
        qh_fz_diff_setup();                                                                 \
        return 0;                                                                           \
    }                                                                                       \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                            \
    {                                                                                       \
        qh_fz_diff_one(target, decoder, data, size);                                        \
        return 0;                                                                           \
    }

#endif /* QMM_FUZZ_DIFFERENTIAL_H */
