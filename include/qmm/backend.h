/* qmm/backend.h — what a backend is: a table of function pointers.
 *
 * ABI rules
 * - QMM_ABI_VERSION changes whenever any struct in include/qmm/ changes layout or meaning.
 *   The harness passes its version to the plugin entry point; a plugin built for another
 *   version must return NULL with status QMM_UNSUPPORTED and a message naming both versions
 *   (qmm_backend_abi_check, below, does both).
 * - Structs are only ever passed by pointer; `struct_size` lets a newer harness detect an
 *   older table. Fields are never reordered within one ABI version. A field added within an
 *   ABI version goes at the END of the table: a table whose struct_size ends before it reads
 *   it as NULL (qmm_backend_has), so older plugins keep working and QMM_ABI_VERSION stays.
 *
 * Ownership
 * - The backend owns the qmm_backend it returns and everything `impl` points to; the harness
 *   calls `close` exactly once when done and never touches the table afterwards.
 * - The harness owns every tensor buffer (inputs and outputs) and every qmm_status. A backend
 *   never allocates, frees or retains them; input buffers may be read-only memory.
 * - Strings in the table (name, description) stay valid until `close`.
 *
 * Thread-safety
 * - `query`, the operator functions and `call` may be called concurrently from several threads on
 *   the same backend, with distinct calls (distinct output buffers). A backend that cannot
 *   allow this must serialise internally.
 * - `close` is never called concurrently with anything else on that backend.
 *
 * Errors
 * - Every function returns a qmm_status_code and fills the caller's qmm_status with the same
 *   code and a message. Library code never prints.
 */
#ifndef QMM_BACKEND_H
#define QMM_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qmm/ops.h"
#include "qmm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QMM_ABI_VERSION 1u

typedef struct qmm_backend qmm_backend;

struct qmm_backend {
    uint32_t abi_version; /* QMM_ABI_VERSION the backend was built against */
    uint32_t struct_size; /* sizeof(qmm_backend) at build time */
    const char *name;     /* short, stable: "reference", "optimized:isa=avx2", "acme-gemm" */
    const char *description;
    void *impl;           /* backend-private state */

    /* Capability query: QMM_OK when the backend will compute this call, QMM_UNSUPPORTED with
     * a reason when it will not. It looks only at types, shapes and attributes, never at
     * data. It need not validate; invalid calls are judged by the operator functions. */
    qmm_status_code (*query)(const qmm_backend *self, const qmm_call *call, qmm_status *st);

    /* Operators. A NULL pointer means the operator is unsupported. Each validates its call,
     * answering QMM_INVALID_ARGUMENT for input the operator's definition forbids, and on
     * QMM_OK has written every element of call->y. */
    qmm_status_code (*matmulinteger)(const qmm_backend *self, const qmm_matmulinteger *call,
                                     qmm_status *st);
    qmm_status_code (*qlinearmatmul)(const qmm_backend *self, const qmm_qlinearmatmul *call,
                                     qmm_status *st);
    qmm_status_code (*qorderedmatmul)(const qmm_backend *self, const qmm_qorderedmatmul *call,
                                      qmm_status *st);

    /* Releases the table and its state. */
    void (*close)(qmm_backend *self);

    /* Any operator, as a tagged call: read for an operator whose own pointer above is NULL,
     * and for every operator without one (those added after MatMulInteger, QLinearMatMul and
     * QOrderedMatMul have no pointer of their own: this is how a backend implements them).
     * The same contract as the operator functions; QMM_UNSUPPORTED for an operator it does
     * not compute. Added after `close` within ABI 1: a table whose struct_size ends before it
     * has none. */
    qmm_status_code (*call)(const qmm_backend *self, qmm_call *call, qmm_status *st);
};

/* Whether `table` holds `field` (a member of qmm_backend): a table older than this header
 * (smaller struct_size) ends before the fields added since, and they read as absent. */
#define qmm_backend_has(table, field)                                                         \
    ((table)->struct_size >= offsetof(qmm_backend, field) + sizeof(table)->field &&           \
     (table)->field != NULL)

/* The plugin entry point. A shared library exports one function with this name and type:
 *
 *   qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);
 *
 * `options` is the text after the first ':' in `--backend lib.so:options` (may be "" but never
 * NULL), a comma-separated list of key=value pairs the backend defines. On failure the entry
 * point returns NULL and fills `st` (unknown option: QMM_INVALID_ARGUMENT; ABI mismatch:
 * QMM_UNSUPPORTED). Each call returns an independent backend. */
#define QMM_PLUGIN_ENTRY "qmm_backend_open"

typedef qmm_backend *(*qmm_backend_open_fn)(uint32_t harness_abi, const char *options,
                                             qmm_status *st);

/* What every entry point does first, written once for every backend — built-in, peer or
 * plugin: a plugin built from these headers alone shares it (header-only, nothing to link).
 * Neither changes a struct, so QMM_ABI_VERSION stays. */

/* The ABI handshake: 1 when the harness speaks QMM_ABI_VERSION, the ABI these headers (and so
 * the backend) were built with; otherwise *st is QMM_UNSUPPORTED with "<who>: built for qmm ABI
 * <ours>, the harness speaks ABI <harness_abi>", 0 is returned, and the entry point returns
 * NULL. */
static inline int qmm_backend_abi_check(const char *who, uint32_t harness_abi, qmm_status *st)
{
    if (harness_abi == QMM_ABI_VERSION)
        return 1;
    qmm_status_set(st, QMM_UNSUPPORTED, "%s: built for qmm ABI %u, the harness speaks ABI %u",
                   who, (unsigned)QMM_ABI_VERSION, (unsigned)harness_abi);
    return 0;
}

/* For a backend that takes no options: 1 when `options` is empty (or NULL); else *st is
 * QMM_INVALID_ARGUMENT, "<who>: no options, got '<options>'", and 0 is returned. */
static inline int qmm_backend_no_options(const char *who, const char *options, qmm_status *st)
{
    if (!options || options[0] == '\0')
        return 1;
    qmm_status_set(st, QMM_INVALID_ARGUMENT, "%s: no options, got '%s'", who, options);
    return 0;
}

/* QMM_UNSUPPORTED, "<who>: operator <name> not implemented": the answer for an operator the
 * backend does not compute. */
static inline qmm_status_code qmm_status_no_operator(qmm_status *st, const char *who,
                                                     qmm_op_kind op)
{
    return qmm_status_set(st, QMM_UNSUPPORTED, "%s: operator %s not implemented", who,
                          qmm_op_name(op));
}

/* A table's fixed fields: the ABI version and struct size of these headers, the name and
 * description (they must stay valid until `close`) and impl; every function pointer NULL (the
 * caller then sets `query`, the operators it computes and `close`). */
static inline void qmm_backend_init(qmm_backend *be, const char *name, const char *description,
                                    void *impl)
{
    memset(be, 0, sizeof *be);
    be->abi_version = QMM_ABI_VERSION;
    be->struct_size = (uint32_t)sizeof *be;
    be->name = name;
    be->description = description;
    be->impl = impl;
}

/* One item of an option string: "threads=2" in "isa=avx2,threads=2". Spans point into the
 * string; `value` is empty when the item has no '='. */
typedef struct qmm_option {
    const char *item, *key, *value;
    int item_len, key_len, value_len;
} qmm_option;

/* Steps through a comma-separated option string, skipping empty items: returns 1 and fills
 * *opt while items remain, 0 at the end. `*cursor` starts at the string (NULL counts as ""). */
static inline int qmm_option_next(const char **cursor, qmm_option *opt)
{
    const char *p = *cursor ? *cursor : "";
    while (*p == ',')
        p++;
    if (*p == '\0') {
        *cursor = p;
        return 0;
    }
    const char *end = p;
    while (*end && *end != ',')
        end++;
    const char *eq = p;
    while (eq < end && *eq != '=')
        eq++;
    opt->item = p;
    opt->item_len = (int)(end - p);
    opt->key = p;
    opt->key_len = (int)(eq - p);
    opt->value = eq < end ? eq + 1 : end;
    opt->value_len = (int)(end - opt->value);
    *cursor = end;
    return 1;
}

/* 1 when the item's key is exactly `key`. */
static inline int qmm_option_is(const qmm_option *opt, const char *key)
{
    int n = 0;
    while (key[n])
        n++;
    if (n != opt->key_len)
        return 0;
    for (int i = 0; i < n; i++)
        if (opt->key[i] != key[i])
            return 0;
    return 1;
}

/* QMM_INVALID_ARGUMENT, "option '<item>': <what>" with `what` printf-formatted: an option the
 * backend does not know, or a value it refuses ("threads must be 1..256"). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline qmm_status_code qmm_option_refuse(qmm_status *st, const qmm_option *opt,
                                                const char *fmt, ...)
{
    char what[QMM_STATUS_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return qmm_status_set(st, QMM_INVALID_ARGUMENT, "option '%.*s': %s", opt->item_len,
                          opt->item, what);
}

/* Parses the value as a decimal integer in [lo, hi]: 1 and *out on success, 0 otherwise. */
static inline int qmm_option_int(const qmm_option *opt, long lo, long hi, long *out)
{
    if (opt->value_len == 0 || opt->value_len > 18)
        return 0;
    long v = 0;
    int neg = opt->value[0] == '-';
    for (int i = neg; i < opt->value_len; i++) {
        char c = opt->value[i];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (c - '0');
    }
    if (neg) {
        if (opt->value_len == 1)
            return 0;
        v = -v;
    }
    if (v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* Dispatches a tagged call through `table`, passing `self` to its functions: the operator's
 * own pointer when the table has one, else the generic `call`, else UNSUPPORTED. `table` and
 * `self` are the same backend except in a harness that keeps its own copy of a plugin's table
 * (as qmmcheck's does). */
static inline qmm_status_code qmm_backend_run_via(const qmm_backend *table,
                                                  const qmm_backend *self, qmm_call *call,
                                                  qmm_status *st)
{
    /* the three operators that predate `call` keep their own pointers; later ones have none */
    switch (call->op) {
    case QMM_OP_MATMULINTEGER:
        if (table->matmulinteger)
            return table->matmulinteger(self, &call->u.matmulinteger, st);
        break;
    case QMM_OP_QLINEARMATMUL:
        if (table->qlinearmatmul)
            return table->qlinearmatmul(self, &call->u.qlinearmatmul, st);
        break;
    case QMM_OP_QORDEREDMATMUL:
        if (table->qorderedmatmul)
            return table->qorderedmatmul(self, &call->u.qorderedmatmul, st);
        break;
    default:
        break;
    }
    if (call->op != QMM_OP_NONE && qmm_backend_has(table, call))
        return table->call(self, call, st);
    return qmm_status_no_operator(st, table->name ? table->name : "backend", call->op);
}

/* Dispatches a tagged call to the backend's own operator function. */
static inline qmm_status_code qmm_backend_run(const qmm_backend *be, qmm_call *call,
                                              qmm_status *st)
{
    return qmm_backend_run_via(be, be, call, st);
}

#ifdef __cplusplus
}
#endif

#endif /* QMM_BACKEND_H */
