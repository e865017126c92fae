/* harness/cli/progress.c — the progress line on a terminal (harness/cli/progress.h). */
#include "harness/cli/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/invoke/invoke.h"

#define REDRAW_S 0.1 /* at most about ten drawings a second */

void qh_progress_start(qh_progress *p, int quiet, const char *unit, const char *bad)
{
    memset(p, 0, sizeof *p);
    p->on = !quiet && isatty(STDERR_FILENO);
    p->shared = p->on && isatty(STDOUT_FILENO);
    p->unit = unit;
    p->bad = bad;
    p->t0 = qh_mono_seconds();
}

/* "0:07", "12:30", "2:03:04" */
static void clock_text(double s, char *buf, size_t size)
{
    if (s < 0) {
        snprintf(buf, size, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

/* Overwrites the line with spaces and goes back to its start. */
static void erase(const qh_progress *p)
{
    size_t n = strlen(p->line);
    if (n == 0)
        return;
    fprintf(stderr, "\r%*s\r", (int)n, "");
}

void qh_progress_update(qh_progress *p, uint64_t done, uint64_t total, uint64_t failures,
                        double left_s)
{
    if (!p->on)
        return;
    double now = qh_mono_seconds();
    if (p->last > 0 && now - p->last < REDRAW_S)
        return;
    p->last = now;
    double elapsed = now - p->t0;
    if (left_s < 0 && total > 0 && done > 0)
        left_s = elapsed / (double)done * (double)(total - (done < total ? done : total));
    char of[32] = "", took[24], left[24];
    if (total > 0)
        snprintf(of, sizeof of, "/%llu", (unsigned long long)total);
    clock_text(elapsed, took, sizeof took);
    clock_text(left_s, left, sizeof left);
    char line[sizeof p->line];
    snprintf(line, sizeof line, "%llu%s %s, %llu %s, %s elapsed, %s left",
             (unsigned long long)done, of, p->unit, (unsigned long long)failures, p->bad, took,
             left);
    /* the new text over the old: padded where the old was longer */
    int pad = (int)strlen(p->line) - (int)strlen(line);
    fprintf(stderr, "\r%s%*s", line, pad > 0 ? pad : 0, "");
    if (pad > 0)
        fprintf(stderr, "\r%s", line);
    memcpy(p->line, line, sizeof line);
}

void qh_progress_hide(qh_progress *p)
{
    if (p->shared)
        erase(p);
}

void qh_progress_show(qh_progress *p)
{
    if (p->shared && p->line[0])
        fprintf(stderr, "\r%s", p->line);
}

void qh_progress_end(qh_progress *p)
{
    if (p->on)
        erase(p);
    p->line[0] = '\0';
    p->on = 0;
}
