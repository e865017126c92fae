/* harness/invoke/exec.h — the `exec:` backend: a long-lived process speaking
 * docs/exec-protocol.md on its stdin and stdout.
 *
 * Spec: `exec[,OPTIONS]:COMMAND`. COMMAND (everything after the first ':', so it may hold ':'
 * and ',') is split into words as a shell would split plain words — blanks separate, '...'
 * and "..." quote, a backslash escapes — but nothing is expanded and no shell runs. OPTIONS
 * (key=value, ','-separated, before the ':') are handed to the process in its hello; that is
 * where `--determinism` puts its variants ("exec,threads=2:python3 be.py").
 *
 * The backend is a qmm_backend table like any other (opened by harness/invoke/backends.c), so
 * every path that calls a table calls it: isolated, a worker hosts it and the process is the
 * worker's child; in process (--no-isolate, the fuzz targets) qmmcheck is its parent, and the
 * process's stderr is captured here (qh_exec_take_output) rather than reaching qmmcheck's.
 */
#ifndef QMM_HARNESS_EXEC_H
#define QMM_HARNESS_EXEC_H

#include <stddef.h>

#include "harness/invoke/invoke.h"
#include "qmm/qmm.h"

/* 1 when the spec names the exec backend ("exec:..." or "exec,...:..."). */
int qh_exec_is_spec(const char *spec);

/* The entry point, in qmm_backend_open_fn's shape: `rest` is the spec after "exec"
 * (",OPTIONS:COMMAND" or ":COMMAND"). Starts the process and exchanges hellos; NULL with st
 * set when the command cannot run, the hello fails or the versions differ. */
qmm_backend *qh_exec_open(uint32_t harness_abi, const char *rest, qmm_status *st);

/* What happened to the last query and call beyond their status, taken (cleared) by the
 * caller: QH_RETURNED when nothing; QH_DIED (the process ended mid-call: `problem` names the
 * exit status or signal), QH_MALFORMED (its answer broke the protocol: `problem` names the
 * field) or QH_MISBEHAVED (an output of the wrong type or shape), with its qh_cause and
 * argument in *cause and *cause_arg. Any other table: always QH_RETURNED. */
qh_invoke_outcome qh_exec_take_event(const qmm_backend *be, char *problem, size_t n,
                                     qh_cause *cause, int32_t *cause_arg);

/* fn(ctx) is called before the backend starts a fresh process within a query or call (the one
 * before it ended after answering, or was replaced): an isolated worker tells its parent so
 * that the start is held to a start's limit, not the call's (harness/invoke/worker.c). Any
 * other table: nothing. */
void qh_exec_on_restart(qmm_backend *be, void (*fn)(void *ctx), void *ctx);

/* Asks the process to close (it has 2 s to answer) and ends it; the table's close does the
 * same when this was not called. QH_RETURNED, or QH_DIED / QH_MALFORMED / QH_HUNG /
 * QH_INTERRUPTED with `problem` ("close: ...") when the process died before answering,
 * answered garbage, did not answer in time, or the wait was interrupted. Any other table:
 * QH_RETURNED. */
qh_invoke_outcome qh_exec_finish(const qmm_backend *be, char *problem, size_t n);

/* What the process wrote on its stderr since the last take (at most QH_OUTPUT_KEEP bytes,
 * NUL-terminated, malloc'd into *text, replacing it; NULL stays when nothing) and how many
 * bytes beyond that were dropped. Raw: the caller cleans it before showing it. Nothing for
 * another table, or in a worker (qh_exec_pass_stderr). */
void qh_exec_take_output(const qmm_backend *be, char **text, size_t *dropped);

/* Called in an isolated worker before it opens a backend: processes started from then on
 * write their stderr to the worker's, which the parent captures already. */
void qh_exec_pass_stderr(void);

/* What a process printed before its start failed (out[0, n): its stderr, a traceback, as
 * kept; `dropped` bytes after it were not): appends to msg (NUL-terminated, in a buffer of
 * `size`, of which `reserve` bytes are left free) "; what it printed (6 lines) ends: " and its
 * last line cleaned, where a traceback says why; and keeps its last lines, at most 20 and 4 KiB
 * (cleaned), as detail lines for qh_open_printed (invoke.h). Nothing when it printed nothing
 * but newlines. */
void qh_append_printed(char *msg, size_t size, size_t reserve, const char *out, size_t n,
                       size_t dropped);


/* `exec[,OPTIONS]:COMMAND` with `extra` added to OPTIONS, for --determinism variants;
 * 0 when `base` is not an exec spec. */
int qh_exec_variant_spec(const char *base, const char *extra, char *out, size_t size);

#endif /* QMM_HARNESS_EXEC_H */
