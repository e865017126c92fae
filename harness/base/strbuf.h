/* harness/base/strbuf.h — a growable string for building messages and reports. */
#ifndef QMM_HARNESS_STRBUF_H
#define QMM_HARNESS_STRBUF_H

#include <stddef.h>

typedef struct qh_sb {
    char *s;
    size_t len, cap;
    int failed; /* an allocation failed; the text is truncated */
} qh_sb;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void qh_sb_printf(qh_sb *b, const char *fmt, ...);
void qh_sb_puts(qh_sb *b, const char *s);
/* JSON string body (no quotes) and XML text/attribute escaping. Both repair invalid UTF-8
 * (U+FFFD) and escape every control character, so a report is valid whatever bytes a name or
 * message holds; XML 1.0 cannot carry most C0 controls even escaped, so those become visible
 * text ("\x01"). */
void qh_sb_json(qh_sb *b, const char *s);
/* s as a JSON string: qh_sb_json's body between double quotes. */
void qh_sb_json_quoted(qh_sb *b, const char *s);
void qh_sb_xml(qh_sb *b, const char *s);
/* 1 for a character no terminal line or report shows raw: C0 and C1 controls, DEL, the line
 * separators, the bidirectional controls (which reorder how the rest of a line shows) and the
 * invisible ones (zero-width space and joiners, word joiner, BOM: two names that look alike).
 * The cleaner (clean.h), the shell words, JSON and XML escape them. */
int qh_char_unsafe(unsigned c);

/* One shell word: as is when it is made of safe characters, else single-quoted, so a
 * `__REPRO:` line pastes into a shell unchanged; a word holding control characters or bytes
 * that are not UTF-8 is written $'...' with \xNN escapes, so it stays on one line. */
void qh_sb_shell_word(qh_sb *b, const char *s);
/* Hands the text over (malloc'd, never NULL unless allocation failed) and resets b. */
char *qh_sb_take(qh_sb *b);
void qh_sb_free(qh_sb *b);

#endif /* QMM_HARNESS_STRBUF_H */
