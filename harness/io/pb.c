/* harness/io/pb.c — protobuf wire format primitives. Every read is checked against the end of
 * the buffer before it happens; lengths are compared as uint64 so a 32-bit size_t cannot
 * wrap. */
#include "harness/io/pb.h"

#include "harness/base/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qh_pb_reader_init(qh_pb_reader *r, const uint8_t *buf, size_t len)
{
    r->p = buf;
    r->end = buf ? buf + len : buf;
}

const char *qh_pb_wire_name(uint32_t wire)
{
    switch (wire) {
    case QH_PB_VARINT: return "varint";
    case QH_PB_I64: return "fixed64";
    case QH_PB_LEN: return "length-delimited";
    case 3: return "start-group";
    case 4: return "end-group";
    case QH_PB_I32: return "fixed32";
    default: return "invalid";
    }
}

int qh_pb_read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v, char *why,
                      size_t why_size)
{
    const uint8_t *p = *pp;
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) {
            snprintf(why, why_size, "truncated varint (%d byte%s, then end of data)", i,
                     i == 1 ? "" : "s");
            return -1;
        }
        uint8_t byte = *p++;
        /* The tenth byte carries only bit 63; anything more cannot be a 64-bit value. */
        if (i == 9 && (byte & 0x7e)) {
            snprintf(why, why_size, "varint overflows 64 bits");
            return -1;
        }
        x |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *pp = p;
            *v = x;
            return 0;
        }
    }
    snprintf(why, why_size, "varint longer than 10 bytes");
    return -1;
}

uint32_t qh_pb_load32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t qh_pb_load64(const uint8_t *p)
{
    return (uint64_t)qh_pb_load32(p) | (uint64_t)qh_pb_load32(p + 4) << 32;
}

int qh_pb_next(qh_pb_reader *r, qh_pb_field *f, char *why, size_t why_size)
{
    memset(f, 0, sizeof *f);
    if (r->p >= r->end)
        return 0;

    uint64_t tag;
    char inner[128];
    if (qh_pb_read_varint(&r->p, r->end, &tag, inner, sizeof inner) != 0) {
        snprintf(why, why_size, "bad tag: %s", inner);
        return -1;
    }
    if (tag >> 3 > QH_PB_MAX_FIELD || tag >> 3 == 0) {
        snprintf(why, why_size, "bad tag: field number %llu out of range",
                 (unsigned long long)(tag >> 3));
        return -1;
    }
    f->num = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7);
    size_t left = (size_t)(r->end - r->p);

    switch (f->wire) {
    case QH_PB_VARINT:
        if (qh_pb_read_varint(&r->p, r->end, &f->u, why, why_size) != 0)
            return -1;
        return 1;
    case QH_PB_I64:
    case QH_PB_I32: {
        size_t width = f->wire == QH_PB_I64 ? 8 : 4;
        if (left < width) {
            snprintf(why, why_size, "fixed%zu needs %zu bytes, %zu left", 8 * width, width, left);
            return -1;
        }
        f->u = width == 8 ? qh_pb_load64(r->p) : qh_pb_load32(r->p);
        r->p += width;
        return 1;
    }
    case QH_PB_LEN: {
        uint64_t n;
        if (qh_pb_read_varint(&r->p, r->end, &n, inner, sizeof inner) != 0) {
            snprintf(why, why_size, "bad length: %s", inner);
            return -1;
        }
        left = (size_t)(r->end - r->p);
        if (n > (uint64_t)left) {
            snprintf(why, why_size, "length %llu runs past the end (%zu bytes left)",
                     (unsigned long long)n, left);
            return -1;
        }
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        return 1;
    }
    default:
        snprintf(why, why_size, "unsupported wire type %u (%s)", f->wire,
                 qh_pb_wire_name(f->wire));
        return -1;
    }
}

/* ---- writing ------------------------------------------------------------------------- */

void qh_pb_buf_init(qh_pb_buf *b)
{
    memset(b, 0, sizeof *b);
}

void qh_pb_buf_free(qh_pb_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint8_t *qh_pb_buf_take(qh_pb_buf *b, size_t *len)
{
    if (b->failed) {
        qh_pb_buf_free(b);
        *len = 0;
        return NULL;
    }
    uint8_t *out = b->data;
    if (!out)
        out = malloc(1);
    *len = out ? b->len : 0;
    memset(b, 0, sizeof *b);
    return out;
}

static int reserve(qh_pb_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra > SIZE_MAX - b->len || qh_bytes_reserve(&b->data, &b->cap, b->len + extra, 64)) {
        b->failed = 1;
        return -1;
    }
    return 0;
}

void qh_pb_put_raw(qh_pb_buf *b, const void *data, size_t len)
{
    if (len == 0 || reserve(b, len) != 0)
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void qh_pb_put_varint(qh_pb_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    qh_pb_put_raw(b, tmp, n);
}

void qh_pb_put_tag(qh_pb_buf *b, uint32_t num, uint32_t wire)
{
    if (num == 0 || num > QH_PB_MAX_FIELD) {
        b->failed = 1;
        return;
    }
    qh_pb_put_varint(b, (uint64_t)num << 3 | (wire & 7));
}

void qh_pb_put_varint_field(qh_pb_buf *b, uint32_t num, uint64_t v)
{
    qh_pb_put_tag(b, num, QH_PB_VARINT);
    qh_pb_put_varint(b, v);
}

/* A fixed-width field: the tag, then the low `width` bytes of v, little-endian. */
static void put_fixed_field(qh_pb_buf *b, uint32_t num, uint32_t wire, uint64_t v, size_t width)
{
    uint8_t tmp[8];
    for (size_t i = 0; i < width; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    qh_pb_put_tag(b, num, wire);
    qh_pb_put_raw(b, tmp, width);
}

void qh_pb_put_fixed32_field(qh_pb_buf *b, uint32_t num, uint32_t v)
{
    put_fixed_field(b, num, QH_PB_I32, v, 4);
}

void qh_pb_put_fixed64_field(qh_pb_buf *b, uint32_t num, uint64_t v)
{
    put_fixed_field(b, num, QH_PB_I64, v, 8);
}

void qh_pb_put_bytes_field(qh_pb_buf *b, uint32_t num, const void *data, size_t len)
{
    qh_pb_put_tag(b, num, QH_PB_LEN);
    qh_pb_put_varint(b, (uint64_t)len);
    qh_pb_put_raw(b, data, len);
}

void qh_pb_put_string_field(qh_pb_buf *b, uint32_t num, const char *s)
{
    qh_pb_put_bytes_field(b, num, s, strlen(s));
}

void qh_pb_put_message_field(qh_pb_buf *b, uint32_t num, const qh_pb_buf *sub)
{
    if (sub->failed) {
        b->failed = 1;
        return;
    }
    qh_pb_put_bytes_field(b, num, sub->data, sub->len);
}
