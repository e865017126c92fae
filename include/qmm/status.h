/* qmm/status.h — what an operator call answers. */
#ifndef QMM_STATUS_H
#define QMM_STATUS_H

#include <stdarg.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* UNSUPPORTED is a first-class answer ("I do not implement this call"), never a failure. */
typedef enum qmm_status_code {
    QMM_OK = 0,
    QMM_UNSUPPORTED = 1,
    QMM_INVALID_ARGUMENT = 2,
    QMM_OUT_OF_MEMORY = 3,
    QMM_INTERNAL = 4,
} qmm_status_code;

#define QMM_STATUS_MESSAGE_MAX 512

/* The caller owns the status; a backend fills it in and never allocates for it. On QMM_OK the
 * message is empty. Messages name the input and the rule: "a_scale: must be finite and > 0". */
typedef struct qmm_status {
    qmm_status_code code;
    char message[QMM_STATUS_MESSAGE_MAX];
} qmm_status;

static inline const char *qmm_status_name(qmm_status_code c)
{
    switch (c) {
    case QMM_OK: return "OK";
    case QMM_UNSUPPORTED: return "UNSUPPORTED";
    case QMM_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case QMM_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case QMM_INTERNAL: return "INTERNAL";
    }
    return "UNKNOWN";
}

static inline qmm_status_code qmm_status_ok(qmm_status *st)
{
    if (st) {
        st->code = QMM_OK;
        st->message[0] = '\0';
    }
    return QMM_OK;
}

/* Sets code and a printf-style message; returns the code so a backend can
 * `return qmm_status_set(st, QMM_INVALID_ARGUMENT, "...")`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline qmm_status_code qmm_status_set(qmm_status *st, qmm_status_code code,
                                             const char *fmt, ...)
{
    if (st) {
        va_list ap;
        va_start(ap, fmt);
        st->code = code;
        vsnprintf(st->message, sizeof st->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* The answers every backend words alike, each made in one place. */

/* "<who>: <why>" with `code`: a backend's reason, such as why it will not compute anything
 * ("optimized:isa=amx,threads=2: this CPU has no AMX-INT8", "cuda: no CUDA device"). */
static inline qmm_status_code qmm_status_because(qmm_status *st, qmm_status_code code,
                                                 const char *who, const char *why)
{
    return qmm_status_set(st, code, "%s: %s", who, why);
}

/* QMM_OUT_OF_MEMORY, "<who>: out of memory", or with `what` "<who>: out of memory <what>"
 * ("for the packed operands", "packing b"). */
static inline qmm_status_code qmm_status_oom(qmm_status *st, const char *who, const char *what)
{
    return qmm_status_set(st, QMM_OUT_OF_MEMORY, "%s: out of memory%s%s", who, what ? " " : "",
                          what ? what : "");
}

#ifdef __cplusplus
}
#endif

#endif /* QMM_STATUS_H */
