/* optimized/cpu/cpuid.c — which microkernel families this CPU (and its OS) can run.
 *
 * An instruction set is usable only when the CPU reports it AND the OS saves the register
 * state it uses (XCR0, read with XGETBV): a CPU with AVX-512 under an OS that does not save
 * ZMM state would fault on the first zmm instruction.
 */
#define _GNU_SOURCE /* syscall(2) */
#include <pthread.h>

#include "optimized/cpu/opt_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Linux keeps AMX tile data (XSAVE component 18) off until a process asks for it
 * (Documentation/arch/x86/xstate.rst): the first tile instruction without the grant faults. */
static const char *amx_grant(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return "the OS refused AMX tile data to this process (arch_prctl "
               "ARCH_REQ_XCOMP_PERM failed)";
    return NULL;
#else
    return "AMX needs Linux's arch_prctl grant, which this build does not have";
#endif
}

static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    /* XGETBV with ECX=0; the raw opcode avoids needing -mxsave for the _xgetbv intrinsic */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(qmm_opt_cpu *f)
{
    unsigned eax, ebx, ecx, edx;
    unsigned max = __get_cpuid_max(0, NULL);
    f->amx_missing = "this CPU has no AMX-INT8";
    if (max < 7 || !__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return;
    int osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
    if (!osxsave || !avx)
        return;
    uint64_t xcr0 = read_xcr0();
    int os_ymm = (xcr0 & 0x6) == 0x6;     /* SSE and AVX state */
    int os_zmm = (xcr0 & 0xe6) == 0xe6;   /* plus opmask, ZMM_Hi256, Hi16_ZMM */
    if (!os_ymm)
        return;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    unsigned leaf7_max = eax, edx7 = edx;
    int avx2 = (ebx >> 5) & 1;
    int avx512f = (ebx >> 16) & 1, avx512dq = (ebx >> 17) & 1, avx512bw = (ebx >> 30) & 1, avx512vl = (ebx >> 31) & 1;
    int avx512vnni = (ecx >> 11) & 1;
    int avxvnni = 0;
    if (leaf7_max >= 1) {
        __cpuid_count(7, 1, eax, ebx, ecx, edx);
        avxvnni = (eax >> 4) & 1;
    }
    f->avx2 = avx2;
    f->avxvnni = avx2 && avxvnni;
    f->avx512vnni =
        avx2 && os_zmm && avx512f && avx512dq && avx512bw && avx512vl && avx512vnni;
    /* AMX: leaf 7 EDX bit 24 AMX-TILE, bit 25 AMX-INT8; XCR0 bits 17-18 tile config/data.
     * The partial-row kernels are AVX-512 VNNI, so AMX needs that too. */
    int amx_tile = (edx7 >> 24) & 1, amx_int8 = (edx7 >> 25) & 1;
    if (!amx_tile || !amx_int8 || !f->avx512vnni)
        return;
    if ((xcr0 & 0x60000) != 0x60000) {
        f->amx_missing = "the OS does not enable AMX tile state (XCR0)";
        return;
    }
    f->amx_missing = amx_grant();
    f->amx = f->amx_missing == NULL;
}
#else
static void detect(qmm_opt_cpu *f)
{
    f->amx_missing = "this CPU has no AMX-INT8"; /* not x86: only the scalar kernels exist */
}
#endif

static qmm_opt_cpu features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void init_features(void)
{
    detect(&features);
}

const qmm_opt_cpu *qmm_opt_cpu_features(void)
{
    pthread_once(&features_once, init_features);
    return &features;
}

const char *qmm_opt_isa_name(qmm_opt_isa isa)
{
    switch (isa) {
    case QMM_OPT_ISA_SCALAR: return "scalar";
    case QMM_OPT_ISA_AVX2: return "avx2";
    case QMM_OPT_ISA_AVXVNNI: return "avxvnni";
    case QMM_OPT_ISA_AVX512VNNI: return "avx512vnni";
    case QMM_OPT_ISA_AMX: return "amx";
    case QMM_OPT_ISA_COUNT: break;
    }
    return "unknown";
}

const char *qmm_opt_isa_missing(qmm_opt_isa isa)
{
    const qmm_opt_cpu *f = qmm_opt_cpu_features();
    switch (isa) {
    case QMM_OPT_ISA_SCALAR: return NULL;
    case QMM_OPT_ISA_AVX2: return f->avx2 ? NULL : "this CPU has no AVX2";
    case QMM_OPT_ISA_AVXVNNI: return f->avxvnni ? NULL : "this CPU has no AVX-VNNI";
    case QMM_OPT_ISA_AVX512VNNI:
        return f->avx512vnni ? NULL : "this CPU has no AVX-512 VNNI";
    case QMM_OPT_ISA_AMX: return f->amx ? NULL : f->amx_missing;
    case QMM_OPT_ISA_COUNT: break;
    }
    return "unknown ISA";
}
