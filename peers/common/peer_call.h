/* peers/common/peer_call.h — what every peer needs before it can hand a call to its library:
 * the operator's shape rules, the input rules an ONNX front end enforces, and the parameters as
 * plain numbers.
 *
 * A library has no idea of ONNX validity (oneDNN happily multiplies by a negative scale), so the
 * peer validates like the front end that would sit in front of the library, then maps what the
 * library can express and answers UNSUPPORTED for the rest. Built from include/qmm only.
 */
#ifndef QMM_PEER_CALL_H
#define QMM_PEER_CALL_H

#include <qmm/qmm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The multiplication after numpy's 1-D promotion, every operand at y's rank (>= 2). */
typedef struct peer_geom {
    int rank;
    int64_t a[QMM_MAX_RANK], b[QMM_MAX_RANK], y[QMM_MAX_RANK];
    int64_t m, k, n;
    int64_t batch;           /* product of y's batch dimensions */
    int a_batched, b_batched; /* the operand's own batch product is > 1 */
} peer_geom;

/* docs/semantics.md §1 and the type/shape rules of §2.5 and §3 for a, b and y (y must have
 * dtype `y_dtype`). INVALID_ARGUMENT with the rule's message, QMM_OK with *g filled. */
qmm_status_code peer_geometry(const qmm_tensor *a, const qmm_tensor *b, const qmm_tensor *y,
                              int32_t y_dtype, peer_geom *g, qmm_status *st);

/* The shape of one quantization parameter as the libraries can take it. */
typedef enum peer_form {
    PEER_ABSENT = 0, /* optional zero point not given */
    PEER_TENSOR,     /* one element */
    PEER_COLUMN,     /* N elements along the last axis, every other dimension 1 */
    PEER_OTHER,      /* per row, per batch, ...: valid or not, no library here maps it */
} peer_form;

peer_form peer_form_of(const qmm_tensor *p, int64_t n);

/* QLinearMatMul's rules (§2.5) that the geometry does not cover: opset, operand, scale and
 * zero-point types, equal scale/zero-point shapes, no parameter of more dimensions than its
 * tensor, scales finite and > 0. */
qmm_status_code peer_check_qlinear(const qmm_qlinearmatmul *q, qmm_status *st);

/* The checks of a peer that maps QLinearMatMul only: `forms` answers UNSUPPORTED for what the
 * library cannot express, given a well-formed call and its geometry. */
typedef qmm_status_code (*peer_forms_fn)(const qmm_qlinearmatmul *q, const peer_geom *g,
                                         qmm_status *st);

/* Its query: an invalid call is admitted (the operator function says why it is invalid), a
 * valid one is what `forms` says. */
qmm_status_code peer_query_qlinear(const qmm_qlinearmatmul *q, peer_forms_fn forms,
                                   qmm_status *st);

/* Its operator function's first step: peer_check_qlinear, the geometry (into *g), then `forms`;
 * QMM_OK when the library can compute the call. */
qmm_status_code peer_admit_qlinear(const qmm_qlinearmatmul *q, peer_forms_fn forms, peer_geom *g,
                                   qmm_status *st);

/* Its table: allocated, named, with `query` and `qlinearmatmul` and a close that frees it;
 * NULL (OUT_OF_MEMORY in *st) when it cannot be allocated. */
typedef qmm_status_code (*peer_query_fn)(const qmm_backend *, const qmm_call *, qmm_status *);
typedef qmm_status_code (*peer_qlinear_fn)(const qmm_backend *, const qmm_qlinearmatmul *,
                                           qmm_status *);
qmm_backend *peer_qlinear_table(const char *name, const char *description, peer_query_fn query,
                                peer_qlinear_fn qlinearmatmul, qmm_status *st);

/* MatMulInteger's: operand types, zero-point types and shapes (§3). */
qmm_status_code peer_check_integer(const qmm_matmulinteger *c, qmm_status *st);

/* Scale element i as a float: float16 and bfloat16 widen exactly. */
float peer_scale(const qmm_tensor *s, int64_t i);

/* Zero point element i (0 for an absent one); operand element i. */
int32_t peer_q8(const qmm_tensor *t, int64_t i);

/* For batch matrix `yb` of y (0 .. g->batch-1), the matrix of the operand whose promoted dims
 * are `dims` (g->a or g->b) it reads, after broadcasting. */
int64_t peer_batch_source(const peer_geom *g, const int64_t *dims, int64_t yb);

/* Element i of a parameter of form PEER_TENSOR or PEER_COLUMN at column j. */
int64_t peer_param_index(peer_form f, int64_t j);

/* The entry point's first duty: the harness's ABI is ours (else UNSUPPORTED naming both) and
 * the options are empty (the peers take none; else INVALID_ARGUMENT). 1 when both hold. */
int peer_open_check(const char *name, uint32_t harness_abi, const char *options, qmm_status *st);

#ifdef __cplusplus
}
#endif

#endif /* QMM_PEER_CALL_H */
