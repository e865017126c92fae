/* harness/invoke/worker.h — starting the isolated worker's side (harness/invoke/worker.c). */
#ifndef QMM_HARNESS_WORKER_H
#define QMM_HARNESS_WORKER_H

#include <stdint.h>
#include <sys/types.h>

#include "harness/invoke/backends.h"

/* Runs in the freshly forked child: `sock` is its end of the socketpair, `out_w` the write end
 * of the capture pipe, `parent` qmmcheck's pid. Opens the backend named by b->spec, serves
 * requests until told to close or the parent goes, and never returns. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void qh_worker_child(const qh_backend *b, int sock, int out_w, pid_t parent);

/* The worker's entry under qemu (harness/invoke/cpu.c's, in the emulated executable): fd 3 is its
 * socket, 1 and 2 the capture. Sends its data size (wire_base), waits for the parent to set its
 * limit, then serves `spec` as qh_worker_child does; never returns. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void qh_worker_emulated(const char *spec);

/* The RLIMIT_DATA of a worker that uses `base` bytes before it opens its backend: `limit`
 * (--memory-limit; QH_MEMORY_LIMIT_DEFAULT: half the machine's memory) beyond base; 0 for no
 * limit (limit 0, or an AddressSanitizer build). */
uint64_t qh_worker_data_limit(uint64_t limit, uint64_t base);

#endif /* QMM_HARNESS_WORKER_H */
