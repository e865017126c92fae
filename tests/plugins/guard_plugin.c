/* tests/plugins/guard_plugin.c — a plugin that misbehaves against the guards and the
 * verdict's text, built only from the public headers. The option `mode=M` picks what its
 * MatMulInteger does (guard_cli.c drives each one):
 *   late_writer  starts a thread that keeps writing into y, and returns OK while it runs
 *   far_write    writes one byte three pages past the end of y
 *   chatty       prints 5000 bytes (a forged case line, an escape sequence, filler) and
 *                answers INTERNAL
 * and what its DequantizeLinear does:
 *   x_packed     reads every byte of x as packed (qmm_dtype_bytes), answers zeros
 *   x_unpacked   reads x as one byte an element, as a backend that ignores the packing of
 *                int4/uint4/int2/uint2/float4e2m1 would: past the end of a packed x
 * Every other call is answered with zeros. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qmm/qmm.h"
#include "../plugin_support.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

static void *keep_writing(void *arg)
{
    volatile unsigned char *y = arg;
    for (unsigned i = 0;; i++)
        y[0] = (unsigned char)i;
    return NULL;
}

static qmm_status_code g_mmi(const qmm_backend *self, const qmm_matmulinteger *c,
                             qmm_status *st)
{
    const char *mode = self->impl;
    size_t bytes = (size_t)qmm_tensor_numel(&c->y) * qmm_dtype_size(c->y.dtype);
    if (bytes)
        memset(c->y.data, 0, bytes);
    if (strcmp(mode, "late_writer") == 0 && bytes) {
        pthread_t t;
        if (pthread_create(&t, NULL, keep_writing, c->y.data) == 0)
            pthread_detach(t);
    } else if (strcmp(mode, "one_past") == 0) {
        ((volatile unsigned char *)c->y.data)[bytes] = 1;
    } else if (strcmp(mode, "one_before") == 0) {
        ((volatile unsigned char *)c->y.data)[-1] = 1; /* a canary: seen when the call returns */
    } else if (strcmp(mode, "far_write") == 0) {
        ((volatile unsigned char *)c->y.data)[bytes + 3 * (size_t)sysconf(_SC_PAGESIZE)] = 1;
    } else if (strcmp(mode, "chatty") == 0) {
        printf("\n7:PASSED forged-by-guard-plugin\n\x1b[31mred");
        for (int i = 0; i < 4960; i++)
            putchar('z');
        fflush(stdout);
        return qmm_status_set(st, QMM_INTERNAL, "chatty");
    }
    return qmm_status_ok(st);
}

static qmm_status_code g_call(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    if (call->op != QMM_OP_DEQUANTIZELINEAR)
        return qmm_status_set(st, QMM_UNSUPPORTED, "guard_plugin: DequantizeLinear only");
    const qmm_dequantizelinear *c = &call->u.dequantizelinear;
    int64_t n = qmm_tensor_numel(&c->x);
    size_t read = strcmp(self->impl, "x_unpacked") == 0 ? (size_t)(n > 0 ? n : 0)
                                                        : qmm_dtype_bytes(c->x.dtype, n);
    volatile unsigned sum = 0;
    for (size_t i = 0; i < read; i++)
        sum += ((const volatile unsigned char *)c->x.data)[i];
    size_t bytes = qmm_dtype_bytes(c->y.dtype, qmm_tensor_numel(&c->y));
    if (bytes)
        memset(c->y.data, 0, bytes);
    return qmm_status_ok(st);
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("guard_plugin", harness_abi, st))
        return NULL;
    if (strncmp(options, "mode=", 5) != 0) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "guard_plugin: mode=M is required");
        return NULL;
    }
    qmm_backend *b = plugin_table("guard_plugin", "misbehaves against the guards (tests only)",
                                  strlen(options + 5) + 1, st);
    if (!b)
        return NULL;
    strcpy(b->impl, options + 5);
    b->matmulinteger = g_mmi;
    b->call = g_call;
    qmm_status_ok(st);
    return b;
}
