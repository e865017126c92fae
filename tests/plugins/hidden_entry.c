/* tests/plugins/hidden_entry.c — a plugin whose entry point is right but built with
 * -fvisibility=hidden (tests/CMakeLists.txt) and never marked default: the library loads,
 * its qmm_backend_open is not exported, and qmmcheck must name that cause. */
#include "qmm/qmm.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    (void)harness_abi;
    (void)options;
    qmm_status_set(st, QMM_UNSUPPORTED, "hidden_entry: never reached");
    return NULL;
}
