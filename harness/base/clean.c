/* harness/base/clean.c — making untrusted text safe to print (harness/base/clean.h). */
#include "harness/base/clean.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qh_utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, min = 0x80, c &= 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, min = 0x800, c &= 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if ((size_t)len > n)
        return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* The escape for code point c when it must not appear raw, else NULL (buf holds it). */
static const char *escape_for(unsigned c, char buf[16])
{
    switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
    }
    if (c < 0x20 || c == 0x7f) {
        snprintf(buf, 16, "\\x%02x", c);
        return buf;
    }
    /* C1 controls, line separators, bidirectional and invisible characters (strbuf.h): a
     * terminal acts on them, reorders what follows, or shows two names alike */
    if (qh_char_unsafe(c)) {
        snprintf(buf, 16, "\\u{%x}", c);
        return buf;
    }
    return NULL;
}

size_t qh_clean_into(char *dst, size_t size, const char *s, size_t n, size_t max_out)
{
    static const char ellipsis[] = "...";
    size_t cap = size - 1;
    if (max_out && max_out < cap)
        cap = max_out;
    size_t o = 0, mark = 0; /* mark: a boundary with room for "..." after it */
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = 0;
        int len = qh_utf8_seq(p + i, n - i, &c);
        char buf[16];
        const char *piece;
        size_t plen;
        if (len == 0) {
            piece = "\xef\xbf\xbd"; /* U+FFFD for a byte that is not UTF-8 */
            plen = 3;
            len = 1;
        } else if ((piece = escape_for(c, buf)) != NULL) {
            plen = strlen(piece);
        } else {
            piece = (const char *)p + i;
            plen = (size_t)len;
        }
        /* text that fits whole is kept whole; otherwise it is cut back to the last piece
         * boundary that leaves room for the ellipsis */
        if (o + plen > cap) {
            o = mark;
            size_t e = cap - o < 3 ? cap - o : 3;
            memcpy(dst + o, ellipsis, e);
            o += e;
            break;
        }
        memcpy(dst + o, piece, plen);
        o += plen;
        i += (size_t)len;
        if (o <= cap - (cap >= 3 ? 3 : cap))
            mark = o;
    }
    dst[o] = '\0';
    return o;
}

char *qh_clean_dup(const char *s, size_t n, size_t max_out)
{
    /* every input byte becomes at most 8 output bytes ("\u{2028}" from three bytes, "\x01"
     * from one, U+FFFD's three from one) */
    size_t size = n * 8 + 4;
    if (max_out && max_out + 1 < size)
        size = max_out + 1;
    char *d = malloc(size);
    if (d)
        qh_clean_into(d, size, s, n, max_out);
    return d;
}

int qh_is_clean(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c;
        char buf[16];
        int len = qh_utf8_seq(p + i, n - i, &c);
        if (len == 0 || escape_for(c, buf))
            return 0;
        i += (size_t)len;
    }
    return 1;
}

/* The line s[start, stop) cleaned into t (size QH_CLEAN_LINE_MAX + 1; a CR before its newline
 * left out): its length. */
static size_t clean_line(char *t, const char *s, size_t start, size_t stop)
{
    if (stop > start && s[stop - 1] == '\r')
        stop--;
    return qh_clean_into(t, QH_CLEAN_LINE_MAX + 1, s + start, stop - start, QH_CLEAN_LINE_MAX);
}

void qh_sb_detail_lines(qh_sb *b, const char *s, size_t n, size_t max_lines, size_t max_bytes)
{
    if (n == 0)
        return;
    size_t end = s[n - 1] == '\n' ? n - 1 : n; /* a last newline ends a line, starts none */
    char t[QH_CLEAN_LINE_MAX + 1];
    size_t first = end, stop = end, shown = 0, bytes = 0;
    for (;;) { /* back from the last line, while they fit: lines from `first` on are shown */
        size_t start = stop;
        while (start > 0 && s[start - 1] != '\n')
            start--;
        size_t len = clean_line(t, s, start, stop);
        if (shown == max_lines || (shown && bytes + len > max_bytes))
            break;
        shown++, bytes += len, first = start;
        if (start == 0)
            break;
        stop = start - 1;
    }
    size_t left = 0;
    for (size_t i = 0; i < first; i++)
        left += s[i] == '\n';
    if (left)
        qh_sb_printf(b, "    ... %zu earlier lines not shown\n", left);
    for (size_t start = first;; start = stop + 1) {
        const char *nl = memchr(s + start, '\n', end - start);
        stop = nl ? (size_t)(nl - s) : end;
        qh_sb_printf(b, "    |%s%s\n", clean_line(t, s, start, stop) ? " " : "", t);
        if (!nl)
            break;
    }
}
