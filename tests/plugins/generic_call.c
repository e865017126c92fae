/* tests/plugins/generic_call.c — a plugin whose table has no operator pointer of its own, only
 * the generic `call` (include/qmm/backend.h), answering through the reference: the harness must
 * judge it exactly as it judges the reference, in process and isolated. The option `size=old`
 * gives the same table with a struct_size that ends before `call` (a table from a build that
 * predates it): the harness must not read past struct_size, so every operator is UNSUPPORTED.
 * test_isolation.c drives both. */
#include <stddef.h>
#include <string.h>

#include "qmm/qmm.h"
#include "over_reference.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

/* The reference this plugin answers through. */
typedef struct generic {
    qmm_backend *ref;
} generic;

static qmm_status_code g_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const qmm_backend *ref = ((const generic *)self->impl)->ref;
    return ref->query(ref, call, st);
}

static qmm_status_code g_call(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    return qmm_backend_run(((const generic *)self->impl)->ref, call, st);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("generic", harness_abi, st))
        return NULL;
    int old = strcmp(options, "size=old") == 0;
    if (!old && strcmp(options, "") != 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "generic: unknown option '%s'", options);
        return NULL;
    }
    qmm_backend *be = over_reference_table(harness_abi, "generic",
                                           "only the generic call, through the reference",
                                           sizeof(generic), st);
    if (!be)
        return NULL;
    be->query = g_query;
    be->call = g_call;
    if (old)
        be->struct_size = (uint32_t)offsetof(qmm_backend, call);
    return be;
}
