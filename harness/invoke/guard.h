/* harness/invoke/guard.h — memory guards around a backend call (docs/architecture.md §2,
 * docs/isolation.md).
 *
 * Every tensor lives in its own mapping with an inaccessible zone of QH_GUARD_ZONE bytes on
 * each side, so a stray access up to that far before or past a tensor faults inside that
 * tensor's zone and is blamed on it, never on a neighbour. Inputs are read-only and end exactly
 * at their rear zone, so writing into an input, or reading past its end, faults. The output
 * ends exactly at its rear zone (a write past its end faults) and has canary bytes in front of
 * it from the start of its first page (a write just before its start is found after the call;
 * one further before faults in its front zone).
 *
 * After the backend returns, the worker seals the output read-only (a thread the backend left
 * running faults the moment it writes again) and, at the end of the call, retires the regions:
 * they stay mapped but inaccessible until the next call retires its own, so a write later still
 * faults inside a known region and is blamed on the call that owned it.
 *
 * A fault inside a guarded region is turned into a sentence naming the region by the fault
 * handler, which only the isolated worker installs.
 */
#ifndef QMM_HARNESS_GUARD_H
#define QMM_HARNESS_GUARD_H

#include <stddef.h>
#include <stdint.h>

#define QH_GUARD_MAX_REGIONS 16
#define QH_CANARY_BYTE 0xcb
/* Inaccessible bytes on each side of a tensor. Reserved address space only: PROT_NONE pages
 * cost no memory and do not count against RLIMIT_DATA. */
#define QH_GUARD_ZONE ((size_t)4 << 20)
/* The longest qh_guard_seal waits, while another thread of the process is running, for a
 * thread the backend left running to write into the sealed output. */
#define QH_GUARD_GRACE_NS 10000000L

typedef struct qh_guarded {
    unsigned char *map;   /* the whole mapping, zones included */
    size_t map_len;
    unsigned char *data;  /* where the tensor's bytes start */
    size_t len;           /* the tensor's bytes */
    size_t canary_len;    /* bytes in front of data (outputs only) */
    char name[32];
    int writable;
} qh_guarded;

/* Places `len` bytes (copied from src) in read-only pages between two zones, ending at the
 * rear one. */
int qh_guard_input(qh_guarded *g, const char *name, const void *src, size_t len);
/* Places a writable buffer of `len` bytes, filled with `fill`, between two zones, ending at
 * the rear one, with canaries in front of it. */
int qh_guard_output(qh_guarded *g, const char *name, size_t len, unsigned char fill);
/* Number of canary bytes in front of an output that were overwritten. */
size_t qh_guard_canaries_hit(const qh_guarded *g);
/* Unmaps the region now (error paths; a finished call retires instead). */
void qh_guard_free(qh_guarded *g);

/* Installs a SIGSEGV/SIGBUS handler that, for a fault inside one of `regions` or inside a
 * region retired by the previous call, writes a sentence ("wrote into input b", "wrote 12288
 * bytes past the end of y", "read 8 bytes before the start of input a", "wrote into y after
 * the call returned", "a thread of the previous call wrote into its y after the call
 * returned") through `report` to fd, then _exits with status 0. Faults elsewhere re-raise the
 * signal so the parent sees a crash. The regions are copied: the caller's array need not
 * outlive the call. Call once per backend call, after placing the tensors. */
typedef void (*qh_fault_reporter)(int fd, int32_t cause_arg, const char *sentence);

/* What a guard caught, as the number the reporter gets with the sentence (the invocation's
 * cause_arg for QH_CAUSE_GUARD, harness/invoke/invoke.h): the kind, the access (0 read, 1
 * write, 2 either) and the region's index among the call's tensors (the output last). */
enum {
    QH_GUARD_PREVIOUS_THREAD = 1, /* a thread of the previous call, after it returned */
    QH_GUARD_AFTER_RETURN,        /* into the output after the call returned */
    QH_GUARD_PAST_END,
    QH_GUARD_BEFORE_START,        /* the zone before a tensor, or an output's canaries */
    QH_GUARD_READ_ONLY,           /* into an input */
};
#define QH_GUARD_CAUSE(kind, access, region)                                                 \
    ((int32_t)(kind) | (int32_t)(access) << 4 | (int32_t)(region) << 8)
void qh_guard_install_handler(const qh_guarded *regions, int n, int fd, qh_fault_reporter report);

/* Called by the worker right after the backend returns, before reading the output: makes the
 * writable regions read-only, so a later write by a thread the backend left running faults
 * inside y ("wrote into y after the call returned"). While another thread of the process is
 * running or runnable it then waits, at most QH_GUARD_GRACE_NS, so such a thread is caught
 * within the call that made it; when every other thread sleeps (an idle pool) or there is
 * none, it only looks at /proc/self/task once. */
void qh_guard_seal(qh_guarded *g, int n);

/* Called by the worker at the end of a call instead of qh_guard_free: makes the regions
 * inaccessible but keeps them mapped (and known to the handler) until the next call retires
 * its own, then unmaps the older ones. Leaves g[0..n) empty, so qh_guard_free on them is a
 * no-op. */
void qh_guard_retire(qh_guarded *g, int n);

#endif /* QMM_HARNESS_GUARD_H */
