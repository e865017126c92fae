/* harness/invoke/backends.h — turning `--backend SPEC` into an open backend.
 *
 * SPEC is NAME[:OPTIONS]. NAME is a built-in backend ("reference") or a path to a shared
 * library (it contains a '/' or ends in ".so"), which must export QMM_PLUGIN_ENTRY.
 *
 * A backend is opened either in process (qh_backend_open: the table lives in qmmcheck) or
 * isolated (qh_backend_open_isolated: a worker process opens it, and every call into it —
 * query, the operators, close — runs there; qmmcheck never loads the library).
 */
#ifndef QMM_HARNESS_BACKENDS_H
#define QMM_HARNESS_BACKENDS_H

#include <stdint.h>

#include "harness/io/onnx_io.h"
#include "qmm/qmm.h"

/* How a backend is isolated. */
typedef struct qh_isolation {
    int isolate;           /* -1: plugins isolated, built-ins not; 0 never; 1 always */
    double timeout_s;      /* limit for each call, query and close in the worker; <= 0 for none */
    double start_s;        /* --start-timeout: a worker's start (its process and the backend's
                            * open); 0: the default (timeout_s, at least QH_START_S); < 0: none
                            * (harness/invoke/cpu.h, qh_cpu_start_timeout) */
    uint64_t memory_limit; /* per worker, bytes; 0 for none; QH_MEMORY_LIMIT_DEFAULT */
    const struct qh_cpu_target *cpu; /* --cpu: the class the worker's backend runs under
                                     * (harness/invoke/cpu.h); NULL for native */
} qh_isolation;

/* --timeout's default, and the most --timeout and --start-timeout take, seconds (run, repro,
 * diff, reduce, fingerprint alike: a __REPRO: line one command prints, another reads). */
#define QH_TIMEOUT_S_DEFAULT 30.0
#define QH_TIMEOUT_S_MAX 1e6

/* Half the machine's physical memory, resolved when a worker starts. */
#define QH_MEMORY_LIMIT_DEFAULT UINT64_MAX

typedef struct qh_backend {
    qmm_backend *be;       /* in process: the backend's own table, passed as `self`;
                            * NULL when isolated */
    qmm_backend table;     /* the harness's full-size copy of the table that every call reads
                            * its function pointers from (what an older table lacks is NULL) */
    void *dl;              /* dlopen handle for plugins, NULL for built-ins */
    char spec[1024];       /* as given on the command line, used in __REPRO: lines */
    int is_plugin;
    int isolated;          /* opened by a worker: every call runs there */
    qh_isolation iso;
    int has_query;         /* the table has a capability query */
    char broken[256];      /* isolated only: why the backend cannot run ("" when it can) */
    int broken_how;        /* with broken: how its open ended (qh_invoke_outcome: QH_DIED,
                            * QH_HUNG or QH_INTERRUPTED) */
    int refused;           /* after an open that failed: the backend's entry point answered no
                            * backend with INVALID_ARGUMENT or UNSUPPORTED (it refused the
                            * spec's options), rather than failing some other way */
    /* The isolated worker (harness/invoke/invoke.c); worker_pid 0 when none. */
    int worker_pid;
    int worker_fd;         /* the socket */
    int worker_out;        /* read end of the worker's stdout/stderr pipe */
    int worker_dead;       /* reaped; worker_status holds how it ended */
    int worker_status;
    uint32_t seq;          /* number of the last call sent */
    int qemu_oom;          /* --cpu: qemu itself ran out of memory in the worker (cpu.h) */
    int32_t end_cause, end_arg; /* how the last worker ended (qh_cause, invoke.h) */
    int32_t why_cause, why_arg; /* the cause of the last failed wait's explanation */
    char *captured;        /* what the worker printed since the last call took it */
    size_t captured_len, captured_dropped;
} qh_backend;

/* err's message for a spec of `len` bytes that does not fit a qh_backend's spec (the limit
 * named: "backend spec too long (N bytes; at most M)"). */
void qh_spec_too_long(qh_error *err, size_t len);

/* In process. 0 on success; -1 with err for an unknown name, a missing entry point, an ABI
 * mismatch, a table too small, a NULL table or options the backend rejects. */
int qh_backend_open(const char *spec, qh_backend *out, qh_error *err);

/* Copies a backend's table into the harness's full-size `copy`, zero-filling what an older
 * (smaller struct_size) table lacks. -1 with a message for a table smaller than the fixed
 * header every version has (abi_version through impl). */
int qh_table_adopt(const qmm_backend *raw, qmm_backend *copy, char *msg, size_t size);

/* Closes an in-process backend: its close, then the plugin's library (qh_backend_close in
 * harness/invoke/invoke.h also stops a worker first). */
void qh_backend_release(qh_backend *b);

/* Whether the NAME part of a spec names a plugin: not a built-in name (which wins), and it
 * holds a '/', ends in ".so" or is an existing file. */
int qh_spec_is_plugin(const char *name);

/* `spec` with its NAME part ("onednn", "xnnpack") replaced by the peer plugin's path when NAME
 * is neither a built-in, a plugin path nor exec, and peers/NAME/libqmm_peer_NAME.so is beside this
 * qmmcheck's build folder (build/harness/qmmcheck -> build/peers/); the spec unchanged
 * otherwise (also when the result would not fit `size`). Every command opens backends through
 * it, so `--backend onednn` means the same to run, diff, fingerprint, reduce and bench. */
void qh_spec_resolve_peer(const char *spec, char *out, size_t size);

/* Warns on stderr, once per plugin, that it has no capability query. */
void qh_warn_no_query(const char *spec);

/* The built-in backend names, NULL-terminated, for `qmmcheck list --backends`. */
extern const char *const qh_builtin_backends[];

/* Calls into an open backend's table in this process (the worker's, or the harness's own when
 * not isolated): through the harness's copy of the table, with the backend's own pointer as
 * `self`. qh_backend_call runs the call's operator (UNSUPPORTED for one the table lacks);
 * qh_backend_ask asks the capability query on a copy of the call, so the query cannot change
 * what runs, and answers QMM_OK or QMM_UNSUPPORTED (OK when there is no query). */
/* From the command's own process, once: a backend that calls exit() while its code runs in this
 * process (open, query, operator call, close) ends it with status 1 and a line on stderr
 * saying so, never with the backend's own status (0 read as a pass). */
void qh_backend_watch_exit(void);
qmm_status_code qh_backend_call(const qh_backend *b, qmm_call *c, qmm_status *st);
qmm_status_code qh_backend_ask(const qh_backend *b, const qmm_call *call, qmm_status *st);

#endif /* QMM_HARNESS_BACKENDS_H */
