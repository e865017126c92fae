/* harness/invoke/wire.h — the protocol between qmmcheck and an isolated worker.
 *
 * harness/invoke/invoke.c is the parent's side, harness/invoke/worker.c the worker's. One request at a time
 * on a socketpair: a hello from the worker once the backend is open, then per request a
 * wire_request (with the output's memfd as SCM_RIGHTS), the input tensors (each a wire_tensor
 * and its bytes), and a wire_reply. Internal to the harness: both sides are the same binary.
 */
#ifndef QMM_HARNESS_WIRE_H
#define QMM_HARNESS_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ops/qmm_ops.h"
#include "qmm/qmm.h"

typedef struct wire_hello {
    uint32_t magic;
    int32_t ok;        /* the backend is open */
    int32_t has_query;
    int32_t refused;   /* not open: the entry point refused (qh_backend.refused) */
    char message[512]; /* why it is not */
} wire_hello;

/* An emulated worker's first message, before it opens the backend (harness/invoke/cpu.h): its
 * data size, for the parent to set the worker's RLIMIT_DATA with prlimit (qemu-user ignores a
 * guest's own setrlimit of it). The parent answers one byte; the hello follows. */
typedef struct wire_base {
    uint32_t magic, pad;
    uint64_t data_in_use;
} wire_base;

enum { REQ_CALL = 1, REQ_CLOSE = 2 };

typedef struct wire_request {
    uint32_t magic, kind, seq, fill;
    int32_t op, opset;
    int32_t attrs[QMM_MAX_OP_ATTRS]; /* the operator's attributes (ops/operator.h) */
    int32_t n_tensors;
    uint64_t map_len; /* bytes of the output memfd sent with the request (0: none) */
} wire_request;

typedef struct wire_tensor {
    int32_t dtype, rank;
    int64_t dims[QMM_MAX_RANK];
    uint64_t bytes;
} wire_tensor;

typedef struct wire_reply {
    uint32_t magic, seq;
    int32_t outcome; /* qh_invoke_outcome */
    int32_t cause, cause_arg; /* qh_cause and its argument, where outcome says why */
    int32_t code;
    char message[QMM_STATUS_MESSAGE_MAX];
    char problem[256];
    int32_t exiting; /* sent by the fault handler: the worker is gone after this */
    int32_t late;    /* the fault came after the call `seq` returned */
    uint64_t offset; /* where y starts in the memfd */
} wire_reply;

#define HELLO_MAGIC 0x484d4d51u /* "QMMH" */
#define REQ_MAGIC 0x514d4d51u   /* "QMMQ" */
#define REP_MAGIC 0x524d4d51u   /* "QMMR" */
#define BASE_MAGIC 0x424d4d51u  /* "QMMB" */
/* A wire_reply with this magic and the call's seq, before the call's own reply: the worker's
 * exec: backend is starting a fresh process within the call (its last one ended after
 * answering), so the parent gives the call a start's time more (qh_cpu_start_timeout) */
#define START_MAGIC 0x534d4d51u /* "QMMS" */
/* The most START_MAGIC notices one call may bring: its query and its run are one request
 * each to the exec: process (harness/invoke/exec.c, request), and each may start a fresh
 * process twice (the last one ended after answering; the fresh one ended without reading
 * the request, which is resent once). More is a garbled reply. */
#define QH_WIRE_MAX_STARTS 4

/* The tensors of a call in node order, the output last: pointers into `c` and the names the
 * guards report (the inputs' ONNX names from ops/operator.h, then "y"). Returns how many (0 for an empty call). */
#define QH_CALL_MAX_TENSORS (QMM_MAX_OP_INPUTS + 1)
int qh_call_tensors(qmm_call *c, qmm_tensor **t, const char **names);
/* The call's operator, opset and attributes into a request, and back into an empty call
 * (the tensors travel separately). */
void qh_wire_put_scalars(const qmm_call *c, wire_request *rq);
void qh_wire_get_scalars(const wire_request *rq, qmm_call *c);
/* The bytes of a tensor's data (0 when absent or empty). */
size_t qh_tensor_bytes(const qmm_tensor *t);
size_t qh_page_size(void);

/* A message of n bytes at p with room for one file descriptor (the output's memfd). */
typedef struct qh_fd_msg {
    struct iovec iov;
    struct msghdr mh;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cb;
} qh_fd_msg;

void qh_fd_msg_init(qh_fd_msg *m, void *p, size_t n);

#endif /* QMM_HARNESS_WIRE_H */
