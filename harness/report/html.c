/* harness/report/html.c — the HTML report (harness/report/html.h). */
#include "harness/report/html.h"

#include <stdlib.h>
#include <string.h>

#include "harness/base/version.h"

/* The colours a picture uses; tests/report_html.sh looks for them in a screenshot. */
#define COLOUR_MISMATCH "#cc0000"
#define COLOUR_ACCEPTED "#d9efd9"
/* A picture's longest side in pixels; the most rects (runs of wrong cells in a grid row) one
 * report draws, about 20 MB of SVG. */
#define PICTURE_PX 384
#define MAX_RUNS 262144

static const char *const style =
    "body{font:14px/1.4 sans-serif;margin:16px;color:#111;background:#fff}"
    "table{border-collapse:collapse;margin:6px 0 14px}"
    "td,th{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}"
    "th{background:#eee}.mono{font-family:monospace;white-space:pre-wrap;word-break:break-all}"
    ".st-failed,.st-crashed,.st-timeout,.st-error,.st-xpass{color:#a00;font-weight:bold}"
    ".st-passed{color:#070}.st-skipped,.st-xfail{color:#777}"
    ".picture{display:inline-block;margin:4px 12px 8px 0}svg{display:block}"
    ".case{border-top:1px solid #ccc;margin-top:12px;padding-top:4px}";

static void esc(qh_sb *b, const char *s)
{
    qh_sb_xml(b, s ? s : "");
}

static void head(qh_sb *b, const char *command, const qh_run_summary *sum)
{
    qh_sb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'\">\n<title>qmmcheck report</title>\n<style>");
    qh_sb_puts(b, style);
    qh_sb_puts(b, "</style></head>\n<body>\n<h1>qmmcheck " QH_VERSION " report</h1>\n"
                  "<p class=\"mono\">");
    esc(b, command);
    qh_sb_printf(b, "</p>\n<p>%.3f s", sum->seconds);
    if (sum->shard) {
        qh_sb_puts(b, ", shard ");
        esc(b, sum->shard);
    }
    if (sum->interrupted) {
        qh_sb_puts(b, ", interrupted by ");
        esc(b, sum->interrupted);
    }
    qh_sb_printf(b, "</p>\n<h2>Summary</h2>\n<table id=\"summary\"><tr><th>total</th><td>%lld"
                    "</td></tr>",
                 (long long)sum->total);
    for (int s = 0; s < QH_STATUS_COUNT; s++)
        if (sum->counts[s])
            qh_sb_printf(b, "<tr><th class=\"st-%s\">%s</th><td>%lld</td></tr>",
                         qh_case_status_key((qh_case_status)s),
                         qh_case_status_key((qh_case_status)s), (long long)sum->counts[s]);
    qh_sb_puts(b, "</table>\n");
}

static int has_picture(const qh_result *r)
{
    return r->marks && r->marks->bits && r->marks->grid_r > 0 && r->marks->grid_c > 0;
}

/* One suite's table: the rows i of suite `suite` (in run order), folded under a line of its
 * counts unless a row is bad (failed, crashed, timed out, an error). */
static void suite_table(qh_sb *b, const qh_result *r, size_t n, const char *suite,
                        const unsigned char *in_suite)
{
    int64_t counts[QH_STATUS_COUNT] = {0};
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (in_suite[i]) {
            counts[r[i].status < QH_STATUS_COUNT ? r[i].status : QH_ERROR]++;
            bad |= qh_case_status_is_bad(r[i].status);
        }
    qh_sb_printf(b, "<details class=\"suite\"%s><summary><b class=\"mono\">", bad ? " open" : "");
    esc(b, suite);
    qh_sb_puts(b, "</b>:");
    for (int s = 0; s < QH_STATUS_COUNT; s++)
        if (counts[s])
            qh_sb_printf(b, " <span class=\"st-%s\">%lld %s</span>",
                         qh_case_status_key((qh_case_status)s), (long long)counts[s],
                         qh_case_status_key((qh_case_status)s));
    qh_sb_puts(b, "</summary>\n<table><tr><th>#</th><th>case</th><th>backend</th>"
                  "<th>status</th><th>reason</th><th>summary</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        if (!in_suite[i])
            continue;
        const char *key = qh_case_status_key(r[i].status);
        qh_sb_printf(b, "<tr><td>%lld</td><td class=\"mono\">", (long long)r[i].number);
        if (has_picture(&r[i]))
            qh_sb_printf(b, "<a href=\"#case-%lld\">", (long long)r[i].number);
        esc(b, r[i].name);
        qh_sb_puts(b, has_picture(&r[i]) ? "</a>" : "");
        qh_sb_puts(b, "</td><td class=\"mono\">");
        esc(b, r[i].backend);
        qh_sb_printf(b, "</td><td class=\"st-%s\">%s</td><td>%s</td><td class=\"mono\">", key,
                     qh_case_status_name(r[i].status), qh_reason_name(r[i].reason));
        esc(b, r[i].summary);
        if (r[i].status != QH_PASSED && r[i].repro) {
            qh_sb_puts(b, "<br>__REPRO: ");
            esc(b, r[i].repro);
        }
        qh_sb_puts(b, "</td></tr>\n");
    }
    qh_sb_puts(b, "</table></details>\n");
}

/* The tables, one per suite, suites in the order they first appear. */
static void suite_tables(qh_sb *b, const qh_result *r, size_t n)
{
    char **suite = calloc(n ? n : 1, sizeof *suite);
    unsigned char *done = calloc(n ? n : 1, 1), *in = calloc(n ? n : 1, 1);
    int failed = !suite || !done || !in;
    size_t made = 0;
    for (; !failed && made < n; made++)
        if ((suite[made] = qh_report_suite(r[made].name)) == NULL)
            failed = 1;
    if (failed)
        b->failed = 1;
    else
        qh_sb_puts(b, "<h2>Suites</h2>\n");
    for (size_t i = 0; !failed && i < n; i++) {
        if (done[i])
            continue;
        memset(in, 0, n);
        for (size_t j = i; j < n; j++)
            if (!done[j] && strcmp(suite[i], suite[j]) == 0)
                in[j] = done[j] = 1;
        suite_table(b, r, n, suite[i], in);
    }
    for (size_t i = 0; i < made; i++)
        free(suite[i]);
    free(suite);
    free(done);
    free(in);
}

/* The runs of marked cells in each grid row of batch bt: drawn as one rect each into b, or
 * only counted when b is NULL. */
static size_t batch_runs(qh_sb *b, const qh_marks *m, int32_t bt, int32_t px)
{
    size_t n = 0;
    for (int32_t row = 0; row < m->grid_r; row++)
        for (int32_t c = 0; c < m->grid_c;) {
            if (!qh_marks_get(m, bt, row, c)) {
                c++;
                continue;
            }
            int32_t c1 = c;
            while (c1 < m->grid_c && qh_marks_get(m, bt, row, c1))
                c1++;
            if (b)
                qh_sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\""
                                COLOUR_MISMATCH "\"/>",
                             c * px, row * px, (c1 - c) * px, px);
            n++;
            c = c1;
        }
    return n;
}

/* y's picture, batch by batch, while the report's budget of rects lasts (a checkerboard of
 * wrong answers in every case must not make a report of a gigabyte). */
static void picture(qh_sb *b, const qh_marks *m, size_t *budget)
{
    int32_t side = m->grid_r > m->grid_c ? m->grid_r : m->grid_c;
    int32_t px = PICTURE_PX / side;
    px = px < 2 ? 2 : px > 24 ? 24 : px;
    for (int32_t bt = 0; bt < m->grid_b; bt++) {
        size_t runs = batch_runs(NULL, m, bt, px);
        if (runs > *budget) {
            qh_sb_printf(b, "<p>Not drawn from batch %d on: the report's pictures hold at most "
                            "%d runs of wrong elements.</p>",
                         bt, MAX_RUNS);
            *budget = 0;
            return;
        }
        *budget -= runs;
        qh_sb_puts(b, "<div class=\"picture\">");
        if (m->batches > 1)
            qh_sb_printf(b, "batch %d<br>", bt);
        qh_sb_printf(b,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                     "shape-rendering=\"crispEdges\"><rect width=\"%d\" height=\"%d\" fill=\""
                     COLOUR_ACCEPTED "\"/>",
                     m->grid_c * px, m->grid_r * px, m->grid_c * px, m->grid_r * px);
        batch_runs(b, m, bt, px);
        qh_sb_puts(b, "</svg></div>");
    }
}

/* A failing case: its summary, y's picture and its first mismatches. */
static void failing_case(qh_sb *b, const qh_result *r, size_t *budget)
{
    const qh_marks *m = r->marks;
    qh_sb_printf(b, "<div class=\"case\" id=\"case-%lld\"><h3>%lld: <span class=\"mono\">",
                 (long long)r->number, (long long)r->number);
    esc(b, r->name);
    qh_sb_puts(b, "</span> on <span class=\"mono\">");
    esc(b, r->backend);
    qh_sb_puts(b, "</span></h3>\n<p class=\"mono\">");
    esc(b, r->summary);
    qh_sb_printf(b, "</p>\n<p>y is %lld batch%s of %lld &times; %lld; red: an element that is "
                    "not an accepted value",
                 (long long)m->batches, m->batches == 1 ? "" : "es", (long long)m->rows,
                 (long long)m->cols);
    if (m->step_r > 1 || m->step_c > 1)
        qh_sb_printf(b, "; scaled down: each cell is %lld &times; %lld elements, red when any "
                        "of them is",
                     (long long)m->step_r, (long long)m->step_c);
    if (m->batches > m->grid_b)
        qh_sb_printf(b, "; only the first %d batches are drawn (%lld mismatches lie in the "
                        "others)",
                     m->grid_b, (long long)m->outside);
    qh_sb_puts(b, ".</p>\n");
    picture(b, m, budget);
    if (r->n_mismatches > 0) {
        qh_sb_puts(b, "\n<table class=\"mismatches\"><tr><th>index</th><th>y[...]</th>"
                      "<th>expected</th><th>got</th><th>acc</th><th>exact</th>"
                      "<th>got matches</th></tr>\n");
        for (int32_t k = 0; k < r->n_mismatches; k++) {
            const qh_mismatch *x = &r->mismatches[k];
            qh_sb_printf(b, "<tr><td>%lld</td><td>[", (long long)x->index);
            for (int32_t d = 0; d < x->rank; d++)
                qh_sb_printf(b, "%s%lld", d ? "," : "", (long long)x->coord[d]);
            qh_sb_printf(b, "]</td><td>%lld</td><td>%lld</td><td>", (long long)x->expected,
                         (long long)x->got);
            if (x->explained)
                qh_sb_printf(b, "%lld", (long long)x->acc);
            qh_sb_puts(b, "</td><td>");
            if (x->explained)
                esc(b, x->scaled);
            qh_sb_puts(b, "</td><td>");
            qh_report_models(b, x, "");
            qh_sb_puts(b, "</td></tr>\n");
        }
        qh_sb_puts(b, "</table>\n");
    }
    qh_sb_puts(b, "</div>\n");
}

void qh_report_html(qh_sb *b, const char *command, const qh_result *r, size_t n,
                    const qh_run_summary *sum)
{
    head(b, command, sum);
    size_t pictures = 0, failing = 0, budget = MAX_RUNS;
    for (size_t i = 0; i < n; i++)
        failing += r[i].reason == QH_REASON_VALUES;
    if (failing)
        qh_sb_printf(b, "<h2>Where the mismatches lie</h2>\n");
    for (size_t i = 0; i < n && pictures < QH_HTML_MAX_PICTURES; i++)
        if (has_picture(&r[i])) {
            failing_case(b, &r[i], &budget);
            pictures++;
        }
    if (failing > pictures)
        qh_sb_printf(b, "<p>%zu more failing cases are not drawn (at most %d pictures a "
                        "report).</p>\n",
                     failing - pictures, QH_HTML_MAX_PICTURES);
    suite_tables(b, r, n);
    qh_sb_puts(b, "</body></html>\n");
}
