/* harness/report/report.c — JSON and JUnit XML reports, chosen by the kind a spec names. */
#include "harness/report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/report/strbuf.h"
#include "harness/cli/version.h"

typedef void report_writer(qh_sb *b, const char *command, const qh_result *r, size_t n,
                           const qh_run_summary *sum);
static void write_json(qh_sb *b, const char *command, const qh_result *r, size_t n,
                       const qh_run_summary *sum);
static void write_junit(qh_sb *b, const char *command, const qh_result *r, size_t n,
                        const qh_run_summary *sum);

/* The report kinds, by the KIND of `--report KIND:FILE` (docs/formats.md). */
static const struct report_kind {
    const char *name;
    report_writer *write;
} report_kinds[] = {
    {"json", write_json},
    {"junit", write_junit},
};
#define N_REPORT_KINDS (sizeof report_kinds / sizeof report_kinds[0])

/* The kind of a spec KIND:FILE with a known KIND and a FILE, or NULL. */
static const struct report_kind *spec_kind(const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (!colon || colon[1] == '\0')
        return NULL;
    size_t len = (size_t)(colon - spec);
    for (size_t i = 0; i < N_REPORT_KINDS; i++)
        if (strlen(report_kinds[i].name) == len && strncmp(spec, report_kinds[i].name, len) == 0)
            return &report_kinds[i];
    return NULL;
}

/* FILE of a spec whose kind is known good. */
static const char *spec_path(const char *spec)
{
    return strchr(spec, ':') + 1;
}

/* 0 when FILE does not exist or is a regular file; else -1 naming what it is. lstat: a
 * symlink is refused whatever it points to, so a planted link cannot redirect the report. */
static int check_target(const char *spec, qh_error *err)
{
    const char *path = spec_path(spec);
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err->msg, sizeof err->msg, "--report %s: %s", spec, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode))
        return 0;
    snprintf(err->msg, sizeof err->msg, "--report %s: %s exists and is %s, not a regular file",
             spec, path,
             S_ISLNK(st.st_mode)   ? "a symbolic link (refused whatever it points to)"
             : S_ISDIR(st.st_mode) ? "a directory"
                                   : "a device or special file");
    return -1;
}

void qh_report_kind_names(char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_REPORT_KINDS && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", report_kinds[i].name);
}

int qh_report_check_spec(const char *spec, qh_error *err)
{
    if (!spec_kind(spec)) {
        /* "expected json:FILE or junit:FILE", every known kind named */
        size_t o = (size_t)snprintf(err->msg, sizeof err->msg, "--report %s: expected", spec);
        for (size_t i = 0; i < N_REPORT_KINDS && o < sizeof err->msg; i++)
            o += (size_t)snprintf(err->msg + o, sizeof err->msg - o, "%s%s:FILE",
                                  i == 0 ? " " : i + 1 == N_REPORT_KINDS ? " or " : ", ",
                                  report_kinds[i].name);
        return -1;
    }
    return check_target(spec, err);
}

int qh_report_clear(const char *spec, qh_error *err)
{
    if (qh_report_check_spec(spec, err) != 0)
        return -1;
    if (unlink(spec_path(spec)) != 0 && errno != ENOENT) {
        snprintf(err->msg, sizeof err->msg, "--report %s: cannot remove the previous report: %s",
                 spec, strerror(errno));
        return -1;
    }
    return 0;
}

void qh_summary_format(const qh_run_summary *sum, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "total:%lld", (long long)sum->total);
    for (int s = 0; s < QH_STATUS_COUNT && o < size; s++)
        o += (size_t)snprintf(buf + o, size - o, " %s:%lld", qh_case_status_key((qh_case_status)s),
                              (long long)sum->counts[s]);
}

static void json_str(qh_sb *b, const char *key, const char *val, int comma)
{
    qh_sb_printf(b, "\"%s\": \"", key);
    qh_sb_json(b, val ? val : "");
    qh_sb_printf(b, "\"%s", comma ? ", " : "");
}

static void write_json(qh_sb *b, const char *command, const qh_result *r, size_t n,
                       const qh_run_summary *sum)
{
    qh_sb_puts(b, "{\n  \"tool\": \"qmmcheck\",\n  \"version\": \"" QH_VERSION "\",\n  ");
    json_str(b, "command", command, 0);
    qh_sb_printf(b, ",\n  \"seconds\": %.6f,\n  ", sum->seconds);
    if (sum->interrupted) {
        json_str(b, "interrupted", sum->interrupted, 0);
        qh_sb_puts(b, ",\n  ");
    }
    if (sum->shard) {
        json_str(b, "shard", sum->shard, 0);
        qh_sb_puts(b, ",\n  ");
    }
    qh_sb_printf(b, "\"summary\": {\"total\": %lld", (long long)sum->total);
    for (int s = 0; s < QH_STATUS_COUNT; s++)
        qh_sb_printf(b, ", \"%s\": %lld", qh_case_status_key((qh_case_status)s),
                     (long long)sum->counts[s]);
    qh_sb_puts(b, "},\n  \"cases\": [");
    for (size_t i = 0; i < n; i++) {
        qh_sb_printf(b, "%s\n    {\"number\": %lld, ", i ? "," : "", (long long)r[i].number);
        json_str(b, "name", r[i].name, 1);
        json_str(b, "path", r[i].path, 1);
        qh_sb_printf(b, "\"data_set\": %d, ", r[i].data_set);
        json_str(b, "backend", r[i].backend, 1);
        json_str(b, "status", qh_case_status_key(r[i].status), 0);
        qh_sb_printf(b, ", \"seconds\": %.6f", r[i].seconds);
        if (r[i].status != QH_PASSED) {
            qh_sb_puts(b, ", ");
            qh_sb_puts(b, "\"detail\": \"");
            qh_sb_json(b, r[i].summary ? r[i].summary : "");
            if (r[i].detail) {
                qh_sb_puts(b, "\\n");
                qh_sb_json(b, r[i].detail);
            }
            qh_sb_puts(b, "\"");
        }
        qh_sb_puts(b, "}");
    }
    qh_sb_puts(b, "\n  ]\n}\n");
}

/* One <property>, or nothing when the value is NULL. */
static void junit_property(qh_sb *b, const char *name, const char *value)
{
    if (!value)
        return;
    qh_sb_printf(b, "<property name=\"%s\" value=\"", name);
    qh_sb_xml(b, value);
    qh_sb_puts(b, "\"/>");
}

static void write_junit(qh_sb *b, const char *command, const qh_result *r, size_t n,
                        const qh_run_summary *sum)
{
    int64_t failures = sum->counts[QH_FAILED];
    int64_t errors = sum->counts[QH_CRASHED] + sum->counts[QH_TIMEOUT] + sum->counts[QH_ERROR];
    int64_t skipped = sum->counts[QH_SKIPPED] + sum->counts[QH_XFAIL];
    qh_sb_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    qh_sb_printf(b,
                 "<testsuites name=\"qmmcheck\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" "
                 "skipped=\"%lld\" time=\"%.6f\">\n",
                 (long long)sum->total, (long long)failures, (long long)errors,
                 (long long)skipped, sum->seconds);
    qh_sb_printf(b,
                 "  <testsuite name=\"qmmcheck\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" "
                 "skipped=\"%lld\" time=\"%.6f\">\n",
                 (long long)sum->total, (long long)failures, (long long)errors,
                 (long long)skipped, sum->seconds);
    if (sum->interrupted || sum->shard) {
        qh_sb_puts(b, "    <properties>");
        junit_property(b, "interrupted", sum->interrupted);
        junit_property(b, "shard", sum->shard);
        qh_sb_puts(b, "</properties>\n");
    }
    for (size_t i = 0; i < n; i++) {
        const char *st = qh_case_status_name(r[i].status);
        qh_sb_puts(b, "    <testcase classname=\"qmmcheck.");
        qh_sb_xml(b, r[i].backend);
        qh_sb_puts(b, "\" name=\"");
        qh_sb_xml(b, r[i].name);
        qh_sb_printf(b, "\" time=\"%.6f\">\n", r[i].seconds);
        const char *tag = NULL;
        switch (r[i].status) {
        case QH_FAILED: tag = "failure"; break;
        case QH_CRASHED: case QH_TIMEOUT: case QH_ERROR: tag = "error"; break;
        case QH_SKIPPED: case QH_XFAIL: tag = "skipped"; break;
        default: break;
        }
        if (tag) {
            qh_sb_printf(b, "      <%s type=\"%s\" message=\"", tag, st);
            qh_sb_xml(b, r[i].summary ? r[i].summary : st);
            qh_sb_puts(b, "\">");
            if (r[i].detail)
                qh_sb_xml(b, r[i].detail);
            qh_sb_printf(b, "</%s>\n", tag);
        } else if (r[i].status != QH_PASSED) {
            /* MISTRUSTED, UNCHECKED and XPASS pass, but carry a warning worth reading. */
            qh_sb_printf(b, "      <system-out>%s: ", st);
            qh_sb_xml(b, r[i].summary ? r[i].summary : "");
            qh_sb_puts(b, "</system-out>\n");
        }
        qh_sb_puts(b, "    </testcase>\n");
    }
    qh_sb_puts(b, "  </testsuite>\n</testsuites>\n");
}

/* A new file beside `path` with an unpredictable name: O_EXCL | O_NOFOLLOW, so neither a
 * planted file nor a planted symlink can take the write. The fd, or -1 with err. */
static int open_temp(const char *path, char *tmp, size_t size, qh_error *err)
{
    for (int tries = 0; tries < 100; tries++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = (uint64_t)time(NULL) * 6364136223846793005ull +
                (uint64_t)getpid() * 1442695040888963407ull + (uint64_t)tries;
        int k = snprintf(tmp, size, "%s.tmp-%016llx", path, (unsigned long long)r);
        if (k < 0 || (size_t)k >= size) {
            snprintf(err->msg, sizeof err->msg, "%s: path too long", path);
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            snprintf(err->msg, sizeof err->msg, "%s: cannot create %s: %s", path, tmp,
                     strerror(errno));
            return -1;
        }
    }
    snprintf(err->msg, sizeof err->msg, "%s: cannot create a temporary file beside it", path);
    return -1;
}

/* Writes all of buf to fd; 0 or errno. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

int qh_report_write(const char *spec, const char *command, const qh_result *results, size_t n,
                    const qh_run_summary *sum, qh_error *err)
{
    if (qh_report_check_spec(spec, err) != 0)
        return -1;
    const char *path = spec_path(spec);
    qh_sb b = {0};
    spec_kind(spec)->write(&b, command, results, n, sum);
    if (b.failed) {
        qh_sb_free(&b);
        snprintf(err->msg, sizeof err->msg, "%s: out of memory building the report", path);
        return -1;
    }
    char tmp[4096];
    int fd = open_temp(path, tmp, sizeof tmp, err);
    if (fd < 0) {
        qh_sb_free(&b);
        return -1;
    }
    int e = write_all(fd, b.s ? b.s : "", b.len);
    qh_sb_free(&b);
    if (close(fd) != 0 && e == 0)
        e = errno;
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e != 0) {
        unlink(tmp);
        snprintf(err->msg, sizeof err->msg, "%s: cannot write the report: %s", path, strerror(e));
        return -1;
    }
    return 0;
}
