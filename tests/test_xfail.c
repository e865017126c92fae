/* tests/test_xfail.c — expected-failure lists (docs/formats.md, "Expected-failure lists"):
 * each rule of the reader and of applying an entry to a row, then the CLI a CI relies on:
 * stale entries warned about, --xfail-strict failing on them and on XPASS, CRASHED/TIMEOUT
 * waived only when an entry names them, backend= picking the backend, and the JSON/JUnit
 * rows. */
#include "tests/cli_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/run/runner.h"

TestSuite(xfail, .init = make_tmp, .fini = remove_tmp);

/* Writes `text` as the list and reads it; the test fails when reading does. */
static qh_xfail read_list(const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/list.txt", tmpdir);
    write_text(path, text);
    qh_xfail x;
    qh_error err = {{0}};
    cr_assert_eq(qh_xfail_read(path, &x, &err), 0, "%s", err.msg);
    return x;
}

/* The error reading `text` gives ("" when it reads). */
static void read_error(const char *text, char *msg, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/list.txt", tmpdir);
    write_text(path, text);
    qh_xfail x;
    qh_error err = {{0}};
    int rc = qh_xfail_read(path, &x, &err);
    snprintf(msg, size, "%s", rc == 0 ? "" : err.msg);
    if (rc == 0)
        qh_xfail_free(&x);
}

/* One judged row: `status`, case `name`, backend spec `spec`. */
static qh_result row(const char *name, const char *spec, qh_case_status status)
{
    qh_result r = {.status = status, .backend = spec};
    r.name = strdup(name);
    return r;
}

/* The status `list` gives a row of `status` for case `name`, backend named `bname`. */
static qh_case_status applied(qh_xfail *x, const char *name, const char *bname,
                              qh_case_status status)
{
    qh_result r = row(name, "build/x.so", status);
    qh_xfail_apply(x, bname, &r);
    qh_case_status s = r.status;
    qh_result_free(&r);
    return s;
}

/* A list saved with a UTF-8 byte-order mark: the mark is not part of the first pattern (which
 * then matched no case and was reported stale). */
Test(xfail, a_byte_order_mark_is_not_part_of_the_first_pattern)
{
    qh_xfail x = read_list("\xef\xbb\xbfk0\nk1\n");
    cr_assert_eq(x.count, 2);
    cr_expect_str_eq(x.entries[0].pattern, "k0");
    cr_expect_eq(applied(&x, "k0", NULL, QH_FAILED), QH_XFAIL);
    qh_xfail_free(&x);
}

Test(xfail, reads_entries_options_and_comments)
{
    qh_xfail x = read_list("# whole-line comment\n\n  a/*   # class: pair saturation\n"
                           "b status=CRASHED,TIMEOUT backend=*onednn*\r\n"
                           "c backend=gemmlowp status=FAILED\n");
    cr_assert_eq(x.count, 3);
    cr_expect_str_eq(x.entries[0].pattern, "a/*");
    cr_expect_null(x.entries[0].backend);
    cr_expect_eq(x.entries[0].statuses, 1u << QH_FAILED, "default: FAILED");
    cr_expect_eq(x.entries[0].line, 3);
    cr_expect_eq(x.entries[1].statuses, (1u << QH_CRASHED) | (1u << QH_TIMEOUT));
    cr_expect_str_eq(x.entries[1].backend, "*onednn*");
    cr_expect_eq(x.entries[1].line, 4);
    cr_expect_str_eq(x.entries[2].backend, "gemmlowp");
    qh_xfail_free(&x);
}

Test(xfail, bad_entries_name_file_and_line)
{
    char msg[1024];
    read_error("ok\nx status=PASSED\n", msg, sizeof msg);
    cr_expect(strstr(msg, "list.txt:2: status 'PASSED'"), "PASSED alone: %s", msg);
    read_error("x status=SKIPPED\n", msg, sizeof msg);
    cr_expect(strstr(msg, ":1: status 'SKIPPED'"), "%s", msg);
    read_error("x status=ERROR\n", msg, sizeof msg);
    cr_expect(strstr(msg, ":1: status 'ERROR'"), "ERROR is never waived: %s", msg);
    read_error("x status=\n", msg, sizeof msg);
    cr_expect(strstr(msg, ":1: status"), "%s", msg);
    read_error("x\n\ny frobnicate=1\n", msg, sizeof msg);
    cr_expect(strstr(msg, "list.txt:3: 'frobnicate=1'"), "%s", msg);
    read_error("x backend=a backend=b\n", msg, sizeof msg);
    cr_expect(strstr(msg, ":1: 'backend=b'"), "one backend per entry: %s", msg);
    /* a second status= replaced the first, silently */
    read_error("x status=FAILED status=CRASHED\n", msg, sizeof msg);
    cr_expect(strstr(msg, ":1: 'status=CRASHED'"), "one status= per entry: %s", msg);
}

/* A NUL byte used to end the list where it stood: the entries after it were neither applied
 * nor reported stale, even under --xfail-strict. It is a usage error naming the file and the
 * line, like any malformed entry. */
Test(xfail, a_nul_byte_is_an_error_naming_the_line)
{
    static const char text[] = "orion-*\nonnx-doc-*\0 hidden\nno-such-case\n";
    char path[512];
    snprintf(path, sizeof path, "%s/nul.txt", tmpdir);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
    fclose(f);
    qh_xfail x;
    qh_error err = {{0}};
    int rc = qh_xfail_read(path, &x, &err);
    if (rc == 0)
        qh_xfail_free(&x);
    cr_expect_eq(rc, -1, "a list with a NUL byte was read");
    cr_expect(strstr(err.msg, "nul.txt:2: a NUL byte"), "%s", err.msg);
    char *out = qmmcheck_expect(2, "run --backend '%s' --vectors vectors/seeds --xfail '%s' "
                                   "--xfail-strict", env("QMM_FAKE_PLUGIN"), path);
    expect_in(out, "qmmcheck: --xfail: ");
    expect_in(out, "nul.txt:2: a NUL byte: an expected-failure list is text");
    free(out);
}

Test(xfail, failed_becomes_xfail_passed_xpass)
{
    qh_xfail x = read_list("edge/*\n");
    cr_expect_eq(applied(&x, "edge/a", NULL, QH_FAILED), QH_XFAIL);
    cr_expect_eq(applied(&x, "edge/b", NULL, QH_PASSED), QH_XPASS);
    cr_expect_eq(applied(&x, "onnx/a", NULL, QH_FAILED), QH_FAILED, "not listed");
    cr_expect_eq(x.entries[0].matched, 2);
    cr_expect_eq(x.entries[0].waived, 1);
    qh_xfail_free(&x);
}

Test(xfail, crash_and_timeout_waived_only_when_named)
{
    qh_xfail x = read_list("k0 status=CRASHED\nplain\nboth status=FAILED,TIMEOUT\n");
    cr_expect_eq(applied(&x, "k0", NULL, QH_CRASHED), QH_XFAIL);
    cr_expect_eq(applied(&x, "plain", NULL, QH_CRASHED), QH_CRASHED, "FAILED expected");
    cr_expect_eq(applied(&x, "plain", NULL, QH_TIMEOUT), QH_TIMEOUT);
    cr_expect_eq(applied(&x, "both", NULL, QH_TIMEOUT), QH_XFAIL);
    cr_expect_eq(applied(&x, "both", NULL, QH_FAILED), QH_XFAIL);
    /* another bad status than the one expected stays bad, and the row says what was expected */
    qh_result r = row("k0", "spec", QH_FAILED);
    qh_xfail_apply(&x, NULL, &r);
    cr_expect_eq(r.status, QH_FAILED);
    cr_assert_not_null(r.detail);
    cr_expect(strstr(r.detail, "note: expected CRASHED (") && strstr(r.detail, "list.txt:1), "
                                                                           "got FAILED"),
              "%s", r.detail);
    qh_result_free(&r);
    /* statuses that are not failures are left alone */
    const qh_case_status kept[] = {QH_SKIPPED, QH_UNCHECKED, QH_MISTRUSTED, QH_ERROR};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        cr_expect_eq(applied(&x, "k0", NULL, kept[i]), kept[i], "%s",
                     qh_case_status_name(kept[i]));
    qh_xfail_free(&x);
}

/* invalid input a backend accepts is pinned too: rejecting it later is an XPASS */
Test(xfail, unchecked_can_be_expected)
{
    qh_xfail x = read_list("zero-scale status=UNCHECKED\n");
    cr_expect_eq(applied(&x, "zero-scale", NULL, QH_UNCHECKED), QH_XFAIL);
    cr_expect_eq(applied(&x, "zero-scale", NULL, QH_PASSED), QH_XPASS);
    cr_expect_eq(applied(&x, "zero-scale", NULL, QH_FAILED), QH_FAILED);
    qh_xfail_free(&x);
}

/* uninitialised memory is sometimes right: FAILED,PASSED takes either, and is not stale */
Test(xfail, not_deterministic_takes_a_pass)
{
    qh_xfail x = read_list("k0 status=FAILED,PASSED\n");
    cr_expect_eq(applied(&x, "k0", NULL, QH_PASSED), QH_PASSED);
    char why[512];
    cr_expect_eq(qh_xfail_stale(&x, 0, why, sizeof why), 0, "a pass uses the entry: %s", why);
    cr_expect_eq(applied(&x, "k0", NULL, QH_FAILED), QH_XFAIL);
    qh_result r = row("k0", "spec", QH_CRASHED);
    qh_xfail_apply(&x, NULL, &r);
    cr_expect_eq(r.status, QH_CRASHED);
    cr_expect(r.detail && strstr(r.detail, "expected PASSED,FAILED ("), "%s", r.detail);
    qh_result_free(&r);
    qh_xfail_free(&x);
}

/* The first matching entry whose statuses hold the row's waives it, whatever the order of the
 * lines: a pass of k0 is the "not deterministic" entry's, whether or not an entry expecting
 * FAILED alone comes first (that one made the pass XPASS, the other order PASSED). A failure
 * then uses both entries, in either order: none is stale. */
Test(xfail, the_entry_that_holds_the_status_waives_in_either_order)
{
    static const char *lists[] = {"k0\nk0 status=FAILED,PASSED\n", "k0 status=FAILED,PASSED\nk0\n"};
    for (int i = 0; i < 2; i++) {
        qh_xfail x = read_list(lists[i]);
        cr_expect_eq(applied(&x, "k0", NULL, QH_PASSED), QH_PASSED, "list %d", i);
        char why[512];
        int flaky = i == 0 ? 1 : 0, plain = 1 - flaky;
        cr_expect_eq(qh_xfail_stale(&x, flaky, why, sizeof why), 0, "list %d: %s", i, why);
        cr_expect_eq(qh_xfail_stale(&x, plain, why, sizeof why), 1, "list %d", i);
        /* a failure: both entries hold it, and none is stale any more */
        cr_expect_eq(applied(&x, "k0", NULL, QH_FAILED), QH_XFAIL, "list %d", i);
        for (int e = 0; e < 2; e++)
            cr_expect_eq(qh_xfail_stale(&x, e, why, sizeof why), 0, "list %d: %s", i, why);
        qh_xfail_free(&x);
    }
}

Test(xfail, backend_matches_name_or_spec)
{
    qh_xfail x = read_list("c backend=onednn*\nd backend=*xnnpack*\n");
    cr_expect_eq(applied(&x, "c", "onednn-2.6.3", QH_FAILED), QH_XFAIL, "by name");
    cr_expect_eq(applied(&x, "c", "gemmlowp", QH_FAILED), QH_FAILED, "another backend");
    cr_expect_eq(applied(&x, "c", NULL, QH_FAILED), QH_FAILED, "spec build/x.so");
    qh_result r = row("d", "build/peers/xnnpack/libqmm_peer_xnnpack.so", QH_FAILED);
    qh_xfail_apply(&x, NULL, &r);
    cr_expect_eq(r.status, QH_XFAIL, "by spec, the name unknown (isolated)");
    qh_result_free(&r);
    qh_xfail_free(&x);
}

Test(xfail, stale_entries_say_why)
{
    qh_xfail x = read_list("used\nnever\nskipping\npassing\n");
    applied(&x, "used", NULL, QH_FAILED);
    applied(&x, "skipping", NULL, QH_SKIPPED);
    applied(&x, "passing", NULL, QH_PASSED);
    char why[512];
    cr_expect_eq(qh_xfail_stale(&x, 0, why, sizeof why), 0);
    cr_expect_eq(qh_xfail_stale(&x, 1, why, sizeof why), 1);
    cr_expect(strstr(why, "list.txt:2: expected-failure entry 'never' matches no case"), "%s",
              why);
    cr_expect_eq(qh_xfail_stale(&x, 2, why, sizeof why), 1);
    cr_expect(strstr(why, ":3: expected-failure entry 'skipping' matched 1 row(s), none FAILED"),
              "a backend that now answers UNSUPPORTED changed too: %s", why);
    /* an XPASS row already says so (and fails a strict run): not stale twice */
    cr_expect_eq(qh_xfail_stale(&x, 3, why, sizeof why), 0);
    qh_xfail_free(&x);
}

/* ---- the CLI ---- */

/* Writes the list the CLI tests use into tmpdir/xf.txt. */
static const char *cli_list(const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/xf.txt", tmpdir);
    write_text(path, text);
    return path;
}

Test(xfail, cli_stale_entry_warns_strict_fails)
{
    const char *xf = cli_list("orion-*\nonnx-doc-*\nno-such-case\n");
    char *out = qmmcheck_expect(0, "run --backend '%s' --vectors vectors/seeds --xfail '%s'",
                                env("QMM_FAKE_PLUGIN"), xf);
    expect_in(out, "warning: ");
    expect_in(out, "xf.txt:3: expected-failure entry 'no-such-case' matches no case");
    expect_in(out, "xfail:3 xpass:0");
    free(out);
    out = qmmcheck_expect(1, "run --backend '%s' --vectors vectors/seeds --xfail '%s' "
                          "--xfail-strict", env("QMM_FAKE_PLUGIN"), xf);
    expect_in(out, ":ERROR <xfail> (");
    expect_in(out, "error:1 xfail:3");
    free(out);
    /* without the stale entry, strict passes */
    xf = cli_list("orion-*\nonnx-doc-*\n");
    out = qmmcheck_expect(0, "run --backend '%s' --vectors vectors/seeds --xfail '%s' "
                          "--xfail-strict", env("QMM_FAKE_PLUGIN"), xf);
    cr_expect(strstr(out, "warning") == NULL, "%s", out);
    free(out);
}

/* A stale entry is text from a file: its warning cannot put a raw escape sequence or a
 * forged line on the terminal. */
Test(xfail, cli_stale_entry_text_is_cleaned)
{
    const char *xf = cli_list("orion-*\nonnx-doc-*\nno-such-\x1b[2J-case\x01\n");
    char *out = qmmcheck_expect(0, "run --backend '%s' --vectors vectors/seeds --xfail '%s'",
                                env("QMM_FAKE_PLUGIN"), xf);
    cr_expect(strchr(out, '\x1b') == NULL && strchr(out, '\x01') == NULL,
              "a control character reached the output: %s", out);
    expect_in(out, "'no-such-\\x1b[2J-case\\x01' matches no case");
    free(out);
}

Test(xfail, cli_xpass_fails_only_when_strict)
{
    const char *xf = cli_list("orion-*\n");
    char *out = qmmcheck_expect(0, "run --backend reference --vectors vectors/seeds --xfail '%s'",
                                xf);
    expect_in(out, ":XPASS orion-doc-qlinear-matmul (expected FAILED (");
    free(out);
    out = qmmcheck_expect(1, "run --backend reference --vectors vectors/seeds --xfail '%s' "
                          "--xfail-strict", xf);
    expect_in(out, "FAILED: 1 expected failures passed (XPASS), under --xfail-strict");
    free(out);
}

Test(xfail, cli_backend_entry_applies_to_its_backend_only)
{
    /* one list, two backends: the fake plugin's failures are expected, the reference's passes
     * are not XPASS */
    const char *xf = cli_list("* backend=*fake_backend*\n");
    char *out = qmmcheck_expect(0, "run --backend reference --backend '%s' --vectors vectors/seeds "
                                "--xfail '%s' --xfail-strict", env("QMM_FAKE_PLUGIN"), xf);
    expect_in(out, "passed:3 failed:0");
    expect_in(out, "xfail:3 xpass:0");
    free(out);
}

Test(xfail, cli_timeout_waived_when_named)
{
    const char *xf = cli_list("orion-* status=TIMEOUT\n");
    char *out = qmmcheck_expect(0, "run --backend '%s:mode=hang_run' --timeout 1 --vectors "
                                "vectors/seeds --filter orion --xfail '%s'",
                                env("QMM_HOSTILE_PLUGIN"), xf);
    expect_in(out, ":XFAIL orion-doc-qlinear-matmul");
    free(out);
    xf = cli_list("orion-*\n");
    out = qmmcheck_expect(1, "run --backend '%s:mode=hang_run' --timeout 1 --vectors "
                          "vectors/seeds --filter orion --xfail '%s'",
                          env("QMM_HOSTILE_PLUGIN"), xf);
    expect_in(out, ":TIMEOUT orion-doc-qlinear-matmul");
    expect_in(out, "note: expected FAILED (");
    free(out);
}

Test(xfail, cli_reports_carry_the_rows)
{
    const char *xf = cli_list("orion-*\nonnx-doc-matmulinteger\nghost\n");
    char json[512], xml[512];
    snprintf(json, sizeof json, "%s/r.json", tmpdir);
    snprintf(xml, sizeof xml, "%s/r.xml", tmpdir);
    char *out = qmmcheck_expect(1, "run --backend reference --vectors vectors/seeds --xfail '%s' "
                                "--xfail-strict --report json:%s --report junit:%s", xf, json,
                                xml);
    free(out);
    char *j = slurp(json);
    expect_in(j, "\"xpass\": 2");
    expect_in(j, "\"error\": 1,");
    expect_in(j, "\"name\": \"<xfail>\"");
    expect_in(j, "\"status\": \"xpass\"");
    expect_in(j, "expected-failure entry 'ghost' matches no case");
    free(j);
    expect_json_valid(json);
    char *x = slurp(xml);
    /* --xfail-strict: an XPASS fails the run, so the CI server must list it as a failure */
    expect_in(x, "<testsuites name=\"qmmcheck\" tests=\"4\" failures=\"2\" errors=\"1\"");
    cr_expect_eq(count_lines_with(x, "<failure type=\"xpass\" message=\"expected FAILED ("), 2,
                 "%s", x);
    cr_expect(strstr(x, "<system-out>XPASS") == NULL, "an XPASS shown as a pass:\n%s", x);
    expect_in(x, "name=\"&lt;xfail&gt;\"");
    expect_in(x, "<error type=\"error\"");
    free(x);
    expect_junit_valid(xml);
    /* without --xfail-strict an XPASS passes, with its note beside it */
    free(qmmcheck_expect(0, "run --backend reference --vectors vectors/seeds --xfail '%s' "
                            "--report junit:%s", xf, xml));
    x = slurp(xml);
    cr_expect_eq(count_lines_with(x, "<system-out>XPASS: expected FAILED ("), 2, "%s", x);
    cr_expect(strstr(x, "<failure") == NULL, "%s", x);
    free(x);
    expect_junit_valid(xml);
}
