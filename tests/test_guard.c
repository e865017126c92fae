/* tests/test_guard.c — the guard layer and the runner's verdicts on hostile backends.
 *
 * The guard tests fork a child that places a call's tensors the way the isolated worker does,
 * installs the fault handler with a socketpair, misbehaves, and sends back what the handler
 * said; the parent checks that the sentence names the right tensor, distance and call. The
 * runner tests judge a case in process against backend tables built here, so they need no
 * plugin file. */
#define _GNU_SOURCE 1 /* MAP_ANONYMOUS */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/expect.h"
#include "harness/guard.h"
#include "harness/problem.h"
#include "harness/runner.h"

/* ---- the guard layer, in a child ------------------------------------------------------ */

static size_t ps(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static void send_sentence(int fd, const char *sentence)
{
    (void)!write(fd, sentence, strlen(sentence));
}

/* A call's tensors in the worker's order, the output last. */
enum { A, AZ, B, Y, N_REGIONS };

static void place_call(qh_guarded *g, int fd)
{
    unsigned char bytes[300];
    memset(bytes, 7, sizeof bytes);
    cr_assert_eq(qh_guard_input(&g[A], "a", bytes, 100), 0);
    cr_assert_eq(qh_guard_input(&g[AZ], "a_zero_point", bytes, 1), 0);
    cr_assert_eq(qh_guard_input(&g[B], "b", bytes, 300), 0);
    cr_assert_eq(qh_guard_output(&g[Y], "y", 1000, 0xa5), 0);
    qh_guard_install_handler(g, N_REGIONS, fd, send_sentence);
}

/* Runs body(fd) in a child; returns what the handler reported ("" when nothing), with the
 * child's wait status in *status. A body that returns reports "no fault" and exits 1. */
static char *in_child(void (*body)(int fd), int *status)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        body(sv[1]);
        send_sentence(sv[1], "no fault");
        _exit(1);
    }
    close(sv[1]);
    static char got[512];
    size_t n = 0;
    ssize_t r;
    while ((r = read(sv[0], got + n, sizeof got - 1 - n)) > 0)
        n += (size_t)r;
    got[n] = '\0';
    close(sv[0]);
    cr_assert_eq(waitpid(pid, status, 0), pid);
    return got;
}

static void expect_report(void (*body)(int fd), const char *want)
{
    int status;
    char *got = in_child(body, &status);
    cr_assert_str_eq(got, want);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

static void write_pages_past_y(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    g[Y].data[g[Y].len + 3 * ps() + 99] = 1;
}

Test(guard, write_pages_past_y_names_y)
{
    char want[128];
    snprintf(want, sizeof want, "wrote %zu bytes past the end of y", 3 * ps() + 100);
    expect_report(write_pages_past_y, want);
}

static void write_far_past_y(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    g[Y].data[g[Y].len + ((size_t)1 << 20)] = 1; /* 1 MiB and a byte */
}

Test(guard, write_a_mebibyte_past_y_names_y)
{
    char want[128];
    snprintf(want, sizeof want, "wrote %zu bytes past the end of y", ((size_t)1 << 20) + 1);
    expect_report(write_far_past_y, want);
}

static void write_one_past_y(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    g[Y].data[g[Y].len] = 1;
}

Test(guard, write_one_byte_past_y)
{
    expect_report(write_one_past_y, "wrote 1 byte past the end of y");
}

static void read_pages_before_a(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    volatile unsigned char v = *(volatile unsigned char *)(g[A].data - (2 * ps() + 8));
    (void)v;
}

Test(guard, read_pages_before_input_names_it)
{
    char want[128];
    snprintf(want, sizeof want, "read %zu bytes before the start of input a", 2 * ps() + 8);
    expect_report(read_pages_before_a, want);
}

static void read_past_b(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    volatile unsigned char v = *(volatile unsigned char *)(g[B].data + g[B].len + 7);
    (void)v;
}

Test(guard, read_past_input_names_it)
{
    expect_report(read_past_b, "read 8 bytes past the end of input b");
}

static void write_into_az(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    g[AZ].data[0] = 1;
}

Test(guard, write_into_input_names_it)
{
    expect_report(write_into_az, "wrote into input a_zero_point");
}

static void write_far_before_y(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    g[Y].data[-(ptrdiff_t)(5 * ps())] = 1;
}

Test(guard, write_pages_before_y_names_y)
{
    char want[128];
    snprintf(want, sizeof want, "wrote %zu bytes before the start of y", 5 * ps());
    expect_report(write_far_before_y, want);
}

Test(guard, write_just_before_y_hits_the_canaries)
{
    qh_guarded y;
    cr_assert_eq(qh_guard_output(&y, "y", 10, 0xa5), 0);
    cr_assert_eq(qh_guard_canaries_hit(&y), 0);
    y.data[-1] = 0;
    y.data[-3] = 0;
    cr_assert_eq(qh_guard_canaries_hit(&y), 2);
    qh_guard_free(&y);
}

static void crash_elsewhere(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    unsigned char *m = mmap(NULL, ps(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[0] = 1;
}

Test(guard, fault_outside_every_region_is_a_crash)
{
    int status;
    char *got = in_child(crash_elsewhere, &status);
    cr_assert_str_eq(got, "");
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "child status %d", status);
}

/* A backend thread that goes on writing into y after the call returned. */
static void *keep_writing(void *arg)
{
    volatile unsigned char *y = arg;
    for (unsigned i = 0;; i++) {
        y[i % 1000] = (unsigned char)i;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void thread_writes_after_seal(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    pthread_t t;
    pthread_create(&t, NULL, keep_writing, g[Y].data);
    /* the call "returns": the thread must be caught within the grace period */
    qh_guard_seal(g, N_REGIONS);
}

Test(guard, thread_writing_after_seal_is_blamed_on_y_after_return)
{
    expect_report(thread_writes_after_seal, "wrote into y after the call returned");
}

static void seal_keeps_y_readable(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    g[Y].data[5] = 42;
    qh_guard_seal(g, N_REGIONS);
    if (g[Y].data[5] != 42 || qh_guard_canaries_hit(&g[Y]) != 0)
        _exit(2);
    g[Y].data[6] = 1; /* the main thread, after return: faults */
}

Test(guard, sealed_output_is_readable_not_writable)
{
    expect_report(seal_keeps_y_readable, "wrote into y after the call returned");
}

static unsigned char *late_target;

static void write_after_retire(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    qh_guard_seal(g, N_REGIONS);
    late_target = g[Y].data + 10;
    qh_guard_retire(g, N_REGIONS);
    if (g[Y].map != NULL)
        _exit(2); /* retire leaves the caller's descriptors empty */
    qh_guard_free(&g[Y]); /* a no-op now: the region stays reserved */
    qh_guarded next[N_REGIONS];
    place_call(next, fd);
    *late_target = 1; /* a thread of the first call, during the second */
}

Test(guard, write_after_retire_is_blamed_on_the_previous_call)
{
    expect_report(write_after_retire,
                  "a thread of the previous call wrote into its y after the call returned");
}

static int mapped(const void *p)
{
    return msync((void *)((uintptr_t)p / ps() * ps()), ps(), MS_ASYNC) == 0;
}

Test(guard, retire_unmaps_the_call_before_the_previous_one)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    qh_guarded first[N_REGIONS], second[N_REGIONS];
    place_call(first, sv[1]);
    unsigned char *first_map = first[Y].map, *first_a = first[A].map;
    qh_guard_retire(first, N_REGIONS);
    cr_assert(mapped(first_map), "a retired region stays reserved until the next call");
    place_call(second, sv[1]);
    unsigned char *second_map = second[Y].map;
    qh_guard_retire(second, N_REGIONS);
    cr_assert(!mapped(first_map) && !mapped(first_a), "the older call's regions are unmapped");
    cr_assert(mapped(second_map));
    close(sv[0]);
    close(sv[1]);
}

/* A forked child has one thread: sealing there must not wait. */
static void time_twenty_seals(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 20; i++)
        qh_guard_seal(g, N_REGIONS);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    send_sentence(fd, s < 20 * QH_GUARD_GRACE_NS * 1e-9 / 2 ? "fast" : "slow");
    _exit(0);
}

Test(guard, seal_without_threads_does_not_wait)
{
    expect_report(time_twenty_seals, "fast");
}
