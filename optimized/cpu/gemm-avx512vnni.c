/* optimized/cpu/gemm-avx512vnni.c — AVX-512 VNNI microkernel (built with -mavx512f
 * -mavx512bw -mavx512vl -mavx512vnni). 8 rows x 32 columns: 16 zmm accumulators, 2 B
 * registers, one broadcast. vpdpbusd (non-saturating) as in gemm-avxvnni.c. Not executed on
 * the development machine (no AVX-512): the dispatch refuses it there.
 */
#include <immintrin.h>

#include "optimized/cpu/opt_internal.h"

enum { MR = 8, NR = 32 };

void qmm_opt_kernel_avx512vnni_8x32(size_t kgroups, const int32_t *a, const int8_t *b,
                                    int32_t *c, size_t ldc, int accumulate)
{
    __m512i acc[MR][2];
    for (int r = 0; r < MR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (size_t t = 0; t < kgroups; t++) {
        /* columns 0-15 then 16-31, four k per column */
        __m512i b0 = _mm512_loadu_si512((const void *)b);
        __m512i b1 = _mm512_loadu_si512((const void *)(b + 64));
        for (int r = 0; r < MR; r++) {
            __m512i av = _mm512_set1_epi32(a[r]);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
        }
        a += MR;
        b += NR * 4;
    }
    for (int r = 0; r < MR; r++) {
        int32_t *p0 = c + (size_t)r * ldc, *p1 = c + (size_t)r * ldc + 16;
        if (accumulate) {
            acc[r][0] = _mm512_add_epi32(acc[r][0], _mm512_loadu_si512((const void *)p0));
            acc[r][1] = _mm512_add_epi32(acc[r][1], _mm512_loadu_si512((const void *)p1));
        }
        _mm512_storeu_si512((void *)p0, acc[r][0]);
        _mm512_storeu_si512((void *)p1, acc[r][1]);
    }
}

/* Peak loop: 12 independent vpdpbusd chains (the accumulator dependence keeps each one in
 * the loop), no loads; the folded sum is returned through *sink so nothing is dead. */
uint64_t qmm_opt_peak_avx512vnni(uint64_t iters)
{
    __m512i x = _mm512_set1_epi32(0x01020304), y = _mm512_set1_epi32(0x05060708);
    __m512i c[12];
    for (int r = 0; r < 12; r++)
        c[r] = _mm512_set1_epi32(r);
    for (uint64_t i = 0; i < iters; i++)
        for (int r = 0; r < 12; r++)
            c[r] = _mm512_dpbusd_epi32(c[r], x, y);
    for (int r = 1; r < 12; r++)
        c[0] = _mm512_add_epi32(c[0], c[r]);
    volatile int32_t sink = _mm512_cvtsi512_si32(c[0]);
    (void)sink;
    return iters * 12u * 64u;
}
