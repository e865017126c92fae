/* bench/nbits_bench.c — qmm_nbits_bench: times the optimized backend's MatMulNBits on one
 * shape (float A, 4-bit/2-bit/8-bit B with packed uint8 zero points, no bias), for
 * bench/ort_nbits.py.
 *
 *   qmm_nbits_bench M K N BLOCK BITS LEVEL THREADS CALLS [ISA]
 *
 * Prints one line: "median_ms MIN_ms" after two untimed calls. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/operator.h"
#include "optimized/qmm_optimized.h"
#include "qmm/backend.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    if (argc < 9) {
        fprintf(stderr, "usage: %s M K N BLOCK BITS LEVEL THREADS CALLS [ISA]\n", argv[0]);
        return 2;
    }
    long m = atol(argv[1]), k = atol(argv[2]), n = atol(argv[3]), bs = atol(argv[4]);
    int bits = atoi(argv[5]), level = atoi(argv[6]), threads = atoi(argv[7]);
    int calls = atoi(argv[8]);
    if (m < 1 || k < 1 || n < 1 || bs < 16 || calls < 1 || calls > 100000) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }
    long kb = (k + bs - 1) / bs, blob = bs * bits / 8, zrow = (kb * bits + 7) / 8;
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *y = malloc(sizeof(float) * (size_t)(m * n));
    float *s = malloc(sizeof(float) * (size_t)(n * kb));
    uint8_t *b = malloc((size_t)(n * kb * blob)), *zp = malloc((size_t)(n * zrow));
    if (!a || !y || !s || !b || !zp)
        return 1;
    uint64_t r = 1;
    for (long i = 0; i < m * k; i++)
        a[i] = (float)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 40) / 16777216.0f - 0.5f;
    for (long i = 0; i < n * kb * blob; i++)
        b[i] = (uint8_t)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 56);
    for (long i = 0; i < n * zrow; i++)
        zp[i] = (uint8_t)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 56);
    for (long i = 0; i < n * kb; i++)
        s[i] = 0.01f + (float)(i % 7) * 0.001f;
    char opt[64];
    snprintf(opt, sizeof opt, "isa=%s,threads=%d", argc > 9 ? argv[9] : "auto", threads);
    qmm_status st;
    qmm_backend *be = qmm_optimized_open(QMM_ABI_VERSION, opt, &st);
    if (!be) {
        fprintf(stderr, "%s\n", st.message);
        return 1;
    }
    qmm_call c;
    qmm_call_init(&c, QMM_OP_MATMULNBITS, 1);
    qmm_matmulnbits *q = &c.u.matmulnbits;
    q->a = (qmm_tensor){QMM_DTYPE_FLOAT, 2, {m, k}, a};
    q->b = (qmm_tensor){QMM_DTYPE_UINT8, 3, {n, kb, blob}, b};
    q->scales = (qmm_tensor){QMM_DTYPE_FLOAT, 2, {n, kb}, s};
    q->zero_points = (qmm_tensor){QMM_DTYPE_UINT8, 2, {n, zrow}, zp};
    q->y = (qmm_tensor){QMM_DTYPE_FLOAT, 2, {m, n}, y};
    q->k = (int32_t)k;
    q->n = (int32_t)n;
    q->bits = bits;
    q->block_size = (int32_t)bs;
    q->accuracy_level = level;
    double *t = malloc(sizeof(double) * (size_t)calls);
    for (int i = 0; i < calls + 2; i++) {
        double t0 = now_ms();
        if (qmm_backend_run(be, &c, &st) != QMM_OK) {
            fprintf(stderr, "%s\n", st.message);
            return 1;
        }
        if (i >= 2)
            t[i - 2] = now_ms() - t0;
    }
    qsort(t, (size_t)calls, sizeof *t, cmp);
    printf("%.4f %.4f\n", t[calls / 2], t[0]);
    be->close(be);
    return 0;
}
