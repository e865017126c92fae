/* optimized/cpu/kernels.c — the optimized CPU backend's one registration table: the packing
 * layouts, and every variant (what isa= names) with what it needs from the CPU, its layout and
 * the kernels it brings.
 *
 * Everything that names or counts variants reads this table: dispatch (`auto` takes the last
 * variant this CPU runs, so they go from the portable one up, best last), the isa= option and
 * its error message, `qmmcheck list --backends`, the peak loops of `qmmcheck bench`, the tests
 * (tests/test_ukernel.c, tests/test_optimized.c) and the fuzz targets. Adding an ISA kernel
 * is its gemm file, a variant (with the declarations) here, and its compile flags in
 * optimized/CMakeLists.txt. A variant's CPU check lives here, not in its kernel file: this
 * file is built for baseline x86-64, the kernel files are not, and the check must run on any
 * CPU.
 *
 * Registration is reference first (as BLIS fills every slot of a context from its reference
 * kernels before an architecture's own overwrite them; XNNPACK's per-ISA config tables are
 * the other model): a layout carries its packers and its portable kernels, the portable
 * variant (row 0, `scalar`) every slot that does not depend on a layout, and a variant's row
 * lists only what it overrides. variants_fill() completes every row once, before any use.
 *
 * Naming (after XNNPACK's): a kernel is qmm_<op>_<types>_<tile>[_<layout>]__<isa>, its file
 * <op>-<types>-<tile>[-<layout>]-<isa>.c.
 *   op      gemm (an MR x NR tile over packed A and B), gemv (1..4 rows, B unpacked or in
 *           16-column panels), colsum / packb (B's column sums, B's packing), peak (the
 *           multiply-accumulate loop of `bench --peak`);
 *   types   what the kernel multiplies: s16u8 (A as int16 pairs a - za, B as 0..255 in the
 *           "unsigned words" layout), s16s8 (int16 pairs times int8 pairs), u8s8 (uint8 quads
 *           times int8 quads, the VNNI/AMX operand types);
 *   tile    MRxNRcKG: MR rows, NR columns, KG k values per K group; rx.. is the partial-rows
 *           form (rows < MR), r4 the 1..4-row small-M forms;
 *   layout  omitted for row-major K groups; `tiles` for AMX's 64-byte tile rows of A;
 *   isa     portable (plain C, the specification of its layout), avx2, avxvnni, ...
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"

/* ---- the kernels (one gemm file each, gemm-portable.c for the portable ones) ---- */

/* gemm-portable.c */
qmm_opt_kernel_ft qmm_gemm_s16s8_6x16c2__portable;
qmm_opt_kernel_ft qmm_gemm_s16u8_6x16c2__portable;
qmm_opt_kernel_ft qmm_gemm_u8s8_6x16c4__portable;
qmm_opt_kernel_ft qmm_gemm_u8s8_8x32c4__portable;
qmm_opt_kernel_ft qmm_gemm_u8s8_32x32c4_tiles__portable;
qmm_opt_gemv_ft qmm_gemv_s16u8_r4__portable;
qmm_opt_gemv_packed_ft qmm_gemv_s16u8_r4x16c2__portable;
qmm_opt_colsum_ft qmm_colsum_s8_16c4__portable;
qmm_opt_colsum_ft qmm_colsum_s8_32c4__portable;

/* gemm-f64-*.c: the float8 path's double tiles (gemm-f64.h) */
qmm_opt_f64_gemm_ft qmm_gemm_f64_6x4__portable;
qmm_opt_f64_gemm_ft qmm_gemm_f64_6x8__avx2;
qmm_opt_f64_gemm_ft qmm_gemm_f64_6x16__avx512;

/* gemm-s16u8-6x16c2-avx2.c */
qmm_opt_kernel_ft qmm_gemm_s16u8_6x16c2__avx2;
qmm_opt_gemv_ft qmm_gemv_s16u8_r4__avx2;
qmm_opt_gemv_packed_ft qmm_gemv_s16u8_r4x16c2__avx2;
qmm_opt_peak_ft qmm_peak_s16s16__avx2;

/* gemm-u8s8-6x16c4-avxvnni.c */
qmm_opt_kernel_ft qmm_gemm_u8s8_6x16c4__avxvnni;
qmm_opt_kernel_ft qmm_gemm_u8s8_rx16c4__avxvnni;
qmm_opt_colsum_ft qmm_colsum_s8_16c4__avxvnni;
qmm_opt_pack_b_ft qmm_packb_s8_16c4__avxvnni;
qmm_opt_kernel_raw_a_ft qmm_gemm_u8s8_6x16c4_rawa__avxvnni;
qmm_opt_peak_ft qmm_peak_u8s8__avxvnni;

/* gemm-u8s8-8x32c4-avx512vnni.c */
qmm_opt_kernel_ft qmm_gemm_u8s8_8x32c4__avx512vnni;
qmm_opt_kernel_ft qmm_gemm_u8s8_rx32c4__avx512vnni;
qmm_opt_kernel_ft qmm_gemm_u8s8_rx32c4_dense__avx512vnni;
qmm_opt_colsum_ft qmm_colsum_s8_32c4__avx512vnni;
qmm_opt_pack_b_ft qmm_packb_s8_32c4__avx512vnni;
qmm_opt_kernel_pack_ft qmm_gemm_pack_u8s8_8x32c4__avx512vnni;
qmm_opt_kernel_raw_a_ft qmm_gemm_u8s8_8x32c4_rawa__avx512vnni;
qmm_opt_kernel_raw_a_rq_ft qmm_gemm_u8s8_8x32c4_rawa_rq__avx512vnni;
qmm_opt_kernel_rq_ft qmm_gemm_u8s8_8x32c4_rq__avx512vnni;
qmm_opt_peak_ft qmm_peak_u8s8__avx512vnni;

/* gemm-u8s8-32x32c4-tiles-amx.c */
qmm_opt_task_ft qmm_gemm_begin__amx;
qmm_opt_task_ft qmm_gemm_end__amx;
qmm_opt_kernel_ft qmm_gemm_u8s8_32x32c4_tiles__amx;
qmm_opt_kernel_ft qmm_gemm_u8s8_rx32c4_tiles__amx;
qmm_opt_peak_ft qmm_peak_u8s8_tiles__amx;

/* The x86 kernel files are built only for x86-64 (optimized/CMakeLists.txt); elsewhere their
 * variants stay (isa= still names them) with the portable kernels of their layouts, and their
 * checks refuse them. */
#if defined(__x86_64__)
#define X86(fn) fn
#else
#define X86(fn) NULL
#endif

/* ---- CPU checks: NULL when this CPU and its OS run the variant's kernels, else why not ---- */

enum { EAX, EBX, ECX, EDX };

static int cpu_bit(uint32_t leaf, uint32_t sub, int reg, int bit)
{
    uint32_t r[4];
    return qmm_opt_cpuid(leaf, sub, r) && ((r[reg] >> bit) & 1);
}

/* the OS saves every register state in `mask` (XCR0 bits) */
static int os_saves(uint64_t mask)
{
    return (qmm_opt_os_xstate() & mask) == mask;
}

static const char *check_none(void)
{
    return NULL; /* portable C: any CPU */
}

static const char *check_avx2(void)
{
    /* AVX and YMM state (XCR0 SSE + AVX), then AVX2 */
    int ok = cpu_bit(1, 0, ECX, 28) && os_saves(0x6) && cpu_bit(7, 0, EBX, 5);
    return ok ? NULL : "this CPU has no AVX2";
}

static const char *check_avxvnni(void)
{
    uint32_t r[4];
    int ok = !check_avx2() && qmm_opt_cpuid(7, 0, r) && r[EAX] >= 1 && cpu_bit(7, 1, EAX, 4);
    return ok ? NULL : "this CPU has no AVX-VNNI";
}

static const char *check_avx512vnni(void)
{
    /* F, DQ, BW, VL and VNNI, and the OS saves opmask, ZMM_Hi256 and Hi16_ZMM state */
    int ok = !check_avx2() && os_saves(0xe6) && cpu_bit(7, 0, EBX, 16) &&
             cpu_bit(7, 0, EBX, 17) && cpu_bit(7, 0, EBX, 30) && cpu_bit(7, 0, EBX, 31) &&
             cpu_bit(7, 0, ECX, 11);
    return ok ? NULL : "this CPU has no AVX-512 VNNI";
}

/* AVX-512 VBMI (vpermi2b): the avx512vnni variant's kernel_pack needs it (Zen 4, Ice Lake
 * and later have it; Cascade Lake's VNNI comes without) */
static int has_vbmi(void)
{
    return cpu_bit(7, 0, ECX, 1);
}

static const char *check_amx(void)
{
    /* AMX-TILE and AMX-INT8; the partial-row kernels are AVX-512 VNNI, so that too */
    if (!cpu_bit(7, 0, EDX, 24) || !cpu_bit(7, 0, EDX, 25) || check_avx512vnni())
        return "this CPU has no AMX-INT8";
    if (!os_saves(0x60000)) /* tile configuration and tile data */
        return "the OS does not enable AMX tile state (XCR0)";
    return qmm_opt_os_grant_tiles();
}

/* ---- the layouts ---- */

#define PORTABLE(fn) .kernel = fn, .kernel_name = #fn

/* "pairs": A as int16 pairs a - za, B as int8 pairs B' (no column sums: A carries a - za) */
static const qmm_opt_layout pairs = {
    .name = "pairs", .mr = 6, .nr = 16, .kg = 2, .kalign = 1, .pack_a = qmm_opt_pack_a,
    .pack_b = qmm_opt_pack_b, PORTABLE(qmm_gemm_s16s8_6x16c2__portable)};

/* "unsigned words": A as "pairs", B as 0..255 words two columns apart (qmm_opt_pack_b) */
static const qmm_opt_layout unsigned_words = {
    .name = "unsigned words", .mr = 6, .nr = 16, .kg = 2, .kalign = 1, .b_unsigned = 1,
    .pack_a = qmm_opt_pack_a, .pack_b = qmm_opt_pack_b,
    PORTABLE(qmm_gemm_s16u8_6x16c2__portable),
    .gemv_packed = qmm_gemv_s16u8_r4x16c2__portable};

/* "quads": A as uint8 quads a', B as int8 quads B' with column sums, 16 or 32 columns a panel */
static const qmm_opt_layout quads16 = {
    .name = "quads", .mr = 6, .nr = 16, .kg = 4, .kalign = 1, .pack_a = qmm_opt_pack_a,
    .pack_b = qmm_opt_pack_b, .colsum = qmm_colsum_s8_16c4__portable,
    PORTABLE(qmm_gemm_u8s8_6x16c4__portable)};

static const qmm_opt_layout quads32 = {
    .name = "quads", .mr = 8, .nr = 32, .kg = 4, .kalign = 1, .pack_a = qmm_opt_pack_a,
    .pack_b = qmm_opt_pack_b, .colsum = qmm_colsum_s8_32c4__portable,
    PORTABLE(qmm_gemm_u8s8_8x32c4__portable)};

/* AMX: B as quads32's panels (so the same column sums), A in 64-byte tile rows, K padded to
 * whole tiles */
static const qmm_opt_layout tiles = {
    .name = "tiles (A), quads (B)", .mr = 32, .nr = 32, .kg = 4, .kalign = 16,
    .pack_a = qmm_opt_pack_a_tiles, .pack_b = qmm_opt_pack_b,
    .colsum = qmm_colsum_s8_32c4__portable, PORTABLE(qmm_gemm_u8s8_32x32c4_tiles__portable)};

const qmm_opt_layout qmm_opt_gemv_a = {
    .name = "pairs, one row a group", .mr = 1, .nr = 16, .kg = 2, .kalign = 1,
    .pack_a = qmm_opt_pack_a};

void qmm_opt_task_none(void)
{
}

/* ---- the variants: row 0 is the portable one, and complete; the others list overrides ---- */

#define KERNEL(fn) .kernel = X86(fn), .kernel_name = #fn
/* k values per K block where one block spans K (up to this many): the 8x32 VNNI tile streams
 * its B panel (32 x 8192 bytes at most, 256 KB) and A group from L2 at full rate (99.7% of the
 * peak with 24 groups x 8 panels in L2, Zen 4), and one block needs no partial sums in
 * memory: 2048^3 ran 4-8% faster than with blocks of 512 (bench, T = 1, Zen 4) */
#define KC_WHOLE 8192
#define GEMV QMM_OPT_GEMV_MAX_ROWS
#define F64(fn, nr) .f64_gemm = X86(fn), .f64_gemm_name = #fn, .f64_nr = nr

static const qmm_opt_variant table[] = {
    /* gemv_rows 0: small M packs A and B and runs the tile kernel, which in portable C is
     * faster than the portable gemv (the specification the SIMD ones are tested against) */
    {.name = "scalar", .check = check_none, .layout = &pairs,
     .gemv = qmm_gemv_s16u8_r4__portable, .pack_b = qmm_opt_pack_b_sums,
     .requant_mults = qmm_opt_requant_mults_none, .requant_row = qmm_opt_requant_row,
     .task_begin = qmm_opt_task_none, .task_end = qmm_opt_task_none,
     .f64_gemm = qmm_gemm_f64_6x4__portable, .f64_gemm_name = "qmm_gemm_f64_6x4__portable",
     .f64_nr = 4},
    {.name = "avx2", .check = check_avx2, .layout = &unsigned_words,
     KERNEL(qmm_gemm_s16u8_6x16c2__avx2), .gemv_rows = GEMV,
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .gemv_packed = X86(qmm_gemv_s16u8_r4x16c2__avx2),
     .requant_mults = qmm_opt_requant_mults_f32, .requant_row = X86(qmm_opt_requant_row_avx2),
     .peak = X86(qmm_peak_s16s16__avx2),
     F64(qmm_gemm_f64_6x8__avx2, 8),
     .peak_loop = "avx2: ymm vpmaddwd + vpaddd (the AVX2 kernel's exact int16 sequence), "
                  "12 independent chains"},
    /* the VNNI layouts are quads: small M on a prepacked B runs the kernel on its rows only */
    {.name = "avxvnni", .check = check_avxvnni, .layout = &quads16,
     KERNEL(qmm_gemm_u8s8_6x16c4__avxvnni), .kernel_rows = X86(qmm_gemm_u8s8_rx16c4__avxvnni),
     .kernel_raw_a = X86(qmm_gemm_u8s8_6x16c4_rawa__avxvnni),
     .gemv_rows = GEMV, .gemv = X86(qmm_gemv_s16u8_r4__avx2),
     .requant_mults = qmm_opt_requant_mults_f32, .requant_row = X86(qmm_opt_requant_row_avx2),
     .colsum = X86(qmm_colsum_s8_16c4__avxvnni), .pack_b = X86(qmm_packb_s8_16c4__avxvnni),
     .peak = X86(qmm_peak_u8s8__avxvnni),
     F64(qmm_gemm_f64_6x8__avx2, 8),
     .peak_loop = "avxvnni: ymm vpdpbusd, 12 independent chains"},
    {.name = "avx512vnni", .check = check_avx512vnni, .layout = &quads32,
     KERNEL(qmm_gemm_u8s8_8x32c4__avx512vnni),
     .kernel_rows = X86(qmm_gemm_u8s8_rx32c4__avx512vnni), .gemv_rows = GEMV,
     .kernel_rows_dense = X86(qmm_gemm_u8s8_rx32c4_dense__avx512vnni),
     /* kernel_pack: dropped at fill where the CPU has no VBMI */
     .kernel_pack = X86(qmm_gemm_pack_u8s8_8x32c4__avx512vnni), .kc = KC_WHOLE,
     .kernel_raw_a = X86(qmm_gemm_u8s8_8x32c4_rawa__avx512vnni),
     .kernel_raw_a_rq = X86(qmm_gemm_u8s8_8x32c4_rawa_rq__avx512vnni),
     .kernel_rq = X86(qmm_gemm_u8s8_8x32c4_rq__avx512vnni),
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .requant_mults = qmm_opt_requant_mults_f32,
     .requant_row = X86(qmm_opt_requant_row_avx512),
     .colsum = X86(qmm_colsum_s8_32c4__avx512vnni),
     .pack_b = X86(qmm_packb_s8_32c4__avx512vnni), .peak = X86(qmm_peak_u8s8__avx512vnni),
     F64(qmm_gemm_f64_6x16__avx512, 16),
     .peak_loop = "avx512vnni: zmm vpdpbusd, 12 independent chains"},
    /* AMX: B in the AVX-512 quads layout (so the same packer and column sums); its tile loop
     * is the peak where it runs (the last variant: the best) */
    {.name = "amx", .check = check_amx, .layout = &tiles,
     KERNEL(qmm_gemm_u8s8_32x32c4_tiles__amx),
     .kernel_rows = X86(qmm_gemm_u8s8_rx32c4_tiles__amx), .gemv_rows = GEMV,
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .requant_mults = qmm_opt_requant_mults_f32,
     .requant_row = X86(qmm_opt_requant_row_avx512),
     .colsum = X86(qmm_colsum_s8_32c4__avx512vnni),
     .pack_b = X86(qmm_packb_s8_32c4__avx512vnni), .task_begin = X86(qmm_gemm_begin__amx),
     .task_end = X86(qmm_gemm_end__amx), .peak = X86(qmm_peak_u8s8_tiles__amx),
     F64(qmm_gemm_f64_6x16__avx512, 16),
     .peak_loop = "amx: tdpbusd, 4 independent tiles"},
};

enum { NVARIANTS = sizeof table / sizeof table[0] };

/* The completed table, made once (variants_fill) and read-only afterwards. */
static qmm_opt_variant variants[NVARIANTS];
static pthread_once_t filled = PTHREAD_ONCE_INIT;

/* x when the row gives it, else what it inherits */
#define INHERIT(slot, from) (v->slot ? v->slot : (from))

static void variants_fill(void)
{
    const qmm_opt_variant *portable = &table[0];
    for (int i = 0; i < NVARIANTS; i++) {
        qmm_opt_variant *v = &variants[i];
        *v = table[i];
        const qmm_opt_layout *L = v->layout;
        if (!v->kernel) { /* the portable variant, or an x86 one off x86 */
            v->kernel = L->kernel;
            v->kernel_name = L->kernel_name;
        }
        v->kernel_rows = INHERIT(kernel_rows, v->kernel);
        v->gemv_packed = INHERIT(gemv_packed, L->gemv_packed);
        v->colsum = INHERIT(colsum, L->colsum);
        v->check = INHERIT(check, portable->check);
        v->gemv = INHERIT(gemv, portable->gemv);
        v->pack_b = INHERIT(pack_b, portable->pack_b);
        v->requant_mults = INHERIT(requant_mults, portable->requant_mults);
        v->requant_row = INHERIT(requant_row, portable->requant_row);
        v->task_begin = INHERIT(task_begin, portable->task_begin);
        v->task_end = INHERIT(task_end, portable->task_end);
        if (v->kernel_pack && !has_vbmi()) /* the one kernel_pack (avx512vnni's) */
            v->kernel_pack = NULL;
        if (!v->f64_gemm) { /* an x86 variant off x86 */
            v->f64_gemm = portable->f64_gemm;
            v->f64_gemm_name = portable->f64_gemm_name;
            v->f64_nr = portable->f64_nr;
        }
    }
}

#undef INHERIT

/* Each variant's check runs once (AMX's asks the OS for a grant); afterwards read-only. */
static const char *missing[NVARIANTS];
static pthread_once_t checked = PTHREAD_ONCE_INIT;

static void run_checks(void)
{
    for (int i = 0; i < NVARIANTS; i++)
        missing[i] = qmm_opt_variant_at(i)->check();
}

int qmm_opt_variant_count(void)
{
    return NVARIANTS;
}

const qmm_opt_variant *qmm_opt_variant_at(int i)
{
    if (i < 0 || i >= NVARIANTS)
        return NULL;
    pthread_once(&filled, variants_fill);
    return &variants[i];
}

const char *qmm_opt_variant_missing(int i)
{
    if (i < 0 || i >= NVARIANTS)
        return "no such variant";
    pthread_once(&checked, run_checks);
    return missing[i];
}

int qmm_opt_variant_find(const char *name, size_t len)
{
    for (int i = 0; i < NVARIANTS; i++)
        if (strlen(table[i].name) == len && strncmp(table[i].name, name, len) == 0)
            return i;
    return -1;
}

int qmm_opt_variant_auto(void)
{
    int best = 0;
    for (int i = 0; i < NVARIANTS; i++)
        if (!qmm_opt_variant_missing(i))
            best = i;
    return best;
}

/* ---- tuning by CPU model ----
 * Where CPUs that run the same variant want different blocking, the measured value, with
 * the CPU it was measured on (docs/optimized.md "Tuning by CPU model"); a CPU not listed
 * gets the default. Every value gives the same answers: only the time changes. */

/* raw A up to K = 1024: the first Zen 4 measurement (2026-11-27, kernels of then), T = 1,
 * constant B, six alternations against packed A, medians: 512x1024x1024 2.55 vs 2.67 ms,
 * 1024^3 5.31 vs 5.35; but 2048^3 42.4 vs 42.05. The wide fused path off: Zen 4 before panel
 * pairs no better at 2048^3 (and "Zen 4" below). Row blocks of up to 192
 * rows: AMX (2 threads) at 2048^3 ~6% faster than 96 (matmul.c, plan_tasks); larger blocks
 * measured on Zen 5 only. */
static const qmm_opt_tuning tuning_default = {1024, 0, 192, 0};

static const struct cpu_tuning {
    char vendor;     /* 'A' AuthenticAMD, 'I' GenuineIntel */
    unsigned family; /* display family */
    const char *cpu;
    qmm_opt_tuning tuning;
} tunings[] = {
    /* Zen 5 (EPYC family 1Ah model 2, 48 KB L1D), builds alternating, T = 1 unless said, B
       input unless said, 5-7 rounds, median per-round ratios.
       Raw A up to 8192 against packed A past 1024: 2048^3 1.031 (constant B 1.020, T = 2
       1.022), 2048x3000x2048 1.037, 1024x2048x1024 1.033, 512x2048x2048 1.020, 384x4096x1024
       1.031, 256x8192x512 1.060; on the fused path (M <= 192) no change: 128x2048x2048
       0.997, 64x2048x4096 1.001, 128x4096x4096 0.992.
       The wide fused path against the packing pass (docs/optimized.md, "Fused packing"):
       512x4096x4096 1.107, 384x768x768 1.019, 512x1024x1024 1.018 (T = 2 1.013), 1024^3
       T = 2 1.012, 2048^3 T = 2 1.000, 1024x4096x1024 1.002; a first build without the rule
       on the threads: 256x1024x1024 1.031, 1024x1024x4096 T = 2 1.028, 1024^3 1.007, 2048^3
       1.008.
       Row blocks of up to 256 rows against 192 (builds of one tree alternating, 7-11 rounds):
       1024^3 1.002 and 1.004 (T = 2 1.014, B constant 1.001, T = 2 1.009), 512x1024x1024
       1.007 (T = 2 1.002), 2048^3 1.004 (B constant 1.006), 512x4096x4096 1.009 */
    {'A', 0x1a, "AMD Zen 5", {8192, 1, 256, 0}},
    /* Zen 4 (EPYC family 19h model 11h, 32 KB L1D), 2026-11-29, the kernels of 195929c1: one
       `qmmcheck bench` run per shape timing the options alternating (21 rounds, median
       per-round ratio), T = 1, B input unless said. Raw A up to 8192 against 1024: 2048^3
       1.010 (T = 2 1.014, B constant 1.007), 1024x2048x1024 1.026, 512x4096x1024 1.017,
       256x8192x512 1.040, 2048x4096x512 1.070; the fused path (M <= 192) the same within
       noise: 128x2048x2048 1.007, 64x2048x4096 0.999, 128x4096x4096 1.019, 192x1536x1536
       1.011. The wide fused path (31 rounds): 1024^3 0.995, 512x1024x1024 1.005; row blocks of
       256: 1024^3 1.005, 512x1024x1024 1.001 — no change, so neither is taken. Columns first
       with raw A on one thread where an A row block and a B chunk pass 512 KB (the same way,
       9-11 rounds, rows first / columns first): 2048^3 1.021 and 1.019 (B constant 1.019,
       1.009), 2048x2048x1024 1.019 (1.022); 1024x2048x1024 0.997, 1536^3 1.000 (the pair past
       512 KB, nothing gained); docs/optimized.md. Family 19h is Zen 3 too, whose variant
       (avx2) reads no raw A: the row changes Zen 4 alone. */
    {'A', 0x19, "AMD Zen 4", {8192, 0, 192, 524288}},
};

qmm_opt_tuning qmm_opt_tuning_of_cpu(void)
{
    char vendor;
    unsigned family, model;
    if (qmm_opt_cpu_identity(&vendor, &family, &model))
        for (size_t i = 0; i < sizeof tunings / sizeof tunings[0]; i++)
            if (tunings[i].vendor == vendor && tunings[i].family == family)
                return tunings[i].tuning;
    return tuning_default;
}
