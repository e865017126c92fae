/* harness/report/matrix.h — a run under several CPU classes (`--cpu native,x86-64-v3,...`) as a
 * matrix: one row per case and backend, one column per class, each cell the row's status under
 * that class. Printed at the end of `qmmcheck run` and written into the JSON report
 * (docs/formats.md). Built from the result rows alone, so both say the same. */
#ifndef QMM_HARNESS_MATRIX_H
#define QMM_HARNESS_MATRIX_H

#include <stddef.h>
#include <stdio.h>

#include "harness/base/strbuf.h"
#include "harness/run/runner.h"

#define QH_MATRIX_MAX_CLASSES 8

typedef struct qh_matrix_row {
    const qh_result *first;                        /* its name, path, data set, backend */
    const qh_result *cell[QH_MATRIX_MAX_CLASSES];  /* NULL: not judged under that class */
    const qh_result *backend_rank;                 /* its backend's first result: the order */
} qh_matrix_row;

typedef struct qh_matrix {
    const char *classes[QH_MATRIX_MAX_CLASSES];    /* in the order the rows first name them */
    int n_classes;
    qh_matrix_row *rows;                           /* in the order of their first result */
    size_t n_rows;
} qh_matrix;

/* Groups the results judged under a --cpu class (qh_result.cpu set) by backend, case
 * directory, data set and name. 0, or -1 when out of memory. A run without --cpu gives an
 * empty matrix. */
int qh_matrix_build(const qh_result *r, size_t n, qh_matrix *m);
void qh_matrix_free(qh_matrix *m);

/* The table for the terminal, when there are two classes or more: "MATRIX: ..." then one
 * indented line per row (names cleaned); with `quiet`, only the rows not PASSED everywhere. */
void qh_matrix_print(const qh_matrix *m, int quiet, FILE *f);

/* `"cpu_classes": [...], "matrix": [...]` (no leading or trailing comma), when there is a
 * class; nothing otherwise. */
void qh_matrix_json(const qh_matrix *m, qh_sb *b);

#endif /* QMM_HARNESS_MATRIX_H */
