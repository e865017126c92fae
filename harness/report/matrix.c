/* harness/report/matrix.c — the CPU-class matrix of a run (matrix.h). */
#include "harness/report/matrix.h"

#include <stdlib.h>
#include <string.h>

#include "harness/base/clean.h"

static int str_cmp(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Rows of one matrix row: same backend, case directory, data set and name. */
static int same_row(const qh_result *x, const qh_result *y)
{
    return str_cmp(x->backend, y->backend) == 0 && str_cmp(x->path, y->path) == 0 &&
           x->data_set == y->data_set && str_cmp(x->name, y->name) == 0;
}

static int cmp_results(const void *a, const void *b)
{
    const qh_result *x = *(const qh_result *const *)a, *y = *(const qh_result *const *)b;
    int c = str_cmp(x->backend, y->backend);
    if (!c)
        c = str_cmp(x->path, y->path);
    if (!c)
        c = (x->data_set > y->data_set) - (x->data_set < y->data_set);
    if (!c)
        c = str_cmp(x->name, y->name);
    return c ? c : (x > y) - (x < y); /* stable: in run order */
}

/* Rows by backend, the backends in the order the run met them, then in run order. */
static int cmp_rows(const void *a, const void *b)
{
    const qh_matrix_row *x = a, *y = b;
    if (x->backend_rank != y->backend_rank)
        return (x->backend_rank > y->backend_rank) - (x->backend_rank < y->backend_rank);
    return (x->first > y->first) - (x->first < y->first);
}

static int class_index(qh_matrix *m, const char *cpu)
{
    for (int i = 0; i < m->n_classes; i++)
        if (strcmp(m->classes[i], cpu) == 0)
            return i;
    if (m->n_classes == QH_MATRIX_MAX_CLASSES)
        return -1;
    m->classes[m->n_classes] = cpu;
    return m->n_classes++;
}

int qh_matrix_build(const qh_result *r, size_t n, qh_matrix *m)
{
    memset(m, 0, sizeof *m);
    const qh_result **order = malloc(sizeof *order * (n ? n : 1));
    m->rows = calloc(n ? n : 1, sizeof *m->rows);
    if (!order || !m->rows) {
        free(order);
        free(m->rows);
        m->rows = NULL;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].cpu) {
            order[k++] = &r[i];
            class_index(m, r[i].cpu); /* the columns in the order the run met them */
        }
    qsort(order, k, sizeof *order, cmp_results);
    for (size_t i = 0; i < k; i++) {
        if (m->n_rows == 0 || !same_row(m->rows[m->n_rows - 1].first, order[i]))
            m->rows[m->n_rows++].first = order[i];
        int c = class_index(m, order[i]->cpu);
        qh_matrix_row *row = &m->rows[m->n_rows - 1];
        if (c >= 0 && !row->cell[c])
            row->cell[c] = order[i];
    }
    /* a backend's rows are together here (sorted by backend): each gets its first result */
    for (size_t i = 0, g = 0; i <= m->n_rows; i++) {
        if (i < m->n_rows && str_cmp(m->rows[i].first->backend, m->rows[g].first->backend) == 0)
            continue;
        const qh_result *first = m->rows[g].first;
        for (size_t j = g; j < i; j++)
            if (m->rows[j].first < first)
                first = m->rows[j].first;
        for (size_t j = g; j < i; j++)
            m->rows[j].backend_rank = first;
        g = i;
    }
    qsort(m->rows, m->n_rows, sizeof *m->rows, cmp_rows);
    free(order);
    return 0;
}

void qh_matrix_free(qh_matrix *m)
{
    free(m->rows);
    memset(m, 0, sizeof *m);
}

/* The status under class c, or "-" when the row was not judged under it. */
static const char *cell_name(const qh_matrix_row *row, int c)
{
    return row->cell[c] ? qh_case_status_name(row->cell[c]->status) : "-";
}

static int all_passed(const qh_matrix *m, const qh_matrix_row *row)
{
    for (int c = 0; c < m->n_classes; c++)
        if (!row->cell[c] || row->cell[c]->status != QH_PASSED)
            return 0;
    return 1;
}

#define NAME_WIDTH_MAX 48

void qh_matrix_print(const qh_matrix *m, int quiet, FILE *f)
{
    if (m->n_classes < 2)
        return;
    size_t width = 4, shown = 0;
    for (size_t i = 0; i < m->n_rows; i++) {
        size_t len = strlen(m->rows[i].first->name ? m->rows[i].first->name : "");
        if (len > width)
            width = len < NAME_WIDTH_MAX ? len : NAME_WIDTH_MAX;
    }
    fprintf(f, "MATRIX: %zu case%s x %d CPU classes (one column per class)%s\n", m->n_rows,
            m->n_rows == 1 ? "" : "s", m->n_classes,
            quiet ? "; rows PASSED under every class left out (--quiet)" : "");
    const char *backend = NULL;
    for (size_t i = 0; i < m->n_rows; i++) {
        const qh_matrix_row *row = &m->rows[i];
        if (quiet && all_passed(m, row))
            continue;
        if (!backend || str_cmp(backend, row->first->backend) != 0) {
            backend = row->first->backend;
            char *b = qh_clean_dup(backend ? backend : "", backend ? strlen(backend) : 0,
                                   QH_CLEAN_LINE_MAX);
            fprintf(f, "  backend %s\n    %-*s", b ? b : "", (int)width, "case");
            free(b);
            for (int c = 0; c < m->n_classes; c++)
                fprintf(f, c + 1 < m->n_classes ? "  %-11s" : "  %s", m->classes[c]);
            fputc('\n', f);
        }
        const char *name = row->first->name ? row->first->name : "";
        char *clean = qh_clean_dup(name, strlen(name), width);
        fprintf(f, "    %-*s", (int)width, clean ? clean : "");
        free(clean);
        for (int c = 0; c < m->n_classes; c++)
            fprintf(f, c + 1 < m->n_classes ? "  %-11s" : "  %s", cell_name(row, c));
        fputc('\n', f);
        shown++;
    }
    if (quiet && shown == 0)
        fprintf(f, "  every case PASSED under every class\n");
}

void qh_matrix_json(const qh_matrix *m, qh_sb *b)
{
    if (m->n_classes == 0)
        return;
    qh_sb_puts(b, "\"cpu_classes\": [");
    for (int c = 0; c < m->n_classes; c++) {
        qh_sb_puts(b, c ? ", " : "");
        qh_sb_json_quoted(b, m->classes[c]);
    }
    qh_sb_puts(b, "],\n  \"matrix\": [");
    for (size_t i = 0; i < m->n_rows; i++) {
        const qh_matrix_row *row = &m->rows[i];
        qh_sb_puts(b, i ? ",\n    {\"backend\": \"" : "\n    {\"backend\": \"");
        qh_sb_json(b, row->first->backend ? row->first->backend : "");
        qh_sb_puts(b, "\", \"name\": \"");
        qh_sb_json(b, row->first->name ? row->first->name : "");
        qh_sb_puts(b, "\", \"path\": \"");
        qh_sb_json(b, row->first->path ? row->first->path : "");
        qh_sb_printf(b, "\", \"data_set\": %d, \"status\": {", row->first->data_set);
        const char *sep = "";
        for (int c = 0; c < m->n_classes; c++) {
            if (!row->cell[c])
                continue;
            qh_sb_puts(b, sep);
            qh_sb_json_quoted(b, m->classes[c]);
            qh_sb_printf(b, ": \"%s\"", qh_case_status_key(row->cell[c]->status));
            sep = ", ";
        }
        qh_sb_puts(b, "}}");
    }
    qh_sb_puts(b, "\n  ]");
}
