/* optimized/cpu/kernels.c — the optimized CPU backend's one registration table: every ISA
 * variant, what it needs from the CPU, its packing layout, tile and kernels.
 *
 * Everything that names or counts variants reads this table: dispatch (`auto` takes the last
 * row this CPU runs, so rows go from the portable one up, best last), the isa= option and its
 * error message, `qmmcheck list --backends`, the peak loops of `qmmcheck bench`, the tests
 * (tests/test_ukernel.c, tests/test_optimized.c) and the fuzz targets. Adding an ISA kernel
 * is its gemm file, a row (with the declarations) here, and its compile flags in
 * optimized/CMakeLists.txt. A row's CPU check lives here, not in its kernel file: this file
 * is built for baseline x86-64, the kernel files are not, and the check must run on any CPU.
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

/* gemm-s16u8-6x16c2-avx2.c */
qmm_opt_kernel_ft qmm_gemm_s16u8_6x16c2__avx2;
qmm_opt_gemv_ft qmm_gemv_s16u8_r4__avx2;
qmm_opt_gemv_packed_ft qmm_gemv_s16u8_r4x16c2__avx2;
qmm_opt_peak_ft qmm_peak_s16s16__avx2;

/* gemm-u8s8-6x16c4-avxvnni.c */
qmm_opt_kernel_ft qmm_gemm_u8s8_6x16c4__avxvnni;
qmm_opt_kernel_rows_ft qmm_gemm_u8s8_rx16c4__avxvnni;
qmm_opt_colsum_ft qmm_colsum_s8_16c4__avxvnni;
qmm_opt_peak_ft qmm_peak_u8s8__avxvnni;

/* gemm-u8s8-8x32c4-avx512vnni.c */
qmm_opt_kernel_ft qmm_gemm_u8s8_8x32c4__avx512vnni;
qmm_opt_kernel_rows_ft qmm_gemm_u8s8_rx32c4__avx512vnni;
qmm_opt_colsum_ft qmm_colsum_s8_32c4__avx512vnni;
qmm_opt_pack_b_ft qmm_packb_s8_32c4__avx512vnni;
qmm_opt_peak_ft qmm_peak_u8s8__avx512vnni;

/* gemm-u8s8-32x32c4-tiles-amx.c */
qmm_opt_task_ft qmm_gemm_begin__amx;
qmm_opt_task_ft qmm_gemm_end__amx;
qmm_opt_kernel_ft qmm_gemm_u8s8_32x32c4_tiles__amx;
qmm_opt_kernel_rows_ft qmm_gemm_u8s8_rx32c4_tiles__amx;
qmm_opt_peak_ft qmm_peak_u8s8_tiles__amx;

/* The x86 kernel files are built only for x86-64 (optimized/CMakeLists.txt); elsewhere their
 * rows stay (isa= still names them) with no kernels, and their checks refuse them. */
#if defined(__x86_64__)
#define X86(fn) fn
#else
#define X86(fn) NULL
#endif

/* ---- CPU checks: NULL when this CPU and its OS run the row's kernels, else why not ---- */

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

static const char *check_amx(void)
{
    /* AMX-TILE and AMX-INT8; the partial-row kernels are AVX-512 VNNI, so that too */
    if (!cpu_bit(7, 0, EDX, 24) || !cpu_bit(7, 0, EDX, 25) || check_avx512vnni())
        return "this CPU has no AMX-INT8";
    if (!os_saves(0x60000)) /* tile configuration and tile data */
        return "the OS does not enable AMX tile state (XCR0)";
    return qmm_opt_os_grant_tiles();
}

/* ---- the table ---- */

#define KERNEL(fn) .kernel = X86(fn), .kernel_name = #fn

static const qmm_opt_isa_ops rows[] = {
    {.name = "scalar", .layout = "pairs", .mr = 6, .nr = 16, .kg = 2,
     .kernel = qmm_gemm_s16s8_6x16c2__portable,
     .kernel_name = "qmm_gemm_s16s8_6x16c2__portable",
     .portable = qmm_gemm_s16s8_6x16c2__portable, .requant_row = qmm_opt_requant_row},
    {.name = "avx2", .check = check_avx2, .layout = "unsigned words", .mr = 6, .nr = 16,
     .kg = 2, .uw = 1, KERNEL(qmm_gemm_s16u8_6x16c2__avx2),
     .portable = qmm_gemm_s16u8_6x16c2__portable,
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .gemv_portable = qmm_gemv_s16u8_r4__portable,
     .gemv_packed = X86(qmm_gemv_s16u8_r4x16c2__avx2),
     .gemv_packed_portable = qmm_gemv_s16u8_r4x16c2__portable,
     .requant_row = X86(qmm_opt_requant_row_avx2), .peak = X86(qmm_peak_s16s16__avx2),
     .peak_loop = "avx2: ymm vpmaddwd + vpaddd (the AVX2 kernel's exact int16 sequence), "
                  "12 independent chains"},
    /* the VNNI layouts are quads: small M on a prepacked B runs the kernel on its rows only */
    {.name = "avxvnni", .check = check_avxvnni, .layout = "quads", .mr = 6, .nr = 16, .kg = 4,
     KERNEL(qmm_gemm_u8s8_6x16c4__avxvnni), .kernel_rows = X86(qmm_gemm_u8s8_rx16c4__avxvnni),
     .portable = qmm_gemm_u8s8_6x16c4__portable,
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .gemv_portable = qmm_gemv_s16u8_r4__portable,
     .requant_row = X86(qmm_opt_requant_row_avx2),
     .colsum = X86(qmm_colsum_s8_16c4__avxvnni), .peak = X86(qmm_peak_u8s8__avxvnni),
     .peak_loop = "avxvnni: ymm vpdpbusd, 12 independent chains"},
    {.name = "avx512vnni", .check = check_avx512vnni, .layout = "quads", .mr = 8, .nr = 32,
     .kg = 4, KERNEL(qmm_gemm_u8s8_8x32c4__avx512vnni),
     .kernel_rows = X86(qmm_gemm_u8s8_rx32c4__avx512vnni),
     .portable = qmm_gemm_u8s8_8x32c4__portable,
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .gemv_portable = qmm_gemv_s16u8_r4__portable,
     .requant_row = X86(qmm_opt_requant_row_avx512),
     .requant_row_f32 = X86(qmm_opt_requant_row_f32_avx512),
     .colsum = X86(qmm_colsum_s8_32c4__avx512vnni),
     .pack_b = X86(qmm_packb_s8_32c4__avx512vnni), .peak = X86(qmm_peak_u8s8__avx512vnni),
     .peak_loop = "avx512vnni: zmm vpdpbusd, 12 independent chains"},
    /* AMX: B in the AVX-512 quads layout (so the same column sums), A in tiles, K padded to
     * whole tiles; its tile loop is the peak where it runs (the last row: the best) */
    {.name = "amx", .check = check_amx, .layout = "tiles (A), quads (B)", .mr = 32, .nr = 32,
     .kg = 4, .kalign = 16, .atiles = 1, KERNEL(qmm_gemm_u8s8_32x32c4_tiles__amx),
     .kernel_rows = X86(qmm_gemm_u8s8_rx32c4_tiles__amx),
     .portable = qmm_gemm_u8s8_32x32c4_tiles__portable,
     .gemv = X86(qmm_gemv_s16u8_r4__avx2), .gemv_portable = qmm_gemv_s16u8_r4__portable,
     .requant_row = X86(qmm_opt_requant_row_avx512),
     .requant_row_f32 = X86(qmm_opt_requant_row_f32_avx512),
     .colsum = X86(qmm_colsum_s8_32c4__avx512vnni),
     .pack_b = X86(qmm_packb_s8_32c4__avx512vnni), .task_begin = X86(qmm_gemm_begin__amx),
     .task_end = X86(qmm_gemm_end__amx), .peak = X86(qmm_peak_u8s8_tiles__amx),
     .peak_loop = "amx: tdpbusd, 4 independent tiles"},
};

enum { NROWS = sizeof rows / sizeof rows[0] };

/* Each row's check runs once (AMX's asks the OS for a grant); afterwards read-only. */
static const char *missing[NROWS];
static pthread_once_t checked = PTHREAD_ONCE_INIT;

static void run_checks(void)
{
    for (int i = 0; i < NROWS; i++)
        missing[i] = rows[i].check ? rows[i].check() : NULL;
}

int qmm_opt_kernel_count(void)
{
    return NROWS;
}

const qmm_opt_isa_ops *qmm_opt_kernel_row(int i)
{
    return i >= 0 && i < NROWS ? &rows[i] : NULL;
}

const char *qmm_opt_kernel_missing(int i)
{
    if (i < 0 || i >= NROWS)
        return "no such kernel variant";
    pthread_once(&checked, run_checks);
    return missing[i];
}

int qmm_opt_kernel_find(const char *name, size_t len)
{
    for (int i = 0; i < NROWS; i++)
        if (strlen(rows[i].name) == len && strncmp(rows[i].name, name, len) == 0)
            return i;
    return -1;
}

int qmm_opt_kernel_auto(void)
{
    int best = 0;
    for (int i = 0; i < NROWS; i++)
        if (!qmm_opt_kernel_missing(i))
            best = i;
    return best;
}
