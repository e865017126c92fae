/* tests/cli_support.h — running the qmmcheck binary from Criterion tests.
 *
 * Header-only on purpose: each test executable is one .c file, and these helpers are shared
 * by the ones that drive the CLI. The ctest environment sets QMMCHECK (the binary) and
 * QMM_SOURCE_DIR (the repository root, where commands run). */
#ifndef QMM_TESTS_CLI_SUPPORT_H
#define QMM_TESTS_CLI_SUPPORT_H

/* QMM_TEST_ASAN: built with AddressSanitizer, whose shadow memory takes terabytes of address
 * space (no RLIMIT_AS, no --memory-limit) */
#if defined(__SANITIZE_ADDRESS__)
#define QMM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QMM_TEST_ASAN 1
#endif
#endif

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static inline const char *env(const char *name)
{
    const char *v = getenv(name);
    cr_assert(v != NULL, "%s is not set (run through ctest)", name);
    return v;
}

/* Suite .init/.fini: a fresh temporary directory per test. */
static inline void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/qmm-test-XXXXXX");
    cr_assert(mkdtemp(tmpdir) != NULL);
}

static inline void remove_tmp(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert(system(cmd) == 0);
}

/* The whole file, NUL-terminated (malloc'd). */
static inline char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    cr_assert(fread(s, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    return s;
}

/* Copies the tree FROM (relative to the source directory) into TO, made if missing. */
static inline void copy_tree(const char *from, const char *to)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp -r '%s/%s'/. '%s'", to,
             env("QMM_SOURCE_DIR"), from, to);
    cr_assert(system(cmd) == 0, "%s", cmd);
}

/* Runs `WRAPPER qmmcheck ARGS` from the source directory (WRAPPER: a command prefix such as
 * `timeout 10`, or ""); returns its exit code, and its combined output in *out (malloc'd). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int qmmcheck_under(char **out, const char *wrapper, const char *fmt, ...)
{
    char args[4096], cmd[8192], outfile[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(outfile, sizeof outfile, "%s/out.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s > '%s' 2>&1", env("QMM_SOURCE_DIR"),
             wrapper, env("QMMCHECK"), args, outfile);
    int rc = system(cmd);
    cr_assert(rc != -1 && WIFEXITED(rc), "could not run: %s", cmd);
    *out = slurp(outfile);
    return WEXITSTATUS(rc);
}

/* Starts `qmmcheck ARGS` (a shell's words) from the source directory without waiting for
 * it: its stdout is *out, for the caller to read while it runs (and fclose). Returns its pid,
 * the qmmcheck process itself (the shell execs it), for kill(2) and waitpid(2). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline pid_t qmmcheck_start(FILE **out, const char *fmt, ...)
{
    char args[8192], cmd[8400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "exec '%s' %s", env("QMMCHECK"), args);
    int fds[2];
    cr_assert(pipe(fds) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (chdir(env("QMM_SOURCE_DIR")) != 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    *out = fdopen(fds[0], "r");
    cr_assert(*out);
    return pid;
}

/* Waits up to `seconds` for pid; -1 (and kills it) when it is still running. */
static inline int wait_within(pid_t pid, double seconds)
{
    int status;
    for (int i = 0; i < (int)(seconds * 10); i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Sends SIGTERM to `pid` (from qmmcheck_start, its output `f`, closed here) and expects what
 * qmmcheck does when interrupted: it ends within 60 s, exit status 128 + SIGTERM, and a line
 * of the rest of its output says "interrupted by SIGTERM". Returns that line (the last such,
 * malloc'd); the whole rest of the output in *rest when rest is not NULL (malloc'd). */
static inline char *expect_interrupted(pid_t pid, FILE *f, char **rest)
{
    kill(pid, SIGTERM);
    int status = wait_within(pid, 60);
    char line[8192], *said = NULL, *all = NULL;
    size_t len = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "interrupted by SIGTERM")) {
            free(said);
            said = strdup(line);
        }
        size_t n = strlen(line);
        all = realloc(all, len + n + 1);
        cr_assert(all);
        memcpy(all + len, line, n + 1);
        len += n;
    }
    fclose(f);
    cr_assert_neq(status, -1, "still running 60 s after SIGTERM");
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM, "status %#x", status);
    cr_assert(said, "no line says \"interrupted by SIGTERM\":\n%s", all ? all : "");
    if (rest)
        *rest = all ? all : strdup("");
    else
        free(all);
    return said;
}

/* Runs `qmmcheck ARGS` from the source directory; returns its exit code, and its combined
 * output in *out (malloc'd). */
#define qmmcheck(out, ...) qmmcheck_under((out), "", __VA_ARGS__)

/* qmmcheck_expect with its arguments in a va_list. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static inline char *qmmcheck_expect_v(int want, const char *fmt, va_list ap)
{
    char args[4096];
    vsnprintf(args, sizeof args, fmt, ap);
    char *out;
    int rc = qmmcheck(&out, "%s", args);
    cr_expect_eq(rc, want, "'qmmcheck %s' exited %d, want %d:\n%s", args, rc, want, out);
    return out;
}

/* Runs `qmmcheck ARGS` like qmmcheck() and expects the exit code `want`; returns the
 * combined output (malloc'd) for the caller's further checks. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline char *qmmcheck_expect(int want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = qmmcheck_expect_v(want, fmt, ap);
    va_end(ap);
    return out;
}

/* The JUnit report at `path` is valid against tests/schema/junit-10.xsd (the rules of Jenkins
 * xUnit's junit-10.xsd): every test that writes a JUnit report checks it with this, so every
 * report the suite writes is validated (docs/formats.md, "JUnit"). */
static inline void expect_junit_valid(const char *path)
{
    char cmd[2048], said[4096] = "";
    snprintf(cmd, sizeof cmd, "xmllint --noout --schema '%s/tests/schema/junit-10.xsd' '%s' 2>&1",
             env("QMM_SOURCE_DIR"), path);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "cannot run %s", cmd);
    size_t n = fread(said, 1, sizeof said - 1, p);
    said[n] = '\0';
    int rc = pclose(p);
    cr_assert(!(WIFEXITED(rc) && WEXITSTATUS(rc) == 127),
              "no xmllint (scripts/deps.sh installs libxml2-utils): %s", said);
    cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s is not valid junit-10:\n%s", path, said);
}

/* A JSON report of `run` valid against docs/report.schema.json (tests/schema/check_report.sh,
 * python3-jsonschema). */
static inline void expect_json_valid(const char *path)
{
    char cmd[2048], said[4096] = "";
    snprintf(cmd, sizeof cmd, "'%s/tests/schema/check_report.sh' '%s' 2>&1", env("QMM_SOURCE_DIR"),
             path);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "cannot run %s", cmd);
    size_t n = fread(said, 1, sizeof said - 1, p);
    said[n] = '\0';
    int rc = pclose(p);
    cr_assert(!(WIFEXITED(rc) && WEXITSTATUS(rc) == 127), "%s", said);
    cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s is not a valid JSON report:\n%s", path,
              said);
}

/* `text` stands somewhere in the output `out`. */
static inline void expect_in(const char *out, const char *text)
{
    cr_expect(strstr(out, text) != NULL, "'%s' not in:\n%s", text, out);
}

/* Runs `qmmcheck ARGS` like qmmcheck_expect and expects `text` somewhere in its output. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void qmmcheck_expect_in(int want, const char *text, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = qmmcheck_expect_v(want, fmt, ap);
    va_end(ap);
    expect_in(out, text);
    free(out);
}

/* Each of the n argument strings in `args` is a usage error: qmmcheck exits 2. */
static inline void expect_usage_errors(const char *const *args, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *out;
        int rc = qmmcheck(&out, "%s", args[i]);
        cr_expect_eq(rc, 2, "'qmmcheck %s' exited %d, want 2; output:\n%s", args[i], rc, out);
        free(out);
    }
}

/* How many lines of `text` contain `needle`. */
static inline int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1),
                 line);
        if (strstr(buf, needle))
            n++;
        line = nl ? nl + 1 : NULL;
    }
    return n;
}

/* How many lines of `text` start with `prefix`. */
static inline int count_lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *line = text; line && *line;) {
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return n;
}

/* The whole file at `path` is `text` (a file a command must leave alone). */
static inline void expect_file_is(const char *path, const char *text)
{
    char *got = slurp(path);
    cr_expect_str_eq(got, text, "%s", path);
    free(got);
}

/* Writes `text` as the whole file at `path`. */
static inline void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* A directory diff and reduce did not write, which they must leave alone as --out: DIR/notes.txt
 * holding "my notes\n" (its path in notes), or DIR a copy of COMMITTED_CASE (a committed case,
 * tagged, but not by diff or reduce). */
#define NOTES_TEXT "my notes\n"
#define COMMITTED_CASE "vectors/edge/matmulinteger/extremes/s8u8-k4"

static inline void write_notes(const char *dir, char *notes, size_t size)
{
    snprintf(notes, size, "%s/notes.txt", dir);
    write_text(notes, NOTES_TEXT);
}

/* DIR, refused as --out, is as write_notes left it: NOTES still holds NOTES_TEXT, and DIR/FILE
 * (a file of a saved case) was not written. */
static inline void expect_notes_left_alone(const char *notes, const char *dir, const char *file)
{
    expect_file_is(notes, NOTES_TEXT);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cr_expect(access(path, F_OK) != 0, "%s was written", path);
}

/* DIR still holds COMMITTED_CASE whole: it runs, and passes. */
static inline void expect_committed_case_untouched(const char *dir)
{
    char *out = qmmcheck_expect(0, "run --backend reference --vectors '%s'", dir);
    expect_in(out, "passed:1");
    free(out);
}

#endif /* QMM_TESTS_CLI_SUPPORT_H */
