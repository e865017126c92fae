/* harness/run/fingerprint.h — which semantics profile does a backend behave like (docs/semantics.md
 * §5)?
 *
 * A small built-in suite of problems on which the profiles disagree (ties with odd and even
 * zero points, float32 near-ties, accumulators past 2^24 and past int32, saturation, float16
 * scales, Orion's Q16.16 truncation and its error rules) is run through the backend, and each
 * profile is scored on how many cases the backend's answers equal that profile's.
 */
#ifndef QMM_HARNESS_FINGERPRINT_H
#define QMM_HARNESS_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/call.h"
#include "harness/invoke/backends.h"
#include "harness/invoke/invoke.h"
#include "harness/judge/expect.h"
#include "qmm/qmm.h"
#include "reference/qmm_reference.h"


/* A set of profiles: bit p for profile p (reference/qmm_reference.h, QMM_PROFILE_MAX). */
typedef uint64_t qh_profile_set;
#define QH_PROFILE_BIT(p) ((qh_profile_set)1 << (p))
_Static_assert(QMM_PROFILE_MAX <= 64, "qh_profile_set holds one bit per profile");

/* One problem; its input tensors point into `bufs`, which the case owns. y carries dtype
 * and shape, data NULL. */
typedef struct qh_fp_case {
    const char *name; /* stable: "tie-odd-zp-u8" */
    const char *why;  /* what it tells apart */
    qh_owned_call oc; /* the call and the buffers it owns (harness/base/call.h) */
} qh_fp_case;

typedef struct qh_fp_suite {
    qh_fp_case *cases;
    size_t count;
    /* every profile's expectation of every case, computed once when the suite is built (they
     * do not depend on the backend): expect[i * n_profiles + p] */
    qh_expectation *expect;
    int n_profiles;
} qh_fp_suite;

/* Builds the suite; deterministic (no seed: every case is hand-constructed). 0, or -1 when
 * memory runs out. */
int qh_fp_suite_build(qh_fp_suite *s);
void qh_fp_suite_free(qh_fp_suite *s);

typedef struct qh_fp_case_result {
    qmm_status_code code;        /* the backend's answer (QH_RETURNED calls only) */
    int returned;                /* 0: the call crashed, hung or broke a memory rule */
    int skipped;                 /* the backend answered UNSUPPORTED: no profile is scored */
    qh_profile_set applicable;   /* profile p defines this case (not UNSUPPORTED) */
    qh_profile_set matched;      /* the backend's answer is profile p's */
    char problem[256];           /* the backend's message, or why the call did not return */
    int unstable;                /* asked again, it answered otherwise (status or a byte):
                                    it matches no profile (each is one deterministic answer) */
    int once;                    /* one ask returned, the other did not: scored on the one */
    char again[256];             /* ... how the second answer differed, or why the other ask
                                    did not return */
} qh_fp_case_result;

typedef struct qh_fp_score {
    int64_t matched, total;
} qh_fp_score;

typedef struct qh_fp_result {
    size_t n_cases;
    qh_fp_case_result *cases;    /* owned, one per suite case */
    int64_t skipped;
    qh_fp_score score[QMM_PROFILE_MAX];
    qh_profile_set matching_all; /* total > 0 and matched == total */
    int64_t unstable;            /* cases answered otherwise when asked again */
    int64_t did_not_return;      /* cases whose calls crashed, hung or broke the protocol
                                    both times: no evidence of any semantics, not scored */
    int64_t returned_once;       /* cases answered on one ask only: scored on that answer */
    int closest;                 /* the best matched/total when none matches all; -1: none */
} qh_fp_result;

/* Runs every case through the backend, twice (a backend whose answers change from call to
 * call is not any profile: the two answers must be the same, or the case is `unstable` and
 * matches nothing), and scores each profile:
 * - a case the backend answers UNSUPPORTED, or whose calls do not return (crashed, hung,
 *   broke the protocol: counted in did_not_return), is skipped for every profile;
 * - a case a profile answers UNSUPPORTED for (orion-fp16x16 on uint8) is not in its total;
 * - otherwise it matches when both return OK with equal outputs (spec also accepts the
 *   int32-wrapped result where its accumulator overflows), or both reject the input with
 *   INVALID_ARGUMENT.
 * 0, or -1 with `err` when the harness itself fails (memory). */
int qh_fingerprint_run(qh_backend *b, const qh_fp_suite *s, const qh_invoke_opts *o,
                       qh_fp_result *r, char *err, size_t err_size);
void qh_fp_result_free(qh_fp_result *r);

/* The profiles of `set` less the combinations (REQ+ACC) whose requantization under the default
 * accumulation (qmm_profile_base) is in `set` too: where both match, the accumulation model
 * made no difference, and the plain profile is the simpler explanation. */
qh_profile_set qh_profiles_simplest(qh_profile_set set);

/* Do two expectations of the same call answer differently (status, or output where both are
 * OK)? Never where either profile leaves the call undefined (UNSUPPORTED). */
int qh_fp_expectations_differ(const qh_expectation *x, const qh_expectation *y);

/* The verdict: the one profile matching every case ("ort-fp32"), several joined by ','
 * when the suite cannot tell them apart, or "none"; of matching_all, only
 * qh_profiles_simplest's. */
void qh_fp_verdict(const qh_fp_result *r, char *buf, size_t size);

/* A profile is named only when it explains every judged case and at least this many of the
 * judged cases exclude some other candidate (docs/profiles.md, "Fingerprint"). */
#define QH_FP_MIN_DECIDING 3

typedef enum qh_fp_kind {
    QH_FP_PROFILE,      /* one profile some implementation computes explains the backend */
    QH_FP_WRONG,        /* one wrong rule (qmm_profile_wrong) explains it */
    QH_FP_NONE,         /* no profile explains every judged case */
    QH_FP_INCONCLUSIVE, /* several do, or too few cases decided, or none was judged */
    QH_FP_UNSTABLE,     /* some case was answered otherwise when asked again: no profile
                           (each is one deterministic answer) can explain the backend */
} qh_fp_kind;

/* The command's exit status for each kind (docs/profiles.md, "Fingerprint"). */
#define QH_FP_EXIT_INCONCLUSIVE 4
#define QH_FP_EXIT_NOT_A_PROFILE 5

typedef struct qh_fp_decision {
    qh_fp_kind kind;
    qh_profile_set left;  /* qh_profiles_simplest(matching_all) */
    int64_t judged;       /* cases the backend answered (not skipped) */
    int64_t deciding;     /* judged cases on which some candidate did not match */
    /* INCONCLUSIVE: the forms of the skipped cases on which the profiles left differ, each
     * "QLinearMatMul u8*s8->u8, 2-D, per-tensor, float32 scales", joined by "; " */
    char forms[1024];
} qh_fp_decision;

void qh_fp_decide(const qh_fp_suite *s, const qh_fp_result *r, qh_fp_decision *d);

#endif /* QMM_HARNESS_FINGERPRINT_H */
