/* harness/invoke.c — calling a backend. */
#include "harness/invoke.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/case.h"
#include "harness/expect.h"

int qh_invoke(qh_backend *b, const qmm_call *call, const qh_invoke_opts *o, qh_invocation *out)
{
    (void)o;
    memset(out, 0, sizeof *out);
    qmm_status_ok(&out->st);
    qmm_call c = *call;
    if (b->be->query && b->be->query(b->be, &c, &out->st) == QMM_UNSUPPORTED) {
        out->code = QMM_UNSUPPORTED;
        return 0;
    }
    qmm_tensor *y = qh_call_output(&c);
    out->y = *y;
    /* A poison fill makes an element the backend forgets to write unlikely to match. */
    if (qh_alloc_tensor(&out->y, 0xa5) != 0) {
        snprintf(out->problem, sizeof out->problem, "cannot allocate the output");
        return -1;
    }
    y->data = out->y.data;
    qmm_status_ok(&out->st);
    out->code = qmm_backend_run(b->be, &c, &out->st);
    out->outcome = QH_RETURNED;
    return 0;
}

void qh_invocation_free(qh_invocation *inv)
{
    free(inv->y.data);
    inv->y.data = NULL;
}
