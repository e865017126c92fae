/* harness/invoke/cpu.c — the CPU classes and running a backend under qemu-user (cpu.h).
 *
 * Three ways this executable is started under qemu, each told by an environment variable that
 * the entry below (a constructor, so every executable that links the harness has it: qmmcheck,
 * the tests, the fuzz targets) reads and removes before anything else runs:
 *   QMM_CPU_WORKER=CLASS  an emulated worker: fd 3 is its socket, QMM_CPU_WORKER_SPEC the
 *                         backend (harness/invoke/worker.c, qh_worker_emulated);
 *   QMM_CPU_PROBE=CLASS   prints "ok", or what the emulated CPUID lacks or has that the class
 *                         must not, and exits (qh_cpu_parse checks each class once a run);
 *   neither               an ordinary start (`qmmcheck list --backends --cpu CLASS`).
 */
#define _GNU_SOURCE 1 /* pipe2 */
#include "harness/invoke/cpu.h"
#include "harness/invoke/strays.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "harness/base/clean.h"
#include "harness/io/cpuclass.h"
#include "harness/invoke/invoke.h"
#include "harness/invoke/worker.h"

#define V2_HAS "SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT, CMPXCHG16B, LAHF/SAHF"
#define V2_LACKS "AVX, AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE, AES, PCLMULQDQ"
#define V3_HAS "AVX, AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE, XSAVE, AES, PCLMULQDQ"
#define AVX512_LACKS "AVX-512 (F, CD, BW, DQ, VL), AVX-512 VNNI, AVX-VNNI, AMX"
#define TCG_LACKS "qemu-user (7.2) emulates no "
#define QEMU_HEAD_MAX 7 /* qemu_head's arguments, at most */

/* One row a class. The models print no "TCG doesn't support requested feature" warning under
 * qemu 7.2 (Haswell's TSX, PCID, INVPCID, x2APIC and TSC-deadline bits are taken off: TCG has
 * none of them, and none is a user-space instruction set). */
static const qh_cpu_target classes[] = {
    {"native", NULL, "this machine's CPU, as it is", "-", NULL, 0, 0, NULL},
    {"x86-64-v2", "Nehalem", V2_HAS, V2_LACKS ", " AVX512_LACKS, NULL,
     QH_CPU_F_SSE42 | QH_CPU_F_POPCNT,
     QH_CPU_F_AVX | QH_CPU_F_AVX2 | QH_CPU_F_FMA | QH_CPU_F_AVX512F,
     "OPENBLAS_CORETYPE=Nehalem"},
    {"x86-64-v3", "Haswell-noTSX,-pcid,-x2apic,-tsc-deadline,-invpcid", "x86-64-v2's, " V3_HAS,
     AVX512_LACKS ", ADX, SHA", NULL,
     QH_CPU_F_SSE42 | QH_CPU_F_POPCNT | QH_CPU_F_AVX | QH_CPU_F_AVX2 | QH_CPU_F_FMA |
         QH_CPU_F_BMI2 | QH_CPU_F_F16C,
     QH_CPU_F_AVX512F | QH_CPU_F_AVX512VNNI | QH_CPU_F_AVXVNNI | QH_CPU_F_AMX,
     "OPENBLAS_CORETYPE=Haswell"},
    {"x86-64-v4", NULL, "x86-64-v3's, AVX-512 F, CD, BW, DQ, VL", "AVX-512 VNNI, AMX",
     TCG_LACKS "AVX-512 instruction", 0, 0, NULL},
    {"avx-vnni", NULL, "x86-64-v3's, AVX-VNNI", "AVX-512 (F, CD, BW, DQ, VL), AVX-512 VNNI, AMX",
     TCG_LACKS "AVX-VNNI instruction",
     0, 0, NULL},
    {"avx512-vnni", NULL, "x86-64-v4's, AVX-512 VNNI", "AMX",
     TCG_LACKS "AVX-512 or VNNI instruction", 0, 0, NULL},
    {"amx", NULL, "avx512-vnni's, AMX-TILE, AMX-INT8", "-",
     TCG_LACKS "AMX or AVX-512 instruction", 0, 0, NULL},
};
#define N_CLASSES (sizeof classes / sizeof classes[0])

const qh_cpu_target *qh_cpu_worker_class;

#if defined(__SANITIZE_ADDRESS__)
#define SELF_REFUSED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SELF_REFUSED 1
#endif
#endif

const char *qh_cpu_self_refused(void)
{
#ifdef SELF_REFUSED
    return "this qmmcheck is built with AddressSanitizer, which qemu-user cannot run (it hangs "
           "mapping the shadow memory): only an exec: process can be emulated";
#else
    return NULL;
#endif
}

const qh_cpu_target *qh_cpu_class_at(int i)
{
    return i >= 0 && (size_t)i < N_CLASSES ? &classes[i] : NULL;
}

int qh_cpu_emulated(const qh_cpu_target *c)
{
    return c && c->model;
}

const char *qh_cpu_name(const qh_cpu_target *c)
{
    return c ? c->name : "native";
}

const char *qh_cpu_meta_class(const qh_cpu_target *c)
{
    const char *detected = NULL;
    char why[256];
    if (!c || qh_cpu_emulated(c))
        return c ? c->name : NULL;
    return qh_cpu_class(&detected, why, sizeof why) == 0 ? detected : NULL;
}

static const qh_cpu_target *find(const char *name, size_t len)
{
    for (size_t i = 0; i < N_CLASSES; i++)
        if (strlen(classes[i].name) == len && strncmp(classes[i].name, name, len) == 0)
            return &classes[i];
    return NULL;
}

double qh_cpu_timeout(const qh_cpu_target *c, double t)
{
    return qh_cpu_emulated(c) ? t * QH_CPU_TIMEOUT_FACTOR : t;
}

double qh_cpu_start_timeout(const qh_cpu_target *c, double timeout_s, double start_s)
{
    if (start_s != 0)
        return start_s > 0 ? qh_cpu_timeout(c, start_s) : 0;
    double t = qh_cpu_timeout(c, timeout_s), least = qh_cpu_emulated(c) ? QH_CPU_START_S
                                                                        : QH_START_S;
    return t <= 0 ? 0 : t < least ? least : t;
}

/* ---- the emulated CPU's facts ------------------------------------------------------------ */

static unsigned cpu_features(void)
{
    unsigned f = 0;
#if defined(__x86_64__)
    unsigned a, b, c, d, max = __get_cpuid_max(0, NULL);
    if (max >= 1 && __get_cpuid(1, &a, &b, &c, &d))
        f |= (c >> 20 & 1 ? QH_CPU_F_SSE42 : 0) | (c >> 23 & 1 ? QH_CPU_F_POPCNT : 0) |
             (c >> 28 & 1 ? QH_CPU_F_AVX : 0) | (c >> 12 & 1 ? QH_CPU_F_FMA : 0) |
             (c >> 29 & 1 ? QH_CPU_F_F16C : 0);
    if (max >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f |= (b >> 5 & 1 ? QH_CPU_F_AVX2 : 0) | (b >> 8 & 1 ? QH_CPU_F_BMI2 : 0) |
             (b >> 16 & 1 ? QH_CPU_F_AVX512F : 0) | (c >> 11 & 1 ? QH_CPU_F_AVX512VNNI : 0) |
             (d >> 25 & 1 ? QH_CPU_F_AMX : 0);
        __cpuid_count(7, 1, a, b, c, d);
        f |= a >> 4 & 1 ? QH_CPU_F_AVXVNNI : 0;
    }
#endif
    return f;
}

static const char *const feature_names[] = {"SSE4.2", "POPCNT", "AVX", "AVX2", "FMA", "BMI2",
                                            "F16C", "AVX-512F", "AVX-512 VNNI", "AVX-VNNI",
                                            "AMX-INT8"};

/* The names of the QH_CPU_F_ bits set in `bits`, after `lead`, into buf at *o. */
static void name_features(unsigned bits, const char *lead, char *buf, size_t n, size_t *o)
{
    for (size_t i = 0; bits && i < sizeof feature_names / sizeof feature_names[0]; i++)
        if (bits >> i & 1 && *o < n) {
            *o += (size_t)snprintf(buf + *o, n - *o, "%s%s", lead, feature_names[i]);
            lead = ", ";
        }
}

/* "ok", or what the CPUID here lacks of c->need and shows of c->deny, into buf. */
static void judge_features(const qh_cpu_target *c, char *buf, size_t n)
{
    unsigned f = cpu_features(), lacks = c->need & ~f, extra = c->deny & f;
    size_t o = (size_t)snprintf(buf, n, "%s", lacks || extra ? "" : "ok");
    name_features(lacks, "the emulated CPU lacks ", buf, n, &o);
    name_features(extra, lacks ? "; it has " : "the emulated CPU has ", buf, n, &o);
}

/* ---- qemu-x86_64 --------------------------------------------------------------------------- */

/* `name` found as execvp would: as is when it holds a '/', else the first executable regular
 * file of that name on PATH. 0 with the path in buf, or -1 (errno ENOENT or ENAMETOOLONG). */
static int find_program(const char *name, char *buf, size_t n)
{
    if (strchr(name, '/')) {
        if (strlen(name) >= n)
            return errno = ENAMETOOLONG, -1;
        memcpy(buf, name, strlen(name) + 1);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int w = snprintf(buf, n, "%.*s%s%s", (int)len, p, len ? "/" : "", name);
        struct stat st;
        if (w > 0 && (size_t)w < n && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return 0;
        if (!e)
            break;
        p = e;
    }
    return errno = ENOENT, -1;
}

static char qemu_path[4096];

/* qemu-x86_64 ($QMM_QEMU, or qemu-x86_64 or qemu-x86_64-static on PATH): 0, or -1 with why. */
static int find_qemu(char *err, size_t n)
{
    if (qemu_path[0])
        return 0;
    const char *forced = getenv("QMM_QEMU");
    struct stat st;
    if (forced && *forced) {
        char shown[256];
        qh_clean_into(shown, sizeof shown, forced, strlen(forced), 200);
        if (strlen(forced) >= sizeof qemu_path || stat(forced, &st) != 0 ||
            !S_ISREG(st.st_mode) || access(forced, X_OK) != 0) {
            snprintf(err, n, "QMM_QEMU=%s is not an executable file", shown);
            return -1;
        }
        memcpy(qemu_path, forced, strlen(forced) + 1);
        return 0;
    }
    if (find_program("qemu-x86_64", qemu_path, sizeof qemu_path) == 0 ||
        find_program("qemu-x86_64-static", qemu_path, sizeof qemu_path) == 0)
        return 0;
    qemu_path[0] = '\0';
    snprintf(err, n, "qemu-x86_64 is not installed (not found on PATH): install Debian's "
             "qemu-user package (apt-get install qemu-user; scripts/deps.sh does), or name it "
             "with QMM_QEMU");
    return -1;
}

/* Environment variables qemu-user reads (QEMU_GDB would make it wait for a debugger,
 * QEMU_LD_PREFIX load other libraries, QEMU_STRACE print into the capture): none reaches it. */
static void drop_qemu_env(void)
{
    extern char **environ;
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e && *e; e++)
            if (strncmp(*e, "QEMU_", 5) == 0) {
                char name[128];
                size_t k = strcspn(*e, "=");
                snprintf(name, sizeof name, "%.*s", (int)(k < sizeof name ? k : sizeof name - 1),
                         *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
}

/* qemu's arguments before the program: qemu, -cpu MODEL, -L / (no library prefix), and the
 * class's OpenBLAS core type in the program's environment, over any the caller's environment
 * holds: a core type chosen for the real CPU is wrong for the emulated one. A machine whose
 * environment held OPENBLAS_CORETYPE=Haswell (2026-11-28) made numpy's OpenBLAS run its Haswell
 * kernels under qemu's Nehalem, and every Python peer died of SIGILL at `import numpy`. At most
 * QEMU_HEAD_MAX of them. */
static int qemu_head(const qh_cpu_target *c, char **out)
{
    int k = 0;
    out[k++] = qemu_path;
    out[k++] = (char *)"-cpu";
    out[k++] = (char *)c->model;
    out[k++] = (char *)"-L";
    out[k++] = (char *)"/";
    if (c->openblas) {
        out[k++] = (char *)"-E";
        out[k++] = (char *)c->openblas;
    }
    return k;
}

/* This executable as a path qemu can open after exec: /proc/self/fd/N of an fd left open
 * across exec (the file itself, even if it was replaced since). -1 when it cannot be opened. */
static int self_path(char *buf, size_t n, int at)
{
    int fd = open("/proc/self/exe", O_RDONLY);
    if (fd < 0)
        return -1;
    if (at >= 0 && fd != at) {
        if (dup2(fd, at) < 0) {
            close(fd);
            return -1;
        }
        close(fd);
        fd = at;
    }
    snprintf(buf, n, "/proc/self/fd/%d", fd);
    return fd;
}

/* Starts this executable under the class's qemu with `env` set: the child's pid, its stdout
 * and stderr in *out_fd (when out_fd is not NULL; else inherited), or -1. */
static pid_t start_self(const qh_cpu_target *c, const char *env, char *const *args, int *out_fd)
{
    int p[2] = {-1, -1};
    if (out_fd && pipe2(p, O_CLOEXEC) != 0)
        return -1;
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a probe or listing dies with qmmcheck */
        if (getppid() != parent)
            _exit(127);
        if (out_fd) {
            dup2(p[1], 1);
            dup2(p[1], 2);
        }
        drop_qemu_env();
        if (env)
            putenv((char *)env);
        char exe[64], *argv[64];
        int k = qemu_head(c, argv);
        if (self_path(exe, sizeof exe, -1) < 0)
            _exit(127);
        argv[k++] = exe;
        for (int i = 0; args && args[i] && k < 63; i++)
            argv[k++] = args[i];
        argv[k] = NULL;
        execv(qemu_path, argv);
        _exit(127);
    }
    if (out_fd) {
        close(p[1]);
        if (pid < 0)
            close(p[0]);
        else
            *out_fd = p[0];
    }
    qh_strays_own(pid);
    return pid;
}

/* Runs this executable under the class's model once and asks its CPUID: 0, or -1 with why. */
static int probe(const qh_cpu_target *c, char *err, size_t n)
{
    char env[64];
    snprintf(env, sizeof env, "QMM_CPU_PROBE=%s", c->name);
    int fd;
    pid_t pid = start_self(c, env, NULL, &fd);
    if (pid < 0) {
        snprintf(err, n, "cannot start %s: %s", qemu_path, strerror(errno));
        return -1;
    }
    char out[2048];
    size_t len = 0;
    double deadline = qh_mono_seconds() + 120;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ms = qh_poll_slice_ms(deadline);
        if (ms < 0 || qh_interrupted)
            break;
        if (poll(&pf, 1, ms) <= 0)
            continue;
        ssize_t r = read(fd, out + len, sizeof out - 1 - len);
        if (r <= 0 || (len += (size_t)r) == sizeof out - 1)
            break;
    }
    close(fd);
    kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    qh_strays_disown(pid);
    out[len] = '\0';
    /* qemu's warnings about model bits TCG lacks are not the probe's answer */
    char said[1024] = "";
    for (char *line = out, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!strstr(line, "TCG doesn't support requested feature"))
            snprintf(said + strlen(said), sizeof said - strlen(said), "%s%s",
                     said[0] ? "; " : "", line);
    }
    if (strcmp(said, "ok") == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char shown[512];
    qh_clean_into(shown, sizeof shown, said, strlen(said), 400);
    snprintf(err, n, "%s -cpu %s does not give the CPU this class needs: %s", qemu_path,
             c->model, shown[0] ? shown : "it printed nothing (a qemu without TCG's AVX2, "
             "older than 7.2?)");
    return -1;
}

/* Whether this build can give a process the class: once a run per class. */
static int ready(const qh_cpu_target *c, char *err, size_t n)
{
    static int state[N_CLASSES];
    static char why[N_CLASSES][768];
    size_t i = (size_t)(c - classes);
    if (state[i] == 0) {
#if defined(__x86_64__)
        /* an AddressSanitizer build cannot run itself as the probe: the model is trusted */
        state[i] = find_qemu(why[i], sizeof why[i]) == 0 &&
                           (qh_cpu_self_refused() || probe(c, why[i], sizeof why[i]) == 0)
                       ? 1 : -1;
#else
        snprintf(why[i], sizeof why[i], "emulating an x86-64 CPU needs an x86-64 qmmcheck, and "
                 "this one is built for another architecture");
        state[i] = -1;
#endif
    }
    if (state[i] < 0)
        snprintf(err, n, "%s", why[i]);
    return state[i] > 0 ? 0 : -1;
}

int qh_cpu_parse(const char *list, const qh_cpu_target **out, int max, char *err, size_t n)
{
    int k = 0;
    char why[800];
    for (const char *p = list;; p++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char shown[80];
        qh_clean_into(shown, sizeof shown, p, len, 64);
        const qh_cpu_target *c = find(p, len);
        if (!c) {
            snprintf(err, n, "--cpu %s: unknown CPU class '%s' (native, x86-64-v2, x86-64-v3; "
                     "'qmmcheck list --cpus' lists them)", list, shown);
            return -1;
        }
        if (c->refused) {
            snprintf(err, n, "--cpu %s: CPU class %s cannot be emulated: %s (judge it on such "
                     "a machine with --cpu native)", list, c->name, c->refused);
            return -1;
        }
        for (int i = 0; i < k; i++)
            if (out[i] == c) {
                snprintf(err, n, "--cpu %s: CPU class %s is named twice", list, c->name);
                return -1;
            }
        if (k == max) {
            snprintf(err, n, "--cpu %s: more than %d CPU classes", list, max);
            return -1;
        }
        if (qh_cpu_emulated(c) && ready(c, why, sizeof why) != 0) {
            snprintf(err, n, "--cpu %s: %s", c->name, why);
            return -1;
        }
        out[k++] = c;
        if (!e)
            return k;
        p = e;
    }
}

char *qh_cpu_repro(char *cmd, const char *cpu)
{
    if (!cmd || !cpu)
        return cmd;
    const char *sp = strchr(cmd, ' ');
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    size_t at = sp ? (size_t)(sp - cmd) : strlen(cmd);
    size_t len = strlen(cmd) + strlen(cpu) + 8;
    char *out = malloc(len);
    if (!out)
        return cmd;
    snprintf(out, len, "%.*s --cpu %s%s", (int)at, cmd, cpu, cmd + at);
    free(cmd);
    return out;
}

char *qh_cpu_repro_in(char *text, const char *cpu)
{
    const char *at = text && cpu ? strstr(text, "__REPRO: ") : NULL;
    if (!at)
        return text;
    size_t head = (size_t)(at - text) + 9;
    char *tail = qh_cpu_repro(strdup(text + head), cpu);
    char *out = tail ? malloc(head + strlen(tail) + 1) : NULL;
    if (out) {
        memcpy(out, text, head);
        strcpy(out + head, tail);
        free(text);
        text = out;
    }
    free(tail);
    return text;
}

void qh_cpu_list(void)
{
    for (size_t i = 0; i < N_CLASSES; i++) {
        const qh_cpu_target *c = &classes[i];
        printf("%s\n", c->name);
        printf("  qemu -cpu: %s\n", c->model ? c->model : c->refused ? "-" : "(runs natively)");
        printf("  has:   %s\n  lacks: %s\n", c->has, c->lacks);
        if (c->refused)
            printf("  refused: %s\n", c->refused);
    }
}

int qh_cpu_run_self(const qh_cpu_target *c, char *const *args)
{
    if (qh_cpu_self_refused()) {
        fprintf(stderr, "qmmcheck: --cpu %s: %s\n", c->name, qh_cpu_self_refused());
        return 2;
    }
    pid_t pid = start_self(c, NULL, args, NULL);
    if (pid < 0) {
        fprintf(stderr, "qmmcheck: cannot start %s: %s\n", qemu_path, strerror(errno));
        return 2;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    qh_strays_disown(pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int qh_cpu_qemu_out_of_memory(const char *out, size_t n)
{
    static const char said[] = "GLib: "; /* qemu writes its "qemu-x86_64: " apart */
    const char *p = memmem(out, n, said, sizeof said - 1);
    return p && memmem(p, n - (size_t)(p - out), "failed to allocate", 18) != NULL;
}

/* ---- the worker ---------------------------------------------------------------------------- */

void qh_cpu_exec_worker(const qh_cpu_target *c, const char *spec, char *err, size_t n)
{
    char exe[64], *argv[QEMU_HEAD_MAX + 2];
    drop_qemu_env();
    if (setenv("QMM_CPU_WORKER", c->name, 1) != 0 || setenv("QMM_CPU_WORKER_SPEC", spec, 1) != 0 ||
        self_path(exe, sizeof exe, 4) < 0) {
        snprintf(err, n, "cannot prepare the emulated worker: %s", strerror(errno));
        return;
    }
    int k = qemu_head(c, argv);
    argv[k++] = exe;
    argv[k] = NULL;
    execv(qemu_path, argv);
    snprintf(err, n, "cannot run %s: %s", qemu_path, strerror(errno));
}

/* The program a "#!" file names, as the kernel reads it: the interpreter and its one optional
 * argument (the rest of the line, trimmed) into interp and arg; 1 when `path` is such a file. */
static int read_shebang(const char *path, char *interp, size_t ni, char *arg, size_t na)
{
    char line[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (r < 2 || line[0] != '#' || line[1] != '!')
        return 0;
    line[r] = '\0';
    line[strcspn(line, "\n")] = '\0';
    char *p = line + 2;
    p += strspn(p, " \t");
    size_t k = strcspn(p, " \t");
    snprintf(interp, ni, "%.*s", (int)k, p);
    p += k;
    p += strspn(p, " \t");
    size_t end = strlen(p);
    while (end && (p[end - 1] == ' ' || p[end - 1] == '\t'))
        end--;
    snprintf(arg, na, "%.*s", (int)end, p);
    return interp[0] != '\0';
}

/* Appends s to the store; its copy, or NULL when the store is full. */
static char *keep(char *store, size_t size, size_t *used, const char *s)
{
    size_t k = strlen(s) + 1;
    if (*used + k > size)
        return NULL;
    char *d = store + *used;
    memcpy(d, s, k);
    *used += k;
    return d;
}

int qh_cpu_wrap_command(char *const *argv, char **out, size_t max, char *store, size_t size)
{
    const qh_cpu_target *c = qh_cpu_worker_class;
    if (!qh_cpu_emulated(c) || !argv[0])
        return 0;
    char prog[4096], interp[256], arg[256];
    /* what runs: the program, or the interpreters its "#!" lines name (4 levels, as Linux) */
    char *front[12];
    size_t nf = 0, used = 0;
    if (find_program(argv[0], prog, sizeof prog) != 0)
        return -1;
    char *script = keep(store, size, &used, prog);
    const char *argv0 = argv[0];
    for (int depth = 0; script && depth < 4 &&
                        read_shebang(script, interp, sizeof interp, arg, sizeof arg);
         depth++) {
        /* `#!/usr/bin/env NAME`: env would exec NAME natively, out of qemu's reach */
        const char *base = strrchr(interp, '/');
        int via_env = strcmp(base ? base + 1 : interp, "env") == 0 && arg[0] && arg[0] != '-' &&
                      !strchr(arg, ' ');
        front[nf++] = script;
        if (via_env) {
            argv0 = keep(store, size, &used, arg);
        } else {
            argv0 = keep(store, size, &used, interp);
            if (arg[0])
                front[nf++] = keep(store, size, &used, arg);
        }
        if (find_program(via_env ? arg : interp, prog, sizeof prog) != 0)
            return -1;
        script = keep(store, size, &used, prog);
    }
    size_t nargs = 0;
    while (argv[nargs])
        nargs++;
    if (!script || !argv0 || nf > 10 || QEMU_HEAD_MAX + 3 + nf + nargs > max)
        return errno = E2BIG, -1;
    for (size_t i = 0; i < nf; i++)
        if (!front[i])
            return errno = E2BIG, -1;
    size_t k = (size_t)qemu_head(c, out);
    out[k++] = (char *)"-0";
    out[k++] = (char *)argv0;
    out[k++] = script;
    /* the interpreters' arguments, innermost first, then the scripts they run */
    for (size_t i = nf; i-- > 0;)
        out[k++] = front[i];
    for (size_t i = 1; i < nargs; i++)
        out[k++] = argv[i];
    out[k] = NULL;
    return 1;
}

int qh_cpu_check_process(int pid, char *why, size_t n)
{
    if (!qh_cpu_emulated(qh_cpu_worker_class))
        return 0;
    char link[64], exe[4096];
    snprintf(link, sizeof link, "/proc/%d/exe", pid);
    ssize_t r = readlink(link, exe, sizeof exe - 1);
    char real[4096];
    if (r > 0 && realpath(qemu_path, real)) {
        exe[r] = '\0';
        if (strcmp(exe, real) == 0)
            return 0;
        char shown[256];
        qh_clean_into(shown, sizeof shown, exe, (size_t)r, 200);
        snprintf(why, n, "the process runs natively (%s), not under qemu: it exec'd another "
                 "program (a wrapper script does), which qemu-user runs natively; name the "
                 "program itself in the command", shown);
        return -1;
    }
    return 0; /* it ended already: its death is reported by the exchange */
}

/* ---- the entry ------------------------------------------------------------------------------ */

__attribute__((constructor)) static void qh_cpu_entry(void)
{
    const char *probe_class = getenv("QMM_CPU_PROBE");
    if (probe_class) {
        const qh_cpu_target *c = find(probe_class, strlen(probe_class));
        char said[512] = "not a CPU class";
        if (c)
            judge_features(c, said, sizeof said);
        printf("%s\n", said);
        fflush(stdout);
        _exit(c && strcmp(said, "ok") == 0 ? 0 : 1);
    }
    const char *w = getenv("QMM_CPU_WORKER");
    const char *spec = getenv("QMM_CPU_WORKER_SPEC");
    struct stat st;
    if (!w || !spec || fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode))
        return; /* not started as a worker: fd 3 is not a worker's socket */
    qh_cpu_worker_class = find(w, strlen(w));
    char *copy = strdup(spec);
    unsetenv("QMM_CPU_WORKER");
    unsetenv("QMM_CPU_WORKER_SPEC");
    close(4); /* this executable, opened for qemu */
    if (!copy)
        _exit(1);
    qh_worker_emulated(copy); /* never returns */
}
