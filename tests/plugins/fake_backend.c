/* tests/plugins/fake_backend.c — a plugin built only from the public headers, whose answers
 * the CLI tests control with an option: mode=zeros (writes zeros: wrong almost everywhere),
 * mode=unsupported (answers UNSUPPORTED to everything), mode=accept (returns OK without
 * validating or writing anything), mode=badabi (a table claiming another ABI version),
 * mode=null (the entry point returns NULL). */
#include <stdlib.h>
#include <string.h>

#include "qmm/qmm.h"

typedef enum { MODE_ZEROS, MODE_UNSUPPORTED, MODE_ACCEPT, MODE_BADABI } mode;

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

static qmm_status_code fake_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    if (*(const mode *)self->impl == MODE_UNSUPPORTED)
        return qmm_status_set(st, QMM_UNSUPPORTED, "fake: mode=unsupported supports nothing");
    return qmm_status_ok(st);
}

static qmm_status_code fill(const qmm_backend *self, const qmm_tensor *y, qmm_status *st)
{
    mode m = *(const mode *)self->impl;
    if (m == MODE_UNSUPPORTED)
        return qmm_status_set(st, QMM_UNSUPPORTED, "fake: mode=unsupported supports nothing");
    if (m == MODE_ZEROS) {
        int64_t n = qmm_tensor_numel(y);
        if (n > 0)
            memset(y->data, 0, (size_t)n * qmm_dtype_size(y->dtype));
    }
    return qmm_status_ok(st);
}

static qmm_status_code fake_mmi(const qmm_backend *self, const qmm_matmulinteger *c,
                                qmm_status *st)
{
    return fill(self, &c->y, st);
}

static qmm_status_code fake_qlmm(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                 qmm_status *st)
{
    return fill(self, &c->y, st);
}

static void fake_close(qmm_backend *self)
{
    free(self->impl);
    free(self);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (harness_abi != QMM_ABI_VERSION) {
        qmm_status_set(st, QMM_UNSUPPORTED, "fake: built for ABI %u, harness has %u",
                       QMM_ABI_VERSION, harness_abi);
        return NULL;
    }
    mode m = MODE_ZEROS;
    if (strcmp(options, "") == 0 || strcmp(options, "mode=zeros") == 0)
        m = MODE_ZEROS;
    else if (strcmp(options, "mode=unsupported") == 0)
        m = MODE_UNSUPPORTED;
    else if (strcmp(options, "mode=accept") == 0)
        m = MODE_ACCEPT;
    else if (strcmp(options, "mode=badabi") == 0)
        m = MODE_BADABI;
    else if (strcmp(options, "mode=null") == 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "fake: asked to fail");
        return NULL;
    } else {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "fake: unknown option '%s'", options);
        return NULL;
    }
    qmm_backend *be = calloc(1, sizeof *be);
    mode *impl = malloc(sizeof *impl);
    if (!be || !impl) {
        free(be);
        free(impl);
        qmm_status_set(st, QMM_OUT_OF_MEMORY, "fake: out of memory");
        return NULL;
    }
    *impl = m;
    /* mode=badabi claims a table layout from another ABI version */
    be->abi_version = m == MODE_BADABI ? QMM_ABI_VERSION + 1000 : QMM_ABI_VERSION;
    be->struct_size = sizeof *be;
    be->name = "fake";
    be->description = "test plugin with scripted answers";
    be->impl = impl;
    be->query = fake_query;
    be->matmulinteger = fake_mmi;
    be->qlinearmatmul = fake_qlmm;
    be->close = fake_close;
    return be;
}
