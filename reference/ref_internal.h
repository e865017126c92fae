/* reference/ref_internal.h — helpers shared by the reference backend's own files only.
 * Nothing here is part of the operator interface or of qmm_reference.h's contract.
 */
#ifndef QMM_REF_INTERNAL_H
#define QMM_REF_INTERNAL_H

#include <gmp.h>
#include <stddef.h>
#include <stdint.h>

#include "reference/qmm_reference.h"

/* ---- element access (scales.c) ---- */

/* "uint8", "float16", ... or "unknown" for codes the operators never meet. */

int qmm_ref_is_q8(int32_t dtype);     /* uint8 or int8 */
int qmm_ref_is_float8(int32_t dtype); /* one of the four float8 codes */
int qmm_ref_is_scale_type(int32_t dtype);

/* Element `index` of a uint8/int8 tensor as an integer. */
int64_t qmm_ref_load_q8(const qmm_tensor *t, int64_t index);

/* int64 reduced modulo 2^32 into int32, without relying on implementation-defined casts. */
int32_t qmm_ref_wrap_int32(int64_t v);

/* Stores an int32 little-endian, as tensor data is defined to be. */
void qmm_ref_store_i32(void *data, int64_t index, int32_t v);

/* ---- shapes (geometry.c) ---- */

/* "[2,3]" (or "[]"), truncated to fit `n`. */
void qmm_ref_format_dims(char *buf, size_t n, int32_t rank, const int64_t *dims);

/* Rank in 0..QMM_MAX_RANK, non-negative dims, element count fits int64. */
qmm_status_code qmm_ref_check_tensor(const qmm_tensor *t, const char *name, qmm_status *st);

/* ---- validation (validate.c) ---- */

/* Parameter maps in input order: a_scale, a_zero_point, b_scale, b_zero_point, y_scale,
 * y_zero_point. */
enum { QMM_REF_AS, QMM_REF_AZ, QMM_REF_BS, QMM_REF_BZ, QMM_REF_YS, QMM_REF_YZ, QMM_REF_NMAPS };

/* The public validators, also returning the parameter maps they built on the way. For
 * MatMulInteger only the a_zero_point and b_zero_point maps are filled (all-zero strides for
 * an absent zero point). */
qmm_status_code qmm_ref_validate_qlm(const qmm_qlinearmatmul *c, qmm_geometry *g,
                                     qmm_param_map maps[QMM_REF_NMAPS], qmm_status *st);
qmm_status_code qmm_ref_validate_mmi(const qmm_matmulinteger *c, qmm_geometry *g,
                                     qmm_param_map maps[QMM_REF_NMAPS], qmm_status *st);

/* ---- QOrderedMatMul (qordered.c) ---- */

/* The spec computation (y_wrapped / any_overflow as for qmm_ref_compute), the computation
 * under a profile (spec and ort-fp32; the others answer UNSUPPORTED after validating), and
 * the explanation of element `index` of Y's buffer (an offset in order_Y's layout). */
qmm_status_code qmm_ref_qom_compute(qmm_qorderedmatmul *c, qmm_tensor *y_wrapped,
                                    int *any_overflow, qmm_status *st);
qmm_status_code qmm_ref_qom_compute_profile(qmm_qorderedmatmul *c, qmm_profile p,
                                            qmm_status *st);
qmm_status_code qmm_ref_qom_explain(const qmm_qorderedmatmul *c, int64_t index,
                                    qmm_ref_element *e, qmm_status *st);

/* ---- decimal rendering (compute.c) ---- */

/* An exact rational as the decimal qmm_ref_element.scaled holds ("3.5", "-0.333..."). */
void qmm_ref_decimal(mpq_srcptr v, char *out, size_t n);

#endif /* QMM_REF_INTERNAL_H */
