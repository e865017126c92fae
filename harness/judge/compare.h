/* harness/judge/compare.h — element-wise comparison of an output against the reference. */
#ifndef QMM_HARNESS_COMPARE_H
#define QMM_HARNESS_COMPARE_H

#include <stdint.h>

#include "harness/base/tensor.h"
#include "qmm/qmm.h"

#define QH_COMPARE_KEEP 16 /* mismatching indices kept for the detail */

typedef struct qh_compare {
    int64_t total;                    /* elements compared */
    int64_t errors;                   /* elements that match neither accepted value */
    int32_t n_kept;
    int64_t kept[QH_COMPARE_KEEP];    /* the first mismatching indices, ascending */
    int64_t expected[QH_COMPARE_KEEP]; /* the expected value at each (qh_tensor_int's form) */
    int shape_differs;                /* dtype or shape differ: nothing element-wise */
} qh_compare;

/* Element i of `got` is accepted when it equals exact[i], or alt[i] when alt is not NULL (the
 * overflow-permitted result). Elements are compared as bytes (uint8, int8, int32, float8). */
void qh_compare_outputs(const qmm_tensor *exact, const qmm_tensor *alt, const qmm_tensor *got,
                        qh_compare *r);

/* The same comparison a part at a time, for an expectation computed in parts
 * (qh_expect_scan): qh_compare_start checks the shapes (`exact` carries y's dtype and shape;
 * its data is not read), then each qh_compare_part compares got's elements
 * [first, first + count) with the part's buffers, which hold those elements from index 0
 * (`alt` NULL: none). Parts come in ascending order. Nothing is compared once the shapes
 * differ. */
void qh_compare_start(const qmm_tensor *exact, const qmm_tensor *got, qh_compare *r);
void qh_compare_part(const void *exact, const void *alt, const qmm_tensor *got, int64_t first,
                     int64_t count, qh_compare *r);


#endif /* QMM_HARNESS_COMPARE_H */
