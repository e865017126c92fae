/* tests/plugins/over_reference.h — the table of a test plugin that answers through the
 * reference (flaky, float8_ftz, generic_call): its private state is a struct whose first member
 * is `qmm_backend *ref`, the reference opened with the plugin and closed with it. */
#ifndef QMM_TESTS_PLUGINS_OVER_REFERENCE_H
#define QMM_TESTS_PLUGINS_OVER_REFERENCE_H

#include "qmm/qmm.h"
#include "reference/qmm_reference.h"
#include "../plugin_support.h"

/* The close of a table made by over_reference_table: the reference, then the plugin's state
 * and table. */
static inline void over_reference_close(qmm_backend *self)
{
    qmm_backend *ref = *(qmm_backend **)self->impl;
    ref->close(ref);
    plugin_close(self);
}

/* plugin_table with the reference opened into the state's first member and
 * over_reference_close as the close; NULL (nothing left open, the reason in *st) when either
 * fails. */
static inline qmm_backend *over_reference_table(uint32_t harness_abi, const char *name,
                                                const char *description, size_t impl_size,
                                                qmm_status *st)
{
    qmm_backend *be = plugin_table(name, description, impl_size, st);
    if (!be)
        return NULL;
    qmm_backend **ref = be->impl;
    *ref = qmm_reference_open(harness_abi, "", st);
    if (!*ref) {
        plugin_close(be);
        return NULL;
    }
    be->close = over_reference_close;
    return be;
}

#endif /* QMM_TESTS_PLUGINS_OVER_REFERENCE_H */
