/* bench/float8_bench.c — times the optimized backend's float8 QLinearMatMul-21 (its exact
 * path, optimized/cpu/float8.c) beside the uint8 x int8 integer path on the same shapes, in
 * alternating rounds (every configuration once per round, so a busy phase of a shared machine
 * slows all of them), and prints each configuration's median call time and rate.
 *
 *   qmm_float8_bench [--threads T] [--rounds R] [--reps N] MxKxN [MxKxN ...]
 *
 * Types timed per shape: u8s8u8 (the integer kernels), e4m3fn x e4m3fn -> e4m3fn,
 * e4m3fn x e4m3fn -> u8, e5m2 x e5m2 -> e5m2 (limbs), e4m3fn x s8 -> s8. Values are random
 * codes over every finite value, zero points 0, scales chosen so most outputs do not
 * saturate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/qmm_ops.h"
#include "optimized/qmm_optimized.h"

typedef struct config {
    const char *name;
    int32_t ta, tb, ty;
} config;

static const config configs[] = {
    {"u8s8u8", QMM_DTYPE_UINT8, QMM_DTYPE_INT8, QMM_DTYPE_UINT8},
    {"e4m3fn,e4m3fn->e4m3fn", QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FN,
     QMM_DTYPE_FLOAT8E4M3FN},
    {"e4m3fn,e4m3fn->u8", QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_UINT8},
    {"e4m3fn,s8->s8", QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_INT8, QMM_DTYPE_INT8},
    {"e5m2,e5m2->e5m2", QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2, QMM_DTYPE_FLOAT8E5M2},
};
enum { NCONF = sizeof configs / sizeof configs[0] };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 0x2029;

static uint8_t draw(int32_t dtype)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    uint8_t c = (uint8_t)(rng >> 56);
    if (!qmm_is_float8(dtype))
        return c;
    const qmm_float8_format *f = qmm_float8_format_of(dtype);
    uint8_t mag = (uint8_t)((c & 0x7f) % (f->max_code + 1));
    return qmm_float8_signed(dtype, c & 0x80, mag);
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    int threads = 2, rounds = 7, reps = 5;
    int64_t shapes[16][3];
    int ns = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (ns < 16 && sscanf(argv[i], "%ldx%ldx%ld", (long *)&shapes[ns][0],
                                   (long *)&shapes[ns][1], (long *)&shapes[ns][2]) == 3)
            ns++;
        else {
            fprintf(stderr, "usage: qmm_float8_bench [--threads T] [--rounds R] [--reps N] "
                            "MxKxN ...\n");
            return 2;
        }
    }
    if (ns == 0 || threads < 1 || rounds < 1 || reps < 1) {
        fprintf(stderr, "qmm_float8_bench: give at least one shape MxKxN\n");
        return 2;
    }
    char spec[64];
    snprintf(spec, sizeof spec, "threads=%d", threads);
    qmm_status st;
    qmm_backend *be = qmm_optimized_open(QMM_ABI_VERSION, spec, &st);
    if (!be) {
        fprintf(stderr, "qmm_float8_bench: %s\n", st.message);
        return 1;
    }
    printf("backend %s, %d rounds of %d calls, median call time\n", be->name, rounds, reps);
    for (int s = 0; s < ns; s++) {
        int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        uint8_t *a[NCONF], *b[NCONF], *y = malloc((size_t)(m * n) + 1);
        double *t[NCONF];
        for (int c = 0; c < NCONF; c++) {
            a[c] = malloc((size_t)(m * k) + 1);
            b[c] = malloc((size_t)(k * n) + 1);
            t[c] = malloc(sizeof(double) * (size_t)(rounds * reps));
            for (int64_t i = 0; i < m * k; i++)
                a[c][i] = draw(configs[c].ta);
            for (int64_t i = 0; i < k * n; i++)
                b[c][i] = draw(configs[c].tb);
        }
        for (int r = 0; r < rounds; r++)
            for (int c = 0; c < NCONF; c++) {
                const config *cf = &configs[c];
                uint8_t z = 0;
                float sa = 1.0f, sb = 1.0f;
                /* |x| about sqrt(K)·E|a|·E|b|/sy: bring it near y's range */
                double ea = qmm_is_float8(cf->ta) ? (cf->ta == QMM_DTYPE_FLOAT8E5M2 ? 4e3 : 40)
                                                  : 64,
                       eb = qmm_is_float8(cf->tb) ? (cf->tb == QMM_DTYPE_FLOAT8E5M2 ? 4e3 : 40)
                                                  : 64;
                float sy = (float)(sqrt((double)k) * ea * eb / 30.0);
                qmm_qlinearmatmul q = {
                    .a = {cf->ta, 2, {m, k}, a[c]},
                    .a_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sa},
                    .a_zero_point = {cf->ta, 0, {0}, &z},
                    .b = {cf->tb, 2, {k, n}, b[c]},
                    .b_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sb},
                    .b_zero_point = {cf->tb, 0, {0}, &z},
                    .y_scale = {QMM_DTYPE_FLOAT, 0, {0}, &sy},
                    .y_zero_point = {cf->ty, 0, {0}, &z},
                    .y = {cf->ty, 2, {m, n}, y},
                    .opset = 21,
                };
                for (int i = 0; i < reps; i++) {
                    double t0 = now();
                    if (be->qlinearmatmul(be, &q, &st) != QMM_OK) {
                        fprintf(stderr, "qmm_float8_bench: %s: %s\n", cf->name, st.message);
                        return 1;
                    }
                    t[c][r * reps + i] = now() - t0;
                }
            }
        for (int c = 0; c < NCONF; c++) {
            qsort(t[c], (size_t)(rounds * reps), sizeof(double), cmp);
            double med = t[c][rounds * reps / 2];
            printf("%ldx%ldx%ld %-24s median %9.3f ms  %8.2f G MAC/s  (fastest %.3f ms)\n",
                   (long)m, (long)k, (long)n, configs[c].name, med * 1e3,
                   (double)m * (double)k * (double)n / med * 1e-9, t[c][0] * 1e3);
            free(a[c]);
            free(b[c]);
            free(t[c]);
        }
        free(y);
    }
    be->close(be);
    return 0;
}
