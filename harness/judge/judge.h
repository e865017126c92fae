/* harness/judge/judge.h — the judge: one function that decides a backend's answer to a call
 * against the reference's expectation, returning a structured verdict (docs/formats.md,
 * "Verdicts"). `run`, `repro`, `diff`, the fuzz differential target, `fingerprint` and
 * `reduce` all call it in memory; nothing else decides a status.
 *
 * The verdict is data first: the status, a reason code, the status the backend answered,
 * counts and the mismatches (index, coordinates, expected, got, the exact accumulator where it
 * is known, and room for a bound rule's bound and the error's fraction of it). The text lines
 * (summary, detail, first mismatch) are made from that data; callers that compare verdicts
 * (reduce) compare the codes, never the text.
 *
 * How values are compared is the operator's rule (qmm_op_desc.compare, ops/operator.h): exact
 * (bit for bit, the int32-wrapped result accepted where an accumulator overflows), or accept
 * (the float-output operators: each element within an accepted interval of the reference's
 * models, qmm_ref_accept_part; an element no conclusive model decides makes the verdict
 * INCONCLUSIVE when nothing fails). A new rule is added here and in the descriptor only. */
#ifndef QMM_HARNESS_JUDGE_H
#define QMM_HARNESS_JUDGE_H

#include <stdint.h>

#include "harness/base/strbuf.h"
#include "harness/judge/compare.h"
#include "harness/judge/expect.h"
#include "harness/invoke/invoke.h"
#include "qmm/qmm.h"

/* The closed set of case statuses. */
typedef enum qh_case_status {
    QH_PASSED = 0,
    QH_FAILED,
    QH_MISTRUSTED, /* the vector's stored output contradicts the reference */
    QH_SKIPPED,    /* the backend answered UNSUPPORTED */
    QH_UNCHECKED,  /* invalid input the backend accepted instead of rejecting */
    QH_CRASHED,
    QH_TIMEOUT,
    QH_ERROR,      /* the case itself could not be loaded */
    QH_XFAIL,
    QH_XPASS,
    QH_INCONCLUSIVE, /* no element failed, but some are not determined: only a model that gives
                      * no usable bound accepts them (docs/semantics.md §8.4) */
    QH_STATUS_COUNT
} qh_case_status;

const char *qh_case_status_name(qh_case_status s);  /* "PASSED" */
const char *qh_case_status_key(qh_case_status s);   /* "passed", the report key */
/* FAILED, CRASHED, TIMEOUT and ERROR make the run exit 1 (INCONCLUSIVE does not). */
int qh_case_status_is_bad(qh_case_status s);

/* Why a verdict is what it is: one code per kind of decision (docs/formats.md, "Verdicts",
 * has one row each). The name (qh_reason_name) is stable: reports and tests may use it. */
typedef enum qh_reason {
    QH_REASON_NONE = 0,           /* not judged */
    QH_REASON_EQUAL,              /* PASSED: every element is an accepted value */
    QH_REASON_REJECTED,           /* PASSED: invalid input rejected, as the reference does */
    QH_REASON_VALUES,             /* FAILED: elements differ from the accepted values */
    QH_REASON_SHAPE,              /* FAILED: the output's dtype or shape is not y's */
    QH_REASON_UNWRITTEN,          /* FAILED: elements kept the output's fill in two runs */
    QH_REASON_NOT_DETERMINISTIC,  /* FAILED: another run answered otherwise */
    QH_REASON_WRONG_STATUS_VALID, /* FAILED: answered `answered` (not OK) for a valid call */
    QH_REASON_WRONG_STATUS_INVALID, /* FAILED: answered `answered` for invalid input */
    QH_REASON_ACCEPTED_INVALID,   /* UNCHECKED: answered OK for input the reference rejects */
    QH_REASON_UNSUPPORTED,        /* SKIPPED: the backend answered UNSUPPORTED */
    QH_REASON_REFERENCE_CANNOT_JUDGE, /* SKIPPED: the reference answers UNSUPPORTED */
    QH_REASON_REFERENCE_ERROR,    /* ERROR: the reference failed (memory, limits, profile) */
    QH_REASON_CRASHED,            /* CRASHED: the backend's worker died */
    QH_REASON_TIMEOUT,            /* TIMEOUT: no answer in time; the worker was killed */
    QH_REASON_MISBEHAVED,         /* FAILED: returned, but broke a memory rule */
    QH_REASON_MALFORMED,          /* ERROR: an exec: backend's answer broke the protocol */
    QH_REASON_INTERRUPTED,        /* ERROR: SIGINT/SIGTERM stopped the call */
    QH_REASON_NOT_RUN,            /* ERROR: the harness could not run the call (or a rerun) */
    QH_REASON_CASE_ERROR,         /* ERROR: the case could not be loaded */
    QH_REASON_MISTRUSTED,         /* MISTRUSTED: passed, but the vector's stored output is
                                   * not the reference's */
    QH_REASON_UNDETERMINED,       /* INCONCLUSIVE: elements the reference cannot decide */
    QH_REASON_COUNT
} qh_reason;

const char *qh_reason_name(qh_reason r); /* "values", "wrong-status-valid", ... */

/* One mismatching element, as data. */
typedef struct qh_mismatch {
    int64_t index;                 /* row-major over y */
    int32_t rank;
    int64_t coord[QMM_MAX_RANK];   /* y[coord...] */
    int64_t expected, got;         /* qh_tensor_int's form (a float8 code: 0..255) */
    int explained;                 /* acc, scaled, overflow, wrapped below are known */
    int64_t acc;                   /* the exact accumulator */
    char scaled[160];              /* the exact scaled value ("" where the operator has none) */
    int overflow;                  /* acc overflows int32 ... */
    int64_t wrapped;               /* ... and this result from the wrapped sum is accepted too */
    /* The accept rule's numbers (QMM_COMPARE_ACCEPT): the bound the element had to be within
     * and the error as a fraction of it (> 1: out of bound); NaN under the exact rule. `range`
     * is set under that rule only: the accepted interval, the model's exact value and name. */
    double bound, fraction;
    /* The semantics profiles (bit p: qmm_profile p) that give `got` here, as the detail's
     * "got matches:" names them; known only where the judge made the detail (opts.text). */
    int models_known;
    uint64_t models;
    uint64_t models_here; /* the profiles that give `got` at this element (known as models) */
    uint64_t models_unjudged; /* with models_kept: the profiles not compared
                                 (qmm_profile_whole_call) */
    int models_kept; /* the profiles were judged at the kept mismatches only (a large output:
                        harness/judge/judge.c, QH_MATCH_MAX_WORK) */
    int range;
    qh_bounded accepted;
} qh_mismatch;

typedef struct qh_verdict {
    qh_case_status status;
    qh_reason reason;
    qmm_status_code answered;      /* what the backend answered (a wrong status: which) */
    /* For a reason the invocation reports (crashed, timeout, misbehaved, malformed): its
     * cause as the invocation gives it, a code (harness/invoke/invoke.h: a signal and its
     * number, a guard's kind, access and tensor, ...), never read back from the text.
     * QH_CAUSE_NONE for the judge's own reasons. */
    qh_cause cause;
    int32_t cause_arg;
    int mistrusted;                /* the vector is also mistrusted (noted in the detail) */
    int64_t errors, total;         /* elements not accepted, elements compared */
    int32_t n_mismatches;          /* the first ones, ascending (at most QH_COMPARE_KEEP) */
    qh_mismatch mismatches[QH_COMPARE_KEEP];
    /* the text made from the above */
    qh_sb summary;                 /* one line: "errors:3 total:12", a reason */
    qh_sb detail;                  /* several lines */
    qh_sb first;                   /* the first mismatch: "y[0,1] (index 1): got 5, expected 6" */
} qh_verdict;

void qh_verdict_init(qh_verdict *v);
void qh_verdict_free(qh_verdict *v);

/* 1 when two verdicts are the same kind of failure (reduce's class): the status, the reason,
 * the status answered where the reason is a wrong one, and the invocation's cause and its
 * argument. Counts, coordinates and text are not compared. */
int qh_verdict_same_class(const qh_verdict *a, const qh_verdict *b);
/* The kind of a reason's text, for printing a class (qh_failure_class; never compared): cut
 * before what varies with the input or comes from the
 * backend (a message after ':', a coordinate after '[', an aside in parentheses), every run
 * of digits written '#', trailing spaces dropped: "killed by SIGSEGV (Segmentation fault)"
 * -> "killed by SIGSEGV". */
void qh_judge_cause(const char *text, char *buf, size_t size);

/* Runs the call again with the output pre-filled with `fill` (the check for unwritten
 * elements); 0 with `again` set, or -1 when the harness could not (again->problem says why). */
typedef int qh_rerun_fn(void *ctx, unsigned char fill, qh_invocation *again);

typedef struct qh_judge_opts {
    int verbose;             /* keep every kept mismatch in the detail, say a rejection's words */
    int text;                /* make the detail lines (mismatch explanations); 0: summary only */
    unsigned char fill;      /* the fill the first run's output had (0: 0xa5, qh_invoke's) */
    qh_rerun_fn *rerun;      /* the unwritten-element check: NULL: not made */
    void *rerun_ctx;
} qh_judge_opts;

/* 1 when the expectation can judge an answer (the reference answers OK or INVALID_ARGUMENT);
 * else 0 with v set (SKIPPED reference-cannot-judge, or ERROR reference-error). */
int qh_judge_expectation(const qh_expectation *e, qh_verdict *v);

/* The comparison of an output with the expectation, under the operator's rule: start (the
 * shapes), then each part of the expectation as qh_expect_scan hands it over. */
void qh_judge_compare_start(const qh_expectation *e, const qmm_tensor *got, qh_compare *r);
void qh_judge_compare_part(const qh_expectation *e, const void *exact, const void *alt,
                           const qmm_tensor *got, int64_t first, int64_t count, qh_compare *r);
/* The whole comparison, for an expectation computed whole (qh_expect). */
void qh_judge_compare(const qh_expectation *e, const qmm_tensor *got, qh_compare *r);

/* THE JUDGE. The answer `inv` to e's call against the expectation `e` (usable:
 * qh_judge_expectation). `vs` is inv's output already compared with e (the scan of a
 * planned expectation); NULL: compared here, e computed whole. v must be initialised; it is
 * set: status, reason, counts, mismatches and text. */
void qh_judge(const qh_expectation *e, const qh_invocation *inv, const qh_compare *vs,
              const qh_judge_opts *o, qh_verdict *v);

/* qh_judge with no options for an expectation computed whole: the status it gives the answer
 * (diff's "the reference agrees with", which side it blames, its tolerance), and whether that
 * is PASSED (fingerprint's profile matches). */
qh_case_status qh_judge_status(const qh_expectation *e, const qh_invocation *inv);
int qh_judge_passes(const qh_expectation *e, const qh_invocation *inv);

/* The call run again (`who`: "a second run", or a variant's spec) against the first answer:
 * status and every output byte must be the same. Sets v (FAILED not-deterministic) and returns
 * 1 when they differ. */
int qh_judge_again(const qh_invocation *first, const qh_invocation *again, const char *who,
                   qh_verdict *v);

/* A harness failure that stopped a call (or a second run) from happening: ERROR not-run with
 * the cleaned problem after `prefix`. */
void qh_judge_not_run(const char *prefix, const char *problem, size_t max, qh_verdict *v);

/* The vector's stored output against the reference (its profile's expectation e; `cmp` the
 * stored output compared with it). 1 when the vector is mistrusted, with why. */
int qh_judge_vector(qmm_status_code meta_expect, int n_outputs, const qmm_tensor *stored,
                    const qh_expectation *e, const qh_compare *cmp, qh_sb *why);
/* A mistrusted vector turns a pass into MISTRUSTED; any other verdict keeps its status and
 * notes the mistrust in the detail. */
void qh_judge_mistrust(const qh_sb *why, qh_verdict *v);

/* The detail lines for v's mismatches (at most `limit`): coordinate, expected, got, the exact
 * accumulator and scaled value, and the profiles that would have produced `got`. */
void qh_judge_explain(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                      const qh_verdict *v, int32_t limit);

/* As qh_judge_explain, from a comparison's kept mismatches (the fuzz target's report, tests). */
void qh_explain_mismatches(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                           const qh_compare *cmp, int32_t limit);

#endif /* QMM_HARNESS_JUDGE_H */
