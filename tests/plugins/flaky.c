/* tests/plugins/flaky.c — a plugin that answers through the reference, except that some of its
 * answers are wrong (every element of y changed): a backend that is not deterministic, or that
 * fails only on large cases, for test_reduce.c. Options, comma-separated:
 *   wrong=N   only the first N operator calls this table answers are wrong (default: all);
 *             the count lives in the table, so it runs over every case of one qmmcheck
 *             command (in the isolated worker as in process)
 *   min-k=K   only calls whose K (a's last dimension) is at least K are wrong
 *   right=N   the first N calls are right, every later one wrong (a kernel that passes a
 *             check and then answers otherwise: bench's timed rounds)
 * MatMulInteger and QLinearMatMul only (QOrderedMatMul: UNSUPPORTED). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmm/qmm.h"
#include "over_reference.h"

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

typedef struct flaky {
    qmm_backend *ref;
    uint64_t calls, wrong; /* calls answered; how many of the first are wrong */
    uint64_t right;        /* how many of the first are right (before the wrong ones) */
    int64_t min_k;
} flaky;

static qmm_status_code f_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const qmm_backend *ref = ((const flaky *)self->impl)->ref;
    if (call->op == QMM_OP_QORDEREDMATMUL)
        return qmm_status_set(st, QMM_UNSUPPORTED, "flaky: QOrderedMatMul is not supported");
    return ref->query(ref, call, st);
}

/* The reference's answer, then every element's low byte flipped when this call is a wrong one. */
static qmm_status_code answer(const qmm_backend *self, qmm_call *call, const qmm_tensor *a,
                              const qmm_tensor *y, qmm_status *st)
{
    flaky *f = self->impl;
    qmm_status_code rc = qmm_backend_run(f->ref, call, st);
    int64_t k = a->rank > 0 ? a->dims[a->rank - 1] : 0;
    uint64_t nth = f->calls++;
    if (nth >= f->right && nth - f->right < f->wrong && k >= f->min_k && rc == QMM_OK) {
        int64_t n = qmm_tensor_numel(y);
        size_t es = qmm_dtype_size(y->dtype);
        for (int64_t i = 0; i < n; i++)
            ((unsigned char *)y->data)[(size_t)i * es] ^= 1;
    }
    return rc;
}

static qmm_status_code f_mmi(const qmm_backend *self, const qmm_matmulinteger *c,
                             qmm_status *st)
{
    qmm_call call = {.op = QMM_OP_MATMULINTEGER, .u.matmulinteger = *c};
    return answer(self, &call, &c->a, &c->y, st);
}

static qmm_status_code f_qlmm(const qmm_backend *self, const qmm_qlinearmatmul *c,
                              qmm_status *st)
{
    qmm_call call = {.op = QMM_OP_QLINEARMATMUL, .u.qlinearmatmul = *c};
    return answer(self, &call, &c->a, &c->y, st);
}

/* "wrong=N,min-k=K,right=N" into f; 0, or -1 naming what it cannot read. */
static int parse(const char *options, flaky *f, qmm_status *st)
{
    char buf[256];
    f->wrong = UINT64_MAX;
    size_t len = strlen(options);
    if (len >= sizeof buf) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "flaky: options too long");
        return -1;
    }
    memcpy(buf, options, len + 1);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *end = NULL;
        if (strncmp(w, "wrong=", 6) == 0)
            f->wrong = strtoull(w + 6, &end, 10);
        else if (strncmp(w, "min-k=", 6) == 0)
            f->min_k = strtoll(w + 6, &end, 10);
        else if (strncmp(w, "right=", 6) == 0)
            f->right = strtoull(w + 6, &end, 10);
        if (!end || end == w + 6 || *end) {
            qmm_status_set(st, QMM_INVALID_ARGUMENT, "flaky: unknown option '%s'", w);
            return -1;
        }
    }
    return 0;
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("flaky", harness_abi, st))
        return NULL;
    qmm_backend *be = over_reference_table(harness_abi, "flaky",
                                           "the reference, with some answers wrong",
                                           sizeof(flaky), st);
    if (!be)
        return NULL;
    if (parse(options, be->impl, st) != 0) {
        be->close(be);
        return NULL;
    }
    be->query = f_query;
    be->matmulinteger = f_mmi;
    be->qlinearmatmul = f_qlmm;
    return be;
}
