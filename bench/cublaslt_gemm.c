/* bench/cublaslt_gemm.c — the GPU benchmark of issue 7 (contract: docs/semantics.md §6): the cuda
 * backend's exact QLinearMatMul pipeline against a plain cuBLASLt int8 GEMM, both on
 * device-resident data.
 *
 *   qmm_cublaslt_bench [--reps N] [SIZE ...]        (default sizes 4096 8192: SIZE^3 problems)
 *
 * Prints, per size, the plain GEMM's and the pipeline's median time and int8 TOPS
 * (2*M*N*K / time) and the ratio (target >= 70%). Exit 77 when there is no CUDA device.
 * `qmmcheck bench --backend cuda --shape ...` measures the same backend end to end through the
 * operator interface, host<->device copies of every call included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimized/qmm_cuda.h"

int main(int argc, char **argv)
{
    int reps = 20;
    long sizes[16];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (nsizes < 16 && atol(argv[i]) > 0) {
            sizes[nsizes++] = atol(argv[i]);
        } else {
            fprintf(stderr, "usage: qmm_cublaslt_bench [--reps N] [SIZE ...]\n");
            return 2;
        }
    }
    if (nsizes == 0) {
        sizes[nsizes++] = 4096;
        sizes[nsizes++] = 8192;
    }
    qmm_status st;
    qmm_backend *be = qmm_cuda_open(QMM_ABI_VERSION, "", &st);
    if (!be) {
        fprintf(stderr, "qmm_cublaslt_bench: %s\n", st.message);
        return 1;
    }
    int rc = 0;
    printf("%-8s %12s %10s %12s %10s %8s\n", "size", "cublasLt_ms", "TOPS", "pipeline_ms",
           "TOPS", "ratio");
    for (int i = 0; i < nsizes; i++) {
        int64_t s = sizes[i];
        double g = 0, f = 0;
        qmm_status_code c = qmm_cuda_bench_resident(be, s, s, s, reps, &g, &f, &st);
        if (c == QMM_UNSUPPORTED) {
            printf("qmm_cublaslt_bench: %s: not measured\n", st.message);
            rc = 77;
            break;
        }
        if (c != QMM_OK) {
            fprintf(stderr, "qmm_cublaslt_bench: %lld: %s\n", (long long)s, st.message);
            rc = 1;
            break;
        }
        double ops = 2.0 * (double)s * (double)s * (double)s;
        printf("%-8lld %12.3f %10.1f %12.3f %10.1f %7.1f%%\n", (long long)s, g * 1e3,
               ops / g * 1e-12, f * 1e3, ops / f * 1e-12, 100.0 * g / f);
    }
    be->close(be);
    return rc;
}
