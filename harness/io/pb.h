/* harness/io/pb.h — protobuf wire format: a bounds-checked field reader and a growable writer.
 *
 * Only the four wire types proto2/proto3 messages use today are accepted; groups (3, 4) and
 * the undefined types 6 and 7 are errors, since a node-test file never contains them and a
 * reader that tolerated them would have to guess at their extent.
 */
#ifndef QMM_HARNESS_PB_H
#define QMM_HARNESS_PB_H

#include <stddef.h>
#include <stdint.h>

enum {
    QH_PB_VARINT = 0,
    QH_PB_I64 = 1,
    QH_PB_LEN = 2,
    QH_PB_I32 = 5,
};

#define QH_PB_MAX_FIELD 536870911u /* 2^29 - 1 */

/* ---- reading ------------------------------------------------------------------------- */

typedef struct qh_pb_reader {
    const uint8_t *p;
    const uint8_t *end;
} qh_pb_reader;

/* One decoded field. For VARINT, I64 and I32 the value is in `u` (I32 zero-extended);
 * for LEN, `data`/`len` point into the reader's buffer. */
typedef struct qh_pb_field {
    uint32_t num; /* 0 when the tag itself could not be read */
    uint32_t wire;
    uint64_t u;
    const uint8_t *data;
    size_t len;
} qh_pb_field;

void qh_pb_reader_init(qh_pb_reader *r, const uint8_t *buf, size_t len);

/* 1: a field was read; 0: clean end of buffer; -1: malformed input, with `why` describing
 * the problem and f->num set to the field number when the tag was readable (so the caller
 * can name the field). */
int qh_pb_next(qh_pb_reader *r, qh_pb_field *f, char *why, size_t why_size);

/* Decodes one varint from [*p, end). 0 on success (advancing *p), -1 with `why` otherwise. */
int qh_pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v, char *why,
                      size_t why_size);

/* Little-endian loads; the caller has checked that enough bytes remain. */
uint32_t qh_pb_load32(const uint8_t *p);
uint64_t qh_pb_load64(const uint8_t *p);

const char *qh_pb_wire_name(uint32_t wire);

/* ---- writing ------------------------------------------------------------------------- */

/* A growable buffer. Any allocation failure or size overflow sets `failed`; later writes are
 * ignored, so an encoder checks once at the end. */
typedef struct qh_pb_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    int failed;
} qh_pb_buf;

void qh_pb_buf_init(qh_pb_buf *b);
void qh_pb_buf_free(qh_pb_buf *b);
/* Hands the bytes to the caller (who frees them) and resets the buffer. NULL when failed;
 * an empty buffer yields a 1-byte allocation so success is never NULL. */
uint8_t *qh_pb_buf_take(qh_pb_buf *b, size_t *len);

void qh_pb_put_raw(qh_pb_buf *b, const void *data, size_t len);
void qh_pb_put_varint(qh_pb_buf *b, uint64_t v);
void qh_pb_put_tag(qh_pb_buf *b, uint32_t num, uint32_t wire);

void qh_pb_put_varint_field(qh_pb_buf *b, uint32_t num, uint64_t v);
void qh_pb_put_fixed32_field(qh_pb_buf *b, uint32_t num, uint32_t v);
void qh_pb_put_fixed64_field(qh_pb_buf *b, uint32_t num, uint64_t v);
void qh_pb_put_bytes_field(qh_pb_buf *b, uint32_t num, const void *data, size_t len);
void qh_pb_put_string_field(qh_pb_buf *b, uint32_t num, const char *s);
/* Emits `sub` as a length-delimited field (even when empty: presence can matter) and
 * propagates its failure. */
void qh_pb_put_message_field(qh_pb_buf *b, uint32_t num, const qh_pb_buf *sub);

#endif /* QMM_HARNESS_PB_H */
