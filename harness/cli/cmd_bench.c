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
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/invoke/backends.h"
#include "harness/base/clean.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/invoke/invoke.h"
#include "harness/base/numparse.h"
#include "optimized/qmm_optimized.h"

#define BENCH_MAX_SHAPES 32

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

enum { O_BACKEND, O_SHAPE, O_TYPES, O_THREADS, O_CONST_B, O_REPS, O_REPORT, O_PEAK };
static const qh_option bench_options[] = {
    {O_BACKEND, "--backend", 'b', "SPEC", 0, "the backend to time (default optimized)"},
    {O_SHAPE, "--shape", 0, "MxKxN", 0, "a QLinearMatMul shape to time (repeatable)"},
    {O_TYPES, "--types", 0, "TYPES", 0, "a, b and y's types, as u8s8u8 (the default)"},
    {O_THREADS, "--threads", 0, "T", 0, "the optimized backend's thread count"},
    {O_CONST_B, "--const-b", 0, NULL, 0, "pack B once (optimized) and time the packed calls"},
    {O_REPS, "--reps", 0, "N", 0, "timed calls per shape (default: about a second's worth)"},
    {O_REPORT, "--report", 0, "json:FILE", 0, "also write the results as JSON"},
    {O_PEAK, "--peak", 0, NULL, 0, "only measure this machine's int8 peak (every loop, checked)"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_bench_usage = {
    "bench", "--backend SPEC --shape MxKxN [--shape ...] [options] | --peak [--threads T]",
    "time a backend's QLinearMatMul against this machine's int8 peak", NULL, bench_options, 0};

#define usage(msg) qh_opt_error(&qh_bench_usage, QH_ERR_USAGE, "%s", (msg))
#define bad_value(...) qh_opt_bad_value(&qh_bench_usage, QH_ERR_USAGE, __VA_ARGS__)

/* "MxKxN", each part strict (harness/base/numparse.h) and at most 2^20. */
static int parse_shape(const char *s, int64_t mkn[3])
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    char *part = buf;
    for (int d = 0; d < 3; d++) {
        char *x = strchr(part, 'x');
        if ((d < 2) != (x != NULL))
            return -1;
        if (x)
            *x = '\0';
        if (qh_parse_i64(part, 0, 1 << 20, &mkn[d]))
            return -1;
        part = x ? x + 1 : NULL;
    }
    return 0;
}

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

/* Runs one shape, sampling the peak `pk` (when not NULL) after each block of timed calls;
 * 0 on success, 1 when the backend failed (message printed). */
static int bench_shape(qh_backend *qb, int64_t m, int64_t k, int64_t n, const int32_t t[3],
                       int const_b, int reps, qmm_optimized_peak *pk, bench_result *res)
{
    qmm_backend *be = qb->be;
    char name[128], msg[QH_CLEAN_LINE_MAX];
    shown(name, sizeof name, qb->table.name);
    size_t an = (size_t)(m * k), bn = (size_t)(k * n), yn = (size_t)(m * n);
    uint8_t *a = malloc(an ? an : 1), *b = malloc(bn ? bn : 1), *y = malloc(yn ? yn : 1);
    if (!a || !b || !y) {
        free(a);
        free(b);
        free(y);
        fprintf(stderr, "qmmcheck bench: out of memory\n");
        return 1;
    }
    uint64_t seed = 12345;
    for (size_t i = 0; i < an; i++)
        a[i] = (uint8_t)rng_next(&seed);
    for (size_t i = 0; i < bn; i++)
        b[i] = (uint8_t)rng_next(&seed);
    float sa = 0.0173f, sb = 0.0041f, sy = 0.93f;
    uint8_t za = t[0] == QMM_DTYPE_UINT8 ? 131 : 3, zb = t[1] == QMM_DTYPE_UINT8 ? 122 : 0;
    uint8_t zy = t[2] == QMM_DTYPE_UINT8 ? 128 : 0;
    qmm_qlinearmatmul c = {
        .a = {t[0], 2, {m, k}, a},
        .a_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sa},
        .a_zero_point = {t[0], 0, {0}, &za},
        .b = {t[1], 2, {k, n}, b},
        .b_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sb},
        .b_zero_point = {t[1], 0, {0}, &zb},
        .y_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sy},
        .y_zero_point = {t[2], 0, {0}, &zy},
        .y = {t[2], 2, {m, n}, y},
        .opset = 10,
    };
    /* through the harness's copy of the table, as every other caller (harness/invoke/backends.h) */
    qmm_call call = {.op = QMM_OP_QLINEARMATMUL, .u.qlinearmatmul = c};
    qmm_status st;
    qmm_optimized_packed_b *pb = NULL;
    if (const_b && qmm_optimized_isa(be)) {
        pb = qmm_optimized_pack_b(be, &call.u.qlinearmatmul.b, &st);
        if (!pb) {
            fprintf(stderr, "qmmcheck bench: %s: pack_b: %s\n", name,
                    shown(msg, sizeof msg, st.message));
            free(a);
            free(b);
            free(y);
            return 1;
        }
    }
    int rc = 0;
    double *times = NULL;
#define BENCH_CALL()                                                                       \
    (pb ? qmm_optimized_qlinearmatmul_packed(be, &call.u.qlinearmatmul, pb, &st)             \
        : qh_backend_call(qb, &call, &st))
    /* warm-up: at least 2 calls and 0.2 s (caches, pages, the pool's threads) */
    double w0 = qh_mono_seconds(), one = 0;
    for (int i = 0; i < 2 || qh_mono_seconds() - w0 < 0.2; i++) {
        double t0 = qh_mono_seconds();
        if (BENCH_CALL() != QMM_OK) {
            fprintf(stderr, "qmmcheck bench: %s: %s: %s\n", name, qmm_status_name(st.code),
                    shown(msg, sizeof msg, st.message));
            rc = 1;
            goto out;
        }
        one = qh_mono_seconds() - t0;
        if (i > 50)
            break;
    }
    if (reps <= 0) {
        reps = one > 0 ? (int)(1.0 / one) : 50;
        reps = reps < 5 ? 5 : reps > 200 ? 200 : reps;
    }
    times = malloc((size_t)reps * sizeof *times);
    if (!times) {
        rc = 1;
        goto out;
    }
    int block = (reps + PEAK_BLOCKS - 1) / PEAK_BLOCKS;
    for (int i = 0; i < reps; i++) {
        qmm_status_code code = QMM_OK;
        if (pk && i > 0 && i % block == 0) {
            /* a peak sample, then an untimed call: the backend's threads may have gone to
             * sleep during the sample, and the next timed call must not pay for it */
            qmm_optimized_peak_sample(pk);
            code = BENCH_CALL();
        }
        double t0 = qh_mono_seconds();
        if (code == QMM_OK)
            code = BENCH_CALL();
        times[i] = qh_mono_seconds() - t0;
        if (code != QMM_OK) {
            fprintf(stderr, "qmmcheck bench: %s: %s\n", name, shown(msg, sizeof msg, st.message));
            rc = 1;
            goto out;
        }
    }
    if (pk)
        qmm_optimized_peak_sample(pk);
#undef BENCH_CALL
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
out:
    free(times);
    qmm_optimized_packed_b_free(pb);
    free(a);
    free(b);
    free(y);
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

static int write_json(const char *path, const char *backend, const char *types, int threads,
                      int const_b, const qmm_optimized_peak_info *pi, double base_gops,
                      int raised, const bench_result *r, int nr)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "qmmcheck bench: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    fprintf(f, "{\n  \"backend\": \"%s\",\n  \"types\": \"%s\",\n", backend, types);
    fprintf(f,
            "  \"peak\": {\"threads\": %d, \"gops\": %.3f, \"loop\": \"%s\", \"isa\": \"%s\", "
            "\"method\": \"best of short samples between the timed calls\", \"samples\": %d, "
            "\"sample_ms\": %.3f, \"loop_gops\": %.3f, \"thread_gops\": %.3f, \"cores\": %d, "
            "\"together_gops\": %.3f, \"raised\": %s, \"clock_ghz\": %.3f, "
            "\"ops_per_cycle_per_core\": %.2f, \"cpu\": \"%s\", \"published_for\": \"%s\", "
            "\"published_ops_per_cycle\": %.0f, \"published_up_to\": %s, \"check\": \"%s\", "
            "\"check_fraction\": %.3f},\n",
            threads, base_gops, pi->loop ? pi->loop : "none", pi->isa ? pi->isa : "none",
            pi->samples, pi->sample_s * 1e3, pi->ops / 1e9, pi->ops_thread / 1e9, pi->cores,
            pi->ops_together / 1e9, raised ? "true" : "false",
            pi->clock_hz / 1e9, pi->ops_per_cycle, pi->cpu_id, pi->cpu ? pi->cpu : "",
            pi->published, pi->published_up_to ? "true" : "false", verdict_word(pi->verdict),
            pi->fraction);
    fprintf(f, "  \"results\": [\n");
    for (int i = 0; i < nr; i++)
        fprintf(f,
                "    {\"shape\": \"%lldx%lldx%lld\", \"m\": %lld, \"k\": %lld, \"n\": %lld, "
                "\"types\": \"%s\", \"threads\": %d, \"const_b\": %s, \"reps\": %d, "
                "\"median_s\": %.9g, \"min_s\": %.9g, \"gops\": %.3f, \"best_gops\": %.3f, "
                "\"pct_peak\": %.2f, \"pct_peak_best\": %.2f}%s\n",
                (long long)r[i].m, (long long)r[i].k, (long long)r[i].n, (long long)r[i].m,
                (long long)r[i].k, (long long)r[i].n, types, threads,
                const_b ? "true" : "false", r[i].reps, r[i].median_s, r[i].min_s, r[i].gops,
                r[i].best_gops, r[i].pct_peak, r[i].pct_peak_best, i + 1 < nr ? "," : "");
    fprintf(f, "  ]\n}\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "qmmcheck bench: %s: %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

int qh_cmd_bench(int argc, char **argv)
{
    const char *backend = "optimized", *types = "u8s8u8", *report = NULL;
    int threads = 0, const_b = 0, reps = 0, peak_only = 0, nshapes = 0;
    int64_t shapes[BENCH_MAX_SHAPES][3];
    qh_opt_parser p;
    qh_opt_init(&p, &qh_bench_usage, argc, argv);
    const char *val;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        switch (id) {
        case QH_OPT_HELP: return 0;
        case QH_OPT_BAD: return usage(p.error);
        case QH_OPT_ARG: return usage("bench takes no arguments besides its options");
        case O_CONST_B: const_b = 1; break;
        case O_PEAK: peak_only = 1; break;
        case O_BACKEND: backend = val; break;
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
            if (strncmp(val, "json:", 5) != 0 || !val[5])
                return usage("--report takes json:FILE");
            report = val + 5;
            break;
        case O_SHAPE:
            if (nshapes == BENCH_MAX_SHAPES)
                return usage("too many --shape options");
            if (parse_shape(val, shapes[nshapes]))
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
        fprintf(stderr, "qmmcheck bench: %s\n", err.msg);
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
        if (bench_shape(&qb, shapes[done][0], shapes[done][1], shapes[done][2], t, const_b,
                        reps, pk, &res[done]) != 0) {
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
