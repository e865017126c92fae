/* harness/cli/cmd_bench.c — `qmmcheck bench`: QLinearMatMul throughput of one backend.
 *
 *   qmmcheck bench --backend B --shape MxKxN [--shape ...] --types u8s8u8 --threads T
 *                  [--const-b] [--reps N] [--report json:FILE]
 *   qmmcheck bench --peak [--threads T]
 *
 * Each shape: warm-up calls, then N timed calls (default: as many as fit in about a second,
 * at least 5); the median is reported with GOPS = 2*M*N*K / median and the percentage of this
 * machine's int8 peak for T threads (qmm_optimized_peak_ops: the dedicated loop). --threads
 * is passed to the optimized backend as threads=T; other backends get their spec unchanged.
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

#include "harness/run/backends.h"
#include "harness/io/clean.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/run/invoke.h"
#include "harness/io/numparse.h"
#include "optimized/qmm_optimized.h"

#define BENCH_MAX_SHAPES 32

typedef struct bench_result {
    int64_t m, k, n;
    int reps;
    double median_s, min_s, gops, pct_peak;
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
    {O_PEAK, "--peak", 0, NULL, 0, "only measure this machine's int8 peak"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_bench_usage = {
    "bench", "--backend SPEC --shape MxKxN [--shape ...] [options] | --peak [--threads T]",
    "time a backend's QLinearMatMul against this machine's int8 peak", NULL, bench_options, 0};

#define usage(msg) qh_opt_error(&qh_bench_usage, QH_ERR_USAGE, "%s", (msg))
#define bad_value(...) qh_opt_bad_value(&qh_bench_usage, QH_ERR_USAGE, __VA_ARGS__)

/* "MxKxN", each part strict (harness/io/numparse.h) and at most 2^20. */
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
 * text is not trusted (harness/io/clean.h). */
static const char *shown(char *buf, size_t size, const char *text)
{
    qh_clean_into(buf, size, text ? text : "", text ? strlen(text) : 0, 0);
    return buf;
}

/* Runs one shape; 0 on success, 1 when the backend failed (message printed). */
static int bench_shape(qh_backend *qb, int64_t m, int64_t k, int64_t n, const int32_t t[3],
                       int const_b, int reps, bench_result *res)
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
    /* through the harness's copy of the table, as every other caller (harness/run/backends.h) */
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
    for (int i = 0; i < reps; i++) {
        double t0 = qh_mono_seconds();
        qmm_status_code code = BENCH_CALL();
        times[i] = qh_mono_seconds() - t0;
        if (code != QMM_OK) {
            fprintf(stderr, "qmmcheck bench: %s: %s\n", name, shown(msg, sizeof msg, st.message));
            rc = 1;
            goto out;
        }
    }
#undef BENCH_CALL
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    res->m = m;
    res->k = k;
    res->n = n;
    res->reps = reps;
    res->median_s = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    res->min_s = times[0];
    res->gops = res->median_s > 0 ? 2.0 * (double)m * (double)n * (double)k / res->median_s / 1e9
                                  : 0;
out:
    free(times);
    qmm_optimized_packed_b_free(pb);
    free(a);
    free(b);
    free(y);
    return rc;
}

static int write_json(const char *path, const char *backend, const char *types, int threads,
                      int const_b, double peak_gops, const char *loop, const bench_result *r,
                      int nr)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "qmmcheck bench: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    fprintf(f, "{\n  \"backend\": \"%s\",\n  \"types\": \"%s\",\n", backend, types);
    fprintf(f, "  \"peak\": {\"threads\": %d, \"gops\": %.3f, \"loop\": \"%s\"},\n", threads,
            peak_gops, loop);
    fprintf(f, "  \"results\": [\n");
    for (int i = 0; i < nr; i++)
        fprintf(f,
                "    {\"shape\": \"%lldx%lldx%lld\", \"m\": %lld, \"k\": %lld, \"n\": %lld, "
                "\"types\": \"%s\", \"threads\": %d, \"const_b\": %s, \"reps\": %d, "
                "\"median_s\": %.9g, \"min_s\": %.9g, \"gops\": %.3f, \"pct_peak\": %.2f}%s\n",
                (long long)r[i].m, (long long)r[i].k, (long long)r[i].n, (long long)r[i].m,
                (long long)r[i].k, (long long)r[i].n, types, threads,
                const_b ? "true" : "false", r[i].reps, r[i].median_s, r[i].min_s, r[i].gops,
                r[i].pct_peak, i + 1 < nr ? "," : "");
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

    if (peak_only) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int list[2] = {threads ? threads : 1, (int)(ncpu > 1 ? ncpu : 1)};
        int count = threads || list[1] == 1 ? 1 : 2;
        for (int i = 0; i < count; i++) {
            const char *loop;
            double ops = qmm_optimized_peak_ops(list[i], 1.0, &loop);
            printf("peak threads=%d %.1f GOPS (int8, 2 ops per multiply-accumulate) loop: %s\n",
                   list[i], ops / 1e9, loop);
            const char *isa;
            for (int v = 0; (isa = qmm_optimized_isa_variant(v)) != NULL; v++) {
                double ceiling = qmm_optimized_peak_ceiling_ops(v, list[i], 1.0, &loop);
                if (ceiling > 0)
                    printf("%s peak threads=%d %.1f GOPS loop: %s (the ceiling of isa=%s; "
                           "percentages stay against the peak above)\n",
                           isa, list[i], ceiling / 1e9, loop, isa);
            }
        }
        return 0;
    }
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
    const char *loop;
    double peak = qmm_optimized_peak_ops(eff_threads, 0.5, &loop) / 1e9;
    char name[128], description[QH_CLEAN_LINE_MAX];
    shown(name, sizeof name, qb.table.name);
    shown(description, sizeof description, qb.table.description);
    printf("backend %s (%s)\npeak threads=%d %.1f GOPS, loop: %s\n", name, description,
           eff_threads, peak, loop);

    bench_result res[BENCH_MAX_SHAPES];
    memset(res, 0, sizeof res);
    int rc = 0;
    for (int s = 0; s < nshapes; s++) {
        if (bench_shape(&qb, shapes[s][0], shapes[s][1], shapes[s][2], t, const_b, reps,
                        &res[s]) != 0) {
            rc = 1;
            break;
        }
        res[s].pct_peak = peak > 0 ? 100.0 * res[s].gops / peak : 0;
        printf("bench %s %lldx%lldx%lld %s threads=%d const-b=%s reps=%d median=%.6f s "
               "min=%.6f s %.1f GOPS %.1f%% of peak\n",
               name, (long long)shapes[s][0], (long long)shapes[s][1],
               (long long)shapes[s][2], types, eff_threads, const_b ? "yes" : "no",
               res[s].reps, res[s].median_s, res[s].min_s, res[s].gops, res[s].pct_peak);
        fflush(stdout);
    }
    if (rc == 0 && report)
        rc = write_json(report, name, types, eff_threads, const_b, peak, loop, res,
                        nshapes);
    qh_backend_release(&qb);
    return rc;
}
