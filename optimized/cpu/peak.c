/* optimized/cpu/peak.c — the int8 peak that `qmmcheck bench` reports percentages against
 * (qmm_optimized.h has the contract): a variant's peak loop (kernels.c) sampled in short runs on
 * `threads` threads, the best sample kept; the core clock from a dependent-add chain after
 * each sample; and the published per-cycle rate of each loop's instruction, per CPU, that the
 * measured rate is checked against (docs/optimized.md "The peak").
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/qmm_optimized.h"

/* ---- the published rates: what each loop can do per cycle per core, by CPU ----
 *
 * ops counts int8 operations, 2 per multiply-accumulate (MAC), for the loop as written (its
 * instruction mix on the core's ports), per core. Sources: AMD's Software Optimization Guides
 * (family 19h, pub. 57647; family 1Ah, pub. 58455) as LLVM's scheduling models
 * (X86ScheduleZnver3/4/5.td) encode them; Intel's optimization reference manual and LLVM's
 * X86SchedHaswell/SkylakeClient/SapphireRapids.td; Agner Fog's instruction tables and uops.info
 * for the same instructions. Each row's text says what the figure follows from. */

typedef struct rate_row {
    const char *isa;     /* the variant whose loop this rates */
    char vendor;         /* 'A' AuthenticAMD, 'I' GenuineIntel */
    unsigned family;     /* display family (base + extended) */
    unsigned model_lo, model_hi; /* display models, inclusive */
    const char *cpu;
    double ops;          /* int8 ops per cycle per core */
    int up_to;           /* 1: the most any part does (some have fewer units, or are hybrid) */
    const char *why;
} rate_row;

#define AVX2_AMD "12 vpmaddwd (16 MACs) + 12 vpaddd per 6 cycles: vpmaddwd on the two integer " \
                 "multiply pipes FP0/FP3 (2 per cycle), the 24 ops on the 4 vector ALU pipes; " \
                 "32 MACs per cycle"
#define ZEN_SRC "AMD SOG 57647 as LLVM X86ScheduleZnver"

static const rate_row rates[] = {
    /* AMD Zen 3: family 19h models 00-0Fh, 20-5Fh */
    {"avx2", 'A', 0x19, 0x00, 0x0f, "AMD Zen 3", 64, 0, AVX2_AMD " (" ZEN_SRC "3.td)"},
    {"avx2", 'A', 0x19, 0x20, 0x5f, "AMD Zen 3", 64, 0, AVX2_AMD " (" ZEN_SRC "3.td)"},
    /* AMD Zen 4: 10-1Fh, 60-7Fh, A0-AFh; no AVX-VNNI; 512-bit ops as two 256-bit halves */
    {"avx2", 'A', 0x19, 0x10, 0x1f, "AMD Zen 4", 64, 0, AVX2_AMD " (" ZEN_SRC "4.td)"},
    {"avx2", 'A', 0x19, 0x60, 0x7f, "AMD Zen 4", 64, 0, AVX2_AMD " (" ZEN_SRC "4.td)"},
    {"avx2", 'A', 0x19, 0xa0, 0xaf, "AMD Zen 4", 64, 0, AVX2_AMD " (" ZEN_SRC "4.td)"},
#define ZEN4_VNNI "zmm vpdpbusd (64 MACs) 1 per cycle: Zen 4 runs a 512-bit op as two 256-bit " \
                  "halves, holding one of the two integer multiply pipes FP0/FP3 two cycles " \
                  "(ymm: 2 per cycle, the same 64 MACs) (" ZEN_SRC "4.td, uops.info)"
    {"avx512vnni", 'A', 0x19, 0x10, 0x1f, "AMD Zen 4", 128, 0, ZEN4_VNNI},
    {"avx512vnni", 'A', 0x19, 0x60, 0x7f, "AMD Zen 4", 128, 0, ZEN4_VNNI},
    {"avx512vnni", 'A', 0x19, 0xa0, 0xaf, "AMD Zen 4", 128, 0, ZEN4_VNNI},
    /* AMD Zen 5: family 1Ah */
    {"avx2", 'A', 0x1a, 0x00, 0xff, "AMD Zen 5", 64, 0,
     "12 vpmaddwd + 12 vpaddd per 6 cycles: the 24 ops on the 4 vector ALU pipes (vpmaddwd on "
     "3 of them); 32 MACs per cycle (AMD SOG 58455 as LLVM X86ScheduleZnver5.td)"},
    {"avxvnni", 'A', 0x1a, 0x00, 0xff, "AMD Zen 5", 128, 0,
     "ymm vpdpbusd (32 MACs) 2 per cycle on pipes FP0/FP1 (AMD SOG 58455 as LLVM "
     "X86ScheduleZnver5.td: VNNI on the first two pipes)"},
    {"avx512vnni", 'A', 0x1a, 0x00, 0xff, "AMD Zen 5", 256, 1,
     "zmm vpdpbusd (64 MACs) 2 per cycle on the 512-bit pipes FP0/FP1 of the desktop and "
     "server cores; mobile Zen 5 splits 512-bit ops (half) (AMD SOG 58455, LLVM "
     "X86ScheduleZnver5.td)"},
    /* Intel: family 6. AVX2 on Haswell/Broadwell has one vector multiply port */
#define HSW "vpmaddwd ymm on port 0 only: 12 per 12 cycles, 16 MACs per cycle (Intel " \
            "optimization manual; LLVM X86SchedHaswell.td, X86SchedBroadwell.td)"
    {"avx2", 'I', 6, 0x3c, 0x3c, "Intel Haswell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x3f, 0x3f, "Intel Haswell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x45, 0x46, "Intel Haswell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x3d, 0x3d, "Intel Broadwell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x47, 0x47, "Intel Broadwell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x4f, 0x4f, "Intel Broadwell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x56, 0x56, "Intel Broadwell", 32, 0, HSW},
    {"avx2", 'I', 6, 0x00, 0xff, "Intel Skylake or later core", 48, 1,
     "12 vpmaddwd (ports 0/1) + 12 vpaddd (ports 0/1/5) per 8 cycles: 24 MACs per cycle (Intel "
     "optimization manual; LLVM X86SchedSkylakeClient.td); E-cores do less"},
    {"avxvnni", 'I', 6, 0x00, 0xff, "Intel core with AVX-VNNI", 128, 1,
     "ymm vpdpbusd (32 MACs) 2 per cycle on ports 0/1 (Golden Cove and later P-cores; LLVM "
     "X86SchedAlderlakeP.td); E-cores do less"},
    /* AVX-512 on client Ice Lake, Tiger Lake, Rocket Lake: one 512-bit FMA port */
#define ICL "zmm vpdpbusd (64 MACs) 1 per cycle: one 512-bit port (0+1 fused) (Intel " \
            "optimization manual; LLVM X86SchedIceLake.td)"
    {"avx512vnni", 'I', 6, 0x7d, 0x7e, "Intel Ice Lake client", 128, 0, ICL},
    {"avx512vnni", 'I', 6, 0x8c, 0x8d, "Intel Tiger Lake", 128, 0, ICL},
    {"avx512vnni", 'I', 6, 0xa7, 0xa7, "Intel Rocket Lake", 128, 0, ICL},
    {"avx512vnni", 'I', 6, 0x00, 0xff, "Intel Xeon with AVX-512 VNNI", 256, 1,
     "zmm vpdpbusd (64 MACs) 2 per cycle on ports 0 and 5 where the part has both 512-bit FMA "
     "units (Cascade Lake to Granite Rapids; one on some SKUs) (Intel optimization manual; "
     "LLVM X86SchedSapphireRapids.td)"},
    {"amx", 'I', 6, 0x00, 0xff, "Intel Xeon with AMX", 2048, 0,
     "tdpbusd: 16x16 int32 += 16x64 u8 x 64x16 s8 (16384 MACs) per 16 cycles, 1024 MACs per "
     "cycle (Intel: 2048 int8 operations per cycle per core; optimization manual, AMX "
     "chapter)"},
};

enum { NRATES = sizeof rates / sizeof rates[0] };

static const rate_row *published_rate(const char *isa, char *id, size_t idsize)
{
    char vendor;
    unsigned family, model;
    snprintf(id, idsize, "unknown");
    if (!qmm_opt_cpu_identity(&vendor, &family, &model))
        return NULL;
    snprintf(id, idsize, "%s family %u model %u",
             vendor == 'A' ? "AuthenticAMD" : vendor == 'I' ? "GenuineIntel" : "other vendor",
             family, model);
    for (int i = 0; i < NRATES; i++) {
        const rate_row *r = &rates[i];
        if (r->vendor == vendor && r->family == family && model >= r->model_lo &&
            model <= r->model_hi && strcmp(r->isa, isa) == 0)
            return r;
    }
    return NULL;
}

/* ---- the pure rules ---- */

qmm_optimized_peak_verdict qmm_optimized_peak_check(double ops_per_cycle, double published,
                                                    double *fraction)
{
    *fraction = 0;
    if (!(ops_per_cycle > 0) || !(published > 0))
        return QMM_PEAK_UNCHECKED;
    *fraction = ops_per_cycle / published;
    return *fraction < 0.75 ? QMM_PEAK_BELOW : *fraction > 1.05 ? QMM_PEAK_ABOVE
                                                                : QMM_PEAK_AGREES;
}

double qmm_optimized_peak_base(double peak, const double *rates_in, int n, int *beaten)
{
    *beaten = -1;
    if (!(peak > 0))
        return 0;
    double base = peak;
    for (int i = 0; i < n; i++)
        if (rates_in[i] > base) {
            base = rates_in[i];
            *beaten = i;
        }
    return base;
}

double qmm_optimized_peak_percent(double rate, double base)
{
    if (!(base > 0) || !(rate > 0))
        return 0;
    double pct = 100.0 * rate / base;
    return pct > 100 ? 100 : pct;
}

/* ---- the loops ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { CHAIN_ADDS = 64 };

/* `iters` times CHAIN_ADDS dependent register adds: one cycle each (latency 1 on every x86
 * core), the loop counter and branch running beside them on other ALUs. Returns the cycles
 * it takes, 0 where there is no such loop (not x86-64). */
static uint64_t add_chain(uint64_t iters)
{
#if defined(__x86_64__)
    uint64_t x = 0, n = iters, one = 1;
    if (n == 0)
        return 0;
    __asm__ volatile("1:\n\t"
                     ".rept 64\n\t"
                     "add %[one], %[x]\n\t"
                     ".endr\n\t"
                     "sub $1, %[n]\n\t"
                     "jnz 1b"
                     : [x] "+r"(x), [n] "+r"(n)
                     : [one] "r"(one)
                     : "cc");
    return iters * CHAIN_ADDS;
#else
    (void)iters;
    return 0;
#endif
}

struct qmm_optimized_peak {
    const qmm_opt_variant *v;
    int threads, cores, samples;
    int run;          /* threads a sample runs: `threads`, at most the CPUs (more would only
                         take turns) */
    double sample_s;
    uint64_t iters, chain_iters;
    double best_together, best_thread, best_hz; /* ops/s of a whole sample, of one thread */
};

typedef struct worker {
    qmm_optimized_peak *p;
    int *go;          /* 0 until every thread is started */
    double t0, t1, hz;
    uint64_t macs;
} worker;

/* The CPUs this process may run on (*cpus) and the physical cores among them (returned): CPUs
 * that share a core (SMT) share its vector units. From Linux's affinity mask and sysfs
 * topology; the online CPUs when they cannot be read. */
static int usable_cores(int *cpus)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int ncpu = online > 0 ? (int)online : 1;
    *cpus = ncpu;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 1)
        return ncpu;
    ncpu = *cpus = CPU_COUNT(&set);
    static unsigned pairs[CPU_SETSIZE][2];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n >= 0; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        unsigned id[2];
        const char *what[2] = {"physical_package_id", "core_id"};
        for (int k = 0; k < 2 && n >= 0; k++) {
            char path[96];
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", c,
                     what[k]);
            FILE *f = fopen(path, "r");
            if (!f || fscanf(f, "%u", &id[k]) != 1)
                n = -1; /* unreadable: count CPUs */
            if (f)
                fclose(f);
        }
        int seen = 0;
        for (int i = 0; n > 0 && i < n && !seen; i++)
            seen = pairs[i][0] == id[0] && pairs[i][1] == id[1];
        if (n >= 0 && !seen) {
            pairs[n][0] = id[0];
            pairs[n][1] = id[1];
            n++;
        }
    }
    pthread_mutex_unlock(&lock);
    if (n > 0 && n <= ncpu)
        return n;
#endif
    return ncpu;
}

static void *work(void *arg)
{
    worker *w = arg;
    while (!__atomic_load_n(w->go, __ATOMIC_ACQUIRE))
        sched_yield();
    w->t0 = now_s();
    w->macs = w->p->v->peak(w->p->iters);
    w->t1 = now_s();
    uint64_t cycles = add_chain(w->p->chain_iters);
    double c1 = now_s();
    w->hz = cycles && c1 > w->t1 ? (double)cycles / (c1 - w->t1) : 0;
    return NULL;
}

/* One run of the variant's peak loop, or of the add chain when v is NULL. */
static uint64_t run_loop(const qmm_opt_variant *v, uint64_t iters)
{
    return v ? v->peak(iters) : add_chain(iters);
}

/* Iterations of the loop that take about `seconds` (the fastest of a few timed runs). */
static uint64_t calibrate(const qmm_opt_variant *v, double seconds)
{
    double best = 0; /* iterations per second */
    for (uint64_t n = 16; n < (1ull << 40); n *= 4) {
        int tries = 1;
        for (int i = 0; i < tries; i++) {
            double t0 = now_s();
            run_loop(v, n);
            double dt = now_s() - t0;
            if (dt > 0 && (double)n / dt > best)
                best = (double)n / dt;
            if (dt >= 2e-4)
                tries = 3; /* long enough to time: the fastest of 3 is the least disturbed */
        }
        if (tries > 1)
            break;
    }
    uint64_t iters = (uint64_t)(best * seconds);
    return iters ? iters : 1;
}

qmm_optimized_peak *qmm_optimized_peak_open(int variant, int threads, double sample_s)
{
    if (variant < 0)
        for (int i = 0; i < qmm_opt_variant_count(); i++)
            if (qmm_opt_variant_at(i)->peak && !qmm_opt_variant_missing(i))
                variant = i;
    const qmm_opt_variant *v = qmm_opt_variant_at(variant);
    if (!v || !v->peak || qmm_opt_variant_missing(variant))
        return NULL;
    qmm_optimized_peak *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    int cpus, cores = usable_cores(&cpus);
    p->v = v;
    p->threads = threads < 1 ? 1 : threads;
    p->run = p->threads > cpus ? cpus : p->threads;
    p->cores = p->threads > cores ? cores : p->threads;
    p->sample_s = sample_s > 0 ? sample_s : 1e-3;
    p->iters = calibrate(v, p->sample_s);
    p->chain_iters = add_chain(1) ? calibrate(NULL, p->sample_s / 8) : 0;
    return p;
}

int qmm_optimized_peak_sample(qmm_optimized_peak *p)
{
    worker *w = calloc((size_t)p->run, sizeof *w);
    pthread_t *tids = calloc((size_t)p->run, sizeof *tids);
    char *started = calloc((size_t)p->run, 1);
    int go = 0, rc = -1;
    if (!w || !tids || !started)
        goto out;
    for (int i = 0; i < p->run; i++) {
        w[i].p = p;
        w[i].go = &go;
    }
    started[0] = 1;
    for (int i = 1; i < p->run; i++)
        started[i] = pthread_create(&tids[i], NULL, work, &w[i]) == 0;
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    work(&w[0]);
    double t0 = w[0].t0, t1 = w[0].t1;
    uint64_t macs = 0;
    for (int i = 0; i < p->run; i++) {
        if (!started[i])
            continue;
        if (i)
            pthread_join(tids[i], NULL);
        macs += w[i].macs;
        double own = w[i].t1 > w[i].t0 ? 2.0 * (double)w[i].macs / (w[i].t1 - w[i].t0) : 0;
        if (own > p->best_thread)
            p->best_thread = own;
        t0 = w[i].t0 < t0 ? w[i].t0 : t0;
        t1 = w[i].t1 > t1 ? w[i].t1 : t1;
        if (w[i].hz > p->best_hz)
            p->best_hz = w[i].hz;
    }
    double ops = t1 > t0 ? 2.0 * (double)macs / (t1 - t0) : 0;
    if (ops > p->best_together)
        p->best_together = ops;
    p->samples++;
    rc = 0;
out:
    free(w);
    free(tids);
    free(started);
    return rc;
}

void qmm_optimized_peak_restart(qmm_optimized_peak *p)
{
    p->samples = 0;
    p->best_together = p->best_thread = p->best_hz = 0;
}

void qmm_optimized_peak_close(qmm_optimized_peak *p)
{
    free(p);
}

void qmm_optimized_peak_get(const qmm_optimized_peak *p, qmm_optimized_peak_info *info)
{
    memset(info, 0, sizeof *info);
    info->isa = p->v->name;
    info->loop = p->v->peak_loop;
    info->threads = p->threads;
    info->sample_threads = p->run;
    info->cores = p->cores;
    info->sample_s = p->sample_s;
    info->samples = p->samples;
    info->ops_together = p->best_together;
    info->ops_thread = p->best_thread;
    /* the cores run the loop independently: the best one thread did while all ran, on each */
    info->ops = p->cores * p->best_thread;
    if (p->best_together > info->ops)
        info->ops = p->best_together;
    info->clock_hz = p->best_hz;
    if (p->best_hz > 0)
        info->ops_per_cycle = info->ops / (p->best_hz * p->cores);
    const rate_row *r = published_rate(p->v->name, info->cpu_id, sizeof info->cpu_id);
    if (r) {
        info->cpu = r->cpu;
        info->published = r->ops;
        info->published_up_to = r->up_to;
        info->published_why = r->why;
    }
    info->verdict = qmm_optimized_peak_check(info->ops_per_cycle, info->published,
                                             &info->fraction);
}
