/* harness/report/html.h — the HTML report (`--report html:FILE`, docs/formats.md, "HTML
 * report"): one self-contained file a person opens, with no script and no request to the
 * network (a Content-Security-Policy of default-src 'none' says so to the browser too): the
 * summary, a table per suite, and for each case that failed on its values a picture of y
 * (harness/judge/compare.h, qh_marks) marking the mismatching elements. Every text from a case
 * or a backend is escaped. */
#ifndef QMM_HARNESS_REPORT_HTML_H
#define QMM_HARNESS_REPORT_HTML_H

#include "harness/base/strbuf.h"
#include "harness/report/report.h"

/* The most cases one report draws: a run keeps where the mismatches lie (qh_result.marks) for
 * the first ones only. */
#define QH_HTML_MAX_PICTURES 200

void qh_report_html(qh_sb *b, const char *command, const qh_result *r, size_t n,
                    const qh_run_summary *sum);

#endif /* QMM_HARNESS_REPORT_HTML_H */
