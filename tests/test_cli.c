/* tests/test_cli.c — the qmmcheck command line as a user meets it: exit codes, statuses,
 * case lines, reports. Runs the real binary ($QMMCHECK) on the committed vectors and on cases
 * built in temporary directories. */
#include "tests/cli_support.h"
#include "tests/casefile_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/io/onnx_io.h"

/* The vectors the counts below were written for: the onnx 1.12/1.21/1.22 node tests and the
 * seeds. vectors/edge and newer onnx extractions have their own checks (tests/test_edge.c). */
#define CLASSIC " --filter '^(seeds|onnx/onnx-1[.](12|21|22)[.]0)/'"

TestSuite(cli, .init = make_tmp, .fini = remove_tmp);

/* ---- usage errors exit 2 ---- */

Test(cli, usage_errors_exit_2)
{
    const char *bad[] = {
        "",
        "frobnicate",
        "run --vectors vectors",
        "run --backend reference --vectors vectors --no-such-option",
        "run --backend reference --vectors vectors --shard 0/2",
        "run --backend reference --vectors vectors --shard 3/2",
        "run --backend reference --vectors vectors --shard x",
        "run --backend reference --vectors vectors --report xml:r.xml",
        "run --backend reference --vectors vectors --report json:",
        "run --backend reference --vectors vectors --filter '('",
        "run --backend nosuchbackend --vectors vectors",
        "run --backend reference:profile=nonsense --vectors vectors",
        "run --backend reference --vectors /nonexistent/dir",
        "run --backend ./nonexistent-plugin.so --vectors vectors",
        "run --backend reference --vectors vectors --xfail /nonexistent/xfail.txt",
        "repro",
    };
    expect_usage_errors(bad, sizeof bad / sizeof bad[0]);
}

/* A refused profile combination says why in every command that takes --profile, as list
 * --profiles does (it said "unknown semantics profile"); a name that spells nothing lists the
 * known ones. */
Test(cli, a_refused_profile_says_why)
{
    const char *cmds[] = {"run --backend reference --vectors vectors/seeds",
                          "repro vectors/seeds/onnx-doc-qlinearmatmul-2d",
                          "diff --backend reference --backend reference --seed 1 --count 1",
                          "reduce vectors/seeds/onnx-doc-qlinearmatmul-2d --backend reference",
                          "bench --backend reference --shape 4x4x4 --profile reference=spec"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int bench = strncmp(cmds[i], "bench", 5) == 0; /* its --profile is B=PROFILE */
        qmmcheck_expect_in(2, "--profile orion-fp16x16+sat32: Orion sums dequantized Q16.16 "
                              "products", "%s --profile %sorion-fp16x16+sat32", cmds[i],
                           bench ? "reference=" : "");
        qmmcheck_expect_in(2, "--profile nonesuch: unknown semantics profile (known: spec, ",
                           "%s --profile %snonesuch", cmds[i], bench ? "reference=" : "");
    }
    /* --variants alone checked nothing and said nothing */
    qmmcheck_expect_in(2, "--variants threads=1: these are --determinism's option sets: give "
                          "--determinism too", "repro --variants threads=1 "
                          "vectors/seeds/onnx-doc-qlinearmatmul-2d");
    qmmcheck_expect_in(2, "give --determinism too", "run --backend reference --variants "
                          "threads=1 --vectors vectors/seeds");
}

Test(cli, help_exits_0)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "help"), 0);
    cr_expect(strstr(out, "usage: qmmcheck") != NULL);
    free(out);
}

/* ---- the committed vectors against the reference ---- */

Test(cli, reference_over_committed_vectors)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend reference --vectors vectors" CLASSIC);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "SUMMARY: total:24 passed:20 failed:0 mistrusted:4 skipped:0 "
                          "unchecked:0 crashed:0 timeout:0 error:0 xfail:0 xpass:0") != NULL,
              "%s", out);
    /* exactly the four onnx-1.21.0 int8 cases are mistrusted */
    cr_expect_eq(count_lines_with(out, ":MISTRUSTED onnx/onnx-1.21.0/test_qlinearmatmul_"), 4);
    cr_expect_eq(count_lines_with(out, ":MISTRUSTED"), 4);
    cr_expect_eq(count_lines_with(out, "_int8_float"), 8); /* 4 in 1.21 (mistrusted), 4 in 1.22 */
    cr_expect_eq(count_lines_with(out, ":PASSED onnx/onnx-1.22.0/test_qlinearmatmul_3D_int8"), 2);
    cr_expect_eq(count_lines_with(out, ":PASSED seeds/orion-doc-qlinear-matmul"), 1);
    /* every case line ends in a reproducer */
    cr_expect_eq(count_lines_with(out, " __REPRO: qmmcheck repro --backend reference "), 24);
    free(out);
}

/* onnx's own DequantizeLinear node tests (vectors/onnx/onnx-1.23.2), the packed int4, uint4,
 * int2, uint2 and float4e2m1 ones included, pass the reference in process and in a worker
 * (where the packed inputs cross into guarded pages: a wrong byte count there crashes). */
Test(cli, reference_passes_onnx_dequantizelinear_node_tests)
{
    static const char *const packed[] = {"int4", "uint4", "int2", "uint2", "float4e2m1"};
    for (int isolate = 0; isolate < 2; isolate++) {
        char *out;
        int rc = qmmcheck(&out, "run --backend reference %s --vectors vectors "
                                "--filter '^onnx/onnx-1[.]23[.]2/test_dequantizelinear'",
                          isolate ? "--isolate" : "");
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        expect_in(out, "SUMMARY: total:14 passed:14 failed:0 mistrusted:0 skipped:0 "
                       "unchecked:0 crashed:0 timeout:0 error:0 ");
        free(out);
        /* per axis and blocked, packed zero points at odd offsets (its make.py) */
        rc = qmmcheck(&out, "run --backend reference %s --vectors tests/dequantizelinear-packed",
                      isolate ? "--isolate" : "");
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        expect_in(out, "SUMMARY: total:10 passed:10 failed:0 mistrusted:0 skipped:0 "
                       "unchecked:0 crashed:0 timeout:0 error:0 ");
        free(out);
        rc = qmmcheck(&out, "run --backend reference %s --vectors vectors "
                            "--filter '^onnx/onnx-1[.]23[.]2/test_dequantizelinear'",
                      isolate ? "--isolate" : "");
        for (int i = 0; i < 5; i++) {
            char line[128];
            snprintf(line, sizeof line, ":PASSED onnx/onnx-1.23.2/test_dequantizelinear_%s ",
                     packed[i]);
            expect_in(out, line);
        }
        free(out);
    }
}

/* Without --vectors the build tree's qmmcheck runs the source tree's suites, and says so (an
 * installed one runs the installed suites: tests/install/install_smoke.sh). */
Test(cli, run_without_vectors_from_the_build_tree_runs_the_source_suites)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend reference --quiet" CLASSIC);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    expect_in(out, "qmmcheck: no --vectors given: running the source tree's suites (qmmcheck "
                   "from its build tree) in ");
    expect_in(out, "/vectors (edge, onnx, peers, qordered, seeds)\n");
    expect_in(out, "SUMMARY: total:24 passed:20 failed:0 mistrusted:4 ");
    free(out);
}

Test(cli, truncated_pb_is_error_and_run_goes_on)
{
    char dir[512], pb[600];
    snprintf(dir, sizeof dir, "%s/vec", tmpdir);
    copy_tree("vectors/onnx/onnx-1.12.0", dir);
    snprintf(pb, sizeof pb, "%s/test_qlinearmatmul_2D/test_data_set_0/input_3.pb", dir);
    cr_assert(truncate(pb, 7) == 0);
    char *out = qmmcheck_expect(1, "run --backend reference --vectors '%s'", dir);
    cr_expect_eq(count_lines_with(out, ":ERROR test_qlinearmatmul_2D"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, "input_3.pb"), 1, "the error names the file:\n%s", out);
    expect_in(out, "total:3 passed:2 failed:0");
    expect_in(out, "error:1");
    free(out);
}

Test(cli, filter_and_shard)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "run -q --backend reference --vectors vectors --filter '^(seeds|onnx/onnx-1[.](12|21|22)[.]0)/.*matmulinteger'"), 0);
    cr_expect(strstr(out, "total:4 passed:4") != NULL, "%s", out); /* 3 onnx + 1 seed */
    free(out);

    int total = 0;
    for (int i = 1; i <= 3; i++) {
        cr_assert_eq(qmmcheck(&out, "list --vectors vectors --shard %d/3" CLASSIC, i), 0);
        int n = count_lines_with(out, "\t");
        cr_expect(n == 8, "shard %d/3 has %d cases, want 8", i, n);
        total += n;
        free(out);
    }
    cr_expect_eq(total, 24);
}

/* ---- --tag and list --tags (harness/io/case_tags.h) ---- */

/* How many cases `list` prints for these options. */
static int listed(const char *opts)
{
    char *out;
    int rc = qmmcheck(&out, "list --vectors vectors %s", opts);
    cr_expect_eq(rc, 0, "list %s: exit %d\n%s", opts, rc, out);
    int n = count_lines_with(out, "\t");
    free(out);
    return n;
}

/* --tag selects by the tags in qmm.meta, not by name: every case listed carries the tags (a
 * comma list: one of them; repeated: one of each), and it finds cases whose names lack them. */
Test(cli, tag_selects_by_the_tags_cases_carry)
{
    int by_tag = listed("--tag u8s8u8"), by_name = listed("--filter u8s8u8");
    cr_expect_gt(by_tag, by_name, "--tag u8s8u8: %d, --filter u8s8u8: %d", by_tag, by_name);
    int s8 = listed("--tag s8s8s8");
    cr_expect_eq(listed("--tag u8s8u8,s8s8s8"), by_tag + s8);
    cr_expect_eq(listed("--tag ' u8s8u8 , s8s8s8 '"), by_tag + s8);
    int simple = listed("--tag simple-form --tag u8s8u8");
    cr_expect_geq(simple, 40, "a u8s8u8 kernel of the simplest form gets %d cases", simple);
    cr_expect_lt(simple, by_tag);
    cr_expect_eq(listed("--tag u8s8u8 --tag simple-form"), simple);
    cr_expect_eq(listed("--tag no-such-tag"), 0);

    /* every case listed carries both tags, and some have names without the types */
    char *out;
    cr_assert_eq(qmmcheck(&out, "list --vectors vectors --tag simple-form --tag u8s8u8"), 0);
    int nameless = 0;
    for (char *line = out; line && *line;) {
        char *nl = strchr(line, '\n'), *tab = strchr(line, '\t');
        if (nl)
            *nl = '\0';
        if (tab) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s/qmm.meta", env("QMM_SOURCE_DIR"), tab + 1);
            char *meta = slurp(path);
            cr_expect(meta && strstr(meta, "simple-form") && strstr(meta, "u8s8u8"), "%s: %s",
                      path, meta ? meta : "(none)");
            free(meta);
            nameless += strstr(line, "u8s8u8") > tab || !strstr(line, "u8s8u8");
        }
        line = nl ? nl + 1 : NULL;
    }
    cr_expect_gt(nameless, 0, "every u8s8u8 case has the types in its name");
    free(out);

    /* run: the same selection; no case carrying the tag is a run that judged nothing */
    out = qmmcheck_expect(0, "run -q --backend reference --vectors vectors --tag simple-form "
                             "--tag u8s8u8");
    char want[64];
    snprintf(want, sizeof want, "SUMMARY: total:%d ", simple);
    expect_in(out, want);
    free(out);
    qmmcheck_expect_in(3, "no case carries the --tag tags",
                       "run -q --backend reference --vectors vectors --tag no-such-tag");
    const char *bad[] = {
        "run --backend reference --vectors vectors --tag ''",
        "run --backend reference --vectors vectors --tag u8s8u8,",
        "run --backend reference --vectors vectors --tag 'a,,b'",
        "list --vectors vectors --tag "
        "a234567890123456789012345678901234567890123456789012345678901234",
    };
    expect_usage_errors(bad, sizeof bad / sizeof bad[0]);
}

/* list --tags: each tag with how many of the selected cases carry it, by tag; its counts are
 * --tag's; a tag from a file is printed cleaned; a case whose qmm.meta does not parse is
 * counted apart, and --tag keeps it so that run reports its ERROR. */
/* README and list --help: without --vectors, list --tags reads the installed suites, as run
 * does (it was a usage error, exit 2: "list: give --vectors DIR, --backends or --profiles"). */
Test(cli, list_tags_without_vectors_reads_the_default_suites)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "list --tags"), 0, "%s", out);
    expect_in(out, "\nsimple-form\t");
    expect_in(out, " tags over ");
    free(out);
}

Test(cli, list_tags_counts_and_unreadable_metas_are_kept)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "list --tags --vectors vectors"), 0, "%s", out);
    char want[64];
    snprintf(want, sizeof want, "\nsimple-form\t%d\n", listed("--tag simple-form"));
    expect_in(out, want);
    snprintf(want, sizeof want, "\nu8s8u8\t%d\n", listed("--tag u8s8u8"));
    expect_in(out, want);
    expect_in(out, " tags over ");
    free(out);
    cr_assert_eq(qmmcheck(&out, "list --tags --vectors vectors --tag simple-form --tag u8s8u8"),
                 0);
    snprintf(want, sizeof want, "simple-form\t%d\n", listed("--tag simple-form --tag u8s8u8"));
    expect_in(out, want);
    cr_expect(!strstr(out, "\ns8s8s8\t"), "%s", out);
    free(out);

    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/t", tmpdir);
    copy_tree("vectors/edge/qlinearmatmul/ties/odd-zp-pos-u8s8u8", dir);
    snprintf(path, sizeof path, "%s/qmm.meta", dir);
    write_text(path, "tags = mine, \x1b[31mred\n");
    cr_assert_eq(qmmcheck(&out, "list --tags --vectors '%s'", dir), 0, "%s", out);
    cr_expect(!strchr(out, '\x1b'), "%s", out);
    expect_in(out, "mine\t1");
    free(out);
    qmmcheck_expect_in(0, "total:1 passed:1",
                       "run -q --backend reference --vectors '%s' --tag mine", dir);
    write_text(path, "tags = mine\nno equals sign here\n");
    out = qmmcheck_expect(1, "run -q --backend reference --vectors '%s' --tag other", dir);
    expect_in(out, "total:1 ");
    expect_in(out, "error:1 ");
    free(out);
    cr_assert_eq(qmmcheck(&out, "list --tags --vectors '%s'", dir), 0, "%s", out);
    expect_in(out, "1 whose qmm.meta cannot be read");
    free(out);
}

/* The case names of a run's case lines ("N:STATUS NAME ..."), one a line, in run order. */
static char *case_names(const char *out)
{
    char *names = calloc(1, strlen(out) + 1); /* the names are shorter than their lines */
    size_t used = 0;
    for (const char *line = out; line && *line;) {
        const char *nl = strchr(line, '\n');
        const char *colon = strchr(line, ':');
        if (line[0] >= '1' && line[0] <= '9' && colon && (!nl || colon < nl)) {
            const char *name = strchr(colon, ' ');
            if (name && (!nl || name < nl)) {
                name++;
                size_t len = strcspn(name, " \n");
                memcpy(names + used, name, len);
                used += len;
                names[used++] = '\n';
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return names;
}

/* --shard I/N for N = 1, 2, 3, 7: the shards' case lines together are the whole run's, each
 * exactly once; each SUMMARY line, JSON and JUnit report says which shard it ran. */
Test(cli, shards_partition_the_run)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "run --backend reference --vectors vectors" CLASSIC), 0, "%s",
                 out);
    char *all = case_names(out);
    free(out);
    int total = count_lines_with(all, "/");
    cr_assert_eq(total, 24, "%s", all);
    static const int counts[] = {1, 2, 3, 7};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        int seen[24] = {0};
        for (int i = 1; i <= n; i++) {
            int rc = qmmcheck(&out, "run --backend reference --vectors vectors" CLASSIC
                              " --shard %d/%d --report json:%s/s.json --report junit:%s/s.xml",
                              i, n, tmpdir, tmpdir);
            cr_assert_eq(rc, 0, "shard %d/%d exited %d:\n%s", i, n, rc, out);
            char want[64];
            snprintf(want, sizeof want, " s) shard %d/%d\n", i, n);
            expect_in(out, want);
            char path[512];
            snprintf(path, sizeof path, "%s/s.json", tmpdir);
            char *json = slurp(path);
            snprintf(want, sizeof want, "\"shard\": \"%d/%d\"", i, n);
            expect_in(json, want);
            free(json);
            expect_json_valid(path);
            snprintf(path, sizeof path, "%s/s.xml", tmpdir);
            char *xml = slurp(path);
            snprintf(want, sizeof want, "<property name=\"shard\" value=\"%d/%d\"/>", i, n);
            expect_in(xml, want);
            free(xml);
            char *names = case_names(out);
            free(out);
            /* each name of the shard is one of the whole run's, not seen in another shard */
            for (char *save = NULL, *name = strtok_r(names, "\n", &save); name;
                 name = strtok_r(NULL, "\n", &save)) {
                int k = 0;
                for (const char *p = all; k < total; k++) {
                    size_t len = strcspn(p, "\n");
                    if (len == strlen(name) && strncmp(p, name, len) == 0)
                        break;
                    p += len + 1;
                }
                cr_assert_lt(k, total, "shard %d/%d ran %s, not in the whole run", i, n, name);
                cr_expect_eq(seen[k], 0, "%s ran twice with N=%d", name, n);
                seen[k]++;
            }
            free(names);
        }
        for (int k = 0; k < total; k++)
            cr_expect_eq(seen[k], 1, "N=%d: case %d of the whole run ran %d times", n, k,
                         seen[k]);
    }
    free(all);
}

/* A usage error echoes the command line cleaned into one line (harness/base/clean.h): an argument
 * with a newline cannot start a line of its own (a forged case line) on any command. */
Test(cli, usage_errors_clean_what_they_echo)
{
    static const char *cmds[] = {
        "diff", "export", "fingerprint", "version", "reduce a",
        "run --backend reference --profile", "bench --threads", "diff --seed",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *out = qmmcheck_expect(2, "%s \"$(printf 'x\\nFAIL forged')\"", cmds[i]);
        expect_in(out, "x\\nFAIL forged");
        cr_expect(strstr(out, "\nFAIL forged") == NULL, "%s: %s", cmds[i], out);
        free(out);
    }
}

/* An argument or an --xfail line that an error quotes is echoed cleaned: an escape or a line
 * break in it cannot reach the terminal raw, nor start a line of its own. */
Test(cli, errors_clean_the_arguments_and_xfail_lines_they_quote)
{
    static const struct {
        int rc;
        const char *args;
    } cmds[] = {
        {2, "export --suite %s --out x"},
        {2, "list --vectors vectors/seeds --filter %s"},
        {2, "list --vectors %s"},
        {2, "run --backend reference --vectors vectors/seeds --xfail %s"},
        {2, "run -q --backend reference --vectors vectors/seeds --report json:%s/r.json"},
        {2, "%s"},
        {2, "help %s"},
    };
    const char *arg = "\"$(printf '[x\\033[31m\\nFAIL forged')\"";
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *out, args[256];
        snprintf(args, sizeof args, cmds[i].args, arg);
        int rc = qmmcheck(&out, "%s", args);
        cr_expect_eq(rc, cmds[i].rc, "%s: %d: %s", cmds[i].args, rc, out);
        expect_in(out, "[x\\x1b[31m\\nFAIL forged");
        cr_expect(strstr(out, "\nFAIL forged") == NULL, "%s: %s", cmds[i].args, out);
        cr_expect(strchr(out, '\x1b') == NULL, "%s: %s", cmds[i].args, out);
        free(out);
    }
    char xf[512], *out;
    snprintf(xf, sizeof xf, "%s/xfail.txt", tmpdir);
    write_text(xf, "seeds/x status=\x1b[31mFAIL\n");
    out = qmmcheck_expect(2, "run --backend reference --vectors vectors/seeds --xfail '%s'", xf);
    expect_in(out, "status '\\x1b[31mFAIL'");
    cr_expect(strchr(out, '\x1b') == NULL, "%s", out);
    free(out);
}

/* A backend spec that cannot be opened is echoed cleaned: a plugin path, an unknown name and a
 * built-in's bad options, each with a newline in it. */
Test(cli, backend_errors_clean_the_spec)
{
    static const char *specs[] = {"x\nFAIL forged.so", "nosuch\nFAIL forged",
                                  "reference:x\nFAIL forged"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        char *out;
        qmmcheck(&out, "run --backend \"$(printf '%s')\" --vectors vectors/seeds", specs[i]);
        expect_in(out, "\\nFAIL forged");
        cr_expect(strstr(out, "\nFAIL forged") == NULL, "%s: %s", specs[i], out);
        free(out);
    }
}

/* A plugin whose path holds a newline and an escape is named cleaned in fingerprint's first
 * line: the path cannot print a verdict line of its own before the real one. */
Test(cli, fingerprint_cleans_the_backend_name)
{
    char link[512], *out;
    snprintf(link, sizeof link, "%s/x\x1b[31m\nverdict spec (forged).so", tmpdir);
    cr_assert_eq(symlink(env("QMM_FAKE_PLUGIN"), link), 0, "%s", link);
    int rc = qmmcheck(&out, "fingerprint --backend \"$(printf '%s/x\\033[31m\\nverdict spec "
                            "(forged).so:mode=zeros')\"", tmpdir);
    cr_expect_eq(rc, 5, "%s", out);
    expect_in(out, "x\\x1b[31m\\nverdict spec (forged).so:mode=zeros: 118 cases");
    cr_expect(strstr(out, "\nverdict spec (forged)") == NULL, "%s", out);
    cr_expect(strchr(out, '\x1b') == NULL, "%s", out);
    free(out);
}

/* fingerprint's and bench's --report refuse, as run's does, a FILE that is a special file, a
 * symbolic link or a directory, before the work: they renamed their report over a FIFO or a
 * link (a device too, when root: --report json:/dev/full left /dev/full a regular file). */
Test(cli, fingerprint_and_bench_reports_refuse_what_is_not_a_regular_file)
{
    char fifo[512], link[512], dir[512], *out;
    struct stat st;
    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    snprintf(link, sizeof link, "%s/link", tmpdir);
    snprintf(dir, sizeof dir, "%s/dir", tmpdir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    cr_assert_eq(symlink("elsewhere.json", link), 0);
    cr_assert_eq(mkdir(dir, 0755), 0);
    out = qmmcheck_expect(2, "fingerprint --backend reference --report 'json:%s'", fifo);
    expect_in(out, "not a regular file");
    free(out);
    cr_expect(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    out = qmmcheck_expect(2, "fingerprint --backend reference --report 'json:%s'", link);
    expect_in(out, "a symbolic link");
    free(out);
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced");
    out = qmmcheck_expect(2, "fingerprint --backend reference --report 'json:%s'", dir);
    expect_in(out, "a directory");
    free(out);
    /* bench's --report, one backend or several */
    out = qmmcheck_expect(2, "bench --backend reference --shape 2x2x2 --report 'json:%s'", fifo);
    expect_in(out, "not a regular file");
    free(out);
    out = qmmcheck_expect(2, "bench --backend reference --backend reference --shape 2x2x2 "
                             "--report 'json:%s'", link);
    expect_in(out, "a symbolic link");
    free(out);
    cr_expect(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "bench replaced the FIFO");
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "bench replaced the link");
}

/* A bad --shard exits 2 with a message naming the option, its value and the form it wants. */
Test(cli, bad_shard_forms_are_usage_errors)
{
    static const char *bad[] = {"0/0", "3/2", "x/y", "1/0", "0/2", "1", "/2", "1/", "-1/2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = qmmcheck_expect(2, "run --backend reference --vectors vectors/seeds "
                                       "--shard '%s'", bad[i]);
        char want[64];
        snprintf(want, sizeof want, "--shard %s: expected I/N", bad[i]);
        expect_in(out, want);
        expect_in(out, "1 <= I <= N");
        free(out);
    }
}

Test(cli, list_shows_names_and_paths)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "list --vectors vectors" CLASSIC), 0);
    expect_in(out, "onnx/onnx-1.12.0/test_matmulinteger\tvectors/onnx/onnx-1.12.0/test_matmulinteger");
    cr_expect(strstr(out, "24 cases") != NULL);
    free(out);
    cr_assert_eq(qmmcheck(&out, "list --backends"), 0);
    cr_expect(strstr(out, "reference") != NULL);
    free(out);
}

/* ---- reports ---- */

Test(cli, json_and_junit_reports)
{
    char *out;
    int rc = qmmcheck(&out, "run -q --backend reference --vectors vectors" CLASSIC " --report json:%s/r.json "
                            "--report junit:%s/r.xml", tmpdir, tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    char *j = slurp(path);
    cr_expect(strstr(j, "\"summary\": {\"total\": 24, \"passed\": 20, \"failed\": 0, "
                        "\"mistrusted\": 4, \"skipped\": 0, \"unchecked\": 0, \"crashed\": 0, "
                        "\"timeout\": 0, \"error\": 0, \"xfail\": 0, \"xpass\": 0, "
                        "\"inconclusive\": 0}") != NULL, "%s", j);
    cr_expect(strstr(j, "\"cases\": [") != NULL);
    cr_expect(strstr(j, "\"name\": \"onnx/onnx-1.21.0/test_qlinearmatmul_2D_int8_float16\", "
                        "\"path\": \"vectors/onnx/onnx-1.21.0/test_qlinearmatmul_2D_int8_float16\", "
                        "\"data_set\": 0, \"backend\": \"reference\", \"status\": \"mistrusted\"") != NULL, "%s", j);
    cr_expect(strstr(j, "\"detail\": \"stored output_0 differs from the reference") != NULL, "%s", j);
    free(j);
    expect_json_valid(path);

    snprintf(path, sizeof path, "%s/r.xml", tmpdir);
    char *x = slurp(path);
    cr_expect(strncmp(x, "<?xml version=\"1.0\"", 19) == 0);
    cr_expect(strstr(x, "<testsuites name=\"qmmcheck\" tests=\"24\" failures=\"0\" errors=\"0\" time=") != NULL, "%s", x);
    cr_expect(strstr(x, "<testsuite name=\"qmmcheck\" tests=\"24\" failures=\"0\" errors=\"0\" skipped=\"0\"") != NULL, "%s", x);
    cr_expect_eq(count_lines_with(x, "<testcase "), 24);
    cr_expect_eq(count_lines_with(x, "<system-out>MISTRUSTED"), 4);
    free(x);
    expect_junit_valid(path);
}

/* ---- the version: CMake's project(... VERSION), passed in as QMM_VERSION ---- */

/* Two --report options naming one file (as written, through another path to its folder, or
 * by another kind) are a usage error: the later report silently replaced the earlier. */
Test(cli, two_reports_on_one_file_are_refused)
{
    char sub[512];
    snprintf(sub, sizeof sub, "%s/d", tmpdir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    static const char *pairs[][2] = {
        {"json:%s/r", "junit:%s/r"},
        {"json:%s/r", "json:%s/r"},
        {"html:%s/d/../r", "junit:%s/./r"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char a[600], b[600], *out;
        snprintf(a, sizeof a, pairs[i][0], tmpdir);
        snprintf(b, sizeof b, pairs[i][1], tmpdir);
        out = qmmcheck_expect(2, "run -q --backend reference --vectors vectors/seeds "
                                 "--report '%s' --report '%s'", a, b);
        expect_in(out, "the same file");
        free(out);
    }
    char a[600], *out;
    snprintf(a, sizeof a, "%s/r", tmpdir);
    out = qmmcheck_expect(0, "run -q --backend reference --vectors vectors/seeds "
                             "--report 'json:%s.json' --report 'junit:%s.xml'", a, a);
    free(out);
}

Test(cli, version_is_the_cmake_project_version)
{
    const char *version = env("QMM_VERSION");
    char *out;
    int rc = qmmcheck(&out, "--version");
    cr_assert_eq(rc, 0, "%s", out);
    char want[256];
    snprintf(want, sizeof want, "qmmcheck %s (qmm ABI ", version);
    cr_expect(strncmp(out, want, strlen(want)) == 0, "want '%s...', got '%s'", want, out);
    free(out);

    rc = qmmcheck(&out, "run -q --backend reference --vectors vectors/seeds --report json:%s/r.json",
                  tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/r.json", tmpdir);
    char *j = slurp(path);
    snprintf(want, sizeof want, "{\n  \"tool\": \"qmmcheck\",\n  \"version\": \"%s\",\n", version);
    cr_expect(strncmp(j, want, strlen(want)) == 0, "want '%s...', got '%s'", want, j);
    free(j);
}

/* ---- a plugin that computes wrong results ---- */

Test(cli, wrong_backend_fails_with_detail_and_xfail)
{
    char *out = qmmcheck_expect(1, "run --backend '%s:mode=zeros' --vectors vectors/seeds",
                                env("QMM_FAKE_PLUGIN"));
    expect_in(out, ":FAILED orion-doc-qlinear-matmul (errors:2 total:2) __REPRO: qmmcheck repro --backend ");
    /* orion: y[0,0] expected 14, got 0, acc 48, exact scaled value 4 */
    expect_in(out, "y[0,0] (index 0): expected 14, got 0; acc 48; acc*scale = 4;");
    expect_in(out, "failed:3");
    free(out);

    char xf[512];
    snprintf(xf, sizeof xf, "%s/xfail.txt", tmpdir);
    write_text(xf, "# known bad\norion-*\nonnx-doc-matmulinteger\n");
    /* exit 1: one failure is not expected */
    out = qmmcheck_expect(1, "run --backend '%s' --vectors vectors/seeds --xfail '%s'",
                          env("QMM_FAKE_PLUGIN"), xf);
    expect_in(out, "failed:1 ");
    expect_in(out, "xfail:2");
    free(out);

    /* an expected failure that passes is XPASS, which does not fail the run */
    qmmcheck_expect_in(0, "xpass:2", "run --backend reference --vectors vectors/seeds --xfail '%s'",
                       xf);
}

Test(cli, unsupported_backend_is_skipped)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend '%s:mode=unsupported' --vectors vectors" CLASSIC,
                      env("QMM_FAKE_PLUGIN"));
    cr_expect_eq(rc, 3, "a run that judged nothing must not pass: %s", out);
    expect_in(out, "skipped:24");
    expect_in(out, "EMPTY: no case was judged: every case was SKIPPED");
    expect_in(out, "(unsupported: fake: mode=unsupported supports nothing)");
    free(out);
}

/* With several backends the message says which skipped: it said "the backend" of a run where
 * one of two did. */
Test(cli, the_skip_message_names_the_backend_that_skipped)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend '%s:mode=unsupported' --backend '%s:mode=unsupported' "
                      "--vectors vectors/seeds", env("QMM_FAKE_PLUGIN"), env("QMM_FAKE_PLUGIN"));
    cr_expect_eq(rc, 3, "%s", out);
    expect_in(out, "every case was SKIPPED (backend ");
    expect_in(out, ":mode=unsupported answered UNSUPPORTED)");
    free(out);
}

Test(cli, plugin_returning_null_is_a_usage_error)
{
    char *out;
    int rc = qmmcheck(&out, "run --backend '%s:mode=null' --vectors vectors", env("QMM_FAKE_PLUGIN"));
    cr_expect_eq(rc, 2);
    expect_in(out, "returned no backend: INVALID_ARGUMENT: fake: asked to fail");
    free(out);
}

/* ---- cases built here: invalid input, wrong stored output ---- */

/* MatMulInteger with a K mismatch: a [2,3] x b [2,2]. */
static void write_kmismatch_case(const char *dir, const char *meta)
{
    write_case_model(dir, "MatMulInteger", "kmismatch", (const char *const[]){"A", "B"}, 2, "Y");
    char set[1024];
    snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    const uint8_t a[6] = {1, 2, 3, 4, 5, 6}, b[4] = {1, 2, 3, 4};
    write_tensor(set, "input_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){2, 3}, a, "A");
    write_tensor(set, "input_1.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){2, 2}, b, "B");
    if (meta) {
        char path[1024];
        snprintf(path, sizeof path, "%s/qmm.meta", dir);
        write_text(path, meta);
    }
}

Test(cli, invalid_input_rejected_passes_accepted_is_unchecked)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/inv/kmismatch", tmpdir);
    write_kmismatch_case(dir, "expect = INVALID_ARGUMENT\ntags = invalid, k-mismatch\n");
    qmmcheck_expect_in(0, "1:PASSED kmismatch __REPRO:",
                       "run --backend reference --vectors '%s/inv'", tmpdir);

    /* exit 0: UNCHECKED is a warning, not a failure */
    char *out = qmmcheck_expect(0, "run --backend '%s:mode=accept' --vectors '%s/inv'",
                                env("QMM_FAKE_PLUGIN"), tmpdir);
    expect_in(out, "1:UNCHECKED kmismatch (accepted invalid input; the reference says: ");
    expect_in(out, "unchecked:1");
    free(out);
}

Test(cli, wrong_meta_expectation_is_mistrusted)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/inv/kmismatch", tmpdir);
    write_kmismatch_case(dir, "expect = OK\n");
    /* no stored output and expect OK: nothing contradicts, the reference rejects: PASSED */
    char *out = qmmcheck_expect(0, "run --backend reference --vectors '%s/inv'", tmpdir);
    free(out);
    write_kmismatch_case(dir, "expect = UNSUPPORTED\n");
    qmmcheck_expect_in(0,
                       ":MISTRUSTED kmismatch (qmm.meta expects UNSUPPORTED but the reference "
                       "answers INVALID_ARGUMENT",
                       "run --backend reference --vectors '%s/inv'", tmpdir);
}

Test(cli, stored_output_contradicting_reference_is_mistrusted)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/m", tmpdir);
    copy_tree("vectors/seeds/orion-doc-qlinear-matmul", dir);
    const int8_t wrong[2] = {14, 12};
    char set[600];
    snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    write_tensor(set, "output_0.pb", QMM_DTYPE_INT8, 2, (int64_t[]){2, 1}, wrong, "y");
    qmmcheck_expect_in(0,
                       "1:MISTRUSTED m (stored output_0 differs from the reference at 1 of 2 "
                       "elements (first at index 1: stored 12, reference 13)) __REPRO:",
                       "run --backend reference --vectors '%s'", dir);

    /* the same vector against a wrong backend: FAILED, with the mistrust noted */
    qmmcheck_expect_in(1, "note: the vector is also mistrusted",
                       "run --backend '%s' --vectors '%s'", env("QMM_FAKE_PLUGIN"), dir);
}

Test(cli, repro_prints_inputs_and_every_mismatch)
{
    char *out = qmmcheck_expect(1, "repro --backend '%s' "
                                   "vectors/onnx/onnx-1.12.0/test_qlinearmatmul_2D",
                                env("QMM_FAKE_PLUGIN"));
    expect_in(out, "QLinearMatMul (opset 10)");
    expect_in(out, "a_zero_point: uint8 [1] = 113");
    cr_expect_eq(count_lines_with(out, "): expected "), 6, "%s", out);
    free(out);
    qmmcheck_expect_in(0, "1:PASSED ", "repro vectors/seeds/orion-doc-qlinear-matmul");
}

/* ---- plugin loading errors, skip accounting ---- */

Test(cli, plugin_load_errors_exit_2_with_a_clear_message)
{
    qmmcheck_expect_in(2, "plugin built for qmm ABI 1001, this qmmcheck speaks ABI 1",
                       "run --backend '%s:mode=badabi' --vectors vectors/seeds",
                       env("QMM_FAKE_PLUGIN"));
}

/* The entry point is missing for one of two usual reasons; the error names both and quotes
 * the loader's own message. */
static void expect_entry_point_help(const char *plugin)
{
    char *out = qmmcheck_expect(2, "run --backend '%s' --vectors vectors/seeds", plugin);
    expect_in(out, "no entry point qmm_backend_open() exported");
    expect_in(out, "the loader said: ");
    expect_in(out, "undefined symbol: qmm_backend_open");
    expect_in(out, "extern \"C\"");
    expect_in(out, "-fvisibility=hidden");
    free(out);
}

Test(cli, a_missing_entry_point_names_the_usual_causes_and_the_loaders_message)
{
    expect_entry_point_help(env("QMM_NO_ENTRY_PLUGIN"));
    expect_entry_point_help(env("QMM_HIDDEN_PLUGIN"));
    const char *cxx = getenv("QMM_CXX_PLUGIN"); /* set when a C++ compiler built it */
    if (cxx && cxx[0])
        expect_entry_point_help(cxx);
}

Test(cli, a_plugin_path_without_dot_slash_is_loaded_and_a_builtin_name_wins)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/sub' && cp '%s' '%s/libfake.so' && cp '%s' '%s/sub/libfake.so' && "
             "cp '%s' '%s/fakeplugin' && cp '%s' '%s/reference'", tmpdir,
             env("QMM_FAKE_PLUGIN"), tmpdir, env("QMM_FAKE_PLUGIN"), tmpdir,
             env("QMM_FAKE_PLUGIN"), tmpdir, env("QMM_FAKE_PLUGIN"), tmpdir);
    cr_assert(system(cmd) == 0, "%s", cmd);
    char wrapper[1024], *out; /* qmmcheck runs in the temporary directory */
    snprintf(wrapper, sizeof wrapper, "cd '%s' &&", tmpdir);
    /* dlopen would search the library path for "libfake.so": the file here is meant */
    const char *const specs[] = {"libfake.so", "sub/libfake.so", "fakeplugin"};
    for (size_t i = 0; i < 3; i++) {
        int rc = qmmcheck_under(&out, wrapper, "run --backend %s:mode=zeros --vectors '%s/%s'",
                                specs[i], env("QMM_SOURCE_DIR"), "vectors/seeds");
        cr_expect_eq(rc, 1, "--backend %s: exit %d:\n%s", specs[i], rc, out);
        expect_in(out, "SUMMARY: total:3 passed:0 failed:3");
        free(out);
    }
    /* a file named like a built-in does not shadow it */
    int rc = qmmcheck_under(&out, wrapper, "repro --backend reference '%s/%s'",
                            env("QMM_SOURCE_DIR"), "vectors/seeds/orion-doc-qlinear-matmul");
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    expect_in(out, "1:PASSED ");
    free(out);
}

/* A peer built beside qmmcheck (build/peers/NAME/libqmm_peer_NAME.so) is opened by its folder
 * name by every command, not only bench (before: run said "unknown backend 'gemmlowp'", exit 2). */
Test(cli, a_peer_is_opened_by_its_folder_name)
{
    const char *names[] = {"gemmlowp", "onednn", "xnnpack"};
    const char *name = NULL;
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", env("QMMCHECK")); /* BUILD/harness/qmmcheck */
    char *slash = strrchr(dir, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
    for (size_t i = 0; i < 3 && !name; i++) {
        snprintf(path, sizeof path, "%s/../peers/%s/libqmm_peer_%s.so", dir, names[i], names[i]);
        if (access(path, R_OK) == 0)
            name = names[i];
    }
    if (!name)
        cr_skip_test("no peer was built (QMM_PEERS)");
    char *out;
    int rc = qmmcheck(&out, "run --backend %s --vectors vectors/seeds", name);
    cr_expect(rc == 0 || rc == 1, "run --backend %s: exit %d:\n%s", name, rc, out);
    expect_in(out, "SUMMARY: total:3 ");
    free(out);
    rc = qmmcheck(&out, "diff --backend reference --backend %s --seed 1 --count 20", name);
    cr_expect(rc == 0 || rc == 1 || rc == 3, "diff --backend %s: exit %d:\n%s", name, rc, out);
    expect_in(out, "DIFF SUMMARY: problems:20 ");
    free(out);
    /* bench with one backend opens it in process (qh_backend_open): the name works there too */
    rc = qmmcheck(&out, "bench --backend %s --shape 4x8x8 --reps 2", name);
    cr_expect(strstr(out, "unknown backend") == NULL, "bench --backend %s: exit %d:\n%s", name,
              rc, out);
    free(out);
}

Test(cli, mostly_skipped_runs_warn_and_max_skipped_fails)
{
    qmmcheck_expect_in(0, "WARNING: 3 of 3 cases were SKIPPED",
                       "run --backend '%s:mode=unsupported' --vectors vectors/seeds "
                       "--allow-empty", env("QMM_FAKE_PLUGIN"));
    qmmcheck_expect_in(1, "FAILED: 3 cases skipped, more than --max-skipped 2",
                       "run --backend '%s:mode=unsupported' --vectors vectors/seeds "
                       "--max-skipped 2", env("QMM_FAKE_PLUGIN"));
    free(qmmcheck_expect(0, "run --backend '%s:mode=unsupported' --vectors vectors/seeds "
                            "--max-skipped 3 --allow-empty", env("QMM_FAKE_PLUGIN")));
}

Test(cli, determinism_of_a_deterministic_backend_passes)
{
    char *out;
    /* the reference takes no threads= option: the variants are left out with a note, and the
     * repeated run must agree with the first */
    out = qmmcheck_expect(0, "run --backend reference --vectors vectors/seeds --determinism");
    expect_in(out, "variant reference:threads=2 left out");
    expect_in(out, "passed:3");
    free(out);
}

Test(cli, isolated_runs_give_the_same_verdicts)
{
    qmmcheck_expect_in(0, "passed:20 failed:0 mistrusted:4",
                       "run --isolate --backend reference --vectors vectors" CLASSIC);
    qmmcheck_expect_in(1, "failed:3", "run --no-isolate --backend '%s' --vectors vectors/seeds",
                       env("QMM_FAKE_PLUGIN"));
}

/* ---- bench: the line per shape, the JSON report, the peak ---- */

/* every pct_peak of a JSON report, each at most 100 */
static int pct_peaks_at_most_100(const char *j)
{
    int n = 0;
    for (const char *p = j; (p = strstr(p, "\"pct_peak\": ")) != NULL; p++, n++) {
        double pct = strtod(p + strlen("\"pct_peak\": "), NULL);
        cr_expect(pct >= 0 && pct <= 100, "pct_peak %g:\n%s", pct, j);
    }
    return n;
}

Test(cli, bench_prints_shapes_and_writes_the_json_report)
{
    char *out;
    int rc = qmmcheck(&out,
                      "bench --backend optimized:isa=scalar --shape 7x33x9 --shape 1x5x3 "
                      "--types u8s8u8 --threads 1 --reps 3 --const-b --report json:%s/b.json",
                      tmpdir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "bench optimized:isa=scalar,threads=1 7x33x9 u8s8u8 threads=1 "
                          "const-b=yes reps=3 median=") != NULL,
              "%s", out);
    expect_in(out, " 1x5x3 u8s8u8 ");
    char path[512];
    snprintf(path, sizeof path, "%s/b.json", tmpdir);
    char *j = slurp(path);
    cr_expect(strstr(j, "\"results\": [") != NULL, "%s", j);
    cr_expect(strstr(j, "{\"shape\": \"7x33x9\", \"m\": 7, \"k\": 33, \"n\": 9, \"types\": "
                        "\"u8s8u8\", \"threads\": 1, \"const_b\": true, \"reps\": 3, "
                        "\"median_s\": ") != NULL,
              "%s", j);
    cr_expect(strstr(j, "{\"shape\": \"1x5x3\"") != NULL, "%s", j);
    cr_expect_eq(pct_peaks_at_most_100(j), 2, "%s", j); /* one per shape */
    /* the peak: how it was measured and checked, in the output and the report */
    if (!strstr(out, "peak threads=1 none: ")) {
        expect_in(out, "peak method: the best of ");
        expect_in(out, "taken before the first shape and between blocks of timed calls");
        expect_in(out, "peak check: ");
        cr_expect(strstr(j, "\"method\": \"best of short samples") != NULL, "%s", j);
        cr_expect(strstr(j, "\"ops_per_cycle_per_core\": ") != NULL, "%s", j);
        cr_expect(strstr(j, "\"check\": \"") != NULL, "%s", j);
    }
    free(out);
    free(j);

    const char *bad[] = {
        "bench --backend optimized --types u8s8u8",                  /* no shape */
        "bench --backend optimized --shape 7x33 --types u8s8u8",     /* two dims */
        "bench --backend optimized --shape 7x33x9 --types u8u8",     /* two types */
        "bench --backend optimized --shape 7x-3x9 --types u8s8u8",   /* negative */
    };
    expect_usage_errors(bad, sizeof bad / sizeof bad[0]);
}

/* The peak names its loop, how it was measured and its per-cycle check, for every loop this
 * CPU runs; without asserting any figure (the machine may be busy). */
Test(cli, bench_peak_names_its_loop_method_and_check)
{
    char *out;
    int rc = qmmcheck(&out, "bench --peak --threads 1");
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    if (strstr(out, "peak threads=1 none: ")) { /* no x86 loop here */
        free(out);
        return;
    }
    expect_in(out, "peak threads=1 ");
    expect_in(out, " GOPS (int8, 2 ops per multiply-accumulate) loop: ");
    expect_in(out, "peak method: the best of ");
    expect_in(out, " samples of 1.0 ms on 1 thread(s)");
    expect_in(out, "the clock from a chain of dependent adds");
    cr_expect_geq(count_lines_starting(out, "peak isa="), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, " (the peak): "), 1, "%s", out);
    /* each loop's line: its per-cycle rate and the published one, or why it is unchecked */
    cr_expect_eq(count_lines_with(out, "int8 ops per cycle per core at ") +
                     count_lines_with(out, "no clock estimate"),
                 count_lines_starting(out, "peak isa="), "%s", out);
    cr_expect_eq(count_lines_with(out, "; published for ") +
                     count_lines_with(out, "; no published rate on record"),
                 count_lines_starting(out, "peak isa="), "%s", out);
    free(out);
}

/* A timed call may not read above 100% of the peak: a backend that beats the loop (this one
 * copies an answer it kept: right for bench's one problem, without the work) raises the peak
 * to its rate, and the output says so. Before the peak was a bound, this read millions of
 * percent. (A backend that writes nothing, as the fake's mode=accept, no longer gets this far:
 * bench checks its answers, tests/bench_multi.sh.) */
Test(cli, bench_never_reads_above_100_percent_of_peak)
{
    char *out;
    int rc = qmmcheck(&out,
                      "bench --backend '%s:cache=1,wrong=0' --shape 512x512x512 --shape 1x1x1 "
                      "--threads 1 --reps 5 --report json:%s/f.json",
                      env("QMM_FLAKY_PLUGIN"), tmpdir);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    char path[512];
    snprintf(path, sizeof path, "%s/f.json", tmpdir);
    char *j = slurp(path);
    cr_expect_eq(pct_peaks_at_most_100(j), 2, "%s", j);
    /* "bench ... N GOPS P% of peak": each line's P */
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "\nbench ")) != NULL; p++, lines++) {
        const char *g = strstr(p, " GOPS ");
        cr_assert(g, "%s", out);
        double pct = strtod(g + strlen(" GOPS "), NULL);
        cr_expect(pct >= 0 && pct <= 100, "%g%% of peak:\n%s", pct, out);
    }
    cr_expect_eq(lines, 2, "%s", out);
    if (!strstr(out, "peak threads=1 none: ")) {
        expect_in(out, "peak raised to ");
        expect_in(out, " the fastest call of 512x512x512 ran at ");
        cr_expect(strstr(j, "\"raised\": true") != NULL, "%s", j);
    }
    free(j);
    free(out);
}

Test(cli, repro_prints_a_float8e8m0_scale_as_its_value)
{
    /* code 130 is 2^3; the brief printed the integer reading of a type it did not know: 0 */
    char *out = qmmcheck_expect(0, "repro --backend reference "
                                   "'%s/vectors/edge/dequantizelinear/dq-blocked/"
                                   "scales-e8m0-per-tensor'",
                                env("QMM_SOURCE_DIR"));
    cr_expect(strstr(out, "x_scale: float8e8m0 [] = 8\n"), "%s", out);
    free(out);
}

/* diff's arguments that ran nothing under a wrong reason, ran what was not asked, or wrapped:
 * --max-diffs 0 ran no problem and blamed --count; --only "" (or ",") ran every problem; an
 * --only list past 127 characters was cut and its last forms dropped; --start near 2^64 with
 * --count wrapped to problem 0. */
Test(cli, diff_refuses_arguments_that_would_run_nothing_or_wrap)
{
    static const char *base = "diff -q --backend reference --backend reference --seed 1";
    qmmcheck_expect_in(2, "--max-diffs 0", "%s --count 5 --max-diffs 0", base);
    qmmcheck_expect_in(2, "--only", "%s --count 5 --only ''", base);
    qmmcheck_expect_in(2, "--only", "%s --count 5 --only ,", base);
    char longlist[300] = "";
    for (int i = 0; i < 11; i++)
        strcat(longlist, "per-tensor,");
    strcat(longlist, "u8s8u8,float8"); /* the cut after 127 characters dropped float8 */
    qmmcheck_expect_in(2, "127 characters", "%s --count 5 --only %s", base, longlist);
    qmmcheck_expect_in(2, "2^64 - 1", "%s --count 3 --start 18446744073709551614", base);
    char *out = qmmcheck_expect(0, "%s --count 2 --start 18446744073709551614", base);
    expect_in(out, "problems:2");
    free(out);
    out = qmmcheck_expect(0, "%s --seconds 0.5 --start 18446744073709551615", base);
    expect_in(out, "problems:1 ");
    free(out);
}

/* A second --report: fingerprint and bench wrote the last one and dropped the first without a
 * word. */
Test(cli, fingerprint_and_bench_take_one_report)
{
    char a[600], b[600], *out;
    snprintf(a, sizeof a, "%s/first.json", tmpdir);
    snprintf(b, sizeof b, "%s/second.json", tmpdir);
    out = qmmcheck_expect(2, "fingerprint --backend reference --report 'json:%s' --report 'json:%s'",
                          a, b);
    expect_in(out, "give --report once");
    free(out);
    out = qmmcheck_expect(2, "bench --backend reference --shape 2x3x4 --report 'json:%s' "
                             "--report 'json:%s'", a, b);
    expect_in(out, "give --report once");
    free(out);
    cr_assert(access(a, F_OK) != 0 && access(b, F_OK) != 0, "a refused command wrote a report");
}

/* "backend spec too long" named no limit. */
Test(cli, a_spec_too_long_names_the_limit)
{
    char spec[1200] = "exec:";
    memset(spec + 5, 'x', 1100);
    spec[1105] = '\0';
    char *out;
    qmmcheck(&out, "diff -q --backend reference --backend '%s' --seed 1 --count 1", spec);
    expect_in(out, "backend spec too long (1105 bytes; at most 1023)");
    free(out);
}

/* export --out "" (an unset variable in a script) wrote its 863 cases under /; diff and reduce
 * took it too. Each now refuses an empty --out. */
Test(cli, an_empty_out_is_a_usage_error)
{
    const char *cmds[] = {"export --suite ties --out ''",
                          "diff --backend reference --backend reference --seed 1 --count 1 "
                          "--out ''",
                          "reduce vectors/seeds/onnx-doc-matmulinteger --backend reference "
                          "--out ''"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        qmmcheck_expect_in(2, "--out: an empty path; give the directory to write into", "%s",
                           cmds[i]);
}

/* glibc takes back-references in extended expressions, whose matching is exponential:
 * --filter '(.*)(.*)(.*)(.*)\4\3\2\1x' ran for minutes over the case list. A back-reference is
 * refused; a backslash-escaped backslash before a digit, or \1 inside brackets, is not one. */
Test(cli, a_filter_with_a_back_reference_is_refused, .timeout = 60)
{
    qmmcheck_expect_in(2, "a back-reference (\\1 to \\9): not taken",
                       "list --vectors vectors --filter '(.*)(.*)(.*)(.*)\\4\\3\\2\\1x'");
    qmmcheck_expect_in(2, "a back-reference", "run --backend reference --vectors vectors "
                                              "--filter '(a)\\1'");
    char *out = qmmcheck_expect(0, "list --vectors vectors/seeds --filter '[\\1]|x\\\\1|seed'");
    free(out);
    /* nested bounded repetitions are expanded when compiled: 7.5 GB for this one */
    qmmcheck_expect_in(2, "its repetition counts ({m,n}) multiply to 1000000, past 4096",
                       "list --vectors vectors/seeds --filter '(.{0,1000}){0,1000}'");
    out = qmmcheck_expect(0, "list --vectors vectors/seeds --filter '[0-9]{4}-[a-z]{2,3}|[{]9}'");
    free(out);
}

/* An export over an earlier one with another seed left the earlier cases beside the new ones
 * ("40 cases" printed, 76 there), and run judged them all. It now names them and exits 1. */
Test(cli, an_export_over_another_seeds_says_what_it_did_not_write)
{
    char *out = qmmcheck_expect(0, "export --suite random --seed 1 --out '%s/e'", tmpdir);
    free(out);
    out = qmmcheck_expect(0, "export --suite random --seed 1 --out '%s/e'", tmpdir);
    free(out); /* the same cases again: nothing beside them */
    qmmcheck_expect_in(1, "entries beside the cases written were not written by this export",
                       "export --suite random --seed 2 --out '%s/e'", tmpdir);
}

/* --vectors D --vectors D doubled every case, and a tree inside another judged its cases twice
 * under two names, without a word. Said once on stderr now (not refused). */
Test(cli, trees_given_twice_or_nested_are_warned_about)
{
    qmmcheck_expect_in(0, "warning: 1 --vectors tree is the same as or inside an earlier one "
                          "(the first: vectors/edge/qlinearmatmul, in vectors/edge)",
                       "list --vectors vectors/edge --vectors vectors/edge/qlinearmatmul "
                       "--vectors vectors/seeds");
    qmmcheck_expect_in(0, "warning: 2 --vectors trees are the same",
                       "list --vectors vectors/seeds --vectors vectors/seeds --vectors "
                       "vectors/seeds/");
    char *out = qmmcheck_expect(0, "list --vectors vectors/seeds --vectors vectors/edge");
    cr_expect(strstr(out, "warning") == NULL, "%s", out);
    free(out);
}
