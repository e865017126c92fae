/* harness/run/expect.c — the reference's verdict on a call, and explaining mismatches. */
#include "harness/run/expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/io/onnx_io.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

/* In qmm_profile order (reference/qmm_reference.h); tests/test_profiles.c checks the two
 * lists agree. */

int qh_profile_known(const char *profile)
{
    qmm_profile p;
    return qmm_profile_from_name(profile, &p);
}

void qh_print_profiles(FILE *out)
{
    const char *name, *what, *means;
    fprintf(out, "requantization models (how the accumulator becomes the output):\n");
    for (int i = 0; qmm_profile_part(QMM_PROFILE_PART_REQUANTIZATION, i, &name, &what); i++)
        fprintf(out, "  %-18s %s\n", name, what);
    fprintf(out, "accumulation models (how the int32 accumulator is formed; "
                 "profile REQUANTIZATION+ACCUMULATION):\n");
    for (int i = 0; qmm_profile_part(QMM_PROFILE_PART_ACCUMULATION, i, &name, &what); i++)
        fprintf(out, "  %-18s %s\n", i ? name : "(default)", what);
    fprintf(out, "profiles (%d):\n", qmm_profile_count());
    for (int p = 0; p < qmm_profile_count(); p++)
        fprintf(out, "  %s\n", qmm_profile_name((qmm_profile)p));
    for (int i = 0; qmm_profile_alias(i, &name, &means); i++)
        fprintf(out, "%s  %s = %s (the name it had before profiles composed)\n",
                i ? "" : "names kept:\n", name, means);
    fprintf(out, "refused combinations:\n");
    for (int r = 0; qmm_profile_part(QMM_PROFILE_PART_REQUANTIZATION, r, &name, &what); r++) {
        const char *acc, *acc_what;
        for (int a = 1; qmm_profile_part(QMM_PROFILE_PART_ACCUMULATION, a, &acc, &acc_what);
             a++) {
            char combined[128], why[512];
            snprintf(combined, sizeof combined, "%s+%s", name, acc);
            if (qmm_profile_why_not(combined, why, sizeof why))
                fprintf(out, "  %s\n", why);
        }
    }
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

static int out_of_memory(qh_expectation *e, const char *what)
{
    qh_expectation_free(e);
    e->code = QMM_OUT_OF_MEMORY;
    snprintf(e->message, sizeof e->message, "cannot allocate %s", what);
    return -1;
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
    qmm_tensor *y = qmm_call_output(&e->call);
    if (!y) {
        e->code = QMM_UNSUPPORTED;
        snprintf(e->message, sizeof e->message, "no operator");
        return 0;
    }
    /* Only the expected output is allocated up front: a separate overflow alternative exists
     * only where some accumulator overflows int32 (K >= 33026); elsewhere alt is exact
     * itself, so an output of several GiB is not held twice for nothing. */
    e->exact = *y;
    if (qh_alloc_tensor(&e->exact, 0x5a) != 0)
        return out_of_memory(e, "the expected output");
    y->data = e->exact.data;
    e->alt = e->exact;
    qmm_status st;
    qmm_status_ok(&st);
    qmm_profile p = QMM_PROFILE_SPEC;
    qmm_profile_from_name(e->profile, &p);
    if (p == QMM_PROFILE_SPEC) {
        e->code = qmm_ref_compute(&e->call, NULL, &e->overflow, &st);
        if (e->code == QMM_OK && e->overflow) {
            /* rare: compute again, this time keeping the result from the wrapped sums */
            if (qh_alloc_tensor(&e->alt, 0x5a) != 0)
                return out_of_memory(e, "the overflow-permitted output");
            e->code = qmm_ref_compute(&e->call, &e->alt, &e->overflow, &st);
        }
    } else {
        /* A profile imitates one implementation, wrapping included where it wraps: there is
         * no second accepted result. */
        e->code = qmm_ref_compute_profile(&e->call, p, &st);
        e->overflow = 0;
    }
    memcpy(e->message, st.message, sizeof e->message);
    return 0;
}

void qh_expectation_free(qh_expectation *e)
{
    if (e->alt.data != e->exact.data)
        free(e->alt.data);
    free(e->exact.data);
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

/* Every profile's verdict on one call, computed on the first mismatch that asks for it and
 * reused for the others: a whole output per profile, rather than one element at a time,
 * because the Orion profile's errors depend on the whole tensors. */
typedef struct profile_outputs {
    int computed;
    qh_expectation ex[QMM_PROFILE_MAX];
} profile_outputs;

static void profile_outputs_compute(profile_outputs *po, const qmm_call *call)
{
    if (po->computed)
        return;
    po->computed = 1;
    for (int p = 0; p < qmm_profile_count(); p++)
        if (qh_expect(call, qmm_profile_name((qmm_profile)p), &po->ex[p]) != 0)
            po->ex[p].code = QMM_INTERNAL; /* out of memory: the profile just is not listed */
}

static void profile_outputs_free(profile_outputs *po)
{
    for (int p = 0; po->computed && p < qmm_profile_count(); p++)
        qh_expectation_free(&po->ex[p]);
}

/* "; got matches: onnx-ref, ort-fp32" or "; got matches no known profile". A combination
 * (REQ+ACC) is named only where its requantization under the default accumulation does not
 * give `got` too: where both do, its accumulation model made no difference. */
static void sb_profiles_giving(qh_sb *b, profile_outputs *po, const qh_expectation *e,
                               const qmm_tensor *got, int64_t i)
{
    profile_outputs_compute(po, &e->call);
    int64_t v = qh_tensor_int(got, i);
    int gives[QMM_PROFILE_MAX];
    for (int p = 0; p < qmm_profile_count(); p++) {
        const qh_expectation *x = &po->ex[p];
        gives[p] = x->code == QMM_OK && qmm_tensor_numel(&x->exact) > i &&
                   (qh_tensor_int(&x->exact, i) == v ||
                    (x->overflow && qh_tensor_int(&x->alt, i) == v));
    }
    int n = 0;
    for (int p = 0; p < qmm_profile_count(); p++) {
        int base = (int)qmm_profile_base((qmm_profile)p);
        if (gives[p] && (base == p || !gives[base]))
            qh_sb_printf(b, "%s%s", n++ ? ", " : "; got matches: ", qmm_profile_name((qmm_profile)p));
    }
    if (n == 0)
        qh_sb_puts(b, "; got matches no known profile");
}

void qh_explain_mismatches(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                           const qh_compare *cmp, int32_t limit)
{
    profile_outputs po;
    po.computed = 0;
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
        sb_profiles_giving(b, &po, e, got, i);
        qh_sb_puts(b, "\n");
    }
    if (cmp->errors > shown)
        qh_sb_printf(b, "    ... %lld more\n", (long long)(cmp->errors - shown));
    profile_outputs_free(&po);
}
