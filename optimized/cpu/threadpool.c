/* optimized/cpu/threadpool.c — a persistent pool: threads are started once per backend and
 * sleep on a condition variable between calls, so a call pays a wake-up, not a thread
 * creation. A worker that has just finished spins for a short while (SPIN_ROUNDS pauses,
 * some tens of microseconds) before it sleeps, and so does the caller waiting for the
 * workers: a call runs two jobs back to back (packing, then computing), and calls often
 * follow each other, so most hand-overs then cost no system call at all.
 *
 * Tasks are claimed from atomic counters, one per thread: thread w's home is the w-th of
 * nthreads contiguous, near-equal ranges of the task indices, which it claims first, in
 * order; then it takes what is left of the others' ranges (the next thread's first). A call's
 * task list is laid out the same way every time, so the same thread — on the same core, as a
 * rule — reads the same part of a constant operand on every call, and that part stays in its
 * core's caches. 1x4096x4096 with a prepacked B (16 MB), 2 threads, Zen 4 (KVM), 21
 * alternating runs of `qmmcheck bench`, medians: 0.204 and 0.209 ms with one shared counter,
 * 0.174 and 0.171 with home ranges; a plain loop summing the two 8 MB halves of 16 MB on two
 * threads ran at 180 GB/s with each thread on its own half every pass, 120 GB/s with the
 * halves swapped each pass. The compute-bound shapes did not move beyond the noise (per-round
 * ratios, 15-21 rounds: 0.97-1.05). A thread whose core is taken loses its range to the
 * others, one task at a time, as before. Which thread runs a task never changes a result
 * (each output element is written by exactly one task, and integer sums are exact modulo
 * 2^32 whatever their order), so results are identical for every thread count.
 *
 * The caller waits only for the workers that are running a task of its job, not for every
 * worker to check in: a worker counts itself in (`running`) before it claims a task and out
 * after its last one. A claim is a compare-and-swap on a range's `next`, which holds the
 * job's generation beside the next task index, so a worker of an earlier job can never claim
 * a task of a later one (the caller closes every range for the new generation before it
 * writes the job's fields). Until 2026-11-27 the caller waited for all nthreads - 1 workers
 * to wake and finish, even one that the OS had not yet given a core: when the other core was
 * busy, the caller, having run every task itself, waited a time slice for a worker that then
 * found nothing to do — the medians doubled in 3 of 14 runs. A late worker is
 * harmless: it counts itself in, finds the counter past the end (or claims a task of the job
 * now current, whose caller then waits for it), and counts itself out.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

enum { SPIN_ROUNDS = 2000 };

#include "optimized/cpu/opt_internal.h"

struct qmm_opt_pool {
    int nthreads;
    pthread_t *threads;
    pthread_mutex_t busy;     /* held by the call that owns the pool */
    pthread_mutex_t lock;     /* guards everything below */
    pthread_cond_t wake, done;
    _Atomic uint64_t generation; /* bumped for each job (under lock; read anywhere) */
    atomic_int stop;
    atomic_int running;          /* workers between counting in and out (see above) */
    /* the current job */
    qmm_opt_task_fn fn;
    void *ctx;
    atomic_size_t ntasks;
    struct home *home; /* nthreads of them */
};

/* Thread w's range of the current job's tasks: [next's index, home_begin(ntasks, w + 1)).
 * Each on a line of its own (the threads' claims do not contend for one line). */
struct home {
    _Alignas(64) _Atomic uint64_t next; /* generation (low 32 bits) << 32 | the next index */
};

/* Where thread w's range of ntasks tasks begins (w = nthreads: where the last one ends). */
static size_t home_begin(const qmm_opt_pool *p, size_t ntasks, int w)
{
    return ntasks * (size_t)w / (size_t)p->nthreads;
}

typedef struct worker_arg {
    qmm_opt_pool *pool;
    int index;
} worker_arg;

#define CLOSED 0xffffffffu /* no task index: the job's fields are being written */

/* Claims and runs the tasks of job `gen` in thread h's range until none is left there (or
 * the job is another's). */
static void run_range(qmm_opt_pool *p, int h, int worker, uint32_t gen)
{
    _Atomic uint64_t *next = &p->home[h].next;
    for (;;) {
        uint64_t v = atomic_load(next);
        if ((uint32_t)(v >> 32) != gen ||
            (uint32_t)v >= home_begin(p, atomic_load(&p->ntasks), h + 1))
            return;
        if (atomic_compare_exchange_weak(next, &v, v + 1))
            p->fn(p->ctx, (size_t)(uint32_t)v, worker);
    }
}

/* Runs tasks of job `gen`: the worker's own range, then the others' leftovers. */
static void run_tasks(qmm_opt_pool *p, int worker, uint32_t gen)
{
    for (int i = 0; i < p->nthreads; i++)
        run_range(p, (worker + i) % p->nthreads, worker, gen);
}

static void *worker_main(void *arg)
{
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    qmm_opt_pool *p = wa.pool;
    uint64_t seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ROUNDS && !atomic_load(&p->stop) &&
                        atomic_load(&p->generation) == seen;
             i++)
            cpu_relax();
        pthread_mutex_lock(&p->lock);
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        atomic_fetch_add(&p->running, 1); /* before claiming: the caller then waits for us */
        run_tasks(p, wa.index, (uint32_t)seen);
        pthread_mutex_lock(&p->lock);
        if (atomic_fetch_sub(&p->running, 1) == 1)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

qmm_opt_pool *qmm_opt_pool_create(int nthreads)
{
    if (nthreads < 1)
        nthreads = 1;
    qmm_opt_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->nthreads = nthreads;
    pthread_mutex_init(&p->busy, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->home = aligned_alloc(64, (size_t)nthreads * sizeof *p->home);
    if (!p->home) {
        qmm_opt_pool_destroy(p);
        return NULL;
    }
    atomic_init(&p->ntasks, 0);
    for (int i = 0; i < nthreads; i++)
        atomic_init(&p->home[i].next, (uint64_t)CLOSED);
    if (nthreads > 1) {
        p->threads = calloc((size_t)nthreads - 1, sizeof *p->threads);
        if (!p->threads) {
            qmm_opt_pool_destroy(p);
            return NULL;
        }
        for (int i = 1; i < nthreads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (!wa || (wa->pool = p, wa->index = i,
                        pthread_create(&p->threads[i - 1], NULL, worker_main, wa) != 0)) {
                free(wa);
                p->nthreads = i; /* only the threads started so far are joined */
                qmm_opt_pool_destroy(p);
                return NULL;
            }
        }
    }
    return p;
}

void qmm_opt_pool_destroy(qmm_opt_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    /* no threads array: create failed before it had one (then none was started) */
    for (int i = 1; p->threads && i < p->nthreads; i++)
        pthread_join(p->threads[i - 1], NULL);
    free(p->threads);
    free(p->home);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->busy);
    free(p);
}

int qmm_opt_pool_threads(const qmm_opt_pool *p)
{
    return p ? p->nthreads : 1;
}

void qmm_opt_pool_run(qmm_opt_pool *p, size_t ntasks, qmm_opt_task_fn fn, void *ctx)
{
    if (ntasks == 0)
        return;
    /* One task, one thread, more than an index holds, or a pool already working for another
     * call: run here. */
    if (!p || p->nthreads == 1 || ntasks == 1 || ntasks >= CLOSED ||
        pthread_mutex_trylock(&p->busy) != 0) {
        for (size_t t = 0; t < ntasks; t++)
            fn(ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    uint32_t gen = (uint32_t)(p->generation + 1);
    int nt = p->nthreads;
    for (int w = 0; w < nt; w++) /* late workers of old jobs: out */
        atomic_store(&p->home[w].next, (uint64_t)gen << 32 | CLOSED);
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->ntasks, ntasks);
    for (int w = 0; w < nt; w++)
        atomic_store(&p->home[w].next, (uint64_t)gen << 32 | home_begin(p, ntasks, w));
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_tasks(p, 0, gen);

    /* every task is claimed now; wait for those still running one (a worker counted in
     * before its claim, so none is missed) */
    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->running) > 0; i++)
        cpu_relax();
    pthread_mutex_lock(&p->lock);
    while (atomic_load(&p->running) > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->busy);
}
