/* harness/io/casedir.c — see casedir.h. */
#include "harness/io/casedir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "harness/base/clean.h"

/* One existing component of a path being created: a directory, or (not the last) a link to
 * one. */
static int existing_dir(const char *path, int last, qh_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        if (last) {
            snprintf(err->msg, sizeof err->msg,
                     "%s: a symbolic link (refused: a case is written where it is named)", path);
            return -1;
        }
        if (stat(path, &st) != 0) {
            snprintf(err->msg, sizeof err->msg, "%s: a symbolic link that leads nowhere: %s",
                     path, strerror(errno));
            return -1;
        }
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err->msg, sizeof err->msg, "%s: exists and is not a directory (%s)", path,
                 qh_file_kind(st.st_mode));
        return -1;
    }
    return 0;
}

int qh_mkdirs(const char *path, qh_error *err)
{
    char buf[4096];
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--; /* "out/" names the directory out */
    if (len == 0 || len >= sizeof buf) {
        snprintf(err->msg, sizeof err->msg, "%s: path too long", path);
        return -1;
    }
    memcpy(buf, path, len);
    buf[len] = '\0';
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        if (buf[i - 1] == '/')
            continue; /* "a//b" */
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0) {
            if (errno != EEXIST) {
                snprintf(err->msg, sizeof err->msg, "%s: cannot create: %s", buf,
                         strerror(errno));
                return -1;
            }
            if (existing_dir(buf, i == len, err) != 0)
                return -1;
        }
        buf[i] = c;
    }
    return 0;
}

void qh_value_info_of(qh_value_info *v, const char *name, const qmm_tensor *t, int shape_known)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->elem_type = t->dtype;
    v->rank = shape_known ? t->rank : -1;
    for (int32_t i = 0; shape_known && i < t->rank; i++)
        v->dims[i] = t->dims[i];
}

/* One meta text field made a clean line in place (harness/base/clean.h), so a value holding a
 * newline or bytes that are not UTF-8 cannot break the qmm.meta it is written to. */
static void clean_field(char *field, size_t size)
{
    char tmp[QH_META_TEXT_MAX];
    size_t n = strnlen(field, size);
    qh_clean_into(tmp, size < sizeof tmp ? size : sizeof tmp, field, n, 0);
    memcpy(field, tmp, strlen(tmp) + 1);
}

/* Every free-text value of a meta, cleaned: the written file always loads back. */
static void meta_clean(qh_meta *m)
{
    for (int32_t i = 0; i < m->n_tags && i < QH_META_MAX_TAGS; i++) {
        clean_field(m->tags[i], sizeof m->tags[i]);
        for (char *c = m->tags[i]; *c; c++)
            if (*c == ',') /* a comma would split the tag in two */
                *c = ';';
    }
    clean_field(m->profile, sizeof m->profile);
    clean_field(m->provenance, sizeof m->provenance);
    clean_field(m->description, sizeof m->description);
    clean_field(m->onnx_version, sizeof m->onnx_version);
}

/* Removes an earlier case's file at path; 0 when it is gone or was never there. */
static int remove_stale(const char *path, qh_error *err)
{
    if (unlink(path) == 0 || errno == ENOENT)
        return 0;
    snprintf(err->msg, sizeof err->msg, "%s: cannot remove the earlier case's file: %s", path,
             strerror(errno));
    return -1;
}

static int write_meta(const char *dir, const qh_meta *meta, qh_error *err)
{
    qh_meta clean = *meta;
    meta_clean(&clean);
    char text[4096], path[4096];
    int n = qh_meta_format(&clean, text, sizeof text);
    if (n < 0 || (size_t)n >= sizeof text) {
        snprintf(err->msg, sizeof err->msg, "%s/qmm.meta: too long", dir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/qmm.meta", dir);
    return qh_write_file_atomic(path, text, (size_t)n, err);
}

int qh_casedir_write(const char *dir, const qh_casedir *c, qh_error *err)
{
    char set[4096], path[4200];
    int k = snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    if (k < 0 || (size_t)k >= sizeof set) {
        snprintf(err->msg, sizeof err->msg, "%s: path too long", dir);
        return -1;
    }
    /* the case directory itself must not be a link: then the data set under it */
    if (qh_mkdirs(dir, err) != 0 || qh_mkdirs(set, err) != 0)
        return -1;
    /* A folder is a case where its model.onnx is: an earlier case's model goes first and the
     * new one last, after the data and qmm.meta, so a write cut short (a signal, a full disk)
     * leaves a folder that is no case, never one judged from parts of two cases or without
     * its qmm.meta. */
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (remove_stale(path, err) != 0)
        return -1;
    qh_model *m = c->model;
    int32_t n = c->n_inputs < QH_MAX_IO ? c->n_inputs : QH_MAX_IO;
    int32_t last = -1;
    for (int32_t i = 0; i < n; i++)
        if (qmm_tensor_present(c->inputs[i]))
            last = i;
    m->n_inputs = 0;
    m->n_graph_inputs = 0;
    int32_t file = 0;
    for (int32_t i = 0; i <= last; i++) {
        const qmm_tensor *t = c->inputs[i];
        const char *name = c->input_names[i];
        if (!qmm_tensor_present(t)) {
            m->inputs[m->n_inputs++][0] = '\0'; /* an omitted optional input */
            continue;
        }
        snprintf(m->inputs[m->n_inputs++], QH_NAME_MAX, "%s", name);
        qh_value_info_of(&m->graph_inputs[m->n_graph_inputs++], name, t, 1);
        snprintf(path, sizeof path, "%s/input_%d.pb", set, file++);
        if (qh_write_tensor_file(path, t, name, err) != 0)
            return -1;
    }
    snprintf(path, sizeof path, "%s/output_0.pb", set);
    if (c->output ? qh_write_tensor_file(path, c->output, m->outputs[0], err) != 0
                  : remove_stale(path, err) != 0) /* an earlier case's answer is not this one's */
        return -1;
    if (c->meta && write_meta(dir, c->meta, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    return qh_write_model_file(path, m, err);
}
