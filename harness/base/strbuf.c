/* harness/base/strbuf.c — the growable string. */
#include "harness/base/strbuf.h"

#include "harness/base/array.h"
#include "harness/base/clean.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(qh_sb *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra >= SIZE_MAX - b->len || qh_bytes_reserve(&b->s, &b->cap, b->len + extra + 1, 128)) {
        b->failed = 1;
        return -1;
    }
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

/* Appends n raw bytes. */
static void put_bytes(qh_sb *b, const void *s, size_t n)
{
    if (reserve(b, n) != 0)
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

/* Walks s one UTF-8 character at a time; a byte that does not start a valid sequence comes
 * back as U+FFFD with length 1, so the escapers below never copy invalid UTF-8. */
static int next_char(const unsigned char *p, unsigned *cp)
{
    size_t n = strnlen((const char *)p, 4);
    int len = qh_utf8_seq(p, n, cp);
    if (len == 0) {
        *cp = 0xfffd;
        return 1;
    }
    return len;
}

/* A byte next_char could not decode: it reads as U+FFFD one byte long (a real U+FFFD is
 * three). */
static int not_utf8(unsigned c, int len)
{
    return c == 0xfffd && len == 1;
}

/* Copies the character at p, or U+FFFD in place of a byte that is not UTF-8. */
static void put_char(qh_sb *b, const unsigned char *p, unsigned c, int len)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    if (not_utf8(c, len))
        put_bytes(b, replacement, 3);
    else
        put_bytes(b, p, (size_t)len);
}

/* C0 and C1 controls, DEL and the line and paragraph separators: what a terminal or a
 * JavaScript string might act on. */
int qh_char_unsafe(unsigned c)
{
    return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029 ||
           /* bidirectional controls: embeddings, overrides, isolates, marks */
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x200e ||
           c == 0x200f || c == 0x061c ||
           /* invisible: zero-width space and joiners, word joiner, BOM (two names alike) */
           (c >= 0x200b && c <= 0x200d) || c == 0x2060 || c == 0xfeff;
}

/* A character an escaper writes as a fixed string. */
typedef struct named_escape {
    unsigned c;
    const char *as;
} named_escape;

/* Writes s with the characters in `named` (ended by {0, NULL}) replaced by their strings;
 * every other character goes to `other`, which writes it (1) or leaves it to be copied as
 * it is (0). A byte that is not UTF-8 is copied as U+FFFD. */
static void escape(qh_sb *b, const char *s, const named_escape *named,
                   int (*other)(qh_sb *, unsigned))
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned c;
        int len = next_char(p, &c);
        const named_escape *e = named;
        while (e->as && e->c != c)
            e++;
        if (e->as)
            qh_sb_puts(b, e->as);
        else if (!other(b, c))
            put_char(b, p, c, len);
        p += len;
    }
}

/* JSON needs only C0 escaped; DEL, C1 and the line separators are escaped too so a report
 * shown in a terminal or pasted into JavaScript stays inert. */
static int json_other(qh_sb *b, unsigned c)
{
    if (!qh_char_unsafe(c))
        return 0;
    qh_sb_printf(b, "\\u%04x", c);
    return 1;
}

void qh_sb_json(qh_sb *b, const char *s)
{
    static const named_escape named[] = {
        {'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\r', "\\r"}, {'\t', "\\t"}, {0, NULL}};
    escape(b, s, named, json_other);
}

void qh_sb_json_quoted(qh_sb *b, const char *s)
{
    qh_sb_puts(b, "\"");
    qh_sb_json(b, s);
    qh_sb_puts(b, "\"");
}

/* XML keeps \n, \t and \r as character references; it cannot carry other C0 controls,
 * U+FFFE or U+FFFF at all, not even as references: they are written as visible text. */
static int xml_other(qh_sb *b, unsigned c)
{
    if (c == '\n' || c == '\t' || c == '\r')
        qh_sb_printf(b, "&#%u;", c);
    else if (c < 0x20 || c == 0xfffe || c == 0xffff || qh_char_unsafe(c))
        qh_sb_printf(b, c < 0x20 ? "\\x%02x" : "\\u{%x}", c); /* (a browser applies a reference) */
    else
        return 0;
    return 1;
}

void qh_sb_xml(qh_sb *b, const char *s)
{
    static const named_escape named[] = {
        {'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"}, {'"', "&quot;"}, {'\'', "&apos;"}, {0, NULL}};
    escape(b, s, named, xml_other);
}

/* 1 when the word holds a byte a terminal line must not show raw: a control character, a
 * C1 control or line separator, or a byte that is not UTF-8. */
static int needs_ansi_c(const unsigned char *p)
{
    while (*p) {
        unsigned c;
        int len = next_char(p, &c);
        if (not_utf8(c, len) || qh_char_unsafe(c))
            return 1;
        p += len;
    }
    return 0;
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
    if (needs_ansi_c((const unsigned char *)s)) {
        /* $'...' (bash, zsh, ksh, POSIX 2024 sh) names every byte exactly while keeping the
         * line one line: a newline in a directory name cannot start a forged case line */
        qh_sb_puts(b, "$'");
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
            if (*p == '\'' || *p == '\\')
                qh_sb_printf(b, "\\%c", *p);
            else if (*p < 0x20 || *p >= 0x7f)
                qh_sb_printf(b, "\\x%02x", *p);
            else
                put_bytes(b, p, 1);
        }
        qh_sb_puts(b, "'");
        return;
    }
    qh_sb_puts(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            qh_sb_puts(b, "'\\''");
        else
            put_bytes(b, p, 1);
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
