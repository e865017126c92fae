/* harness/gen/edge.h — the edge-case generator: named, tagged suites of hand-constructed problems
 * (rounding ties, near-ties, saturation, int16 pair-sum extremes, every parameter form,
 * broadcasting, 1-D operands, empty dimensions, int32 accumulator overflow, subnormal and huge
 * scales, every type combination, zero points, one invalid case per rule of docs/semantics.md
 * §2.5).
 *
 * Deterministic: a suite and a seed give the same cases, byte for byte, on every machine.
 * Expected outputs come from the exact reference (qmm_ref_compute). docs/edge-suites.md says
 * what each suite targets; `qmmcheck export` writes them as ONNX node-test directories.
 */
#ifndef QMM_HARNESS_EDGE_H
#define QMM_HARNESS_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/io/meta.h"
#include "harness/io/onnx_io.h"
#include "harness/gen/problem.h"

/* The tag of every case in the simplest form a kernel supports: 2-D a and b, per-tensor
 * parameters ([] or [1], or absent), and for QLinearMatMul float32 scales and uint8/int8
 * a, b and y (any opset). With its type tag ("u8s8u8") it selects what such a kernel runs. */
#define QH_EDGE_SIMPLE_FORM_TAG "simple-form"

/* A suite being built (harness/gen/edge_build.h). */
typedef struct qh_edge_builder qh_edge_builder;

/* One suite: the descriptor its file, harness/gen/edge/<name>.c, defines (edge_build.h). */
typedef struct qh_edge_suite {
    const char *name; /* "ties" */
    uint64_t seed;    /* the seed the committed vectors/edge/ was generated with; also its
                       * place in the list (1 for the first) */
    void (*build)(qh_edge_builder *x); /* appends its cases (expected outputs not yet set) */
    const char *summary;               /* one line: what it targets */
} qh_edge_suite;

/* The suites, in the order of their seeds (the order they were added in). */
size_t qh_edge_suite_count(void);
const qh_edge_suite *qh_edge_suite_at(size_t i);
/* The suite called `name`, or NULL. */
const qh_edge_suite *qh_edge_suite_find(const char *name);

typedef struct qh_edge_case {
    char name[192];     /* the case's path under an export root:
                         * "qlinearmatmul/ties/odd-zp-pos-u8u8u8" */
    qh_meta meta;       /* expect, tags, description, provenance */
    qh_problem problem;
    int has_output;     /* the reference computed an output (valid calls) */
    qmm_tensor output;  /* owned: the exact spec output, stored as output_0.pb */
    int overflow;       /* some accumulator does not fit int32 (tagged overflow-permitted) */
} qh_edge_case;

typedef struct qh_edge_cases {
    qh_edge_case *items;
    size_t count, cap;
} qh_edge_cases;

/* Appends every case of `suite` built with `seed`, expected outputs computed. A case whose
 * reference verdict contradicts what the generator meant (a "valid" case rejected, an
 * "invalid" one accepted) is a generator bug and fails the build with err naming the case.
 * 0, or -1 with err. */
int qh_edge_build(const qh_edge_suite *suite, uint64_t seed, qh_edge_cases *out, qh_error *err);
void qh_edge_cases_free(qh_edge_cases *c);

/* Writes one case as ROOT/<case name>/ (model.onnx, test_data_set_0/, qmm.meta). */
int qh_edge_write(const char *root, const qh_edge_case *c, qh_error *err);

#endif /* QMM_HARNESS_EDGE_H */
