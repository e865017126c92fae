/* harness/cli/progress.h — the one-line progress display of `run` and `diff` on stderr: done of
 * total, failures so far, elapsed and remaining time, redrawn in place with \r at most about
 * ten times a second and cleared at the end. Only when stderr is a terminal and the command
 * was not given --quiet: a log or a pipe never sees it. */
#ifndef QMM_HARNESS_PROGRESS_H
#define QMM_HARNESS_PROGRESS_H

#include <stdint.h>

typedef struct qh_progress {
    int on;           /* stderr is a terminal and no --quiet */
    int shared;       /* stdout is a terminal too: the line steps aside for its lines */
    const char *unit; /* "cases", "problems" */
    const char *bad;  /* what a failure is called: "failed", "differences" */
    double t0, last;  /* when it started, when it last drew (0: never) */
    char line[160];   /* what is on the screen now ("" when nothing) */
} qh_progress;

/* Starts the clock; shows nothing yet. */
void qh_progress_start(qh_progress *p, int quiet, const char *unit, const char *bad);

/* `done` of `total` (0: not known), `failures` so far; `left_s` the seconds left when the
 * caller knows them (diff --seconds), or < 0 to estimate them from the rate so far. Draws
 * only when 0.1 s passed since the last drawing. */
void qh_progress_update(qh_progress *p, uint64_t done, uint64_t total, uint64_t failures,
                        double left_s);

/* Erases the line before a line is printed on stdout, and draws it again after, when stdout
 * is a terminal too (else the two never meet, and nothing is done). */
void qh_progress_hide(qh_progress *p);
void qh_progress_show(qh_progress *p);

/* Erases the line for good. */
void qh_progress_end(qh_progress *p);

#endif /* QMM_HARNESS_PROGRESS_H */
