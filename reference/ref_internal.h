/* reference/ref_internal.h — helpers shared by the reference backend's own files only.
 * Nothing here is part of the operator interface or of qmm_reference.h's contract. The rules
 * the computation relies on (geometry, parameter maps, validation) are ops/qmm_ops.h.
 */
#ifndef QMM_REF_INTERNAL_H
#define QMM_REF_INTERNAL_H

#include <gmp.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

/* ---- QOrderedMatMul (qordered.c) ---- */

/* The spec computation (y_wrapped / any_overflow as for qmm_ref_compute), the computation
 * under a profile (spec and ort-fp32; the others answer UNSUPPORTED after validating), and
 * the explanation of element `index` of Y's buffer (an offset in order_Y's layout). */
qmm_status_code qmm_ref_qom_compute(qmm_qorderedmatmul *c, qmm_tensor *y_wrapped,
                                    int *any_overflow, qmm_status *st);
qmm_status_code qmm_ref_qom_compute_ort_fp32(qmm_qorderedmatmul *c, qmm_status *st);
qmm_status_code qmm_ref_qom_explain(const qmm_qorderedmatmul *c, int64_t index,
                                    qmm_ref_element *e, qmm_status *st);

/* ---- decimal rendering (compute.c) ---- */

/* An exact rational as the decimal qmm_ref_element.scaled holds ("3.5", "-0.333..."). */
void qmm_ref_decimal(mpq_srcptr v, char *out, size_t n);

#endif /* QMM_REF_INTERNAL_H */
