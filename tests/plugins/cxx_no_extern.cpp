// tests/plugins/cxx_no_extern.cpp — a C++ plugin that defines its entry point without
// extern "C": the symbol is exported under its mangled name, so qmm_backend_open is not found
// and qmmcheck must name that cause.
#include "qmm/qmm.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    (void)harness_abi;
    (void)options;
    qmm_status_set(st, QMM_UNSUPPORTED, "cxx_no_extern: never reached");
    return nullptr;
}
