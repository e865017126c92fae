/* tests/test_pool_alloc.c — the thread pool when an allocation or a thread start fails: each
 * of qmm_opt_pool_create's allocations and thread starts fails in turn (the linker's --wrap,
 * tests/CMakeLists.txt), and create must answer NULL, having freed what it allocated, or a
 * pool that runs every task once and frees everything at destroy. Until 2026-11-27 a failure before
 * the threads array existed made create's clean-up join through a NULL array (SIGSEGV). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "optimized/cpu/opt_internal.h"

static int armed;    /* count and fail only inside qmm_opt_pool_create */
static int calls;    /* allocations and thread starts so far */
static int fail_at;  /* the call that fails (1-based); 0: none */

/* the blocks create allocated and nobody has freed yet (free may come from a worker) */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static void *live[64];
static int nlive;

static int fails_now(void)
{
    return armed && ++calls == fail_at;
}

static void *noted(void *block)
{
    if (armed && block) {
        pthread_mutex_lock(&live_lock);
        if (nlive < 64)
            live[nlive++] = block;
        pthread_mutex_unlock(&live_lock);
    }
    return block;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *block);
void __wrap_free(void *block);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);

void *__wrap_malloc(size_t n)
{
    return fails_now() ? NULL : noted(__real_malloc(n));
}

void *__wrap_calloc(size_t k, size_t n)
{
    return fails_now() ? NULL : noted(__real_calloc(k, n));
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
    return fails_now() ? NULL : noted(__real_aligned_alloc(a, n));
}

void __wrap_free(void *block)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; block && i < nlive; i++)
        if (live[i] == block) {
            live[i] = live[--nlive];
            break;
        }
    pthread_mutex_unlock(&live_lock);
    __real_free(block);
}

static int still_live(void)
{
    pthread_mutex_lock(&live_lock);
    int n = nlive;
    pthread_mutex_unlock(&live_lock);
    return n;
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg)
{
    return fails_now() ? 11 /* EAGAIN */ : __real_pthread_create(t, attr, fn, arg);
}

static void count_task(void *ctx, size_t t, int worker)
{
    (void)worker;
    atomic_fetch_add(&((atomic_int *)ctx)[t], 1);
}

Test(pool_alloc, every_failing_allocation_or_thread_start_gives_null_or_a_working_pool)
{
    for (int threads = 1; threads <= 4; threads++) {
        int nulls = 0;
        for (fail_at = 1;; fail_at++) {
            calls = 0;
            armed = 1;
            qmm_opt_pool *p = qmm_opt_pool_create(threads);
            armed = 0;
            int injected = calls >= fail_at;
            if (!p) {
                cr_assert(injected, "threads %d: create failed with nothing failing", threads);
                cr_assert_eq(still_live(), 0, "threads %d, failing call %d: %d blocks leaked",
                             threads, fail_at, still_live());
                nulls++;
                continue;
            }
            atomic_int counts[16];
            for (int t = 0; t < 16; t++)
                atomic_init(&counts[t], 0);
            qmm_opt_pool_run(p, 16, count_task, counts);
            for (int t = 0; t < 16; t++)
                cr_assert_eq(atomic_load(&counts[t]), 1, "threads %d, failing call %d: task %d",
                             threads, fail_at, t);
            qmm_opt_pool_destroy(p);
            cr_assert_eq(still_live(), 0, "threads %d, failing call %d: %d blocks not freed",
                         threads, fail_at, still_live());
            if (!injected)
                break; /* every call of create has failed once */
        }
        /* the pool, its home ranges, and per extra thread its array, its argument and its start */
        cr_expect_geq(nulls, threads == 1 ? 2 : 3 + 2 * (threads - 1),
                      "threads %d: only %d failure paths seen", threads, nulls);
    }
}
