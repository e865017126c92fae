/* harness/run/reduce.h — shrinking a failing case to the smallest one that still fails the same
 * way (`qmmcheck reduce`, `qmmcheck diff --reduce`; docs/formats.md "Reduced cases").
 *
 * Each candidate is judged in memory exactly as `run` judges a loaded case (qh_judge_case,
 * through the backend's isolation), so a crash or a hang is a status of the candidate, not the
 * end of the reduction; nothing is written until the result. */
#ifndef QMM_HARNESS_REDUCE_H
#define QMM_HARNESS_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "harness/gen/problem.h"
#include "harness/run/runner.h"

/* The class of a failure as printed (reduce compares verdicts' codes, qh_verdict_same_class):
 * the status, and for a status with several kinds of reason the kind
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
    int confirm;             /* judgments of the case, its rewrite and the result; 0: default */
} qh_reduce_opts;

/* How many times reduce judges the case, its rewrite and the reduced case as written, by
 * default: each must fail alike every time (a backend that is not deterministic makes the
 * reduction inconclusive, never a case that does not fail). */
#define QH_REDUCE_CONFIRM 3

typedef struct qh_reduce_result {
    qh_case_status status;   /* the case's verdict, kept by every accepted candidate */
    qh_verdict verdict;      /* the case's verdict as data: what a candidate's is compared
                              * with (qh_verdict_same_class) */
    char cls[256];           /* its class as printed (qh_failure_class) */
    char summary[512];       /* the smallest candidate's summary, as run prints it */
    qh_problem best;         /* the smallest candidate (the case itself when nothing shrank) */
    char before[128], after[128]; /* "batch=[2,3] M=4 N=5 K=6" */
    uint64_t tries;          /* candidates judged */
    uint64_t accepted;       /* of them, failing the same way */
    int budget_spent;        /* --max-tries or --seconds stopped it */
    int confirmed;           /* judgments of the written case, each alike (qh_reduce_write) */
    double seconds;
} qh_reduce_result;

/* Judges the case `ref` against `b` (o->confirm times, default QH_REDUCE_CONFIRM: every
 * verdict must be the same); when it fails (qh_reducible_status) shrinks it greedily
 * while each step keeps the class: batch dims (dropped, then cut to 1), then M, N, K (halved,
 * then stepped down, to 0 where the failure survives that), then parameters per-axis to
 * per-tensor, integer values to zero (whole tensors, halves, ..., single elements), scales to
 * 1 or the nearest power of two; repeated until a whole round shrinks nothing. A candidate
 * must pass the operator's validator when the case did. Returns 0 with `r` filled (free it
 * with qh_reduce_result_free); 1 when the case does not fail (r->status, r->summary say how
 * it was judged); 2 with err when the backend's verdicts on the case or on its rewrite differ
 * (inconclusive: not deterministic); -1 with err on a harness failure (the case cannot be
 * loaded or rewritten, or fails only with its stored output, every time). */
int qh_reduce_case(const qh_case_ref *ref, qh_backend *b, const qh_reduce_opts *o,
                   qh_reduce_result *r, qh_error *err);
void qh_reduce_result_free(qh_reduce_result *r);

/* ---- writing a case where an earlier one may be (reduce --out, diff --out) ---------------
 *
 * A case is written into a fresh directory beside `dir` (PARENT/.LEAF.qmmcheck-XXXXXX/LEAF,
 * which `run` does not discover) and renamed into place: a reader never sees half a case, and
 * no file of an earlier case stays beside the new one's. What `dir` may be: absent, an empty
 * directory, or a case qmmcheck diff or reduce wrote (only a case's files: model.onnx,
 * qmm.meta, test_data_set_N/input_N.pb and output_N.pb, and a qmm.meta tagged `diff` or
 * `reduced`), which is replaced whole and removed file by file; anything else is refused and
 * left as it is. */

/* 1 when a case may be written to `dir`; 0 with why ("... is not a case qmmcheck wrote ..."). */
int qh_case_dir_replaceable(const char *dir, char *why, size_t size);

typedef struct qh_case_stage {
    char tmp[4096]; /* PARENT/.LEAF.qmmcheck-XXXXXX */
    char dir[4096]; /* tmp/LEAF: where the case is written */
    char to[4096];  /* `dir` without trailing slashes */
} qh_case_stage;

/* Checks `dir` (qh_case_dir_replaceable), makes its parent and the fresh directory. 0, or -1
 * with err naming the path. */
int qh_case_stage_open(const char *dir, qh_case_stage *s, qh_error *err);

/* Renames the written case into place, the earlier one (if any) moved aside and removed. 0
 * with `note` saying what was replaced ("" when nothing was), or -1 with err (the fresh case
 * removed). */
int qh_case_stage_publish(qh_case_stage *s, char *note, size_t size, qh_error *err);

/* Removes the fresh directory and what was written into it. */
void qh_case_stage_discard(qh_case_stage *s);

/* Writes r->best to `dir` with the reference's answer under o->profile as output_0.pb (or
 * expect = INVALID_ARGUMENT in qmm.meta when the reference rejects it) and a qmm.meta whose
 * tags are `tags` plus "reduced" and whose provenance is `provenance`, through a fresh
 * directory (qh_case_stage_open: an earlier case qmmcheck wrote there is replaced, anything
 * else refused). Before it is put in place, the written case is judged against `b` as its
 * __REPRO line judges it, o->confirm times (r->confirmed, r->summary): it must fail in r's
 * class every time. 0 with `note` saying what it replaced ("" when nothing); 2 with err when
 * it did not fail alike every time (inconclusive: nothing written); -1 with err. */
int qh_reduce_write(const char *dir, qh_reduce_result *r, qh_backend *b,
                    const qh_reduce_opts *o, const qh_meta *tags, const char *provenance,
                    char *note, size_t note_size, qh_error *err);

/* What reduce prints for a case written to `dir`, each line after `indent`: "REDUCED <before> -> <after> in N tries
 * ...", the inputs, and "<STATUS> <dir> (<summary>) __REPRO: qmmcheck repro ..." (run's repro
 * line: be's spec and isolation options), each line cleaned and ended by a newline. malloc'd; NULL when memory runs out. */
char *qh_reduce_report(const qh_reduce_result *r, const char *dir, const qh_backend *be,
                       const char *profile, const char *indent);

#endif /* QMM_HARNESS_REDUCE_H */
