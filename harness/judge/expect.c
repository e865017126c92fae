/* harness/judge/expect.c — the reference's verdict on a call, and explaining mismatches. */
#include "harness/judge/expect.h"

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

int qh_profile_usage(const char *profile, char *msg, size_t size)
{
    char why[1024];
    if (qh_profile_known(profile) || qmm_profile_why_not(profile, why, sizeof why) == 0)
        return 0;
    if (strncmp(why, "known:", 6) == 0)
        snprintf(msg, size, "--profile %s: unknown semantics profile (%s)", profile, why);
    else
        snprintf(msg, size, "--profile %s", why);
    return 1;
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


static int out_of_memory(qh_expectation *e, const char *what)
{
    qh_expectation_free(e);
    e->code = QMM_OUT_OF_MEMORY;
    snprintf(e->message, sizeof e->message, "cannot allocate %s", what);
    return -1;
}

/* Where a call's y points while it is only validated or planned: validation asks for data,
 * nothing is written there (a part of count 0 writes nothing; qmm_ref_explain reads only the
 * inputs). */
static unsigned char no_output[16];

/* The multiply-adds an output element sums: A's last dimension for the products, none for an
 * elementwise operator (DequantizeLinear: its "a" is x, whose last dimension it does not sum
 * over). */
static int64_t qh_expect_k(const qmm_call *call)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (d->elementwise)
        return 0;
    const qmm_tensor *a = qmm_call_input_c(call, d->a_input);
    return a->rank > 0 ? a->dims[a->rank - 1] : 1;
}

int64_t qh_expect_work(const qmm_call *call)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (!d)
        return 0;
    qmm_call v = *call;
    qmm_call_output(&v)->data = no_output; /* validation asks for it; callers need not have it */
    qmm_status st;
    if (d->validate(&v, &st) != QMM_OK)
        return 0; /* rejected before any work */
    int64_t k = qh_expect_k(call);
    int64_t elements = qmm_tensor_numel(qmm_call_output_c(call));
    /* elements x (k + QH_WORK_PER_ELEMENT), saturating */
    if (elements == 0)
        return 0;
    if (k > INT64_MAX / elements - QH_WORK_PER_ELEMENT)
        return INT64_MAX;
    return elements * (k + QH_WORK_PER_ELEMENT);
}

int qh_expect_work_check(const qmm_call *call, char *msg, size_t size)
{
    int64_t work = qh_expect_work(call);
    if (work <= QH_MAX_WORK)
        return 0;
    int64_t k = qh_expect_k(call);
    int64_t elements = qmm_tensor_numel(qmm_call_output_c(call));
    snprintf(msg, size,
             "the reference's work for this case, %lld output elements x (K %lld + %d), is "
             "%.3Lg units, over the limit of %lld (QH_MAX_WORK; docs/formats.md, "
             "\"Limits\")", (long long)elements, (long long)k, QH_WORK_PER_ELEMENT,
             (long double)elements * ((long double)k + QH_WORK_PER_ELEMENT),
             (long long)QH_MAX_WORK);
    return -1;
}

/* The start of qh_expect and qh_expect_plan: the profile and the work checked, e->call set
 * and *y pointed at its output. Returns 1 to go on; 0 when the call has no operator (e->code
 * UNSUPPORTED: done); -1 with e->message when a check fails. */
unsigned long long qh_expectations_computed;

static int expect_begin(const qmm_call *call, const char *profile, qh_expectation *e,
                        qmm_tensor **y)
{
    qh_expectations_computed++;
    memset(e, 0, sizeof *e);
    snprintf(e->profile, sizeof e->profile, "%s", profile ? profile : QH_DEFAULT_PROFILE);
    if (!qh_profile_known(e->profile)) {
        e->code = QMM_INTERNAL;
        snprintf(e->message, sizeof e->message, "unknown profile '%s'", e->profile);
        return -1;
    }
    if (qh_expect_work_check(call, e->message, sizeof e->message) != 0) {
        e->code = QMM_INTERNAL;
        return -1;
    }
    e->call = *call;
    *y = qmm_call_output(&e->call);
    if (!*y) {
        e->code = QMM_UNSUPPORTED;
        snprintf(e->message, sizeof e->message, "no operator");
        return 0;
    }
    return 1;
}

static qmm_profile profile_of(const qh_expectation *e)
{
    qmm_profile p = QMM_PROFILE_SPEC;
    qmm_profile_from_name(e->profile, &p);
    return p;
}

int qh_expect(const qmm_call *call, const char *profile, qh_expectation *e)
{
    qmm_tensor *y;
    int go = expect_begin(call, profile, e, &y);
    if (go <= 0)
        return go;
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
    qmm_profile p = profile_of(e);
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

int qh_expect_plan(const qmm_call *call, const char *profile, qh_expectation *e)
{
    qmm_tensor *y;
    int go = expect_begin(call, profile, e, &y);
    if (go <= 0)
        return go;
    e->exact = *y;
    e->exact.data = NULL;
    e->alt = e->exact;
    y->data = no_output;
    qmm_status st;
    qmm_status_ok(&st);
    qmm_ref_part none = {0, 0};
    e->code = qmm_ref_compute_part(&e->call, profile_of(e), &none, NULL, NULL, &st);
    memcpy(e->message, st.message, sizeof e->message);
    return 0;
}

/* Computes one part into `exact`, and where an element overflows (spec only, rare) once more
 * into *wrapped, allocated then (`bytes` of room): 0, or -1 with e->code and e->message set. */
static int compute_part(qh_expectation *e, qmm_profile p, const qmm_ref_part *part,
                        void *exact, void **wrapped, size_t bytes, int *overflow)
{
    qmm_call c = e->call;
    qmm_tensor *y = qmm_call_output(&c);
    y->data = exact;
    qmm_status st;
    qmm_status_ok(&st);
    /* only spec has a second accepted result (qh_expect: a profile wraps as it wraps) */
    qmm_status_code code =
        qmm_ref_compute_part(&c, p, part, NULL, p == QMM_PROFILE_SPEC ? overflow : NULL, &st);
    if (code == QMM_OK && *overflow) {
        if (!*wrapped && !(*wrapped = malloc(bytes))) {
            e->code = QMM_OUT_OF_MEMORY;
            snprintf(e->message, sizeof e->message, "cannot allocate a part of the "
                     "overflow-permitted output (%zu bytes)", bytes);
            return -1;
        }
        qmm_tensor yw = *y;
        yw.data = *wrapped;
        code = qmm_ref_compute_part(&c, p, part, &yw, overflow, &st);
    }
    if (code != QMM_OK) {
        e->code = code;
        memcpy(e->message, st.message, sizeof e->message);
        return -1;
    }
    return 0;
}

/* Computes the parts of `per` elements (the last one clamped to y) that begin at first[0 ..
 * nparts), or with first NULL every part from 0, in turn, calling fn with each. */
static void scan_parts(qh_expectation *e, const int64_t *first, int64_t nparts, int64_t per,
                       qh_expect_part_fn *fn, void *ctx)
{
    int64_t n = qmm_tensor_numel(&e->exact);
    size_t bytes = (size_t)per * qmm_dtype_size(e->exact.dtype);
    void *exact = malloc(bytes), *wrapped = NULL;
    if (!exact) {
        e->code = QMM_OUT_OF_MEMORY;
        snprintf(e->message, sizeof e->message, "cannot allocate a part of the expected output "
                 "(%zu bytes)", bytes);
        return;
    }
    if (!first)
        nparts = (n + per - 1) / per;
    qmm_profile p = profile_of(e);
    for (int64_t i = 0; i < nparts; i++) {
        int64_t f = first ? first[i] : i * per;
        qmm_ref_part part = {f, n - f < per ? n - f : per};
        int overflow = 0;
        if (compute_part(e, p, &part, exact, &wrapped, bytes, &overflow) != 0)
            break;
        e->overflow |= overflow;
        fn(ctx, part.first, part.count, exact, overflow ? wrapped : NULL);
    }
    free(exact);
    free(wrapped);
}

void qh_expect_scan(qh_expectation *e, int64_t part_elements, qh_expect_part_fn *fn, void *ctx)
{
    int64_t n = qmm_tensor_numel(&e->exact);
    size_t es = qmm_dtype_size(e->exact.dtype);
    if (e->code != QMM_OK || n <= 0 || es == 0)
        return;
    int64_t unit = qmm_ref_part_unit(&e->call);
    int64_t per = part_elements > 0 ? part_elements : QH_EXPECT_PART_BYTES / (int64_t)es;
    per = per < unit ? unit : per / unit * unit;
    scan_parts(e, NULL, 0, per > n ? n : per, fn, ctx);
}

int64_t qh_expect_parts_at(const qmm_call *call, const int64_t *at, int n, int64_t *first)
{
    const qmm_tensor *y = qmm_call_output_c(call);
    int64_t unit = qmm_ref_part_unit(call), total = y ? qmm_tensor_numel(y) : 0, parts = 0;
    for (int i = 0; i < n; i++) {
        if (at[i] < 0 || at[i] >= total)
            continue;
        int64_t f = at[i] / unit * unit;
        if (parts == 0 || first[parts - 1] != f)
            first[parts++] = f;
    }
    return parts;
}

void qh_expect_scan_at(qh_expectation *e, const int64_t *at, int n, qh_expect_part_fn *fn,
                       void *ctx)
{
    int64_t n_el = qmm_tensor_numel(&e->exact);
    if (e->code != QMM_OK || n_el <= 0 || qmm_dtype_size(e->exact.dtype) == 0 || n <= 0)
        return;
    int64_t *first = malloc((size_t)n * sizeof *first);
    if (!first) {
        e->code = QMM_OUT_OF_MEMORY;
        snprintf(e->message, sizeof e->message, "cannot allocate %d part indices", n);
        return;
    }
    int64_t unit = qmm_ref_part_unit(&e->call);
    scan_parts(e, first, qh_expect_parts_at(&e->call, at, n, first), unit < n_el ? unit : n_el,
               fn, ctx);
    free(first);
}

void qh_expectation_free(qh_expectation *e)
{
    if (e->alt.data != e->exact.data)
        free(e->alt.data);
    free(e->exact.data);
    e->exact.data = e->alt.data = NULL;
}

