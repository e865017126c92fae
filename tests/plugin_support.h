/* tests/plugin_support.h — the entry-point steps the test plugins share (fake_backend,
 * guard_plugin and the mutants): the ABI handshake, allocating the table with its private
 * state, filling the table's fixed fields, and the close that frees both.
 *
 * Header-only and built on the public headers alone, so each plugin stays what a vendor's
 * would be. examples/vendor-plugin/mykernels.c keeps its own copy of these steps on purpose:
 * it is the file a vendor copies, so it must stand alone. */
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

/* 1 when the harness speaks the ABI this plugin was built for; otherwise sets *st (as
 * `who: built for ABI ...`) and gives 0, and the entry point returns NULL. */
static inline int plugin_abi_ok(const char *who, uint32_t harness_abi, qmm_status *st)
{
    if (harness_abi == QMM_ABI_VERSION)
        return 1;
    qmm_status_set(st, QMM_UNSUPPORTED, "%s: built for ABI %u, harness has %u", who,
                   (unsigned)QMM_ABI_VERSION, (unsigned)harness_abi);
    return 0;
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
        qmm_status_set(st, QMM_OUT_OF_MEMORY, "%s: out of memory", name);
        return NULL;
    }
    be->abi_version = QMM_ABI_VERSION;
    be->struct_size = sizeof *be;
    be->name = name;
    be->description = description;
    be->impl = state;
    be->close = plugin_close;
    return be;
}

#endif /* QMM_TESTS_PLUGIN_SUPPORT_H */
