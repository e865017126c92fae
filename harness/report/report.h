/* harness/report/report.h — machine-readable run reports (docs/formats.md). */
#ifndef QMM_HARNESS_REPORT_H
#define QMM_HARNESS_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/strbuf.h"
#include "harness/io/onnx_io.h"
#include "harness/run/runner.h"

typedef struct qh_run_summary {
    int64_t counts[QH_STATUS_COUNT];
    int64_t total;
    double seconds;
    const char *interrupted; /* "SIGTERM" when a signal cut the run short, else NULL */
    const char *shard;       /* "I/N" when --shard ran one slice of the cases, else NULL */
    int xpass_fails;         /* --xfail-strict: an XPASS row fails the run (and the report) */
} qh_run_summary;

/* The known KINDs of `--report KIND:FILE` ("json, junit, html"), for usage texts: the table
 * in report.c is the only list. */
void qh_report_kind_names(char *buf, size_t size);

/* `--report KIND:FILE` (json, junit, html): validates the kind, and refuses a FILE that
 * exists and is not a regular file (a device, a directory, a symlink: lstat). 0 or -1 with
 * err. */
int qh_report_check_spec(const char *spec, qh_error *err);

/* Refuses two of the n specs (each checked good) whose FILEs are one: the same name in the same
 * folder, however the folder is reached. 0 or -1 with err. */
int qh_report_check_distinct(const char *const *specs, int n, qh_error *err);

/* Refuses a report FILE that is one of the run's inputs, before anything is cleared: one of
 * the n_files `files` (the --xfail list, a plugin: the same file, by device and inode), or a
 * file of a case under one of the n_trees --vectors roots (named model.onnx or *.pb, or in a
 * case directory or a test_data_set_* directory there). Clearing it used to delete the
 * --xfail list or the plugin before they were read, or a case's model.onnx, which then
 * vanished from the run. 0 or -1 with err. */
int qh_report_check_not_input(const char *spec, const char *const *files, int n_files,
                              const char *const *trees, int n_trees, qh_error *err);

/* Removes FILE's previous report (after the same check) when a run starts, so a run that dies
 * leaves the new report or none, never the last run's looking current. 0 or -1 with err. */
int qh_report_clear(const char *spec, qh_error *err);

/* Writes the report to a new temporary file beside FILE (unpredictable name, O_EXCL |
 * O_NOFOLLOW) and renames it over FILE, after checking FILE again as above. */
int qh_report_write(const char *spec, const char *command, const qh_result *results, size_t n,
                    const qh_run_summary *sum, qh_error *err);

/* A case's suite: the directory part of its name ("edge/OP/ties" for
 * "edge/OP/ties/even-zp"), "." for a name without one; malloc'd, whole however long (a suite
 * cut to a buffer ended inside a character, and two long suites became one), NULL only when
 * out of memory. */
char *qh_report_suite(const char *name);

/* The profiles that give a mismatch's `got` (qh_mismatch.models), ", "-separated, each
 * between `quote`s. */
void qh_report_models(qh_sb *b, const qh_mismatch *m, const char *quote);

/* "total:25 passed:21 failed:0 ..." in the fixed status order. */
void qh_summary_format(const qh_run_summary *sum, char *buf, size_t size);

#endif /* QMM_HARNESS_REPORT_H */
