/* harness/io/pb_walk.h — reading a protobuf message through its field table.
 *
 * A message is described by a table: one row per field it names, with the field's number and
 * name, the wire type the field must have, and what to do with it (a handler, given the row and
 * the destination). qh_pb_walk reads the fields in order, finds each one's row, checks its wire
 * type (here, and only here) and calls the handler. A field the table does not name is skipped
 * by its wire type, as protobuf does; a named field without a handler is checked and skipped.
 *
 * Errors name the source, the message and the field: "<what>: <Message>.<field>: <problem>",
 * e.g. "input_0.pb: TensorProto.raw_data: length 4294967295 runs past the end (12 bytes left)".
 */
#ifndef QMM_HARNESS_PB_WALK_H
#define QMM_HARNESS_PB_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/error.h"
#include "harness/io/pb.h"

/* A row's wire: one of QH_PB_VARINT, QH_PB_I64, QH_PB_LEN, QH_PB_I32; with QH_PB_OR_PACKED also
 * a length-delimited run of them (a packed repeated scalar); or QH_PB_ANY_WIRE, any wire type
 * (a field the handler refuses whatever its form, or one named only for messages).
 * QH_PB_ONE_DATA marks the fields of which one only may carry the message's data (TensorProto's
 * typed fields): another one after it is refused, before its wire type is looked at, as
 * "<Message>.<field>: data also given in <the first>". */
#define QH_PB_OR_PACKED 0x10u
#define QH_PB_ANY_WIRE 0x20u
#define QH_PB_ONE_DATA 0x40u

/* Where the bytes came from, for every message read from them. */
typedef struct qh_pb_source {
    const char *what; /* a path, or NULL: "<memory>" */
    qh_error *err;    /* NULL: errors are not formatted */
} qh_pb_source;

typedef struct qh_pb_message qh_pb_message;

/* A field's handler: 0, or -1 with the error set (qh_pb_fail). `dst` is qh_pb_walk's; the row
 * is m->row. */
typedef int (*qh_pb_read_fn)(const qh_pb_message *m, const qh_pb_field *f, void *dst);

typedef struct qh_pb_row {
    uint32_t num;
    const char *name;   /* NULL: messages name it by number */
    uint32_t wire;      /* see above */
    qh_pb_read_fn read; /* NULL: checked and skipped */
    size_t offset;      /* for the generic handlers below: where in dst */
    size_t size;        /* qh_pb_read_string's: the array's size */
} qh_pb_row;

/* A message type: its name and its rows, ended by a row whose num is 0. */
typedef struct qh_pb_table {
    const char *name; /* "TensorProto" */
    const qh_pb_row *rows;
} qh_pb_table;

/* One message being read (what a handler is given, to name it in errors and to read a nested
 * message from the same source). */
struct qh_pb_message {
    const qh_pb_source *src;
    const qh_pb_table *table;
    const qh_pb_row *row; /* the row of the field being read */
};

/* Reads the message in buf[0..len) into dst. 0, or -1 with src->err set. */
int qh_pb_walk(const qh_pb_source *src, const qh_pb_table *table, const uint8_t *buf, size_t len,
               void *dst);

/* Sets the error "<what>: <m's message>.<field>: <problem>" (field NULL: no ".<field>"); -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int qh_pb_fail(const qh_pb_message *m, const char *field, const char *fmt, ...);
/* The same, for checks made once a message has been read, outside its handlers. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int qh_pb_fail_in(const qh_pb_source *src, const char *message, const char *field,
                  const char *fmt, ...);

/* The name of field `num` of the table, or its number written into buf. */
const char *qh_pb_field_name(const qh_pb_table *table, uint32_t num, char *buf, size_t size);

/* Copies a string field into a NUL-terminated array of `cap` bytes (clearing all of it first,
 * so parsed structs stay comparable with memcmp): too long, or holding a NUL byte, is an
 * error naming the field. */
int qh_pb_string(const qh_pb_message *m, const qh_pb_field *f, char *dst, size_t cap);

/* A scalar or a length-delimited field as the generic handlers keep it: the last value, and
 * whether the field was there at all. */
typedef struct qh_pb_value {
    int64_t v;
    int seen;
} qh_pb_value;
typedef struct qh_pb_bytes {
    const uint8_t *data; /* into the buffer being read */
    size_t len;
    int seen;
} qh_pb_bytes;

/* The generic handlers, each storing at row->offset in dst: a string into a char array of
 * row->size bytes (qh_pb_string); a varint into a qh_pb_value, as an int64 or (int32: its low
 * 32 bits, sign-extended, as protobuf reads int32 and enum fields) an int32; the bytes of a
 * length-delimited field into a qh_pb_bytes. */
int qh_pb_read_string(const qh_pb_message *m, const qh_pb_field *f, void *dst);
int qh_pb_read_int64(const qh_pb_message *m, const qh_pb_field *f, void *dst);
int qh_pb_read_int32(const qh_pb_message *m, const qh_pb_field *f, void *dst);
int qh_pb_read_bytes(const qh_pb_message *m, const qh_pb_field *f, void *dst);

#endif /* QMM_HARNESS_PB_WALK_H */
