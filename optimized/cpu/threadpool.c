/* optimized/cpu/threadpool.c — a persistent pool: threads are started once per backend and
 * sleep on a condition variable between calls, so a call pays a wake-up, not a thread
 * creation. A worker that has just finished spins for a short while (SPIN_ROUNDS pauses,
 * some tens of microseconds) before it sleeps, and so does the caller waiting for the
 * workers: a call runs two jobs back to back (packing, then computing), and calls often
 * follow each other, so most hand-overs then cost no system call at all. Tasks are claimed from an atomic counter; which thread runs a task never changes
 * a result (each output element is written by exactly one task, and integer sums are exact
 * modulo 2^32 whatever their order), so results are identical for every thread count.
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
    atomic_int active;           /* workers still inside the current job */
    /* the current job */
    qmm_opt_task_fn fn;
    void *ctx;
    size_t ntasks;
    atomic_size_t next;
};

typedef struct worker_arg {
    qmm_opt_pool *pool;
    int index;
} worker_arg;

static void run_tasks(qmm_opt_pool *p, int worker)
{
    for (;;) {
        size_t t = atomic_fetch_add(&p->next, 1);
        if (t >= p->ntasks)
            break;
        p->fn(p->ctx, t, worker);
    }
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
        run_tasks(p, wa.index);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0)
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
    atomic_init(&p->next, 0);
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
    for (int i = 1; i < p->nthreads; i++)
        pthread_join(p->threads[i - 1], NULL);
    free(p->threads);
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
    /* One task, one thread, or a pool already working for another call: run here. */
    if (!p || p->nthreads == 1 || ntasks == 1 || pthread_mutex_trylock(&p->busy) != 0) {
        for (size_t t = 0; t < ntasks; t++)
            fn(ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store(&p->next, 0);
    p->active = p->nthreads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_tasks(p, 0);

    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->active) > 0; i++)
        cpu_relax();
    pthread_mutex_lock(&p->lock);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->busy);
}
