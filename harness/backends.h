/* harness/backends.h — turning `--backend SPEC` into an open backend.
 *
 * SPEC is NAME[:OPTIONS]. NAME is a built-in backend ("reference") or a path to a shared
 * library (it contains a '/' or ends in ".so"), which must export QMM_PLUGIN_ENTRY.
 */
#ifndef QMM_HARNESS_BACKENDS_H
#define QMM_HARNESS_BACKENDS_H

#include "harness/onnx_io.h"
#include "qmm/qmm.h"

typedef struct qh_backend {
    qmm_backend *be;
    void *dl;          /* dlopen handle for plugins, NULL for built-ins */
    char spec[1024];   /* as given on the command line, used in __REPRO: lines */
    int is_plugin;
    int worker_pid;    /* the isolated worker (harness/invoke.c), 0 when none */
    int worker_fd;
} qh_backend;

/* 0 on success; -1 with err for an unknown name, a missing entry point, an ABI mismatch,
 * a NULL table or options the backend rejects. */
int qh_backend_open(const char *spec, qh_backend *out, qh_error *err);
void qh_backend_close(qh_backend *b);

/* The built-in backend names, NULL-terminated, for `qmmcheck list --backends`. */
extern const char *const qh_builtin_backends[];

#endif /* QMM_HARNESS_BACKENDS_H */
