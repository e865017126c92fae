/* optimized/cpu/cpuid.c — the CPU and OS facts the variant table's checks read (kernels.c).
 *
 * An instruction set is usable only when the CPU reports it AND the OS saves the register
 * state it uses (XCR0, read with XGETBV): a CPU with AVX-512 under an OS that does not save
 * ZMM state would fault on the first zmm instruction. This file only reads the facts; which
 * bits a variant needs is its row's check, so a new ISA does not change this file.
 */
#define _GNU_SOURCE /* syscall(2) */
#include <pthread.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

int qmm_opt_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    memset(r, 0, 4 * sizeof r[0]);
    unsigned max = __get_cpuid_max(leaf & 0x80000000u, NULL);
    if (max == 0 || leaf > max)
        return 0;
    unsigned eax, ebx, ecx, edx;
    __cpuid_count(leaf, sub, eax, ebx, ecx, edx);
    r[0] = eax;
    r[1] = ebx;
    r[2] = ecx;
    r[3] = edx;
    return 1;
}

uint64_t qmm_opt_os_xstate(void)
{
    uint32_t r[4];
    if (!qmm_opt_cpuid(1, 0, r) || !((r[2] >> 27) & 1)) /* OSXSAVE: XGETBV is allowed */
        return 0;
    uint32_t lo, hi;
    /* XGETBV with ECX=0; the raw opcode avoids needing -mxsave for the _xgetbv intrinsic */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* Linux keeps AMX tile data (XSAVE component 18) off until a process asks for it
 * (Documentation/arch/x86/xstate.rst): the first tile instruction without the grant faults. */
static const char *grant_tiles(void)
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
#else
int qmm_opt_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    (void)leaf;
    (void)sub;
    memset(r, 0, 4 * sizeof r[0]);
    return 0; /* not x86: only the portable kernels exist */
}

uint64_t qmm_opt_os_xstate(void)
{
    return 0;
}

static const char *grant_tiles(void)
{
    return "this CPU has no AMX-INT8";
}
#endif

/* This CPU's vendor letter ('A' AuthenticAMD, 'I' GenuineIntel, '?' other) and display
 * family / model from CPUID leaves 0 and 1; 0 where CPUID says nothing (not x86). */
int qmm_opt_cpu_identity(char *vendor, unsigned *family, unsigned *model)
{
    uint32_t r[4];
    if (!qmm_opt_cpuid(0, 0, r))
        return 0;
    /* "AuthenticAMD" / "GenuineIntel": EBX holds the first four letters */
    *vendor = r[1] == 0x68747541u ? 'A' : r[1] == 0x756e6547u ? 'I' : '?';
    if (!qmm_opt_cpuid(1, 0, r))
        return 0;
    unsigned base = (r[0] >> 8) & 0xf, ext = (r[0] >> 20) & 0xff;
    unsigned mod = (r[0] >> 4) & 0xf, extmod = (r[0] >> 16) & 0xf;
    *family = base == 0xf ? base + ext : base;
    *model = base == 0x6 || base == 0xf ? (extmod << 4) | mod : mod;
    return 1;
}

static const char *tiles_granted;
static pthread_once_t tiles_once = PTHREAD_ONCE_INIT;

static void ask_tiles(void)
{
    tiles_granted = grant_tiles();
}

const char *qmm_opt_os_grant_tiles(void)
{
    pthread_once(&tiles_once, ask_tiles);
    return tiles_granted;
}
