/* harness/run/reduce.h — shrinking a failing case to the smallest one that still fails the same
 * way (`qmmcheck reduce`, `qmmcheck diff --reduce`; docs/formats.md "Reduced cases").
 *
 * Each candidate is written as a case directory and judged exactly as `run` judges a case
 * (qh_eval_case, through the backend's isolation), so a crash or a hang is a status of the
 * candidate, not the end of the reduction. */
#ifndef QMM_HARNESS_REDUCE_H
#define QMM_HARNESS_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/gen/problem.h"
#include "harness/run/runner.h"

/* The class of a failure: the status, and for a status with several kinds of reason the kind
 * (docs/formats.md "Reduced cases"): "FAILED errors" (mismatching elements, any count),
 * "FAILED wrote # byte past the end of y", "CRASHED killed by SIGSEGV", "TIMEOUT no answer
 * within # s", "FAILED answered INVALID_ARGUMENT for a valid call", ... Written into buf. */
void qh_failure_class(qh_case_status status, const char *summary, char *buf, size_t size);

/* 1 for a status reduce works on: FAILED, CRASHED, TIMEOUT, ERROR and UNCHECKED. */
int qh_reducible_status(qh_case_status status);

typedef struct qh_reduce_opts {
    const char *profile;     /* judged under it, as run --profile; NULL: spec */
    qh_invoke_opts invoke;   /* as run passes them */
    uint64_t max_tries;      /* judged candidates at most; 0: no bound */
    double seconds;          /* stop after this long; <= 0: no bound */
    int progress;            /* a progress line on stderr every 2 s */
} qh_reduce_opts;

typedef struct qh_reduce_result {
    qh_case_status status;   /* the case's verdict, kept by every accepted candidate */
    char cls[256];           /* its class (qh_failure_class) */
    char summary[512];       /* the smallest candidate's summary, as run prints it */
    qh_problem best;         /* the smallest candidate (the case itself when nothing shrank) */
    char before[128], after[128]; /* "batch=[2,3] M=4 N=5 K=6" */
    uint64_t tries;          /* candidates judged */
    uint64_t accepted;       /* of them, failing the same way */
    int budget_spent;        /* --max-tries or --seconds stopped it */
    double seconds;
} qh_reduce_result;

/* Judges the case `ref` against `b`; when it fails (qh_reducible_status) shrinks it greedily
 * while each step keeps the class: batch dims (dropped, then cut to 1), then M, N, K (halved,
 * then stepped down, to 0 where the failure survives that), then parameters per-axis to
 * per-tensor, integer values to zero (whole tensors, halves, ..., single elements), scales to
 * 1 or the nearest power of two; repeated until a whole round shrinks nothing. A candidate
 * must pass the operator's validator when the case did. Returns 0 with `r` filled (free it
 * with qh_reduce_result_free); 1 when the case does not fail (r->status, r->summary say how
 * it was judged); -1 with err on a harness failure (the case cannot be loaded or rewritten). */
int qh_reduce_case(const qh_case_ref *ref, qh_backend *b, const qh_reduce_opts *o,
                   qh_reduce_result *r, qh_error *err);
void qh_reduce_result_free(qh_reduce_result *r);

/* Writes r->best to `dir` with the reference's answer under o->profile as output_0.pb (or
 * expect = INVALID_ARGUMENT in qmm.meta when the reference rejects it) and a qmm.meta whose
 * tags are `tags` plus "reduced" and whose provenance is `provenance`. 0, or -1 with err. */
int qh_reduce_write(const char *dir, const qh_reduce_result *r, const qh_reduce_opts *o,
                    const qh_meta *tags, const char *provenance, qh_error *err);

/* What reduce prints for a case written to `dir`, each line after `indent`: "REDUCED <before> -> <after> in N tries
 * ...", the inputs, and "<STATUS> <dir> (<summary>) __REPRO: qmmcheck repro ..." (run's repro
 * line), each line cleaned and ended by a newline. malloc'd; NULL when memory runs out. */
char *qh_reduce_report(const qh_reduce_result *r, const char *dir, const char *spec,
                       const char *profile, const char *indent);

#endif /* QMM_HARNESS_REDUCE_H */
