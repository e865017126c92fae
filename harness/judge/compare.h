/* harness/judge/compare.h — element-wise comparison of an output against the reference. */
#ifndef QMM_HARNESS_COMPARE_H
#define QMM_HARNESS_COMPARE_H

#include <stdint.h>

#include "harness/base/tensor.h"
#include "qmm/qmm.h"

#define QH_COMPARE_KEEP 16 /* mismatching indices kept for the detail */

/* Where an output's mismatches lie, for a picture of y (the HTML report, docs/formats.md):
 * y's last dimension as columns, the one before as rows, the leading ones as batches (rank 1:
 * one row). Sides longer than QH_MARKS_SIDE are scaled down (a cell then covers step_r x
 * step_c elements and is set when any of them mismatches); only the first QH_MARKS_BATCHES
 * batches are kept. */
#define QH_MARKS_SIDE 128
#define QH_MARKS_BATCHES 8
typedef struct qh_marks {
    int64_t batches, rows, cols;  /* y's */
    int64_t step_r, step_c;       /* elements a cell covers along rows and columns */
    int32_t grid_b, grid_r, grid_c; /* the cells kept: batches, rows, columns */
    int64_t outside;              /* mismatches in batches past grid_b */
    unsigned char *bits;          /* one bit per cell, batch by batch, row-major */
} qh_marks;

/* The grid for an output shaped as y (no cell set); -1 when out of memory. */
int qh_marks_init(qh_marks *m, const qmm_tensor *y);
void qh_marks_set(qh_marks *m, int64_t index);
int qh_marks_get(const qh_marks *m, int32_t b, int32_t r, int32_t c);
void qh_marks_free(qh_marks *m);
/* Where the operator's rule accepts an interval (QMM_COMPARE_ACCEPT): what one element was
 * judged against, the model nearest to the answer (docs/semantics.md §8.4). */
typedef struct qh_bounded {
    double lo, hi;       /* the accepted values of y's type, lo <= y <= hi (both NaN: a NaN) */
    double exact;        /* the model's exact value, rounded to a double */
    double bound;        /* its error bound (0: determined exactly; +inf: none usable) */
    double units;        /* |got - exact| / bound: the error in units of the bound */
    const char *model;   /* "dequantize-first", "exact-acc", ... (static) */
} qh_bounded;

typedef struct qh_compare {
    int64_t total;                    /* elements compared */
    int64_t errors;                   /* elements that match neither accepted value */
    int32_t n_kept;
    int64_t kept[QH_COMPARE_KEEP];    /* the first mismatching indices, ascending */
    int64_t expected[QH_COMPARE_KEEP]; /* the expected value at each (qh_tensor_int's form) */
    int shape_differs;                /* dtype or shape differ: nothing element-wise */
    qh_marks *marks;                  /* not NULL: every mismatch marked here (set after
                                       * qh_compare_start, which clears it) */
    /* the accept rule's (QMM_COMPARE_ACCEPT; zero under the exact rule) */
    int bounded;                      /* kept_bound below is set for each kept index */
    qh_bounded kept_bound[QH_COMPARE_KEEP];
    int64_t inconclusive;             /* elements only an inconclusive model accepts */
    int64_t first_inconclusive;       /* the first one's index (when inconclusive > 0) */
    const char *inconclusive_model;   /* ... and the model that accepts it */
    double worst;                     /* an accepted element's largest error in units of its
                                       * bound (0 when none has a bound) ... */
    int64_t worst_index;              /* ... at this index */
    qmm_status_code failed;           /* not QMM_OK: the accepted values could not be computed
                                       * (memory, an interruption): why in failed_why */
    char failed_why[QMM_STATUS_MESSAGE_MAX];
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
