/* harness/expect.c — the reference's verdict on a call, and explaining mismatches. */
#include "harness/expect.h"

#include <stdlib.h>
#include <string.h>

#include "harness/onnx_io.h"
#include "reference/qmm_reference.h"

const char *const qh_profiles[] = {"spec", NULL};

int qh_profile_known(const char *profile)
{
    for (int i = 0; qh_profiles[i]; i++)
        if (strcmp(qh_profiles[i], profile) == 0)
            return 1;
    return 0;
}

int qh_alloc_tensor(qmm_tensor *t, unsigned char fill)
{
    int64_t n = qmm_tensor_numel(t);
    size_t es = qmm_dtype_size(t->dtype);
    t->data = NULL;
    if (n < 0 || es == 0 || (uint64_t)n > (uint64_t)QH_MAX_TENSOR_BYTES / es)
        return -1;
    size_t bytes = (size_t)n * es;
    t->data = malloc(bytes ? bytes : 1);
    if (!t->data)
        return -1;
    memset(t->data, fill, bytes ? bytes : 1);
    return 0;
}

static qmm_tensor *call_y(qmm_call *call)
{
    switch (call->op) {
    case QMM_OP_MATMULINTEGER: return &call->u.matmulinteger.y;
    case QMM_OP_QLINEARMATMUL: return &call->u.qlinearmatmul.y;
    case QMM_OP_QORDEREDMATMUL: return &call->u.qorderedmatmul.y;
    case QMM_OP_NONE: break;
    }
    return NULL;
}

int qh_expect(const qmm_call *call, const char *profile, qh_expectation *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->profile, sizeof e->profile, "%s", profile ? profile : QH_DEFAULT_PROFILE);
    if (!qh_profile_known(e->profile)) {
        e->code = QMM_INTERNAL;
        snprintf(e->message, sizeof e->message, "unknown profile '%s'", e->profile);
        return -1;
    }
    e->call = *call;
    qmm_tensor *y = call_y(&e->call);
    if (!y) {
        e->code = QMM_UNSUPPORTED;
        snprintf(e->message, sizeof e->message, "no operator");
        return 0;
    }
    e->exact = *y;
    e->alt = *y;
    if (qh_alloc_tensor(&e->exact, 0x5a) != 0 || qh_alloc_tensor(&e->alt, 0x5a) != 0) {
        qh_expectation_free(e);
        e->code = QMM_OUT_OF_MEMORY;
        snprintf(e->message, sizeof e->message, "cannot allocate the expected output");
        return -1;
    }
    y->data = e->exact.data;
    qmm_status st;
    qmm_status_ok(&st);
    e->code = qmm_ref_compute(&e->call, &e->alt, &e->overflow, &st);
    memcpy(e->message, st.message, sizeof e->message);
    return 0;
}

void qh_expectation_free(qh_expectation *e)
{
    free(e->exact.data);
    free(e->alt.data);
    e->exact.data = e->alt.data = NULL;
}

void qh_sb_coord(qh_sb *b, const qmm_tensor *y, int64_t index)
{
    int64_t c[QMM_MAX_RANK];
    int64_t rest = index;
    for (int32_t d = y->rank - 1; d >= 0; d--) {
        c[d] = y->dims[d] ? rest % y->dims[d] : 0;
        rest = y->dims[d] ? rest / y->dims[d] : 0;
    }
    qh_sb_puts(b, "y[");
    for (int32_t d = 0; d < y->rank; d++)
        qh_sb_printf(b, "%s%lld", d ? "," : "", (long long)c[d]);
    qh_sb_puts(b, "]");
}

void qh_explain_mismatches(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                           const qh_compare *cmp, int32_t limit)
{
    int32_t shown = 0;
    for (int32_t k = 0; k < cmp->n_kept && k < limit; k++, shown++) {
        int64_t i = cmp->kept[k];
        qmm_ref_element el;
        qmm_status st;
        qh_sb_puts(b, "    ");
        qh_sb_coord(b, &e->exact, i);
        qh_sb_printf(b, " (index %lld): expected %lld, got %lld", (long long)i,
                     (long long)qh_tensor_int(&e->exact, i), (long long)qh_tensor_int(got, i));
        if (qmm_ref_explain(&e->call, i, &el, &st) == QMM_OK) {
            qh_sb_printf(b, "; acc %lld", (long long)el.acc);
            if (el.scaled[0])
                qh_sb_printf(b, "; acc*scale = %s", el.scaled);
            if (el.overflow)
                qh_sb_printf(b, "; acc overflows int32, wrapped result %lld also accepted",
                             (long long)el.wrapped);
        }
        /* Only the spec profile exists so far, and it is what the got value was compared
         * against; other profiles join this list as they are implemented. */
        qh_sb_puts(b, "; profiles giving got: none (known: spec)\n");
    }
    if (cmp->errors > shown)
        qh_sb_printf(b, "    ... %lld more\n", (long long)(cmp->errors - shown));
}
