/* harness/base/call.h — an operator call that owns the buffers its tensors point into: the one
 * type that a generated problem (gen/problem.h, qh_problem), a fingerprint case
 * (run/fingerprint.h, qh_fp_case) and a fuzz input (fuzz/decode.h, qh_fz_case) are made of. */
#ifndef QMM_HARNESS_CALL_H
#define QMM_HARNESS_CALL_H

#include <stddef.h>

#include "qmm/qmm.h"

#define QH_CALL_MAX_BUFS 16

typedef struct qh_owned_call {
    qmm_call call;     /* its tensors point into `bufs` (y: dtype and shape only) */
    int y_shape_known; /* y's shape is set: the operands fit */
    int n_bufs;
    void *bufs[QH_CALL_MAX_BUFS];
} qh_owned_call;

/* A zeroed buffer of `bytes` (at least one byte) that o owns; NULL when memory or o's slots
 * run out. */
void *qh_owned_call_alloc(qh_owned_call *o, size_t bytes);
/* Frees every buffer o owns (the call's tensors then point nowhere) and empties it. */
void qh_owned_call_free(qh_owned_call *o);

#endif /* QMM_HARNESS_CALL_H */
