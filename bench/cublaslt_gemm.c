/* bench/cublaslt_gemm.c — the GPU benchmark of issue 28 (contract: docs/semantics.md §6): the cuda
 * backend's exact QLinearMatMul pipeline against a plain cuBLASLt int8 GEMM, both on
 * device-resident pseudo-random data (the harness's seeded generator).
 *
 *   qmm_cublaslt_bench [--reps N] [--options OPTS] [SHAPE ...]
 *
 * OPTS are the cuda backend's options (`slabs=4`: the pipeline in column slabs on two
 * streams; docs/cuda.md), printed with the results.
 * SHAPE is MxKxN or one number S (S x S x S); the default shapes are 4096, 8192, 1x4096x4096,
 * 16x4096x4096 and 128x4096x4096. Prints, per shape, the plain GEMM's and the pipeline's median
 * times and int8 TOPS (2*M*N*K / time), the ratio GEMM / pipeline (the share of cuBLASLt's
 * throughput the exact pipeline keeps), and the pipeline's stages timed alone: operand
 * preparation and the epilogue. Exit 77 when there is no CUDA device.
 * `qmmcheck bench --backend cuda --shape ...` measures the same backend end to end through the
 * operator interface, host<->device copies of every call included. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/clean.h"
#include "harness/base/numparse.h"
#include "harness/base/rng.h"
#include "optimized/qmm_cuda.h"

/* "S" (S x S x S) or "MxKxN" (harness/base/numparse.h), every number in 1 .. 2^20 and K at
 * most 65536 (one GEMM, no K chunks) */
static int parse_shape(const char *s, int64_t dims[3])
{
    if (!strchr(s, 'x')) {
        if (qh_parse_i64(s, 1, 65536, &dims[0]))
            return 0;
        dims[1] = dims[2] = dims[0];
        return 1;
    }
    return qh_parse_shape(s, 1 << 20, dims) == 0 && dims[0] >= 1 && dims[1] >= 1 &&
           dims[1] <= 65536 && dims[2] >= 1;
}

int main(int argc, char **argv)
{
    static const char *defaults[] = {"4096", "8192", "1x4096x4096", "16x4096x4096",
                                     "128x4096x4096"};
    int reps = 20;
    const char *options = "";
    int64_t shapes[16][3];
    int nshapes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            if (qh_parse_int(argv[++i], 1, 1000000, &reps)) {
                fprintf(stderr, "qmm_cublaslt_bench: --reps takes a number from 1 to 1000000\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--options") == 0 && i + 1 < argc) {
            options = argv[++i];
        } else if (nshapes < 16 && parse_shape(argv[i], shapes[nshapes])) {
            nshapes++;
        } else {
            char *shown = qh_clean_dup(argv[i], strlen(argv[i]), 64);
            fprintf(stderr, "qmm_cublaslt_bench: '%s': want --reps N or a shape S or MxKxN "
                            "(each 1 .. 2^20, K at most 65536; at most 16 shapes) or "
                            "--options OPTS\n",
                    shown ? shown : "?");
            free(shown);
            return 2;
        }
    }
    for (size_t i = 0; nshapes == 0 && i < sizeof defaults / sizeof defaults[0]; i++)
        parse_shape(defaults[i], shapes[i]);
    if (nshapes == 0)
        nshapes = (int)(sizeof defaults / sizeof defaults[0]);
    qmm_status st;
    qmm_backend *be = qmm_cuda_open(QMM_ABI_VERSION, options, &st);
    if (!be) {
        char *shown = qh_clean_dup(st.message, strlen(st.message), 256);
        fprintf(stderr, "qmm_cublaslt_bench: %s\n", shown ? shown : "cannot open the backend");
        free(shown);
        return 1;
    }
    printf("backend %s\n", be->name);
    int rc = 0;
    printf("%-16s %11s %8s %11s %8s %7s %10s %10s\n", "MxKxN", "cublasLt_ms", "TOPS",
           "pipeline_ms", "TOPS", "ratio", "prepare_ms", "epilog_ms");
    for (int i = 0; i < nshapes; i++) {
        int64_t m = shapes[i][0], k = shapes[i][1], n = shapes[i][2];
        char name[64];
        snprintf(name, sizeof name, "%" PRId64 "x%" PRId64 "x%" PRId64, m, k, n);
        /* pseudo-random operands: a GEMM is never timed on constant data */
        uint8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
        if (!a || !b) {
            fprintf(stderr, "qmm_cublaslt_bench: %s: out of memory\n", name);
            free(a);
            free(b);
            rc = 1;
            continue;
        }
        qh_rng r = {(uint64_t)i + 1};
        for (int64_t e = 0; e < m * k; e++)
            a[e] = (uint8_t)qh_rng_next(&r);
        for (int64_t e = 0; e < k * n; e++)
            b[e] = (uint8_t)qh_rng_next(&r);
        qmm_cuda_bench_times t;
        qmm_status_code c = qmm_cuda_bench_resident(be, m, k, n, a, (const int8_t *)b, reps, &t, &st);
        free(a);
        free(b);
        if (c == QMM_UNSUPPORTED) {
            printf("qmm_cublaslt_bench: %s: not measured\n", st.message);
            rc = 77;
            break;
        }
        if (c != QMM_OK) {
            fprintf(stderr, "qmm_cublaslt_bench: %s: %s\n", name, st.message);
            rc = 1;
            continue;
        }
        double ops = 2.0 * (double)m * (double)k * (double)n;
        printf("%-16s %11.4f %8.1f %11.4f %8.1f %6.1f%% %10.4f %10.4f\n", name, t.gemm_s * 1e3,
               ops / t.gemm_s * 1e-12, t.full_s * 1e3, ops / t.full_s * 1e-12,
               100.0 * t.gemm_s / t.full_s, t.prepare_s * 1e3, t.epilogue_s * 1e3);
        fflush(stdout);
    }
    be->close(be);
    return rc;
}
