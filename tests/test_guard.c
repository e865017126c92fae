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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/judge/expect.h"
#include "harness/invoke/guard.h"
#include "harness/gen/problem.h"
#include "harness/run/runner.h"

/* ---- the guard layer, in a child ------------------------------------------------------ */

static size_t ps(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static void send_sentence(int fd, const char *sentence)
{
    (void)!write(fd, sentence, strlen(sentence));
}

/* The fault handler's reporter: the sentence (the cause's code is the worker's to send). */
static void report_sentence(int fd, int32_t cause_arg, const char *sentence)
{
    (void)cause_arg;
    send_sentence(fd, sentence);
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
    qh_guard_install_handler(g, N_REGIONS, fd, report_sentence);
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
static volatile int writer_running;

static void *keep_writing(void *arg)
{
    volatile unsigned char *y = arg;
    for (unsigned i = 0;; i++) {
        y[i % 1000] = (unsigned char)i;
        writer_running = 1;
    }
    return NULL;
}

static void thread_writes_after_seal(int fd)
{
    qh_guarded g[N_REGIONS];
    place_call(g, fd);
    pthread_t t;
    pthread_create(&t, NULL, keep_writing, g[Y].data);
    while (!writer_running)
        sched_yield();
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

/* Seals 20 times and reports "fast" when that took less than one grace period. */
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
    send_sentence(fd, s < QH_GUARD_GRACE_NS * 1e-9 ? "fast" : "slow");
    _exit(0);
}

/* A forked child has one thread: sealing there must not wait. */
Test(guard, seal_without_threads_does_not_wait)
{
    expect_report(time_twenty_seals, "fast");
}

static void *sleep_forever(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void sleeping_pool_then_seal(int fd)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, sleep_forever, NULL);
    struct timespec ts = {0, 20000000}; /* let them reach pause() */
    nanosleep(&ts, NULL);
    time_twenty_seals(fd);
}

/* An idle thread pool (the optimized backend's) cannot write: no grace period is paid. */
Test(guard, seal_with_only_sleeping_threads_does_not_wait)
{
    expect_report(sleeping_pool_then_seal, "fast");
}

/* ---- the runner, in process, against backend tables built here ------------------------- */

/* QLinearMatMul (opset 10, uint8) a[m,k] = av, b[k,n] = bv, scales 1 except y_scale sy, zero
 * points 0 except y's zy. */
static void qlm_problem(qh_problem *p, int64_t m, int64_t k, int64_t n, int av, int bv,
                        double sy, int zy)
{
    qh_problem_init(p, QMM_OP_QLINEARMATMUL, 10);
    int64_t da[2] = {m, k}, db[2] = {k, n};
    const int64_t *dims[8] = {da, NULL, NULL, db, NULL, NULL, NULL, NULL};
    const int32_t types[8] = {QMM_DTYPE_UINT8, QMM_DTYPE_FLOAT, QMM_DTYPE_UINT8,
                              QMM_DTYPE_UINT8, QMM_DTYPE_FLOAT, QMM_DTYPE_UINT8,
                              QMM_DTYPE_FLOAT, QMM_DTYPE_UINT8};
    const double values[8] = {av, 1, 0, bv, 1, 0, sy, zy};
    for (int32_t i = 0; i < 8; i++) {
        qmm_tensor *t = qh_problem_input(p, i);
        cr_assert(qh_problem_tensor(p, t, types[i], dims[i] ? 2 : 0, dims[i]));
        for (int64_t e = 0; e < qmm_tensor_numel(t); e++) {
            if (types[i] == QMM_DTYPE_FLOAT)
                qh_tensor_set_scale(t, e, values[i]);
            else
                qh_tensor_set_int(t, e, (int64_t)values[i]);
        }
    }
    qh_problem_finish(p);
}

/* What the test backends below do; set by each test. */
static int calls;
static int skip_index = -1;   /* `some`: the element it leaves alone */
static int value = 165;       /* what `some` writes */
static const char *said;      /* `chatty`: its status message */
static qmm_status_code answer; /* `chatty`: its status code */

static qmm_status_code writes_nothing(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                      qmm_status *st)
{
    (void)self, (void)c;
    calls++;
    return qmm_status_ok(st);
}

static qmm_status_code writes_some(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                   qmm_status *st)
{
    (void)self;
    calls++;
    for (int64_t i = 0; i < qmm_tensor_numel(&c->y); i++)
        if (i != skip_index)
            ((unsigned char *)c->y.data)[i] = (unsigned char)value;
    return qmm_status_ok(st);
}

/* Writes nothing on its first call, `value` everywhere afterwards. */
static qmm_status_code writes_late(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                   qmm_status *st)
{
    if (calls == 0) {
        calls++;
        return qmm_status_ok(st);
    }
    return writes_some(self, c, st);
}

static qmm_status_code chatty(const qmm_backend *self, const qmm_qlinearmatmul *c,
                              qmm_status *st)
{
    (void)self, (void)c;
    calls++;
    if (!said) { /* a message that fills the buffer without a terminating NUL */
        st->code = answer;
        memset(st->message, '\n', sizeof st->message);
        return answer;
    }
    return qmm_status_set(st, answer, "%s", said);
}

/* Writes the problem as a case directory at DIR, a mkdtemp template made unique here. */
static void write_case_dir(char *dir, const qh_problem *p)
{
    cr_assert(mkdtemp(dir));
    qh_error err = {{0}};
    cr_assert_eq(qh_problem_write_dir(dir, p, NULL, NULL, &err), 0, "%s", err.msg);
}

static void remove_case_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Judges the problem in process against a table whose qlinearmatmul is `op`. */
static void judge_with(qh_problem *p, qmm_status_code (*op)(const qmm_backend *,
                                                            const qmm_qlinearmatmul *,
                                                            qmm_status *),
                       qh_result *res)
{
    char dir[] = "/tmp/qmm-guard-XXXXXX";
    write_case_dir(dir, p);
    static qmm_backend table;
    memset(&table, 0, sizeof table);
    table.abi_version = QMM_ABI_VERSION;
    table.struct_size = sizeof table;
    table.name = "test";
    table.qlinearmatmul = op;
    static qh_backend hb;
    memset(&hb, 0, sizeof hb);
    hb.be = &table;
    hb.table = table;
    snprintf(hb.spec, sizeof hb.spec, "test");
    qh_case_ref ref = {.dir = dir, .name = "case", .data_set = 0};
    qh_eval_opts o;
    memset(&o, 0, sizeof o);
    calls = 0;
    qh_eval_case(&ref, &hb, &o, res);
    remove_case_dir(dir);
}

/* Judges a [2,k]·[k,3] QLinearMatMul whose y zero point is zy (with K = 0, y = zy everywhere)
 * against `op`; checks the status, the summary and, when want_calls > 0, how many calls. */
static void expect_verdict(int64_t k, int zy,
                           qmm_status_code (*op)(const qmm_backend *, const qmm_qlinearmatmul *,
                                                 qmm_status *),
                           qh_case_status want, const char *summary, int want_calls)
{
    qh_problem p;
    qlm_problem(&p, 2, k, 3, 1, 1, 1.0, zy);
    qh_result res;
    judge_with(&p, op, &res);
    cr_expect_str_eq(qh_case_status_name(res.status), qh_case_status_name(want), "summary: %s",
                     res.summary ? res.summary : "(none)");
    cr_expect_str_eq(res.summary ? res.summary : "", summary);
    if (want_calls > 0)
        cr_expect_eq(calls, want_calls);
    qh_result_free(&res);
    qh_problem_free(&p);
}

Test(unwritten, nothing_written_fails_when_the_answer_is_the_fill)
{
    expect_verdict(0, 165, writes_nothing, QH_FAILED,
                   "did not write y[0,0] (6 of 6 elements unwritten)", 2);
}

Test(unwritten, one_unwritten_element_is_named)
{
    skip_index = 4;
    expect_verdict(0, 165, writes_some, QH_FAILED,
                   "did not write y[1,1] (1 of 6 elements unwritten)", 2);
}

/* an element equal to the fill pays for a second run, which shows it was written */
Test(unwritten, writing_the_fill_value_passes)
{
    expect_verdict(0, 165, writes_some, QH_PASSED, "", 2);
}

Test(unwritten, no_fill_in_the_output_means_one_run)
{
    value = 7;
    expect_verdict(0, 7, writes_some, QH_PASSED, "", 1);
}

Test(unwritten, written_only_in_the_second_run_is_not_deterministic)
{
    value = 9;
    expect_verdict(0, 165, writes_late, QH_FAILED,
                   "not deterministic: y[0,0] was 165 in one run and 9 in another (6 elements "
                   "differ)", 0);
}

Test(cleaned, forged_case_lines_in_a_status_message_stay_on_one_line)
{
    said = "\n999:PASSED x\nSUMMARY: total:1 passed:1";
    answer = QMM_INTERNAL;
    expect_verdict(2, 0, chatty, QH_FAILED,
                   "answered INTERNAL for a valid call: \\n999:PASSED x\\nSUMMARY: total:1 "
                   "passed:1", 1);
}

Test(cleaned, unsupported_message_is_cleaned)
{
    said = "no\r\n1:PASSED y";
    answer = QMM_UNSUPPORTED;
    expect_verdict(2, 0, chatty, QH_SKIPPED, "unsupported: no\\r\\n1:PASSED y", 1);
}

Test(cleaned, unterminated_message_is_bounded)
{
    qh_problem p;
    qlm_problem(&p, 2, 2, 3, 1, 1, 1.0, 0);
    said = NULL;
    answer = QMM_INTERNAL;
    qh_result res;
    judge_with(&p, chatty, &res);
    cr_expect_eq(res.status, QH_FAILED);
    cr_assert(res.summary);
    cr_expect(strchr(res.summary, '\n') == NULL, "summary: %s", res.summary);
    cr_expect_leq(strlen(res.summary), QH_CLEAN_LINE_MAX + 64);
    qh_result_free(&res);
    qh_problem_free(&p);
}

/* ---- the expectation: no full-size copy that is not needed ----------------------------- */

Test(expectation, no_overflow_means_no_second_buffer)
{
    qh_problem p;
    qlm_problem(&p, 2, 4, 3, 3, 5, 1.0, 0);
    qh_expectation e;
    cr_assert_eq(qh_expect(&p.call, NULL, &e), 0, "%s", e.message);
    cr_expect_eq(e.overflow, 0);
    cr_expect(e.alt.data == e.exact.data, "alt is exact itself");
    cr_expect_eq(qh_tensor_int(&e.exact, 5), 60);
    qh_expectation_free(&e);
    cr_assert_eq(qh_expect(&p.call, "onnx-ref", &e), 0, "%s", e.message);
    cr_expect(e.alt.data == e.exact.data, "a profile has no second accepted result");
    qh_expectation_free(&e);
    qh_problem_free(&p);
}

Test(expectation, overflow_computes_the_wrapped_alternative)
{
    qh_problem p;
    /* acc = 33026 * 255 * 255 = 2147515650 > INT32_MAX; / 2^24: 128 exact, wrapped -> 0 */
    qlm_problem(&p, 1, 33026, 1, 255, 255, 16777216.0, 0);
    qh_expectation e;
    cr_assert_eq(qh_expect(&p.call, NULL, &e), 0, "%s", e.message);
    cr_expect_eq(e.overflow, 1);
    cr_expect(e.alt.data != e.exact.data);
    cr_expect_eq(qh_tensor_int(&e.exact, 0), 128);
    cr_expect_eq(qh_tensor_int(&e.alt, 0), 0);
    qh_expectation_free(&e);
    qh_problem_free(&p);
}

/* ---- the comparator: blocks that match are skipped whole, mismatches still all found ----- */

Test(compare, mismatches_at_block_edges_are_all_found)
{
    enum { N = 10000 };
    static int32_t ex[N], al[N], got[N];
    for (int i = 0; i < N; i++)
        ex[i] = al[i] = got[i] = i;
    got[0] = got[4095] = got[4096] = got[8192] = got[N - 1] = -1;
    al[4096] = -1; /* accepted as the overflow alternative */
    qmm_tensor te = {.dtype = QMM_DTYPE_INT32, .rank = 1, .dims = {N}, .data = ex};
    qmm_tensor ta = te, tg = te;
    ta.data = al;
    tg.data = got;
    qh_compare r;
    qh_compare_outputs(&te, &ta, &tg, &r);
    cr_expect_eq(r.total, N);
    cr_expect_eq(r.errors, 4);
    cr_assert_eq(r.n_kept, 4);
    const int64_t want[4] = {0, 4095, 8192, N - 1};
    for (int k = 0; k < 4; k++)
        cr_expect_eq(r.kept[k], want[k], "kept[%d]", k);
    qh_compare_outputs(&te, NULL, &te, &r);
    cr_expect_eq(r.errors, 0);
    te.dims[0] = 0;
    tg.dims[0] = 0;
    qh_compare_outputs(&te, NULL, &tg, &r);
    cr_expect_eq(r.total, 0);
    cr_expect_eq(r.errors, 0);
}

/* ---- an interrupted call -------------------------------------------------------------- */

Test(interrupted, a_call_cut_short_by_a_signal_is_an_error)
{
    qh_problem p;
    qlm_problem(&p, 2, 2, 3, 1, 1, 1.0, 0);
    char dir[] = "/tmp/qmm-guard-XXXXXX";
    write_case_dir(dir, &p);
    qh_error err = {{0}};
    qh_isolation iso = {.isolate = 1, .timeout_s = 5, .memory_limit = 0};
    qh_backend hb;
    cr_assert_eq(qh_backend_open_isolated("reference", &iso, &hb, &err), 0, "%s", err.msg);
    qh_case_ref ref = {.dir = dir, .name = "case", .data_set = 0};
    qh_eval_opts o;
    memset(&o, 0, sizeof o);
    o.invoke.isolate = 1;
    o.invoke.timeout_s = 5;
    qh_interrupted = SIGINT; /* as qmmcheck's handler sets it */
    qh_result res;
    qh_eval_case(&ref, &hb, &o, &res);
    qh_interrupted = 0;
    cr_expect_str_eq(qh_case_status_name(res.status), "ERROR");
    cr_expect_str_eq(res.summary ? res.summary : "", "interrupted");
    qh_result_free(&res);
    qh_backend_close(&hb);
    qh_problem_free(&p);
    remove_case_dir(dir);
}
