/* tests/test_tree.c — hostile case trees and files, through the real qmmcheck binary.
 *
 * Each test copies a small committed vector into a temporary directory, breaks it one way
 * (a FIFO, a symlink loop, a tree too deep, a stray or misnamed file, a field out of range)
 * and checks that the run finishes, counts every case exactly once, and reports the problem
 * as an ERROR naming the file and the field. qmmcheck runs under `timeout` so that a
 * regression that hangs fails the test instead of the suite.
 *
 * The last tests check the source tree's own layering: optimized/ uses ops/, not reference/.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "tests/cli_support.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/io/onnx_io.h"

TestSuite(tree, .init = make_tmp, .fini = remove_tmp);

#define QLINEAR "vectors/onnx/onnx-1.12.0/test_qlinearmatmul_2D"
#define INTEGER "vectors/onnx/onnx-1.12.0/test_matmulinteger"

/* Exit status 124: `timeout` had to stop it. */
#define HUNG 124

/* Runs `qmmcheck run --backend reference --vectors DIR EXTRA` under a 10 s timeout. */
static int run_tree(char **out, const char *dir, const char *extra)
{
    int rc = qmmcheck_under(out, "timeout 10", "run --backend reference --vectors '%s' %s", dir,
                            extra);
    cr_assert_neq(rc, HUNG, "qmmcheck hung; output:\n%s", *out);
    return rc;
}

/* tmpdir/vec/<name>: a copy of a committed case. Returns tmpdir/vec. */
static const char *copy_case(const char *from, const char *name)
{
    static char vec[512];
    snprintf(vec, sizeof vec, "%s/vec", tmpdir);
    char to[1024];
    snprintf(to, sizeof to, "%s/%s", vec, name);
    copy_tree(from, to);
    return vec;
}

static char *path_in(const char *fmt, const char *rel)
{
    static char p[1024];
    snprintf(p, sizeof p, fmt, tmpdir, rel);
    return p;
}

/* The run reports exactly one ERROR case line for `name` whose text contains `needle`. */
static void expect_error(const char *out, const char *name, const char *needle)
{
    char line[600];
    snprintf(line, sizeof line, ":ERROR %s (", name);
    cr_expect_eq(count_lines_with(out, line), 1, "no ERROR line for %s:\n%s", name, out);
    cr_expect_eq(count_lines_with(out, needle), 1, "'%s' not reported:\n%s", needle, out);
}

/* A run whose only case is an ERROR for `name` reporting `needle`. */
static void expect_one_error(const char *vec, const char *name, const char *needle)
{
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    expect_error(out, name, needle);
    free(out);
}

/* A run whose only case, q, passes and is counted once. */
static void expect_q_passes_once(const char *vec)
{
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 0, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:1 passed:1 "), "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED q "), 1, "%s", out);
    free(out);
}

/* tmpdir/vec/<rel>, removed so that something else can take its name. */
static char *removed(const char *rel)
{
    char *p = path_in("%s/vec/%s", rel);
    cr_assert_eq(unlink(p), 0, "%s", p);
    return p;
}

/* Rewrites tmpdir/vec/<name>/model.onnx through `edit`. */
static void edit_model(const char *name, void (*edit)(qh_model *))
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vec/%s/model.onnx", tmpdir, name);
    qh_model m;
    qh_error err;
    cr_assert_eq(qh_read_model_file(path, &m, &err), 0, "%s", err.msg);
    edit(&m);
    cr_assert_eq(qh_write_model_file(path, &m, &err), 0, "%s", err.msg);
}

/* ---- files that are not regular files ----------------------------------------------- */

/* Case q with what `make` (mkfifo, mkdir) creates where its qmm.meta was: one error that
 * names the kind. */
static void expect_meta_not_regular(int (*make)(const char *, mode_t), mode_t mode,
                                    const char *kind)
{
    const char *vec = copy_case(QLINEAR, "q");
    cr_assert_eq(make(removed("q/qmm.meta"), mode), 0);
    char want[128];
    snprintf(want, sizeof want, "q/qmm.meta: not a regular file (%s)", kind);
    expect_one_error(vec, "q", want);
}

Test(tree, fifo_qmm_meta_is_an_error_not_a_hang)
{
    expect_meta_not_regular(mkfifo, 0600, "a FIFO");
}

Test(tree, fifo_xfail_is_an_error_not_a_hang)
{
    const char *vec = copy_case(QLINEAR, "q");
    const char *fifo = path_in("%s/%s", "xfail.fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    char extra[600], *out;
    snprintf(extra, sizeof extra, "--xfail '%s'", fifo);
    cr_expect_eq(run_tree(&out, vec, extra), 2, "%s", out);
    cr_expect(strstr(out, "xfail.fifo: not a regular file (a FIFO)"), "%s", out);
    free(out);
}

Test(tree, qmm_meta_directory_names_the_kind)
{
    expect_meta_not_regular(mkdir, 0700, "a directory");
}

Test(tree, input_file_that_is_a_directory)
{
    const char *vec = copy_case(QLINEAR, "q");
    cr_assert_eq(mkdir(removed("q/test_data_set_0/input_0.pb"), 0700), 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    expect_error(out, "q", "test_data_set_0/input_0.pb: not a regular file (a directory)");
    cr_expect_eq(count_lines_with(out, "has no input_0.pb"), 0, "%s", out);
    free(out);
}

/* ---- trees: each directory once, nothing lost --------------------------------------- */

Test(tree, two_symlinks_to_dot_count_each_case_once, .timeout = 30)
{
    const char *vec = copy_case(QLINEAR, "q");
    cr_assert_eq(symlink(".", path_in("%s/vec/%s", "a")), 0);
    cr_assert_eq(symlink(".", path_in("%s/vec/%s", "b")), 0);
    expect_q_passes_once(vec);
}

/* A link to a directory above the root (the tree's parent, "/") is not followed: one ERROR
 * row each, at once. A link to "/" searched the whole file system (20,766 entries and 10 s,
 * /proc's files among them as cases); a link to ".." searched the parent's other
 * directories. */
Test(tree, a_symlink_above_the_root_is_reported_not_searched, .timeout = 30)
{
    const char *vec = copy_case(QLINEAR, "q");
    cr_assert_eq(symlink("/", path_in("%s/vec/%s", "root")), 0);
    cr_assert_eq(symlink("..", path_in("%s/vec/%s", "up")), 0);
    cr_assert_eq(symlink(tmpdir, path_in("%s/vec/%s", "tmp")), 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:4 passed:1 "), "%s", out);
    expect_error(out, "root", "root: not searched: a symbolic link to a directory that holds the "
                              "tree (searching it would search all of that directory)");
    expect_error(out, "up", "up: not searched: a symbolic link to a directory that holds the tree");
    expect_error(out, "tmp", "tmp: not searched: a symbolic link to a directory that holds the tree");
    free(out);
    /* a root 140 directories deep: every directory above it counts (the nearest 128 did, and
       the link to / below it searched the whole file system) */
    char deep[2048];
    int n = snprintf(deep, sizeof deep, "%s/deep", tmpdir);
    for (int i = 0; i < 140; i++)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "/d");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -s / '%s/root'", deep, deep);
    cr_assert(system(cmd) == 0);
    cr_expect_eq(run_tree(&out, deep, ""), 1, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:1 "), "%s", out);
    expect_in(out, "/d/root: not searched: a symbolic link to a directory that holds the tree");
    free(out);
}

Test(tree, one_symlink_makes_no_duplicates)
{
    const char *vec = copy_case(QLINEAR, "q");
    /* "a" sorts before "q": the case keeps its real name, not the one through the link */
    cr_assert_eq(symlink("q", path_in("%s/vec/%s", "a")), 0);
    cr_assert_eq(symlink("..", path_in("%s/vec/q/%s", "up")), 0);
    expect_q_passes_once(vec);
}

Test(tree, case_deeper_than_the_limit_is_reported)
{
    const char *vec = copy_case(QLINEAR, "q");
    char rel[256] = "";
    for (int i = 0; i < 40; i++)
        strcat(rel, "d/");
    strcat(rel, "deep");
    copy_case(QLINEAR, rel);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "total:2 passed:1 "), "%s", out);
    cr_expect_eq(count_lines_with(out, ":ERROR d/d/d/"), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, "not searched: directories nest deeper than 32 levels"),
                 1, "%s", out);
    free(out);
}

Test(tree, dangling_model_onnx_is_reported)
{
    const char *vec = copy_case(QLINEAR, "q");
    copy_case(QLINEAR, "gone");
    cr_assert_eq(symlink("nowhere.onnx", removed("gone/model.onnx")), 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "total:2 passed:1 "), "%s", out);
    expect_error(out, "gone", "gone/model.onnx: cannot open: No such file or directory");
    free(out);
}

/* The tests run as root, whom chmod 000 does not stop; a path longer than PATH_MAX is a
 * directory nobody can read, so that is the unreadable subdirectory here. */
Test(tree, unreadable_subdirectory_is_reported_and_the_run_goes_on)
{
    const char *vec = copy_case(QLINEAR, "q");
    char name[201];
    memset(name, 'x', 200);
    name[200] = '\0';
    int fd = open(vec, O_RDONLY | O_DIRECTORY);
    cr_assert(fd >= 0);
    for (int i = 0; i < 24; i++) {
        cr_assert_eq(mkdirat(fd, name, 0700), 0);
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY);
        cr_assert(next >= 0);
        close(fd);
        fd = next;
    }
    close(fd);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "total:2 passed:1 "), "%s", out);
    /* the line is longer than count_lines_with looks */
    cr_expect(strstr(out, "\n2:ERROR xxxx"), "%s", out);
    cr_expect(strstr(out, "xxx: cannot read directory: File name too long)"), "%s", out);
    free(out);
}

/* Runs the tree as a user whom permissions stop: as root (whom they do not), under setpriv
 * as nobody (the tree opened to every user first: open_to_all). */
static void open_to_all(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "chmod -R a+rX '%s'", tmpdir);
    cr_assert(system(cmd) == 0);
}

static int run_tree_unprivileged(char **out, const char *dir)
{
    if (geteuid() != 0)
        return run_tree(out, dir, "");
    int rc = qmmcheck_under(out, "timeout 10 setpriv --reuid=65534 --regid=65534 --clear-groups",
                            "run --backend reference --vectors '%s'", dir);
    cr_assert_neq(rc, HUNG, "qmmcheck hung; output:\n%s", *out);
    return rc;
}

/* A case directory that cannot be searched (mode 0644) is one ERROR row naming it and why
 * (it was three, one per entry, each "cannot read directory" about a file); a data set that
 * cannot be searched says its input cannot be examined (it said "stray file after a gap:
 * input_0.pb is missing"). */
Test(tree, entries_that_cannot_be_examined_say_so)
{
    const char *vec = copy_case(QLINEAR, "q");
    char q[1024], set[1100];
    snprintf(q, sizeof q, "%s/q", vec);
    snprintf(set, sizeof set, "%s/test_data_set_0", q);
    char *out;
    open_to_all();
    cr_assert_eq(chmod(q, 0644), 0);
    cr_expect_eq(run_tree_unprivileged(&out, vec), 1, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:1 "), "%s", out);
    expect_error(out, "q", "q: cannot read directory: Permission denied");
    free(out);
    cr_assert_eq(chmod(q, 0755), 0);
    cr_assert_eq(chmod(set, 0644), 0);
    cr_expect_eq(run_tree_unprivileged(&out, vec), 1, "%s", out);
    expect_error(out, "q", "test_data_set_0/input_0.pb: cannot examine: Permission denied");
    free(out);
    cr_assert_eq(chmod(set, 0755), 0);
}

/* A directory above the root that may be searched but not read (0711, as home directories
 * often are): a link to it is still refused. The walk up opened each parent for reading,
 * stopped there, and the link was followed out of the tree. */
Test(tree, a_link_above_a_search_only_parent_is_refused)
{
    const char *vec = copy_case(QLINEAR, "q");
    cr_assert_eq(symlink(tmpdir, path_in("%s/vec/%s", "up")), 0);
    open_to_all();
    cr_assert_eq(chmod(tmpdir, 0711), 0);
    char *out;
    cr_expect_eq(run_tree_unprivileged(&out, vec), 1, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:2 passed:1 "), "%s", out);
    expect_error(out, "up", "up: not searched: a symbolic link to a directory that holds the tree");
    free(out);
    cr_assert_eq(chmod(tmpdir, 0700), 0);
}

/* ---- data set directories and numbered files ---------------------------------------- */

Test(tree, data_set_0_00_000_are_not_three_copies)
{
    const char *vec = copy_case(QLINEAR, "q");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s/q' && cp -r test_data_set_0 test_data_set_00 && "
             "cp -r test_data_set_0 test_data_set_000",
             vec);
    cr_assert(system(cmd) == 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "total:3 passed:1 "), "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED q "), 1, "%s", out);
    expect_error(out, "q/test_data_set_00", "q/test_data_set_00: not a data set name");
    expect_error(out, "q/test_data_set_000", "q/test_data_set_000: not a data set name");
    free(out);
}

/* A data set that is a symbolic link to another data set of its case: judged once (as the
 * real directory), the link a row that says so; before, q@0 and q@1 were the same data judged
 * twice (and counted twice). The real directory is kept whichever N is lower. */
Test(tree, a_data_set_linked_to_another_of_its_case_is_judged_once)
{
    const char *vec = copy_case(QLINEAR, "q");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s/q' && ln -s test_data_set_0 test_data_set_1 && "
             "mv test_data_set_0 test_data_set_5 && ln -s test_data_set_5 test_data_set_0",
             vec);
    cr_assert(system(cmd) == 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "total:3 passed:1 "), "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED q@5 "), 1, "%s", out);
    expect_error(out, "q/test_data_set_0",
                 "q/test_data_set_0: the same directory as test_data_set_5 of its case");
    expect_error(out, "q/test_data_set_1",
                 "q/test_data_set_1: the same directory as test_data_set_5 of its case");
    /* the error rows' repro lines carry no --data-set of their own */
    cr_expect_eq(count_lines_with(out, "--data-set 5 "), 1, "%s", out);
    free(out);
    /* repro --data-set 1 gives run's ERROR row (it judged the link's data and PASSED) */
    cr_expect_eq(qmmcheck(&out, "repro --backend reference --data-set 1 '%s/q'", vec), 1, "%s",
                 out);
    cr_expect(strstr(out, "the same directory as test_data_set_5 of its case"), "%s", out);
    free(out);
}

/* A case directory named q@1 was named like data set 1 of a case q beside it, so one --xfail
 * entry waived both (a new failure of the one hidden by the other's entry, exit 0 even under
 * --xfail-strict). Such a name is an ERROR in run and in repro. */
Test(tree, a_case_directory_named_like_a_data_set_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q@1");
    expect_one_error(vec, "q@1", "q@1: a case directory whose name ends in @N");
    char *out;
    cr_expect_eq(qmmcheck(&out, "repro --backend reference '%s/q@1'", vec), 1, "%s", out);
    cr_expect(strstr(out, ":ERROR ") && strstr(out, "whose name ends in @N"), "%s", out);
    free(out);
    /* spelt q@1/. it is the same directory (repro judged it and PASSED) */
    cr_expect_eq(qmmcheck(&out, "repro --backend reference '%s/q@1/.'", vec), 1, "%s", out);
    cr_expect(strstr(out, "whose name ends in @N"), "%s", out);
    free(out);
    /* an @ elsewhere in the name is a name like any other */
    copy_case(QLINEAR, "q@1x");
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect_eq(count_lines_with(out, ":PASSED q@1x "), 1, "%s", out);
    free(out);
}

/* A data set directory given to run as the tree is one ERROR row naming its case, as repro
 * says; run found nothing in it ("no case was found", exit 3, or 0 with --allow-empty). */
Test(tree, a_data_set_given_as_the_tree_names_its_case)
{
    const char *vec = copy_case(QLINEAR, "q");
    char set[1024];
    snprintf(set, sizeof set, "%s/q/test_data_set_0", vec);
    char *out;
    cr_expect_eq(run_tree(&out, set, "--allow-empty"), 1, "%s", out);
    expect_error(out, "test_data_set_0", "a data set directory, not a case: its case is the "
                                         "directory above (qmmcheck repro --data-set 0 ");
    free(out);
}

/* test_data_set_9999999 is not a data set to run (7 digits), nor to repro, which loaded it
 * and PASSED where run said ERROR. */
Test(tree, repro_takes_the_data_sets_run_finds)
{
    const char *vec = copy_case(QLINEAR, "q");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s/q' && cp -r test_data_set_0 test_data_set_9999999", vec);
    cr_assert(system(cmd) == 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    expect_error(out, "q/test_data_set_9999999", "q/test_data_set_9999999: not a data set name");
    free(out);
    qmmcheck_expect_in(2, "--data-set 9999999: expected 0..999999 (test_data_set_N's N, as run "
                          "finds them)", "repro --data-set 9999999 '%s/q'", vec);
    qmmcheck_expect_in(2, "--data-set 9999999: expected 0..999999 (test_data_set_N's N, as run "
                          "finds them)", "reduce --data-set 9999999 '%s/q' --backend reference",
                       vec);
}

/* The __REPRO: line of a badly named or misplaced data set's ERROR row shows that ERROR again.
 * Before, repro loaded the path as a case and said only "model.onnx: cannot open". A data set
 * directory given to repro names its case and the --data-set to give. */
Test(tree, a_data_set_rows_repro_line_shows_its_error_again)
{
    const char *vec = copy_case(QLINEAR, "q");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s/q' && cp -r test_data_set_0 test_data_set_01 && "
                              "touch test_data_set_7", vec);
    cr_assert(system(cmd) == 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    const char *why[] = {"not a data set name", "a data set that is not a directory"};
    const char *set[] = {"test_data_set_01", "test_data_set_7"};
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "q/%s", set[i]);
        expect_error(out, name, why[i]);
        char *again = qmmcheck_expect(1, "repro '%s/q/%s'", vec, set[i]);
        cr_expect_eq(count_lines_with(again, ":ERROR"), 1, "%s", again);
        cr_expect(strstr(again, why[i]) != NULL, "%s: %s", set[i], again);
        cr_expect(strstr(again, "cannot open") == NULL, "%s", again);
        free(again);
    }
    free(out);
    /* the case as it really is, whatever the spelling: a trailing '/', a '.', a link */
    char q[1100], *real;
    snprintf(q, sizeof q, "%s/q", vec);
    cr_assert((real = realpath(q, NULL)) != NULL);
    char want[2048];
    snprintf(want, sizeof want, "a data set directory, not a case: its case is the directory "
                                "above (qmmcheck repro --data-set 0 %s)", real);
    free(real);
    snprintf(cmd, sizeof cmd, "ln -s '%s/q/test_data_set_0' '%s/alias'", vec, vec);
    cr_assert(system(cmd) == 0);
    const char *spellings[] = {"q/test_data_set_0/", "q/test_data_set_0/.", "alias"};
    for (size_t i = 0; i < 3; i++) {
        char *data_set = qmmcheck_expect(1, "repro '%s/%s'", vec, spellings[i]);
        cr_expect(strstr(data_set, want) != NULL, "%s", data_set);
        free(data_set);
    }
}

Test(tree, stray_input_after_a_gap_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s/q/test_data_set_0' && cp input_0.pb input_9.pb", vec);
    cr_assert(system(cmd) == 0);
    expect_one_error(vec, "q", "test_data_set_0/input_9.pb: stray file after a gap: input_8.pb is "
                               "missing");
}

/* ---- an output sized by an attribute ------------------------------------------------- */

#define NBITS "tests/llm/onnxruntime/matmulnbits-m2-k51-n3-bits2-bs32-level0-zp_absent"

/* Under AddressSanitizer no address-space limit: its shadow memory takes terabytes of it. */
#ifdef QMM_TEST_ASAN
#define NO_RLIMIT_AS 1
#endif
#ifdef NO_RLIMIT_AS
#define AS_LIMIT ""
#else
#define AS_LIMIT " prlimit --as=3000000000"
#endif

static int64_t nbits_n;
static void set_nbits_n(qh_model *m)
{
    for (int32_t i = 0; i < m->n_attrs; i++)
        if (strcmp(m->attrs[i].name, "N") == 0)
            m->attrs[i].i = nbits_n;
}

/* MatMulNBits' y is [.., N], N an attribute. N = 2^29 beside a B of 3 rows, a call the
 * reference rejects, sized a y of 4 GiB per backend (12.7 GB for two; an OOM kill on a smaller
 * machine); N = -5 gave "ERROR (cannot allocate the output)". Both are now rejected as
 * expected, without the memory, like any other N that is not B's. */
Test(tree, an_attribute_that_sizes_the_output_cannot_make_it_huge)
{
    int64_t ns[] = {(int64_t)1 << 29, -5, 0};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        const char *vec = copy_case(NBITS, "nb");
        nbits_n = ns[i];
        edit_model("nb", set_nbits_n);
        char rm[1200]; /* no stored output: the reference's rejection is what is expected */
        snprintf(rm, sizeof rm, "rm '%s/nb/test_data_set_0/output_0.pb'", vec);
        cr_assert(system(rm) == 0);
        char *out;
        int rc = qmmcheck_under(&out, "timeout 20" AS_LIMIT,
                                "run --backend reference --backend optimized --vectors '%s' "
                                "--no-isolate", vec);
        cr_expect_eq(rc, 0, "N = %lld: exit %d\n%s", (long long)ns[i], rc, out);
        cr_expect_eq(count_lines_with(out, ":PASSED nb "), 2, "N = %lld\n%s", (long long)ns[i],
                     out);
        free(out);
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s/nb'", vec);
        cr_assert(system(cmd) == 0);
    }
}

/* ---- strict fields, messages that name the file and field --------------------------- */

static void opset_beyond_int(qh_model *m)
{
    m->opsets[0].version = ((int64_t)1 << 32) + 10; /* wrapped to int, 10 */
}

Test(tree, opset_beyond_int_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    edit_model("q", opset_beyond_int);
    expect_one_error(vec, "q", "q/model.onnx: OperatorSetIdProto.version: 4294967306 is outside "
                               "0..2147483647");
}

static void second_default_opset(qh_model *m)
{
    m->opsets[m->n_opsets] = m->opsets[0];
    strcpy(m->opsets[m->n_opsets].domain, "ai.onnx");
    m->opsets[m->n_opsets++].version = 21;
}

/* Opset 10 and ai.onnx 21 in one model: the node ran under the first (QLinearMatMul 10 and 21
 * differ), silently. */
Test(tree, a_domain_imported_twice_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    edit_model("q", second_default_opset);
    expect_one_error(vec, "q", "q/model.onnx: ModelProto.opset_import: domain ai.onnx imported "
                               "twice (versions 10 and 21)");
}

static void matmulinteger_at_opset_1(qh_model *m)
{
    m->opsets[0].version = 1;
}

/* MatMulInteger exists from ai.onnx 10 on, and its call stores no opset for the validator to
 * refuse: a model importing opset 1 was judged as if at 10. */
Test(tree, a_model_older_than_its_operator_is_an_error)
{
    const char *vec = copy_case(INTEGER, "m");
    edit_model("m", matmulinteger_at_opset_1);
    expect_one_error(vec, "m", "m/model.onnx: ModelProto.opset_import: MatMulInteger exists from "
                               "ai.onnx opset 10 on; the model imports 1");
}

static void no_default_opset(qh_model *m)
{
    m->n_opsets = 0;
}

static void only_a_microsoft_opset(qh_model *m)
{
    m->n_opsets = 1;
    strcpy(m->opsets[0].domain, "com.microsoft");
    m->opsets[0].version = 1;
}

/* A QLinearMatMul model that imports no ai.onnx opset is malformed: it was read as a call at
 * "opset -1", which the reference refuses as invalid input, so every backend's answer was
 * UNCHECKED (a wrong one too) and the run exited 0. */
Test(tree, a_model_that_imports_no_ai_onnx_opset_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    edit_model("q", no_default_opset);
    expect_one_error(vec, "q", "q/model.onnx: ModelProto.opset_import: QLinearMatMul: the model "
                               "imports no ai.onnx opset");
    edit_model("q", only_a_microsoft_opset);
    expect_one_error(vec, "q", "q/model.onnx: ModelProto.opset_import: QLinearMatMul: the model "
                               "imports no ai.onnx opset");
}

static void reads_its_first_input_twice(qh_model *m)
{
    strcpy(m->inputs[1], m->inputs[0]);
    m->n_graph_inputs = 0; /* the graph declares nothing: the node alone names the values */
    m->n_graph_outputs = 0;
}

static void writes_its_first_input(qh_model *m)
{
    strcpy(m->outputs[0], m->inputs[0]);
    m->n_graph_inputs = 0;
    m->n_graph_outputs = 0;
}

/* A name is one value. MatMulInteger(A, A) with two different input files was judged as A x B
 * (a stored A x A, right by ONNX, MISTRUSTED), and a node whose output is one of its inputs
 * loaded. */
Test(tree, a_value_named_twice_is_one_tensor)
{
    const char *vec = copy_case(INTEGER, "m");
    edit_model("m", reads_its_first_input_twice);
    expect_one_error(vec, "m", "node inputs 0 and 1 are both 'A', one value, but input_0.pb and "
                               "input_1.pb hold different tensors");
    /* the same tensor in both files: a case like any other (its stored output is A x B) */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp '%s/m/test_data_set_0/input_0.pb' '%s/m/test_data_set_0/input_1.pb'",
             vec, vec);
    cr_assert(system(cmd) == 0);
    char *out;
    run_tree(&out, vec, "");
    cr_expect_eq(count_lines_with(out, ":ERROR "), 0, "%s", out);
    free(out);
    copy_case(INTEGER, "w");
    edit_model("w", writes_its_first_input);
    snprintf(cmd, sizeof cmd, "rm -r '%s/m'", vec);
    cr_assert(system(cmd) == 0);
    expect_one_error(vec, "w", "w/model.onnx: NodeProto.output: 'A' is also the node's input 0");
}

Test(tree, unknown_profile_in_qmm_meta_names_file_and_field)
{
    const char *vec = copy_case(QLINEAR, "q");
    write_text(path_in("%s/vec/q/%s", "qmm.meta"), "profile = nonesuch\n");
    expect_one_error(vec, "q", "q/qmm.meta: profile: unknown profile 'nonesuch' (known: spec, ");
}

static void add_attribute(qh_model *m)
{
    qh_attr *a = &m->attrs[m->n_attrs++];
    memset(a, 0, sizeof *a);
    strcpy(a->name, "alpha");
    a->type = QH_ATTR_INT;
    a->i = 1;
}

/* A name that would start a line of its own, and a type no attribute of these has. */
static void add_mistyped_attribute(qh_model *m)
{
    qh_attr *a = &m->attrs[m->n_attrs++];
    memset(a, 0, sizeof *a);
    strcpy(a->name, "order_A\n1:PASSED forged");
    a->type = QH_ATTR_STRING;
    strcpy(a->s, "x");
}

Test(tree, attributes_on_qlinearmatmul_and_matmulinteger)
{
    const char *vec = copy_case(QLINEAR, "q");
    copy_case(INTEGER, "i");
    copy_case(QLINEAR, "q2");
    edit_model("q", add_attribute);
    edit_model("i", add_attribute);
    edit_model("q2", add_mistyped_attribute);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    cr_expect(strstr(out, "total:3 passed:0 "), "%s", out);
    expect_error(out, "q", "q/model.onnx: NodeProto.attribute: unknown attribute 'alpha' "
                           "(QLinearMatMul takes no attributes)");
    expect_error(out, "i", "i/model.onnx: NodeProto.attribute: unknown attribute 'alpha' "
                           "(MatMulInteger takes no attributes)");
    expect_error(out, "q2", "q2/model.onnx: NodeProto.attribute: unknown attribute "
                            "'order_A\\n1:PASSED forged'");
    cr_expect_null(strstr(out, "\n1:PASSED"), "a forged line:\n%s", out);
    free(out);
}

static void unknown_op(qh_model *m)
{
    strcpy(m->op_type, "Foo\nBar");
}

Test(tree, unknown_operator_names_the_field)
{
    const char *vec = copy_case(QLINEAR, "q");
    edit_model("q", unknown_op);
    expect_one_error(vec, "q", "q/model.onnx: NodeProto.op_type: unknown operator 'Foo\\nBar' "
                               "(expected QLinearMatMul, MatMulInteger, com.microsoft "
                               "QOrderedMatMul, com.microsoft MatMulNBits, DequantizeLinear, "
                               "com.microsoft DynamicQuantizeMatMul or com.microsoft "
                               "MatMulIntegerToFloat)");
}

static void drop_last_input(qh_model *m)
{
    m->n_inputs--;
}

Test(tree, missing_node_input_names_the_field)
{
    const char *vec = copy_case(QLINEAR, "q");
    removed("q/test_data_set_0/input_7.pb");
    edit_model("q", drop_last_input);
    expect_one_error(vec, "q", "q/model.onnx: NodeProto.input: QLinearMatMul: 7 inputs, expected 8");
}

/* A case 600 characters deep: its load error was cut at 511 bytes, all path, the file, the
 * field and the problem lost; now the path's start gives way ("...") and they stay. */
Test(tree, a_long_case_directory_keeps_the_file_and_field_in_its_error)
{
    char rel[700] = "";
    for (int i = 0; i < 10; i++)
        snprintf(rel + strlen(rel), sizeof rel - strlen(rel), "%sd%d%055d", i ? "/" : "", i, 0);
    const char *vec = copy_case(QLINEAR, rel);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s/%s/test_data_set_0' && truncate -s -1 input_0.pb", vec, rel);
    cr_assert(system(cmd) == 0);
    char *out;
    cr_expect_eq(run_tree(&out, vec, ""), 1, "%s", out);
    expect_in(out, "00000/test_data_set_0/input_0.pb: TensorProto");
    expect_in(out, " (...");
    free(out);
}


/* run on vec under QH_CASE_MEMORY=budget: exit 1, case q an ERROR holding `needle`. */
static void expect_budget_error(const char *vec, const char *budget, const char *needle)
{
    char wrapper[64];
    snprintf(wrapper, sizeof wrapper, "timeout 10 env QH_CASE_MEMORY=%s", budget);
    char *out;
    int rc = qmmcheck_under(&out, wrapper, "run --backend reference --vectors '%s'", vec);
    cr_expect_eq(rc, 1, "%s", out);
    expect_error(out, "q", needle);
    free(out);
}

/* The case's tensors are read within a memory budget (QH_CASE_MEMORY, else half the
 * machine's memory): past it, an ERROR naming the file and the sizes before the memory is
 * taken. Before, a sparse file of 136 KB holding 1 GiB of raw_data took 2.25 GB, and cases of
 * several such files ended the whole run in the OOM killer. */
Test(tree, a_case_past_the_memory_budget_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    expect_budget_error(vec, "20", "q/test_data_set_0/input_0.pb: TensorProto.dims: 8 bytes of "
                        "data, which with the file's 19 pass the 20 left of the case's memory "
                        "budget (QH_CASE_MEMORY bytes where set, else half this machine's "
                        "memory, at least 1 GiB)");
    expect_budget_error(vec, "10", "q/test_data_set_0/input_0.pb: 19 bytes, more than the 10 "
                        "left of the case's memory budget");
    /* a value that is not a size is said, not taken for the default */
    expect_budget_error(vec, "abc", "QH_CASE_MEMORY=abc: not a memory size above 0 (bytes, or "
                        "with K, M, G, T: 512M)");
    expect_q_passes_once(vec); /* within the default */
}

/* ---- the node's output and the graph's declarations ---------------------------------- */

static void second_output(qh_model *m)
{
    strcpy(m->outputs[m->n_outputs++], "z");
}

static void no_output(qh_model *m)
{
    m->n_outputs = 0;
}

static void unnamed_output(qh_model *m)
{
    m->outputs[0][0] = '\0';
}

/* Each was PASSED: nothing compared the node's outputs with the operator's one. */
Test(tree, a_node_without_exactly_one_named_output_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    edit_model("q", second_output);
    expect_one_error(vec, "q", "q/model.onnx: the node has 2 outputs (QLinearMatMul has one)");
    edit_model("q", no_output);
    expect_one_error(vec, "q", "q/model.onnx: the node has 0 outputs (QLinearMatMul has one)");
    copy_case(QLINEAR, "r");
    edit_model("r", unnamed_output);
    char *out;
    cr_expect_eq(run_tree(&out, path_in("%s/vec/%s", "r"), ""), 1, "%s", out);
    expect_in(out, "r/model.onnx: the node has 1 output, unnamed (QLinearMatMul has one)");
    free(out);
}

/* An output_1.pb beside output_0.pb was judged by no one (the case PASSED). */
Test(tree, a_second_output_file_is_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s/q/test_data_set_0' && cp output_0.pb output_1.pb", vec);
    cr_assert(system(cmd) == 0);
    expect_one_error(vec, "q", "q/test_data_set_0: 2 output files for the node's one output");
}

static void declare_a_float(qh_model *m)
{
    cr_assert_gt(m->n_graph_inputs, 0);
    cr_assert_str_eq(m->graph_inputs[0].name, m->inputs[0]);
    m->graph_inputs[0].elem_type = QMM_DTYPE_FLOAT;
}

static void declare_y_longer(qh_model *m)
{
    cr_assert_gt(m->n_graph_outputs, 0);
    m->graph_outputs[0].rank = 2;
    m->graph_outputs[0].dims[0] = -1; /* a symbolic dimension: any */
    m->graph_outputs[0].dims[1] = 99;
}

static void declare_another_output(qh_model *m)
{
    cr_assert_gt(m->n_graph_outputs, 0);
    strcpy(m->graph_outputs[0].name, "Z");
}

/* A model that declares its inputs and output otherwise than its files hold is not the case
 * its files are (ONNX Runtime refuses it): each was PASSED. */
Test(tree, files_that_are_not_what_the_graph_declares_are_an_error)
{
    const char *vec = copy_case(QLINEAR, "q");
    edit_model("q", declare_a_float);
    expect_one_error(vec, "q", "q/model.onnx: graph input a is declared FLOAT, "
                               "test_data_set_0/input_0.pb holds UINT8");
    copy_case(QLINEAR, "r");
    edit_model("r", declare_y_longer);
    char *out;
    cr_expect_eq(run_tree(&out, path_in("%s/vec/%s", "r"), ""), 1, "%s", out);
    expect_in(out, "r/model.onnx: graph output y is declared [?,99], test_data_set_0/output_0.pb "
                   "holds [2,3]");
    free(out);
    /* a graph whose declared output is not the node's (it PASSED: only a declaration of the
       node's own name was looked at) */
    copy_case(QLINEAR, "s");
    edit_model("s", declare_another_output);
    cr_expect_eq(run_tree(&out, path_in("%s/vec/%s", "s"), ""), 1, "%s", out);
    expect_in(out, "s/model.onnx: the graph's outputs do not include the node's output y (its "
                   "first: Z)");
    free(out);
}

/* ---- the source tree's layering (docs/architecture.md §1) ---------------------------------- */

/* Set by the walk below: one line per #include of a reference/ header or gmp.h under
 * optimized/, and per CMake line there naming qmm_reference or GMP. */
static char layering_offenders[4096];

/* An #include line whose header name holds `what` ("reference/", "gmp.h"). */
static int includes(const char *line, const char *what)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line++ != '#')
        return 0;
    while (*line == ' ' || *line == '\t')
        line++;
    if (strncmp(line, "include", 7) != 0)
        return 0;
    const char *end = strchr(line, '\n');
    const char *hit = strstr(line, what);
    return hit && (!end || hit < end);
}

static int is_cmake_file(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    return strcmp(base, "CMakeLists.txt") == 0 || (n > 6 && strcmp(base + n - 6, ".cmake") == 0);
}

/* A CMake line naming the reference library, or GMP in any case. */
static int names_reference_or_gmp(const char *line)
{
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    for (size_t i = 0; i + 3 <= n; i++)
        if (strncasecmp(line + i, "gmp", 3) == 0 ||
            (i + 13 <= n && strncmp(line + i, "qmm_reference", 13) == 0))
            return 1;
    return 0;
}

static int note_forbidden_dependencies(const char *path, const struct stat *sb, int type,
                                       struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    char *text = slurp(path);
    int cmake = is_cmake_file(path), line_no = 1;
    for (const char *line = text; *line; line_no++) {
        if (includes(line, "reference/") || includes(line, "gmp.h") ||
            (cmake && names_reference_or_gmp(line))) {
            size_t used = strlen(layering_offenders);
            snprintf(layering_offenders + used, sizeof layering_offenders - used, "%s:%d\n",
                     path, line_no);
        }
        const char *next = strchr(line, '\n');
        if (!next)
            break;
        line = next + 1;
    }
    free(text);
    return 0;
}

/* optimized/ (CPU and CUDA) depends on the shared rules of ops/, never on the reference or on
 * GMP: no file includes a reference/ header or gmp.h, and no CMake file there names
 * qmm_reference or GMP. */
Test(tree, optimized_uses_ops_not_the_reference)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/optimized", env("QMM_SOURCE_DIR"));
    layering_offenders[0] = '\0';
    cr_assert_eq(nftw(dir, note_forbidden_dependencies, 16, FTW_PHYS), 0, "cannot walk %s", dir);
    cr_expect_str_empty(layering_offenders, "reference/ or GMP named under optimized/:\n%s",
                        layering_offenders);
}

/* The built optimized library needs nothing from GMP or from the reference: none of its
 * undefined symbols is a GMP one or one that libqmm_reference defines (it gets the rules from
 * qmm_ops). A static archive records no dependencies, so the symbols are what tell. Needs
 * binutils' nm; skipped without it. */
Test(tree, optimized_library_needs_no_gmp_and_no_reference)
{
    if (system("command -v nm > /dev/null 2>&1") != 0)
        cr_skip_test("nm is not installed");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "nm -u '%s' | awk '{print $NF}' | sort -u > '%s/undefined' && "
             "nm -g --defined-only '%s' | awk 'NF == 3 {print $3}' | sort -u > '%s/reference' && "
             "test -s '%s/undefined' && test -s '%s/reference' && "
             "{ grep -i gmp '%s/undefined'; comm -12 '%s/undefined' '%s/reference'; } "
             "> '%s/needed'; cat '%s/needed'",
             env("QMM_OPTIMIZED_LIB"), tmpdir, env("QMM_REFERENCE_LIB"), tmpdir, tmpdir, tmpdir,
             tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
    int rc = system(cmd);
    char path[512];
    snprintf(path, sizeof path, "%s/needed", tmpdir);
    char *out = slurp(path);
    cr_assert_eq(rc, 0, "nm found no symbols or failed: %s", cmd);
    cr_expect_str_empty(out, "libqmm_optimized needs these from GMP or the reference:\n%s", out);
    free(out);
}
