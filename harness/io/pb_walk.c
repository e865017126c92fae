/* harness/io/pb_walk.c — reading a protobuf message through its field table (pb_walk.h). */
#include "harness/io/pb_walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int vfail(const qh_pb_source *src, const char *message, const char *field,
                 const char *fmt, va_list ap)
{
    if (!src->err)
        return -1;
    char prefix[QH_ERROR_MAX];
    const char *what = src->what ? src->what : "<memory>";
    if (field)
        snprintf(prefix, sizeof prefix, "%s: %s.%s", what, message, field);
    else
        snprintf(prefix, sizeof prefix, "%s: %s", what, message);
    return qh_vfail_prefixed(src->err, prefix, fmt, ap);
}

int qh_pb_fail(const qh_pb_message *m, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(m->src, m->table->name, field, fmt, ap);
    va_end(ap);
    return rc;
}

int qh_pb_fail_in(const qh_pb_source *src, const char *message, const char *field,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(src, message, field, fmt, ap);
    va_end(ap);
    return rc;
}

static const qh_pb_row *row_of(const qh_pb_table *table, uint32_t num)
{
    for (const qh_pb_row *r = table->rows; r->num; r++)
        if (r->num == num)
            return r;
    return NULL;
}

const char *qh_pb_field_name(const qh_pb_table *table, uint32_t num, char *buf, size_t size)
{
    const qh_pb_row *r = row_of(table, num);
    if (r && r->name)
        return r->name;
    snprintf(buf, size, "%u", num);
    return buf;
}

/* The one wire type check: the row's type, or (QH_PB_OR_PACKED) a packed run of it. */
static int wire_ok(const qh_pb_message *m, const qh_pb_field *f)
{
    uint32_t want = m->row->wire & 7u;
    int packed = (m->row->wire & QH_PB_OR_PACKED) != 0;
    if ((m->row->wire & QH_PB_ANY_WIRE) || f->wire == want || (packed && f->wire == QH_PB_LEN))
        return 0;
    char num[16];
    return qh_pb_fail(m, qh_pb_field_name(m->table, f->num, num, sizeof num),
                      "wire type %u (%s), expected %s%s", f->wire, qh_pb_wire_name(f->wire),
                      qh_pb_wire_name(want), packed ? " or packed" : "");
}

int qh_pb_walk(const qh_pb_source *src, const qh_pb_table *table, const uint8_t *buf, size_t len,
               void *dst)
{
    qh_pb_message m = {src, table, NULL};
    qh_pb_reader r;
    qh_pb_reader_init(&r, buf, len);
    qh_pb_field f;
    const qh_pb_row *data = NULL; /* the QH_PB_ONE_DATA field seen */
    char why[256];
    int rc;
    while ((rc = qh_pb_next(&r, &f, why, sizeof why)) > 0) {
        const qh_pb_row *row = row_of(table, f.num);
        if (!row)
            continue; /* skipped by its wire type in qh_pb_next */
        if (row->wire & QH_PB_ONE_DATA) {
            if (data && data != row)
                return qh_pb_fail(&m, row->name, "data also given in %s", data->name);
            data = row;
        }
        m.row = row;
        if (wire_ok(&m, &f) != 0 || (row->read && row->read(&m, &f, dst) != 0))
            return -1;
    }
    if (rc == 0)
        return 0;
    char num[16];
    return qh_pb_fail(&m, f.num ? qh_pb_field_name(table, f.num, num, sizeof num) : NULL, "%s",
                      why);
}

int qh_pb_string(const qh_pb_message *m, const qh_pb_field *f, char *dst, size_t cap)
{
    char num[16];
    if (f->len > cap - 1)
        return qh_pb_fail(m, qh_pb_field_name(m->table, f->num, num, sizeof num),
                          "string of %zu bytes exceeds the limit of %zu", f->len, cap - 1);
    if (f->len && memchr(f->data, 0, f->len))
        return qh_pb_fail(m, qh_pb_field_name(m->table, f->num, num, sizeof num),
                          "string contains a NUL byte");
    memset(dst, 0, cap);
    memcpy(dst, f->data, f->len);
    return 0;
}

int qh_pb_read_string(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return qh_pb_string(m, f, (char *)dst + m->row->offset, m->row->size);
}

static int keep_value(const qh_pb_message *m, int64_t v, void *dst)
{
    qh_pb_value *to = (qh_pb_value *)((char *)dst + m->row->offset);
    to->v = v;
    to->seen = 1;
    return 0;
}

int qh_pb_read_int64(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return keep_value(m, (int64_t)f->u, dst);
}

int qh_pb_read_int32(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    return keep_value(m, (int64_t)(int32_t)(uint32_t)f->u, dst);
}

int qh_pb_read_bytes(const qh_pb_message *m, const qh_pb_field *f, void *dst)
{
    qh_pb_bytes *to = (qh_pb_bytes *)((char *)dst + m->row->offset);
    to->data = f->data;
    to->len = f->len;
    to->seen = 1;
    return 0;
}
