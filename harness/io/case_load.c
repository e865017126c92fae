/* harness/io/case_load.c — loading one data set of a case directory (case.h): the model, the
 * sidecar, input_N.pb and output_N.pb numbered from 0 without gaps, and the call they make
 * (node_call.c). */
#define _DEFAULT_SOURCE /* realpath */
#include "harness/io/case.h"
#include "harness/io/onnx_proto.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/base/numparse.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

/* Reads name_0.pb, name_1.pb, ... until the first index with nothing under its name. What is
 * there but is no regular file (a directory, a FIFO, a dangling symlink) is read, so that the
 * error says so instead of "has no input_0.pb". */
static int read_numbered(const char *set_dir, const char *stem, qh_tensor *out, int32_t *count,
                         uint64_t *left, qh_error *err)
{
    *count = 0;
    for (int32_t i = 0; i < QH_MAX_IO + 1; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s_%d.pb", stem, i);
        char *path = qh_path_join(set_dir, file);
        if (!path)
            return -1;
        struct stat st;
        if (lstat(path, &st) != 0) {
            int e = errno;
            if (e != ENOENT) { /* (EACCES read as "absent" said the files had a gap) */
                snprintf(err->msg, sizeof err->msg, "%s: cannot examine: %s", path, strerror(e));
                free(path);
                return -1;
            }
            free(path);
            return 0;
        }
        if (i == QH_MAX_IO) {
            snprintf(err->msg, sizeof err->msg, "%s: more than %d %s files", set_dir, QH_MAX_IO,
                     stem);
            free(path);
            return -1;
        }
        int rc = qh_read_tensor_file_within(path, &out[i], left, err);
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

uint64_t qh_case_memory(void)
{
    const char *env = getenv("QH_CASE_MEMORY"); /* for tests and small machines */
    uint64_t v;
    if (env && *env)
        return qh_parse_bytes(env, &v) == 0 && v > 0 ? v : 0; /* 0: not a size, said at load */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 0;
    return half > ((uint64_t)1 << 30) ? half : (uint64_t)1 << 30;
}

/* A load error begins with the case directory (or a path under it): a long one is cut to its
 * last CASE_DIR_SHOWN characters after "...", so that the case line, which is cut at
 * QH_CLEAN_LINE_MAX, still shows the file, the field and what is wrong after it. */
enum { CASE_DIR_LONG = 200, CASE_DIR_SHOWN = 120 };
/* The end of s from byte `from` on, moved forward to a character's first byte: a cut inside
 * a UTF-8 character showed as U+FFFD after the "...". */
static const char *tail_at_char(const char *s, size_t from)
{
    const char *p = s + from;
    while ((*p & 0xc0) == 0x80)
        p++;
    return p;
}

static void shorten_case_dir(qh_error *err, const char *dir)
{
    size_t len = strlen(dir);
    if (len <= CASE_DIR_LONG || strncmp(err->msg, dir, len) != 0)
        return;
    char tmp[QH_ERROR_MAX];
    snprintf(tmp, sizeof tmp, "...%s%s", tail_at_char(dir, len - CASE_DIR_SHOWN), err->msg + len);
    memcpy(err->msg, tmp, sizeof tmp);
}

/* The message for a ref that discovery could not make into a case. */
static void problem_message(const qh_case_ref *ref, qh_error *err)
{
    /* A path too long to read may be too long for the message too: keep its end, which
     * names the entry. */
    size_t len = strlen(ref->dir);
    const char *cut = len > 300 ? "..." : "";
    const char *path = len > 300 ? tail_at_char(ref->dir, len - 300) : ref->dir;
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
    case QH_REF_SET_DIR: { /* name the case: the directory above, as it really is */
        char *real = realpath(ref->dir, NULL);
        char *slash = real ? strrchr(real, '/') : NULL;
        if (slash)
            *(slash == real ? slash + 1 : slash) = '\0';
        size_t rlen = real ? strlen(real) : 0;
        snprintf(err->msg, sizeof err->msg,
                 "%s%s: a data set directory, not a case: its case is the directory above "
                 "(qmmcheck repro --data-set %d %s%s)", cut, path, ref->data_set,
                 rlen > 300 ? "..." : "",
                 real ? tail_at_char(real, rlen > 300 ? rlen - 300 : 0) : "..");
        free(real);
        break;
    }
    case QH_REF_NAME_AT:
        snprintf(err->msg, sizeof err->msg,
                 "%s%s: a case directory whose name ends in @N, which is how a case's data set "
                 "N is named (CASE@N): two cases could share a name, and an --xfail entry; "
                 "rename it", cut, path);
        break;
    case QH_REF_SET_SAME:
        snprintf(err->msg, sizeof err->msg,
                 "%s%s: the same directory as test_data_set_%d of its case (a symbolic link): "
                 "judged once, as that data set", cut, path, ref->data_set);
        break;
    case QH_REF_LINK_UP:
        snprintf(err->msg, sizeof err->msg,
                 "%s%s: not searched: a symbolic link to a directory that holds the tree "
                 "(searching it would search all of that directory)", cut, path);
        break;
    default:
        snprintf(err->msg, sizeof err->msg, "%s%s: a data set that is not a directory", cut,
                 path);
        break;
    }
}

/* A name is one value: node inputs that share a name read the same tensor, so their files must
 * hold it (MatMulInteger(A, A) with two different files was judged as A x B, and a stored
 * A x A MISTRUSTED); and the node's output is none of its inputs. */
static int one_value_one_tensor(const qh_case *c, const qmm_tensor *const *in,
                                const qh_case_ref *ref, const char *model_path, qh_error *err)
{
    int32_t file[QH_MAX_IO] = {0};
    for (int32_t i = 0, k = 0; i < c->model.n_inputs; i++)
        file[i] = c->model.inputs[i][0] ? k++ : -1;
    for (int32_t i = 0; i < c->model.n_inputs; i++) {
        if (file[i] < 0)
            continue;
        if (strcmp(c->model.inputs[i], c->model.outputs[0]) == 0) {
            char shown[160];
            qh_clean_into(shown, sizeof shown, c->model.outputs[0], strlen(c->model.outputs[0]),
                          128);
            return qh_fail(err, "%s: NodeProto.output: '%s' is also the node's input %d",
                           model_path, shown, i);
        }
        for (int32_t j = 0; j < i; j++)
            if (file[j] >= 0 && strcmp(c->model.inputs[i], c->model.inputs[j]) == 0 &&
                !qh_tensor_same(in[i], in[j])) {
                char shown[160];
                qh_clean_into(shown, sizeof shown, c->model.inputs[i], strlen(c->model.inputs[i]),
                              128);
                return qh_fail(err,
                               "%s/test_data_set_%d: node inputs %d and %d are both '%s', one "
                               "value, but input_%d.pb and input_%d.pb hold different tensors",
                               ref->dir, ref->data_set, j, i, shown, file[j], file[i]);
            }
    }
    return 0;
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

_Static_assert(QH_MAX_IO <= QH_CALL_MAX_BUFS, "a case's call owns every input buffer");

/* A tensor file against what the graph declares for its name (`what`: "input", "output"),
 * where the graph declares it: its type, and every dimension given as a number. 0, or -1 with
 * err naming the model, the declaration and the file. */
static int check_declared(const qh_value_info *decl, int32_t n_decl, const char *name,
                          const char *what, const qmm_tensor *t, const char *model_path,
                          const char *file, qh_error *err)
{
    int found = 0;
    for (int32_t i = 0; i < n_decl; i++)
        found |= strcmp(decl[i].name, name) == 0;
    if (n_decl > 0 && !found) { /* a graph that declares its values declares this one */
        snprintf(err->msg, sizeof err->msg, "%s: the graph's %ss do not include the node's %s %s "
                 "(its first: %s)", model_path, what, what, name, decl[0].name);
        return -1;
    }
    for (int32_t i = 0; i < n_decl; i++) {
        const qh_value_info *v = &decl[i];
        if (strcmp(v->name, name) != 0)
            continue;
        if (v->elem_type != 0 && v->elem_type != t->dtype) {
            snprintf(err->msg, sizeof err->msg, "%s: graph %s %s is declared %s, %s holds %s",
                     model_path, what, name, qh_onnx_dtype_name(v->elem_type), file,
                     qh_onnx_dtype_name(t->dtype));
            return -1;
        }
        int bad = v->rank >= 0 && v->rank != t->rank;
        for (int32_t d = 0; !bad && v->rank >= 0 && d < v->rank; d++)
            bad = v->dims[d] >= 0 && v->dims[d] != t->dims[d];
        if (bad) {
            char want[160] = "", have[160] = "";
            size_t lw = 0, lh = 0;
            for (int32_t d = 0; d < v->rank && lw < sizeof want; d++)
                lw += (size_t)(v->dims[d] >= 0
                                   ? snprintf(want + lw, sizeof want - lw, "%s%lld", d ? "," : "",
                                              (long long)v->dims[d])
                                   : snprintf(want + lw, sizeof want - lw, "%s?", d ? "," : ""));
            for (int32_t d = 0; d < t->rank && lh < sizeof have; d++)
                lh += (size_t)snprintf(have + lh, sizeof have - lh, "%s%lld", d ? "," : "",
                                       (long long)t->dims[d]);
            snprintf(err->msg, sizeof err->msg, "%s: graph %s %s is declared [%s], %s holds [%s]",
                     model_path, what, name, want, file, have);
            return -1;
        }
    }
    return 0;
}

int qh_case_load(const qh_case_ref *ref, qh_case *c, qh_error *err)
{
    memset(c, 0, sizeof *c);
    qh_meta_init(&c->meta);
    char *model_path = qh_path_join(ref->dir, "model.onnx");
    char *meta_path = qh_path_join(ref->dir, "qmm.meta");
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
    char *set_dir = qh_path_join(ref->dir, set);
    if (!set_dir)
        goto done;
    uint64_t left = qh_case_memory();
    if (left == 0) {
        snprintf(err->msg, sizeof err->msg, "QH_CASE_MEMORY=%.64s: not a memory size above 0 "
                 "(bytes, or with K, M, G, T: 512M), so no case is loaded",
                 getenv("QH_CASE_MEMORY"));
        free(set_dir);
        goto done;
    }
    int r1 = read_numbered(set_dir, "input", c->inputs, &c->n_inputs, &left, err);
    int r2 = r1 == 0 ? read_numbered(set_dir, "output", c->outputs, &c->n_outputs, &left, err)
                     : -1;
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
    /* every operator here has one output: a node with none, two or an unnamed one is not a
     * case of it, and an output file past output_0.pb would be judged by no one */
    if (c->model.n_outputs != 1 || c->model.outputs[0][0] == '\0') {
        snprintf(err->msg, sizeof err->msg, "%s: the node has %d output%s%s (%s has one)",
                 model_path, c->model.n_outputs, c->model.n_outputs == 1 ? "" : "s",
                 c->model.n_outputs == 1 ? ", unnamed" : "", c->model.op_type);
        goto done;
    }
    if (c->n_outputs > 1) {
        snprintf(err->msg, sizeof err->msg,
                 "%s/test_data_set_%d: %d output files for the node's one output", ref->dir,
                 ref->data_set, c->n_outputs);
        goto done;
    }
    /* the files are what the graph says they are, where it says */
    for (int32_t i = 0, k = 0; i < c->model.n_inputs; i++) {
        if (c->model.inputs[i][0] == '\0')
            continue;
        char file[64];
        snprintf(file, sizeof file, "test_data_set_%d/input_%d.pb", ref->data_set, k);
        if (check_declared(c->model.graph_inputs, c->model.n_graph_inputs, c->model.inputs[i],
                           "input", in[i], model_path, file, err) != 0)
            goto done;
        k++;
    }
    if (one_value_one_tensor(c, in, ref, model_path, err) != 0)
        goto done;
    if (c->n_outputs == 1) {
        char file[64];
        snprintf(file, sizeof file, "test_data_set_%d/output_0.pb", ref->data_set);
        if (check_declared(c->model.graph_outputs, c->model.n_graph_outputs,
                           c->model.outputs[0], "output", &c->outputs[0].t, model_path, file,
                           err) != 0)
            goto done;
    }
    c->opset = qh_model_opset(&c->model, c->model.domain);
    if (qh_call_build_node(c->model.op_type, c->model.domain, c->opset, in, c->model.n_inputs,
                           c->model.attrs, c->model.n_attrs, &c->oc.call, err) != 0) {
        char tmp[QH_ERROR_MAX];
        snprintf(tmp, sizeof tmp, "%s: %s", model_path, err->msg);
        memcpy(err->msg, tmp, sizeof tmp);
        goto done;
    }

    /* y's shape follows from a and b; when they are invalid the case still loads, and the
     * reference's verdict (INVALID_ARGUMENT) is what the backend is judged against. */
    qmm_status st;
    qmm_tensor *y = qh_call_output(&c->oc.call);
    if (qmm_call_desc(&c->oc.call)->y_shape(&c->oc.call, &y->rank, y->dims, &st) == QMM_OK)
        c->oc.y_shape_known = 1;
    /* the inputs' buffers become the call's own (QH_MAX_IO of them at most) */
    for (int32_t i = 0; i < c->n_inputs && c->oc.n_bufs < QH_CALL_MAX_BUFS; i++)
        c->oc.bufs[c->oc.n_bufs++] = c->inputs[i].t.data;
    rc = 0;
done:
    free(model_path);
    free(meta_path);
    if (rc != 0) {
        qh_case_free(c);
        shorten_case_dir(err, ref->dir);
    }
    return rc;
}

void qh_case_free(qh_case *c)
{
    /* a loaded case's inputs are the call's (c->oc owns them); a failed load's, their own */
    for (int32_t i = c->oc.n_bufs ? c->n_inputs : 0; i < c->n_inputs; i++)
        qh_tensor_free(&c->inputs[i]);
    qh_owned_call_free(&c->oc);
    for (int32_t i = 0; i < c->n_outputs; i++)
        qh_tensor_free(&c->outputs[i]);
    c->n_inputs = c->n_outputs = 0;
}
