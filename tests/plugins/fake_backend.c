/* tests/plugins/fake_backend.c — a plugin built only from the public headers, whose answers
 * the CLI tests control with an option: mode=zeros (writes zeros: wrong almost everywhere),
 * mode=unsupported (answers UNSUPPORTED to everything), mode=accept (returns OK without
 * validating or writing anything), mode=badabi (a table claiming another ABI version),
 * mode=null (the entry point returns NULL), mode=internal (every call answers INTERNAL). */
#include <stdlib.h>
#include <string.h>

#include "qmm/qmm.h"
#include "../plugin_support.h"

typedef enum { MODE_ZEROS, MODE_UNSUPPORTED, MODE_ACCEPT, MODE_BADABI, MODE_INTERNAL } mode;

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
    if (m == MODE_INTERNAL)
        return qmm_status_set(st, QMM_INTERNAL, "fake: mode=internal fails every call");
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

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("fake", harness_abi, st))
        return NULL;
    mode m = MODE_ZEROS;
    if (strcmp(options, "") == 0 || strcmp(options, "mode=zeros") == 0)
        m = MODE_ZEROS;
    else if (strcmp(options, "mode=unsupported") == 0)
        m = MODE_UNSUPPORTED;
    else if (strcmp(options, "mode=accept") == 0)
        m = MODE_ACCEPT;
    else if (strcmp(options, "mode=internal") == 0)
        m = MODE_INTERNAL;
    else if (strcmp(options, "mode=badabi") == 0)
        m = MODE_BADABI;
    else if (strcmp(options, "mode=null") == 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "fake: asked to fail");
        return NULL;
    } else {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "fake: unknown option '%s'", options);
        return NULL;
    }
    qmm_backend *be = plugin_table("fake", "test plugin with scripted answers", sizeof m, st);
    if (!be)
        return NULL;
    *(mode *)be->impl = m;
    /* mode=badabi claims a table layout from another ABI version */
    if (m == MODE_BADABI)
        be->abi_version = QMM_ABI_VERSION + 1000;
    be->query = fake_query;
    be->matmulinteger = fake_mmi;
    be->qlinearmatmul = fake_qlmm;
    return be;
}
