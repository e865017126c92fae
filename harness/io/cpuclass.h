/* harness/io/cpuclass.h — the CPU classes by which libraries pick their int8 kernels (docs/peers.md,
 * "CPU classes"). A peer's expected-failure list (peers/<peer>/xfail/<class>.txt), the
 * expectation of a test that runs a library (tests/test_peer_profiles.c) and a divergence case's
 * qmm.meta `cpu_class` are keyed by these names; peers/check.sh's cpu_class() is the same rule
 * in shell (tests/test_meta.c checks they agree). */
#ifndef QMM_HARNESS_CPUCLASS_H
#define QMM_HARNESS_CPUCLASS_H

#include <stddef.h>

/* The environment variable that names the class instead of /proc/cpuinfo (an emulated CPU, or
 * a check of another class's expectations). */
#define QH_CPU_CLASS_ENV "QMM_CPU_CLASS"

/* 1 when the `len` bytes at `name` are a class name: amx, avx512-vnni, avx-vnni, avx2,
 * baseline (what a CPU's flags say natively), x86-64-v2, x86-64-v3 (CPUs run under
 * emulation). */
int qh_cpu_class_known(const char *name, size_t len);

/* "amx, avx512-vnni, ..." (every known name), for messages. */
const char *qh_cpu_class_names(void);

/* The class of a CPU whose /proc/cpuinfo flags are the words of `flags`: amx with amx_int8,
 * else avx512-vnni with avx512_vnni, else avx-vnni with avx_vnni, else avx2 with avx2, else
 * baseline (also for NULL: no flags line). */
const char *qh_cpu_class_of_flags(const char *flags);

/* This machine's class: $QMM_CPU_CLASS when set, else from the first "flags" line of
 * /proc/cpuinfo. 0 with *cls set; -1 with the reason in `why` when $QMM_CPU_CLASS names no
 * class. */
int qh_cpu_class(const char **cls, char *why, size_t size);

#endif /* QMM_HARNESS_CPUCLASS_H */
