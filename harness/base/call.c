/* harness/base/call.c — see call.h. */
#include "harness/base/call.h"

#include <stdlib.h>

void *qh_owned_call_alloc(qh_owned_call *o, size_t bytes)
{
    if (o->n_bufs == QH_CALL_MAX_BUFS)
        return NULL;
    void *d = calloc(1, bytes ? bytes : 1);
    if (d)
        o->bufs[o->n_bufs++] = d;
    return d;
}

void qh_owned_call_free(qh_owned_call *o)
{
    for (int i = 0; i < o->n_bufs; i++)
        free(o->bufs[i]);
    o->n_bufs = 0;
}
