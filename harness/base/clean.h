/* harness/base/clean.h — making untrusted text safe to print.
 *
 * Everything a plugin says (status messages, problems, captured output) and everything a file
 * names (case directories, op types, qmm.meta keys and values) passes through here before it
 * reaches the terminal, a case line, a qmm.meta file or a report. The result is one line of
 * valid UTF-8: newlines, tabs and other C0/C1 control characters, DEL, the Unicode line
 * separators and the bidirectional controls (which reorder how a terminal shows the rest of a
 * line) are written as escapes (\n, \t, \r, \xNN, \u{NN}), bytes that are not UTF-8 become
 * U+FFFD, and the text is
 * cut at a character boundary with "..." when it exceeds the limit. So no plugin or file can
 * start a line of its own (a forged case line or SUMMARY), and every report stays valid.
 */
#ifndef QMM_HARNESS_CLEAN_H
#define QMM_HARNESS_CLEAN_H

#include <stddef.h>

#include "harness/base/strbuf.h"

/* Default limit (bytes of output) for a plugin's one-line message. */
#define QH_CLEAN_LINE_MAX 1024

/* Writes the cleaned form of s[0..n) into dst (size > 0, always NUL-terminated), at most
 * min(max_out, size - 1) bytes. Returns the length written. max_out 0: only dst's size. */
size_t qh_clean_into(char *dst, size_t size, const char *s, size_t n, size_t max_out);

/* The cleaned form as malloc'd text (NULL only when out of memory). */
char *qh_clean_dup(const char *s, size_t n, size_t max_out);

/* Untrusted text made of lines (a process's stderr, a traceback) as detail lines: each line
 * "    | " and the line cleaned on its own (a CR before its newline left out) and cut at
 * QH_CLEAN_LINE_MAX, so nothing in it starts a line of its own. At most max_lines lines and
 * max_bytes cleaned bytes (but always the last line), the last ones, where a traceback says why,
 * after a line "    ... N earlier lines not shown". Nothing when n is 0. */
void qh_sb_detail_lines(qh_sb *b, const char *s, size_t n, size_t max_lines, size_t max_bytes);

/* 1 when s is already clean: valid UTF-8, no control characters. */
int qh_is_clean(const char *s, size_t n);

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when the byte at s does not start
 * one (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short
 * by n). `cp` receives the code point. */
int qh_utf8_seq(const unsigned char *s, size_t n, unsigned *cp);

#endif /* QMM_HARNESS_CLEAN_H */
