/* harness/invoke/exec_proto.h — the messages of the external-process protocol (docs/exec-protocol.md).
 *
 * Pure encoding and decoding, no processes: the requests qmmcheck sends an `exec:` backend
 * (hello, query, call, close) as protobuf messages whose tensors are ONNX TensorProtos, and the
 * reply it reads back, checked field by field. harness/invoke/exec.c frames them and runs the
 * process.
 */
#ifndef QMM_HARNESS_EXEC_PROTO_H
#define QMM_HARNESS_EXEC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "harness/io/pb.h"
#include "qmm/qmm.h"

/* 2: every request carries a random id that its reply repeats (Request.id, Reply.id). */
#define QH_EXEC_PROTOCOL_VERSION 2

/* Request.kind and Reply.kind. */
enum { QH_EXEC_HELLO = 1, QH_EXEC_QUERY = 2, QH_EXEC_CALL = 3, QH_EXEC_CLOSE = 4 };

/* The largest frame qmmcheck reads for a hello, query or close answer, and what a call's
 * answer may hold beyond the bytes of y: both checked before anything is allocated. */
#define QH_EXEC_SMALL_MAX ((uint32_t)1 << 20)
#define QH_EXEC_CALL_SLACK ((uint32_t)1 << 20)

/* "hello", "query", "call", "close"; "?" for another value. */
const char *qh_exec_kind_name(int64_t kind);

/* Requests, appended to `b` (its `failed` flag says whether memory ran out). */
void qh_exec_put_hello(qh_pb_buf *b, const char *options);
void qh_exec_put_close(qh_pb_buf *b);
/* Request.id: the field harness/invoke/exec.c adds to each request as it sends it. */
void qh_exec_put_id(qh_pb_buf *b, uint64_t id);
/* A query (kind QH_EXEC_QUERY: types and shapes only) or a call (QH_EXEC_CALL: with the input
 * bytes). -1 with `why` when an input cannot be encoded. */
int qh_exec_put_call(qh_pb_buf *b, int kind, const qmm_call *c, char *why, size_t n);

typedef struct qh_exec_reply {
    int64_t kind, version, status;
    uint64_t id;            /* Reply.id: the id of the request it answers */
    int has_id;             /* 0: the reply has no id */
    char name[128];
    char description[256];
    char message[QMM_STATUS_MESSAGE_MAX];
    const uint8_t *output; /* the output TensorProto, pointing into the frame; NULL if absent */
    size_t output_len;
} qh_exec_reply;

/* Decodes a reply frame. Strings longer than their field here are cut; unknown fields are
 * skipped. -1 with `why` naming the field ("Reply.status: ...") when it is malformed. */
int qh_exec_read_reply(const uint8_t *p, size_t n, qh_exec_reply *r, char *why, size_t wn);

#endif /* QMM_HARNESS_EXEC_PROTO_H */
