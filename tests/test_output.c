/* tests/test_output.c — what qmmcheck prints and writes, whatever the bytes it is given: the
 * cleaning of untrusted text (harness/base/clean.c), strict numbers (harness/base/numparse.c), report
 * escaping (harness/base/strbuf.c), and the CLI's case lines, reports, exit codes and signals. */
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

#include "harness/base/clean.h"
#include "harness/io/meta.h"
#include "harness/base/numparse.h"
#include "harness/base/strbuf.h"

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
    /* bidirectional controls: a right-to-left override (U+202E) printed raw let a name
       reorder how the rest of its line shows; isolates (U+2066..9), marks (U+200E, U+200F,
       U+061C) likewise */
    d = clean("case\xe2\x80\xaePASSED\xe2\x81\xa6" "a\xe2\x81\xa9\xe2\x80\x8f\xd8\x9c", 0);
    cr_expect_str_eq(d, "case\\u{202e}PASSED\\u{2066}a\\u{2069}\\u{200f}\\u{61c}");
    cr_expect(!qh_is_clean("\xe2\x80\xae", 3));
    free(d);
    /* invisible characters: two names that look alike */
    d = clean("a\xe2\x80\x8b" "b\xef\xbb\xbf", 0);
    cr_expect_str_eq(d, "a\\u{200b}b\\u{feff}");
    free(d);
    /* and where names go besides the case line: the repro command's shell word (it was
       quoted raw: what followed it showed reversed), JSON and XML (JUnit, HTML) */
    qh_sb b = {0};
    qh_sb_shell_word(&b, "d/rlo\xe2\x80\xae" "abc");
    cr_expect_str_eq(b.s, "$'d/rlo\\xe2\\x80\\xae" "abc'");
    qh_sb_free(&b);
    qh_sb_json(&b, "x\xe2\x80\xaey");
    cr_expect_str_eq(b.s, "x\\u202ey");
    qh_sb_free(&b);
    qh_sb_xml(&b, "x\xe2\x80\xaey");
    cr_expect_str_eq(b.s, "x\\u{202e}y");
    qh_sb_free(&b);
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

Test(numparse, shapes)
{
    int64_t d[3] = {7, 7, 7};
    const char *bad[] = {"", "1x2", "1x2x3x4", "1xx3", "x2x3", "1x2x", "+1x2x3", "1x 2x3",
                         "1x2x1048577", "-1x2x3", "1X2X3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(qh_parse_shape(bad[i], 1 << 20, d), -1, "'%s'", bad[i]);
    cr_expect(d[0] == 7 && d[1] == 7 && d[2] == 7, "a rejected shape leaves out alone");
    cr_expect_eq(qh_parse_shape("16x4096x0", 1 << 20, d), 0);
    cr_expect(d[0] == 16 && d[1] == 4096 && d[2] == 0);
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
        {"run --backend reference --vectors vectors/seeds --max-skipped 99999999999",
         "--max-skipped"},
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
        {"export --suite all --out /tmp/qmm-strict-seed-never-written --seed ' 1'", "--seed"},
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

/* A copy of a committed case under tmpdir/vec, in a directory whose name holds a forged case
 * line and summary, bytes that are not UTF-8 and a control character. */
static const char forged_name[] = "x\n999:PASSED y\nSUMMARY: total:1 passed:1 \x80\xff\x01z";

static void make_forged_case(void)
{
    char to[512];
    snprintf(to, sizeof to, "%s/vec/%s", tmpdir, forged_name);
    copy_tree("vectors/seeds/onnx-doc-qlinearmatmul-2d", to);
}

/* Runs a python3 snippet on a file; its exit status. */
static int python_check(const char *code, const char *path)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "python3 -c '%s' '%s' 2>&1", code, path);
    int rc = system(cmd);
    return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

Test(cli_out, forged_name_prints_no_forged_line_and_reports_stay_valid)
{
    make_forged_case();
    char *out = qmmcheck_expect(0, "run --backend reference --vectors %s/vec "
                                   "--report json:%s/r.json --report junit:%s/r.xml",
                                tmpdir, tmpdir, tmpdir);
    cr_expect_eq(count_lines_starting(out, "999:"), 0, "a forged case line:\n%s", out);
    cr_expect_eq(count_lines_starting(out, "SUMMARY:"), 1, "a forged summary:\n%s", out);
    cr_expect_eq(count_lines_starting(out, "1:PASSED "), 1, "%s", out);
    /* every line of the output is clean text */
    for (char *line = out; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        cr_expect(qh_is_clean(line, len), "not clean: %.*s", (int)len, line);
        line = nl ? nl + 1 : NULL;
    }
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    cr_expect_eq(python_check("import json,sys; r=json.load(open(sys.argv[1],encoding=\"utf-8\")); "
                              "assert r[\"cases\"][0][\"name\"].startswith(\"x\\n999:PASSED\")",
                              path), 0, "the JSON report is not valid UTF-8 JSON");
    expect_json_valid(path);
    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    cr_expect_eq(python_check("import sys,xml.etree.ElementTree as E; E.parse(sys.argv[1])",
                              path), 0,
                 "the JUnit report is not well-formed XML");
    expect_junit_valid(path);
}

/* Two case directories whose names differ only in bytes that are not UTF-8 clean alike ("a"
 * and U+FFFD) in every report's name and path; each row's `repro` (JSON), `__REPRO:` line
 * (JUnit, HTML) is the case's own, exact: run as it is written, it judges that case again
 * with the row's status. The stored output of one of them is changed (MISTRUSTED). */
Test(cli_out, cases_whose_names_clean_alike_keep_their_own_repro_in_the_reports)
{
    char to[512];
    snprintf(to, sizeof to, "%s/vec/a\xfe", tmpdir);
    copy_tree("vectors/seeds/onnx-doc-qlinearmatmul-2d", to);
    snprintf(to, sizeof to, "%s/vec/a\xff", tmpdir);
    copy_tree("vectors/seeds/onnx-doc-qlinearmatmul-2d", to);
    snprintf(to, sizeof to, "%s/vec/a\xff/test_data_set_0/output_0.pb", tmpdir);
    FILE *f = fopen(to, "r+b");
    cr_assert(f && fseek(f, -1, SEEK_END) == 0, "%s", to);
    int last = fgetc(f);
    cr_assert(last != EOF && fseek(f, -1, SEEK_END) == 0 && fputc(last ^ 1, f) != EOF);
    fclose(f);
    char *out = qmmcheck_expect(0, "run --backend reference --vectors %s/vec --report json:%s/r.json "
                                   "--report junit:%s/r.xml --report html:%s/r.html",
                                tmpdir, tmpdir, tmpdir, tmpdir);
    cr_expect_eq(count_lines_starting(out, "1:PASSED "), 1, "%s", out);
    cr_expect_eq(count_lines_starting(out, "2:MISTRUSTED "), 1, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    expect_json_valid(path);
    /* the names alike, the repro commands apart; each judges its own case again */
    cr_expect_eq(python_check(
                     "import json,os,subprocess,sys; c=json.load(open(sys.argv[1]))[\"cases\"]; "
                     "assert len(c)==2 and c[0][\"name\"]==c[1][\"name\"] and "
                     "c[0][\"path\"]==c[1][\"path\"], c; "
                     "assert c[0][\"repro\"]!=c[1][\"repro\"], c; "
                     "outs=[subprocess.run([\"bash\",\"-c\",os.environ[\"QMMCHECK\"]+"
                     "x[\"repro\"][len(\"qmmcheck\"):]],capture_output=True,text=True,"
                     "errors=\"replace\").stdout for x in c]; "
                     "assert all(o.startswith(\"1:\"+x[\"status\"].upper()+\" \") "
                     "for o,x in zip(outs,c)), outs",
                     path),
                 0, "the JSON report's repro commands do not tell the two cases apart");
    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    char *xml = slurp(path);
    cr_expect(strstr(xml, "__REPRO: qmmcheck repro --backend reference $&apos;") ||
                  strstr(xml, "__REPRO: qmmcheck repro --backend reference $'"),
              "the JUnit report has no __REPRO line for the MISTRUSTED case:\n%s", xml);
    free(xml);
    snprintf(path, sizeof path, "%s/r.html", tmpdir);
    char *html = slurp(path);
    cr_expect(strstr(html, "__REPRO: qmmcheck repro"), "the HTML report has no __REPRO line");
    free(html);
}

/* Two suites over 1 KB long (non-ASCII names) that differ only in their last directory: each
 * report keeps them apart, whole. A suite was cut to a 1024-byte buffer (256 in the HTML),
 * inside a character, and the two became one JSON suite, one JUnit class and one HTML table. */
Test(cli_out, long_suites_stay_whole_and_apart_in_the_reports)
{
    char seg[512] = "", to[4096];
    for (int i = 0; i < 120; i++)
        strcat(seg, "\xc3\xa9"); /* é */
    for (int s = 0; s < 2; s++) {
        int o = snprintf(to, sizeof to, "%s/vec", tmpdir);
        for (int d = 0; d < 5; d++)
            o += snprintf(to + o, sizeof to - (size_t)o, "/%s%c%d", seg, d == 4 && s ? 'b' : 'a', d);
        snprintf(to + o, sizeof to - (size_t)o, "/c1");
        copy_tree("vectors/seeds/onnx-doc-qlinearmatmul-2d", to);
    }
    char *out = qmmcheck_expect(0, "run --backend reference --vectors %s/vec --report json:%s/r.json "
                                   "--report junit:%s/r.xml --report html:%s/r.html",
                                tmpdir, tmpdir, tmpdir, tmpdir);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    cr_expect_eq(python_check("import json,sys; c=json.load(open(sys.argv[1]))[\"cases\"]; "
                              "assert len({x[\"suite\"] for x in c})==2, c; "
                              "assert all(x[\"name\"]==x[\"suite\"]+\"/c1\" for x in c), c",
                              path),
                 0, "the JSON report's suites are cut or merged");
    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    cr_expect_eq(python_check("import sys,xml.etree.ElementTree as E; "
                              "t=E.parse(sys.argv[1]).getroot().iter(\"testcase\"); "
                              "assert len({x.get(\"classname\") for x in t})==2",
                              path),
                 0, "the JUnit report's classes are merged");
    snprintf(path, sizeof path, "%s/r.html", tmpdir);
    char *html = slurp(path);
    int tables = 0;
    for (const char *p = html; (p = strstr(p, "<details class=\"suite\"")) != NULL; p++)
        tables++;
    cr_expect_eq(tables, 2, "the HTML report's suite tables");
    free(html);
}

/* A test plugin of the build under test, from the ctest environment variable `var`. */
static void test_plugin_path(char *buf, size_t size, const char *var)
{
    snprintf(buf, size, "%s", env(var));
    cr_assert(access(buf, R_OK) == 0, "%s is not built", buf);
}

/* The fake plugin (tests/plugins/fake_backend.c, all zeros). */
static void fake_plugin_path(char *buf, size_t size)
{
    test_plugin_path(buf, size, "QMM_FAKE_PLUGIN");
}

Test(cli_out, diff_saves_a_qmm_meta_that_loads_back_whatever_the_backend_is_called)
{
    char fake[1024], cmd[4096];
    fake_plugin_path(fake, sizeof fake);
    /* the plugin's path, which diff quotes in the saved description, holds newlines, a
     * forged summary and a byte that is not UTF-8 (no ':', which would start the options) */
    static const char name[] = "lib\nSUMMARY total=1\nexpect = OK\n\xff.so";
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/%s'", fake, tmpdir, name);
    cr_assert(system(cmd) == 0);
    char *out = qmmcheck_expect(1, "diff --backend reference --backend '%s/%s' --seed 1 --count 3 "
                                   "--out '%s/d' --quiet", tmpdir, name, tmpdir);
    cr_expect_eq(count_lines_starting(out, "SUMMARY"), 0, "a forged summary:\n%s", out);
    cr_expect_eq(count_lines_starting(out, "DIFF SUMMARY:"), 1, "%s", out);
    free(out);
    int loaded = 0;
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/d/problem-%d/qmm.meta", tmpdir, i);
        if (access(path, F_OK) != 0)
            continue;
        qh_meta m;
        qh_meta_init(&m);
        qh_error err;
        cr_expect_eq(qh_meta_read_file(path, &m, &err), 0, "%s", err.msg);
        cr_expect(strstr(m.description, "lib\\nSUMMARY") != NULL, "%s", m.description);
        cr_expect(qh_is_clean(m.description, strlen(m.description)), "%s", m.description);
        loaded++;
    }
    cr_expect_gt(loaded, 0, "diff saved no case");
}

Test(cli_out, a_run_that_judges_nothing_exits_3)
{
    char empty[512], fake[1024];
    snprintf(empty, sizeof empty, "%s/empty", tmpdir);
    cr_assert(mkdir(empty, 0755) == 0);
    fake_plugin_path(fake, sizeof fake);
    static const struct {
        const char *args, *why;
    } runs[] = {
        {"run --backend reference --vectors '%s'", "no case was found"},
        {"run --backend reference --vectors vectors/seeds --filter '^nothing-matches$'",
         "the --filter matched no case"},
        {"run --backend reference --vectors vectors/seeds/onnx-doc-matmulinteger --shard 2/2",
         "the --shard holds no case"},
        {"run --backend '%s:mode=unsupported' --vectors vectors/seeds",
         "every case was SKIPPED"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char args[2048];
        snprintf(args, sizeof args, runs[i].args, i == 0 ? empty : fake);
        char *out;
        int rc = qmmcheck(&out, "%s", args);
        cr_expect_eq(rc, 3, "'%s' exited %d, want 3:\n%s", args, rc, out);
        cr_expect(strstr(out, runs[i].why), "'%s' does not say '%s':\n%s", args, runs[i].why,
                  out);
        free(out);
        rc = qmmcheck(&out, "%s --allow-empty", args);
        cr_expect_eq(rc, 0, "'%s --allow-empty' exited %d, want 0:\n%s", args, rc, out);
        free(out);
    }
}

Test(cli_out, report_targets_must_be_regular_files)
{
    /* a FIFO stands for /dev/null and other devices: refusing it must not depend on a binary
     * that, were it wrong, would replace the real /dev/null when run as root */
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    cr_assert(mkfifo(fifo, 0644) == 0);
    char *out = qmmcheck_expect(2, "run --backend reference --vectors vectors/seeds "
                                   "--report json:%s", fifo);
    expect_in(out, "fifo exists and is a device or special file");
    struct stat st;
    cr_expect(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    free(out);
    /* a planted symlink is refused, and the file it points to never written */
    char link_path[512], target[512];
    snprintf(target, sizeof target, "%s/target", tmpdir);
    snprintf(link_path, sizeof link_path, "%s/r.xml", tmpdir);
    cr_assert(symlink(target, link_path) == 0);
    out = qmmcheck_expect(2, "run --backend reference --vectors vectors/seeds --report junit:%s",
                          link_path);
    expect_in(out, "symbolic link");
    cr_expect_neq(access(target, F_OK), 0, "the report went through the symlink");
    free(out);
}

/* The report kinds are one table in report.c: help and the error for an unknown kind both name
 * every kind from it, so a new format needs no edit of the usage text. */
Test(cli_out, help_and_the_unknown_kind_error_name_every_report_kind)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "help"), 0, "%s", out);
    cr_expect(strstr(out, "KIND (run --report): json, junit, html.") != NULL, "%s", out);
    cr_expect(strstr(out, "  bench ") != NULL, "help does not list bench: %s", out);
    free(out);
    int rc = qmmcheck(&out, "run --backend reference --vectors vectors/seeds --report xml:%s/r",
                      tmpdir);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "expected json:FILE, junit:FILE or html:FILE") != NULL, "%s", out);
    free(out);
}

Test(cli_out, a_run_that_stops_early_leaves_no_stale_report)
{
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    write_text(path, "{\"stale\": true}\n");
    char *out;
    /* the run stops (a missing --xfail file) after it started: the old report is gone */
    out = qmmcheck_expect(2, "run --backend reference --vectors vectors/seeds --report json:%s "
                             "--xfail %s/missing.txt", path, tmpdir);
    cr_expect_neq(access(path, F_OK), 0, "the previous run's report is still there");
    free(out);
}

Test(cli_out, sigterm_writes_both_reports_and_exits_143)
{
    char json[512], xml[512], args[8192];
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    /* a long run: the committed vectors sixteen times over */
    int n = snprintf(args, sizeof args, "run --backend reference --report json:%s "
                     "--report junit:%s", json, xml);
    for (int i = 0; i < 16; i++)
        n += snprintf(args + n, sizeof args - (size_t)n, " --vectors vectors");
    FILE *f;
    pid_t pid = qmmcheck_start(&f, "%s", args);
    char line[8192];
    cr_assert(fgets(line, sizeof line, f) != NULL, "no case line");
    cr_expect(strncmp(line, "1:", 2) == 0, "%s", line);
    char *summary = expect_interrupted(pid, f, NULL);
    cr_expect(strncmp(summary, "SUMMARY:", 8) == 0, "%s", summary);
    free(summary);
    cr_expect_eq(python_check("import json,sys; r=json.load(open(sys.argv[1])); "
                              "assert r[\"interrupted\"] == \"SIGTERM\", r.get(\"interrupted\"); "
                              "assert 0 < r[\"summary\"][\"total\"] == len(r[\"cases\"])", json),
                 0, "the JSON report");
    expect_json_valid(json);
    cr_expect_eq(python_check("import sys,xml.etree.ElementTree as E; t=E.parse(sys.argv[1]); "
                              "p=t.find(\".//property[@name=\\\"interrupted\\\"]\"); "
                              "assert p is not None and p.get(\"value\") == \"SIGTERM\"", xml),
                 0, "the JUnit report");
    /* and as an error a CI dashboard counts (the property alone showed green): a testcase of
     * its own, counted in errors and tests */
    cr_expect_eq(python_check("import sys,xml.etree.ElementTree as E; t=E.parse(sys.argv[1]); "
                              "s=t.find(\"testsuite\"); c=s.findall(\"testcase\"); "
                              "e=[x for x in c if x.get(\"name\") == \"<interrupted>\"]; "
                              "assert len(e) == 1 and e[0].find(\"error\").get(\"type\") == "
                              "\"interrupted\"; assert int(s.get(\"errors\")) >= 1; "
                              "assert int(s.get(\"tests\")) == len(c)", xml),
                 0, "the JUnit report counts the interruption as an error");
    expect_junit_valid(xml);
}

/* A signal while the trees are still being searched (a wide tree takes a while): the run
 * ends at once with 143 and writes its reports, empty and marked interrupted, where the old
 * reports are already gone (before, the handlers came after the search: the signal killed
 * the process, nothing written). The signal is sent once the old report has been removed,
 * which happens just before the search. */
Test(cli_out, a_signal_while_the_trees_are_searched_still_writes_the_reports)
{
    char wide[512], json[512], xml[512];
    snprintf(wide, sizeof wide, "%s/wide", tmpdir);
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    cr_assert(mkdir(wide, 0755) == 0);
    for (int i = 0; i < 50000; i++) { /* about 1 s of search */
        char d[600];
        snprintf(d, sizeof d, "%s/d%05d", wide, i);
        cr_assert(mkdir(d, 0755) == 0, "%s", d);
    }
    FILE *old = fopen(json, "w");
    cr_assert(old);
    fputs("{\"old\": 1}\n", old);
    fclose(old);
    FILE *f;
    pid_t pid = qmmcheck_start(&f, "run --backend reference --vectors %s --report json:%s "
                                   "--report junit:%s", wide, json, xml);
    for (int i = 0; i < 20000 && access(json, F_OK) == 0; i++) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char *summary = expect_interrupted(pid, f, NULL);
    cr_expect(strncmp(summary, "SUMMARY: total:0 ", 17) == 0, "%s", summary);
    free(summary);
    cr_expect_eq(python_check("import json,sys; r=json.load(open(sys.argv[1])); "
                              "assert r[\"interrupted\"] == \"SIGTERM\", r.get(\"interrupted\"); "
                              "assert r[\"summary\"][\"total\"] == 0 == len(r[\"cases\"])", json),
                 0, "the JSON report");
    expect_json_valid(json);
    expect_junit_valid(xml);
}

/* A standard output whose reader goes away (`| head -c 1`) does not end the run before its
 * reports: the run goes on, exits with its verdict (0), writes both reports whole and says on
 * stderr that its output could not be written (before: SIGPIPE, 141, no report). */
Test(cli_out, a_closed_standard_output_does_not_lose_the_reports)
{
    char json[512], xml[512], err[512], rcfile[512], cmd[4096];
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    snprintf(err, sizeof err, "%s/err.txt", tmpdir);
    snprintf(rcfile, sizeof rcfile, "%s/rc.txt", tmpdir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && { '%s' run --backend reference --vectors vectors --report json:%s "
             "--report junit:%s 2>'%s'; echo $? >'%s'; } | head -c 1 >/dev/null",
             env("QMM_SOURCE_DIR"), env("QMMCHECK"), json, xml, err, rcfile);
    cr_assert(system(cmd) != -1);
    char *rc = slurp(rcfile), *said = slurp(err);
    cr_expect_str_eq(rc, "0\n", "exit status %s; stderr:\n%s", rc, said);
    expect_in(said, "standard output could not be written (closed?): the case lines are not "
                    "all there; the reports are complete");
    cr_expect_eq(python_check("import json,sys; r=json.load(open(sys.argv[1])); "
                              "assert r[\"summary\"][\"total\"] == len(r[\"cases\"]) > 900, "
                              "r[\"summary\"]; assert \"interrupted\" not in r", json),
                 0, "the JSON report");
    expect_json_valid(json);
    expect_junit_valid(xml);
    free(rc);
    free(said);
}

/* JUnit as CI servers read it (Jenkins xUnit's junit-10.xsd): no `skipped` on <testsuites>,
 * timestamp and hostname on <testsuite>, a plugin's class its file name (isolated: its table
 * is in the worker) or its table's name (in process) and never a path, the same case from two
 * vector roots twice under distinct names, a failure's message with its first mismatch. */
Test(cli_out, junit_reads_as_ci_servers_read_it)
{
    char a[512], b[512], xml[512];
    snprintf(a, sizeof a, "%s/a", tmpdir);
    snprintf(b, sizeof b, "%s/b", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    copy_tree("vectors/seeds", a);
    copy_tree("vectors/seeds", b);
    const char *fake = env("QMM_FAKE_PLUGIN");
    cr_assert(fake[0] == '/', "QMM_FAKE_PLUGIN is not absolute: %s", fake);
    free(qmmcheck_expect(1, "run -q --backend %s:mode=zeros --vectors %s --vectors %s "
                            "--report junit:%s", fake, a, b, xml));
    expect_junit_valid(xml);
    char *x = slurp(xml);
    cr_expect(strstr(x, "<testsuites name=\"qmmcheck\" tests=\"6\" failures=\"6\" errors=\"0\" "
                        "time=\"") != NULL, "%s", x);
    cr_expect(strstr(x, "<testsuite name=\"qmmcheck\" tests=\"6\" failures=\"6\" errors=\"0\" "
                        "skipped=\"0\" time=\"") != NULL, "%s", x);
    expect_in(x, "\" timestamp=\"20");
    expect_in(x, "\" hostname=\"");
    /* no dot in the backend's part: Jenkins splits the class at its last dot */
    cr_expect_eq(count_lines_with(x, "classname=\"qmmcheck.libqmm_fake_backend_so_mode_zeros\""),
                 6, "%s", x);
    cr_expect_eq(count_lines_with(x, "classname=\"qmmcheck./"), 0, "a class is a path:\n%s", x);
    cr_expect_eq(count_lines_with(x, "name=\"orion-doc-qlinear-matmul [a]\""), 1, "%s", x);
    cr_expect_eq(count_lines_with(x, "name=\"orion-doc-qlinear-matmul [b]\""), 1, "%s", x);
    cr_expect_eq(count_lines_with(x, "<failure type=\"values\" message=\"errors:2 total:2; first "
                                     "mismatch y[0,0] (index 0): got 0, expected 14\">"), 2, "%s", x);
    free(x);
    /* in process the table's own name; one root: the names as they are */
    free(qmmcheck_expect(1, "run -q --no-isolate --backend %s:mode=zeros --vectors %s "
                            "--report junit:%s", fake, a, xml));
    expect_junit_valid(xml);
    x = slurp(xml);
    cr_expect_eq(count_lines_with(x, "classname=\"qmmcheck.fake\" name=\"orion-doc-qlinear-matmul\""),
                 1, "%s", x);
    free(x);
}

Test(cli_out, a_crash_in_close_is_a_counted_row)
{
    char hostile[1024], json[512];
    test_plugin_path(hostile, sizeof hostile, "QMM_HOSTILE_PLUGIN");
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    char *out = qmmcheck_expect(1, "run -q --backend '%s:mode=crash_close' --vectors vectors/seeds "
                                   "--report json:%s", hostile, json);
    cr_expect_eq(count_lines_starting(out, "4:CRASHED <close> (close crashed"), 1, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:4 ") && strstr(out, " crashed:1 "), "%s", out);
    free(out);
    cr_expect_eq(python_check("import json,sys; r=json.load(open(sys.argv[1])); "
                              "c=r[\"cases\"][-1]; assert c[\"name\"] == \"<close>\"; "
                              "assert c[\"status\"] == \"crashed\", c; "
                              "assert r[\"summary\"][\"crashed\"] == 1", json),
                 0, "the JSON report has no <close> row");
    expect_json_valid(json);
}

/* The JSON report's rows for scripts: the reason code, the suite, the qmm.meta tags and
 * description, y's shape and each kept mismatch as data (index, coordinates, expected, got,
 * acc, the exact scaled value, the profiles that give `got`), valid against the schema; the
 * JUnit class holds the suite (dots, no dot in the backend: Jenkins splits at the last one),
 * the test's name is the case's and the failure's type is the reason code. */
Test(cli_out, reports_carry_the_reason_and_the_mismatches_as_data)
{
    char fake[512], json[512], xml[512];
    fake_plugin_path(fake, sizeof fake);
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    free(qmmcheck_expect(1, "run -q --backend %s:mode=zeros --vectors vectors --filter '^seeds/' "
                            "--report json:%s --report junit:%s", fake, json, xml));
    expect_json_valid(json);
    cr_expect_eq(python_check(
                     "import json,sys; r=json.load(open(sys.argv[1])); "
                     "c=[c for c in r[\"cases\"] if c[\"name\"]==\"seeds/orion-doc-qlinear-matmul\"][0]; "
                     "assert c[\"reason\"]==\"values\" and c[\"suite\"]==\"seeds\", c; "
                     "assert c[\"tags\"]==[\"seed\",\"orion-doc\",\"s8s8s8\",\"per-tensor\"], c; "
                     "assert c[\"description\"].startswith(\"acc = [48, 36]\"), c; "
                     "assert c[\"y_shape\"]==[2,1] and c[\"errors\"]==2 and c[\"total\"]==2, c; "
                     "m=c[\"mismatches\"][0]; "
                     "assert (m[\"index\"],m[\"coord\"],m[\"expected\"],m[\"got\"],m[\"acc\"],m[\"exact\"])"
                     "==(0,[0,0],14,0,48,\"4\"), m; "
                     "assert m[\"models\"]==[], m; assert len(c[\"mismatches\"])==2",
                     json),
                 0, "the JSON rows");
    expect_junit_valid(xml);
    char *x = slurp(xml);
    expect_in(x, "<testcase classname=\"qmmcheck.libqmm_fake_backend_so_mode_zeros.seeds\" "
                 "name=\"orion-doc-qlinear-matmul\"");
    cr_expect_eq(count_lines_with(x, "<failure type=\"values\" "), 3, "%s", x);
    free(x);
}

/* --quiet: the skipped cases are one line per suite (with the first reason and how many gave
 * another), not one line each; the failures keep their own lines. */
Test(cli_out, quiet_counts_the_skips_per_suite)
{
    char fake[512];
    fake_plugin_path(fake, sizeof fake);
    char *out = qmmcheck_expect(3, "run -q --backend %s:mode=unsupported --vectors vectors "
                                   "--filter '^(seeds|qordered)/'", fake); /* 3: all skipped */
    cr_expect_eq(count_lines_with(out, ":SKIPPED "), 0, "a line per skip:\n%s", out);
    expect_in(out, "\nSKIPPED 3 in seeds (unsupported: fake: mode=unsupported supports nothing)\n");
    expect_in(out, "SKIPPED 3 in qordered/col32 (unsupported: fake: mode=unsupported supports "
                   "nothing)\n");
    cr_expect_eq(count_lines_starting(out, "SKIPPED "), 5, "%s", out);
    free(out);
    out = qmmcheck_expect(1, "run -q --backend %s:mode=zeros --vectors vectors/seeds", fake);
    cr_expect_eq(count_lines_with(out, ":FAILED "), 3, "%s", out);
    free(out);
}

/* A --report FILE that is an input of the run was removed before the run read it: the --xfail
 * list ("cannot open: No such file"), a plugin ("cannot load plugin"), or a case's model.onnx
 * (the case vanished from the run, which passed). Each is now refused, and left as it was. */
Test(cli_out, a_report_that_is_an_input_of_the_run_is_refused)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && printf 'nothing\\n' > xf.txt && cp '%s' libfake.so && "
             "mkdir vec && cp -r '%s/vectors/seeds/onnx-doc-matmulinteger' vec/q",
             tmpdir, env("QMM_FAKE_PLUGIN"), env("QMM_SOURCE_DIR"));
    cr_assert(system(cmd) == 0);
    const char *seeds = "vectors/seeds";
    qmmcheck_expect_in(2, "an input of this run (the report would replace it)",
                       "run --backend reference --vectors %s --xfail '%s/xf.txt' --report "
                       "json:'%s/xf.txt'", seeds, tmpdir, tmpdir);
    qmmcheck_expect_in(2, "an input of this run (the report would replace it)",
                       "run --backend '%s/libfake.so' --vectors %s --report junit:'%s/libfake.so'",
                       tmpdir, seeds, tmpdir);
    qmmcheck_expect_in(2, "a file of a case under --vectors",
                       "run --backend reference --vectors '%s/vec' --report json:'%s/vec/q/model.onnx'",
                       tmpdir, tmpdir);
    qmmcheck_expect_in(2, "a file of a case under --vectors",
                       "run --backend reference --vectors '%s/vec' --report "
                       "json:'%s/vec/q/test_data_set_0/r.json'", tmpdir, tmpdir);
    snprintf(cmd, sizeof cmd, "cd '%s' && test -s xf.txt && test -s libfake.so && "
             "cmp -s vec/q/model.onnx '%s/vectors/seeds/onnx-doc-matmulinteger/model.onnx'",
             tmpdir, env("QMM_SOURCE_DIR"));
    cr_expect(system(cmd) == 0, "an input was removed or changed");
    /* bench and fingerprint write reports too: they removed or replaced the plugin as well */
    qmmcheck_expect_in(2, "an input of this run", "bench --backend '%s/libfake.so' --shape 2x2x2 "
                       "--reps 1 --report json:'%s/libfake.so'", tmpdir, tmpdir);
    qmmcheck_expect_in(2, "an input of this run", "fingerprint --backend '%s/libfake.so' "
                       "--report json:'%s/libfake.so'", tmpdir, tmpdir);
    /* an exec: backend's script, and qmmcheck itself */
    snprintf(cmd, sizeof cmd, "cd '%s' && printf '#!/bin/sh\\nexit 1\\n' > back.sh && "
             "chmod +x back.sh && cp '%s' qc", tmpdir, env("QMMCHECK"));
    cr_assert(system(cmd) == 0);
    qmmcheck_expect_in(2, "an input of this run", "run --backend 'exec:%s/back.sh' --vectors %s "
                       "--report json:'%s/back.sh'", tmpdir, seeds, tmpdir);
    snprintf(cmd, sizeof cmd, "cd '%s' && ./qc run --backend reference --vectors "
             "'%s/vectors/seeds' --report json:\"$PWD/qc\" 2>err.txt; echo $? > rc.txt; "
             "grep -q 'an input of this run' err.txt && test \"$(cat rc.txt)\" = 2 && "
             "test -x qc && test -s back.sh", tmpdir, env("QMM_SOURCE_DIR"));
    cr_expect(system(cmd) == 0, "qmmcheck's own file, or the exec: script, was not protected");
    /* beside the cases (not in one) a report is fine */
    char *out = qmmcheck_expect(0, "run --backend reference --vectors '%s/vec' --report "
                                   "json:'%s/vec/r.json'", tmpdir, tmpdir);
    free(out);
}

/* A report into a folder that does not exist was found out only after the whole run (exit 1,
 * the other reports written); it is now refused before the run, as a path through a file is. */
Test(cli_out, a_report_into_a_missing_folder_is_refused_before_the_run)
{
    qmmcheck_expect_in(2, "its folder /nonexistent-qmm: No such file or directory",
                       "run --backend reference --vectors vectors/seeds --report json:%s/r.json "
                       "--report html:/nonexistent-qmm/x.html", tmpdir);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    cr_expect_neq(access(path, F_OK), 0, "a report was written by a run that did not start");
}
