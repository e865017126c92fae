/* optimized/qmm_optimized.h — the optimized CPU backend: open, and the prepack API.
 *
 * The backend computes QLinearMatMul, MatMulInteger and QOrderedMatMul bit-exactly under the
 * `spec` profile (docs/semantics.md §6): every uint8/int8 type combination, every parameter form, batch
 * broadcasting. Accumulation is int32 and wraps modulo 2^32 (for K >= 33026 an element's exact sum
 * may not fit; the spec accepts the result computed from the wrapped sum, and this backend always
 * produces exactly that one). The wrapped sum is then requantized exactly.
 *
 * Options (comma-separated key=value, as `--backend optimized:isa=avx2,threads=2`):
 *   isa=NAME|auto  the variant (microkernels and packing layout for one instruction set),
 *                  one of qmm_optimized_variant_name's names (default auto:
 *                  the best this CPU has; the environment variable QMM_ISA, when set,
 *                  replaces auto); an unknown name's error message lists them all
 *   threads=N      worker threads, 1..256 (default: online CPUs)
 *   raw_a_k=K      0..2147483647: the largest K at which a uint8 A is read as it is (no
 *                  packing pass over A); default: this CPU model's (docs/optimized.md,
 *                  "Tuning by CPU model")
 *   fuse_wide=0|1  past 192 rows with B as input, B packed by the first row block's
 *                  kernels (1) or in a pass of its own (0); default: this CPU model's
 *   row_block=R    1..288: the most rows of A one compute task takes (past it the rows are
 *                  split into near-equal blocks; the fused path of up to 192 rows with B
 *                  as input keeps them in one); default: this CPU model's
 * raw_a_k=, fuse_wide= and row_block= change the time, never an answer, and appear in the
 * backend's name.
 * Asking for a variant the CPU lacks is not an error: the open succeeds and every query answers
 * UNSUPPORTED with the reason, so no illegal instruction is ever executed.
 *
 * Output is bitwise identical for every thread count and every variant.
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
 * A packed B holds b's values in the microkernel layout of one backend (its variant decides
 * the layout) for every batch matrix of b. It does not depend on b_zero_point or b_scale, so one
 * packed B serves calls with any parameters. The values are copied: the caller may free or
 * change b's buffer after packing.
 *
 * Ownership: the caller owns the packed B and frees it with qmm_optimized_packed_b_free, after
 * the last call that uses it and before closing the backend. A packed B is read-only once
 * made, so several threads may use one concurrently.
 *
 * qmm_optimized_pack_b: `be` must come from qmm_optimized_open; b is uint8 or int8, rank >= 1
 * (a 1-D b is one column). Returns NULL with st set on failure (UNSUPPORTED when the backend's
 * variant is missing on this CPU, INVALID_ARGUMENT for a bad tensor, OUT_OF_MEMORY). */
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

/* The variant the backend runs (one of qmm_optimized_variant_name's names: what its isa=
 * option named) and its thread count, for tools such as `qmmcheck bench`. NULL / 0 when `be`
 * is not an optimized backend. */
const char *qmm_optimized_variant_of(const qmm_backend *be);
int qmm_optimized_threads(const qmm_backend *be);

/* The i-th variant the backend has, from 0 (the portable "scalar"), in the order of the
 * backend's variant table (optimized/cpu/kernels.c); NULL past the last. These are the names
 * isa= accepts besides auto, whether or not this CPU can run them; tools that try every
 * variant iterate over this list. */
const char *qmm_optimized_variant_name(int i);

/* The names these two had before the table said "variant" throughout; kept for callers not
 * yet moved (header-only: the library exports the new names alone). */
static inline const char *qmm_optimized_isa(const qmm_backend *be)
{
    return qmm_optimized_variant_of(be);
}
static inline const char *qmm_optimized_isa_variant(int i)
{
    return qmm_optimized_variant_name(i);
}

/* What the i-th variant is, for listings (`qmmcheck list --backends`). */
typedef struct qmm_optimized_variant {
    const char *name;    /* as qmm_optimized_variant_name */
    const char *kernel;  /* its main microkernel, named for its types, tile and ISA */
    const char *layout;  /* its packing layout, in words */
    int mr, nr, kgroup;  /* tile rows x columns, k values per K group */
    const char *missing; /* NULL when this CPU (and OS) runs it, else why not */
} qmm_optimized_variant;

/* Fills *v for variant i; 0 past the last variant, else 1. */
int qmm_optimized_variant_info(int i, qmm_optimized_variant *v);

/* ---- the int8 peak (`qmmcheck bench`): what a GEMM's rate is a percentage of ----------
 *
 * The peak is the int8 multiply-accumulate rate of a dedicated loop of independent
 * multiply-accumulates with no memory traffic: a variant's own instruction sequence (its
 * peak loop, optimized/cpu/kernels.c). A single long run of it reads what share of the CPU the
 * machine gave it; so it is sampled instead in many short runs (about `sample_s` each, on
 * `threads` threads at once), which a caller takes interleaved with what it times, so a busy
 * phase of a shared machine lowers both. The peak for T threads is the best rate one thread
 * reached in any sample while the others ran too, times the cores T threads occupy (T, at most
 * the physical cores this process may use), or the best whole sample if higher: on a busy
 * machine a moment with every thread undisturbed at once is rare, one undisturbed thread is
 * not. After each sample every thread runs a chain of dependent register adds (one cycle each
 * on every x86 core) for about an eighth of the sample: the fastest is the clock estimate, and
 * the peak divided by clock and cores is checked against the published rate of the loop's
 * instructions on this CPU.
 *
 * qmm_optimized_peak_open: variant i of qmm_optimized_variant_name, or -1 for the best this CPU
 * runs (the last in that order with a peak loop: AMX's tile loop where it runs). NULL when the
 * variant has no loop, this CPU or OS cannot run it, or out of memory. No sample is taken. */
typedef struct qmm_optimized_peak qmm_optimized_peak;

qmm_optimized_peak *qmm_optimized_peak_open(int variant, int threads, double sample_s);
/* Takes one sample (threads started and joined inside); 0, or -1 when no thread ran. */
int qmm_optimized_peak_sample(qmm_optimized_peak *p);
/* Forgets the samples taken (the calibration stays): the next get reads only later samples,
 * so a caller that times in rounds reads each round's peak. */
void qmm_optimized_peak_restart(qmm_optimized_peak *p);
void qmm_optimized_peak_close(qmm_optimized_peak *p);

typedef enum qmm_optimized_peak_verdict {
    QMM_PEAK_UNCHECKED, /* no clock estimate or no published rate for this CPU and loop */
    QMM_PEAK_AGREES,    /* within 75%..105% of the published rate at the measured clock (the
                           published figures are port bounds a mix of instructions may not
                           reach: Zen 4's vpmaddwd + vpaddd pair runs at 81% of its own) */
    QMM_PEAK_BELOW,     /* under 75%: slowed while sampling (busy or throttled machine), a loop
                           the compiler spilled, or a part with fewer units than an "up to"
                           figure */
    QMM_PEAK_ABOVE,     /* over 105%: the clock estimate is low (it was taken after the loop) */
} qmm_optimized_peak_verdict;

typedef struct qmm_optimized_peak_info {
    const char *isa;          /* the variant whose loop this is (named for the isa= option) */
    const char *loop;         /* the loop, in words */
    int threads;              /* the thread count the peak is for */
    int sample_threads;       /* threads a sample runs: `threads`, at most the CPUs this
                                 process may use (more would only take turns) */
    int cores;                /* threads, at most the usable physical cores: the peak's multiple
                                 of one thread's rate, what the per-core rate divides by */
    double sample_s;          /* a sample's planned length */
    int samples;              /* samples taken */
    double ops;               /* the peak: int8 ops per second (2 per multiply-accumulate),
                                 max(cores * ops_thread, ops_together) */
    double ops_thread;        /* the best rate of one thread in a sample */
    double ops_together;      /* the best rate of a whole sample (all threads, first start to
                                 last finish) */
    double clock_hz;          /* the best dependent-add estimate of the core clock; 0: none */
    double ops_per_cycle;     /* ops / (clock_hz * cores); 0 without a clock */
    char cpu_id[64];          /* this CPU's CPUID vendor, family and model, as "AuthenticAMD
                                 family 25 model 17" ("unknown" off x86) */
    const char *cpu;          /* the published table's name for it ("AMD Zen 4"), or NULL */
    double published;         /* the loop's int8 ops per cycle per core on this CPU; 0: none on
                                 record */
    int published_up_to;      /* 1: `published` is the most any part of the class does */
    const char *published_why; /* the instruction's rate it follows from, and the sources */
    double fraction;          /* ops_per_cycle / published; 0 when unchecked */
    qmm_optimized_peak_verdict verdict;
} qmm_optimized_peak_info;

void qmm_optimized_peak_get(const qmm_optimized_peak *p, qmm_optimized_peak_info *info);

/* The verdict on a measured per-core rate against a published one (0: none) — the pure rule
 * qmm_optimized_peak_get applies; *fraction = measured / published, 0 when unchecked. */
qmm_optimized_peak_verdict qmm_optimized_peak_check(double ops_per_cycle, double published,
                                                    double *fraction);

/* What rates measured beside a peak are percentages of: the peak, unless a rate beats it;
 * then the highest rate (*beaten = its index, else -1), so no percentage reads above 100.
 * 0 when peak <= 0 (no loop on this CPU: there is nothing to be a percentage of). */
double qmm_optimized_peak_base(double peak, const double *rates, int n, int *beaten);
/* 100 * rate / base, within 0..100; 0 when base <= 0. */
double qmm_optimized_peak_percent(double rate, double base);

#ifdef __cplusplus
}
#endif

#endif /* QMM_OPTIMIZED_H */
