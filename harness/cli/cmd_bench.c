/* harness/cli/cmd_bench.c — `qmmcheck bench`: QLinearMatMul throughput of one backend.
 *
 *   qmmcheck bench --backend B --shape MxKxN [--shape ...] --types u8s8u8 --threads T
 *                  [--const-b] [--reps N] [--report json:FILE]
 *   qmmcheck bench --peak [--threads T]
 *
 * Each shape: warm-up calls, then N timed calls (default: as many as fit in about a second,
 * at least 5); the median is reported with GOPS = 2*M*N*K / median and the percentage of this
 * machine's int8 peak for T threads: the best of short samples of the best variant's peak loop
 * (qmm_optimized_peak_*), taken before the first shape and between blocks of timed calls, so
 * a busy phase of the machine lowers both. The lines are printed once every shape is timed,
 * against one peak: if a timed call beat the loop, the loop is sampled again, and if it still
 * does the peak is raised to that call's rate and a line says so (no percentage reads above
 * 100). --threads is passed to the optimized backend as threads=T; other backends get their
 * spec unchanged.
 * --const-b packs B once through the optimized backend's prepack API (untimed) and times the
 * calls on the packed B; for other backends it changes nothing but the label.
 * Every shape's answer is judged against the reference's before it is timed, and every timed
 * call's answer compared with it (bench_timed_call); with one backend as with several.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/invoke/strays.h"
#include "harness/invoke/backends.h"
#include "harness/base/clean.h"
#include "harness/base/fileio.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/invoke/invoke.h"
#include "harness/io/cpuclass.h"
#include "harness/judge/judge.h"
#include "harness/report/report.h"
#include "harness/base/numparse.h"
#include "optimized/qmm_optimized.h"

/* Reference work (harness/judge/expect.h's units) from which bench says it is computing it
 * (2^30: about 4 s on a Zen 4, where 2048^3's 8.9e9 took 35 s) */
#define BENCH_SAY_WORK ((int64_t)1 << 30)

#define BENCH_MAX_SHAPES 32

/* y's fill before every checked or timed call: bytes a call leaves unwritten keep it (the
 * judge's fill, qh_judge_opts.fill) */
#define BENCH_FILL 0xa5

/* The peak's sampling (docs/optimized.md "The peak"): a sample's length, how many before the
 * first shape, the blocks a shape's timed calls are split into (a sample after each), and how
 * many more when a timed call beat the loop or it read below the published rate. */
#define PEAK_SAMPLE_S 1e-3
#define PEAK_FIRST 16
#define PEAK_BLOCKS 8
#define PEAK_AGAIN 64
/* `bench --peak`: about this long sampling per thread count, every loop in turn */
#define PEAK_ONLY_S 1.0

typedef struct bench_result {
    int64_t m, k, n;
    int reps;
    double median_s, min_s, gops, best_gops, pct_peak, pct_peak_best;
} bench_result;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { O_BACKEND, O_SHAPE, O_TYPES, O_THREADS, O_CONST_B, O_B_CONSTANT, O_B_BOTH, O_REPS,
       O_ROUNDS, O_PROFILE, O_REPORT, O_PEAK };
static const qh_option bench_options[] = {
    {O_BACKEND, "--backend", 'b', "SPEC", 0,
     "a backend to time (default optimized); several: timed alternating, checked, ratios"},
    {O_SHAPE, "--shape", 0, "MxKxN", 0, "a QLinearMatMul shape to time (repeatable)"},
    {O_TYPES, "--types", 0, "TYPES", 0, "a, b and y's types, as u8s8u8 (the default)"},
    {O_THREADS, "--threads", 0, "T", 0, "the optimized backend's thread count"},
    {O_CONST_B, "--const-b", 0, NULL, 0, "pack B once (optimized) and time the packed calls"},
    {O_B_CONSTANT, "--b-constant", 0, NULL, 0, "the same as --const-b"},
    {O_B_BOTH, "--b-both", 0, NULL, 0, "several backends: each shape with B as input, then constant"},
    {O_REPS, "--reps", 0, "N", 0,
     "timed calls per shape, or per round (default: about 1 s; a round about 0.2 s)"},
    {O_ROUNDS, "--rounds", 0, "R", 0,
     "alternating rounds when timing several backends (default 5; given: checked rounds)"},
    {O_PROFILE, "--profile", 0, "B=PROFILE", 0,
     "judge backend B (its --backend text, name or position) under this profile, not spec"},
    {O_REPORT, "--report", 0, "json:FILE", 0, "also write the results as JSON"},
    {O_PEAK, "--peak", 0, NULL, 0, "only measure this machine's int8 peak (every loop, checked)"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_bench_usage = {
    "bench",
    "--backend SPEC [--backend SPEC ...] --shape MxKxN [--shape ...] [options] | --peak "
    "[--threads T]",
    "time a backend's QLinearMatMul against this machine's int8 peak, or several alternating",
    "Every backend's answer is judged against the reference's before it is timed, and every\n"
    "timed call's answer is compared with it (y refilled before each, outside the timed\n"
    "region): a backend that answers otherwise on any call is FAILED with no time. A rate above\n"
    "the peak loop's is printed as SUSPECT. Each shape's reference work is checked against\n"
    "QH_MAX_WORK before anything is timed, and --report's FILE is removed first.\n"
    "Exit status: 0 when every backend timed PASSED; 1 when one FAILED or bench could not\n"
    "finish (a shape over the limit, memory); 2 for usage errors or a backend that does not\n"
    "open; 3 when several backends were all SKIPPED (nothing was timed); 128+N when signal N\n"
    "stopped it (the report's temporary file removed).\n",
    bench_options, 0};

#define usage(msg) qh_opt_error(&qh_bench_usage, QH_ERR_USAGE, "%s", (msg))
#define bad_value(...) qh_opt_bad_value(&qh_bench_usage, QH_ERR_USAGE, __VA_ARGS__)

static int parse_types(const char *s, int32_t t[3])
{
    if (strlen(s) != 6)
        return -1;
    for (int i = 0; i < 3; i++) {
        if (strncmp(s + 2 * i, "u8", 2) == 0)
            t[i] = QMM_DTYPE_UINT8;
        else if (strncmp(s + 2 * i, "s8", 2) == 0)
            t[i] = QMM_DTYPE_INT8;
        else
            return -1;
    }
    return 0;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A backend's text (its name, a status message) as bench prints it: cleaned, since a plugin's
 * text is not trusted (harness/base/clean.h). */
static const char *shown(char *buf, size_t size, const char *text)
{
    qh_clean_into(buf, size, text ? text : "", text ? strlen(text) : 0, 0);
    return buf;
}

/* The benchmark problem of one shape: fixed pseudo-random A and B (seed 12345, the same for
 * every backend and run), per-tensor scales and zero points, y's buffer. */
typedef struct bench_problem {
    uint8_t *a, *b, *y;
    size_t yn;
    float sa, sb, sy;
    uint8_t za, zb, zy;
    qmm_call call;
} bench_problem;

static void problem_free(bench_problem *p)
{
    free(p->a);
    free(p->b);
    free(p->y);
    p->a = p->b = p->y = NULL;
}

/* p's scales, zero points and call for MxKxN over the buffers p->a, p->b and p->y (not read
 * here). The call points into *p: p stays put. */
static void problem_call(bench_problem *p, int64_t m, int64_t k, int64_t n, const int32_t t[3])
{
    p->sa = 0.0173f, p->sb = 0.0041f, p->sy = 0.93f;
    p->za = t[0] == QMM_DTYPE_UINT8 ? 131 : 3;
    p->zb = t[1] == QMM_DTYPE_UINT8 ? 122 : 0;
    p->zy = t[2] == QMM_DTYPE_UINT8 ? 128 : 0;
    qmm_qlinearmatmul c = {
        .a = {t[0], 2, {m, k}, p->a},
        .a_scale = {QMM_DTYPE_FLOAT, 0, {0}, &p->sa},
        .a_zero_point = {t[0], 0, {0}, &p->za},
        .b = {t[1], 2, {k, n}, p->b},
        .b_scale = {QMM_DTYPE_FLOAT, 0, {0}, &p->sb},
        .b_zero_point = {t[1], 0, {0}, &p->zb},
        .y_scale = {QMM_DTYPE_FLOAT, 0, {0}, &p->sy},
        .y_zero_point = {t[2], 0, {0}, &p->zy},
        .y = {t[2], 2, {m, n}, p->y},
        .opset = 10,
    };
    /* through the harness's copy of the table, as every other caller (harness/invoke/backends.h) */
    p->call = (qmm_call){.op = QMM_OP_QLINEARMATMUL, .u.qlinearmatmul = c};
}

/* 0, or -1 when memory runs out (message printed). The call points into *p: p stays put. */
static int problem_make(bench_problem *p, int64_t m, int64_t k, int64_t n, const int32_t t[3])
{
    size_t an = (size_t)(m * k), bn = (size_t)(k * n);
    memset(p, 0, sizeof *p);
    p->yn = (size_t)(m * n);
    p->a = malloc(an ? an : 1);
    p->b = malloc(bn ? bn : 1);
    p->y = malloc(p->yn ? p->yn : 1);
    if (!p->a || !p->b || !p->y) {
        problem_free(p);
        fprintf(stderr, "qmmcheck bench: out of memory\n");
        return -1;
    }
    uint64_t seed = 12345;
    for (size_t i = 0; i < an; i++)
        p->a[i] = (uint8_t)rng_next(&seed);
    for (size_t i = 0; i < bn; i++)
        p->b[i] = (uint8_t)rng_next(&seed);
    problem_call(p, m, k, n, t);
    return 0;
}

/* 0 when the reference can check every shape (QH_MAX_WORK), asked before anything is timed
 * or any report written; else 1 after saying which cannot. */
static int shapes_checkable(int64_t (*shapes)[3], int nshapes, const int32_t t[3])
{
    static uint8_t none; /* validation asks for A's and B's data; the limit reads none */
    for (int s = 0; s < nshapes; s++) {
        bench_problem p;
        memset(&p, 0, sizeof p);
        p.a = p.b = p.y = &none;
        problem_call(&p, shapes[s][0], shapes[s][1], shapes[s][2], t);
        char msg[QH_CLEAN_LINE_MAX];
        if (qh_expect_work_check(&p.call, msg, sizeof msg) != 0) {
            fprintf(stderr, "qmmcheck bench: %lldx%lldx%lld: the reference cannot check it: %s\n",
                    (long long)shapes[s][0], (long long)shapes[s][1], (long long)shapes[s][2],
                    msg);
            return 1;
        }
    }
    return 0;
}

/* The expectation of p's call under `profile`, announced first when it takes a while; 0, or
 * 1 after saying why the reference cannot give it. */
static int bench_expect(bench_problem *p, const char *profile, qh_expectation *e)
{
    const qmm_tensor *y = &p->call.u.qlinearmatmul.y;
    long long m = (long long)y->dims[0], n = (long long)y->dims[1],
              k = (long long)p->call.u.qlinearmatmul.a.dims[1];
    /* the reference is deliberately simple: a large shape takes it a while (2048^3 about
       35 s on a Zen 4), which is said before it starts rather than left silent */
    int64_t work = qh_expect_work(&p->call);
    if (work >= BENCH_SAY_WORK && work <= QH_MAX_WORK) /* past it: refused below */
        fprintf(stderr,
                "qmmcheck bench: %lldx%lldx%lld: computing the reference's answer under "
                "profile %s first (%.2g units of work; docs/formats.md, \"Limits\") ...\n",
                m, k, n, profile, (double)work);
    if (qh_expect(&p->call, profile, e) == 0 && e->code == QMM_OK)
        return 0;
    char msg[QH_CLEAN_LINE_MAX];
    fprintf(stderr,
            "qmmcheck bench: %lldx%lldx%lld: the reference cannot check it under profile %s: "
            "%s\n", m, k, n, profile, shown(msg, sizeof msg, e->message));
    qh_expectation_free(e);
    return 1;
}

/* One call as bench times it: on the packed B when there is one (the optimized backend's
 * prepack API), else through the harness's copy of the table. */
static qmm_status_code bench_call(qh_backend *qb, qmm_call *call, qmm_optimized_packed_b *pb,
                                  qmm_status *st)
{
    return pb ? qmm_optimized_qlinearmatmul_packed(qb->be, &call->u.qlinearmatmul, pb, st)
              : qh_backend_call(qb, call, st);
}

/* The check before timing: one call into y pre-filled with BENCH_FILL, judged against e.
 * PASSED, FAILED or SKIPPED; why: the judge's reason. */
static qh_case_status bench_check(qh_backend *qb, bench_problem *p, qmm_optimized_packed_b *pb,
                                  const qh_expectation *e, char *why, size_t size)
{
    qmm_status st;
    memset(&st, 0, sizeof st);
    memset(p->y, BENCH_FILL, p->yn);
    qh_invocation inv;
    memset(&inv, 0, sizeof inv);
    inv.outcome = QH_RETURNED;
    inv.code = bench_call(qb, &p->call, pb, &st);
    inv.st = st;
    inv.y = p->call.u.qlinearmatmul.y; /* not owned: never qh_invocation_free'd */
    qh_verdict v;
    qh_verdict_init(&v);
    qh_judge_opts o = {.text = 1, .fill = BENCH_FILL};
    qh_judge(e, &inv, NULL, &o, &v);
    qh_case_status status = v.status == QH_PASSED ? QH_PASSED
                            : v.status == QH_SKIPPED ? QH_SKIPPED : QH_FAILED;
    /* the judge's line for the first mismatch (harness/judge/judge.c: its values, and the
       profiles that give what the backend wrote, judged at the kept mismatches only where the
       output is large), and where a profile is named, how to judge under it */
    qh_sb w = {0};
    qh_sb_puts(&w, v.summary.s ? v.summary.s : "");
    const char *d = v.detail.s ? v.detail.s : "";
    d += strspn(d, " ");
    if (v.n_mismatches > 0 && d[0])
        qh_sb_printf(&w, "; %.*s", (int)strcspn(d, "\n"), d);
    if (v.n_mismatches > 0 && v.mismatches[0].models_known && v.mismatches[0].models)
        qh_sb_puts(&w, "; --profile B=PROFILE judges a backend under one");
    snprintf(why, size, "%s", w.s ? w.s : "");
    qh_sb_free(&w);
    qh_verdict_free(&v);
    return status;
}

/* One timed call and what it answered. */
typedef struct timed_call {
    double wall_s, cpu_s;   /* the call alone */
    int64_t errors, total;  /* y's elements that differ from the expectation's, of all */
} timed_call;

/* The CPU time this process has used, all threads, in seconds: on a machine other work
 * shares, a call's CPU time moves far less than its wall time (it leaves out the time the
 * call waited for a core; not the caches the other work took). */
static double cpu_seconds(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 ? ts.tv_sec + ts.tv_nsec * 1e-9 : 0;
}

/* One timed call, checked: y refilled with BENCH_FILL before it and its answer compared with
 * e after it, both outside the timed region, which holds the backend call alone (so a kernel
 * that skips work when y already holds an answer, or answers otherwise on some calls, is
 * caught on every call). The call's code; tc->errors is 0 unless it answered OK. */
static qmm_status_code bench_timed_call(qh_backend *qb, bench_problem *p,
                                        qmm_optimized_packed_b *pb, const qh_expectation *e,
                                        qmm_status *st, timed_call *tc)
{
    memset(p->y, BENCH_FILL, p->yn);
    double c0 = cpu_seconds(), t0 = qh_mono_seconds();
    qmm_status_code code = bench_call(qb, &p->call, pb, st);
    tc->wall_s = qh_mono_seconds() - t0;
    tc->cpu_s = cpu_seconds() - c0;
    tc->errors = tc->total = 0;
    if (code == QMM_OK) {
        qh_compare cmp;
        qh_judge_compare(e, &p->call.u.qlinearmatmul.y, &cmp);
        tc->errors = cmp.errors;
        tc->total = cmp.total;
    }
    return code;
}

/* A shape's reps when --reps is not given: about 1 s of calls of `one` seconds, 5..200 */
static int default_reps(double one)
{
    int reps = one > 0 ? (int)(1.0 / one) : 50;
    return reps < 5 ? 5 : reps > 200 ? 200 : reps;
}

/* Runs one shape: its answer checked against the reference's (a line says how), warm-up
 * calls, then the timed calls, each checked (bench_timed_call), sampling the peak `pk` (when
 * not NULL) after each block of them; 0 on success, 1 when the backend failed or the harness
 * could not (message printed). */
static int bench_shape(qh_backend *qb, const char *types, int64_t m, int64_t k, int64_t n,
                       const int32_t t[3], int const_b, int reps, qmm_optimized_peak *pk,
                       bench_result *res)
{
    qmm_backend *be = qb->be;
    char name[128], msg[QH_CLEAN_LINE_MAX];
    shown(name, sizeof name, qb->table.name);
    bench_problem prob;
    if (problem_make(&prob, m, k, n, t) != 0)
        return 1;
    qh_expectation e;
    if (bench_expect(&prob, QH_DEFAULT_PROFILE, &e) != 0) {
        problem_free(&prob);
        return 1;
    }
    qmm_status st;
    qmm_optimized_packed_b *pb = NULL;
    int rc = 1;
    double *times = NULL;
    if (const_b && qmm_optimized_isa(be)) {
        pb = qmm_optimized_pack_b(be, &prob.call.u.qlinearmatmul.b, &st);
        if (!pb) {
            fprintf(stderr, "qmmcheck bench: %s: pack_b: %s\n", name,
                    shown(msg, sizeof msg, st.message));
            goto out;
        }
    }
    qh_case_status status = bench_check(qb, &prob, pb, &e, msg, sizeof msg);
    printf("check %lldx%lldx%lld %s %s %s (%s)\n", (long long)m, (long long)k, (long long)n,
           types, name, qh_case_status_name(status),
           status == QH_PASSED ? "the reference agrees; every timed call is compared too" : msg);
    fflush(stdout);
    if (status != QH_PASSED)
        goto out;
#define BENCH_CALL() bench_call(qb, &prob.call, pb, &st)
    /* warm-up: at least 2 calls and 0.2 s (caches, pages, the pool's threads) */
    double w0 = qh_mono_seconds(), one = 0;
    for (int i = 0; i < 2 || qh_mono_seconds() - w0 < 0.2; i++) {
        double t0 = qh_mono_seconds();
        if (BENCH_CALL() != QMM_OK) {
            fprintf(stderr, "qmmcheck bench: %s: %s: %s\n", name, qmm_status_name(st.code),
                    shown(msg, sizeof msg, st.message));
            goto out;
        }
        one = qh_mono_seconds() - t0;
        if (i > 50)
            break;
    }
    reps = reps > 0 ? reps : default_reps(one);
    times = malloc((size_t)reps * sizeof *times);
    if (!times)
        goto out;
    int block = (reps + PEAK_BLOCKS - 1) / PEAK_BLOCKS;
    for (int i = 0; i < reps; i++) {
        qmm_status_code code = QMM_OK;
        timed_call tc = {0};
        if (pk && i > 0 && i % block == 0) {
            /* a peak sample, then an untimed call: the backend's threads may have gone to
             * sleep during the sample, and the next timed call must not pay for it */
            qmm_optimized_peak_sample(pk);
            code = BENCH_CALL();
        }
        if (code == QMM_OK)
            code = bench_timed_call(qb, &prob, pb, &e, &st, &tc);
        times[i] = tc.wall_s;
        if (code != QMM_OK) {
            fprintf(stderr, "qmmcheck bench: %s: %s\n", name, shown(msg, sizeof msg, st.message));
            goto out;
        }
        if (tc.errors) {
            fprintf(stderr,
                    "qmmcheck bench: %s: %lldx%lldx%lld: FAILED: timed call %d of %d answered "
                    "otherwise than the check before timing: %lld of %lld elements differ from "
                    "the reference's\n",
                    name, (long long)m, (long long)k, (long long)n, i + 1, reps,
                    (long long)tc.errors, (long long)tc.total);
            goto out;
        }
    }
#undef BENCH_CALL
    if (pk)
        qmm_optimized_peak_sample(pk);
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    res->m = m;
    res->k = k;
    res->n = n;
    res->reps = reps;
    res->median_s = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    res->min_s = times[0];
    double ops = 2.0 * (double)m * (double)n * (double)k;
    res->gops = res->median_s > 0 ? ops / res->median_s / 1e9 : 0;
    res->best_gops = res->min_s > 0 ? ops / res->min_s / 1e9 : 0;
    rc = 0;
out:
    free(times);
    qmm_optimized_packed_b_free(pb);
    qh_expectation_free(&e);
    problem_free(&prob);
    return rc;
}

/* ---- the peak's lines: the loop, how it was measured, the check ---- */

static const char *verdict_word(qmm_optimized_peak_verdict v)
{
    switch (v) {
    case QMM_PEAK_AGREES: return "agrees";
    case QMM_PEAK_BELOW: return "below";
    case QMM_PEAK_ABOVE: return "above";
    default: return "unchecked";
    }
}

/* "P int8 ops/cycle/core at G GHz; published R for CPU (why): F% of it, VERDICT" */
static void print_check(const qmm_optimized_peak_info *in)
{
    if (in->clock_hz > 0)
        printf("%.1f int8 ops per cycle per core at %.2f GHz", in->ops_per_cycle,
               in->clock_hz / 1e9);
    else
        printf("no clock estimate on this CPU");
    if (!in->published) {
        printf("; no published rate on record for this loop on %s: unchecked\n", in->cpu_id);
        return;
    }
    printf("; published for %s (%s): %s%.0f", in->cpu, in->cpu_id,
           in->published_up_to ? "up to " : "", in->published);
    switch (in->verdict) {
    case QMM_PEAK_AGREES: printf(", %.0f%% of it: agrees", 100 * in->fraction); break;
    case QMM_PEAK_BELOW:
        printf(", %.0f%% of it: below (the machine was busy or throttled while sampling%s)",
               100 * in->fraction, in->published_up_to ? ", or this part has fewer units" : "");
        break;
    case QMM_PEAK_ABOVE:
        printf(", %.0f%% of it: above (the clock estimate is low)", 100 * in->fraction);
        break;
    default: printf(": unchecked (no clock estimate)"); break;
    }
    printf(" [%s]\n", in->published_why);
}

static void print_method(const qmm_optimized_peak_info *in, const char *where)
{
    printf("peak method: the best of %d samples of %.1f ms on %d thread(s), %s", in->samples,
           in->sample_s * 1e3, in->sample_threads, where);
    if (in->threads > 1)
        printf("; %d core(s) x the best one thread did while all ran (%.1f GOPS; the best "
               "whole sample: %.1f)",
               in->cores, in->ops_thread / 1e9, in->ops_together / 1e9);
    printf("; the clock from a chain of dependent adds (1 cycle each) after each sample, the "
           "fastest\n");
}

/* `bench --peak`: every loop this CPU runs, sampled in turn for about PEAK_ONLY_S; the last
 * (the best variant's) is the peak percentages are taken against. */
static int peak_only_run(int threads)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int list[2] = {threads ? threads : 1, (int)(ncpu > 1 ? ncpu : 1)};
    int count = threads || list[1] == 1 ? 1 : 2;
    for (int c = 0; c < count; c++) {
        qmm_optimized_peak *pk[16];
        int np = 0;
        for (int v = 0; qmm_optimized_isa_variant(v) && np < 16; v++)
            if ((pk[np] = qmm_optimized_peak_open(v, list[c], PEAK_SAMPLE_S)) != NULL)
                np++;
        if (np == 0) {
            printf("peak threads=%d none: this CPU runs no variant's peak loop\n", list[c]);
            continue;
        }
        double t0 = qh_mono_seconds();
        for (int round = 0; round < PEAK_FIRST || qh_mono_seconds() - t0 < PEAK_ONLY_S; round++)
            for (int i = 0; i < np; i++)
                qmm_optimized_peak_sample(pk[i]);
        qmm_optimized_peak_info best, in;
        qmm_optimized_peak_get(pk[np - 1], &best);
        printf("peak threads=%d %.1f GOPS (int8, 2 ops per multiply-accumulate) loop: %s\n",
               list[c], best.ops / 1e9, best.loop);
        print_method(&best, np > 1 ? "every loop below sampled in turn" : "back to back");
        for (int i = 0; i < np; i++) {
            qmm_optimized_peak_get(pk[i], &in);
            printf("peak isa=%s threads=%d %.1f GOPS%s: ", in.isa, in.threads, in.ops / 1e9,
                   i == np - 1 ? " (the peak)" : "");
            print_check(&in);
            qmm_optimized_peak_close(pk[i]);
        }
    }
    return 0;
}

/* A string as a JSON string's contents (text already cleaned: no control characters). */
static void json_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

/* The report's temporary file while it is open (open_report to rename_report), for the
 * signal handler to remove: a bench stopped by SIGINT or SIGTERM leaves no FILE.tmp-XXXX. */
static char report_tmp[4096];
static volatile sig_atomic_t report_tmp_open;

static void on_signal(int sig)
{
    if (report_tmp_open)
        unlink(report_tmp);
    _exit(128 + sig);
}

/* SIGINT and SIGTERM end bench with 128+N, its report's temporary file removed. */
static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* --report's FILE is refused, as run's is, when it exists and is not a regular file (a device,
 * a FIFO, a symbolic link, a folder): the report is renamed over it. 1 when it is fine. */
static int report_target_ok(const char *path)
{
    char spec[4200];
    qh_error err;
    snprintf(spec, sizeof spec, "json:%s", path);
    if (qh_report_check_spec(spec, &err) == 0)
        return 1;
    qh_eprint_clean("qmmcheck bench: ", err.msg);
    return 0;
}

/* The temporary file removed (a report not written whole). */
static void drop_report(void)
{
    report_tmp_open = 0;
    remove(report_tmp);
}

/* A new temporary file beside `path` for the report (qh_open_temp: nothing planted can take
 * it), its name in report_tmp (removed on a signal until rename_report or drop_report); NULL
 * after saying why. One at a time. */
static FILE *open_report(const char *path)
{
    qh_strays_end(); /* nothing a backend left running writes over the report (strays.h) */
    qh_error err;
    int fd = qh_open_temp(path, report_tmp, sizeof report_tmp, &err);
    if (fd < 0) {
        qh_eprint_clean("qmmcheck bench: ", err.msg);
        return NULL;
    }
    report_tmp_open = 1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        fprintf(stderr, "qmmcheck bench: %s: %s\n", report_tmp, strerror(errno));
        close(fd);
        drop_report();
    }
    return f;
}

/* Renames the written report over `path` when that is still fine; 0, or 1 after saying why
 * (the temporary file removed). */
static int rename_report(const char *path)
{
    if (!report_target_ok(path))
        ; /* said why */
    else if (rename(report_tmp, path) != 0)
        fprintf(stderr, "qmmcheck bench: %s: %s\n", path, strerror(errno));
    else {
        report_tmp_open = 0;
        return 0;
    }
    drop_report();
    return 1;
}

/* --report's FILE before anything is timed: refused when it is an input of this bench (a
 * plugin, an exec: script, qmmcheck itself: it was removed before the plugin was loaded), else
 * removed, as run's reports are (qh_report_clear), so that a bench that does not finish leaves
 * no earlier report that reads as its own. 0; 2 (refused) or 1 (not removed) after saying why. */
static int clear_report(const char *path, const char *const *backends, int n)
{
    char spec[4200];
    qh_error err;
    snprintf(spec, sizeof spec, "json:%s", path);
    int rc = qh_opt_report_not_input(spec, backends, n, NULL, NULL, 0, &err) != 0 ? 2
             : qh_report_clear(spec, &err) != 0                              ? 1
                                                                             : 0;
    if (rc)
        qh_eprint_clean("qmmcheck bench: ", err.msg);
    return rc;
}

/* `PRE"KEY": "VALUE"`, VALUE escaped (json_str): every string field a report writes, so that
 * no text from a backend, the CPU or the command line can add fields. */
static void json_kv(FILE *f, const char *pre, const char *key, const char *value)
{
    fprintf(f, "%s\"%s\": \"", pre, key);
    json_str(f, value ? value : "");
    fputc('"', f);
}

static int write_json(const char *path, const char *backend, const char *types, int threads,
                      int const_b, const qmm_optimized_peak_info *pi, double base_gops,
                      int raised, const bench_result *r, int nr)
{
    FILE *f = open_report(path);
    if (!f)
        return 1;
    json_kv(f, "{\n  ", "backend", backend);
    json_kv(f, ",\n  ", "types", types);
    fprintf(f, ",\n  \"peak\": {\"threads\": %d, \"gops\": %.3f", threads, base_gops);
    json_kv(f, ", ", "loop", pi->loop ? pi->loop : "none");
    json_kv(f, ", ", "isa", pi->isa ? pi->isa : "none");
    fprintf(f,
            ", \"method\": \"best of short samples between the timed calls\", \"samples\": %d, "
            "\"sample_ms\": %.3f, \"loop_gops\": %.3f, \"thread_gops\": %.3f, \"cores\": %d, "
            "\"together_gops\": %.3f, \"raised\": %s, \"clock_ghz\": %.3f, "
            "\"ops_per_cycle_per_core\": %.2f",
            pi->samples, pi->sample_s * 1e3, pi->ops / 1e9, pi->ops_thread / 1e9, pi->cores,
            pi->ops_together / 1e9, raised ? "true" : "false", pi->clock_hz / 1e9,
            pi->ops_per_cycle);
    json_kv(f, ", ", "cpu", pi->cpu_id);
    json_kv(f, ", ", "published_for", pi->cpu);
    fprintf(f, ", \"published_ops_per_cycle\": %.0f, \"published_up_to\": %s", pi->published,
            pi->published_up_to ? "true" : "false");
    json_kv(f, ", ", "check", verdict_word(pi->verdict));
    fprintf(f, ", \"check_fraction\": %.3f},\n  \"results\": [\n", pi->fraction);
    for (int i = 0; i < nr; i++) {
        fprintf(f,
                "    {\"shape\": \"%lldx%lldx%lld\", \"m\": %lld, \"k\": %lld, \"n\": %lld",
                (long long)r[i].m, (long long)r[i].k, (long long)r[i].n, (long long)r[i].m,
                (long long)r[i].k, (long long)r[i].n);
        json_kv(f, ", ", "types", types);
        fprintf(f,
                ", \"threads\": %d, \"const_b\": %s, \"reps\": %d, \"median_s\": %.9g, "
                "\"min_s\": %.9g, \"gops\": %.3f, \"best_gops\": %.3f, \"pct_peak\": %.2f, "
                "\"pct_peak_best\": %.2f, \"checked\": true}%s\n",
                threads, const_b ? "true" : "false", r[i].reps, r[i].median_s, r[i].min_s,
                r[i].gops, r[i].best_gops, r[i].pct_peak, r[i].pct_peak_best,
                i + 1 < nr ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "qmmcheck bench: %s: %s\n", path, strerror(errno));
        drop_report();
        return 1;
    }
    return rename_report(path);
}

/* ---- several backends, alternating (issue 29 item 4) ---- */

#define BENCH_MAX_BACKENDS 8
#define BENCH_MAX_ROUNDS 1000
/* each round's peak (the bound): samples of the peak loop just before the round's backends,
 * and as many just after */
#define PEAK_ROUND_HALF 8
/* a round's timed calls per backend when --reps is not given: about this long, 3..200 */
#define ROUND_S 0.2

typedef struct mb_backend {
    char spec[1100];   /* what is opened: the spec given, threads=T added */
    qh_backend qb;
    char name[128];
    char description[QH_CLEAN_LINE_MAX];
    const char *profile;   /* what its answers are judged against (--profile; spec) */
    int expect;            /* which of the shape's expectations is its profile's */
} mb_backend;

/* One backend at one shape and B mode. */
typedef struct mb_slot {
    qh_case_status status; /* PASSED, FAILED or SKIPPED (the check's, or a timed round's) */
    char why[QH_CLEAN_LINE_MAX];
    int reps;
    int rounds;            /* rounds timed */
    double *round_s;       /* each round's median */
    double *round_cpu_s;   /* each round's CPU seconds per call (the process, all threads) */
    double median_s, gops, cpu_median_s;
} mb_slot;

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "model name", family and model from /proc/cpuinfo, cleaned. */
static void cpu_model(char *buf, size_t size)
{
    char model[256] = "unknown CPU", fam[32] = "?", mod[32] = "?", line[1024];
    FILE *f = fopen("/proc/cpuinfo", "r");
    int got = 0;
    while (f && got != 7 && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1 + (colon[1] == ' ');
        v[strcspn(v, "\n")] = '\0';
        if (!(got & 1) && strncmp(line, "model name", 10) == 0) {
            qh_clean_into(model, sizeof model, v, strlen(v), 0);
            got |= 1;
        } else if (!(got & 2) && strncmp(line, "cpu family", 10) == 0) {
            qh_clean_into(fam, sizeof fam, v, strlen(v), 0);
            got |= 2;
        } else if (!(got & 4) && strncmp(line, "model\t", 6) == 0) {
            qh_clean_into(mod, sizeof mod, v, strlen(v), 0);
            got |= 4;
        }
    }
    if (f)
        fclose(f);
    snprintf(buf, size, "%s (family %s model %s)", model, fam, mod);
}

/* The machine line: the CPU, its class (harness/io/cpuclass.h), CPUs online, the load. */
static void print_machine(FILE *out, int threads, const char *omp, char *cpu, size_t cpu_size,
                          const char **cls)
{
    char why[256];
    double load[3] = {0, 0, 0};
    cpu_model(cpu, cpu_size);
    if (qh_cpu_class(cls, why, sizeof why) != 0)
        *cls = "unknown";
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
        load[0] = load[1] = load[2] = -1;
    if (f)
        fclose(f);
    fprintf(out,
            "machine: %s, class %s, %ld CPU(s) online, load average %.2f %.2f %.2f; "
            "threads=%d (optimized: threads=%d; OMP_NUM_THREADS=%s)\n",
            cpu, *cls, sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2], threads,
            threads, omp ? omp : "unset");
}

typedef struct mb_run {
    mb_backend *be;
    int nb;
    const int32_t *t;
    const char *types;
    int threads, rounds, reps;
    FILE *json;            /* --report's file, or NULL */
    int json_rows;
    int failed;            /* some backend FAILED: bench exits 1 */
    int timed;             /* some backend was timed: else (all SKIPPED) bench exits 3 */
    qmm_optimized_peak *pk; /* the best variant's peak loop on `threads` threads; NULL: none */
} mb_run;

static const char *b_label(int const_b) { return const_b ? "constant" : "input"; }

/* One round of backend b: untimed calls (caches, the pool's threads), then the timed ones,
 * each answer compared with e (bench_timed_call): the first that differs fails b. */
static void mb_round(const mb_run *r, mb_backend *b, bench_problem *p, qmm_optimized_packed_b *pb,
                     const qh_expectation *e, mb_slot *s, double *times)
{
    qmm_status st;
    double one = 0, cpu = 0;
    for (int i = 0; i < 2; i++) {
        double t0 = qh_mono_seconds();
        if (bench_call(&b->qb, &p->call, pb, &st) != QMM_OK)
            goto failed;
        one = qh_mono_seconds() - t0;
    }
    if (s->reps == 0 && r->reps)
        s->reps = r->reps;
    else if (s->reps == 0) {
        s->reps = one > 0 && ROUND_S / one < 200 ? (int)(ROUND_S / one) : 200;
        s->reps = s->reps < 3 ? 3 : s->reps;
    }
    for (int i = 0; i < s->reps; i++) {
        timed_call tc;
        if (bench_timed_call(&b->qb, p, pb, e, &st, &tc) != QMM_OK)
            goto failed;
        times[i] = tc.wall_s;
        cpu += tc.cpu_s;
        if (tc.errors) {
            s->status = QH_FAILED;
            snprintf(s->why, sizeof s->why,
                     "round %d, timed call %d of %d answered otherwise than the check before "
                     "timing: %lld of %lld elements differ from the reference's",
                     s->rounds + 1, i + 1, s->reps, (long long)tc.errors, (long long)tc.total);
            return;
        }
    }
    s->round_cpu_s[s->rounds] = cpu / s->reps;
    s->round_s[s->rounds++] = median_of(times, s->reps);
    return;
failed:;
    char msg[QH_CLEAN_LINE_MAX];
    s->status = QH_FAILED;
    snprintf(s->why, sizeof s->why, "round %d: answered %s: %s", s->rounds + 1,
             qmm_status_name(st.code), shown(msg, sizeof msg, st.message));
}

static void peak_samples(qmm_optimized_peak *pk, int n)
{
    for (int i = 0; i < n; i++)
        qmm_optimized_peak_sample(pk);
}

/* A backend's bound over its rounds (round_peak[k]: round k's peak, ops/s; 0: none): per
 * round, the peak's rate over the backend's, in bound[]; returns their median, or 0 when a
 * round has no peak, no time, or ran above the peak's rate (the loop is then no ceiling:
 * *above is that round, from 1; else 0). */
static double mb_bound(const mb_slot *s, const double *round_peak, double ops, double *bound,
                       int *above)
{
    double sorted[BENCH_MAX_ROUNDS];
    *above = 0;
    for (int k = 0; k < s->rounds; k++) {
        bound[k] = round_peak[k] * s->round_s[k] / ops;
        if (round_peak[k] > 0 && s->round_s[k] > 0 && bound[k] < 1.0)
            *above = k + 1;
        if (!(round_peak[k] > 0 && s->round_s[k] > 0 && bound[k] >= 1.0))
            return 0;
        sorted[k] = bound[k];
    }
    return s->rounds ? median_of(sorted, s->rounds) : 0;
}

/* Prints (and writes as JSON) every backend's result at one shape and B mode. */
static void mb_results(mb_run *r, const int64_t mkn[3], int const_b, mb_slot *slot,
                       const double *round_peak)
{
    double ops = 2.0 * (double)mkn[0] * (double)mkn[1] * (double)mkn[2];
    mb_slot *first = &slot[0];
    for (int i = 0; i < r->nb; i++) {
        mb_slot *s = &slot[i];
        int ok = s->status == QH_PASSED && s->rounds > 0;
        double sorted[BENCH_MAX_ROUNDS], ratio[BENCH_MAX_ROUNDS], mratio = 0, cpu_ratio = 0;
        int nratio = 0;
        double bound[BENCH_MAX_ROUNDS], mbound = 0;
        int above = 0;
        if (ok) {
            mbound = r->pk ? mb_bound(s, round_peak, ops, bound, &above) : 0;
            memcpy(sorted, s->round_s, (size_t)s->rounds * sizeof *sorted);
            s->median_s = median_of(sorted, s->rounds);
            s->gops = s->median_s > 0 ? ops / s->median_s / 1e9 : 0;
            memcpy(sorted, s->round_cpu_s, (size_t)s->rounds * sizeof *sorted);
            s->cpu_median_s = median_of(sorted, s->rounds);
        }
        int first_ok = first->status == QH_PASSED && first->rounds == s->rounds;
        for (int k = 0; first_ok && k < s->rounds; k++)
            first_ok = first->round_s[k] > 0; /* below the clock's resolution: no ratio */
        if (ok && first_ok) {
            for (int k = 0; k < s->rounds; k++)
                ratio[nratio++] = s->round_s[k] / first->round_s[k];
            memcpy(sorted, ratio, (size_t)nratio * sizeof *sorted);
            mratio = median_of(sorted, nratio);
            int n = 0;
            for (int k = 0; k < s->rounds; k++)
                if (first->round_cpu_s[k] > 0)
                    sorted[n++] = s->round_cpu_s[k] / first->round_cpu_s[k];
            cpu_ratio = n == s->rounds ? median_of(sorted, n) : 0;
        }
        r->failed |= s->status == QH_FAILED;
        r->timed |= ok;
        printf("result %lldx%lldx%lld %s threads=%d b=%s %s %s", (long long)mkn[0],
               (long long)mkn[1], (long long)mkn[2], r->types, r->threads, b_label(const_b),
               r->be[i].name, qh_case_status_name(s->status));
        if (strcmp(r->be[i].profile, QH_DEFAULT_PROFILE) != 0)
            printf(" under profile %s", r->be[i].profile);
        if (!ok) {
            printf(" (%s): no time, no ratio\n", s->why);
        } else {
            printf(" median=%.9f s %.1f GOPS cpu=%.9f s rounds=%d reps=%d", s->median_s, s->gops,
                   s->cpu_median_s, s->rounds, s->reps);
            if (mbound > 0)
                printf(" bound=%.2f", mbound);
            else if (r->pk)
                printf(" bound=none");
            if (i == 0)
                printf(" ratio=1.00 (the first: ratios are backend time / this time)");
            else if (!nratio)
                printf(" ratio=none (the first backend, %s, has no time)", r->be[0].name);
            else {
                printf(" ratio=%.2f per round", mratio);
                for (int k = 0; k < nratio; k++)
                    printf("%s%.2f", k ? "," : " ", ratio[k]);
                printf(" (%s time / %s time)", r->be[i].name, r->be[0].name);
                if (cpu_ratio > 0)
                    printf(" cpu-ratio=%.2f", cpu_ratio);
            }
            if (above)
                printf("; SUSPECT: in round %d it ran at %.1f GOPS, above this machine's int8 "
                       "peak loop (%.1f GOPS): a kernel that does every multiply-accumulate does "
                       "not; it skipped work, or used more threads or faster instructions than "
                       "the loop", above, ops / s->round_s[above - 1] / 1e9,
                       round_peak[above - 1] / 1e9);
            putchar('\n');
        }
        if (!r->json)
            continue;
        fprintf(r->json,
                "%s    {\"shape\": \"%lldx%lldx%lld\", \"m\": %lld, \"k\": %lld, \"n\": %lld, "
                "\"types\": \"%s\", \"threads\": %d, \"b\": \"%s\", \"backend\": \"",
                r->json_rows++ ? ",\n" : "", (long long)mkn[0], (long long)mkn[1],
                (long long)mkn[2], (long long)mkn[0], (long long)mkn[1], (long long)mkn[2],
                r->types, r->threads, b_label(const_b));
        json_str(r->json, r->be[i].name);
        fprintf(r->json, "\", \"profile\": \"");
        json_str(r->json, r->be[i].profile);
        fprintf(r->json, "\", \"status\": \"%s\", \"why\": \"", qh_case_status_name(s->status));
        json_str(r->json, ok ? "" : s->why);
        fprintf(r->json, "\", \"reps\": %d, \"round_s\": [", s->reps);
        for (int k = 0; ok && k < s->rounds; k++)
            fprintf(r->json, "%s%.9g", k ? ", " : "", s->round_s[k]);
        fprintf(r->json, "], \"median_s\": ");
        fprintf(r->json, ok ? "%.9g" : "null", s->median_s);
        fprintf(r->json, ", \"round_cpu_s\": [");
        for (int k = 0; ok && k < s->rounds; k++)
            fprintf(r->json, "%s%.9g", k ? ", " : "", s->round_cpu_s[k]);
        fprintf(r->json, "], \"cpu_median_s\": ");
        fprintf(r->json, ok ? "%.9g" : "null", s->cpu_median_s);
        fprintf(r->json, ", \"cpu_ratio\": ");
        fprintf(r->json, cpu_ratio > 0 ? "%.4f" : "null", cpu_ratio);
        fprintf(r->json, ", \"gops\": ");
        fprintf(r->json, ok ? "%.3f" : "null", s->gops);
        fprintf(r->json, ", \"ratio\": ");
        fprintf(r->json, nratio ? "%.4f" : "null", mratio);
        fprintf(r->json, ", \"round_ratio\": [");
        for (int k = 0; k < nratio; k++)
            fprintf(r->json, "%s%.4f", k ? ", " : "", ratio[k]);
        fprintf(r->json, "], \"round_peak_gops\": [");
        for (int k = 0; r->pk && ok && k < s->rounds; k++)
            fprintf(r->json, "%s%.3f", k ? ", " : "", round_peak[k] / 1e9);
        fprintf(r->json, "], \"bound\": ");
        fprintf(r->json, mbound > 0 ? "%.4f" : "null", mbound);
        fprintf(r->json, ", \"above_peak\": %s, \"round_bound\": [",
                above ? "true" : "false");
        for (int k = 0; mbound > 0 && k < s->rounds; k++)
            fprintf(r->json, "%s%.4f", k ? ", " : "", bound[k]);
        fprintf(r->json, "]}");
    }
}

/* One shape: the expectation once, then for each B mode every backend's check and the
 * alternating rounds. 0, or 1 when the harness could not (memory, the reference's limits). */
static int mb_shape(mb_run *r, const int64_t mkn[3], const int *modes, int nmodes)
{
    bench_problem p;
    if (problem_make(&p, mkn[0], mkn[1], mkn[2], r->t) != 0)
        return 1;
    /* one expectation per profile the backends are judged against */
    qh_expectation e[BENCH_MAX_BACKENDS];
    int ne = 0;
    for (int i = 0; i < r->nb; i++) {
        mb_backend *b = &r->be[i];
        int j = 0;
        while (j < i && strcmp(r->be[j].profile, b->profile) != 0)
            j++;
        if (j < i) {
            b->expect = r->be[j].expect;
            continue;
        }
        b->expect = ne;
        if (bench_expect(&p, b->profile, &e[ne]) != 0) {
            for (int k = 0; k < ne; k++)
                qh_expectation_free(&e[k]);
            problem_free(&p);
            return 1;
        }
        ne++;
    }
    int rc = 0;
    mb_slot slot[BENCH_MAX_BACKENDS];
    qmm_optimized_packed_b *pb[BENCH_MAX_BACKENDS];
    double *times = NULL, round_peak[BENCH_MAX_ROUNDS];
    for (int mi = 0; mi < nmodes && rc == 0; mi++) {
        int const_b = modes[mi];
        memset(slot, 0, sizeof slot);
        memset(pb, 0, sizeof pb);
        size_t max_reps = r->reps ? (size_t)r->reps : 200;
        times = malloc(max_reps * sizeof *times);
        for (int i = 0; i < r->nb; i++) {
            slot[i].round_s = malloc((size_t)r->rounds * sizeof(double));
            slot[i].round_cpu_s = malloc((size_t)r->rounds * sizeof(double));
        }
        for (int i = 0; i < r->nb && times; i++) {
            if (!slot[i].round_s || !slot[i].round_cpu_s) {
                free(times);
                times = NULL;
                break;
            }
            mb_backend *b = &r->be[i];
            qmm_status st;
            if (const_b && qmm_optimized_isa(b->qb.be) &&
                !(pb[i] = qmm_optimized_pack_b(b->qb.be, &p.call.u.qlinearmatmul.b, &st))) {
                char msg[QH_CLEAN_LINE_MAX];
                slot[i].status = QH_FAILED;
                snprintf(slot[i].why, sizeof slot[i].why, "pack_b answered %s: %s",
                         qmm_status_name(st.code), shown(msg, sizeof msg, st.message));
            } else {
                slot[i].status = bench_check(&b->qb, &p, pb[i], &e[b->expect], slot[i].why,
                                             sizeof slot[i].why);
            }
            printf("check %lldx%lldx%lld %s threads=%d b=%s %s %s (%s; profile %s)\n", (long long)mkn[0],
                   (long long)mkn[1], (long long)mkn[2], r->types, r->threads,
                   b_label(const_b), b->name, qh_case_status_name(slot[i].status),
                   slot[i].status == QH_PASSED ? "the reference agrees" : slot[i].why,
                   b->profile);
            fflush(stdout);
        }
        if (!times) {
            fprintf(stderr, "qmmcheck bench: out of memory\n");
            rc = 1;
        }
        /* round k: every backend that still passes, in the order given, between two halves
         * of the round's peak samples */
        for (int k = 0; k < r->rounds && rc == 0; k++) {
            round_peak[k] = 0;
            if (r->pk) {
                qmm_optimized_peak_restart(r->pk);
                peak_samples(r->pk, PEAK_ROUND_HALF);
            }
            for (int i = 0; i < r->nb; i++) {
                if (slot[i].status != QH_PASSED)
                    continue;
                mb_round(r, &r->be[i], &p, pb[i], &e[r->be[i].expect], &slot[i], times);
                printf("round %d %lldx%lldx%lld %s threads=%d b=%s %s ", k + 1,
                       (long long)mkn[0], (long long)mkn[1], (long long)mkn[2], r->types,
                       r->threads, b_label(const_b), r->be[i].name);
                if (slot[i].status == QH_PASSED)
                    printf("median=%.9f s cpu=%.9f s reps=%d\n", slot[i].round_s[k],
                           slot[i].round_cpu_s[k], slot[i].reps);
                else
                    printf("FAILED (%s)\n", slot[i].why);
                fflush(stdout);
            }
            if (r->pk) {
                peak_samples(r->pk, PEAK_ROUND_HALF);
                qmm_optimized_peak_info in;
                qmm_optimized_peak_get(r->pk, &in);
                round_peak[k] = in.samples == 2 * PEAK_ROUND_HALF ? in.ops : 0;
                printf("peak-round %d %lldx%lldx%lld threads=%d b=%s %.1f GOPS\n", k + 1,
                       (long long)mkn[0], (long long)mkn[1], (long long)mkn[2], in.threads,
                       b_label(const_b), round_peak[k] / 1e9);
            }
        }
        if (rc == 0)
            mb_results(r, mkn, const_b, slot, round_peak);
        fflush(stdout);
        for (int i = 0; i < r->nb; i++) {
            qmm_optimized_packed_b_free(pb[i]);
            free(slot[i].round_s);
            free(slot[i].round_cpu_s);
        }
        free(times);
        times = NULL;
    }
    for (int k = 0; k < ne; k++)
        qh_expectation_free(&e[k]);
    problem_free(&p);
    return rc;
}

/* `bench --backend A --backend B ...` (or one backend with --rounds). */
static int multi_run(char **specs, int nb, const char **profiles, int np, int64_t (*shapes)[3],
                     int nshapes, const int32_t t[3],
                     const char *types, int threads, int rounds, int reps, int const_b,
                     int both_b, const char *report)
{
    char omp[16];
    if (threads) {
        /* the OpenMP libraries (oneDNN) read it when they are loaded, below */
        snprintf(omp, sizeof omp, "%d", threads);
        setenv("OMP_NUM_THREADS", omp, 1);
    }
    char cpu[400];
    const char *cls = "unknown";
    /* without --threads the optimized backend (and an OpenMP library) runs on every online
     * CPU: the lines and the peak say so, not 1 */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int run_threads = threads ? threads : ncpu > 256 ? 256 : ncpu > 1 ? (int)ncpu : 1;
    print_machine(stdout, run_threads, getenv("OMP_NUM_THREADS"), cpu, sizeof cpu, &cls);
    mb_backend *be = calloc((size_t)nb, sizeof *be);
    if (!be) {
        fprintf(stderr, "qmmcheck bench: out of memory\n");
        return 1;
    }
    int opened = 0, rc = 0;
    for (; opened < nb; opened++) {
        mb_backend *b = &be[opened];
        const char *given = specs[opened];
        snprintf(b->spec, sizeof b->spec, "%s", given);
        if (threads && strncmp(given, "optimized", 9) == 0 &&
            (given[9] == '\0' || given[9] == ':'))
            snprintf(b->spec, sizeof b->spec, "%s%sthreads=%d", given, given[9] ? "," : ":",
                     threads);
        qh_error err;
        if (qh_backend_open(b->spec, &b->qb, &err) != 0) {
            fprintf(stderr, "qmmcheck bench: %s\n%s", err.msg, qh_open_printed());
            rc = 2;
            break;
        }
        shown(b->name, sizeof b->name, b->qb.table.name);
        shown(b->description, sizeof b->description, b->qb.table.description);
        b->profile = QH_DEFAULT_PROFILE;
        char spec[QH_CLEAN_LINE_MAX];
        printf("backend %d %s (%s) spec %s\n", opened + 1, b->name, b->description,
               shown(spec, sizeof spec, b->qb.spec)); /* a peer's name resolved */
    }
    /* --profile B=PROFILE: B is a --backend's text as given, its name or its position */
    for (int k = 0; rc == 0 && k < np; k++) {
        const char *eq = strrchr(profiles[k], '=');
        size_t len = (size_t)(eq - profiles[k]);
        int hit = 0;
        for (int i = 0; i < nb; i++) {
            char pos[16];
            snprintf(pos, sizeof pos, "%d", i + 1);
            if ((strlen(specs[i]) == len && strncmp(specs[i], profiles[k], len) == 0) ||
                (strlen(be[i].name) == len && strncmp(be[i].name, profiles[k], len) == 0) ||
                (strlen(pos) == len && strncmp(pos, profiles[k], len) == 0)) {
                be[i].profile = eq + 1;
                hit = 1;
            }
        }
        if (!hit) {
            rc = qh_opt_error(&qh_bench_usage, QH_ERR_HINT,
                              "--profile %s: no --backend is that (its text, name or position)",
                              profiles[k]);
        }
    }
    FILE *json = NULL;
    if (rc == 0 && report && !(json = open_report(report)))
        rc = 1;
    if (json) {
        fprintf(json, "{\n  \"machine\": {\"cpu\": \"");
        json_str(json, cpu);
        fprintf(json, "\", \"class\": \"");
        json_str(json, cls);
        fprintf(json, "\", \"cpus_online\": %ld},\n  \"threads\": %d, \"rounds\": %d,\n"
                      "  \"backends\": [", sysconf(_SC_NPROCESSORS_ONLN), run_threads, rounds);
        for (int i = 0; i < nb; i++) {
            fprintf(json, "%s{\"name\": \"", i ? ", " : "");
            json_str(json, be[i].name);
            fprintf(json, "\", \"description\": \"");
            json_str(json, be[i].description);
            fprintf(json, "\"}");
        }
        fprintf(json, "],\n  \"results\": [\n");
    }
    printf("rounds=%d: in each round every backend in the order above: 2 untimed calls, then "
           "the timed ones (their median is the round's); its answer was checked against the "
           "reference before the first round, and every timed call's answer is compared again "
           "(y refilled before each, both outside the timed region)\n", rounds);
    fflush(stdout);
    mb_run r = {be, nb, t, types, run_threads, rounds, reps, json, 0, 0, 0, NULL};
    if (rc == 0 && (r.pk = qmm_optimized_peak_open(-1, run_threads, PEAK_SAMPLE_S)) != NULL) {
        qmm_optimized_peak_info in;
        qmm_optimized_peak_get(r.pk, &in);
        printf("bound: in each round the peak loop (%s, %s, %d thread(s)) is sampled %d times "
               "before the backends and %d after; a backend's bound is the median over rounds "
               "of that round's peak rate / its rate: no backend whose multiply-accumulates run "
               "no faster than the loop's can take less than 1/bound of its time, so a ratio "
               "against it above its bound is out of reach (none: a round ran above the loop)\n",
               in.isa, in.loop, in.threads, PEAK_ROUND_HALF, PEAK_ROUND_HALF);
    } else if (rc == 0) {
        printf("bound: none (this CPU runs no variant's peak loop)\n");
    }
    int modes[2] = {const_b && !both_b, 1}, nmodes = both_b ? 2 : 1;
    for (int s = 0; rc == 0 && s < nshapes; s++)
        rc = mb_shape(&r, shapes[s], modes, nmodes);
    if (json) {
        fprintf(json, "\n  ]\n}\n");
        if (fclose(json) != 0 || rc != 0) {
            if (rc == 0)
                fprintf(stderr, "qmmcheck bench: %s: %s\n", report, strerror(errno));
            drop_report();
            rc = rc ? rc : 1;
        } else
            rc = rename_report(report);
    }
    if (r.pk)
        qmm_optimized_peak_close(r.pk);
    for (int i = 0; i < opened; i++)
        qh_backend_release(&be[i].qb);
    free(be);
    if (rc == 0 && !r.failed && !r.timed) {
        printf("nothing was timed: every backend was SKIPPED (it supports none of these calls)\n");
        return 3;
    }
    return rc ? rc : r.failed;
}

int qh_cmd_bench(int argc, char **argv)
{
    const char *backend = "optimized", *types = "u8s8u8", *report = NULL;
    int threads = 0, const_b = 0, reps = 0, peak_only = 0, nshapes = 0;
    int rounds = 0, both_b = 0, nbackends = 0, nprofiles = 0;
    char *backends[BENCH_MAX_BACKENDS];
    const char *profiles[BENCH_MAX_BACKENDS];
    int64_t shapes[BENCH_MAX_SHAPES][3];
    qh_opt_parser p;
    qh_opt_init(&p, &qh_bench_usage, argc, argv);
    const char *val;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        switch (id) {
        case QH_OPT_HELP: return 0;
        case QH_OPT_BAD: return usage(p.error);
        case QH_OPT_ARG: return usage("bench takes no arguments besides its options");
        case O_CONST_B:
        case O_B_CONSTANT: const_b = 1; break;
        case O_B_BOTH: both_b = 1; break;
        case O_PEAK: peak_only = 1; break;
        case O_BACKEND:
            if (nbackends == BENCH_MAX_BACKENDS)
                return usage("too many --backend options (at most 8)");
            backends[nbackends++] = (char *)val;
            backend = val;
            break;
        case O_PROFILE:
            if (nprofiles == BENCH_MAX_BACKENDS)
                return usage("too many --profile options (at most 8)");
            if (!strchr(val, '='))
                return bad_value(p.name, val, "B=PROFILE, a profile of 'qmmcheck list --profiles'");
            char why[2048]; /* a refused combination says why, as in run, repro, diff, reduce */
            if (qh_profile_usage(strrchr(val, '=') + 1, why, sizeof why))
                return usage(why);
            profiles[nprofiles++] = val;
            break;
        case O_ROUNDS:
            if (qh_parse_int(val, 1, BENCH_MAX_ROUNDS, &rounds))
                return bad_value(p.name, val, "a number 1..1000");
            break;
        case O_TYPES: types = val; break;
        case O_THREADS:
            if (qh_parse_int(val, 1, 256, &threads))
                return bad_value(p.name, val, "a number 1..256");
            break;
        case O_REPS:
            if (qh_parse_int(val, 1, 1000000000, &reps))
                return bad_value(p.name, val, "a number >= 1");
            break;
        case O_REPORT:
            if (report) /* the first would be dropped without a word */
                return usage("give --report once: bench writes one JSON report");
            if (strncmp(val, "json:", 5) != 0 || !val[5])
                return usage("--report takes json:FILE");
            if (!report_target_ok(val + 5))
                return 2; /* a usage error */
            report = val + 5;
            break;
        case O_SHAPE:
            if (nshapes == BENCH_MAX_SHAPES)
                return usage("too many --shape options");
            if (qh_parse_shape(val, 1 << 20, shapes[nshapes]))
                return bad_value(p.name, val, "MxKxN (each 0..1048576)");
            nshapes++;
            break;
        }
    }

    if (peak_only)
        return peak_only_run(threads);
    if (nshapes == 0)
        return usage("give at least one --shape MxKxN");
    int32_t t[3];
    if (parse_types(types, t) != 0)
        return usage("--types takes three of u8/s8, as u8s8u8");
    int several = nbackends > 1 || rounds;
    if (!several && nprofiles)
        return usage("--profile judges several backends (or --rounds)");
    if (!several && both_b)
        return usage("--b-both times several backends (or --rounds): give --const-b for one");
    install_signals();
    /* the old report goes first, so that even a refusal below leaves none that reads as this
       bench's; then every shape's limit, before anything is timed */
    static const char *const by_default[] = {"optimized"};
    int cleared = report ? clear_report(report, nbackends ? (const char *const *)backends
                                                          : by_default,
                                        nbackends ? nbackends : 1)
                         : 0;
    if (cleared)
        return cleared;
    if (shapes_checkable(shapes, nshapes, t) != 0)
        return 1;
    if (several)
        return multi_run(nbackends ? backends : (char *[]){"optimized"}, nbackends ? nbackends : 1,
                         profiles, nprofiles, shapes, nshapes, t, types, threads,
                         rounds ? rounds : 5, reps, const_b, both_b, report);

    /* the optimized backend takes the thread count as an option */
    char spec[1100];
    snprintf(spec, sizeof spec, "%s", backend);
    if (threads && strncmp(backend, "optimized", 9) == 0 &&
        (backend[9] == '\0' || backend[9] == ':'))
        snprintf(spec, sizeof spec, "%s%sthreads=%d", backend, backend[9] ? "," : ":",
                 threads);
    qh_backend qb;
    qh_error err;
    if (qh_backend_open(spec, &qb, &err) != 0) {
        fprintf(stderr, "qmmcheck bench: %s\n%s", err.msg, qh_open_printed());
        return 2;
    }
    int eff_threads = qmm_optimized_threads(qb.be);
    if (!eff_threads)
        eff_threads = threads ? threads : 1;
    char name[128], description[QH_CLEAN_LINE_MAX];
    shown(name, sizeof name, qb.table.name);
    shown(description, sizeof description, qb.table.description);
    printf("backend %s (%s)\n", name, description);
    fflush(stdout);

    /* the peak: samples before the first shape, then between each shape's blocks of calls */
    qmm_optimized_peak *pk = qmm_optimized_peak_open(-1, eff_threads, PEAK_SAMPLE_S);
    for (int i = 0; pk && i < PEAK_FIRST; i++)
        qmm_optimized_peak_sample(pk);
    bench_result res[BENCH_MAX_SHAPES];
    memset(res, 0, sizeof res);
    int rc = 0, done = 0;
    for (; done < nshapes; done++)
        if (bench_shape(&qb, types, shapes[done][0], shapes[done][1], shapes[done][2], t,
                        const_b, reps, pk, &res[done]) != 0) {
            rc = 1;
            break;
        }

    /* one base for every line: the loop's best sample, unless a timed call beat it even
     * after sampling again (then that call's rate, and a line says so) */
    qmm_optimized_peak_info pi;
    memset(&pi, 0, sizeof pi);
    double rates[BENCH_MAX_SHAPES];
    for (int s = 0; s < done; s++)
        rates[s] = res[s].best_gops * 1e9;
    int beaten = -1, again = 0;
    double base = 0;
    if (pk) {
        qmm_optimized_peak_get(pk, &pi);
        base = qmm_optimized_peak_base(pi.ops, rates, done, &beaten);
        /* beaten, or below the published rate: the samples so far met a busy machine */
        if (beaten >= 0 || pi.verdict == QMM_PEAK_BELOW) {
            for (; again < PEAK_AGAIN; again++)
                qmm_optimized_peak_sample(pk);
            qmm_optimized_peak_get(pk, &pi);
            base = qmm_optimized_peak_base(pi.ops, rates, done, &beaten);
        }
    }
    if (pk) {
        printf("peak threads=%d %.1f GOPS%s, loop: %s\n", eff_threads, base / 1e9,
               beaten >= 0 ? " (raised: a timed call beat the loop)" : "", pi.loop);
        print_method(&pi, "taken before the first shape and between blocks of timed calls");
        printf("peak check: %.1f GOPS = ", pi.ops / 1e9);
        print_check(&pi);
        if (beaten >= 0)
            printf("peak raised to %.1f GOPS: the fastest call of %lldx%lldx%lld ran at %.1f "
                   "GOPS, above the loop's best %.1f GOPS after %d more samples, and the "
                   "percentages are against that call (a GEMM of 2*M*N*K int8 operations on %d "
                   "thread(s) does not beat this CPU's loop: the backend skipped work, used more "
                   "threads, or faster instructions than the loop's)\n",
                   base / 1e9, (long long)res[beaten].m, (long long)res[beaten].k,
                   (long long)res[beaten].n, res[beaten].best_gops, pi.ops / 1e9, again,
                   eff_threads);
    } else {
        printf("peak threads=%d none: this CPU runs no variant's peak loop (percentages read "
               "0)\n", eff_threads);
    }
    for (int s = 0; s < done; s++) {
        res[s].pct_peak = qmm_optimized_peak_percent(res[s].gops * 1e9, base);
        res[s].pct_peak_best = qmm_optimized_peak_percent(res[s].best_gops * 1e9, base);
        printf("bench %s %lldx%lldx%lld %s threads=%d const-b=%s reps=%d median=%.6f s "
               "min=%.6f s %.1f GOPS %.1f%% of peak (fastest call %.1f%%)\n",
               name, (long long)res[s].m, (long long)res[s].k, (long long)res[s].n, types,
               eff_threads, const_b ? "yes" : "no", res[s].reps, res[s].median_s,
               res[s].min_s, res[s].gops, res[s].pct_peak, res[s].pct_peak_best);
    }
    fflush(stdout);
    if (rc == 0 && report)
        rc = write_json(report, name, types, eff_threads, const_b, &pi, base / 1e9,
                        beaten >= 0, res, nshapes);
    qmm_optimized_peak_close(pk);
    qh_backend_release(&qb);
    return rc;
}
