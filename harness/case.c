/* harness/case.c — case discovery and loading. */
#include "harness/case.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int list_push(qh_case_list *l, const char *dir, const char *name, int data_set)
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
    r->dir = qh_strdup(dir);
    r->name = qh_strdup(name);
    r->data_set = data_set;
    if (!r->dir || !r->name) {
        free(r->dir);
        free(r->name);
        return -1;
    }
    l->count++;
    return 0;
}

/* test_data_set_N with N a plain decimal number; anything else is not a data set. */
static int data_set_number(const char *entry)
{
    static const char prefix[] = "test_data_set_";
    if (strncmp(entry, prefix, sizeof prefix - 1) != 0)
        return -1;
    const char *p = entry + sizeof prefix - 1;
    if (*p == '\0' || strlen(p) > 6)
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

static int add_case_dir(const char *dir, const char *name, qh_case_list *l, qh_error *err)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot list: %s", dir, strerror(errno));
        return -1;
    }
    int *sets = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int nsets = 0;
    for (int i = 0; i < n; i++) {
        int ds = data_set_number(ents[i]->d_name);
        if (ds >= 0 && sets) {
            char *p = qh_join(dir, ents[i]->d_name);
            if (p && is_dir(p))
                sets[nsets++] = ds;
            free(p);
        }
        free(ents[i]);
    }
    free(ents);
    if (!sets) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", dir);
        return -1;
    }
    qsort(sets, (size_t)nsets, sizeof *sets, cmp_int);
    int rc = 0;
    if (nsets == 0) {
        rc = list_push(l, dir, name, -1); /* loads as ERROR: the case names its problem */
    } else {
        for (int i = 0; i < nsets && rc == 0; i++) {
            char nm[4096];
            if (nsets == 1 && sets[i] == 0)
                snprintf(nm, sizeof nm, "%s", name);
            else
                snprintf(nm, sizeof nm, "%s@%d", name, sets[i]);
            rc = list_push(l, dir, nm, sets[i]);
        }
    }
    free(sets);
    if (rc != 0)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", dir);
    return rc;
}

static int walk(const char *dir, const char *name, int depth, qh_case_list *l, qh_error *err)
{
    char *model = qh_join(dir, "model.onnx");
    if (!model)
        return -1;
    int is_case = is_file(model);
    free(model);
    if (is_case)
        return add_case_dir(dir, name, l, err);
    if (depth >= QH_MAX_DEPTH)
        return 0; /* a symlink loop or an absurd tree: stop descending rather than recurse */

    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot read directory: %s", dir,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *e = ents[i]->d_name;
        if (rc == 0 && e[0] != '.') {
            char *sub = qh_join(dir, e);
            char *subname = name[0] ? qh_join(name, e) : qh_strdup(e);
            if (!sub || !subname) {
                snprintf(err->msg, sizeof err->msg, "%s: out of memory", dir);
                rc = -1;
            } else if (is_dir(sub)) {
                rc = walk(sub, subname, depth + 1, l, err);
            }
            free(sub);
            free(subname);
        }
        free(ents[i]);
    }
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
    int is_case = is_file(model);
    free(model);
    if (is_case) {
        /* A case directory given directly is named by its last path component. */
        size_t len = strlen(root);
        while (len > 1 && root[len - 1] == '/')
            len--;
        size_t start = len;
        while (start > 0 && root[start - 1] != '/')
            start--;
        char name[4096];
        snprintf(name, sizeof name, "%.*s", (int)(len - start), root + start);
        return add_case_dir(root, name, list, err);
    }
    return walk(root, "", 0, list, err);
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
    switch (call->op) {
    case QMM_OP_MATMULINTEGER: return &call->u.matmulinteger.y;
    case QMM_OP_QLINEARMATMUL: return &call->u.qlinearmatmul.y;
    case QMM_OP_QORDEREDMATMUL: return &call->u.qorderedmatmul.y;
    case QMM_OP_NONE: break;
    }
    return NULL;
}

static int need(const qmm_tensor *const *in, int32_t n, int32_t i, const char *op,
                const char *what, qh_error *err)
{
    if (i < n && in[i] && in[i]->dtype != QMM_DTYPE_UNDEFINED)
        return 0;
    snprintf(err->msg, sizeof err->msg, "%s: required input %d (%s) is missing", op, i, what);
    return -1;
}

static void take(qmm_tensor *dst, const qmm_tensor *const *in, int32_t n, int32_t i)
{
    memset(dst, 0, sizeof *dst);
    if (i < n && in[i])
        *dst = *in[i];
}

/* QOrderedMatMul's order_A, order_B, order_Y: required INT attributes. Their values pass
 * through unchecked (within int32), so that the reference's verdict on a bad order is
 * INVALID_ARGUMENT like any other bad input; a missing, mistyped or unknown attribute makes
 * the model itself malformed. */
static int qordered_attrs(const qh_attr *attrs, int32_t n_attrs, qmm_qorderedmatmul *c,
                          qh_error *err)
{
    static const char *names[3] = {"order_A", "order_B", "order_Y"};
    int32_t *dst[3] = {&c->order_a, &c->order_b, &c->order_y};
    int seen[3] = {0, 0, 0};
    for (int32_t i = 0; i < n_attrs; i++) {
        const qh_attr *a = &attrs[i];
        int which = -1;
        for (int w = 0; w < 3; w++)
            if (strcmp(a->name, names[w]) == 0)
                which = w;
        if (which < 0) {
            snprintf(err->msg, sizeof err->msg,
                     "QOrderedMatMul: unknown attribute '%s' (it has order_A, order_B, order_Y)",
                     a->name);
            return -1;
        }
        if (a->type != QH_ATTR_INT || a->i < INT32_MIN || a->i > INT32_MAX) {
            snprintf(err->msg, sizeof err->msg,
                     "QOrderedMatMul: attribute %s must be an INT (a cublasLt order 0..4)",
                     a->name);
            return -1;
        }
        *dst[which] = (int32_t)a->i;
        seen[which] = 1;
    }
    for (int w = 0; w < 3; w++)
        if (!seen[w]) {
            snprintf(err->msg, sizeof err->msg,
                     "QOrderedMatMul: required attribute %s is missing", names[w]);
            return -1;
        }
    return 0;
}

int qh_call_build(const char *op_type, const char *domain, int64_t opset,
                  const qmm_tensor *const *in, int32_t n, qmm_call *call, qh_error *err)
{
    return qh_call_build_node(op_type, domain, opset, in, n, NULL, 0, call, err);
}

int qh_call_build_node(const char *op_type, const char *domain, int64_t opset,
                       const qmm_tensor *const *in, int32_t n, const qh_attr *attrs,
                       int32_t n_attrs, qmm_call *call, qh_error *err)
{
    memset(call, 0, sizeof *call);
    int onnx_domain = domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
    if (onnx_domain && strcmp(op_type, "MatMulInteger") == 0) {
        if (n > 4) {
            snprintf(err->msg, sizeof err->msg, "MatMulInteger: %d inputs, at most 4", n);
            return -1;
        }
        if (need(in, n, 0, op_type, "A", err) || need(in, n, 1, op_type, "B", err))
            return -1;
        qmm_matmulinteger *c = &call->u.matmulinteger;
        call->op = QMM_OP_MATMULINTEGER;
        take(&c->a, in, n, 0);
        take(&c->b, in, n, 1);
        take(&c->a_zero_point, in, n, 2);
        take(&c->b_zero_point, in, n, 3);
        c->y.dtype = QMM_DTYPE_INT32;
        return 0;
    }
    if (onnx_domain && strcmp(op_type, "QLinearMatMul") == 0) {
        static const char *names[8] = {"a",      "a_scale",      "a_zero_point", "b",
                                       "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};
        if (n != 8) {
            snprintf(err->msg, sizeof err->msg, "QLinearMatMul: %d inputs, expected 8", n);
            return -1;
        }
        for (int32_t i = 0; i < 8; i++)
            if (need(in, n, i, op_type, names[i], err))
                return -1;
        qmm_qlinearmatmul *c = &call->u.qlinearmatmul;
        call->op = QMM_OP_QLINEARMATMUL;
        take(&c->a, in, n, 0);
        take(&c->a_scale, in, n, 1);
        take(&c->a_zero_point, in, n, 2);
        take(&c->b, in, n, 3);
        take(&c->b_scale, in, n, 4);
        take(&c->b_zero_point, in, n, 5);
        take(&c->y_scale, in, n, 6);
        take(&c->y_zero_point, in, n, 7);
        c->y.dtype = c->y_zero_point.dtype;
        c->opset = (int32_t)opset;
        return 0;
    }
    if (strcmp(domain, "com.microsoft") == 0 && strcmp(op_type, "QOrderedMatMul") == 0) {
        /* ORT's input order: A, scale_A, B, scale_B, scale_Y, bias?, C?, scale_C? */
        static const char *names[5] = {"A", "scale_A", "B", "scale_B", "scale_Y"};
        if (opset < 1) {
            snprintf(err->msg, sizeof err->msg,
                     "QOrderedMatMul: the model imports no com.microsoft opset (version 1)");
            return -1;
        }
        if (n < 5 || n > 8) {
            snprintf(err->msg, sizeof err->msg, "QOrderedMatMul: %d inputs, expected 5 to 8", n);
            return -1;
        }
        for (int32_t i = 0; i < 5; i++)
            if (need(in, n, i, op_type, names[i], err))
                return -1;
        qmm_qorderedmatmul *c = &call->u.qorderedmatmul;
        if (qordered_attrs(attrs, n_attrs, c, err) != 0)
            return -1;
        call->op = QMM_OP_QORDEREDMATMUL;
        take(&c->a, in, n, 0);
        take(&c->scale_a, in, n, 1);
        take(&c->b, in, n, 2);
        take(&c->scale_b, in, n, 3);
        take(&c->scale_y, in, n, 4);
        take(&c->bias, in, n, 5);
        take(&c->c, in, n, 6);
        take(&c->scale_c, in, n, 7);
        c->y.dtype = QMM_DTYPE_INT8;
        return 0;
    }
    snprintf(err->msg, sizeof err->msg, "unknown operator %s%s%s", domain, domain[0] ? "." : "",
             op_type);
    return -1;
}

/* Reads name_0.pb, name_1.pb, ... until the first missing index. */
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
        if (!is_file(path)) {
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

int qh_case_load(const qh_case_ref *ref, qh_case *c, qh_error *err)
{
    memset(c, 0, sizeof *c);
    qh_meta_init(&c->meta);
    char *model_path = qh_join(ref->dir, "model.onnx");
    char *meta_path = qh_join(ref->dir, "qmm.meta");
    int rc = -1;
    if (!model_path || !meta_path)
        goto done;
    if (qh_read_model_file(model_path, &c->model, err) != 0)
        goto done;
    if (qh_meta_read_file(meta_path, &c->meta, err) != 0)
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
    free(set_dir);
    if (r1 != 0 || r2 != 0)
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
    qmm_geometry g;
    qmm_status st;
    const qmm_tensor *a = NULL, *b = NULL;
    if (c->call.op == QMM_OP_MATMULINTEGER) {
        a = &c->call.u.matmulinteger.a;
        b = &c->call.u.matmulinteger.b;
    } else if (c->call.op == QMM_OP_QLINEARMATMUL) {
        a = &c->call.u.qlinearmatmul.a;
        b = &c->call.u.qlinearmatmul.b;
    }
    qmm_tensor *y = qh_call_output(&c->call);
    if (a && b && qmm_matmul_geometry(a, b, &g, &st) == QMM_OK) {
        y->rank = g.y_rank;
        memcpy(y->dims, g.y_dims, sizeof y->dims);
        c->y_shape_known = 1;
    }
    if (c->call.op == QMM_OP_QORDEREDMATMUL &&
        qmm_qordered_y_shape(&c->call.u.qorderedmatmul.a, &c->call.u.qorderedmatmul.b, &y->rank,
                             y->dims, &st) == QMM_OK)
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
