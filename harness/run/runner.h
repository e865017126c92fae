/* harness/run/runner.h — judging cases against backends (docs/architecture.md §2). */
#ifndef QMM_HARNESS_RUNNER_H
#define QMM_HARNESS_RUNNER_H

#include <regex.h>
#include <stdio.h>

#include "harness/invoke/backends.h"
#include "harness/io/case.h"
#include "harness/judge/judge.h"
#include "harness/invoke/invoke.h"

typedef struct qh_result {
    int64_t number;        /* 1-based position in the run */
    char *name;
    char *path;            /* the case directory */
    int data_set;
    const char *backend;   /* the spec, owned by the qh_backend */
    const char *backend_name; /* the backend table's name (owned by the backend); NULL when
                               * not known here (an isolated backend: its table is in the
                               * worker) */
    const char *cpu;       /* --cpu: the CPU class it was judged under (harness/invoke/cpu.h,
                            * static); NULL when no --cpu was given */
    qh_case_status status;
    qh_reason reason;      /* why (harness/judge/judge.h) */
    char *summary;         /* one line: "errors:3 total:12", a reason; may be NULL */
    char *detail;          /* several lines; NULL when passed */
    char *first_mismatch;  /* FAILED on values: "[0,1] (index 1): got 5, expected 6"; else NULL */
    char *repro;           /* the `__REPRO:` command that judges this row again (shell-quoted: the
                            * case directory's own bytes, where name and path in a report are
                            * cleaned); NULL for a row that is no case's (<xfail>, <close>) */
    int64_t errors, total;
    double seconds;
    /* for the reports (docs/formats.md): the case's qmm.meta tags and description, y's shape
     * (when y_known), the verdict's kept mismatches, and where every mismatch lies
     * (qh_eval_opts.marks, reason values only); each NULL / 0 when none */
    char (*tags)[QH_META_TAG_LEN];
    int32_t n_tags;
    char *description;
    int y_known;
    int32_t y_rank;
    int64_t y_dims[QMM_MAX_RANK];
    int32_t n_mismatches;
    qh_mismatch *mismatches;
    qh_marks *marks;
} qh_result;

void qh_result_free(qh_result *r);

typedef struct qh_eval_opts {
    int verbose;          /* keep more mismatches and describe the inputs (repro) */
    const char *profile;  /* semantics profile the backend is judged under; NULL = spec */
    qh_invoke_opts invoke;
    int determinism;      /* run again, and on each variant: outputs must be bit-identical */
    qh_backend *variants; /* the same backend with other options (threads=2, isa=...) */
    int32_t n_variants;
    int marks;            /* keep where a wrong answer's mismatches lie (qh_result.marks) */
} qh_eval_opts;

/* The most backends one case is judged against at once. */
#define QH_EVAL_MAX 64

/* Judges one case against n backends (b[j] under o[j], into res[j]; n <= QH_EVAL_MAX): the
 * case is loaded once and its expectation computed once for the backends judged under the
 * same profile, compared with every answer in one pass. Never fails: problems become the
 * ERROR status. */
void qh_eval_cases(const qh_case_ref *ref, int n, qh_backend *b, const qh_eval_opts *o,
                   qh_result *res);
/* qh_eval_cases with one backend. */
void qh_eval_case(const qh_case_ref *ref, qh_backend *b, const qh_eval_opts *o, qh_result *res);

/* Judges a case already in memory (reduce's candidates, loaded or built: c->call's y carries
 * dtype and, when c->y_shape_known, shape; no stored output needed) as qh_eval_case does,
 * into v (initialised). The call's y shape may be lent from a stored output. */
void qh_judge_case(qh_case *c, qh_backend *b, const qh_eval_opts *o, qh_verdict *v);

/* Expected-failure list (docs/formats.md, "Expected-failure lists"): one entry a line,
 * `CASE-GLOB [status=S[,S...]] [backend=GLOB] [# comment]`, '#' lines are comments. */
typedef struct qh_xfail_entry {
    char *pattern;     /* fnmatch(3) over the case name */
    char *backend;     /* fnmatch(3) over the backend's name; NULL: every backend */
    unsigned statuses; /* bit (1u << status) per status it expects: FAILED (default), CRASHED,
                        * TIMEOUT, UNCHECKED; PASSED beside them: not deterministic */
    int line;
    int64_t matched;   /* rows whose name and backend it matched */
    int64_t waived;    /* rows whose status it holds (the first such entry made them XFAIL) */
    int64_t xpassed;   /* rows it made XPASS (already failures under --xfail-strict) */
} qh_xfail_entry;

typedef struct qh_xfail {
    char *path;
    int32_t count;
    qh_xfail_entry *entries;
} qh_xfail;

/* Reads a list; -1 with err naming FILE:LINE for an entry it cannot read. */
int qh_xfail_read(const char *path, qh_xfail *x, qh_error *err);
/* Applies the list to one judged row of the backend named `backend_name` (NULL when not known,
 * as for an isolated backend; `backend=` also matches the row's spec): a matching entry
 * whose statuses hold the row's status makes it XFAIL; a matching PASSED row becomes XPASS;
 * any other status stays, with a detail line saying what the entry expected. Counts the
 * entries' matches. */
void qh_xfail_apply(qh_xfail *x, const char *backend_name, qh_result *res);
/* Why entry i is stale (it waived no row and made none XPASS), written into buf; 0 when it
 * is not stale. */
int qh_xfail_stale(const qh_xfail *x, int32_t i, char *buf, size_t size);
void qh_xfail_free(qh_xfail *x);

/* The `__REPRO:` command for a case, shell-quoted (profile NULL or "spec": not named), with
 * the isolation options that judged it (iso NULL: none; qh_repro_isolation). Returns
 * malloc'd text. */
char *qh_repro_command(const qh_case_ref *ref, const char *backend_spec, const char *profile,
                       const qh_isolation *iso);

/* The isolation options a `__REPRO:` line carries so that it judges as the run did: each one
 * that was not left at its default (--isolate or --no-isolate, --timeout, --start-timeout,
 * --memory-limit), as given (the --cpu scaling is applied again by the command that reads
 * them), each with a leading space. A TIMEOUT under --timeout 0.5 or a CRASHED under
 * --memory-limit 64M reproduces only with them. */
void qh_repro_isolation(qh_sb *b, const qh_isolation *iso);

#endif /* QMM_HARNESS_RUNNER_H */
