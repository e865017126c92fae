/* harness/cli/cmd_reduce.c — `qmmcheck reduce CASE --backend X`: the smallest case that still
 * fails against X the way CASE does (harness/run/reduce.h), written with its repro line.
 * Its options are one table (harness/cli/options.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/base/clean.h"
#include "harness/base/numparse.h"
#include "harness/base/strbuf.h"
#include "harness/invoke/cpu.h"
#include "harness/judge/expect.h"
#include "harness/invoke/invoke.h"
#include "harness/run/reduce.h"

enum {
    O_BACKEND = 1, O_OUT, O_PROFILE, O_MAX_TRIES, O_SECONDS, O_DATA_SET, O_ISOLATE,
    O_NO_ISOLATE, O_TIMEOUT, O_START_TIMEOUT, O_QUIET, O_CONFIRM, O_CPU
};
static const qh_option reduce_options[] = {
    {O_BACKEND, "--backend", 'b', "SPEC", 0, "the backend the case fails against (one)"},
    {O_PROFILE, "--profile", 0, "NAME", 0, "judge under this semantics profile"},
    {O_OUT, "--out", 0, "DIR", 0, "where the smallest case goes (default ./NAME-reduced, NAME the case's)"},
    {O_MAX_TRIES, "--max-tries", 0, "N", 0, "judged candidates at most (default 5000; 0: no bound)"},
    {O_SECONDS, "--seconds", 0, "T", 0, "seconds at most (default 600; 0: no bound)"},
    {O_CONFIRM, "--confirm", 0, "N", 0,
     "judge the case, its rewrite and the result N times each (default 3)"},
    {O_DATA_SET, "--data-set", 0, "N", 0, "the case's data set to use (default 0)"},
    {O_ISOLATE, "--isolate", 0, NULL, 0, "call the backend in a forked worker (plugins: default)"},
    {O_NO_ISOLATE, "--no-isolate", 0, NULL, 0, "call the backend in this process"},
    {O_TIMEOUT, "--timeout", 0, "S", 0, "seconds a call may take in the worker (default 30)"},
    {O_START_TIMEOUT, "--start-timeout", 0, "S", 0, QH_START_TIMEOUT_HELP},
    {O_QUIET, "--quiet", 'q', NULL, 0, "no progress line"},
    {O_CPU, "--cpu", 0, "CLASS", 0, "run the backend as that CPU runs it, under qemu (list --cpus)"},
    {0, NULL, 0, NULL, 0, NULL}};

const qh_command qh_reduce_usage = {
    "reduce", "CASE_DIR --backend SPEC [options]",
    "shrink a failing case to the smallest that fails the same way",
    "Judges the case as run does; when it fails (FAILED, CRASHED, TIMEOUT, ERROR, UNCHECKED),\n"
    "shrinks it while it keeps failing in the same class: batch dims, M, N, K, then parameters\n"
    "to per-tensor, values to zero, scales to 1 or powers of two. Writes the smallest case with\n"
    "its __REPRO: line (docs/formats.md, \"Reduced cases\"). --out must be new, empty, or a\n"
    "case diff or reduce wrote (replaced whole); anything else is refused.\n"
    "The case, its rewrite and the smallest case as written are each judged --confirm times,\n"
    "the last once more by the backend opened again (as a repro starts it), and must fail the\n"
    "same way every time: a backend that does not answer the same way makes the reduction\n"
    "inconclusive, and nothing is written.\n"
    "Exit status: 0 written, 1 the reduction failed, 2 usage errors (a missing CASE_DIR, an\n"
    "--out that cannot be written), a backend that could not be opened, or a case that does\n"
    "not fail, 4 inconclusive (the backend's verdicts differ), 128+N stopped by signal N.\n",
    reduce_options, 0};

#define usage(...) qh_opt_error(&qh_reduce_usage, QH_ERR_USAGE, __VA_ARGS__)
#define EXIT_INCONCLUSIVE 4 /* the backend's verdicts differ (docs/formats.md "Reduced cases") */

typedef struct reduce_args {
    const char *dir, *spec, *out, *profile;
    int isolate, quiet, data_set;
    double timeout_s;
    double start_s; /* --start-timeout as qh_isolation.start_s (0: the default) */
    const qh_cpu_target *cpu; /* --cpu (harness/invoke/cpu.h); NULL: none given */
    qh_reduce_opts ro;
} reduce_args;

/* 0, or the exit status after saying why; *done when --help was answered. */
static int parse(int argc, char **argv, reduce_args *a, int *done)
{
    memset(a, 0, sizeof *a);
    a->isolate = -1;
    a->timeout_s = QH_TIMEOUT_S_DEFAULT;
    a->ro.max_tries = 5000;
    a->ro.seconds = 600;
    qh_opt_parser p;
    qh_opt_init(&p, &qh_reduce_usage, argc, argv);
    const char *val;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        uint64_t u;
        double v;
        switch (id) {
        case QH_OPT_HELP: *done = 1; return 0;
        case QH_OPT_BAD: return usage("%s", p.error);
        case QH_OPT_ARG:
            if (a->dir)
                return usage("give one CASE_DIR (%s is a second)", val);
            a->dir = val;
            break;
        case O_BACKEND:
            if (a->spec)
                return usage("%s", "give one --backend");
            a->spec = val;
            break;
        case O_OUT:
            if (!*val)
                return usage("%s", QH_EMPTY_OUT);
            a->out = val;
            break;
        case O_PROFILE: {
            char why[2048];
            if (qh_profile_usage(val, why, sizeof why))
                return usage("%s", why);
            a->profile = val;
            break;
        }
        case O_SECONDS:
        case O_TIMEOUT:
            if (qh_parse_double(val, 0, QH_TIMEOUT_S_MAX, &v))
                return usage("%s: expected seconds >= 0", p.name);
            *(id == O_SECONDS ? &a->ro.seconds : &a->timeout_s) = v;
            break;
        case O_START_TIMEOUT:
            if (qh_opt_start_timeout(val, &a->start_s))
                return usage("--start-timeout %s: expected seconds >= 0 (0: none)", val);
            break;
        case O_MAX_TRIES:
            if (qh_parse_u64(val, UINT64_MAX, &u) != 0)
                return usage("%s: expected a number >= 0", p.name);
            a->ro.max_tries = u;
            break;
        case O_DATA_SET: /* the data sets run finds, as repro takes them */
            if (qh_parse_u64(val, QH_MAX_DATA_SET, &u) != 0)
                return usage("--data-set %s: " QH_DATA_SET_EXPECTED, val);
            a->data_set = (int)u;
            break;
        case O_CONFIRM:
            if (qh_parse_u64(val, 100, &u) != 0 || u == 0)
                return usage("%s: expected a number from 1 to 100", p.name);
            a->ro.confirm = (int)u;
            break;
        case O_ISOLATE: a->isolate = 1; break;
        case O_NO_ISOLATE: a->isolate = 0; break;
        case O_QUIET: a->quiet = 1; break;
        case O_CPU: {
            char why[1024];
            if (qh_cpu_parse(val, &a->cpu, 1, why, sizeof why) < 0)
                return usage("%s", why);
            break;
        }
        }
    }
    if (!a->dir)
        return usage("%s", "give a CASE_DIR");
    if (!a->spec)
        return usage("%s", "give --backend SPEC");
    return 0;
}

/* Whether the case can be written at `out`: a fresh directory made beside it and removed,
 * with the folders above it that this made (0), or -1 with err saying why not; before the
 * work, not after it (it found a /proc/... --out only once the reduction was done). */
static int probe_out(const char *out, qh_error *err)
{
    /* the folders above `out` that do not exist yet, deepest first */
    char made[8][4096];
    int n_made = 0;
    char up[4096];
    snprintf(up, sizeof up, "%s", out);
    for (;;) {
        size_t len = strlen(up);
        while (len > 1 && up[len - 1] == '/')
            up[--len] = '\0';
        char *slash = strrchr(up, '/');
        if (!slash || slash == up)
            break;
        *slash = '\0';
        struct stat st;
        if (lstat(up, &st) == 0 || n_made == 8)
            break;
        snprintf(made[n_made++], sizeof made[0], "%s", up);
    }
    qh_case_stage probe;
    int rc = qh_case_stage_open(out, &probe, err);
    if (rc == 0)
        qh_case_stage_discard(&probe);
    for (int i = 0; i < n_made; i++) /* deepest first: each only if empty, as this left it */
        rmdir(made[i]);
    return rc;
}

int qh_cmd_reduce(int argc, char **argv)
{
    reduce_args a;
    int done = 0;
    int rc = parse(argc, argv, &a, &done);
    if (rc || done)
        return rc;
    struct stat cs; /* a CASE_DIR that is no directory: a usage error, before any work */
    int found = stat(a.dir, &cs) == 0, e = errno, set_n;
    if (!found || !S_ISDIR(cs.st_mode) || qh_classify_path(a.dir, &set_n) == QH_REF_NAME_AT) {
        char *c = qh_clean_dup(a.dir, strlen(a.dir), 0), msg[4200];
        snprintf(msg, sizeof msg, "CASE_DIR %s: %s", c ? c : "",
                 !found                 ? strerror(e)
                 : !S_ISDIR(cs.st_mode) ? "not a directory"
                                        : "its name ends in @N, how run names a case's data set "
                                          "N: run and repro judge it ERROR; rename it");
        free(c);
        return usage("%s", msg);
    }
    qh_interrupt_install(); /* before the backend opens (interrupt.h) */
    qh_backend be;
    qh_error err;
    qh_isolation iso = {.isolate = a.isolate, .timeout_s = a.timeout_s, .start_s = a.start_s,
                        .memory_limit = QH_MEMORY_LIMIT_DEFAULT, .cpu = a.cpu};
    if (qh_backend_open_isolated(a.spec, &iso, &be, &err) != 0) {
        char *c = qh_clean_dup(err.msg, strlen(err.msg), 0); /* it quotes the spec */
        fprintf(stderr, "qmmcheck reduce: %s\n%s", c ? c : err.msg, qh_open_printed());
        free(c);
        return 2;
    }
    if (be.broken[0]) {
        /* its worker's open hung or died: every case fails alike, whatever its size, so a
         * "reduced" case would only say that the backend never ran */
        char spec[QH_CLEAN_LINE_MAX], why[sizeof be.broken + 512];
        qh_clean_into(spec, sizeof spec, be.spec, strlen(be.spec), 0);
        qh_backend_why_broken(&be, why, sizeof why);
        fprintf(stderr, "qmmcheck reduce: %s could not be opened: %s; every case would fail "
                "alike, so there is nothing to reduce\n%s", spec, why, qh_open_printed());
        qh_backend_close(&be);
        return 2;
    }
    a.ro.profile = a.profile;
    a.ro.invoke.isolate = be.isolated;
    a.ro.invoke.timeout_s = a.timeout_s;
    a.ro.progress = !a.quiet;
    /* in the current directory by default, never beside the case (an installed suite would
     * count it on the next run, and may not be writable): "suite/problem-7/" ->
     * "./problem-7-reduced" */
    char out[4096];
    size_t len = strlen(a.dir);
    while (len > 1 && a.dir[len - 1] == '/')
        len--;
    size_t base = len;
    while (base > 0 && a.dir[base - 1] != '/')
        base--;
    if (a.out)
        snprintf(out, sizeof out, "%s", a.out);
    else if (len == base || !strncmp(a.dir + base, ".", len - base) ||
             !strncmp(a.dir + base, "..", len - base)) {
        qh_backend_close(&be);
        return usage("give --out DIR: %s does not end in the case's own name", a.dir);
    } else
        snprintf(out, sizeof out, "%.*s-reduced", (int)(len - base < 4000 ? len - base : 4000),
                 a.dir + base);
    struct stat sc, so; /* the same directory by device and inode, however it is spelt */
    if (stat(a.dir, &sc) == 0 && stat(out, &so) == 0 && sc.st_dev == so.st_dev &&
        sc.st_ino == so.st_ino) {
        qh_backend_close(&be);
        return usage("--out %s is the case itself", out);
    }
    char why[sizeof err.msg]; /* refused before the work, not after it */
    if (qh_name_like_a_data_set(out)) { /* its own __REPRO line would be an ERROR */
        qh_backend_close(&be);
        char *c = qh_clean_dup(out, strlen(out), 0), msg[4200];
        snprintf(msg, sizeof msg, "--out %s: its name ends in @N, how run names a case's data "
                 "set N: the written case's own __REPRO line would be an ERROR", c ? c : "");
        free(c);
        return usage("%s", msg);
    }
    if (!qh_case_dir_replaceable(out, why, sizeof why)) {
        qh_backend_close(&be);
        return qh_opt_error(&qh_reduce_usage, QH_ERR_HINT, "--out %s", why);
    }
    if (probe_out(out, &err) != 0) {
        qh_backend_close(&be);
        char *c = qh_clean_dup(err.msg, strlen(err.msg), 0); /* it names --out */
        rc = qh_opt_error(&qh_reduce_usage, QH_ERR_HINT, "--out: %s", c ? c : err.msg);
        free(c);
        return rc;
    }
    qh_case_ref ref = {.dir = (char *)a.dir, .name = (char *)a.dir, .data_set = a.data_set};
    qh_reduce_result r;
    rc = qh_reduce_case(&ref, &be, &a.ro, &r, &err);
    if (qh_interrupted) { /* whatever the judgments under way said: they did not finish */
        const char *so_far = r.after[0] ? r.after : r.before;
        fprintf(stderr, "qmmcheck reduce: interrupted by %s after %llu tries: nothing written%s%s%s\n",
                qh_interrupt_name(qh_interrupted), (unsigned long long)r.tries,
                so_far[0] ? " (the smallest failing case so far: " : "", so_far,
                so_far[0] ? ")" : "");
        qh_reduce_result_free(&r);
        qh_backend_close(&be);
        return 128 + qh_interrupted;
    }
    if (rc == 1) {
        char *c = qh_clean_dup(a.dir, strlen(a.dir), 0);
        char *spec = qh_clean_dup(be.spec, strlen(be.spec), 0); /* argv: one clean line */
        fprintf(stderr, "qmmcheck reduce: %s does not fail against %s: it is %s%s%s%s; nothing "
                "to reduce\n", c ? c : "the case", spec ? spec : "the backend",
                qh_case_status_name(r.status), r.summary[0] ? " (" : "", r.summary,
                r.summary[0] ? ")" : "");
        free(spec);
        free(c);
    } else if (rc == 0) {
        char *c = qh_clean_dup(a.dir, strlen(a.dir), 0);
        printf("reduce: %s fails as %s\n", c ? c : "the case", r.cls);
        free(c);
        qh_meta tags;
        qh_meta_init(&tags);
        char meta[4096];
        snprintf(meta, sizeof meta, "%s/qmm.meta", a.dir);
        if (qh_meta_read_file(meta, &tags, &err) != 0)
            qh_meta_init(&tags); /* it was read once already: the case loaded */
        qh_sb prov = {0};
        if (qh_cpu_meta_class(a.cpu)) /* the reduced case's qmm.meta names the class */
            snprintf(tags.cpu_class, sizeof tags.cpu_class, "%s", qh_cpu_meta_class(a.cpu));
        qh_sb_puts(&prov, "qmmcheck reduce");
        if (a.cpu)
            qh_sb_printf(&prov, " --cpu %s", qh_cpu_name(a.cpu));
        qh_sb_puts(&prov, " --backend ");
        qh_sb_shell_word(&prov, be.spec);
        if (a.profile) {
            qh_sb_puts(&prov, " --profile ");
            qh_sb_shell_word(&prov, a.profile);
        }
        qh_repro_isolation(&prov, &be.iso); /* as the reduction judged it */
        if (a.data_set > 0)
            qh_sb_printf(&prov, " --data-set %d", a.data_set);
        qh_sb_puts(&prov, " ");
        qh_sb_shell_word(&prov, a.dir);
        char note[sizeof err.msg];
        rc = qh_reduce_write(out, &r, &be, &a.ro, &tags, prov.s ? prov.s : "", note, sizeof note,
                             &err);
        if (qh_interrupted && rc != 0) {
            /* the confirmations under way did not finish: not the backend's inconsistency */
            fprintf(stderr, "qmmcheck reduce: interrupted by %s while the reduced case was "
                    "confirmed: nothing written\n", qh_interrupt_name(qh_interrupted));
            qh_sb_free(&prov);
            qh_reduce_result_free(&r);
            qh_backend_close(&be);
            return 128 + qh_interrupted;
        }
        if (rc == 0) {
            char *n = qh_clean_dup(note, strlen(note), 0);
            if (note[0])
                printf("reduce: %s\n", n ? n : note);
            free(n);
            char *text = qh_reduce_report(&r, out, &be, a.ro.profile, "");
            text = qh_cpu_repro_in(text, a.cpu ? qh_cpu_name(a.cpu) : NULL);
            fputs(text ? text : "(out of memory)\n", stdout);
            free(text);
        }
        qh_sb_free(&prov);
    }
    if (rc < 0 || rc == 2) {
        char *c = qh_clean_dup(err.msg, strlen(err.msg), 0); /* it names paths */
        fprintf(stderr, "qmmcheck reduce: %s\n", c ? c : err.msg);
        free(c);
    }
    qh_reduce_result_free(&r);
    qh_backend_close(&be);
    return rc == 0 ? 0 : rc == 1 ? 2 : rc == 2 ? EXIT_INCONCLUSIVE : 1;
}
