/* harness/run/expect.h — what a call must produce: the reference's verdict under a semantics
 * profile, and the explanation of a mismatch. */
#ifndef QMM_HARNESS_EXPECT_H
#define QMM_HARNESS_EXPECT_H

#include <stdio.h>

#include "harness/run/compare.h"
#include "harness/report/strbuf.h"
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

/* `qmmcheck list --profiles`: the requantization and accumulation models, every profile one a
 * line (its name first, for scripts), the names kept from before profiles composed, and the
 * combinations refused with the reason. */
void qh_print_profiles(FILE *out);

/* Computes the expectation for `call` (its y must carry dtype and shape; its data is not
 * used). Returns 0; -1 only when memory runs out or the profile is unknown, with the reason in
 * e->message. Invalid calls are not errors: e->code says INVALID_ARGUMENT (also where the
 * profile itself rejects the input, as orion-fp16x16 does), UNSUPPORTED where the profile
 * does not define the call. Under a profile other than spec, overflow is 0 and alt is exact:
 * the profile already says whether the accumulator wraps. */
int qh_expect(const qmm_call *call, const char *profile, qh_expectation *e);
void qh_expectation_free(qh_expectation *e);

/* One detail line per kept mismatch (at most `limit`): coordinate, expected, got, the exact
 * accumulator, the exact scaled value, and the profiles that would have produced `got`. */
void qh_explain_mismatches(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                           const qh_compare *cmp, int32_t limit);

/* "y[1,2]" for row-major index i of y. */
void qh_sb_coord(qh_sb *b, const qmm_tensor *y, int64_t index);

/* Allocates t->data for its dtype and shape (at least one byte) filled with `fill`. */
int qh_alloc_tensor(qmm_tensor *t, unsigned char fill);

#endif /* QMM_HARNESS_EXPECT_H */
