/* harness/invoke/invoke.h — calling a backend on one operator call. */
#ifndef QMM_HARNESS_INVOKE_H
#define QMM_HARNESS_INVOKE_H

#include <signal.h>
#include <stdint.h>

#include "harness/invoke/backends.h"
#include "qmm/qmm.h"

/* Opens the backend as `iso` says: in process (as qh_backend_open), or in a worker. Isolated,
 * the worker opens the backend and answers within iso->timeout_s: -1 with err when the entry
 * point refuses (NULL, ABI, options; out->refused set when it answered INVALID_ARGUMENT or
 * UNSUPPORTED); 0 when it is open — or when the open crashed or hung, which marks the backend
 * broken (out->broken_how says which): every later qh_invoke fails naming why. */
int qh_backend_open_isolated(const char *spec, const qh_isolation *iso, qh_backend *out,
                             qh_error *err);

/* After qh_backend_open or qh_backend_open_isolated failed on this thread: what the backend's
 * process printed on stderr before, its last lines, each "    | " and the line cleaned on its
 * own, one per line, after "    ... N earlier lines not shown" when some are left out
 * (qh_sb_detail_lines); "" when it printed nothing, or the open failed otherwise. Printed under
 * the error line, so a traceback reads as Python prints it (harness/invoke/exec.c). */
const char *qh_open_printed(void);
/* Forgets them: each open starts so. */
void qh_open_printed_clear(void);

/* Closes the backend; stops its worker (asking it to close the backend) if it has one. Safe
 * after qh_backend_finish. */
void qh_backend_close(qh_backend *b);

typedef struct qh_invoke_opts {
    int isolate;        /* run the call in a forked worker (crash/hang isolation) */
    double timeout_s;   /* with isolate: per-call limit, <= 0 for none */
    unsigned char fill; /* the byte the output is pre-filled with; 0 means 0xa5 */
    int inputs_as_given; /* in process: the call's inputs as they are (the fuzz targets'
                          * read-only pages, where any write faults), not copies compared
                          * with them after the call */
} qh_invoke_opts;

typedef enum qh_invoke_outcome {
    QH_RETURNED = 0,  /* the backend returned; `code` and `st` hold its answer */
    QH_DIED,          /* the worker died (crash): `problem` names the signal */
    QH_HUNG,          /* the worker passed the timeout and was killed */
    QH_MISBEHAVED,    /* returned, but broke a memory rule: `problem` says which */
    QH_INTERRUPTED,   /* qh_interrupted was set while waiting; the worker was killed */
    QH_MALFORMED,     /* an exec: backend's answer broke docs/exec-protocol.md: `problem`
                       * names the field (harness/invoke/exec.h) */
} qh_invoke_outcome;

/* Why a call did not return normally (QH_DIED, QH_HUNG, QH_MISBEHAVED, QH_MALFORMED), as a
 * number: the judge carries it into the verdict and reduce compares it, so no class is ever
 * recovered from `problem`, which says the same in words. cause_arg refines it where noted. */
typedef enum qh_cause {
    QH_CAUSE_NONE = 0,
    QH_CAUSE_SIGNAL,       /* killed by a signal: cause_arg is its number */
    QH_CAUSE_EXITED,       /* exited (any status) where it had to answer */
    QH_CAUSE_ENDED,        /* ended otherwise, or answered garbage */
    QH_CAUSE_NO_ANSWER,    /* no answer within the timeout: killed (QH_HUNG) */
    QH_CAUSE_EMULATOR_OOM, /* qemu-x86_64 ran out of memory under --memory-limit */
    QH_CAUSE_NOT_OPENED,   /* a restarted worker's qmm_backend_open failed */
    QH_CAUSE_GUARD,        /* a guard caught an access: cause_arg is QH_GUARD_CAUSE (guard.h) */
    QH_CAUSE_LEFT_OVER,    /* a write after the previous call returned: cause_arg as GUARD's */
    QH_CAUSE_DIED_BETWEEN, /* the worker died after the previous call returned */
    QH_CAUSE_PROTOCOL,     /* an exec: answer broke docs/exec-protocol.md (QH_MALFORMED) */
    QH_CAUSE_WRONG_OUTPUT, /* an exec: answer's output is not of y's type and shape */
    QH_CAUSE_COUNT
} qh_cause;

/* The cause's stable name (docs/formats.md, "Verdicts"): "signal", "no-answer", "guard", ... */
const char *qh_cause_name(qh_cause c);

/* How a worker or process ended, from its wait status: SIGNAL (the signal in *arg), EXITED
 * or ENDED. */
qh_cause qh_cause_of_status(int status, int32_t *arg);

typedef struct qh_invocation {
    qh_invoke_outcome outcome;
    qh_cause cause;      /* why, where outcome is not QH_RETURNED or QH_INTERRUPTED */
    int32_t cause_arg;
    qmm_status_code code;
    qmm_status st;
    qmm_tensor y;        /* owned: the output as the backend left it */
    void *y_map;         /* isolated: the shared mapping y.data points into (unmapped by
                          * qh_invocation_free); NULL when y.data is malloc'd */
    size_t y_map_len;
    char problem[256];
    char *output;          /* owned, NUL-terminated: what the worker printed on stdout and stderr
                            * during the call, raw bytes (at most QH_OUTPUT_KEEP); NULL if none */
    size_t output_dropped; /* bytes printed beyond what was kept */
} qh_invocation;

/* What a backend that could not run printed, for qh_open_printed: appended to msg as
 * qh_append_printed does (exec.h), or forgotten when it printed nothing. From a call that
 * could not run (inv->output), or from an open that hung or died in its worker (b->captured). */
void qh_append_call_printed(char *msg, size_t size, const qh_invocation *inv);
void qh_append_open_printed(char *msg, size_t size, const qh_backend *b);
/* Why a backend whose isolated open hung or died cannot run (b->broken), cleaned, and what it
 * printed before (qh_append_open_printed): a command's "SPEC could not be opened: WHY". */
void qh_backend_why_broken(const qh_backend *b, char *why, size_t size);

#define QH_OUTPUT_KEEP 4096

/* Asks the backend's capability query, then runs the call (whose y carries dtype and shape).
 * A query answering UNSUPPORTED is returned as code UNSUPPORTED without running. Both get
 * copies of the call, never `call` itself. The call runs in the backend's worker when the
 * backend was opened isolated or o->isolate is set (o may be NULL: in process, no timeout).
 * Returns 0, or -1 when the harness itself failed (memory) or the backend is broken (its
 * isolated open crashed or hung), with `problem` set. */
int qh_invoke(qh_backend *b, const qmm_call *call, const qh_invoke_opts *o, qh_invocation *out);
void qh_invocation_free(qh_invocation *inv);
/* Copies an isolated call's output out of the mapping the worker shares into the harness's
 * own memory, so that nothing the worker does afterwards (a thread left running, a plugin
 * that unprotects its mapping) can change the answer while it waits to be judged. 0, or -1
 * when memory runs out (the mapping is kept). */
int qh_invocation_detach(qh_invocation *inv);

/* Set (to the signal number) by qmmcheck's SIGINT/SIGTERM handler: every wait on a worker
 * returns promptly once it is set, and the worker is killed. */
extern volatile sig_atomic_t qh_interrupted;

/* Stops the backend's worker, if it has one, asking it to close the backend first (within
 * the backend's iso.timeout_s). Returns 0, or QH_DIED / QH_HUNG / QH_INTERRUPTED with `why`
 * when close crashed, hung or was interrupted, or QH_MALFORMED when an exec: process answered
 * close with garbage (qh_exec_finish, which also closes an in-process exec: backend here).
 * The worker's process group is killed in every case. qh_backend_close stays safe to call
 * afterwards. */
int qh_backend_finish(qh_backend *b, char *why, size_t n);

/* Seconds on the monotonic clock: for deadlines and durations. */
double qh_mono_seconds(void);

/* How long a wait on a process may poll before it looks again at the process's death,
 * qh_interrupted and `deadline` (monotonic seconds, 0: none): at most 50 ms; -1 once the
 * deadline has passed. */
int qh_poll_slice_ms(double deadline);

/* Ends the backend's worker process, if it has one (qh_backend_close calls this). */
void qh_worker_stop(qh_backend *b);

/* For qh_backend_open_isolated: starts b's worker (b->spec, b->iso set), which opens the
 * backend. 0 when it answered it is open, or when it crashed or hung (b->broken says how);
 * -1 with err when the backend refused to open. */
int qh_worker_open(qh_backend *b, qh_error *err);

#endif /* QMM_HARNESS_INVOKE_H */
