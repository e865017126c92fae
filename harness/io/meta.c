/* harness/io/meta.c — the qmm.meta sidecar (format in meta.h). Values that do not fit their
 * fixed-size field are errors rather than silently truncated, so a case never runs with a
 * different expectation than its author wrote. */
#include "harness/io/meta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/clean.h"
#include "harness/io/cpuclass.h"

#define META_FILE_MAX ((size_t)1 << 20)

void qh_meta_init(qh_meta *m)
{
    memset(m, 0, sizeof *m);
    m->expect = QMM_OK;
    strcpy(m->profile, "spec");
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int meta_fail(qh_error *err, const char *what, size_t line, const char *fmt, ...)
{
    if (!err)
        return -1;
    char problem[QH_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    snprintf(err->msg, sizeof err->msg, "%s: line %zu: %s", what ? what : "<memory>", line,
             problem);
    return -1;
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Trims [*b, *e) in place. */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

/* Text from the file as a message quotes it: one clean line, at most 64 bytes, so a newline
 * or invalid UTF-8 in qmm.meta cannot break the line it is reported on. */
static const char *quoted(char *buf, size_t size, const char *b, const char *e)
{
    qh_clean_into(buf, size, b, (size_t)(e - b), 64);
    return buf;
}

static int copy_value(char *dst, size_t cap, const char *b, const char *e)
{
    size_t n = (size_t)(e - b);
    if (n > cap - 1)
        return -1;
    memcpy(dst, b, n);
    dst[n] = '\0';
    return 0;
}

static int parse_expect(const char *b, const char *e, qmm_status_code *out)
{
    static const qmm_status_code codes[] = {QMM_OK, QMM_UNSUPPORTED, QMM_INVALID_ARGUMENT,
                                            QMM_OUT_OF_MEMORY, QMM_INTERNAL};
    size_t n = (size_t)(e - b);
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *name = qmm_status_name(codes[i]);
        if (strlen(name) == n && memcmp(name, b, n) == 0) {
            *out = codes[i];
            return 0;
        }
    }
    return -1;
}

enum {
    K_EXPECT, K_TAGS, K_PROFILE, K_PROVENANCE, K_DESCRIPTION, K_ONNX_VERSION, K_SEEN_WITH,
    K_CPU_CLASS, K_COUNT
};
static const char *const key_names[K_COUNT] = {"expect",       "tags",      "profile",
                                               "provenance",   "description",
                                               "onnx_version", "seen_with", "cpu_class"};

/* cpu_class: comma-separated class names, each known and given once, kept as "a, b". */
static int parse_cpu_class(const char *vb, const char *ve, qh_meta *m, const char *what,
                           size_t line, qh_error *err)
{
    char q_buf[80];
    size_t o = 0;
    if (vb == ve)
        return meta_fail(err, what, line, "cpu_class: empty value (one or more of %s)",
                         qh_cpu_class_names());
    for (const char *t = vb; t;) { /* every item, also an empty one after a last comma */
        const char *comma = memchr(t, ',', (size_t)(ve - t));
        const char *cb = t, *ce = comma ? comma : ve;
        t = comma ? comma + 1 : NULL;
        trim(&cb, &ce);
        size_t n = (size_t)(ce - cb);
        if (!qh_cpu_class_known(cb, n))
            return meta_fail(err, what, line, "cpu_class: '%s' is not a CPU class (%s)",
                             quoted(q_buf, sizeof q_buf, cb, ce), qh_cpu_class_names());
        for (const char *s = m->cpu_class; *s;) {
            const char *e = strstr(s, ", ");
            size_t len = e ? (size_t)(e - s) : strlen(s);
            if (len == n && memcmp(s, cb, n) == 0)
                return meta_fail(err, what, line, "cpu_class: '%s' given twice",
                                 quoted(q_buf, sizeof q_buf, cb, ce));
            s += len + (e ? 2 : 0);
        }
        /* every name is short and given at most once: the seven fit */
        o += (size_t)snprintf(m->cpu_class + o, sizeof m->cpu_class - o, "%s%.*s",
                              o ? ", " : "", (int)n, cb);
    }
    return 0;
}

/* Where the value of a text key (every key but expect and tags) is kept, and its room
 * (with the NUL) in *cap. */
static char *text_field(qh_meta *m, int key, size_t *cap)
{
    switch (key) {
    case K_PROFILE: *cap = sizeof m->profile; return m->profile;
    case K_PROVENANCE: *cap = sizeof m->provenance; return m->provenance;
    case K_DESCRIPTION: *cap = sizeof m->description; return m->description;
    case K_SEEN_WITH: *cap = sizeof m->seen_with; return m->seen_with;
    default: /* K_ONNX_VERSION */ *cap = sizeof m->onnx_version; return m->onnx_version;
    }
}

int qh_meta_parse(const char *text, size_t len, const char *what, qh_meta *m, qh_error *err)
{
    qh_meta_init(m);
    const char *p = text, *end = text + len;
    int seen[K_COUNT] = {0};
    size_t line = 0;
    char q_buf[80];

    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3; /* editors on some platforms add a UTF-8 byte-order mark */
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul) {
        size_t nul_line = 1;
        for (const char *q = text; q < nul; q++)
            nul_line += *q == '\n';
        return meta_fail(err, what, nul_line, "line contains a NUL byte");
    }

    while (p < end) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *b = p, *e = nl ? nl : end;
        p = nl ? nl + 1 : end;
        trim(&b, &e);
        if (b == e || *b == '#')
            continue;
        const char *eq = memchr(b, '=', (size_t)(e - b));
        if (!eq)
            return meta_fail(err, what, line, "expected 'key = value'");
        const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
        trim(&kb, &ke);
        trim(&vb, &ve);
        if (kb == ke)
            return meta_fail(err, what, line, "missing key before '='");
        for (const char *q = kb; q < ke; q++)
            if (!((*q >= 'a' && *q <= 'z') || *q == '_'))
                return meta_fail(err, what, line, "key '%s': keys are lower-case [a-z_]+",
                                 quoted(q_buf, sizeof q_buf, kb, ke));
        size_t klen = (size_t)(ke - kb);
        int key = -1;
        for (int k = 0; k < K_COUNT; k++)
            if (strlen(key_names[k]) == klen && memcmp(key_names[k], kb, klen) == 0)
                key = k;
        if (key < 0) {
            if (m->n_unknown == 0) {
                size_t n = klen < sizeof m->first_unknown - 1 ? klen
                                                              : sizeof m->first_unknown - 1;
                memcpy(m->first_unknown, kb, n);
                m->first_unknown[n] = '\0';
            }
            if (m->n_unknown < INT32_MAX)
                m->n_unknown++;
            continue;
        }
        if (seen[key])
            return meta_fail(err, what, line, "key '%s' given twice", key_names[key]);
        seen[key] = 1;

        switch (key) {
        case K_EXPECT:
            if (parse_expect(vb, ve, &m->expect) != 0)
                return meta_fail(err, what, line,
                                 "expect: '%s' is not one of OK, UNSUPPORTED, "
                                 "INVALID_ARGUMENT, OUT_OF_MEMORY, INTERNAL",
                                 quoted(q_buf, sizeof q_buf, vb, ve));
            break;
        case K_TAGS: {
            const char *t = vb;
            while (t < ve) {
                const char *comma = memchr(t, ',', (size_t)(ve - t));
                const char *tb = t, *te = comma ? comma : ve;
                t = comma ? comma + 1 : ve;
                trim(&tb, &te);
                if (tb == te)
                    continue;
                if (m->n_tags >= QH_META_MAX_TAGS)
                    return meta_fail(err, what, line, "tags: more than %d tags",
                                     QH_META_MAX_TAGS);
                if (copy_value(m->tags[m->n_tags], sizeof m->tags[0], tb, te) != 0)
                    return meta_fail(err, what, line, "tags: tag '%s' is longer than %zu "
                                     "bytes", quoted(q_buf, sizeof q_buf, tb, te),
                                     sizeof m->tags[0] - 1);
                m->n_tags++;
            }
            break;
        }
        case K_CPU_CLASS:
            if (parse_cpu_class(vb, ve, m, what, line, err) != 0)
                return -1;
            break;
        default: {
            /* a text key; only profile must not be empty */
            size_t cap;
            char *dst = text_field(m, key, &cap);
            if (key == K_PROFILE && vb == ve)
                return meta_fail(err, what, line, "profile: empty value");
            if (copy_value(dst, cap, vb, ve) != 0)
                return meta_fail(err, what, line, "%s: longer than %zu bytes", key_names[key],
                                 cap - 1);
            break;
        }
        }
    }
    return 0;
}

int qh_meta_read_file(const char *path, qh_meta *m, qh_error *err)
{
    qh_meta_init(m);
    /* Only a name that is not there at all means "no sidecar"; a dangling symlink, a
     * directory or a FIFO named qmm.meta is an error (qh_read_file refuses the last two
     * without blocking). */
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT)
        return 0;
    uint8_t *buf = NULL;
    size_t n = 0;
    if (qh_read_file(path, META_FILE_MAX, &buf, &n, err) != 0)
        return -1;
    int rc = qh_meta_parse((const char *)buf, n, path, m, err);
    free(buf);
    return rc;
}

/* snprintf-style appender that keeps counting after the buffer is full. */
typedef struct sink {
    char *buf;
    size_t size;
    size_t n;
} sink;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void emit(sink *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = s->n < s->size ? s->buf + s->n : NULL;
    size_t room = s->n < s->size ? s->size - s->n : 0;
    int k = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (k > 0)
        s->n += (size_t)k;
}

int qh_meta_format(const qh_meta *m, char *buf, size_t size)
{
    sink s = {buf, size, 0};
    if (buf && size)
        buf[0] = '\0';
    if (m->expect != QMM_OK)
        emit(&s, "expect = %s\n", qmm_status_name(m->expect));
    if (m->n_tags > 0) {
        emit(&s, "tags = ");
        for (int32_t i = 0; i < m->n_tags && i < QH_META_MAX_TAGS; i++)
            emit(&s, "%s%.*s", i ? ", " : "", (int)sizeof m->tags[i], m->tags[i]);
        emit(&s, "\n");
    }
    if (strcmp(m->profile, "spec") != 0)
        emit(&s, "profile = %.*s\n", (int)sizeof m->profile, m->profile);
    if (m->provenance[0])
        emit(&s, "provenance = %.*s\n", (int)sizeof m->provenance, m->provenance);
    if (m->description[0])
        emit(&s, "description = %.*s\n", (int)sizeof m->description, m->description);
    if (m->onnx_version[0])
        emit(&s, "onnx_version = %.*s\n", (int)sizeof m->onnx_version, m->onnx_version);
    if (m->seen_with[0])
        emit(&s, "seen_with = %.*s\n", (int)sizeof m->seen_with, m->seen_with);
    if (m->cpu_class[0])
        emit(&s, "cpu_class = %.*s\n", (int)sizeof m->cpu_class, m->cpu_class);
    return s.n > INT32_MAX ? INT32_MAX : (int)s.n;
}

int qh_meta_has_tag(const qh_meta *m, const char *tag)
{
    for (int32_t i = 0; i < m->n_tags && i < QH_META_MAX_TAGS; i++)
        if (strcmp(m->tags[i], tag) == 0)
            return 1;
    return 0;
}
