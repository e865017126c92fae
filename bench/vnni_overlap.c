/* bench/vnni_overlap.c — which of the exact requantization's instructions take a multiply
 * pipe from vpdpbusd? (docs/optimized.md, "Overlapped epilogue"). A standalone
 * microbenchmark for an AVX-512 VNNI CPU (exit 77 on others), built on x86-64 as
 * build/optimized/qmm_vnni_overlap, or alone:
 *   cc -O2 -I. bench/vnni_overlap.c -o /tmp/vnni_overlap && /tmp/vnni_overlap
 *
 * Every loop runs the 8x32 tile's K group — 16 independent zmm vpdpbusd — ITERS times, with
 * 8 copies of one other instruction between them (independent of the products and of each
 * other: no chain runs through an iteration or from one iteration to the next). Its cost is
 * the time it adds, in vpdpbusd slots: (t - t0) / 8 / (t0 / 16), where t0 is the loop of the
 * products alone. 0 means the instruction issues beside the multiplies; 1 means each copy
 * takes the slot of one vpdpbusd (it runs on a multiply pipe). Times are TSC cycles (a fixed
 * rate), so only these ratios mean something; each is the median of RUNS runs. The last lines
 * run the kernels' whole row step (QMM_RQ_ROW, optimized/cpu/rq-row-avx512vnni.h: 32 lanes,
 * its loads and stores on an L1-resident buffer, its chain of dependent instructions as
 * there) once every S K groups of products, S = 1, 4 and 32 (the kernel's own spacing at
 * K = 1024: kgroups / 8 groups between row steps), against as many products alone.
 *
 * An earlier form of this file timed "the requantization alone" as one loop whose last
 * instruction wrote a register its first read, a chain through every iteration: that
 * figure was a latency, and the "about 70% hidden" read from it (Zen 4) was not a measure
 * of how much of the row step hides. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#include "optimized/cpu/rq-row-avx512vnni.h"

#define ITERS 4000000L
#define RUNS 11

#define CLOBBERS                                                                               \
    "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",   \
        "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",        \
        "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",       \
        "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4"

/* two products, then one copy of X with destination register D */
#define P2(A, B)                                                                               \
    "vpdpbusd %%zmm30, %%zmm31, %%zmm" A "\n\t"                                                \
    "vpdpbusd %%zmm30, %%zmm31, %%zmm" B "\n\t"
#define BODY(X)                                                                                \
    P2("0", "1") X("16") P2("2", "3") X("17") P2("4", "5") X("18") P2("6", "7") X("19")       \
        P2("8", "9") X("20") P2("10", "11") X("21") P2("12", "13") X("22") P2("14", "15")      \
            X("23")

/* the instructions of the row step (sources zmm24-25 and k2-3, never written) */
#define X_NONE(D)
#define X_CVTDQ2PS(D) "vcvtdq2ps %{rn-sae%}, %%zmm24, %%zmm" D "\n\t"
#define X_MULPS(D) "vmulps %{rn-sae%}, %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_MAXPS(D) "vmaxps %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_MINPS(D) "vminps %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_REDUCEPS(D) "vreduceps $0, %%zmm24, %%zmm" D "\n\t"
#define X_PANDD(D) "vpandd %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_CMPPS(D) "vcmpps $0x11, %%zmm24, %%zmm25, %%k1\n\t"
#define X_CVTPS2DQ(D) "vcvtps2dq %{rn-sae%}, %%zmm24, %%zmm" D "\n\t"
#define X_PADDD(D) "vpaddd %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_PMAXSD(D) "vpmaxsd %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_PMOVUSDB(D) "vpmovusdb %%zmm24, (%[m])\n\t"
#define X_BCAST(D) "vpbroadcastd 64(%[m]), %%zmm" D "\n\t"
#define X_PSUBD_M(D) "vpsubd 128(%[m]), %%zmm24, %%zmm" D "\n\t"
#define X_KUNPCK(D) "kunpckwd %%k2, %%k3, %%k1\n\t"
#define X_KANDD(D) "kandd %%k2, %%k3, %%k1\n\t"
#define X_KMOVD_M(D) "kmovd %%k2, 192(%[m])\n\t"
/* for comparison: an FMA, an integer multiply */
#define X_FMADD(D) "vfmadd231ps %%zmm24, %%zmm25, %%zmm" D "\n\t"
#define X_PMULLD(D) "vpmulld %%zmm24, %%zmm25, %%zmm" D "\n\t"

/* The kernels' row step itself (u8 narrowing) on 32 lanes of an L1-resident buffer: its
 * pointers do not move (ldcb and the tile's ldy are 0), so every iteration reads and writes
 * the same bytes. */
#define ROW QMM_RQ_ROW(QMM_NARROW_U8)
#define P16                                                                                    \
    P2("0", "1") P2("2", "3") P2("4", "5") P2("6", "7") P2("8", "9") P2("10", "11")           \
        P2("12", "13") P2("14", "15")
#define P64 P16 P16 P16 P16
#define P512 P64 P64 P64 P64 P64 P64 P64 P64

/* y at 0 (the X loops' stores at 0-255), the rq tile at 256 (ldy 0), the sums at 384, the
 * corrections and multipliers at 512 */
static char mem[1024] __attribute__((aligned(64)));

/* zmm24-29 hold finite floats (1.0: every float instruction above stays on its fast path) */
#define LOOP(BODY_ASM) LOOP_N(BODY_ASM, ITERS)
#define LOOP_N(BODY_ASM, ITERATIONS)                                                           \
    long n = (ITERATIONS);                                                                     \
    char *s = mem + 384, *y = mem;                                                             \
    uint64_t t0 = __rdtsc();                                                                   \
    __asm__ volatile("vbroadcastss %[one], %%zmm24\n\t"                                        \
                     "vbroadcastss %[one], %%zmm25\n\t"                                        \
                     "vbroadcastss %[one], %%zmm26\n\t"                                        \
                     "vbroadcastss %[one], %%zmm27\n\t"                                        \
                     "vbroadcastss %[one], %%zmm28\n\t"                                        \
                     "vbroadcastss %[one], %%zmm29\n\t"                                        \
                     "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"                                    \
                     "kxnorw %%k2, %%k2, %%k2\n\t"                                             \
                     "kxnorw %%k3, %%k3, %%k3\n\t"                                             \
                     "kxnorw %%k4, %%k4, %%k4\n\t"                                             \
                     ".p2align 5\n"                                                            \
                     "1:\n\t" BODY_ASM "dec %[n]\n\t"                                          \
                     "jnz 1b\n"                                                                \
                     : [n] "+r"(n), [s] "+r"(s), [y] "+r"(y)                                   \
                     : [m] "r"(mem), [one] "m"(one), [q] "r"(mem + 256), [i] "r"(0L),         \
                       [p] "r"(mem + 512), [ldcb] "r"(0L)                                      \
                     : CLOBBERS);                                                              \
    return (double)(__rdtsc() - t0) / (double)(ITERATIONS);

static const float one = 1.0f;

#define DEFINE(NAME, X)                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni"))) static double NAME(void)  \
    {                                                                                          \
        LOOP(BODY(X))                                                                          \
    }
DEFINE(t_none, X_NONE)
DEFINE(t_cvtdq2ps, X_CVTDQ2PS)
DEFINE(t_mulps, X_MULPS)
DEFINE(t_maxps, X_MAXPS)
DEFINE(t_minps, X_MINPS)
DEFINE(t_reduceps, X_REDUCEPS)
DEFINE(t_pandd, X_PANDD)
DEFINE(t_cmpps, X_CMPPS)
DEFINE(t_cvtps2dq, X_CVTPS2DQ)
DEFINE(t_paddd, X_PADDD)
DEFINE(t_pmaxsd, X_PMAXSD)
DEFINE(t_pmovusdb, X_PMOVUSDB)
DEFINE(t_bcast, X_BCAST)
DEFINE(t_psubd_m, X_PSUBD_M)
DEFINE(t_kunpck, X_KUNPCK)
DEFINE(t_kandd, X_KANDD)
DEFINE(t_kmovd_m, X_KMOVD_M)
DEFINE(t_fmadd, X_FMADD)
DEFINE(t_pmulld, X_PMULLD)
/* the row step every S K groups, and the S groups' products alone (TSC per iteration) */
#define DEFINE_ROW(NAME, NAME0, PRODUCTS, S)                                                   \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni"))) static double NAME(void)  \
    {                                                                                          \
        LOOP_N(ROW PRODUCTS, ITERS / (S))                                                      \
    }                                                                                          \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni"))) static double NAME0(void) \
    {                                                                                          \
        LOOP_N(PRODUCTS, ITERS / (S))                                                          \
    }
DEFINE_ROW(t_row1, t_p1, P16, 1)
DEFINE_ROW(t_row4, t_p4, P64, 4)
DEFINE_ROW(t_row32, t_p32, P512, 32)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const struct {
    const char *name;
    double (*fn)(void);
} loops[] = {
    {"(products alone)", t_none},
    {"vcvtdq2ps", t_cvtdq2ps},
    {"vmulps", t_mulps},
    {"vmaxps", t_maxps},
    {"vminps", t_minps},
    {"vreduceps", t_reduceps},
    {"vpandd", t_pandd},
    {"vcmpps -> k", t_cmpps},
    {"vcvtps2dq", t_cvtps2dq},
    {"vpaddd", t_paddd},
    {"vpmaxsd", t_pmaxsd},
    {"vpmovusdb -> m", t_pmovusdb},
    {"vpbroadcastd m", t_bcast},
    {"vpsubd m", t_psubd_m},
    {"kunpckwd", t_kunpck},
    {"kandd", t_kandd},
    {"kmovd -> m", t_kmovd_m},
    {"vfmadd231ps (cmp.)", t_fmadd},
    {"vpmulld (cmp.)", t_pmulld},
};
enum { NLOOPS = sizeof loops / sizeof loops[0] };

static const struct {
    int s;
    double (*row)(void), (*alone)(void);
} spacings[] = {{1, t_row1, t_p1}, {4, t_row4, t_p4}, {32, t_row32, t_p32}};
enum { NSPACINGS = sizeof spacings / sizeof spacings[0] };

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512bw")) {
        fprintf(stderr, "vnni_overlap: this CPU has no AVX-512 VNNI (or DQ, BW)\n");
        return 77;
    }
    /* runs interleaved (every loop once per pass), so that a drift of the machine's speed
       touches them all alike; the row-step costs are medians of the per-pass differences */
    static double t[NLOOPS][RUNS], d[NSPACINGS][RUNS];
    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < NLOOPS; i++)
            t[i][r] = loops[i].fn();
        for (int i = 0; i < NSPACINGS; i++) {
            double alone = spacings[i].alone(), row = spacings[i].row();
            /* in vpdpbusd slots: the products' time / (16 S) is one slot */
            d[i][r] = (row - alone) / (alone / (16.0 * spacings[i].s));
        }
    }
    double t0 = median(t[0], RUNS), slot = t0 / 16;
    printf("16 zmm vpdpbusd: %.2f TSC cycles an iteration (median of %d runs)\n", t0, RUNS);
    printf("%-20s %10s %14s\n", "instruction", "TSC/iter", "vpdpbusd slots");
    for (int i = 1; i < NLOOPS; i++) {
        double ti = median(t[i], RUNS);
        printf("%-20s %10.2f %14.2f\n", loops[i].name, ti, (ti - t0) / 8 / slot);
    }
    for (int i = 0; i < NSPACINGS; i++)
        printf("row step (32 lanes) every %2d K groups: %6.2f vpdpbusd slots a row step "
               "(of %d)\n",
               spacings[i].s, median(d[i], RUNS), 16 * spacings[i].s);
    return 0;
}
