/* harness/invoke/backends.c — built-in backend registry, plugin loading, and the choice between an
 * in-process and an isolated backend. */
#include "harness/invoke/backends.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/base/clean.h"
#include "harness/base/fileio.h"
#include "harness/invoke/exec.h"
#include "optimized/qmm_optimized.h"
#include "reference/qmm_reference.h"
#ifdef QMM_HAVE_CUDA
#include "optimized/qmm_cuda.h"
#endif

typedef struct builtin {
    const char *name;
    qmm_backend_open_fn open;
} builtin;

static const builtin builtins[] = {
    {"reference", qmm_reference_open},
    {"optimized", qmm_optimized_open},
    {"exec", qh_exec_open}, /* not listed below: it needs a command */
#ifdef QMM_HAVE_CUDA
    {"cuda", qmm_cuda_open},
#endif
};

const char *const qh_builtin_backends[] = {"reference", "optimized",
#ifdef QMM_HAVE_CUDA
                                           "cuda",
#endif
                                           NULL};

/* A regular file of that name (following links), for a plugin named without a '/'. */
static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The built-in of that name, or NULL. */
static const builtin *find_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

int qh_spec_is_plugin(const char *name)
{
    if (find_builtin(name))
        return 0; /* a built-in name wins over a file of that name (docs/formats.md) */
    size_t n = strlen(name);
    return strchr(name, '/') != NULL || (n > 3 && strcmp(name + n - 3, ".so") == 0) ||
           is_file(name);
}

/* What an entry point said when it refused: one clean line (harness/base/clean.h), since it
 * reaches the terminal through the caller's error. */
static void said_by_backend(char *buf, size_t size, const qmm_status *st)
{
    if (!st->message[0])
        snprintf(buf, size, "(no message)");
    else
        qh_clean_into(buf, size, st->message, strnlen(st->message, sizeof st->message), 0);
}

/* The loader's own message (dlerror), one clean line: it quotes the plugin's path and
 * symbol names, which come from the command line and the file. */
static void said_by_loader(char *buf, size_t size)
{
    const char *e = dlerror();
    if (!e)
        e = "(no message)";
    qh_clean_into(buf, size, e, strlen(e), 0);
}

/* An entry point that answered no backend refused the options it was given when it says
 * INVALID_ARGUMENT or UNSUPPORTED; anything else is a failure to open. */
static int refusal(const qmm_status *st)
{
    return st->code == QMM_INVALID_ARGUMENT || st->code == QMM_UNSUPPORTED;
}

/* `path` (from the command line or an environment variable) goes into every message cleaned:
 * a newline in it would otherwise start a line of its own. */
/* ---- a backend in process that ends the process -------------------------------------
 * A plugin (or its library) called in this process that calls exit() ended qmmcheck with the
 * plugin's status, 0 too, with no SUMMARY and no reports: a CI gate read a pass. While a
 * backend's code runs in process, an atexit handler of the command's own process (never a
 * worker's: a fork has another pid) says so and exits 1 instead. */
static pid_t watch_pid;
static const char *volatile in_backend_what; /* "operator call", ...; NULL outside */
static const char *volatile in_backend_spec;

static void exit_inside_backend(void)
{
    const char *what = in_backend_what, *spec = in_backend_spec;
    if (!what || getpid() != watch_pid)
        return;
    char shown[QH_CLEAN_LINE_MAX], msg[QH_CLEAN_LINE_MAX + 512];
    qh_clean_into(shown, sizeof shown, spec ? spec : "?", strlen(spec ? spec : "?"), 0);
    int late = strcmp(what, "close") == 0 || strcmp(what, "unloading") == 0;
    int n = snprintf(msg, sizeof msg,
                     "qmmcheck: backend %s ended this process (exit) during its %s, run in "
                     "process: %s; run it in a worker (--isolate) to judge it\n", shown, what,
                     late ? "the exit status is 1, not the one it gave"
                          : "no verdict, no SUMMARY and no reports");
    if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0)
        n = 0;
    _exit(1);
}

void qh_backend_watch_exit(void)
{
    if (watch_pid == 0 && atexit(exit_inside_backend) == 0) {
        watch_pid = getpid();
        at_quick_exit(exit_inside_backend);
    }
}

static void inside(const char *spec, const char *what)
{
    in_backend_spec = spec;
    in_backend_what = what;
}

static void outside(void)
{
    in_backend_what = NULL;
}

static int open_plugin(const char *raw_path, const char *options, qh_backend *out, qh_error *err)
{
    const char *path = raw_path;
    char shown[QH_CLEAN_LINE_MAX];
    qh_clean_into(shown, sizeof shown, raw_path, strlen(raw_path), 0);
    /* dlopen searches the library path for a name without a '/': a file here is meant */
    char here[1100];
    snprintf(here, sizeof here, "./%s", path);
    int local = strchr(path, '/') == NULL && is_file(path);
    inside(raw_path, "loading");
    void *dl = dlopen(local ? here : path, RTLD_NOW | RTLD_LOCAL);
    outside();
    path = shown; /* from here on, only messages */
    char said[QH_CLEAN_LINE_MAX];
    if (!dl) {
        said_by_loader(said, sizeof said);
        snprintf(err->msg, sizeof err->msg, "%s: cannot load plugin: %s", path, said);
        return -1;
    }
    /* POSIX guarantees object and function pointers convert through dlsym's void *. */
    dlerror();
    void *sym = dlsym(dl, QMM_PLUGIN_ENTRY);
    if (!sym) {
        said_by_loader(said, sizeof said);
        snprintf(err->msg, sizeof err->msg,
                 "%s: no entry point %s() exported (the loader said: %s). The two usual "
                 "causes: a C++ plugin that does not declare it extern \"C\" (its name is "
                 "mangled), or a build with -fvisibility=hidden that does not give it default "
                 "visibility (__attribute__((visibility(\"default\")))); `nm -D --defined-only "
                 "PLUGIN` lists what it exports", path, QMM_PLUGIN_ENTRY, said);
        dlclose(dl);
        return -1;
    }
    qmm_backend_open_fn open;
    memcpy(&open, &sym, sizeof open);
    qmm_status st;
    qmm_status_ok(&st);
    inside(raw_path, "open");
    qmm_backend *be = open(QMM_ABI_VERSION, options, &st);
    outside();
    if (!be) {
        out->refused = refusal(&st);
        said_by_backend(said, sizeof said, &st);
        snprintf(err->msg, sizeof err->msg, "%s: %s() returned no backend: %s: %s", path,
                 QMM_PLUGIN_ENTRY, qmm_status_name(st.code), said);
        dlclose(dl);
        return -1;
    }
    char why[256] = "";
    if (be->abi_version != QMM_ABI_VERSION)
        snprintf(why, sizeof why, "plugin built for qmm ABI %u, this qmmcheck speaks ABI %u",
                 be->abi_version, QMM_ABI_VERSION);
    else
        qh_table_adopt(be, &out->table, why, sizeof why);
    if (why[0]) {
        snprintf(err->msg, sizeof err->msg, "%s: %s", path, why);
        /* The table cannot be trusted to hold a close pointer: leak it rather than guess. */
        dlclose(dl);
        return -1;
    }
    out->be = be;
    out->has_query = out->table.query != NULL;
    out->dl = dl;
    out->is_plugin = 1;
    return 0;
}

/* See backends.h. */
void qh_spec_resolve_peer(const char *spec, char *out, size_t size)
{
    snprintf(out, size, "%s", spec);
    size_t len = strcspn(spec, ":");
    if (len == 0 || len > 64 || strncmp(spec, "exec", 4) == 0)
        return;
    char name[65];
    memcpy(name, spec, len);
    name[len] = '\0';
    if (find_builtin(name))
        return;
    for (size_t i = 0; i < len; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_'))
            return;
    if (qh_spec_is_plugin(name))
        return;
    char exe[4096];
    if (qh_self_exe(exe, sizeof exe) <= 0)
        return;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    char path[4096 + 200];
    snprintf(path, sizeof path, "%s/../peers/%s/libqmm_peer_%s.so", exe, name, name);
    if (access(path, R_OK) == 0 && (size_t)snprintf(out, size, "%s%s", path, spec + len) >= size)
        snprintf(out, size, "%s", spec);
}

void qh_spec_too_long(qh_error *err, size_t len)
{
    snprintf(err->msg, sizeof err->msg, "backend spec too long (%zu bytes; at most %zu)", len,
             sizeof ((qh_backend *)0)->spec - 1);
}

int qh_backend_open(const char *given, qh_backend *out, qh_error *err)
{
    char shown[QH_CLEAN_LINE_MAX]; /* the spec as the messages show it */
    qh_clean_into(shown, sizeof shown, given, strlen(given), 0);
    qh_open_printed_clear();
    memset(out, 0, sizeof *out);
    if (strlen(given) >= sizeof out->spec) {
        qh_spec_too_long(err, strlen(given));
        return -1;
    }
    char spec[sizeof out->spec]; /* a peer's name ("onednn") as its plugin's path */
    qh_spec_resolve_peer(given, spec, sizeof spec);
    memcpy(out->spec, spec, strlen(spec) + 1);
    char name[1024];
    memcpy(name, spec, strlen(spec) + 1);
    const char *options = "";
    char *colon = strchr(name, ':');
    if (colon) {
        *colon = '\0';
        options = colon + 1;
    }
    if (qh_exec_is_spec(spec)) { /* exec[,OPTIONS]:COMMAND: its own grammar (exec.h) */
        name[4] = '\0';
        options = spec + 4;
    }
    const builtin *bi = find_builtin(name);
    if (bi) {
        qmm_status st;
        qmm_status_ok(&st);
        inside(given, "open");
        out->be = bi->open(QMM_ABI_VERSION, options, &st);
        outside();
        if (!out->be) {
            out->refused = refusal(&st);
            char said[QH_CLEAN_LINE_MAX];
            said_by_backend(said, sizeof said, &st);
            snprintf(err->msg, sizeof err->msg, "backend %s: %s", shown, said);
            return -1;
        }
        qh_table_adopt(out->be, &out->table, err->msg, sizeof err->msg); /* ours: full size */
        out->has_query = out->table.query != NULL;
        return 0;
    }
    if (qh_spec_is_plugin(name))
        return open_plugin(name, options, out, err);
    qh_clean_into(shown, sizeof shown, name, strlen(name), 0);
    snprintf(err->msg, sizeof err->msg,
             "unknown backend '%s' (built-in: reference, optimized; a plugin is a path to a "
             ".so; a peer built beside qmmcheck is its folder name, e.g. onednn; "
             "exec:COMMAND runs a process)", shown);
    return -1;
}

/* Every table version has the fields up to and including impl; what follows (query, the
 * operators, close) was added over time and reads as absent when a table ends before it. */
#define QH_TABLE_MIN offsetof(qmm_backend, query)

int qh_table_adopt(const qmm_backend *raw, qmm_backend *copy, char *msg, size_t size)
{
    size_t n = raw->struct_size;
    if (n < QH_TABLE_MIN) {
        snprintf(msg, size,
                 "backend table too small: struct_size %u, the first ABI's table has at least "
                 "%zu bytes", raw->struct_size, (size_t)QH_TABLE_MIN);
        return -1;
    }
    memset(copy, 0, sizeof *copy);
    memcpy(copy, raw, n < sizeof *copy ? n : sizeof *copy);
    return 0;
}

void qh_warn_no_query(const char *spec)
{
    /* once per plugin, not once per --determinism variant of it */
    static char last[1024];
    if (strcmp(last, spec) == 0)
        return;
    snprintf(last, sizeof last, "%s", spec);
    fprintf(stderr, "qmmcheck: warning: %s has no capability query; every call is run\n", spec);
}

void qh_backend_release(qh_backend *b)
{
    if (b->be && b->table.close) {
        inside(b->spec, "close");
        b->table.close(b->be);
    }
    if (b->dl) {
        inside(b->spec, "unloading"); /* its destructors run here */
        dlclose(b->dl);
    }
    outside();
    memset(b, 0, sizeof *b);
}

qmm_status_code qh_backend_call(const qh_backend *b, qmm_call *c, qmm_status *st)
{
    inside(b->spec, "operator call");
    qmm_status_code code = qmm_backend_run_via(&b->table, b->be, c, st);
    outside();
    return code;
}

/* The capability query, asked on a copy of the call so it cannot change what runs. */
qmm_status_code qh_backend_ask(const qh_backend *b, const qmm_call *call, qmm_status *st)
{
    const qmm_backend *tab = &b->table, *self = b->be;
    qmm_status_ok(st);
    if (!tab->query)
        return QMM_OK;
    qmm_call copy = *call;
    inside(b->spec, "capability query");
    qmm_status_code code = tab->query(self, &copy, st);
    outside();
    return code == QMM_UNSUPPORTED ? QMM_UNSUPPORTED : QMM_OK;
}
