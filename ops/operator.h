/* ops/operator.h — one descriptor per operator, in one table.
 *
 * What an operator looks like on the outside (its ONNX domain and op_type, the opsets it is
 * defined for, its inputs in node order with their ONNX names, which are optional, its output,
 * its attributes, which element types each input may have, its validator) is written here
 * once. Every layer that needs to know it (case loading, invocation in and out of process,
 * repro printing, the random problems, the fuzz encoders, the corpus tool) walks this table
 * instead of switching on qmm_op_kind. Where a field sits in the call struct is an offset into
 * qmm_call (include/qmm/ops.h), so "tensor i of this call" needs no per-operator code.
 *
 * Input names are the ONNX spellings: the ai.onnx schemas for QLinearMatMul ("a", "a_scale",
 * ...) and MatMulInteger ("A", "B", "a_zero_point", ...), ONNX Runtime's contrib schema for
 * QOrderedMatMul ("A", "scale_A", "B", ...; vectors/qordered/ use the same).
 */
#ifndef QMM_OPS_OPERATOR_H
#define QMM_OPS_OPERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "qmm/qmm.h"

#define QMM_MAX_OP_INPUTS 8
#define QMM_MAX_OP_ATTRS 5
/* An upper bound on the qmm_op_kind values, for arrays indexed by kind (a profile's per-operator
 * arithmetic, reference/profiles.c); tests/test_operator.c checks every row against it. */
#define QMM_MAX_OP_KINDS 16

/* One node input. */
typedef struct qmm_op_input {
    const char *name;  /* the ONNX name */
    size_t offset;     /* of its qmm_tensor in qmm_call */
    int optional;      /* may be absent ("" in the node, QMM_DTYPE_UNDEFINED in the call) */
} qmm_op_input;

/* One INT attribute, stored as an int32_t in the call struct. */
typedef struct qmm_op_attr {
    const char *name;  /* the ONNX name */
    size_t offset;     /* of its int32_t in qmm_call */
    int required;      /* a node without it is malformed */
    int32_t def;       /* the value when absent and not required */
    int32_t lo, hi;    /* the values the operator defines; others load, and the validator
                        * rejects them (so that a bad value can be a vector) */
    const char *what;  /* what a value means, for messages: "a cublasLt order 0..4" */
} qmm_op_attr;

/* How the harness's judge compares a backend's output with the reference's
 * (harness/judge/judge.c; docs/formats.md "Verdicts"). */
typedef enum qmm_compare_rule {
    QMM_COMPARE_EXACT = 0, /* every element equal to the exact result (or, where an accumulator
                            * overflows int32, to the result from the wrapped sum) */
    QMM_COMPARE_ACCEPT = 1, /* every element within the accepted values of one of the
                             * reference's models (qmm_ref_accept_part; docs/semantics.md
                             * §8.4): exact where the result is determined, a proven bound where
                             * a float sum's order is the implementation's; an element that only
                             * an inconclusive model accepts is neither a pass nor a failure */
} qmm_compare_rule;

typedef struct qmm_op_desc {
    qmm_op_kind kind;
    const char *domain;   /* "" for ai.onnx */
    const char *op_type;
    const char *slug;     /* lower-case name for folders and fuzz targets: "qlinearmatmul" */
    int32_t opset_min, opset_max; /* the versions of `domain` this operator is defined for */
    int import_required;  /* a model that imports no `domain` opset is malformed */
    ptrdiff_t opset_offset; /* of the call's int32_t opset, or -1 when the struct has none */
    int32_t n_inputs;
    qmm_op_input inputs[QMM_MAX_OP_INPUTS];
    int32_t a_input, b_input; /* which inputs are the matrix operands */
    int elementwise;          /* y element by element from x (DequantizeLinear): an output
                               * element sums nothing, where a product sums a's last dimension
                               * (the harness's count of the reference's work) */
    const char *output_name;
    size_t output_offset; /* of y's qmm_tensor in qmm_call */
    int32_t output_dtype; /* y's element type, or QMM_DTYPE_UNDEFINED when it is ... */
    int32_t output_dtype_input; /* ... this input's (-1: fixed) */
    /* When set, y's type is this function's answer instead (an attribute may choose it:
     * DequantizeLinear's output_dtype) */
    int32_t (*output_dtype_of)(const qmm_call *c);
    int32_t n_attrs;
    qmm_op_attr attrs[QMM_MAX_OP_ATTRS];
    /* The type rule: a mask of (1u << dtype) that input `i` may have under `opset`. */
    uint32_t (*input_types)(int32_t opset, int32_t i);
    /* y's shape from the operands alone; QMM_INVALID_ARGUMENT when they do not fit. */
    qmm_status_code (*y_shape)(const qmm_call *c, int32_t *rank, int64_t *dims, qmm_status *st);
    /* Full validation (docs/semantics.md): QMM_OK, or why not in st. */
    qmm_status_code (*validate)(const qmm_call *c, qmm_status *st);
    qmm_compare_rule compare; /* how its outputs are judged */
} qmm_op_desc;

/* The table: every operator once, in the order messages list them. */
int32_t qmm_op_count(void);
const qmm_op_desc *qmm_op_at(int32_t i);
/* By kind; NULL for QMM_OP_NONE and unknown kinds. */
const qmm_op_desc *qmm_op_desc_of(qmm_op_kind kind);
/* By ONNX domain and op_type ("" and "ai.onnx" are the same domain); NULL when unknown. */
const qmm_op_desc *qmm_op_lookup(const char *domain, const char *op_type);

/* The call's descriptor (NULL for an empty call). */
const qmm_op_desc *qmm_call_desc(const qmm_call *c);
/* Input i of the call in node order; NULL when i is out of range or the call is empty. */
qmm_tensor *qmm_call_input(qmm_call *c, int32_t i);
const qmm_tensor *qmm_call_input_c(const qmm_call *c, int32_t i);
qmm_tensor *qmm_call_output(qmm_call *c);
const qmm_tensor *qmm_call_output_c(const qmm_call *c);
/* Attribute i's value in the call (NULL when out of range). */
int32_t *qmm_call_attr(qmm_call *c, int32_t i);
int32_t qmm_call_attr_value(const qmm_call *c, int32_t i);
/* The opset the call was written for: the stored one, else the descriptor's opset_min. */
int32_t qmm_call_opset(const qmm_call *c);
/* An empty call of `kind`: every input absent, attributes at their defaults, the opset
 * stored where the struct has one. */
void qmm_call_init(qmm_call *c, qmm_op_kind kind, int32_t opset);
/* y's dtype as the operator decides it (after the inputs are set). */
int32_t qmm_call_output_dtype(const qmm_call *c);

#endif /* QMM_OPS_OPERATOR_H */
