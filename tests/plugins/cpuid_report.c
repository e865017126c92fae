/* tests/plugins/cpuid_report.c — a plugin that says what CPU it runs on: its capability query
 * answers UNSUPPORTED with "cpuid: avx2=1 avx512f=0 ..." as __builtin_cpu_supports (what a
 * library's dispatch asks) and CPUID itself report them, so every case is SKIPPED with that
 * message. test_cpu_emulated.c runs it under `--cpu` and reads the message: the CPU a plugin
 * sees is the emulated class's, not the machine's. Built from the public headers only. */
#include <stdio.h>
#include <string.h>

#include "qmm/qmm.h"
#include "../plugin_support.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

/* CPUID.(EAX=7,ECX=0):ECX bit 11, AVX-512 VNNI, read directly: not every compiler's
 * __builtin_cpu_supports knows its name. */
static int has_avx512_vnni(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (int)(c >> 11 & 1);
#else
    return 0;
#endif
}

static qmm_status_code r_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    (void)self;
    (void)call;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return qmm_status_set(st, QMM_UNSUPPORTED,
                          "cpuid: sse4.2=%d avx=%d avx2=%d fma=%d avx512f=%d avx512vnni=%d",
                          __builtin_cpu_supports("sse4.2") != 0, __builtin_cpu_supports("avx") != 0,
                          __builtin_cpu_supports("avx2") != 0, __builtin_cpu_supports("fma") != 0,
                          __builtin_cpu_supports("avx512f") != 0, has_avx512_vnni());
#else
    return qmm_status_set(st, QMM_UNSUPPORTED, "cpuid: not an x86 CPU");
#endif
}

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    (void)options;
    if (!qmm_backend_abi_check("cpuid_report", harness_abi, st))
        return NULL;
    qmm_backend *be = plugin_table("cpuid_report", "says what CPU it runs on (tests only)", 1, st);
    if (be)
        be->query = r_query;
    return be;
}
