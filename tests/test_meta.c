/* tests/test_meta.c — the qmm.meta sidecar. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/io/cpuclass.h"
#include "harness/io/meta.h"

static int parse(const char *text, qh_meta *m, qh_error *err)
{
    /* exact-size heap copy without a terminator: the parser must honour `len` */
    size_t len = strlen(text);
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    int rc = qh_meta_parse(copy, len, "qmm.meta", m, err);
    free(copy);
    return rc;
}

static void expect_error(const char *text, const char *needle)
{
    qh_meta m;
    qh_error err = {{0}};
    cr_assert_eq(parse(text, &m, &err), -1, "accepted: %s", text);
    cr_assert(strstr(err.msg, "qmm.meta: line ") == err.msg, "%s", err.msg);
    cr_assert(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

/* The text `line` makes of `value` (its one %s) must be refused with `needle`. */
static void expect_value_error(const char *line, const char *value, const char *needle)
{
    char text[1024];
    snprintf(text, sizeof text, line, value);
    expect_error(text, needle);
}

static void assert_meta_eq(const qh_meta *a, const qh_meta *b)
{
    cr_assert_eq(a->expect, b->expect);
    cr_assert_eq(a->n_tags, b->n_tags);
    for (int i = 0; i < a->n_tags; i++)
        cr_assert_str_eq(a->tags[i], b->tags[i]);
    cr_assert_str_eq(a->profile, b->profile);
    cr_assert_str_eq(a->provenance, b->provenance);
    cr_assert_str_eq(a->description, b->description);
    cr_assert_str_eq(a->onnx_version, b->onnx_version);
    cr_assert_str_eq(a->seen_with, b->seen_with);
    cr_assert_str_eq(a->cpu_class, b->cpu_class);
}

static void check_round_trip(const qh_meta *m)
{
    char buf[8192];
    int n = qh_meta_format(m, buf, sizeof buf);
    cr_assert(n >= 0 && (size_t)n < sizeof buf);
    cr_assert_eq((size_t)n, strlen(buf));
    qh_meta back;
    qh_error err;
    cr_assert_eq(parse(buf, &back, &err), 0, "%s\n%s", err.msg, buf);
    assert_meta_eq(m, &back);
    char buf2[8192];
    cr_assert_eq(qh_meta_format(&back, buf2, sizeof buf2), n);
    cr_assert_str_eq(buf, buf2);
}

Test(meta, defaults)
{
    qh_meta m;
    qh_meta_init(&m);
    cr_assert_eq(m.expect, QMM_OK);
    cr_assert_eq(m.n_tags, 0);
    cr_assert_str_eq(m.profile, "spec");
    cr_assert_str_eq(m.provenance, "");
    char buf[16];
    cr_assert_eq(qh_meta_format(&m, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "");
    check_round_trip(&m);

    qh_error err;
    cr_assert_eq(parse("", &m, &err), 0);
    cr_assert_str_eq(m.profile, "spec");
}

Test(meta, full_file)
{
    const char *text = "\xEF\xBB\xBF# a case from the onnx test suite\n"
                       "\n"
                       "  expect =  INVALID_ARGUMENT  \r\n"
                       "tags = tie, odd-zp,, u8u8u8 ,\t\n"
                       "profile=ort-cpu\n"
                       "   # indented comment\n"
                       "provenance = onnx 1.22.0 backend test = copied\n"
                       "description = a = b, c\n"
                       "onnx_version = 1.22.0\n"
                       "future_key = whatever\n"
                       "another_future = x";
    qh_meta m;
    qh_error err;
    cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.expect, QMM_INVALID_ARGUMENT);
    cr_assert_eq(m.n_tags, 3);
    cr_assert_str_eq(m.tags[0], "tie");
    cr_assert_str_eq(m.tags[1], "odd-zp");
    cr_assert_str_eq(m.tags[2], "u8u8u8");
    cr_assert(qh_meta_has_tag(&m, "odd-zp"));
    cr_assert(!qh_meta_has_tag(&m, "odd"));
    cr_assert_str_eq(m.profile, "ort-cpu");
    cr_assert_str_eq(m.provenance, "onnx 1.22.0 backend test = copied");
    cr_assert_str_eq(m.description, "a = b, c");
    cr_assert_str_eq(m.onnx_version, "1.22.0");
    cr_assert_eq(m.n_unknown, 2);
    cr_assert_str_eq(m.first_unknown, "future_key");
    check_round_trip(&m);

    char buf[1024];
    qh_meta_format(&m, buf, sizeof buf);
    cr_assert_str_eq(buf, "expect = INVALID_ARGUMENT\n"
                          "tags = tie, odd-zp, u8u8u8\n"
                          "profile = ort-cpu\n"
                          "provenance = onnx 1.22.0 backend test = copied\n"
                          "description = a = b, c\n"
                          "onnx_version = 1.22.0\n");
}

/* seen_with: what a peer's divergence case was seen with (vectors/peers/, docs/formats.md). */
Test(meta, seen_with_round_trips)
{
    qh_meta m;
    qh_error err;
    cr_assert_eq(parse("seen_with = oneDNN 2.6.3 (libdnnl-dev); x86-64 avx2, no vnni\n"
                       "description = int16 pair saturation\n", &m, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.seen_with, "oneDNN 2.6.3 (libdnnl-dev); x86-64 avx2, no vnni");
    cr_assert_eq(m.n_unknown, 0, "a known key");
    check_round_trip(&m);
    char buf[1024];
    qh_meta_format(&m, buf, sizeof buf);
    cr_assert(strstr(buf, "seen_with = oneDNN 2.6.3 (libdnnl-dev); x86-64 avx2, no vnni\n"), "%s",
              buf);
    cr_assert_eq(parse("seen_with = a\nseen_with = b\n", &m, &err), -1, "given twice");
    cr_assert(strstr(err.msg, "line 2"), "%s", err.msg);
}

/* cpu_class: the CPU classes a peer's divergence case was measured on (docs/formats.md). */
Test(meta, cpu_class_holds_known_classes)
{
    qh_meta m;
    qh_error err;
    cr_assert_eq(parse("cpu_class =  avx2 ,avx512-vnni\n", &m, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.cpu_class, "avx2, avx512-vnni");
    check_round_trip(&m);
    char buf[1024];
    qh_meta_format(&m, buf, sizeof buf);
    cr_assert(strstr(buf, "cpu_class = avx2, avx512-vnni\n"), "%s", buf);
    cr_assert_eq(parse("cpu_class = amx, avx-vnni, baseline, x86-64-v2, x86-64-v3\n", &m, &err),
                 0, "%s", err.msg);
    qh_meta_init(&m);
    cr_assert_str_empty(m.cpu_class);
    expect_error("cpu_class = avx512vnni\n",
                 "line 1: cpu_class: 'avx512vnni' is not a CPU class (amx, avx512-vnni, avx-vnni, "
                 "avx2, baseline, x86-64-v2, x86-64-v3)");
    expect_error("cpu_class =\n", "cpu_class: empty value");
    expect_error("cpu_class = avx2, avx2\n", "cpu_class: 'avx2' given twice");
    expect_error("cpu_class = avx2,\n", "cpu_class: '' is not a CPU class");
    expect_error("cpu_class = avx2\ncpu_class = amx\n", "line 2: key 'cpu_class' given twice");
    expect_error("cpu_class = \x1b[2J\n", "cpu_class: '\\x1b[2J' is not a CPU class");
}

/* The class rule in C is peers/check.sh's cpu_class(), which names the expected-failure lists. */
Test(meta, cpu_class_of_flags_is_peers_check_sh_rule)
{
    static const char *const cases[][2] = {
        {"fpu sse2 avx avx2 fma", "avx2"},
        {"avx2 avx512f avx512_vnni avx512_bf16", "avx512-vnni"},
        {"avx2 avx_vnni", "avx-vnni"},
        {"avx2 avx512_vnni amx_tile amx_int8", "amx"},
        {"sse4_2 avx", "baseline"},
        {"avx2x avx512_vnnix", "baseline"}, /* whole words only */
        {"", "baseline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_str_eq(qh_cpu_class_of_flags(cases[i][0]), cases[i][1], "%s", cases[i][0]);
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "bash -c 'eval \"$(sed -n \"/^cpu_class() {/,/^}/p\" \"$0\")\"; "
                 "test \"$(cpu_class \"$1\")\" = \"$2\"' '%s/peers/check.sh' '%s' '%s'",
                 getenv("QMM_SOURCE_DIR") ? getenv("QMM_SOURCE_DIR") : ".", cases[i][0],
                 cases[i][1]);
        cr_expect_eq(system(cmd), 0, "peers/check.sh's cpu_class '%s' is not %s", cases[i][0],
                     cases[i][1]);
    }
    cr_expect_str_eq(qh_cpu_class_of_flags(NULL), "baseline");
    /* peers/check.sh refuses a QMM_CPU_CLASS that is no class (it names a list file) */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "out=$(QMM_CPU_CLASS=../../x bash '%s/peers/check.sh' /nonexistent 2>&1); rc=$?; "
             "test $rc = 2 && case \"$out\" in *\"not a CPU class\"*) exit 0;; esac; exit 1",
             getenv("QMM_SOURCE_DIR") ? getenv("QMM_SOURCE_DIR") : ".");
    cr_expect_eq(system(cmd), 0, "%s", cmd);
    /* $QMM_CPU_CLASS names the class instead of the CPU; an unknown name is refused */
    const char *cls = NULL;
    char why[256] = "";
    setenv(QH_CPU_CLASS_ENV, "amx", 1);
    cr_expect_eq(qh_cpu_class(&cls, why, sizeof why), 0);
    cr_expect_str_eq(cls, "amx");
    setenv(QH_CPU_CLASS_ENV, "avx512", 1);
    cr_expect_eq(qh_cpu_class(&cls, why, sizeof why), -1);
    cr_expect(strstr(why, "QMM_CPU_CLASS='avx512': not a CPU class (amx, avx512-vnni"), "%s", why);
    unsetenv(QH_CPU_CLASS_ENV);
    cr_expect_eq(qh_cpu_class(&cls, why, sizeof why), 0);
    cr_expect(qh_cpu_class_known(cls, strlen(cls)), "%s", cls);
}

Test(meta, every_expect_value)
{
    qmm_status_code codes[] = {QMM_OK, QMM_UNSUPPORTED, QMM_INVALID_ARGUMENT,
                               QMM_OUT_OF_MEMORY, QMM_INTERNAL};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "expect = %s\n", qmm_status_name(codes[i]));
        qh_meta m;
        qh_error err;
        cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
        cr_assert_eq(m.expect, codes[i]);
        check_round_trip(&m);
    }
    expect_error("expect = ok\n", "line 1: expect: 'ok' is not one of");
    expect_error("\n\nexpect = FAILED\n", "line 3: expect");
    expect_error("expect =\n", "line 1: expect");
}

Test(meta, bad_lines)
{
    expect_error("tags = a\njust words\n", "line 2: expected 'key = value'");
    expect_error("= value\n", "line 1: missing key");
    expect_error("Expect = OK\n", "line 1: key 'Expect': keys are lower-case");
    expect_error("on nx = 1\n", "keys are lower-case");
    expect_error("key2 = 1\n", "keys are lower-case");
    expect_error("profile = a\nprofile = b\n", "line 2: key 'profile' given twice");
    expect_error("profile =   \n", "line 1: profile: empty value");

    qh_meta m;
    qh_error err;
    cr_assert_eq(qh_meta_parse("tags = a\n\0x", 11, "qmm.meta", &m, &err), -1);
    cr_assert(strstr(err.msg, "line 2: line contains a NUL byte"), "%s", err.msg);
}

Test(meta, limits)
{
    char text[8192];
    /* 32 tags fit, 33 do not */
    strcpy(text, "\n# header\ntags = ");
    for (int i = 0; i < QH_META_MAX_TAGS; i++)
        sprintf(text + strlen(text), "t%d,", i);
    qh_meta m;
    qh_error err;
    cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.n_tags, QH_META_MAX_TAGS);
    check_round_trip(&m);
    strcat(text, "one_more");
    expect_error(text, "line 3: tags: more than 32 tags");

    /* a 63-byte tag fits, 64 does not */
    char tag[80];
    memset(tag, 'g', 63);
    tag[63] = '\0';
    snprintf(text, sizeof text, "tags = %s\n", tag);
    cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
    check_round_trip(&m);
    expect_value_error("tags = x, %sg\n", tag, "line 1: tags: tag");

    /* texts: 511 bytes fit, 512 do not */
    char big[QH_META_TEXT_MAX + 1];
    memset(big, 'd', QH_META_TEXT_MAX);
    big[QH_META_TEXT_MAX - 1] = '\0';
    snprintf(text, sizeof text, "description = %s\nprovenance = %s\n", big, big);
    cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
    check_round_trip(&m);
    big[QH_META_TEXT_MAX - 1] = 'd';
    big[QH_META_TEXT_MAX] = '\0';
    expect_value_error("# c\ndescription = %s\n", big,
                       "line 2: description: longer than 511 bytes");
    expect_value_error("provenance = %s\n", big, "line 1: provenance");
    memset(big, 'p', 64);
    big[64] = '\0';
    expect_value_error("profile = %s\n", big, "line 1: profile: longer than 63 bytes");
    expect_value_error("onnx_version = %s\n", big, "line 1: onnx_version");

    /* an over-long unknown key is counted, its name truncated */
    memset(big, 'k', 100);
    big[100] = '\0';
    snprintf(text, sizeof text, "%s = 1\n", big);
    cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.n_unknown, 1);
    cr_assert_eq(strlen(m.first_unknown), 63);
}

Test(meta, format_truncates_like_snprintf)
{
    qh_meta m;
    qh_meta_init(&m);
    m.expect = QMM_UNSUPPORTED;
    strcpy(m.profile, "x");
    char full[256];
    int n = qh_meta_format(&m, full, sizeof full);
    cr_assert_str_eq(full, "expect = UNSUPPORTED\nprofile = x\n");
    cr_assert_eq(n, (int)strlen(full));
    char small[10];
    cr_assert_eq(qh_meta_format(&m, small, sizeof small), n);
    cr_assert_str_eq(small, "expect = ");
    cr_assert_eq(qh_meta_format(&m, NULL, 0), n);
}

/* A fresh directory made from the template `dir`, and in `path` its qmm.meta. */
static void make_meta_dir(char *dir, char *path, size_t path_size)
{
    cr_assert(mkdtemp(dir));
    snprintf(path, path_size, "%s/qmm.meta", dir);
}

/* Writes `text` as the whole file at `path`. */
static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

Test(meta, files)
{
    char dir[] = "/tmp/qmm_meta_XXXXXX", path[256];
    make_meta_dir(dir, path, sizeof path);
    qh_meta m;
    qh_error err;

    /* missing file: defaults */
    m.expect = QMM_INTERNAL;
    cr_assert_eq(qh_meta_read_file(path, &m, &err), 0);
    cr_assert_eq(m.expect, QMM_OK);
    cr_assert_str_eq(m.profile, "spec");

    write_file(path, "expect = UNSUPPORTED\ntags = a,b\n");
    cr_assert_eq(qh_meta_read_file(path, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.expect, QMM_UNSUPPORTED);
    cr_assert_eq(m.n_tags, 2);

    write_file(path, "# x\nbogus\n");
    cr_assert_eq(qh_meta_read_file(path, &m, &err), -1);
    char want[300];
    snprintf(want, sizeof want, "%s: line 2: ", path);
    cr_assert(strstr(err.msg, want) == err.msg, "%s", err.msg);

    unlink(path);
    /* a directory is not a missing file */
    cr_assert_eq(qh_meta_read_file(dir, &m, &err), -1);
    cr_assert_eq(rmdir(dir), 0);
}

/* Text quoted from the file is one clean line: a carriage return or invalid UTF-8 in a key
 * or value cannot break the line the error is printed on. */
Test(meta, quoted_text_is_cleaned)
{
    expect_error("ke\ry = 1\n", "key 'ke\\ry'");
    expect_error("expect = OK\x1b[2J\xff\n", "expect: 'OK\\x1b[2J\xEF\xBF\xBD'");
    char text[200];
    snprintf(text, sizeof text, "tags = %s\r\x01%0100d\n", "t", 0);
    expect_error(text, "tags: tag 't\\r\\x01");
    qh_meta m;
    qh_error err;
    cr_assert_eq(parse("expect = \x80\x0b\n", &m, &err), -1);
    for (const char *p = err.msg; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "raw control byte in: %s", err.msg);
}

/* Reading the sidecar at `path` fails with "PATH: `what`". */
static void expect_read_error(const char *path, const char *what)
{
    qh_meta m;
    qh_error err;
    char want[300];
    cr_assert_eq(qh_meta_read_file(path, &m, &err), -1);
    snprintf(want, sizeof want, "%s: %s", path, what);
    cr_assert_str_eq(err.msg, want);
}

/* What is not a regular file is refused without blocking, naming the path and its kind; a
 * dangling symlink is not a missing sidecar. */
Test(meta, files_that_are_not_regular, .timeout = 10)
{
    char dir[] = "/tmp/qmm_meta_XXXXXX", path[256];
    make_meta_dir(dir, path, sizeof path);
    qh_meta m;
    qh_error err;

    cr_assert_eq(mkfifo(path, 0600), 0);
    expect_read_error(path, "not a regular file (a FIFO)");
    unlink(path);

    cr_assert_eq(mkdir(path, 0700), 0);
    expect_read_error(path, "not a regular file (a directory)");
    rmdir(path);

    cr_assert_eq(symlink("nowhere", path), 0);
    expect_read_error(path, "cannot open: No such file or directory");
    unlink(path);

    /* a symlink to a regular file is read like the file */
    char real[256];
    snprintf(real, sizeof real, "%s/real", dir);
    write_file(real, "expect = UNSUPPORTED\n");
    cr_assert_eq(symlink("real", path), 0);
    cr_assert_eq(qh_meta_read_file(path, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.expect, QMM_UNSUPPORTED);
    unlink(path);
    unlink(real);
    cr_assert_eq(rmdir(dir), 0);
}

/* Random line soup: the parser must never crash and every accepted input must round-trip. */
Test(meta, mini_fuzz)
{
    static const char *const pieces[] = {
        "expect", "tags", "profile", "provenance", "description", "onnx_version", "seen_with",
        "cpu_class", "avx2", "amx", "x", "=", " ", ",", "\n", "#", "OK", "INTERNAL", "\r", "\t", "a", "\xff", "==", ", ,"};
    uint64_t s = 12345;
    char text[512];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 0;
        int n = 1 + (int)(s % 24);
        for (int k = 0; k < n; k++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            const char *p = pieces[s % (sizeof pieces / sizeof pieces[0])];
            size_t pl = strlen(p);
            if (len + pl >= sizeof text)
                break;
            memcpy(text + len, p, pl);
            len += pl;
        }
        char *copy = malloc(len ? len : 1);
        memcpy(copy, text, len);
        qh_meta m;
        qh_error err;
        if (qh_meta_parse(copy, len, "qmm.meta", &m, &err) == 0)
            check_round_trip(&m);
        free(copy);
    }
}
