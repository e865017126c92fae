/* harness/invoke/cpu.h — judging a backend as another CPU runs it: `--cpu CLASS` (docs/cpu.md).
 *
 * A CPU class is a row of one table: its name, the qemu-user CPU model (with feature flags) that
 * gives a process that CPU's CPUID, what that CPUID reports and what it lacks. `native` runs as
 * the machine does. Under an emulated class the backend's isolated worker is exec'd as
 * `qemu-x86_64 -cpu MODEL <this executable>` (its socket and capture are its fds 3, 1 and 2, as a
 * forked worker's), so everything the backend runs — its constructors, its CPUID dispatch, its
 * calls — runs emulated, while qmmcheck stays native; an `exec:` process is started by a native
 * worker with the same qemu invocation in front of its command. Classes the emulator cannot give
 * (AVX-512, VNNI, AMX) are in the table too, refused with that reason.
 */
#ifndef QMM_HARNESS_CPU_H
#define QMM_HARNESS_CPU_H

#include <stddef.h>

typedef struct qh_cpu_target {
    const char *name;    /* "x86-64-v3", as --cpu, reports and qmm.meta name it */
    const char *model;   /* qemu's -cpu argument; NULL for native */
    const char *has;     /* what its CPUID reports, in words */
    const char *lacks;   /* what it lacks that newer CPUs have */
    const char *refused; /* NULL, or why qmmcheck cannot give a process this CPU */
    unsigned need, deny; /* QH_CPU_F_* bits the emulated CPUID must show, and must not */
    const char *openblas; /* "OPENBLAS_CORETYPE=TYPE", OpenBLAS's core type for this CPU: in an
                             emulated process's environment, over the caller's; or NULL */
} qh_cpu_target;

/* CPUID facts an emulated class must show (need) or must not (deny), checked once a run by an
 * emulated probe of this executable (cpu.c). */
enum {
    QH_CPU_F_SSE42 = 1u << 0,
    QH_CPU_F_POPCNT = 1u << 1,
    QH_CPU_F_AVX = 1u << 2,
    QH_CPU_F_AVX2 = 1u << 3,
    QH_CPU_F_FMA = 1u << 4,
    QH_CPU_F_BMI2 = 1u << 5,
    QH_CPU_F_F16C = 1u << 6,
    QH_CPU_F_AVX512F = 1u << 7,
    QH_CPU_F_AVX512VNNI = 1u << 8,
    QH_CPU_F_AVXVNNI = 1u << 9,
    QH_CPU_F_AMX = 1u << 10,
};

/* An emulated class's timeouts (--timeout, and every wait derived from it) are multiplied by
 * this: qemu's TCG runs SIMD code 10 to 40 times slower than the CPU (docs/cpu.md, measured),
 * and a worker's start (loading qmmcheck's libraries under emulation) takes seconds. */
#define QH_CPU_TIMEOUT_FACTOR 20

/* Extra data-size limit an emulated `exec:` process gets beyond --memory-limit: qemu's own
 * translation cache and tables (about 150 MiB), which RLIMIT_DATA counts. */
#define QH_CPU_QEMU_ALLOWANCE ((unsigned long long)256 << 20)

/* How long a worker's start (its process, its libraries, the backend's open: the hello) may
 * take under the class, in seconds, scaled; 0 for none. `start_s` is qh_isolation's: > 0 the
 * user's --start-timeout (scaled like every timeout), < 0 none; 0 the default: the call's
 * `timeout_s` scaled, at least QH_START_S natively and QH_CPU_START_S emulated (none when
 * `timeout_s` is none). A start is not a call: its time is the machine's (a fork on a loaded
 * machine, an interpreter importing its modules), not the backend's arithmetic. */
double qh_cpu_start_timeout(const qh_cpu_target *c, double timeout_s, double start_s);

/* The name a saved case's qmm.meta `cpu_class` gives the class (harness/io/cpuclass.h): an
 * emulated class's own, this machine's detected class for native; NULL when no --cpu was
 * given (c NULL). */
const char *qh_cpu_meta_class(const qh_cpu_target *c);

/* The i-th row of the table (0: native), NULL past the last. */
const qh_cpu_target *qh_cpu_class_at(int i);

/* 1 when the class runs under qemu (not native, not NULL). */
int qh_cpu_emulated(const qh_cpu_target *c);

/* The class's name for lines and reports: "native" for NULL. */
const char *qh_cpu_name(const qh_cpu_target *c);

/* By default a worker's start may take at least this long, whatever --timeout: natively
 * (a fork or an interpreter's imports on a loaded machine: a 0.5 s --timeout once killed a
 * plugin's worker in its start under `ctest -j2`), and under an emulated class (qemu loading
 * this executable's libraries, an exec: interpreter importing its modules). */
#define QH_START_S 10.0
#define QH_CPU_START_S 60.0

/* `--cpu LIST`: comma-separated class names, each given once. Fills out[0..max) and returns
 * how many, or -1 with `err` naming the class and why: unknown (the known ones listed), refused
 * (the table's reason), a qemu-x86_64 that is missing (the package to install) or whose CPU does
 * not show what the class needs (checked once per class, in an emulated probe of this
 * executable). */
int qh_cpu_parse(const char *list, const qh_cpu_target **out, int max, char *err, size_t n);

/* The timeout an emulated class gets for `t` seconds (t * QH_CPU_TIMEOUT_FACTOR); `t` itself
 * for native or NULL, and 0 (none) stays 0. */
double qh_cpu_timeout(const qh_cpu_target *c, double t);

/* A `__REPRO:` command ("qmmcheck repro --backend ...", malloc'd, taken) with "--cpu CPU" after
 * its first two words; `cmd` itself when cpu is NULL (no --cpu was given) or memory is short. */
char *qh_cpu_repro(char *cmd, const char *cpu);
/* As qh_cpu_repro for the command after the first "__REPRO: " in `text` (a report's lines). */
char *qh_cpu_repro_in(char *text, const char *cpu);

/* Why this executable itself cannot run under qemu (an AddressSanitizer build: qemu-user 7.2
 * hangs mapping its shadow memory), or NULL. Then only an `exec:` process is emulated (its
 * worker is native); a plugin or built-in under an emulated class is refused, and the class's
 * probe is not run. */
const char *qh_cpu_self_refused(void);

/* `qmmcheck list --cpus`: the table, one class a block. */
void qh_cpu_list(void);

/* `qmmcheck list --backends --cpu CLASS`: runs `args` (this executable's own arguments, less
 * --cpu) under qemu with the class's model, its output passed through; returns its exit
 * status, or 2 with a message when it cannot run. */
int qh_cpu_run_self(const qh_cpu_target *c, char *const *args);

/* 1 when `n` bytes a worker printed hold qemu-user's report that its own allocation failed
 * ("qemu-x86_64: GLib: ...: failed to allocate N bytes"): a backend reached --memory-limit and
 * qemu, left without memory, stops without ending (harness/invoke/invoke.c then kills it). */
int qh_cpu_qemu_out_of_memory(const char *out, size_t n);

/* ---- inside a worker ---------------------------------------------------------------------- */

/* The class the current worker's backend runs under (set by the worker before it opens its
 * backend); NULL in qmmcheck itself and in a native worker. */
extern const qh_cpu_target *qh_cpu_worker_class;

/* In a freshly forked worker child whose fds 0-3 are set: replaces the process by
 * `qemu-x86_64 -cpu MODEL <this executable>` serving `spec` as an emulated worker (the entry in
 * cpu.c that every executable linking the harness has). Returns only when the exec failed,
 * with why in `err`. */
void qh_cpu_exec_worker(const qh_cpu_target *c, const char *spec, char *err, size_t n);

/* The command an `exec:` process is started with in a worker whose class is emulated: qemu,
 * -cpu MODEL, then the program found on PATH as execvp would (a "#!" script becomes its
 * interpreter and the script, as the kernel would do, since qemu-user runs ELF files only; an
 * `env NAME` interpreter becomes NAME found on PATH), then the arguments. Into out[0..max)
 * (NULL-terminated), strings in `store`. 0 (`argv` itself is to run: not emulated), 1 (out
 * filled), or -1 with errno set (ENOENT: the program is not found, E2BIG: too long). */
int qh_cpu_wrap_command(char *const *argv, char **out, size_t max, char *store, size_t size);

/* After an emulated `exec:` process answered its hello: 0 when it still runs under qemu, -1
 * with why when it runs natively (it exec'd another program, which qemu-user runs natively,
 * as a wrapper script does): its answers would be a native CPU's. */
int qh_cpu_check_process(int pid, char *why, size_t n);

#endif /* QMM_HARNESS_CPU_H */
