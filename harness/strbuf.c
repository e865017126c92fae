/* harness/strbuf.c — the growable string. */
#include "harness/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(qh_sb *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 128;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->failed = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void qh_sb_printf(qh_sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void qh_sb_puts(qh_sb *b, const char *s)
{
    size_t n = strlen(s);
    if (reserve(b, n) != 0)
        return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void qh_sb_json(qh_sb *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': qh_sb_puts(b, "\\\""); break;
        case '\\': qh_sb_puts(b, "\\\\"); break;
        case '\n': qh_sb_puts(b, "\\n"); break;
        case '\r': qh_sb_puts(b, "\\r"); break;
        case '\t': qh_sb_puts(b, "\\t"); break;
        default:
            if (*p < 0x20)
                qh_sb_printf(b, "\\u%04x", *p);
            else if (reserve(b, 1) == 0) {
                b->s[b->len++] = (char)*p;
                b->s[b->len] = '\0';
            }
        }
    }
}

void qh_sb_xml(qh_sb *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '<': qh_sb_puts(b, "&lt;"); break;
        case '>': qh_sb_puts(b, "&gt;"); break;
        case '&': qh_sb_puts(b, "&amp;"); break;
        case '"': qh_sb_puts(b, "&quot;"); break;
        case '\'': qh_sb_puts(b, "&apos;"); break;
        case '\n': case '\t': case '\r':
            qh_sb_printf(b, "&#%d;", *p);
            break;
        default:
            /* XML 1.0 cannot carry other control characters at all. */
            if (*p < 0x20)
                qh_sb_puts(b, "?");
            else if (reserve(b, 1) == 0) {
                b->s[b->len++] = (char)*p;
                b->s[b->len] = '\0';
            }
        }
    }
}

void qh_sb_shell_word(qh_sb *b, const char *s)
{
    int plain = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!(strchr("/._-+,:=@%", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            plain = 0;
    if (plain) {
        qh_sb_puts(b, s);
        return;
    }
    qh_sb_puts(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            qh_sb_puts(b, "'\\''");
        else
            qh_sb_printf(b, "%c", *p);
    }
    qh_sb_puts(b, "'");
}

char *qh_sb_take(qh_sb *b)
{
    char *s = b->s;
    if (!s) {
        s = malloc(1);
        if (s)
            s[0] = '\0';
    }
    b->s = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
    return s;
}

void qh_sb_free(qh_sb *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}
