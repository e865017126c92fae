/* reference/backend.c — the reference as a qmm_backend table. */
#include <stdlib.h>
#include <string.h>

#include "reference/ref_internal.h"

/* Per-backend state; there is no global mutable state, so independent opens never interact
 * and the table is safe for concurrent calls (the computation only reads the call). */
typedef struct ref_impl {
    qmm_backend table;
} ref_impl;

static qmm_status_code ref_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    switch (call->op) {
    case QMM_OP_MATMULINTEGER:
    case QMM_OP_QLINEARMATMUL:
        /* Validation belongs to the operator call: invalid input is still "supported". */
        return qmm_status_ok(st);
    case QMM_OP_QORDEREDMATMUL:
        return qmm_status_set(st, QMM_UNSUPPORTED, "QOrderedMatMul: not implemented yet");
    case QMM_OP_NONE:
        break;
    }
    return qmm_status_set(st, QMM_UNSUPPORTED, "operator %d: unknown", (int)call->op);
}

static qmm_status_code ref_matmulinteger(const qmm_backend *self, const qmm_matmulinteger *c,
                                         qmm_status *st)
{
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_MATMULINTEGER;
    call.u.matmulinteger = *c; /* a shallow copy: y.data still points at the caller's buffer */
    return qmm_ref_compute(&call, NULL, NULL, st);
}

static qmm_status_code ref_qlinearmatmul(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                         qmm_status *st)
{
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_QLINEARMATMUL;
    call.u.qlinearmatmul = *c;
    return qmm_ref_compute(&call, NULL, NULL, st);
}

static void ref_close(qmm_backend *self)
{
    free(self ? self->impl : NULL);
}

/* Options are comma-separated key=value pairs; only profile=spec exists so far. */
static qmm_status_code parse_options(const char *options, qmm_status *st)
{
    const char *p = options ? options : "";
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t klen = eq ? (size_t)(eq - p) : len;
            if (klen != strlen("profile") || strncmp(p, "profile", klen) != 0)
                return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                      "option '%.*s': unknown (the reference accepts "
                                      "profile=spec)",
                                      (int)len, p);
            size_t vlen = eq ? len - klen - 1 : 0;
            if (!eq || vlen != strlen("spec") || strncmp(eq + 1, "spec", vlen) != 0)
                return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                                      "option '%.*s': unknown profile (the reference "
                                      "implements profile=spec)",
                                      (int)len, p);
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return QMM_OK;
}

qmm_backend *qmm_reference_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (harness_abi != QMM_ABI_VERSION) {
        qmm_status_set(st, QMM_UNSUPPORTED,
                       "reference: built for ABI %u, the harness speaks ABI %u",
                       (unsigned)QMM_ABI_VERSION, (unsigned)harness_abi);
        return NULL;
    }
    if (parse_options(options, st) != QMM_OK)
        return NULL;
    ref_impl *impl = calloc(1, sizeof *impl);
    if (!impl) {
        qmm_status_set(st, QMM_OUT_OF_MEMORY, "reference: out of memory");
        return NULL;
    }
    qmm_backend *be = &impl->table;
    be->abi_version = QMM_ABI_VERSION;
    be->struct_size = (uint32_t)sizeof *be;
    be->name = "reference";
    be->description = "exact reference (int64 accumulation, GMP rational requantization), "
                      "profile spec";
    be->impl = impl;
    be->query = ref_query;
    be->matmulinteger = ref_matmulinteger;
    be->qlinearmatmul = ref_qlinearmatmul;
    be->qorderedmatmul = NULL;
    be->close = ref_close;
    qmm_status_ok(st);
    return be;
}
