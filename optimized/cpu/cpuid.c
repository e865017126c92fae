/* optimized/cpu/cpuid.c — which microkernel families this CPU (and its OS) can run.
 *
 * An instruction set is usable only when the CPU reports it AND the OS saves the register
 * state it uses (XCR0, read with XGETBV): a CPU with AVX-512 under an OS that does not save
 * ZMM state would fault on the first zmm instruction.
 */
#include <pthread.h>

#include "optimized/cpu/opt_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

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
    unsigned leaf7_max = eax;
    int avx2 = (ebx >> 5) & 1;
    int avx512f = (ebx >> 16) & 1, avx512bw = (ebx >> 30) & 1, avx512vl = (ebx >> 31) & 1;
    int avx512vnni = (ecx >> 11) & 1;
    int avxvnni = 0;
    if (leaf7_max >= 1) {
        __cpuid_count(7, 1, eax, ebx, ecx, edx);
        avxvnni = (eax >> 4) & 1;
    }
    f->avx2 = avx2;
    f->avxvnni = avx2 && avxvnni;
    f->avx512vnni = avx2 && os_zmm && avx512f && avx512bw && avx512vl && avx512vnni;
}
#else
static void detect(qmm_opt_cpu *f)
{
    (void)f; /* not x86: only the scalar kernels exist */
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
    case QMM_OPT_ISA_COUNT: break;
    }
    return "unknown ISA";
}
