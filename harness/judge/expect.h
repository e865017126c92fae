/* harness/judge/expect.h — what a call must produce: the reference's verdict under a semantics
 * profile, and the explanation of a mismatch. */
#ifndef QMM_HARNESS_EXPECT_H
#define QMM_HARNESS_EXPECT_H

#include <stdio.h>

#include "harness/judge/compare.h"
#include "harness/base/strbuf.h"
#include "harness/base/tensor.h"
#include "qmm/qmm.h"

#define QH_DEFAULT_PROFILE "spec"

typedef struct qh_expectation {
    qmm_status_code code;                    /* the reference's answer (OK, INVALID_ARGUMENT, ...) */
    char message[QMM_STATUS_MESSAGE_MAX];
    char profile[64];
    qmm_call call;                           /* the call, with y writing into `exact` */
    qmm_tensor exact;                        /* owned: the expected output */
    qmm_tensor alt;                          /* the overflow-permitted alternative: owned when
                                              * overflow, else exact's own buffer */
    int overflow;                            /* some element's acc does not fit int32 */
} qh_expectation;

/* 1 when `profile` names a semantics profile the reference implements (the reference's profile
 * table is the only list: qmm_profile_count, qmm_profile_name). */
int qh_profile_known(const char *profile);
/* 0 when `profile` names a profile; else 1 with msg the usage error's text: "--profile NAME:
 * unknown semantics profile (known: ...)", or for a combination that is refused, why
 * ("--profile orion-fp16x16+sat32: ..."), as `list --profiles` says it. */
int qh_profile_usage(const char *profile, char *msg, size_t size);

/* `qmmcheck list --profiles`: the requantization and accumulation models, every profile one a
 * line (its name first, for scripts), the names kept from before profiles composed, and the
 * combinations refused with the reason. */
void qh_print_profiles(FILE *out);

/* What the harness computes itself for one call is bounded: the reference's work, counted
 * as QH_WORK_PER_ELEMENT units per output element plus one per multiply-add (elements x
 * (K + QH_WORK_PER_ELEMENT): about 10 ns a unit, 2^34 units about three minutes), may not
 * exceed QH_MAX_WORK. An empty output is no work, however many batches its shape has.
 * docs/formats.md, "Limits". */
#define QH_MAX_WORK ((int64_t)1 << 34)
#define QH_WORK_PER_ELEMENT 64

/* The reference's work for `call` in those units (0 for an invalid call; INT64_MAX where it
 * does not fit). */
int64_t qh_expect_work(const qmm_call *call);

/* 0 when the reference's work for `call` is within QH_MAX_WORK (or the call is invalid: the
 * reference rejects it before any work); otherwise -1 with a message naming the limit. */
int qh_expect_work_check(const qmm_call *call, char *msg, size_t size);

/* Computes the expectation for `call` (its y must carry dtype and shape; its data is not
 * used). Returns 0; -1 when memory runs out, the profile is unknown or the work exceeds
 * QH_MAX_WORK, with the reason in e->message. Invalid calls are not errors: e->code says INVALID_ARGUMENT (also where the
 * profile itself rejects the input, as orion-fp16x16 does), UNSUPPORTED where the profile
 * does not define the call. Under a profile other than spec, overflow is 0 and alt is exact:
 * the profile already says whether the accumulator wraps. */
int qh_expect(const qmm_call *call, const char *profile, qh_expectation *e);
void qh_expectation_free(qh_expectation *e);

/* The expectation without its output, to be computed a part at a time (qh_expect_scan) so that
 * a comparison never holds the whole of it: e->code and e->message are what the reference
 * answers as far as validation and the profile's checks tell, e->exact carries y's dtype and
 * shape and no data (e->call's y points at a placeholder, for qmm_ref_explain). Returns 0;
 * -1 as qh_expect. */
int qh_expect_plan(const qmm_call *call, const char *profile, qh_expectation *e);

/* One part of the expectation: elements [first, first + count) of y, in buffers of y's dtype
 * holding them from index 0; `alt` the overflow-permitted values (NULL where no element of the
 * part overflows). */
typedef void qh_expect_part_fn(void *ctx, int64_t first, int64_t count, const void *exact,
                               const void *alt);

/* Computes e (from qh_expect_plan, code QMM_OK) part by part, in ascending order, calling
 * `fn` with each: parts of about QH_EXPECT_PART_BYTES (part_elements when > 0), whole matrices
 * where the layout asks for it (qmm_ref_part_unit). An answer that only the data gives (a
 * profile's refusal of an element, running out of memory, the stop flag) ends the scan with
 * e->code and e->message set to it. e->overflow says whether an element overflowed. */
#define QH_EXPECT_PART_BYTES ((int64_t)16 << 20)
void qh_expect_scan(qh_expectation *e, int64_t part_elements, qh_expect_part_fn *fn, void *ctx);

/* Only the parts holding the output indices `at` (n of them, ascending): each the smallest
 * part the layout allows (one element; a whole matrix where qmm_ref_part_unit says so),
 * computed and passed to `fn` as qh_expect_scan does, ascending, each once. For a question about
 * a few elements of a large output (which profiles give them: harness/judge/judge.c).
 * qh_expect_parts_at: those parts' first indices into first[] (room for n), their count. */
int64_t qh_expect_parts_at(const qmm_call *call, const int64_t *at, int n, int64_t *first);
void qh_expect_scan_at(qh_expectation *e, const int64_t *at, int n, qh_expect_part_fn *fn,
                       void *ctx);

/* How many expectations were planned or computed for a call (qh_expect, qh_expect_plan) in
 * this process: a test and `QMM_DEBUG_EXPECT=1 qmmcheck run` (which prints it) show that a
 * case's expectation is computed once whatever the number of backends. */
extern unsigned long long qh_expectations_computed;


#endif /* QMM_HARNESS_EXPECT_H */
