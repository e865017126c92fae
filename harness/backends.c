/* harness/backends.c — built-in backend registry and plugin loading. */
#include "harness/backends.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "harness/invoke.h"
#include "optimized/qmm_optimized.h"
#include "reference/qmm_reference.h"
#ifdef QMM_HAVE_CUDA
#include "optimized/qmm_cuda.h"
#endif

typedef struct builtin {
    const char *name;
    qmm_backend_open_fn open;
} builtin;

static const builtin builtins[] = {
    {"reference", qmm_reference_open},
    {"optimized", qmm_optimized_open},
#ifdef QMM_HAVE_CUDA
    {"cuda", qmm_cuda_open},
#endif
};

const char *const qh_builtin_backends[] = {"reference", "optimized",
#ifdef QMM_HAVE_CUDA
                                           "cuda",
#endif
                                           NULL};

static int is_plugin_name(const char *name)
{
    size_t n = strlen(name);
    return strchr(name, '/') != NULL || (n > 3 && strcmp(name + n - 3, ".so") == 0);
}

static int open_plugin(const char *path, const char *options, qh_backend *out, qh_error *err)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot load plugin: %s", path, dlerror());
        return -1;
    }
    /* POSIX guarantees object and function pointers convert through dlsym's void *. */
    void *sym = dlsym(dl, QMM_PLUGIN_ENTRY);
    if (!sym) {
        snprintf(err->msg, sizeof err->msg, "%s: no entry point %s() exported", path,
                 QMM_PLUGIN_ENTRY);
        dlclose(dl);
        return -1;
    }
    qmm_backend_open_fn open;
    memcpy(&open, &sym, sizeof open);
    qmm_status st;
    qmm_status_ok(&st);
    qmm_backend *be = open(QMM_ABI_VERSION, options, &st);
    if (!be) {
        snprintf(err->msg, sizeof err->msg, "%s: %s() returned no backend: %s: %s", path,
                 QMM_PLUGIN_ENTRY, qmm_status_name(st.code),
                 st.message[0] ? st.message : "(no message)");
        dlclose(dl);
        return -1;
    }
    if (be->abi_version != QMM_ABI_VERSION) {
        snprintf(err->msg, sizeof err->msg,
                 "%s: plugin built for qmm ABI %u, this qmmcheck speaks ABI %u", path,
                 be->abi_version, QMM_ABI_VERSION);
        if (be->close)
            be->close(be);
        dlclose(dl);
        return -1;
    }
    out->be = be;
    out->dl = dl;
    out->is_plugin = 1;
    return 0;
}

int qh_backend_open(const char *spec, qh_backend *out, qh_error *err)
{
    memset(out, 0, sizeof *out);
    if (strlen(spec) >= sizeof out->spec) {
        snprintf(err->msg, sizeof err->msg, "backend spec too long");
        return -1;
    }
    memcpy(out->spec, spec, strlen(spec) + 1);
    char name[1024];
    memcpy(name, spec, strlen(spec) + 1);
    const char *options = "";
    char *colon = strchr(name, ':');
    if (colon) {
        *colon = '\0';
        options = colon + 1;
    }
    if (is_plugin_name(name))
        return open_plugin(name, options, out, err);
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        if (strcmp(builtins[i].name, name) != 0)
            continue;
        qmm_status st;
        qmm_status_ok(&st);
        out->be = builtins[i].open(QMM_ABI_VERSION, options, &st);
        if (!out->be) {
            snprintf(err->msg, sizeof err->msg, "backend %s: %s", spec, st.message);
            return -1;
        }
        return 0;
    }
    snprintf(err->msg, sizeof err->msg,
             "unknown backend '%s' (built-in: reference; a plugin is a path to a .so)", name);
    return -1;
}

void qh_backend_close(qh_backend *b)
{
    qh_worker_stop(b);
    if (b->be && b->be->close)
        b->be->close(b->be);
    if (b->dl)
        dlclose(b->dl);
    memset(b, 0, sizeof *b);
}
