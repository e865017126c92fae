/* tests/test_optimized_ops.c — the optimized CPU backend on the operators beyond the integer
 * QLinearMatMul / MatMulInteger: QOrderedMatMul (optimized/cpu/qordered.c) and, below, the
 * float8 QLinearMatMul-21 forms (optimized/cpu/float8.c). Every answer is compared byte for
 * byte with the reference's (its exact result, or the accepted int32-wrapped alternative where
 * an accumulator leaves int32), for every variant this CPU runs at several thread counts.
 * Problems come from the harness's random generator (harness/gen/problem.c: both order
 * combinations, per-column scale_B, bias, C, batches, every float8 mix) and from hand-built
 * extremes. And the thread pool they run on. */
#define _DEFAULT_SOURCE /* usleep, sigaction */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/gen/problem.h"
#include "harness/judge/expect.h"
#include "ops/qmm_ops.h"
#include "optimized/qmm_optimized.h"
#include "qmm/backend.h"

/* The backends compared: every variant this CPU runs, 1 and 3 threads, and auto. */
#define MAX_BACKENDS 16

static int open_all(qmm_backend **be)
{
    int n = 0;
    qmm_status st;
    const char *isa;
    for (int i = 0; (isa = qmm_optimized_variant_name(i)) != NULL && n < MAX_BACKENDS - 3; i++) {
        qmm_optimized_variant v;
        qmm_optimized_variant_info(i, &v);
        if (v.missing)
            continue;
        for (int t = 1; t <= 3; t += 2) {
            char spec[64];
            snprintf(spec, sizeof spec, "isa=%s,threads=%d", isa, t);
            be[n] = qmm_optimized_open(QMM_ABI_VERSION, spec, &st);
            cr_assert_not_null(be[n], "%s: %s", spec, st.message);
            n++;
        }
    }
    be[n] = qmm_optimized_open(QMM_ABI_VERSION, "threads=2", &st);
    cr_assert_not_null(be[n]);
    return n + 1;
}

static void close_all(qmm_backend **be, int n)
{
    for (int i = 0; i < n; i++)
        be[i]->close(be[i]);
}

/* Runs `call` on `be` and checks it against the reference's expectation: the same status,
 * and for OK the exact bytes (or the wrapped alternative's). Returns 1 when compared. */
static int check_call(qmm_backend *be, const qmm_call *call, const char *what)
{
    qh_expectation e;
    cr_assert_eq(qh_expect(call, "spec", &e), 0, "%s: %s", what, e.message);
    qmm_call mine = e.call;
    qmm_tensor *y = (qmm_tensor *)qmm_call_output_c(&mine);
    int64_t n = qmm_tensor_numel(&e.exact);
    size_t bytes = n > 0 ? (size_t)n * qmm_dtype_size(e.exact.dtype) : 0;
    void *buf = malloc(bytes + 1);
    memset(buf, 0x5a, bytes + 1);
    y->data = buf;
    qmm_status st;
    qmm_status_code rc = qmm_backend_run(be, &mine, &st);
    cr_expect_eq(rc, e.code, "%s on %s: %s (reference: %s)", what, be->name, st.message,
                 e.message);
    if (rc == QMM_OK && e.code == QMM_OK && bytes) {
        int same = memcmp(buf, e.exact.data, bytes) == 0 ||
                   (e.overflow && memcmp(buf, e.alt.data, bytes) == 0);
        cr_expect(same, "%s on %s: output differs from the reference", what, be->name);
    }
    free(buf);
    qh_expectation_free(&e);
    return rc == QMM_OK;
}

/* ---- QOrderedMatMul ---- */

Test(qordered, answers_every_order_combination)
{
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    qmm_call call;
    memset(&call, 0, sizeof call);
    call.op = QMM_OP_QORDEREDMATMUL;
    qmm_status st;
    cr_assert_eq(be[0]->query(be[0], &call, &st), QMM_OK, "%s", st.message);
    close_all(be, nb);
}

/* `want` problems of the generator (seed, options) that `pick` takes, each on every backend:
 * most of them valid. */
static void random_agree(uint64_t seed, const qh_random_opts *o, int (*pick)(const qh_problem *),
                         int want)
{
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    int compared = 0, ok = 0;
    for (uint64_t i = 0; compared < want && i < 20000; i++) {
        qh_rng r;
        qh_rng_seed(&r, seed, i);
        qh_problem p;
        cr_assert_eq(qh_problem_random(&p, &r, o), 0);
        if (pick(&p) && p.y_shape_known) {
            char what[64];
            snprintf(what, sizeof what, "problem %llu", (unsigned long long)i);
            for (int b = 0; b < nb; b++)
                ok += check_call(be[b], &p.call, what);
            compared++;
        }
        qh_problem_free(&p);
    }
    cr_assert_eq(compared, want);
    cr_assert_gt(ok, want * 8 / 10 * nb, "too few valid problems: %d", ok);
    close_all(be, nb);
}

static int is_qordered(const qh_problem *p)
{
    return p->call.op == QMM_OP_QORDEREDMATMUL;
}

Test(qordered, random_problems_agree_with_the_reference)
{
    qh_random_opts o = {.invalid_per_mille = 20};
    random_agree(2029, &o, is_qordered, 400);
}

/* A COL32 problem: M x K (A in COL32) times B^T (N x K, order_b) with every value v. */
static void qordered_filled(int32_t order_a, int32_t order_b, int64_t batch, int64_t m,
                            int64_t k, int64_t n, int8_t va, int8_t vb, float sa, float sb,
                            float sy, qmm_call *call, void **bufs)
{
    memset(call, 0, sizeof *call);
    call->op = QMM_OP_QORDEREDMATMUL;
    qmm_qorderedmatmul *c = &call->u.qorderedmatmul;
    bufs[0] = malloc((size_t)(batch * m * k));
    bufs[1] = malloc((size_t)(k * n));
    bufs[2] = malloc(3 * sizeof(float));
    memset(bufs[0], (uint8_t)va, (size_t)(batch * m * k));
    memset(bufs[1], (uint8_t)vb, (size_t)(k * n));
    float *s = bufs[2];
    s[0] = sa;
    s[1] = sb;
    s[2] = sy;
    c->a = (qmm_tensor){QMM_DTYPE_INT8, 3, {batch, m, k}, bufs[0]};
    c->b = (qmm_tensor){QMM_DTYPE_INT8, 2, {k, n}, bufs[1]};
    c->scale_a = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &s[0]};
    c->scale_b = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &s[1]};
    c->scale_y = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &s[2]};
    c->y = (qmm_tensor){QMM_DTYPE_INT8, 3, {batch, m, n}, NULL};
    c->order_a = order_a;
    c->order_b = order_b;
    c->order_y = order_a;
}

Test(qordered, accumulators_past_int32_give_the_wrapped_alternative)
{
    /* K = 131104: 131104 products of (-128)(-128) are 2^31 + 2^19, past int32 */
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    int32_t orders[3][2] = {{QMM_ORDER_ROW, QMM_ORDER_COL},
                            {QMM_ORDER_COL32, QMM_ORDER_COL4_4R2_8C},
                            {QMM_ORDER_COL32, QMM_ORDER_COL32_2R_4R4}};
    for (int o = 0; o < 3; o++) {
        qmm_call call;
        void *bufs[3];
        qordered_filled(orders[o][0], orders[o][1], 1, 2, 131104, 32, -128, -128, 1.0f,
                        1.0f / 65536, 1.0f / 256, &call, bufs);
        for (int b = 0; b < nb; b++)
            cr_expect(check_call(be[b], &call, "K = 131104"));
        for (int i = 0; i < 3; i++)
            free(bufs[i]);
    }
    close_all(be, nb);
}

/* ---- float8 QLinearMatMul-21 ---- */

Test(float8, random_problems_of_every_mix_agree_with_the_reference)
{
    qh_random_opts o = {.invalid_per_mille = 20, .float8_per_mille = 1000};
    random_agree(2030, &o, qh_problem_has_float8, 500);
}

/* A 2 x K x 3 QLinearMatMul-21 of types ta, tb, ty: a[i][k] = fa(i, k), b[k][j] = fb(k, j)
 * (codes), per-tensor zero points za, zb, zy (codes) and float scales. */
typedef uint8_t (*code_fn)(int64_t r, int64_t c);

typedef struct f8_call {
    qmm_call call;
    uint8_t *a, *b, z[3];
    float s[3];
} f8_call;

static void f8_make(f8_call *f, int32_t ta, int32_t tb, int32_t ty, int64_t k, code_fn fa,
                    code_fn fb, const uint8_t z[3], const float s[3])
{
    memset(f, 0, sizeof *f);
    f->a = malloc((size_t)(2 * k) + 1);
    f->b = malloc((size_t)(3 * k) + 1);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t kk = 0; kk < k; kk++)
            f->a[i * k + kk] = fa(i, kk);
    for (int64_t kk = 0; kk < k; kk++)
        for (int64_t j = 0; j < 3; j++)
            f->b[kk * 3 + j] = fb(kk, j);
    memcpy(f->z, z, 3);
    memcpy(f->s, s, sizeof f->s);
    f->call.op = QMM_OP_QLINEARMATMUL;
    qmm_qlinearmatmul *c = &f->call.u.qlinearmatmul;
    c->opset = 21;
    c->a = (qmm_tensor){ta, 2, {2, k}, f->a};
    c->a_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &f->s[0]};
    c->a_zero_point = (qmm_tensor){ta, 0, {0}, &f->z[0]};
    c->b = (qmm_tensor){tb, 2, {k, 3}, f->b};
    c->b_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &f->s[1]};
    c->b_zero_point = (qmm_tensor){tb, 0, {0}, &f->z[1]};
    c->y_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &f->s[2]};
    c->y_zero_point = (qmm_tensor){ty, 0, {0}, &f->z[2]};
    c->y = (qmm_tensor){ty, 2, {2, 3}, NULL};
}

static void f8_free(f8_call *f)
{
    free(f->a);
    free(f->b);
}

static const int32_t f8_types[4] = {QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FNUZ,
                                    QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2FNUZ};
static int32_t cur_type; /* the float8 type the code functions below draw from */

static uint8_t max_pos(int64_t r, int64_t c)
{
    (void)r;
    (void)c;
    return qmm_float8_format_of(cur_type)->max_code;
}

static uint8_t max_alt(int64_t r, int64_t c)
{
    /* +max, -max, +max, ... along k (column c shifts the pattern: all three sums differ) */
    uint8_t mx = qmm_float8_format_of(cur_type)->max_code;
    return (uint8_t)(((r + c) % 2 ? 0x80 : 0) | mx);
}

static uint8_t smallest(int64_t r, int64_t c)
{
    return (r + c) % 3 == 0 ? 0x81 : 0x01; /* ± the smallest subnormal */
}

static uint8_t max_odd(int64_t r, int64_t c)
{
    /* the largest value, with now and then the smallest subnormal: odd differences, so a sum
     * past 2^53 would lose its low bits in a double */
    (void)r;
    return c % 7 == 3 ? 0x01 : qmm_float8_format_of(cur_type)->max_code;
}

/* max·max cancelling to the last term, a subnormal product: x is tiny and exact */
static uint8_t cancel_a(int64_t r, int64_t c)
{
    (void)r;
    const qmm_float8_format *f = qmm_float8_format_of(cur_type);
    return c == 2 ? 0x01 : f->max_code;
}

static uint8_t cancel_b(int64_t r, int64_t c)
{
    const qmm_float8_format *f = qmm_float8_format_of(cur_type);
    if (r == 2)
        return (uint8_t)(c + 1); /* subnormal codes 1, 2, 3 */
    return (uint8_t)((r == 1 ? 0x80 : 0) | f->max_code);
}

/* Every float8 type into every y type (int8, uint8 and the four float8), a few scales. */
static void extremes(int64_t k, code_fn fa, code_fn fb, const char *what)
{
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    const int32_t ys[6] = {QMM_DTYPE_INT8, QMM_DTYPE_UINT8, QMM_DTYPE_FLOAT8E4M3FN,
                           QMM_DTYPE_FLOAT8E4M3FNUZ, QMM_DTYPE_FLOAT8E5M2,
                           QMM_DTYPE_FLOAT8E5M2FNUZ};
    float scales[4][3] = {{1.0f, 1.0f, 1.0f},
                          {0x1p-20f, 0x1p-20f, 0x1p-30f},
                          {0.37f, 1.3f, 0x1p-70f},
                          {0x1p-20f, 0x1p-20f, 1.0f}};
    for (int t = 0; t < 4; t++) {
        cur_type = f8_types[t];
        /* the fourth: K·max² brought to about 100.37, within every y's range */
        double mx = qmm_float8_decode(cur_type, qmm_float8_format_of(cur_type)->max_code);
        scales[3][2] = (float)((double)k * mx * mx * 0x1p-40 / 100.37);
        for (int y = 0; y < 6; y++)
            for (int s = 0; s < 4; s++) {
                f8_call f;
                uint8_t z[3] = {0, 0, 0};
                f8_make(&f, cur_type, cur_type, ys[y], k, fa, fb, z, scales[s]);
                char label[160];
                snprintf(label, sizeof label, "%s, %s into %s, scales %d, K %lld", what,
                         qmm_dtype_name(cur_type), qmm_dtype_name(ys[y]), s, (long long)k);
                for (int b = 0; b < nb; b++)
                    cr_expect(check_call(be[b], &f.call, label), "%s", label);
                f8_free(&f);
            }
    }
    close_all(be, nb);
}

Test(float8, largest_times_largest_over_a_long_k, .timeout = 600)
{
    /* K = 40000: past the e5m2 products' 53 bits (limbs) and, for e4m3 with zero points of
     * -max below, past one double chunk */
    extremes(40000, max_pos, max_pos, "max x max");
    extremes(40001, max_alt, max_pos, "alternating max");
}

Test(float8, past_the_double_exact_k_and_with_zero_points_at_the_far_end, .timeout = 600)
{
    /* (a - za) = 2·max everywhere: e4m3fn products of 2^37.6 · K = 70000 pass 2^53, so the
     * sums are chunked; e5m2 takes limbs */
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    for (int t = 0; t < 4; t++) {
        cur_type = f8_types[t];
        uint8_t neg = qmm_float8_format_of(cur_type)->max_code | 0x80;
        uint8_t z[3] = {neg, neg, 0};
        /* x = acc·2^-60·2^-2·shift / sy about 100 */
        double mx = 2 * qmm_float8_decode(cur_type, qmm_float8_format_of(cur_type)->max_code);
        const float s[3] = {0x1p-30f, 0x1p-30f, (float)(70000 * mx * mx * 0x1p-60 / 100.37)};
        for (int y = 0; y < 2; y++) {
            f8_call f;
            f8_make(&f, cur_type, cur_type, y ? cur_type : QMM_DTYPE_INT8, 70000, max_odd,
                    max_odd, z, s);
            for (int b = 0; b < nb; b++)
                cr_expect(check_call(be[b], &f.call, qmm_dtype_name(cur_type)));
            f8_free(&f);
        }
    }
    close_all(be, nb);
}

Test(float8, subnormal_times_subnormal)
{
    extremes(7, smallest, smallest, "subnormal x subnormal");
}

Test(float8, cancellation_down_to_a_subnormal_product)
{
    extremes(3, cancel_a, cancel_b, "cancellation");
}

Test(float8, a_prepacked_b_is_refused_for_float8)
{
    qmm_status st;
    qmm_backend *be = qmm_optimized_open(QMM_ABI_VERSION, "threads=1", &st);
    cr_assert_not_null(be);
    cur_type = QMM_DTYPE_FLOAT8E4M3FN;
    f8_call f;
    uint8_t z[3] = {0, 0, 0};
    const float s[3] = {1, 1, 1};
    f8_make(&f, QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, 4, max_pos, max_pos,
            z, s);
    qmm_qlinearmatmul *c = &f.call.u.qlinearmatmul;
    uint8_t y[6];
    c->y.data = y;
    qmm_optimized_packed_b *pb = qmm_optimized_pack_b(be, &c->b, &st);
    cr_assert_not_null(pb, "%s", st.message);
    cr_expect_eq(qmm_optimized_qlinearmatmul_packed(be, c, pb, &st), QMM_UNSUPPORTED);
    cr_expect(strstr(st.message, "a is float8; a prepacked B serves the integer kernels only"),
              "%s", st.message);
    qmm_optimized_packed_b_free(pb);
    f8_free(&f);
    be->close(be);
}

Test(float8, the_fast_encoder_rounds_as_the_shared_one)
{
    /* float8.c's encode_y, through y = a·b with a = 1.0: every finite code of every type as
     * x, then x ± a small step (just off each value, on each midpoint, just past it) go
     * through the reference and every variant alike */
    qmm_backend *be[MAX_BACKENDS];
    int nb = open_all(be);
    for (int t = 0; t < 4; t++) {
        cur_type = f8_types[t];
        /* a: 256 rows of one k, every code (NaN and infinities replaced by 0); b: 1.0, 1.25,
         * 0.75; y_scale 1, 3/4, 8/7, 16/17: x lands on values, midpoints and between them
         * in every y type */
        for (int sc = 0; sc < 4; sc++) {
            static const float ys[4] = {1.0f, 0.75f, 1.0f / 0.875f, 1.0f / 1.0625f};
            f8_call f;
            memset(&f, 0, sizeof f);
            f.a = malloc(256);
            f.b = malloc(3);
            for (int code = 0; code < 256; code++) {
                double v = qmm_float8_decode(cur_type, (uint8_t)code);
                f.a[code] = isfinite(v) ? (uint8_t)code : 0;
            }
            f.b[0] = qmm_float8_encode(cur_type, 1.0);
            f.b[1] = qmm_float8_encode(cur_type, 1.25);
            f.b[2] = qmm_float8_encode(cur_type, 0.75);
            f.s[0] = f.s[1] = 1.0f;
            f.s[2] = ys[sc];
            f.call.op = QMM_OP_QLINEARMATMUL;
            qmm_qlinearmatmul *c = &f.call.u.qlinearmatmul;
            c->opset = 21;
            c->a = (qmm_tensor){cur_type, 2, {256, 1}, f.a};
            c->a_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &f.s[0]};
            c->a_zero_point = (qmm_tensor){cur_type, 0, {0}, &f.z[0]};
            c->b = (qmm_tensor){cur_type, 2, {1, 3}, f.b};
            c->b_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &f.s[1]};
            c->b_zero_point = (qmm_tensor){cur_type, 0, {0}, &f.z[1]};
            c->y_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &f.s[2]};
            for (int y = 0; y < 4; y++) {
                c->y_zero_point = (qmm_tensor){f8_types[y], 0, {0}, &f.z[2]};
                c->y = (qmm_tensor){f8_types[y], 2, {256, 3}, NULL};
                for (int b = 0; b < nb; b++)
                    cr_expect(check_call(be[b], &f.call, qmm_dtype_name(f8_types[y])));
            }
            f8_free(&f);
        }
    }
    close_all(be, nb);
}

/* ---- the thread pool (optimized/cpu/threadpool.c) ---- */

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "optimized/cpu/opt_internal.h"

typedef struct pool_job {
    atomic_int counts[64];
    pthread_t who[4];
} pool_job;

static void count_task(void *ctx, size_t t, int worker)
{
    pool_job *j = ctx;
    j->who[worker] = pthread_self();
    if (t % 7 == 3)
        sched_yield(); /* now and then a slow task: workers arrive late, jobs overlap them */
    atomic_fetch_add(&j->counts[t], 1);
}

Test(pool, every_task_runs_once_and_no_late_worker_touches_a_finished_job)
{
    for (int threads = 2; threads <= 4; threads++) {
        qmm_opt_pool *p = qmm_opt_pool_create(threads);
        cr_assert_not_null(p);
        static pool_job jobs[2];
        size_t prev_n = 0;
        for (int i = 0; i < 3000; i++) {
            pool_job *j = &jobs[i % 2], *prev = &jobs[(i + 1) % 2];
            size_t n = 2 + (size_t)(i * 7919 % 61);
            for (int t = 0; t < 64; t++)
                atomic_store(&j->counts[t], 0);
            qmm_opt_pool_run(p, n, count_task, j);
            for (size_t t = 0; t < 64; t++)
                cr_assert_eq(atomic_load(&j->counts[t]), t < n ? 1 : 0,
                             "threads %d, job %d: task %zu ran %d times", threads, i, t,
                             atomic_load(&j->counts[t]));
            /* the job before this one was not touched once its call had returned */
            for (size_t t = 0; i > 0 && t < 64; t++)
                cr_assert_eq(atomic_load(&prev->counts[t]), t < prev_n ? 1 : 0,
                             "threads %d, job %d: a late worker ran task %zu of job %d",
                             threads, i, t, i - 1);
            prev_n = n;
        }
        qmm_opt_pool_destroy(p);
    }
}

typedef struct first_job {
    atomic_int first[4]; /* the first task each worker ran; -1: none */
} first_job;

static void note_first_task(void *ctx, size_t t, int worker)
{
    first_job *j = ctx;
    int none = -1;
    atomic_compare_exchange_strong(&j->first[worker], &none, (int)t);
    usleep(3000); /* long enough for every worker to wake and claim while the others work */
}

Test(pool, each_thread_begins_with_its_home_range, .timeout = 60)
{
    /* Thread w's home is the w-th of `threads` near-equal ranges of the task indices: the
     * same thread reads the same part of a constant operand on every call. With one shared
     * counter (before), a worker's first task was whatever came next (task 1 or 2), never the
     * first of its range. A worker can be late (no core for a while), so a run where some
     * worker ran nothing does not decide; one of 20 runs must show every worker's home. */
    for (int threads = 2; threads <= 3; threads++) {
        qmm_opt_pool *p = qmm_opt_pool_create(threads);
        cr_assert_not_null(p);
        size_t n = 4 * (size_t)threads;
        int seen = 0, decided = 0;
        for (int run = 0; run < 20 && !seen; run++) {
            first_job j;
            for (int w = 0; w < 4; w++)
                atomic_init(&j.first[w], -1);
            qmm_opt_pool_run(p, n, note_first_task, &j);
            int all = 1, home = 1;
            for (int w = 0; w < threads; w++) {
                int f = atomic_load(&j.first[w]);
                all &= f >= 0;
                home &= f == 4 * w;
            }
            decided += all;
            seen = all && home;
        }
        cr_expect(seen, "threads %d: in none of %d runs with every worker present did each "
                        "begin at its home range",
                  threads, decided);
        qmm_opt_pool_destroy(p);
    }
}

static sem_t held;

static void hold_here(int sig)
{
    (void)sig;
    sem_wait(&held); /* async-signal-safe: the worker stays here until released */
}

typedef struct pool_call {
    qmm_opt_pool *p;
    pool_job job;
    atomic_int done;
} pool_call;

static void *run_job(void *arg)
{
    pool_call *c = arg;
    qmm_opt_pool_run(c->p, 4, count_task, &c->job);
    atomic_store(&c->done, 1);
    return NULL;
}

Test(pool, a_call_does_not_wait_for_a_worker_that_never_got_a_core, .timeout = 60)
{
    /* The worker is held (in a signal handler, asleep outside the pool's lock) as a worker is
     * that the OS gives no core while the other one is busy. The call runs its four tasks
     * itself and returns; until 2026-11-27 it waited for that worker to check in, however
     * long (here: until released — for ever). */
    cr_assert_eq(sem_init(&held, 0, 0), 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = hold_here;
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    pool_call c;
    memset(&c, 0, sizeof c);
    c.p = qmm_opt_pool_create(2);
    cr_assert_not_null(c.p);
    /* learn the worker's thread: run jobs until it has run a task */
    pthread_t worker = 0;
    for (int i = 0; i < 100000 && !worker; i++) {
        memset(&c.job, 0, sizeof c.job);
        qmm_opt_pool_run(c.p, 64, count_task, &c.job);
        worker = c.job.who[1];
    }
    cr_assert(worker, "the worker never ran a task");
    usleep(200 * 1000); /* it spins briefly, then sleeps on its condition variable */
    cr_assert_eq(pthread_kill(worker, SIGUSR1), 0);
    usleep(100 * 1000);
    memset(&c.job, 0, sizeof c.job);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, run_job, &c), 0);
    for (int i = 0; i < 300 && !atomic_load(&c.done); i++) /* 30 s */
        usleep(100 * 1000);
    int returned = atomic_load(&c.done);
    sem_post(&held); /* release the worker either way, so the test can end */
    pthread_join(t, NULL);
    cr_expect(returned, "the call waited for a worker that had no task (30 s)");
    for (int i = 0; i < 4; i++)
        cr_expect_eq(atomic_load(&c.job.counts[i]), 1);
    qmm_opt_pool_destroy(c.p);
    sem_destroy(&held);
}
