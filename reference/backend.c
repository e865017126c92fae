/* reference/backend.c — the reference as a qmm_backend table: the capability query and the
 * generic `call` entry, both through the operator registry and the profile table, so an
 * operator added to the reference needs nothing here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference/ref_internal.h"

/* Per-backend state; there is no global mutable state, so independent opens never interact
 * and the table is safe for concurrent calls (the computation only reads the call). */
typedef struct ref_impl {
    qmm_backend table;
    qmm_profile profile;
    char name[64];
    char description[160];
} ref_impl;

static qmm_profile impl_profile(const qmm_backend *self)
{
    return ((const ref_impl *)self->impl)->profile;
}

/* An operator the reference has no file for is not computed: UNSUPPORTED, from the query and
 * from the call alike. */
static qmm_status_code unknown_op(const qmm_call *call, qmm_status *st)
{
    return qmm_status_set(st, QMM_UNSUPPORTED, "operator %d: unknown", (int)call->op);
}

static qmm_status_code ref_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    if (!qmm_ref_op_of(call->op))
        return unknown_op(call, st);
    /* Validation belongs to the operator call: invalid input is still "supported". What the
     * profile computes is the profile table's answer. */
    return qmm_ref_profile_supports(call, impl_profile(self), st);
}

/* Every operator through the generic entry: the call is the caller's (y.data its buffer). */
static qmm_status_code ref_call(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    if (!qmm_ref_op_of(call->op))
        return unknown_op(call, st);
    return qmm_ref_compute_profile(call, impl_profile(self), st);
}

/* The operators that predate `call` keep their own entries in the public table, which its
 * users call directly (tests/install/consumer_ref.c does, as a vendor would): each wraps its
 * struct, a shallow copy (y.data still the caller's buffer), into a tagged call. This list is
 * frozen with backend.h's; an operator added later has no entry of its own. */
#define LEGACY_ENTRY(member, kind)                                                           \
    static qmm_status_code ref_##member(const qmm_backend *self, const qmm_##member *c,      \
                                        qmm_status *st)                                      \
    {                                                                                        \
        qmm_call call;                                                                       \
        memset(&call, 0, sizeof call);                                                       \
        call.op = kind;                                                                      \
        call.u.member = *c;                                                                  \
        return ref_call(self, &call, st);                                                    \
    }
LEGACY_ENTRY(matmulinteger, QMM_OP_MATMULINTEGER)
LEGACY_ENTRY(qlinearmatmul, QMM_OP_QLINEARMATMUL)
LEGACY_ENTRY(qorderedmatmul, QMM_OP_QORDEREDMATMUL)

static void ref_close(qmm_backend *self)
{
    free(self ? self->impl : NULL);
}

/* Options are comma-separated key=value pairs; only profile=NAME exists. */
static qmm_status_code parse_options(const char *options, qmm_profile *profile, qmm_status *st)
{
    *profile = QMM_PROFILE_SPEC;
    qmm_option o;
    for (const char *p = options; qmm_option_next(&p, &o);) {
        if (!qmm_option_is(&o, "profile"))
            return qmm_option_refuse(st, &o, "unknown (the reference accepts profile=NAME)");
        char value[64] = "", why[512] = "the name is too long";
        if (o.value_len > 0 && (size_t)o.value_len < sizeof value)
            memcpy(value, o.value, (size_t)o.value_len);
        if (o.value_len == 0 || (size_t)o.value_len >= sizeof value ||
            qmm_profile_why_not(value, why, sizeof why) || !qmm_profile_from_name(value, profile))
            return qmm_option_refuse(st, &o, "unknown profile (%s; `qmmcheck list --profiles`)",
                                     why);
    }
    return QMM_OK;
}

qmm_backend *qmm_reference_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("reference", harness_abi, st))
        return NULL;
    qmm_profile profile;
    if (parse_options(options, &profile, st) != QMM_OK)
        return NULL;
    ref_impl *impl = calloc(1, sizeof *impl);
    if (!impl) {
        qmm_status_oom(st, "reference", NULL);
        return NULL;
    }
    qmm_backend *be = &impl->table;
    impl->profile = profile;
    /* The default keeps the plain name; another profile is part of what is being tested. */
    if (profile == QMM_PROFILE_SPEC)
        snprintf(impl->name, sizeof impl->name, "reference");
    else
        snprintf(impl->name, sizeof impl->name, "reference:profile=%s",
                 qmm_profile_name(profile));
    snprintf(impl->description, sizeof impl->description,
             "exact reference (int64 accumulation, GMP rational requantization), profile %s",
             qmm_profile_name(profile));
    qmm_backend_init(be, impl->name, impl->description, impl);
    be->query = ref_query;
    be->matmulinteger = ref_matmulinteger;
    be->qlinearmatmul = ref_qlinearmatmul;
    be->qorderedmatmul = ref_qorderedmatmul;
    be->call = ref_call; /* every operator, those after the three above included */
    be->close = ref_close;
    qmm_status_ok(st);
    return be;
}
