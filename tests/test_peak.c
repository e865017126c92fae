/* tests/test_peak.c — the int8 peak `qmmcheck bench` takes percentages of
 * (optimized/qmm_optimized.h): the rules, with injected measurements, that keep every
 * percentage within 0..100 and judge a measured per-cycle rate against the published one; and
 * the sampler's bookkeeping on this CPU. No figure of this machine is asserted: it may be busy.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "optimized/qmm_optimized.h"

#define G 1e9

/* The hour on the shared Zen 4: the loop read 199-227 GOPS while the GEMM ran
 * 380-390. The GEMM's rate becomes the base; no percentage exceeds 100. */
Test(peak_base, a_gemm_above_the_loop_raises_the_base)
{
    double rates[] = {380 * G, 390 * G, 385 * G};
    int beaten = 7;
    double base = qmm_optimized_peak_base(227 * G, rates, 3, &beaten);
    cr_expect_eq(beaten, 1);
    cr_expect_eq(base, 390 * G);
    for (int i = 0; i < 3; i++) {
        double pct = qmm_optimized_peak_percent(rates[i], base);
        cr_expect(pct > 0 && pct <= 100, "%g", pct);
    }
    cr_expect_eq(qmm_optimized_peak_percent(390 * G, base), 100);
}

Test(peak_base, a_loop_above_every_gemm_is_the_base)
{
    double rates[] = {380 * G, 390 * G};
    int beaten = 7;
    cr_expect_eq(qmm_optimized_peak_base(452 * G, rates, 2, &beaten), 452 * G);
    cr_expect_eq(beaten, -1);
    cr_expect_eq(qmm_optimized_peak_base(452 * G, NULL, 0, &beaten), 452 * G);
    cr_expect_eq(beaten, -1);
    /* equal is not beaten */
    double same[] = {452 * G};
    cr_expect_eq(qmm_optimized_peak_base(452 * G, same, 1, &beaten), 452 * G);
    cr_expect_eq(beaten, -1);
}

Test(peak_base, no_loop_means_no_base)
{
    double rates[] = {380 * G};
    int beaten = 7;
    cr_expect_eq(qmm_optimized_peak_base(0, rates, 1, &beaten), 0);
    cr_expect_eq(beaten, -1);
    cr_expect_eq(qmm_optimized_peak_base(NAN, rates, 1, &beaten), 0);
    cr_expect_eq(qmm_optimized_peak_percent(380 * G, 0), 0);
}

Test(peak_percent, stays_within_0_and_100)
{
    cr_expect_eq(qmm_optimized_peak_percent(225 * G, 450 * G), 50);
    cr_expect_eq(qmm_optimized_peak_percent(900 * G, 450 * G), 100); /* never above */
    cr_expect_eq(qmm_optimized_peak_percent(INFINITY, 450 * G), 100);
    cr_expect_eq(qmm_optimized_peak_percent(-1, 450 * G), 0);
    cr_expect_eq(qmm_optimized_peak_percent(NAN, 450 * G), 0);
    cr_expect_eq(qmm_optimized_peak_percent(1, -1), 0);
}

Test(peak_check, verdicts_against_the_published_rate)
{
    double f = -1;
    cr_expect_eq(qmm_optimized_peak_check(128, 128, &f), QMM_PEAK_AGREES);
    cr_expect_float_eq(f, 1.0, 1e-12);
    /* the AVX2 pair on Zen 4: 81% of the port bound, systematic (docs/optimized.md) */
    cr_expect_eq(qmm_optimized_peak_check(51.6, 64, &f), QMM_PEAK_AGREES);
    /* half the rate: a loop the compiler spilled, or a time-shared core */
    cr_expect_eq(qmm_optimized_peak_check(64, 128, &f), QMM_PEAK_BELOW);
    cr_expect_float_eq(f, 0.5, 1e-12);
    cr_expect_eq(qmm_optimized_peak_check(140, 128, &f), QMM_PEAK_ABOVE);
    cr_expect_eq(qmm_optimized_peak_check(0, 128, &f), QMM_PEAK_UNCHECKED);
    cr_expect_eq(f, 0);
    cr_expect_eq(qmm_optimized_peak_check(100, 0, &f), QMM_PEAK_UNCHECKED);
    cr_expect_eq(f, 0);
}

/* The sampler's bookkeeping on this CPU: the best runnable loop, its samples counted, the
 * check consistent with the figures it reports. */
Test(peak_sampler, samples_and_reports_the_best_loop)
{
    qmm_optimized_peak *p = qmm_optimized_peak_open(-1, 1, 1e-4);
    if (!p) {
        for (int v = 0; qmm_optimized_variant_name(v); v++) {
            qmm_optimized_variant info;
            qmm_optimized_variant_info(v, &info);
            cr_expect(info.missing || strcmp(info.name, "scalar") == 0,
                      "%s runs here but has no peak", info.name);
        }
        return; /* no loop on this CPU (not x86-64) */
    }
    qmm_optimized_peak_info in;
    qmm_optimized_peak_get(p, &in);
    cr_expect_eq(in.samples, 0);
    cr_expect_eq(in.ops, 0);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(qmm_optimized_peak_sample(p), 0);
    qmm_optimized_peak_get(p, &in);
    cr_expect_eq(in.samples, 3);
    cr_expect_gt(in.ops, 0);
    cr_expect_eq(in.threads, 1);
    cr_expect_eq(in.cores, 1);
    cr_expect(in.loop && in.isa && in.cpu_id[0], "loop, isa and CPU named");
    /* the best variant this CPU runs with a loop: the last such in the table's order */
    int last = -1;
    for (int v = 0; qmm_optimized_variant_name(v); v++) {
        qmm_optimized_peak *q = qmm_optimized_peak_open(v, 1, 1e-4);
        if (q)
            last = v;
        qmm_optimized_peak_close(q);
    }
    cr_expect_str_eq(in.isa, qmm_optimized_variant_name(last));
    cr_expect_eq(in.ops, in.ops_thread, "one thread: the peak is its best sample");
    if (in.clock_hz > 0)
        cr_expect_float_eq(in.ops_per_cycle, in.ops / in.clock_hz, 1e-9 * in.ops_per_cycle);
    double f;
    cr_expect_eq(in.verdict, qmm_optimized_peak_check(in.ops_per_cycle, in.published, &f));
    cr_expect(!in.published == !in.cpu, "a published rate names its CPU");
    cr_expect(!in.published == !in.published_why, "and where it is from");
    qmm_optimized_peak_close(p);
}

Test(peak_sampler, refuses_what_has_no_loop_and_counts_cores)
{
    cr_expect_null(qmm_optimized_peak_open(0, 1, 1e-4), "the scalar variant has no loop");
    cr_expect_null(qmm_optimized_peak_open(1000, 1, 1e-4));
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    qmm_optimized_peak *p = qmm_optimized_peak_open(-1, (int)ncpu + 2, 1e-4);
    if (!p)
        return;
    cr_expect_eq(qmm_optimized_peak_sample(p), 0);
    qmm_optimized_peak_info in;
    qmm_optimized_peak_get(p, &in);
    cr_expect_eq(in.threads, (int)ncpu + 2);
    cr_expect(in.cores >= 1 && in.cores <= ncpu, "more threads than CPUs: %d cores counted",
              in.cores);
    cr_expect_gt(in.ops, 0);
    /* the peak: the cores times one thread's best, or a whole sample's best when higher */
    cr_expect_geq(in.ops, in.cores * in.ops_thread * (1 - 1e-12));
    cr_expect_geq(in.ops, in.ops_together);
    qmm_optimized_peak_close(p);
}
