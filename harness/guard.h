/* harness/guard.h — memory guards around a backend call (DESIGN §5).
 *
 * Every input lives in read-only pages and ends exactly at a PROT_NONE page, so a backend
 * that writes into an input, or reads past its end, faults. The output ends exactly at a
 * PROT_NONE page (a write past its end faults) and has canary bytes in front of it from the
 * start of its first page (a write before its start is found after the call). A fault inside
 * a guarded region is turned into a sentence naming the region by the fault handler, which
 * only the isolated worker installs.
 */
#ifndef QMM_HARNESS_GUARD_H
#define QMM_HARNESS_GUARD_H

#include <stddef.h>

#define QH_GUARD_MAX_REGIONS 16
#define QH_CANARY_BYTE 0xcb

typedef struct qh_guarded {
    unsigned char *map;   /* the whole mapping */
    size_t map_len;
    unsigned char *data;  /* where the tensor's bytes start */
    size_t len;           /* the tensor's bytes */
    size_t canary_len;    /* bytes in front of data (outputs only) */
    char name[32];
    int writable;
} qh_guarded;

/* Places `len` bytes (copied from src) in read-only pages ending at a guard page. */
int qh_guard_input(qh_guarded *g, const char *name, const void *src, size_t len);
/* Places a writable buffer of `len` bytes, filled with `fill`, ending at a guard page, with
 * canaries in front of it. */
int qh_guard_output(qh_guarded *g, const char *name, size_t len, unsigned char fill);
/* Number of canary bytes in front of an output that were overwritten. */
size_t qh_guard_canaries_hit(const qh_guarded *g);
void qh_guard_free(qh_guarded *g);

/* Installs a SIGSEGV/SIGBUS handler that, for a fault inside one of `regions`, writes
 * `prefix` + a sentence ("wrote into input b", "wrote 1 byte past y", "read past the end of
 * input a") to fd with the framing the caller gives, then _exits with status 0. Faults
 * elsewhere re-raise the signal so the parent sees a crash. The table is read by the signal
 * handler; it belongs to the worker process, which runs one call at a time. */
typedef void (*qh_fault_reporter)(int fd, const char *sentence);
void qh_guard_install_handler(const qh_guarded *regions, int n, int fd, qh_fault_reporter report);

#endif /* QMM_HARNESS_GUARD_H */
