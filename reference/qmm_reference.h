/* reference/qmm_reference.h — the exact reference backend (docs/semantics.md): the exact
 * computation, the per-element explanation and the semantics profiles. The shape and parameter
 * rules it shares with every backend are qmmcheck's ops layer (libqmm_ops; its header is not
 * installed). Installed as qmm/reference.h, the docs it cites in share/doc/qmm/.
 *
 * Deliberately simple: int64 accumulation, GMP rationals for requantization. Speed is not a
 * goal; being obviously right is.
 */
#ifndef QMM_REFERENCE_H
#define QMM_REFERENCE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm/qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the reference computation -------------------------------------------------------- */

/* Computes call->y exactly under the `spec` profile (any of the three operators; for
 * QOrderedMatMul y is written in order_Y's layout). When `y_wrapped` is not NULL it must have
 * y's dtype, shape and size; it receives the result computed from the int32-wrapped
 * accumulator (identical to y where the exact acc fits int32), and *any_overflow is set to 1
 * when some element's exact accumulator does not fit int32. For MatMulInteger the wrapped
 * sum is the only result and y_wrapped, if given, equals y. */
qmm_status_code qmm_ref_compute(qmm_call *call, qmm_tensor *y_wrapped, int *any_overflow,
                                qmm_status *st);

/* Everything the harness prints about one output element. */
typedef struct qmm_ref_element {
    int64_t acc;          /* exact sum_k (a - za)(b - zb); 0 when a or b is float8 (the sum is
                           * then a rational: `scaled` holds sa*sb*acc/sy) */
    int overflow;         /* acc does not fit int32 */
    int64_t expected;     /* the spec result (a float8 y: its code, 0..255) */
    int64_t wrapped;      /* the result from the int32-wrapped acc (== expected unless overflow) */
    char scaled[160];     /* QLinearMatMul: sa*sb*acc/sy exactly, as a decimal ("3.5",
                           * "-0.333333333333333333333...") ; QOrderedMatMul: the exact
                           * sA*sB*acc/sY + bias + sC*C/sY; MatMulInteger: "" */
} qmm_ref_element;

/* Explains output element `index` (row-major over y; for QOrderedMatMul the offset in Y's
 * buffer, which is in order_Y's layout) of a valid call. */
qmm_status_code qmm_ref_explain(const qmm_call *call, int64_t index, qmm_ref_element *e,
                                qmm_status *st);

/* ---- semantics profiles (docs/semantics.md §5, docs/profiles.md) ----------------------------- */

/* A complete rule for turning the integer problem into output bytes. `spec` is the contract;
 * the others reproduce what a named implementation computes, bit for bit. A profile is a
 * requantization model (how the accumulator becomes the output: spec, onnx-ref, ort-fp32,
 * orion-fp16x16, gemmlowp, onednn-fp32) combined with an accumulation model (how the int32
 * accumulator is formed: the default exact sum wrapped to int32, or sat32, pairsat16, ...),
 * named REQUANTIZATION or REQUANTIZATION+ACCUMULATION (docs/profiles.md). A profile is an
 * index, 0 .. qmm_profile_count() - 1: first every requantization model under the default
 * accumulation (the enumerators below name those C code needs), then the combinations. */
typedef enum qmm_profile {
    QMM_PROFILE_SPEC = 0,          /* exact rational, RNE, zero point after rounding */
    QMM_PROFILE_ONNX_REF = 1,      /* onnx.reference (numpy), onnx >= 1.22 (clamps) */
    QMM_PROFILE_ORT_FP32 = 2,      /* ONNX Runtime CPU / MLAS float32 requantization */
    QMM_PROFILE_ORION_FP16X16 = 3, /* Orion's qlinear_matmul, sign-magnitude Q16.16 */
} qmm_profile;

/* An upper bound on qmm_profile_count(), for arrays (and 64-bit masks) indexed by profile. */
#define QMM_PROFILE_MAX 64

/* How many profiles there are: every combination that is not refused. */
int qmm_profile_count(void);

/* "spec", "onnx-ref", "ort-fp32+pairsat16", ...; NULL for a value out of range. */
const char *qmm_profile_name(qmm_profile p);

/* 1 and *out set when `name` is a profile's name (or an alias kept from before profiles
 * composed: onednn-fp32+pairsat16 is onednn-fp32+onednn-avx2), 0 otherwise. */
int qmm_profile_from_name(const char *name, qmm_profile *out);

/* 0 when `name` is a profile; otherwise 1 with the reason in buf: "NAME: why" for a refused
 * combination, or "known: spec, onnx-ref, ...; each also as REQUANTIZATION+ACCUMULATION, ..."
 * for a name that spells none. */
int qmm_profile_why_not(const char *name, char *buf, size_t size);

/* The profile of p's requantization model under the default accumulation (p itself when p is
 * one of those); p when out of range. */
qmm_profile qmm_profile_base(qmm_profile p);

/* 1 when p's answer on a part of the output depends on the whole call: it refuses the call
 * for any element or input (orion-fp16x16 panics on an overflow anywhere, used or not) and
 * sets its whole inputs up for each part, so a part computed alone neither rules its refusal
 * out nor costs a part's share of the work (a harness comparing profiles on a few elements
 * leaves such a profile out). */
int qmm_profile_whole_call(qmm_profile p);

/* NULL for a profile some implementation computes; for a wrong rule (ties-away, truncation,
 * wrap, zp-before-rounding, float64: the spec with one requantization step changed, a mistake kernels
 * make, defined for QLinearMatMul's integer forms only), what it does in a few words: "ties
 * rounded half away from zero". */
const char *qmm_profile_wrong(qmm_profile p);

/* The models profiles are made of: part i (from 0) of kind REQUANTIZATION or ACCUMULATION, its
 * name ("" for the default accumulation) and a one-line summary. 0 past the last. */
#define QMM_PROFILE_PART_REQUANTIZATION 0
#define QMM_PROFILE_PART_ACCUMULATION 1
int qmm_profile_part(int kind, int i, const char **name, const char **what);

/* Alias i (from 0): a name kept from before profiles composed, and the REQ+ACC name it means.
 * 0 past the last. */
int qmm_profile_alias(int i, const char **name, const char **means);

/* Computes call->y under profile `p`. Validation (docs/semantics.md §2.5) is the same for every
 * profile. QMM_PROFILE_SPEC is qmm_ref_compute(call, NULL, NULL, st). QOrderedMatMul is defined
 * under spec and ort-fp32 only (the others: UNSUPPORTED after validation). MatMulInteger has no
 * requantization: y is the profile's accumulator (the spec result under the default
 * accumulation), except under orion-fp16x16 and gemmlowp (UNSUPPORTED: no counterpart).
 * orion-fp16x16 computes int8 only (other types: UNSUPPORTED) and answers
 * QMM_INVALID_ARGUMENT where Orion panics (an input element -128, a result clamped to -128,
 * a Q16.16 magnitude >= 2^32, y_scale encoding as 0), the message naming the rule. */
qmm_status_code qmm_ref_compute_profile(qmm_call *call, qmm_profile p, qmm_status *st);

/* What the profile computes, decided from the operator and the types alone (the backend's
 * capability query): QMM_OK, or QMM_UNSUPPORTED with the reason ("orion-fp16x16: int8 only",
 * "onnx-ref: QOrderedMatMul is defined under spec and ort-fp32 only"). */
qmm_status_code qmm_ref_profile_supports(const qmm_call *call, qmm_profile p, qmm_status *st);

/* ---- one part of the output at a time, and stopping ----------------------------------- */

/* Elements [first, first + count) of y's buffer (row-major over y; for QOrderedMatMul
 * positions in Y's buffer, which is laid out in order_Y). */
typedef struct qmm_ref_part {
    int64_t first, count;
} qmm_ref_part;

/* What qmm_ref_compute (p spec) or qmm_ref_compute_profile computes, for one part of y only, so
 * that a caller comparing an output need not hold the whole expectation: call->y keeps y's
 * dtype and shape, and its data holds room for part->count elements, element first + i at
 * index i. `y_wrapped` is the same for the wrapped result, and *any_overflow says whether an
 * accumulator of the part overflows int32: both are spec's alone (QMM_PROFILE_SPEC, the default
 * accumulation); under any other profile, spec+ACC included, there is one accepted output,
 * y_wrapped must be NULL (QMM_INVALID_ARGUMENT otherwise) and *any_overflow stays 0.
 * count 0 validates and applies the profile's checks without computing an element. The
 * answer is the whole computation's, except an error found from the value of an element
 * outside the part (orion-fp16x16 refuses an element that clamps to -128): computing every
 * part in turn finds it. first and count are multiples of qmm_ref_part_unit(call), or the
 * part ends at y's end; a part past y's end is QMM_INVALID_ARGUMENT. */
qmm_status_code qmm_ref_compute_part(qmm_call *call, qmm_profile p, const qmm_ref_part *part,
                                     qmm_tensor *y_wrapped, int *any_overflow, qmm_status *st);

/* The granule of a part: 1, or for QOrderedMatMul one matrix of Y (the product of Y's last
 * two dims; at least 1). */
int64_t qmm_ref_part_unit(const qmm_call *call);

/* Points the reference's computations at a flag (a SIGINT/SIGTERM handler's): every
 * computation looks at it once per output element, and once it is non-zero the computation
 * under way stops and answers QMM_INTERNAL "interrupted" (its output incomplete). NULL, the
 * default, never stops one. Process-wide; the reference backend's calls obey it too. */
void qmm_ref_set_stop_flag(const volatile sig_atomic_t *flag);

/* ---- operators judged by accepted values (docs/semantics.md §8.4) ------------------------ */

/* One way an implementation may compute an element (a "model"), and what it may then answer:
 * y is accepted when lo <= y <= hi (values of y's type, as doubles; lo == hi: that value
 * exactly; both NaN: exactly a NaN). `r` is the model's exact value rounded to a double and
 * `e` its error bound rounded up (0 for a value determined exactly), for reports. An
 * `inconclusive` model gives no usable bound (a float16 accumulation over a long K, a sum that
 * may overflow, a non-finite input): a y only it accepts is neither a pass nor a failure;
 * one that spans [-inf, inf] takes a NaN too. */
typedef struct qmm_ref_interval {
    double lo, hi;
    double r, e;
    int inconclusive;
    const char *model; /* "dequantize-first", "scale-factored", "int8-a-block-256", "fma" ... */
} qmm_ref_interval;

#define QMM_REF_ACCEPT_MAX 6

/* Everything one output element may be: the union of its models' intervals. */
typedef struct qmm_ref_accept {
    int n;
    qmm_ref_interval iv[QMM_REF_ACCEPT_MAX];
} qmm_ref_accept;

/* 1 when the reference judges `op`'s output by qmm_ref_accept_part instead of bit for bit
 * against qmm_ref_compute's answer (which is then the first model's exact value rounded once
 * to y's type: one acceptable answer, not the only one). */
int qmm_ref_judged_by_accept(qmm_op_kind op);

/* The accepted values of elements [part->first, part->first + part->count) of y (part NULL:
 * all of y), into out[0 .. count-1]; validates the call first. QMM_UNSUPPORTED for an
 * operator judged bit for bit. */
qmm_status_code qmm_ref_accept_part(const qmm_call *call, const qmm_ref_part *part,
                                    qmm_ref_accept *out, qmm_status *st);

typedef enum qmm_ref_verdict {
    QMM_REF_PASS = 0,
    QMM_REF_FAIL = 1,
    QMM_REF_INCONCLUSIVE = 2,
} qmm_ref_verdict;

/* The judgement of one answer `y` (decoded exactly to a double; NaN for any NaN) against its
 * accepted values. *units (may be NULL) is its distance from the nearest conclusive model's
 * exact value in units of that model's bound, |y - r| / e (0 when equal, +inf when e is 0 and
 * y differs), and *model (may be NULL) that model's index. */
qmm_ref_verdict qmm_ref_accept_judge(const qmm_ref_accept *a, double y, double *units,
                                     int *model);

/* Element `index` of a float, float16 or bfloat16 tensor, decoded exactly (NaN for any NaN). */
double qmm_ref_float_at(int32_t dtype, const void *data, int64_t index);

/* ---- the backend ---------------------------------------------------------------------- */

/* Opens the reference backend. Options: "" or "profile=NAME" with NAME one of the profiles
 * above (an unknown key or profile is QMM_INVALID_ARGUMENT, saying why). Under a profile other
 * than spec the backend's name is "reference:profile=NAME", NAME the profile's own name (an
 * alias opens the profile it means). */
qmm_backend *qmm_reference_open(uint32_t harness_abi, const char *options, qmm_status *st);

#ifdef __cplusplus
}
#endif

#endif /* QMM_REFERENCE_H */
