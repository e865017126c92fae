/* tests/test_output.c — what qmmcheck prints and writes, whatever the bytes it is given: the
 * cleaning of untrusted text (harness/clean.c), strict numbers (harness/numparse.c), report
 * escaping (harness/strbuf.c), and the CLI's case lines, reports, exit codes and signals. */
#include "tests/cli_support.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/clean.h"
#include "harness/numparse.h"
#include "harness/strbuf.h"

/* ---- clean.c ------------------------------------------------------------------- */

static char *clean(const char *s, size_t max_out)
{
    char *d = qh_clean_dup(s, strlen(s), max_out);
    cr_assert(d);
    return d;
}

Test(clean, escapes_line_breaks_and_controls)
{
    char *d = clean("a\nb\rc\td\x01" "e\x7f" "f", 0);
    cr_expect_str_eq(d, "a\\nb\\rc\\td\\x01e\\x7ff");
    free(d);
    /* C1 controls and the Unicode line separators, valid UTF-8 but unsafe on a terminal */
    d = clean("x\xc2\x85y\xe2\x80\xa8z", 0);
    cr_expect_str_eq(d, "x\\u{85}y\\u{2028}z");
    free(d);
}

Test(clean, forged_case_line_stays_one_line)
{
    char *d = clean("oops\n999:PASSED fake\nSUMMARY: total:1 passed:1", 0);
    cr_expect_null(strchr(d, '\n'));
    cr_expect(qh_is_clean(d, strlen(d)));
    free(d);
}

Test(clean, repairs_invalid_utf8)
{
    /* stray continuation, 0xff, overlong '/', a surrogate, past U+10FFFF, cut short */
    const char *bad[] = {"\x80", "\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                         "\xe2\x82"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *d = clean(bad[i], 0);
        cr_expect(qh_is_clean(d, strlen(d)), "case %zu: %s", i, d);
        cr_expect_eq(strncmp(d, "\xef\xbf\xbd", 3), 0, "case %zu starts with U+FFFD", i);
        free(d);
    }
    /* valid multi-byte text is kept as it is */
    char *d = clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0);
    cr_expect_str_eq(d, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    free(d);
}

Test(clean, cuts_at_a_character_boundary)
{
    /* "é" is two bytes: a limit of 8 must not split one */
    char *d = clean("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8);
    cr_expect_leq(strlen(d), 8);
    cr_expect(qh_is_clean(d, strlen(d)), "%s", d);
    cr_expect_str_eq(d + strlen(d) - 3, "...");
    free(d);
    /* an escape is never cut in half either */
    d = clean("ab\x01\x01\x01\x01", 7);
    cr_expect_str_eq(d, "ab...");
    free(d);
    /* text that fits exactly is not cut */
    d = clean("abcdefg", 7);
    cr_expect_str_eq(d, "abcdefg");
    free(d);
    char small[4];
    cr_expect_eq(qh_clean_into(small, sizeof small, "abcdef", 6, 0), 3);
    cr_expect_str_eq(small, "...");
}

Test(clean, embedded_nul_and_empty)
{
    char dst[32];
    cr_expect_eq(qh_clean_into(dst, sizeof dst, "a\0b", 3, 0), 6);
    cr_expect_str_eq(dst, "a\\x00b");
    cr_expect_eq(qh_clean_into(dst, sizeof dst, "", 0, 0), 0);
    cr_expect_str_eq(dst, "");
}

/* ---- numparse.c ---------------------------------------------------------------- */

Test(numparse, rejects_spaces_plus_junk_and_overflow)
{
    int64_t v = 42;
    const char *bad[] = {"", " 1", "1 ", "+1", "1x", "0x10", "1e3", "-", "--1",
                         "9223372036854775808", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(qh_parse_i64(bad[i], INT64_MIN, INT64_MAX, &v), -1, "'%s'", bad[i]);
    cr_expect_eq(v, 42, "a rejected value leaves *out alone");
    cr_expect_eq(qh_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
    cr_expect_eq(v, INT64_MIN);
    cr_expect_eq(qh_parse_i64("-1", 0, 10, &v), -1);
    cr_expect_eq(qh_parse_i64("11", 0, 10, &v), -1);
    uint64_t u;
    cr_expect_eq(qh_parse_u64("18446744073709551615", UINT64_MAX, &u), 0);
    cr_expect_eq(u, UINT64_MAX);
    cr_expect_eq(qh_parse_u64("18446744073709551616", UINT64_MAX, &u), -1);
    cr_expect_eq(qh_parse_u64("-1", UINT64_MAX, &u), -1);
    int i;
    cr_expect_eq(qh_parse_int("0002", 1, 5, &i), 0);
    cr_expect_eq(i, 2);
    cr_expect_eq(qh_parse_int("2147483648", 0, INT32_MAX, &i), -1);
}

Test(numparse, doubles_and_bytes)
{
    double d = 7;
    const char *bad[] = {"", " 1", "+1", "1e3", "inf", "nan", "0x1p3", ".", "1.2.3", "1s", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(qh_parse_double(bad[i], 0, 1e6, &d), -1, "'%s'", bad[i]);
    cr_expect_eq(d, 7);
    cr_expect_eq(qh_parse_double("0.5", 0, 1e6, &d), 0);
    cr_expect_eq(d, 0.5);
    cr_expect_eq(qh_parse_double(".25", 0, 1e6, &d), 0);
    cr_expect_eq(d, 0.25);
    cr_expect_eq(qh_parse_double("1000001", 0, 1e6, &d), -1);
    uint64_t b;
    cr_expect_eq(qh_parse_bytes("512M", &b), 0);
    cr_expect_eq(b, 512ull << 20);
    cr_expect_eq(qh_parse_bytes("M", &b), -1);
    cr_expect_eq(qh_parse_bytes("17179869184G", &b), -1, "overflows 2^64");
}

/* ---- strbuf.c: report escaping ------------------------------------------------- */

static char *escaped(void (*fn)(qh_sb *, const char *), const char *s)
{
    qh_sb b = {0};
    fn(&b, s);
    char *t = qh_sb_take(&b);
    cr_assert(t);
    return t;
}

Test(strbuf, json_repairs_utf8_and_escapes_controls)
{
    char *t = escaped(qh_sb_json, "a\"\\\n\x01\x80\xff\xc3\xa9\xc2\x85z");
    cr_expect_str_eq(t, "a\\\"\\\\\\n\\u0001\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9\\u0085z");
    free(t);
}

Test(strbuf, xml_repairs_utf8_and_shows_unencodable_controls)
{
    char *t = escaped(qh_sb_xml, "<&\"'>\n\x01\x1b\x80\xef\xbf\xbe");
    cr_expect_str_eq(t, "&lt;&amp;&quot;&apos;&gt;&#10;\\x01\\x1b\xef\xbf\xbd\\u{fffe}");
    free(t);
}

Test(strbuf, shell_word_stays_one_line)
{
    char *t = escaped(qh_sb_shell_word, "plain/dir_1.x");
    cr_expect_str_eq(t, "plain/dir_1.x");
    free(t);
    t = escaped(qh_sb_shell_word, "it's here");
    cr_expect_str_eq(t, "'it'\\''s here'");
    free(t);
    t = escaped(qh_sb_shell_word, "x\n999:PASSED 'y'\\\xff");
    cr_expect_str_eq(t, "$'x\\x0a999:PASSED \\'y\\'\\\\\\xff'");
    free(t);
}

/* ---- the command line ---------------------------------------------------------- */

TestSuite(cli_out, .init = make_tmp, .fini = remove_tmp);

/* 60 zeros: "1/" ZEROS60 "2x" is one byte longer than the buffer the old --shard parser cut
 * the value into, which read it as 1/2 */
#define ZEROS60 "000000000000000000000000000000000000000000000000000000000000"

Test(cli_out, numeric_options_are_strict)
{
    static const struct {
        const char *args, *option;
    } bad[] = {
        {"run --backend reference --vectors vectors/seeds --shard 1/" ZEROS60 "2x", "--shard"},
        {"run --backend reference --vectors vectors/seeds --shard ' 1/2'", "--shard"},
        {"run --backend reference --vectors vectors/seeds --shard 1/+2", "--shard"},
        {"run --backend reference --vectors vectors/seeds --timeout ' 1'", "--timeout"},
        {"run --backend reference --vectors vectors/seeds --timeout 1e1", "--timeout"},
        {"run --backend reference --vectors vectors/seeds --max-skipped 99999999999", "--max-skipped"},
        {"repro --data-set +0 vectors/seeds", "--data-set"},
        {"diff --backend reference --backend reference --seed ' -1' --count 1", "--seed"},
        {"diff --backend reference --backend reference --seed 18446744073709551616 --count 1",
         "--seed"},
        {"diff --backend reference --backend reference --seed 1 --count 1x", "--count"},
        {"diff --backend reference --backend reference --seed 1 --seconds ' 1'", "--seconds"},
        {"bench --backend reference --shape 1x2x3x --reps 1", "--shape"},
        {"bench --backend reference --shape ' 1x2x3' --reps 1", "--shape"},
        {"bench --backend reference --shape 1x2x3 --threads +2 --reps 1", "--threads"},
        {"bench --backend reference --shape 1x2x3 --reps 1x", "--reps"},
        {"export --suite all --out x --seed ' 1'", "--seed"},
        {"fingerprint --backend reference --timeout 1e3", "--timeout"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out;
        int rc = qmmcheck(&out, "%s", bad[i].args);
        cr_expect_eq(rc, 2, "'%s' exited %d, want 2:\n%s", bad[i].args, rc, out);
        cr_expect(strstr(out, bad[i].option), "'%s': message does not name %s:\n%s",
                  bad[i].args, bad[i].option, out);
        free(out);
    }
}
