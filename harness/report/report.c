/* harness/report/report.c — JSON and JUnit XML reports, chosen by the kind a spec names. */
#define _DEFAULT_SOURCE /* realpath */
#include "harness/report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/base/fileio.h"
#include "harness/report/matrix.h"
#include "harness/base/strbuf.h"
#include "harness/base/version.h"
#include "harness/report/html.h"
#include "reference/qmm_reference.h"

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
    {"html", qh_report_html},
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

/* The folder a report FILE goes into (malloc'd; "." for a bare name, "/" for /x; NULL out of
 * memory). */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
}

/* 0 when FILE does not exist or is a regular file; else -1 naming what it is. lstat: a
 * symlink is refused whatever it points to, so a planted link cannot redirect the report. */
static int check_target(const char *spec, qh_error *err)
{
    const char *path = spec_path(spec);
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) {
            snprintf(err->msg, sizeof err->msg, "--report %s: %s", spec, strerror(errno));
            return -1;
        }
        /* the folder it goes into must be there now, not found missing after the run */
        char *dir = folder_of(path);
        int missing = dir && stat(dir, &st) != 0;
        int bad = missing || (dir && !S_ISDIR(st.st_mode));
        if (bad)
            snprintf(err->msg, sizeof err->msg, "--report %s: its folder %s: %s", spec, dir,
                     missing ? strerror(errno) : "is not a directory");
        free(dir);
        return bad ? -1 : 0;
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

/* The folder of `path` and its last name, for comparing two paths (a report is renamed into
 * its folder, so two hard links to one file are two reports); 0, or -1 when the folder cannot
 * be stat'ed (compared as written then). */
static int place_of(const char *path, struct stat *dir, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    char *d = folder_of(path);
    int rc = d ? stat(d, dir) : -1;
    free(d);
    return rc;
}

int qh_report_check_distinct(const char *const *specs, int n, qh_error *err)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            const char *a = spec_path(specs[j]), *b = spec_path(specs[i]), *ba, *bb;
            struct stat da, db;
            int same = strcmp(a, b) == 0;
            if (!same && place_of(a, &da, &ba) == 0 && place_of(b, &db, &bb) == 0)
                same = da.st_dev == db.st_dev && da.st_ino == db.st_ino && strcmp(ba, bb) == 0;
            if (same) {
                snprintf(err->msg, sizeof err->msg,
                         "--report %s and --report %s: the same file (one report would replace "
                         "the other)", specs[j], specs[i]);
                return -1;
            }
        }
    return 0;
}

/* Whether `dir` (a real path) is a case directory or a data set directory of one. */
static int in_a_case(const char *dir)
{
    struct stat st;
    char *model = qh_path_join(dir, "model.onnx");
    int yes = model && lstat(model, &st) == 0;
    free(model);
    const char *base = strrchr(dir, '/');
    return yes || (base && strncmp(base + 1, "test_data_set_", 14) == 0);
}

/* Whether `path` lies at or below the directory whose real path is `root`. */
static int below(const char *path, const char *root)
{
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0' ||
                                           (n == 1 && root[0] == '/'));
}

int qh_report_check_not_input(const char *spec, const char *const *files, int n_files,
                              const char *const *trees, int n_trees, qh_error *err)
{
    const char *path = spec_path(spec);
    struct stat rs, fs;
    int exists = stat(path, &rs) == 0;
    for (int i = 0; exists && i < n_files; i++)
        if (files[i] && stat(files[i], &fs) == 0 && fs.st_dev == rs.st_dev &&
            fs.st_ino == rs.st_ino) {
            snprintf(err->msg, sizeof err->msg, "--report %s: that is %s, an input of this run "
                     "(the report would replace it)", spec, files[i]);
            return -1;
        }
    /* the report's folder, as a real path, against each tree's */
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char *dir = folder_of(path);
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    size_t blen = strlen(base);
    int case_file = strcmp(base, "model.onnx") == 0 ||
                    (blen > 3 && strcmp(base + blen - 3, ".pb") == 0);
    int bad = -1;
    for (int i = 0; real && i < n_trees && bad < 0; i++) {
        char *root = realpath(trees[i], NULL);
        if (root && below(real, root) && (case_file || in_a_case(real)))
            bad = i;
        free(root);
    }
    free(real);
    if (bad >= 0) {
        snprintf(err->msg, sizeof err->msg, "--report %s: a file of a case under --vectors %s "
                 "(the report would replace it, or be read as part of the case)", spec,
                 trees[bad]);
        return -1;
    }
    return 0;
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

char *qh_report_suite(const char *name)
{
    const char *slash = name ? strrchr(name, '/') : NULL;
    return slash ? strndup(name, (size_t)(slash - name)) : strdup(".");
}

void qh_report_models(qh_sb *b, const qh_mismatch *m, const char *quote)
{
    for (int p = 0, k = 0; m->models_known && p < qmm_profile_count() && p < 64; p++)
        if (m->models >> p & 1)
            qh_sb_printf(b, "%s%s%s%s", k++ ? ", " : "", quote, qmm_profile_name((qmm_profile)p),
                         quote);
}

/* "key": [n, n, ...] */
static void json_ints(qh_sb *b, const char *key, const int64_t *v, int32_t n)
{
    qh_sb_printf(b, ", \"%s\": [", key);
    for (int32_t i = 0; i < n; i++)
        qh_sb_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
    qh_sb_puts(b, "]");
}

/* One kept mismatch as data (docs/report.schema.json, "mismatch"). */
static void json_mismatch(qh_sb *b, const qh_mismatch *m)
{
    qh_sb_printf(b, "{\"index\": %lld", (long long)m->index);
    json_ints(b, "coord", m->coord, m->rank);
    qh_sb_printf(b, ", \"expected\": %lld, \"got\": %lld", (long long)m->expected,
                 (long long)m->got);
    if (m->explained) {
        qh_sb_printf(b, ", \"acc\": %lld", (long long)m->acc);
        if (m->scaled[0]) {
            qh_sb_puts(b, ", ");
            json_str(b, "exact", m->scaled, 0);
        }
        if (m->overflow)
            qh_sb_printf(b, ", \"overflow\": true, \"wrapped\": %lld", (long long)m->wrapped);
    }
    if (m->bound == m->bound) /* not NaN: a bound rule's numbers */
        qh_sb_printf(b, ", \"bound\": %.17g, \"fraction\": %.17g", m->bound, m->fraction);
    if (m->models_known) {
        qh_sb_puts(b, ", \"models\": [");
        qh_report_models(b, m, "\"");
        qh_sb_puts(b, "]");
        if (m->models_kept)
            qh_sb_puts(b, ", \"models_scope\": \"kept mismatches\"");
        for (int p = 0, k = 0; m->models_kept && p < qmm_profile_count() && p < 64; p++)
            if (m->models_unjudged >> p & 1)
                qh_sb_printf(b, "%s\"%s\"", k++ ? ", " : ", \"models_not_compared\": [",
                             qmm_profile_name((qmm_profile)p));
        if (m->models_kept && m->models_unjudged)
            qh_sb_puts(b, "]");
    }
    qh_sb_puts(b, "}");
}

/* A case's facts beyond its status: reason, suite, tags, description, y's shape, counts and
 * mismatches (docs/formats.md, "JSON"). */
static void json_case_facts(qh_sb *b, const qh_result *r)
{
    char *suite = qh_report_suite(r->name);
    if (!suite) {
        b->failed = 1;
        return;
    }
    qh_sb_puts(b, ", ");
    json_str(b, "reason", qh_reason_name(r->reason), 1);
    json_str(b, "suite", suite, 0);
    free(suite);
    qh_sb_puts(b, ", \"tags\": [");
    for (int32_t t = 0; t < r->n_tags; t++) {
        qh_sb_puts(b, t ? ", " : "");
        qh_sb_json_quoted(b, r->tags[t]);
    }
    qh_sb_puts(b, "]");
    if (r->description) {
        qh_sb_puts(b, ", ");
        json_str(b, "description", r->description, 0);
    }
    if (r->y_known)
        json_ints(b, "y_shape", r->y_dims, r->y_rank);
    if (r->total > 0 || r->errors > 0)
        qh_sb_printf(b, ", \"errors\": %lld, \"total\": %lld", (long long)r->errors,
                     (long long)r->total);
    if (r->n_mismatches > 0) {
        qh_sb_puts(b, ", \"mismatches\": [");
        for (int32_t k = 0; k < r->n_mismatches; k++) {
            qh_sb_puts(b, k ? ", " : "");
            json_mismatch(b, &r->mismatches[k]);
        }
        qh_sb_puts(b, "]");
    }
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
        qh_sb_printf(b, ", \"seconds\": %.6f, ", r[i].seconds);
        json_str(b, "cpu", r[i].cpu ? r[i].cpu : "native", 0); /* the class it was judged under */
        if (r[i].repro) { /* exact where name and path are cleaned */
            qh_sb_puts(b, ", ");
            json_str(b, "repro", r[i].repro, 0);
        }
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
        json_case_facts(b, &r[i]);
        qh_sb_puts(b, "}");
    }
    qh_sb_puts(b, "\n  ]");
    /* --cpu: the rows as a matrix, one column per class (harness/report/matrix.h) */
    qh_matrix m;
    if (qh_matrix_build(r, n, &m) != 0) {
        b->failed = 1;
        return;
    }
    if (m.n_classes) {
        qh_sb_puts(b, ",\n  ");
        qh_matrix_json(&m, b);
    }
    qh_matrix_free(&m);
    qh_sb_puts(b, "\n}\n");
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

/* A row's `__REPRO:` command as the last line of its failure, error or system-out text (on a
 * line of its own after other text); nothing for a row without one. */
static void junit_repro(qh_sb *b, const qh_result *r, int after_text)
{
    if (!r->repro)
        return;
    qh_sb_puts(b, after_text ? "\n__REPRO: " : "__REPRO: ");
    qh_sb_xml(b, r->repro);
}

/* ---- JUnit (docs/formats.md, "JUnit"; valid against Jenkins xUnit's junit-10.xsd, whose rules
 * tests/schema/junit-10.xsd encodes) ---------------------------------------------------- */

/* Appends `s` (n bytes) cleaned, each byte outside [A-Za-z0-9_+@-] written '_' and '/'
 * written `slash`, so that a JUnit class has dots only where they split its parts. */
static void class_part(qh_sb *b, const char *s, size_t n, char slash)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("_+@-", c);
        qh_sb_printf(b, "%c", plain ? c : c == '/' ? slash : '_');
    }
}

/* The JUnit class of a row: "qmmcheck.BACKEND.SUITE" with the suite's '/' as dots
 * (qmmcheck.libacme_so.onnx.onnx-1_22_0): Jenkins splits a class at its last dot into
 * package and class, GitLab shows it whole. BACKEND is the table's name when known, else the
 * spec with every word that is a path cut to its last component (/abs/libx.so:threads=2 ->
 * libx_so_threads_2), never a dot in it; --cpu appends "@CLASS". */
static char *junit_class(const qh_result *r)
{
    const char *s = r->backend_name && r->backend_name[0] ? r->backend_name
                    : r->backend                          ? r->backend
                                                          : "";
    size_t n = strnlen(s, QH_CLEAN_LINE_MAX);
    qh_sb b = {0};
    qh_sb_puts(&b, "qmmcheck.");
    for (size_t i = 0; i < n;) {
        size_t w = i;
        while (w < n && !strchr(" :,=", s[w]))
            w++;
        size_t from = i;
        for (size_t k = i; k < w; k++)
            if (s[k] == '/')
                from = k + 1;
        class_part(&b, s + from, w - from + (w < n), '_');
        i = w + (w < n);
    }
    if (r->cpu) { /* --cpu: each (backend, class) is a class of its own */
        qh_sb_puts(&b, "@");
        class_part(&b, r->cpu, strlen(r->cpu), '_');
    }
    char *suite = qh_report_suite(r->name);
    if (!suite)
        b.failed = 1;
    else if (strcmp(suite, ".") != 0) {
        qh_sb_puts(&b, ".");
        class_part(&b, suite, strlen(suite), '.');
    }
    free(suite);
    return b.failed ? (qh_sb_free(&b), NULL) : qh_sb_take(&b);
}

/* The case's name less its suite: what follows the last '/'. */
static const char *case_leaf(const char *name)
{
    const char *slash = name ? strrchr(name, '/') : NULL;
    return slash ? slash + 1 : name ? name : "";
}

/* The last component of the vector root a row came from: its path less "/NAME", or the
 * case directory's parent when the path does not end so. "" when there is none. */
static const char *root_component(const qh_result *r, size_t *len)
{
    const char *p = r->path ? r->path : "";
    size_t pl = strlen(p), nl = r->name ? strlen(r->name) : 0;
    size_t end;
    if (nl && pl > nl && p[pl - nl - 1] == '/' && strcmp(p + pl - nl, r->name) == 0)
        end = pl - nl - 1;
    else
        for (end = pl; end > 0 && p[end - 1] != '/'; end--) {}
    while (end > 0 && p[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && p[start - 1] != '/')
        start--;
    *len = end - start;
    return p + start;
}

typedef struct junit_row {
    char *classname; /* "qmmcheck.<backend>.<suite>" */
    char *name;      /* the case's name, made distinct within its class */
    int dup;         /* another row has the same class and name */
} junit_row;

static int cmp_rows(const void *a, const void *b)
{
    const junit_row *x = *(junit_row *const *)a, *y = *(junit_row *const *)b;
    int c = strcmp(x->classname, y->classname);
    return c ? c : strcmp(x->name, y->name);
}

/* Sets `dup` on every row whose class and name another row has; 0 when none has, -1 when out
 * of memory. */
static int mark_duplicates(junit_row *rows, size_t n)
{
    junit_row **order = malloc(sizeof *order * (n ? n : 1));
    if (!order)
        return -1;
    for (size_t i = 0; i < n; i++) {
        order[i] = &rows[i];
        rows[i].dup = 0;
    }
    qsort(order, n, sizeof *order, cmp_rows);
    int any = 0;
    for (size_t i = 1; i < n; i++)
        if (cmp_rows(&order[i - 1], &order[i]) == 0)
            order[i - 1]->dup = order[i]->dup = any = 1;
    free(order);
    return any;
}

/* Appends " [suffix]" to a duplicate row's name. */
static void suffix_name(junit_row *row, const char *suffix, size_t len)
{
    qh_sb b = {0};
    qh_sb_puts(&b, row->name);
    char *clean = qh_clean_dup(suffix, len, QH_CLEAN_LINE_MAX);
    qh_sb_printf(&b, " [%s]", clean ? clean : "");
    free(clean);
    if (!b.failed) {
        free(row->name);
        row->name = qh_sb_take(&b);
    } else {
        qh_sb_free(&b);
    }
}

/* Every row's class and name; a case name two vector roots share (with one backend) gets its
 * root's last component, and one still shared after that its row number, so that a CI
 * server, which keys cases by class and name, shows each. NULL when out of memory. */
static junit_row *junit_rows(const qh_result *r, size_t n)
{
    junit_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return NULL;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        rows[i].classname = junit_class(&r[i]);
        const char *leaf = case_leaf(r[i].name);
        rows[i].name = qh_clean_dup(leaf, strlen(leaf), QH_CLEAN_LINE_MAX);
        ok = ok && rows[i].classname && rows[i].name;
    }
    int dups = ok ? mark_duplicates(rows, n) : -1;
    for (size_t i = 0; dups > 0 && i < n; i++)
        if (rows[i].dup) {
            size_t len;
            const char *root = root_component(&r[i], &len);
            suffix_name(&rows[i], root, len);
        }
    if (dups > 0)
        dups = mark_duplicates(rows, n);
    for (size_t i = 0; dups > 0 && i < n; i++)
        if (rows[i].dup) {
            char num[32];
            int len = snprintf(num, sizeof num, "#%lld", (long long)r[i].number);
            suffix_name(&rows[i], num, (size_t)len);
        }
    if (dups < 0) {
        for (size_t i = 0; i < n; i++) {
            free(rows[i].classname);
            free(rows[i].name);
        }
        free(rows);
        return NULL;
    }
    return rows;
}

/* The element a status becomes inside <testcase>, or NULL (a pass). An XPASS is a failure
 * under --xfail-strict: the run fails for it, so the CI server must show it. */
static const char *junit_tag(qh_case_status s, const qh_run_summary *sum)
{
    switch (s) {
    case QH_FAILED: return "failure";
    case QH_XPASS: return sum->xpass_fails ? "failure" : NULL;
    case QH_CRASHED: case QH_TIMEOUT: case QH_ERROR: return "error";
    case QH_SKIPPED: case QH_XFAIL: case QH_INCONCLUSIVE: return "skipped";
    default: return NULL;
    }
}

/* <testsuite>'s timestamp (the run's start, UTC, ISO 8601 without a zone as Ant and Surefire
 * write it) and hostname attributes. */
static void junit_when_where(qh_sb *b, const qh_run_summary *sum)
{
    time_t start = time(NULL) - (time_t)(sum->seconds + 0.5);
    struct tm tm;
    char stamp[32] = "1970-01-01T00:00:00";
    if (gmtime_r(&start, &tm))
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0 || host[0] == '\0')
        strcpy(host, "localhost");
    host[sizeof host - 1] = '\0'; /* gethostname need not terminate a truncated name */
    char clean[512];
    qh_clean_into(clean, sizeof clean, host, strlen(host), 0);
    qh_sb_printf(b, " timestamp=\"%s\" hostname=\"", stamp);
    qh_sb_xml(b, clean);
    qh_sb_puts(b, "\"");
}

static void write_junit(qh_sb *b, const char *command, const qh_result *r, size_t n,
                        const qh_run_summary *sum)
{
    (void)command;
    int64_t failures = sum->counts[QH_FAILED] + (sum->xpass_fails ? sum->counts[QH_XPASS] : 0);
    /* an interrupted run is one error more, a testcase of its own: the property alone left
     * a dashboard green with the cases not run missing */
    int64_t stopped = sum->interrupted ? 1 : 0;
    int64_t errors = sum->counts[QH_CRASHED] + sum->counts[QH_TIMEOUT] + sum->counts[QH_ERROR] +
                     stopped;
    int64_t skipped = sum->counts[QH_SKIPPED] + sum->counts[QH_XFAIL] +
                      sum->counts[QH_INCONCLUSIVE];
    int64_t tests = sum->total + stopped;
    junit_row *rows = junit_rows(r, n);
    if (!rows) {
        b->failed = 1;
        return;
    }
    /* junit-10.xsd: <testsuites> has no skipped attribute, and a suite's time at most three
     * decimals */
    qh_sb_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    qh_sb_printf(b,
                 "<testsuites name=\"qmmcheck\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" "
                 "time=\"%.3f\">\n",
                 (long long)tests, (long long)failures, (long long)errors, sum->seconds);
    qh_sb_printf(b,
                 "  <testsuite name=\"qmmcheck\" tests=\"%lld\" failures=\"%lld\" errors=\"%lld\" "
                 "skipped=\"%lld\" time=\"%.3f\"",
                 (long long)tests, (long long)failures, (long long)errors,
                 (long long)skipped, sum->seconds);
    junit_when_where(b, sum);
    qh_sb_puts(b, ">\n");
    if (sum->interrupted || sum->shard) {
        qh_sb_puts(b, "    <properties>");
        junit_property(b, "interrupted", sum->interrupted);
        junit_property(b, "shard", sum->shard);
        qh_sb_puts(b, "</properties>\n");
    }
    for (size_t i = 0; i < n; i++) {
        const char *st = qh_case_status_name(r[i].status);
        qh_sb_puts(b, "    <testcase classname=\"");
        qh_sb_xml(b, rows[i].classname);
        qh_sb_puts(b, "\" name=\"");
        qh_sb_xml(b, rows[i].name);
        qh_sb_printf(b, "\" time=\"%.6f\">\n", r[i].seconds);
        const char *tag = junit_tag(r[i].status, sum);
        if (tag) {
            /* the message is what a CI server lists: the summary and the first mismatch */
            /* the type: the reason code (docs/formats.md, "Verdicts") */
            qh_sb_printf(b, "      <%s type=\"%s\" message=\"", tag,
                         r[i].status == QH_XPASS ? "xpass"
                         : r[i].reason != QH_REASON_NONE ? qh_reason_name(r[i].reason)
                                                         : qh_case_status_key(r[i].status));
            qh_sb_xml(b, r[i].summary ? r[i].summary : st);
            if (r[i].first_mismatch) {
                qh_sb_puts(b, "; first mismatch ");
                qh_sb_xml(b, r[i].first_mismatch);
            }
            qh_sb_puts(b, "\">");
            if (r[i].detail)
                qh_sb_xml(b, r[i].detail);
            junit_repro(b, &r[i], r[i].detail != NULL);
            qh_sb_printf(b, "</%s>\n", tag);
        } else if (r[i].status != QH_PASSED) {
            /* MISTRUSTED, UNCHECKED and (not strict) XPASS pass, but carry a warning */
            qh_sb_printf(b, "      <system-out>%s: ", st);
            qh_sb_xml(b, r[i].summary ? r[i].summary : "");
            junit_repro(b, &r[i], 1);
            qh_sb_puts(b, "</system-out>\n");
        }
        qh_sb_puts(b, "    </testcase>\n");
        free(rows[i].classname);
        free(rows[i].name);
    }
    free(rows);
    if (stopped) {
        qh_sb_puts(b, "    <testcase classname=\"qmmcheck\" name=\"&lt;interrupted&gt;\" "
                      "time=\"0\">\n      <error type=\"interrupted\" message=\"");
        qh_sb_xml(b, sum->interrupted);
        qh_sb_puts(b, " stopped the run: the cases not reached are not in this report\"/>\n"
                      "    </testcase>\n");
    }
    qh_sb_puts(b, "  </testsuite>\n</testsuites>\n");
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
    int rc = qh_write_file_atomic(path, b.s ? b.s : "", b.len, err); /* a new temporary */
    qh_sb_free(&b);
    return rc;
}
