/* harness/io/case.c — case discovery and loading. */
#include "harness/io/case.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/io/casedir.h"
#include "harness/io/clean.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

#define QH_MAX_DEPTH 32

static char *qh_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static char *qh_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    size_t o = la;
    if (la > 0 && a[la - 1] != '/')
        p[o++] = '/';
    memcpy(p + o, b, lb + 1);
    return p;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Something is there under this name (a dangling symlink, a FIFO, a directory, ...). */
static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int list_push(qh_case_list *l, const char *dir, const char *name, int data_set,
                     int problem, int problem_errno)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        qh_case_ref *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        l->cap = cap;
    }
    qh_case_ref *r = &l->items[l->count];
    memset(r, 0, sizeof *r);
    r->dir = qh_strdup(dir);
    r->name = qh_strdup(name);
    r->data_set = data_set;
    r->problem = problem;
    r->problem_errno = problem_errno;
    if (!r->dir || !r->name) {
        free(r->dir);
        free(r->name);
        return -1;
    }
    l->count++;
    return 0;
}

static const char set_prefix[] = "test_data_set_";

/* N of test_data_set_N in its one spelling: decimal digits, no leading zero, at most 6 of
 * them; -1 for any other name (test_data_set_00 is not a second spelling of _0). */
static int data_set_number(const char *entry)
{
    const char *p = entry + sizeof set_prefix - 1;
    if (*p == '\0' || strlen(p) > 6 || (p[0] == '0' && p[1] != '\0'))
        return -1;
    int n = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
    }
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* One discovery: the list it appends to, and every directory it has entered (by device and
 * inode), so that a symlink back up the tree is not a second copy of its cases. */
typedef struct walker {
    qh_case_list *l;
    qh_error *err;
    struct seen_dir {
        dev_t dev;
        ino_t ino;
    } *seen;
    size_t n_seen, cap_seen;
} walker;

/* 1: entered before; 0: first visit, now recorded; -1: out of memory. */
static int seen_before(walker *w, const struct stat *st)
{
    for (size_t i = 0; i < w->n_seen; i++)
        if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
            return 1;
    if (w->n_seen == w->cap_seen) {
        size_t cap = w->cap_seen ? w->cap_seen * 2 : 64;
        struct seen_dir *p = realloc(w->seen, cap * sizeof *p);
        if (!p)
            return -1;
        w->seen = p;
        w->cap_seen = cap;
    }
    w->seen[w->n_seen].dev = st->st_dev;
    w->seen[w->n_seen].ino = st->st_ino;
    w->n_seen++;
    return 0;
}

static int oom(walker *w, const char *dir)
{
    snprintf(w->err->msg, sizeof w->err->msg, "%s: out of memory", dir);
    return -1;
}

/* A path discovery could not turn into a case: it joins the list as a case that loads as
 * ERROR with the reason, so it is counted and reported instead of ending the run or
 * vanishing. */
static int push_problem(walker *w, const char *path, const char *name, int problem, int e)
{
    if (list_push(w->l, path, name, -1, problem, e) != 0)
        return oom(w, path);
    return 0;
}

static int push_problem_at(walker *w, const char *dir, const char *name, const char *entry,
                           int problem, int e)
{
    char *path = qh_join(dir, entry);
    char *sub = name[0] ? qh_join(name, entry) : qh_strdup(entry);
    int rc = path && sub ? push_problem(w, path, sub, problem, e) : oom(w, dir);
    free(path);
    free(sub);
    return rc;
}

static int add_case_dir(walker *w, const char *dir, const char *name)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0)
        return push_problem(w, dir, name, QH_REF_UNREADABLE, errno);
    int *sets = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int nsets = 0, rc = sets ? 0 : oom(w, dir);
    for (int i = 0; i < n && rc == 0; i++) {
        const char *e = ents[i]->d_name;
        if (strncmp(e, set_prefix, sizeof set_prefix - 1) == 0) {
            char *p = qh_join(dir, e);
            int ds = data_set_number(e);
            if (!p)
                rc = oom(w, dir);
            else if (ds >= 0 && is_dir(p))
                sets[nsets++] = ds;
            free(p);
        }
    }
    if (rc == 0) {
        qsort(sets, (size_t)nsets, sizeof *sets, cmp_int);
        if (nsets == 0)
            rc = list_push(w->l, dir, name, -1, QH_REF_OK, 0); /* loads as ERROR: no data set */
        for (int i = 0; i < nsets && rc == 0; i++) {
            char nm[4096];
            if (nsets == 1 && sets[i] == 0)
                snprintf(nm, sizeof nm, "%s", name);
            else
                snprintf(nm, sizeof nm, "%s@%d", name, sets[i]);
            rc = list_push(w->l, dir, nm, sets[i], QH_REF_OK, 0);
        }
        if (rc != 0)
            rc = oom(w, dir);
    }
    /* After the data sets: the test_data_set_* entries that are none. */
    for (int i = 0; i < n && rc == 0; i++) {
        const char *e = ents[i]->d_name;
        if (strncmp(e, set_prefix, sizeof set_prefix - 1) != 0)
            continue;
        char *p = qh_join(dir, e);
        if (!p)
            rc = oom(w, dir);
        else if (data_set_number(e) < 0)
            rc = push_problem_at(w, dir, name, e, QH_REF_SET_NAME, 0);
        else if (!is_dir(p))
            rc = push_problem_at(w, dir, name, e, QH_REF_SET_NOT_DIR, 0);
        free(p);
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    free(sets);
    return rc;
}

static int walk(walker *w, const char *dir, const char *name, int depth);

/* Visits one entry of a directory being walked: a subdirectory is walked, an entry that
 * cannot be examined (other than a dangling symlink) is reported, anything else is not part
 * of the tree. */
static int visit(walker *w, const char *dir, const char *name, const char *e, int depth)
{
    char *sub = qh_join(dir, e);
    char *subname = name[0] ? qh_join(name, e) : qh_strdup(e);
    int rc = 0;
    struct stat st;
    if (!sub || !subname)
        rc = oom(w, dir);
    else if (stat(sub, &st) != 0)
        rc = errno == ENOENT ? 0 : push_problem(w, sub, subname, QH_REF_UNREADABLE, errno);
    else if (S_ISDIR(st.st_mode))
        rc = walk(w, sub, subname, depth + 1);
    free(sub);
    free(subname);
    return rc;
}

static int is_symlink_in(const char *dir, const char *e)
{
    char *p = qh_join(dir, e);
    struct stat st;
    int link = p && lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
    free(p);
    return link;
}

static int walk(walker *w, const char *dir, const char *name, int depth)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return push_problem(w, dir, name, QH_REF_UNREADABLE, errno);
    int seen = seen_before(w, &st);
    if (seen != 0)
        return seen < 0 ? oom(w, dir) : 0; /* reached again through a symlink: once is enough */

    char *model = qh_join(dir, "model.onnx");
    if (!model)
        return oom(w, dir);
    /* Any model.onnx makes a case, even a dangling symlink or a directory: loading it then
     * says what is wrong, where skipping it would lose the case without a word. */
    int is_case = exists(model);
    free(model);
    if (is_case)
        return add_case_dir(w, dir, name);
    if (depth >= QH_MAX_DEPTH)
        return push_problem(w, dir, name, QH_REF_TOO_DEEP, 0);

    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0) {
        if (depth > 0)
            return push_problem(w, dir, name, QH_REF_UNREADABLE, errno);
        snprintf(w->err->msg, sizeof w->err->msg, "%s: cannot read directory: %s", dir,
                 strerror(errno));
        return -1;
    }
    /* Real subdirectories before symlinks, so that a case reachable both ways keeps the name
     * of where it really is. */
    int rc = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n && rc == 0; i++) {
            const char *e = ents[i]->d_name;
            if (e[0] != '.' && is_symlink_in(dir, e) == pass)
                rc = visit(w, dir, name, e, depth);
        }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    return rc;
}

int qh_discover(const char *root, qh_case_list *list, qh_error *err)
{
    if (!is_dir(root)) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", root,
                 errno == ENOENT ? "no such directory" : "not a directory");
        return -1;
    }
    char *model = qh_join(root, "model.onnx");
    if (!model)
        return -1;
    int is_case = exists(model);
    free(model);
    /* A case directory given directly is named by its last path component. */
    char name[4096] = "";
    if (is_case) {
        size_t len = strlen(root);
        while (len > 1 && root[len - 1] == '/')
            len--;
        size_t start = len;
        while (start > 0 && root[start - 1] != '/')
            start--;
        snprintf(name, sizeof name, "%.*s", (int)(len - start), root + start);
    }
    walker w = {list, err, NULL, 0, 0};
    int rc = walk(&w, root, name, 0);
    free(w.seen);
    return rc;
}

void qh_case_list_free(qh_case_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].dir);
        free(list->items[i].name);
    }
    free(list->items);
    memset(list, 0, sizeof *list);
}

qmm_tensor *qh_call_output(qmm_call *call)
{
    return qmm_call_output(call);
}

/* An attribute's name as a message quotes it: the name comes from the file. */
static const char *attr_name(char *buf, size_t size, const qh_attr *a)
{
    qh_clean_into(buf, size, a->name, strnlen(a->name, sizeof a->name), 64);
    return buf;
}

/* The node's attributes into the call. An operator without attributes takes none in any
 * opset: one that is there is not something the backends are told about, so the model is
 * malformed rather than the attribute silently ignored. Values pass through unchecked (within
 * int32), so that the reference's verdict on a bad one is INVALID_ARGUMENT like any other bad
 * input; a missing, mistyped or unknown attribute makes the model itself malformed. */
static int take_attrs(const qmm_op_desc *d, const qh_attr *attrs, int32_t n_attrs,
                      qmm_call *call, qh_error *err)
{
    char shown[80];
    if (d->n_attrs == 0 && n_attrs > 0) {
        snprintf(err->msg, sizeof err->msg,
                 "NodeProto.attribute: unknown attribute '%s' (%s takes no attributes)",
                 attr_name(shown, sizeof shown, &attrs[0]), d->op_type);
        return -1;
    }
    int seen[QMM_MAX_OP_ATTRS] = {0};
    for (int32_t i = 0; i < n_attrs; i++) {
        const qh_attr *a = &attrs[i];
        int32_t which = -1;
        for (int32_t w = 0; w < d->n_attrs; w++)
            if (strcmp(a->name, d->attrs[w].name) == 0)
                which = w;
        if (which < 0) {
            char known[128] = "";
            for (int32_t w = 0; w < d->n_attrs; w++) {
                size_t k = strlen(known);
                snprintf(known + k, sizeof known - k, "%s%s", w ? ", " : "", d->attrs[w].name);
            }
            snprintf(err->msg, sizeof err->msg, "%s: unknown attribute '%s' (it has %s)",
                     d->op_type, attr_name(shown, sizeof shown, a), known);
            return -1;
        }
        if (a->type != QH_ATTR_INT || a->i < INT32_MIN || a->i > INT32_MAX) {
            snprintf(err->msg, sizeof err->msg, "%s: attribute %s must be an INT (%s)",
                     d->op_type, a->name, d->attrs[which].what);
            return -1;
        }
        *qmm_call_attr(call, which) = (int32_t)a->i;
        seen[which] = 1;
    }
    for (int32_t w = 0; w < d->n_attrs; w++)
        if (!seen[w] && d->attrs[w].required) {
            snprintf(err->msg, sizeof err->msg, "%s: required attribute %s is missing",
                     d->op_type, d->attrs[w].name);
            return -1;
        }
    return 0;
}

/* The node's inputs into the call: as many as the operator has at most, and at least up to
 * its last required one; a required one must be present. */
static int take_inputs(const qmm_op_desc *d, const qmm_tensor *const *in, int32_t n,
                       qmm_call *call, qh_error *err)
{
    int32_t n_min = 0;
    for (int32_t i = 0; i < d->n_inputs; i++)
        if (!d->inputs[i].optional)
            n_min = i + 1;
    if (n < n_min || n > d->n_inputs) {
        char want[32];
        if (n_min == d->n_inputs)
            snprintf(want, sizeof want, "%d", n_min);
        else
            snprintf(want, sizeof want, "%d to %d", n_min, d->n_inputs);
        snprintf(err->msg, sizeof err->msg, "NodeProto.input: %s: %d inputs, expected %s",
                 d->op_type, n, want);
        return -1;
    }
    for (int32_t i = 0; i < n; i++) {
        int present = in[i] && in[i]->dtype != QMM_DTYPE_UNDEFINED;
        if (!present && !d->inputs[i].optional) {
            snprintf(err->msg, sizeof err->msg,
                     "NodeProto.input: %s: required input %d (%s) is missing", d->op_type, i,
                     d->inputs[i].name);
            return -1;
        }
        if (in[i])
            *qmm_call_input(call, i) = *in[i];
    }
    return 0;
}

int qh_call_build(const char *op_type, const char *domain, int64_t opset,
                  const qmm_tensor *const *in, int32_t n, qmm_call *call, qh_error *err)
{
    return qh_call_build_node(op_type, domain, opset, in, n, NULL, 0, call, err);
}

/* "expected QLinearMatMul, MatMulInteger or com.microsoft QOrderedMatMul" */
static void known_operators(char *buf, size_t size)
{
    buf[0] = '\0';
    int32_t n = qmm_op_count();
    for (int32_t i = 0; i < n; i++) {
        const qmm_op_desc *d = qmm_op_at(i);
        size_t k = strlen(buf);
        snprintf(buf + k, size - k, "%s%s%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                 d->domain, d->domain[0] ? " " : "", d->op_type);
    }
}

int qh_call_build_node(const char *op_type, const char *domain, int64_t opset,
                       const qmm_tensor *const *in, int32_t n, const qh_attr *attrs,
                       int32_t n_attrs, qmm_call *call, qh_error *err)
{
    memset(call, 0, sizeof *call);
    const qmm_op_desc *d = qmm_op_lookup(domain, op_type);
    if (!d) {
        char op[QH_NAME_MAX * 2 + 2], shown[160], known[160];
        snprintf(op, sizeof op, "%s%s%s", domain, domain[0] ? "." : "", op_type);
        qh_clean_into(shown, sizeof shown, op, strlen(op), 128);
        known_operators(known, sizeof known);
        snprintf(err->msg, sizeof err->msg,
                 "NodeProto.op_type: unknown operator '%s' (expected %s)", shown, known);
        return -1;
    }
    if (d->import_required && opset < 1) {
        snprintf(err->msg, sizeof err->msg,
                 "ModelProto.opset_import: %s: the model imports no %s opset (version %d)",
                 d->op_type, d->domain, d->opset_min);
        return -1;
    }
    /* the opset is stored as given (within int32): the validator decides what it allows */
    qmm_call_init(call, d->kind, (int32_t)opset);
    if (take_inputs(d, in, n, call, err) != 0 || take_attrs(d, attrs, n_attrs, call, err) != 0) {
        memset(call, 0, sizeof *call);
        return -1;
    }
    qmm_call_output(call)->dtype = qmm_call_output_dtype(call);
    return 0;
}

void qh_call_model(const qmm_call *call, const qmm_tensor *y, int y_shape_known, qh_model *m)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (!d)
        return;
    int32_t opset = qmm_call_opset(call);
    /* IR 5 is what opset 10 shipped with; opset 21 needs IR 10 */
    m->ir_version = opset >= 21 ? 10 : 5;
    m->n_opsets = 1;
    m->opsets[0].version = opset;
    snprintf(m->op_type, sizeof m->op_type, "%s", d->op_type);
    if (d->domain[0]) {
        /* com.microsoft 1 is used with ai.onnx opsets of this era */
        m->ir_version = 8;
        m->n_opsets = 2;
        m->opsets[0].version = 17;
        snprintf(m->opsets[1].domain, sizeof m->opsets[1].domain, "%s", d->domain);
        m->opsets[1].version = opset;
        snprintf(m->domain, sizeof m->domain, "%s", d->domain);
    }
    m->n_attrs = d->n_attrs;
    for (int32_t i = 0; i < d->n_attrs; i++) {
        snprintf(m->attrs[i].name, sizeof m->attrs[i].name, "%s", d->attrs[i].name);
        m->attrs[i].type = QH_ATTR_INT;
        m->attrs[i].i = qmm_call_attr_value(call, i);
    }
    m->n_outputs = 1;
    snprintf(m->outputs[0], sizeof m->outputs[0], "%s", d->output_name);
    m->n_graph_outputs = 1;
    qh_value_info_of(&m->graph_outputs[0], d->output_name, y, y_shape_known);
}

int qh_call_write_dir(const char *dir, const qmm_call *call, qh_model *m,
                      const qmm_tensor *output, const qh_meta *meta, qh_error *err)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (!d) {
        snprintf(err->msg, sizeof err->msg, "%s: the call has no operator", dir);
        return -1;
    }
    const qmm_tensor *ins[QMM_MAX_OP_INPUTS];
    const char *names[QMM_MAX_OP_INPUTS];
    for (int32_t i = 0; i < d->n_inputs; i++) {
        ins[i] = qmm_call_input_c(call, i);
        names[i] = d->inputs[i].name;
    }
    qh_casedir c = {.model = m, .n_inputs = d->n_inputs, .inputs = ins, .input_names = names,
                    .output = output, .meta = meta};
    return qh_casedir_write(dir, &c, err);
}

/* Reads name_0.pb, name_1.pb, ... until the first index with nothing under its name. What is
 * there but is no regular file (a directory, a FIFO, a dangling symlink) is read, so that the
 * error says so instead of "has no input_0.pb". */
static int read_numbered(const char *set_dir, const char *stem, qh_tensor *out, int32_t *count,
                         qh_error *err)
{
    *count = 0;
    for (int32_t i = 0; i < QH_MAX_IO + 1; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s_%d.pb", stem, i);
        char *path = qh_join(set_dir, file);
        if (!path)
            return -1;
        if (!exists(path)) {
            free(path);
            return 0;
        }
        if (i == QH_MAX_IO) {
            snprintf(err->msg, sizeof err->msg, "%s: more than %d %s files", set_dir, QH_MAX_IO,
                     stem);
            free(path);
            return -1;
        }
        int rc = qh_read_tensor_file(path, &out[i], err);
        free(path);
        if (rc != 0)
            return -1;
        (*count)++;
    }
    return 0;
}

/* The index of STEM_N.pb in `entry` (N spelled without leading zeros), -2 for another
 * spelling of a STEM_*.pb name (input_01.pb, input_x.pb), -1 when `entry` is not one. */
static long numbered_index(const char *entry, const char *stem)
{
    size_t ls = strlen(stem), le = strlen(entry);
    if (le < ls + 4 || strncmp(entry, stem, ls) != 0 || entry[ls] != '_' ||
        strcmp(entry + le - 3, ".pb") != 0)
        return -1;
    const char *d = entry + ls + 1, *e = entry + le - 3;
    if (d == e || e - d > 6 || (d[0] == '0' && e - d > 1))
        return -2;
    long n = 0;
    for (; d < e; d++) {
        if (*d < '0' || *d > '9')
            return -2;
        n = n * 10 + (*d - '0');
    }
    return n;
}

/* After read_numbered stopped at the first gap: an input_N.pb or output_N.pb beyond it (or
 * spelled another way) would silently not be part of the call, so it is an error. */
static int check_strays(const char *set_dir, int32_t n_in, int32_t n_out, qh_error *err)
{
    struct dirent **ents = NULL;
    int n = scandir(set_dir, &ents, NULL, alphasort);
    if (n < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot read directory: %s", set_dir,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *e = ents[i]->d_name;
        for (int k = 0; k < 2 && rc == 0; k++) {
            const char *stem = k ? "output" : "input";
            int32_t have = k ? n_out : n_in;
            long idx = numbered_index(e, stem);
            if (idx == -2) {
                snprintf(err->msg, sizeof err->msg,
                         "%s/%s: not a %s file name (%s_N.pb, N without leading zeros)",
                         set_dir, e, stem, stem);
                rc = -1;
            } else if (idx >= have) {
                snprintf(err->msg, sizeof err->msg,
                         "%s/%s: stray file after a gap: %s_%d.pb is missing (files are "
                         "numbered from 0 without gaps)",
                         set_dir, e, stem, have);
                rc = -1;
            }
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

/* The message for a ref that discovery could not make into a case. */
static void problem_message(const qh_case_ref *ref, qh_error *err)
{
    /* A path too long to read may be too long for the message too: keep its end, which
     * names the entry. */
    size_t len = strlen(ref->dir);
    const char *cut = len > 300 ? "..." : "";
    const char *path = len > 300 ? ref->dir + len - 300 : ref->dir;
    switch (ref->problem) {
    case QH_REF_TOO_DEEP:
        snprintf(err->msg, sizeof err->msg,
                 "%s%s: not searched: directories nest deeper than %d levels", cut, path,
                 QH_MAX_DEPTH);
        break;
    case QH_REF_UNREADABLE:
        snprintf(err->msg, sizeof err->msg, "%s%s: cannot read directory: %s", cut, path,
                 strerror(ref->problem_errno));
        break;
    case QH_REF_SET_NAME:
        snprintf(err->msg, sizeof err->msg,
                 "%s%s: not a data set name: test_data_set_N takes N in plain decimal, "
                 "without leading zeros, at most 6 digits",
                 cut, path);
        break;
    default:
        snprintf(err->msg, sizeof err->msg, "%s%s: a data set that is not a directory", cut,
                 path);
        break;
    }
}

/* The sidecar's profile must be one the reference implements; the check lives here, not in
 * meta.c, because the sidecar reader does not depend on the reference. */
static int check_profile(const char *meta_path, const qh_meta *m, qh_error *err)
{
    qmm_profile p;
    if (qmm_profile_from_name(m->profile, &p))
        return 0;
    char why[512], shown[80];
    qmm_profile_why_not(m->profile, why, sizeof why);
    qh_clean_into(shown, sizeof shown, m->profile, strlen(m->profile), 64);
    snprintf(err->msg, sizeof err->msg, "%s: profile: unknown profile '%s' (%s)", meta_path,
             shown, why);
    return -1;
}

int qh_case_load(const qh_case_ref *ref, qh_case *c, qh_error *err)
{
    memset(c, 0, sizeof *c);
    qh_meta_init(&c->meta);
    char *model_path = qh_join(ref->dir, "model.onnx");
    char *meta_path = qh_join(ref->dir, "qmm.meta");
    int rc = -1;
    if (!model_path || !meta_path)
        goto done;
    if (ref->problem != QH_REF_OK) {
        problem_message(ref, err);
        goto done;
    }
    if (qh_read_model_file(model_path, &c->model, err) != 0)
        goto done;
    if (qh_meta_read_file(meta_path, &c->meta, err) != 0 ||
        check_profile(meta_path, &c->meta, err) != 0)
        goto done;
    if (ref->data_set < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: no test_data_set_N directory", ref->dir);
        goto done;
    }
    char set[64];
    snprintf(set, sizeof set, "test_data_set_%d", ref->data_set);
    char *set_dir = qh_join(ref->dir, set);
    if (!set_dir)
        goto done;
    int r1 = read_numbered(set_dir, "input", c->inputs, &c->n_inputs, err);
    int r2 = r1 == 0 ? read_numbered(set_dir, "output", c->outputs, &c->n_outputs, err) : -1;
    int r3 = r2 == 0 ? check_strays(set_dir, c->n_inputs, c->n_outputs, err) : -1;
    free(set_dir);
    if (r1 != 0 || r2 != 0 || r3 != 0)
        goto done;

    /* input_i.pb holds the i-th present node input; omitted optional inputs ("") get none. */
    const qmm_tensor *in[QH_MAX_IO] = {0};
    int32_t next = 0;
    for (int32_t i = 0; i < c->model.n_inputs; i++) {
        if (c->model.inputs[i][0] == '\0')
            continue;
        if (next >= c->n_inputs) {
            snprintf(err->msg, sizeof err->msg,
                     "%s/test_data_set_%d: node input %d (%s) has no input_%d.pb", ref->dir,
                     ref->data_set, i, c->model.inputs[i], next);
            goto done;
        }
        in[i] = &c->inputs[next++].t;
    }
    if (next != c->n_inputs) {
        snprintf(err->msg, sizeof err->msg,
                 "%s/test_data_set_%d: %d input files for %d node inputs", ref->dir,
                 ref->data_set, c->n_inputs, next);
        goto done;
    }
    c->opset = qh_model_opset(&c->model, c->model.domain);
    if (qh_call_build_node(c->model.op_type, c->model.domain, c->opset, in, c->model.n_inputs,
                           c->model.attrs, c->model.n_attrs, &c->call, err) != 0) {
        char tmp[QH_ERROR_MAX];
        snprintf(tmp, sizeof tmp, "%s: %s", model_path, err->msg);
        memcpy(err->msg, tmp, sizeof tmp);
        goto done;
    }

    /* y's shape follows from a and b; when they are invalid the case still loads, and the
     * reference's verdict (INVALID_ARGUMENT) is what the backend is judged against. */
    qmm_status st;
    qmm_tensor *y = qh_call_output(&c->call);
    if (qmm_call_desc(&c->call)->y_shape(&c->call, &y->rank, y->dims, &st) == QMM_OK)
        c->y_shape_known = 1;
    rc = 0;
done:
    free(model_path);
    free(meta_path);
    if (rc != 0)
        qh_case_free(c);
    return rc;
}

void qh_case_free(qh_case *c)
{
    for (int32_t i = 0; i < c->n_inputs; i++)
        qh_tensor_free(&c->inputs[i]);
    for (int32_t i = 0; i < c->n_outputs; i++)
        qh_tensor_free(&c->outputs[i]);
    c->n_inputs = c->n_outputs = 0;
}
