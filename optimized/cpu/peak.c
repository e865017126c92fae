/* optimized/cpu/peak.c — the int8 peak that `qmmcheck bench` reports percentages against:
 * the best multiply-accumulate loop this CPU runs (the kernel table rows' `peak`), on
 * `threads` threads at once. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "optimized/cpu/opt_internal.h"

typedef uint64_t (*peak_fn)(uint64_t iters);

typedef struct peak_arg {
    peak_fn fn;
    uint64_t iters, macs;
} peak_arg;

static void *peak_thread(void *p)
{
    peak_arg *a = p;
    a->macs = a->fn(a->iters);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs fn(iters) on `threads` threads; returns MACs per second. */
static double run_peak(peak_fn fn, int threads, uint64_t iters)
{
    peak_arg *args = calloc((size_t)threads, sizeof *args);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!args || !tids) {
        free(args);
        free(tids);
        return 0;
    }
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        args[i].fn = fn;
        args[i].iters = iters;
    }
    for (int i = 1; i < threads; i++)
        if (pthread_create(&tids[i], NULL, peak_thread, &args[i]) != 0)
            args[i].iters = 0; /* not started: counts nothing */
    args[0].macs = fn(iters);
    for (int i = 1; i < threads; i++)
        if (args[i].iters)
            pthread_join(tids[i], NULL);
    double dt = now_s() - t0;
    uint64_t macs = 0;
    for (int i = 0; i < threads; i++)
        macs += args[i].macs;
    free(args);
    free(tids);
    return dt > 0 ? (double)macs / dt : 0;
}

/* Calibrates fn on one thread, then runs it for about `seconds` on `threads`: ops/s. */
static double measure(peak_fn fn, int threads, double seconds)
{
    if (threads < 1)
        threads = 1;
    uint64_t iters = 100000;
    double rate = run_peak(fn, 1, iters);
    uint64_t per_iter = fn(1);
    if (rate > 0 && per_iter > 0)
        iters = (uint64_t)(seconds * rate / (double)per_iter);
    if (iters < 1000)
        iters = 1000;
    return 2.0 * run_peak(fn, threads, iters);
}

double qmm_optimized_peak_ops(int threads, double seconds, const char **loop)
{
    /* the best runnable row's loop: the last in the table that has one */
    const qmm_opt_isa_ops *best = NULL;
    for (int i = 0; i < qmm_opt_kernel_count(); i++) {
        const qmm_opt_isa_ops *row = qmm_opt_kernel_row(i);
        if (row->peak && !row->peak_ceiling && !qmm_opt_kernel_missing(i))
            best = row;
    }
    if (loop)
        *loop = best ? best->peak_loop : "none (this CPU runs no variant's peak loop)";
    return best ? measure(best->peak, threads, seconds) : 0;
}

double qmm_optimized_peak_ceiling_ops(int variant, int threads, double seconds,
                                      const char **loop)
{
    const qmm_opt_isa_ops *row = qmm_opt_kernel_row(variant);
    if (!row || !row->peak || !row->peak_ceiling || qmm_opt_kernel_missing(variant))
        return 0;
    if (loop)
        *loop = row->peak_loop;
    return measure(row->peak, threads, seconds);
}
