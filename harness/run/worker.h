/* harness/run/worker.h — starting the isolated worker's side (harness/run/worker.c). */
#ifndef QMM_HARNESS_WORKER_H
#define QMM_HARNESS_WORKER_H

#include <sys/types.h>

#include "harness/run/backends.h"

/* Runs in the freshly forked child: `sock` is its end of the socketpair, `out_w` the write end
 * of the capture pipe, `parent` qmmcheck's pid. Opens the backend named by b->spec, serves
 * requests until told to close or the parent goes, and never returns. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void qh_worker_child(const qh_backend *b, int sock, int out_w, pid_t parent);

#endif /* QMM_HARNESS_WORKER_H */
