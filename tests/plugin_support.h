/* tests/plugin_support.h — the entry-point steps the test plugins share (fake_backend,
 * guard_plugin and the mutants) beyond the public ones (qmm_backend_abi_check and
 * qmm_backend_init in qmm/backend.h, which every backend uses): allocating the table with its
 * private state, and the close that frees both.
 *
 * Header-only and built on the public headers alone, so each plugin stays what a vendor's
 * would be. */
#ifndef QMM_TESTS_PLUGIN_SUPPORT_H
#define QMM_TESTS_PLUGIN_SUPPORT_H

#include <stdlib.h>

#include "qmm/qmm.h"

/* The close of a table made by plugin_table: its private state, then the table. */
static inline void plugin_close(qmm_backend *self)
{
    free(self->impl);
    free(self);
}

/* A zeroed table whose impl points at impl_size zeroed bytes of private state, or NULL
 * (nothing left allocated, OUT_OF_MEMORY in *st). The table's fixed fields are set: the ABI,
 * the size, the names, impl and plugin_close; the caller adds its operator entries. */
static inline qmm_backend *plugin_table(const char *name, const char *description,
                                        size_t impl_size, qmm_status *st)
{
    qmm_backend *be = calloc(1, sizeof *be);
    void *state = calloc(1, impl_size);
    if (!be || !state) {
        free(be);
        free(state);
        qmm_status_oom(st, name, NULL);
        return NULL;
    }
    qmm_backend_init(be, name, description, state);
    be->close = plugin_close;
    return be;
}

#endif /* QMM_TESTS_PLUGIN_SUPPORT_H */
