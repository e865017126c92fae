/* harness/cli/cmd_fingerprint.c — `qmmcheck fingerprint`: which semantics profile a backend's
 * outputs match (harness/run/fingerprint.h does the work; this file parses and prints), with the
 * host CPU flags that select a library's kernels, since a peer's answer depends on them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/invoke/strays.h"
#include "harness/base/clean.h"
#include "harness/invoke/backends.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/invoke/cpu.h"
#include "harness/judge/expect.h"
#include "harness/run/fingerprint.h"
#include "harness/base/numparse.h"
#include "harness/io/onnx_io.h"
#include "harness/base/strbuf.h"
#include "harness/report/report.h"

#define EXIT_BAD 1
#define EXIT_USAGE 2

typedef struct fp_opts {
    const char *backend;
    const char *report; /* json:FILE */
    int isolate;        /* -1: plugins isolated, built-ins not; 0 never; 1 always */
    double timeout_s;
    double start_s; /* --start-timeout as qh_isolation.start_s (0: the default) */
    int verbose;
    const qh_cpu_target *cpu; /* --cpu (harness/invoke/cpu.h); NULL: none given */
} fp_opts;

enum {
    O_BACKEND, O_REPORT, O_ISOLATE, O_NO_ISOLATE, O_TIMEOUT, O_START_TIMEOUT, O_VERBOSE, O_CPU
};
static const qh_option fp_options[] = {
    {O_BACKEND, "--backend", 'b', "SPEC", 0, "the backend to fingerprint"},
    {O_REPORT, "--report", 0, "json:FILE", 0, "also write the result as JSON"},
    {O_ISOLATE, "--isolate", 0, NULL, 0, "run the backend in a forked worker"},
    {O_NO_ISOLATE, "--no-isolate", 0, NULL, 0, "run a plugin in process"},
    {O_TIMEOUT, "--timeout", 0, "S", 0, "seconds an isolated call may take (default 30; 0: none)"},
    {O_START_TIMEOUT, "--start-timeout", 0, "S", 0, QH_START_TIMEOUT_HELP},
    {O_VERBOSE, "--verbose", 'v', NULL, 0, "print why each case of the suite is there"},
    {O_CPU, "--cpu", 0, "CLASS", 0, "run the backend as that CPU runs it, under qemu (list --cpus)"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_fingerprint_usage = {
    "fingerprint", "--backend SPEC [--report json:FILE] [options]",
    "which semantics profile a backend's outputs match",
    "A verdict names a profile only when it matches every case the backend answered, every other\n"
    "candidate fails one, and at least 3 cases decided; a wrong rule (ties-away, truncation, wrap,\n"
    "zp-before-rounding, float64) is named as one. Otherwise the verdict is inconclusive, naming\n"
    "the forms whose cases would decide. Each case is asked twice: a backend that answers one\n"
    "otherwise the second time is not deterministic, which no profile is. Exit status: 0 a\n"
    "profile named; 1 the harness failed; 2 usage; 4 inconclusive; 5 a wrong rule, none (no\n"
    "profile matches every case) or not deterministic.",
    fp_options, 0};

#define fp_usage(...) qh_opt_error(&qh_fingerprint_usage, QH_ERR_HINT, __VA_ARGS__)

/* Returns 0, or the exit status after printing why (0 with *done set after --help). */
static int parse(int argc, char **argv, fp_opts *o, int *done)
{
    memset(o, 0, sizeof *o);
    o->isolate = -1;
    o->timeout_s = QH_TIMEOUT_S_DEFAULT;
    *done = 0;
    qh_opt_parser p;
    qh_opt_init(&p, &qh_fingerprint_usage, argc, argv);
    const char *val;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        switch (id) {
        case QH_OPT_HELP: *done = 1; return 0;
        case QH_OPT_BAD: return fp_usage("%s", p.error);
        case QH_OPT_ARG: return fp_usage("unknown argument %s", val);
        case O_BACKEND:
            if (o->backend)
                return fp_usage("%s", "give exactly one --backend");
            o->backend = val;
            break;
        case O_REPORT: {
            qh_error err; /* a special file, a link or a folder is refused, as run's --report */
            if (o->report) /* the first would be dropped without a word */
                return fp_usage("%s", "give --report once: fingerprint writes one JSON report");
            if (strncmp(val, "json:", 5) != 0 || val[5] == '\0')
                return fp_usage("--report %s: expected json:FILE", val);
            if (qh_report_check_spec(val, &err) != 0)
                return fp_usage("%s", err.msg);
            o->report = val;
            break;
        }
        case O_TIMEOUT:
            if (qh_parse_double(val, 0, QH_TIMEOUT_S_MAX, &o->timeout_s))
                return fp_usage("--timeout %s: expected seconds >= 0 (0: none)", val);
            break;
        case O_START_TIMEOUT:
            if (qh_opt_start_timeout(val, &o->start_s))
                return fp_usage("--start-timeout %s: expected seconds >= 0 (0: none)", val);
            break;
        case O_ISOLATE: o->isolate = 1; break;
        case O_NO_ISOLATE: o->isolate = 0; break;
        case O_VERBOSE: o->verbose = 1; break;
        case O_CPU: {
            char why[1024];
            if (qh_cpu_parse(val, &o->cpu, 1, why, sizeof why) < 0)
                return fp_usage("%s", why);
            break;
        }
        }
    }
    if (!o->backend)
        return fp_usage("%s", "give --backend SPEC");
    qh_error err; /* the report replaces its FILE: never the plugin it judges */
    if (o->report && qh_opt_report_not_input(o->report, &o->backend, 1, NULL, NULL, 0, &err))
        return fp_usage("%s", err.msg);
    return 0;
}

/* The /proc/cpuinfo flags by which x86 libraries pick their int8 kernels (MLAS, oneDNN:
 * vpmaddubsw's saturating int16 pairs on AVX2, exact int32 with VNNI or AMX;
 * docs/profiles.md, "Accumulation models"). */
static const char *const kernel_flags[] = {"avx2", "avx512_vnni", "avx_vnni", "amx_int8"};
#define N_KERNEL_FLAGS (sizeof kernel_flags / sizeof kernel_flags[0])

/* Which of kernel_flags the first CPU's "flags" line lists, as bits; -1 when /proc/cpuinfo
 * cannot be read or has no such line (not Linux, not x86). */
static int host_kernel_flags(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int mask = -1;
    while (mask < 0 && getline(&line, &cap, f) > 0) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "flags", 5) != 0 || !colon)
            continue;
        mask = 0;
        for (char *save = NULL, *w = strtok_r(colon + 1, " \t\n", &save); w;
             w = strtok_r(NULL, " \t\n", &save))
            for (size_t i = 0; i < N_KERNEL_FLAGS; i++)
                if (strcmp(w, kernel_flags[i]) == 0)
                    mask |= 1 << i;
    }
    free(line);
    fclose(f);
    return mask;
}

/* What kernel_flags an emulated class's CPUID shows, as host_kernel_flags' bits. */
static int class_kernel_flags(const qh_cpu_target *c)
{
    static const unsigned feature[N_KERNEL_FLAGS] = {QH_CPU_F_AVX2, QH_CPU_F_AVX512VNNI,
                                                     QH_CPU_F_AVXVNNI, QH_CPU_F_AMX};
    int mask = 0;
    for (size_t i = 0; i < N_KERNEL_FLAGS; i++)
        if (c->need & feature[i])
            mask |= 1 << i;
    return mask;
}

/* The flags of `mask` separated by `sep`, each quoted when `quoted`. */
static void sb_flag_list(qh_sb *b, int mask, const char *sep, int quoted)
{
    int n = 0;
    for (size_t i = 0; i < N_KERNEL_FLAGS; i++)
        if (mask & 1 << i)
            qh_sb_printf(b, "%s%s%s%s", n++ ? sep : "", quoted ? "\"" : "", kernel_flags[i],
                         quoted ? "\"" : "");
}

/* "spec, ort-fp32" for the profiles of `mask`, or "-" when none. */
static void sb_profile_list(qh_sb *b, qh_profile_set mask, const char *sep, int quoted)
{
    int n = 0;
    for (int p = 0; p < qmm_profile_count(); p++)
        if (mask & QH_PROFILE_BIT(p))
            qh_sb_printf(b, "%s%s%s%s", n++ ? sep : "", quoted ? "\"" : "", qmm_profile_name((qmm_profile)p),
                         quoted ? "\"" : "");
    if (n == 0 && !quoted)
        qh_sb_puts(b, "-");
}

static const char *answer_name(const qh_fp_case_result *cr)
{
    return cr->unstable ? "UNSTABLE" : cr->returned ? qmm_status_name(cr->code) : "DID-NOT-RETURN";
}

/* The combinations (REQ+ACC) that match some case their requantization under the default
 * accumulation does not: the ones whose accumulation model made a difference here. */
static qh_profile_set telling_combinations(const qh_fp_result *r)
{
    qh_profile_set tell = 0;
    for (size_t i = 0; i < r->n_cases; i++) {
        qh_profile_set m = r->cases[i].skipped ? 0 : r->cases[i].matched;
        for (int p = 0; p < qmm_profile_count(); p++) {
            int base = (int)qmm_profile_base((qmm_profile)p);
            if (base != p && (m & QH_PROFILE_BIT(p)) && !(m & QH_PROFILE_BIT(base)))
                tell |= QH_PROFILE_BIT(p);
        }
    }
    return tell;
}

/* The first case that did not return (both asks), returned once, or was unstable; n_cases
 * when none did. */
enum case_kind { DID_NOT_RETURN, ONCE, UNSTABLE };
static size_t first_case(const qh_fp_result *r, enum case_kind k)
{
    size_t i = 0;
    for (const qh_fp_case_result *c = r->cases; i < r->n_cases; i++, c++)
        if (k == DID_NOT_RETURN ? !c->returned && !c->unstable : k == ONCE ? c->once : c->unstable)
            return i;
    return i;
}

static void print_text(const qh_backend *be, const qh_fp_suite *s, const qh_fp_result *r,
                       const qh_fp_decision *d, const char *verdict, int cpu_flags, int verbose)
{
    char spec[QH_CLEAN_LINE_MAX]; /* as given on the command line: cleaned, one line */
    qh_clean_into(spec, sizeof spec, be->spec, strlen(be->spec), 0);
    printf("fingerprint of %s: %zu cases, %lld skipped (backend UNSUPPORTED)\n", spec,
           s->count, (long long)r->skipped);
    qh_sb flags = {0};
    if (cpu_flags < 0)
        qh_sb_puts(&flags, "unknown");
    else if (cpu_flags == 0)
        qh_sb_puts(&flags, "none");
    sb_flag_list(&flags, cpu_flags, " ", 0);
    if (qh_cpu_emulated(be->iso.cpu))
        printf("CPU class %s (emulated: qemu -cpu %s); its flags (select library kernels): %s\n",
               qh_cpu_name(be->iso.cpu), be->iso.cpu->model, flags.s ? flags.s : "");
    else
        printf("host CPU flags (select library kernels): %s\n", flags.s ? flags.s : "");
    qh_sb_free(&flags);
    for (size_t i = 0; i < s->count; i++) {
        const qh_fp_case_result *cr = &r->cases[i];
        qh_sb line = {0};
        qh_sb_printf(&line, "  %-42s %-16s matches: ", s->cases[i].name,
                     cr->skipped ? "SKIPPED" : answer_name(cr));
        /* a combination only where its accumulation model changed the answer */
        sb_profile_list(&line, cr->skipped ? 0 : qh_profiles_simplest(cr->matched), ", ", 0);
        if (verbose)
            qh_sb_printf(&line, "\n      (%s)%s%s", s->cases[i].why, cr->problem[0] ? " " : "",
                         cr->problem);
        if (cr->unstable) /* always: it is the verdict's evidence */
            qh_sb_printf(&line, "\n      %s", cr->again);
        printf("%s\n", line.s ? line.s : "");
        qh_sb_free(&line);
    }
    /* every requantization model; a combination where it tells something (all: --verbose) */
    qh_profile_set shown = telling_combinations(r);
    if (r->closest >= 0)
        shown |= QH_PROFILE_BIT(r->closest);
    int hidden = 0;
    printf("\n  %-32s %8s %8s\n", "profile", "matched", "total");
    for (int p = 0; p < qmm_profile_count(); p++) {
        if (!verbose && (int)qmm_profile_base((qmm_profile)p) != p &&
            !(shown & QH_PROFILE_BIT(p)) && !(r->matching_all & QH_PROFILE_BIT(p))) {
            hidden++;
            continue;
        }
        printf("  %-32s %8lld %8lld\n", qmm_profile_name((qmm_profile)p),
               (long long)r->score[p].matched, (long long)r->score[p].total);
    }
    if (hidden)
        printf("  (%d REQUANTIZATION+ACCUMULATION profiles not shown: each matches only where "
               "its requantization alone does; --verbose or --report json lists them)\n",
               hidden);
    size_t first;
    if ((first = first_case(r, DID_NOT_RETURN)) < r->n_cases) /* not evidence: not scored */
        printf("%lld of %zu cases did not return (crashed, hung or broke the protocol; not "
               "scored): the first, %s: %s\n",
               (long long)r->did_not_return, s->count, s->cases[first].name,
               r->cases[first].problem);
    if ((first = first_case(r, ONCE)) < r->n_cases) /* scored on the answer, the other said */
        printf("%lld of %zu cases answered one of their two asks only (scored on that answer; "
               "the other crashed, hung or broke the protocol): the first, %s: %s\n",
               (long long)r->returned_once, s->count, s->cases[first].name,
               r->cases[first].again);
    if (d->kind == QH_FP_UNSTABLE) {
        first = first_case(r, UNSTABLE);
        printf("verdict: not deterministic (%lld of %zu cases answered otherwise when asked "
               "again; the first, %s: %s)\n",
               (long long)r->unstable, s->count, s->cases[first].name, r->cases[first].again);
    } else if (d->kind == QH_FP_INCONCLUSIVE) {
        if (d->judged == 0)
            printf("verdict: inconclusive (no case could be judged)\n");
        else if (strchr(verdict, ',')) {
            qh_sb left = {0};
            sb_profile_list(&left, d->left, ", ", 0);
            printf("verdict: inconclusive (%s each match every case answered)\n",
                   left.s ? left.s : "");
            qh_sb_free(&left);
        }
        else
            printf("verdict: inconclusive (%s matches every case answered, but only %lld of "
                   "them exclude another profile; %d needed)\n",
                   verdict, (long long)d->deciding, QH_FP_MIN_DECIDING);
        printf("  forms that would decide: %s\n",
               d->forms[0] ? d->forms : "none in this suite");
    } else if (d->kind == QH_FP_NONE) {
        if (r->closest >= 0)
            printf("verdict: none (closest: %s, %lld of %lld cases)\n", qmm_profile_name((qmm_profile)r->closest),
                   (long long)r->score[r->closest].matched,
                   (long long)r->score[r->closest].total);
        else
            printf("verdict: none (no case could be judged)\n");
    } else {
        printf("verdict: %s (matches every case it defines)\n", verdict);
        if (d->kind == QH_FP_WRONG)
            printf("  %s is a wrong rule, not an implementation's: the spec with %s\n", verdict,
                   qmm_profile_wrong((qmm_profile)__builtin_ctzll(d->left)));
    }
    qh_profile_set also = r->matching_all & ~qh_profiles_simplest(r->matching_all);
    if (also) {
        qh_sb line = {0};
        sb_profile_list(&line, also, ", ", 0);
        printf("  also matching every case: %s (accumulation models that the cases this backend "
               "answered do not tell from the default)\n",
               line.s ? line.s : "");
        qh_sb_free(&line);
    }
}

static const char *const kind_names[] = {"profile", "wrong-rule", "none", "inconclusive",
                                         "not-deterministic"};

static int write_json(const char *spec, const qh_backend *be, const qh_fp_suite *s,
                      const qh_fp_result *r, const qh_fp_decision *d, const char *verdict,
                      int cpu_flags)
{
    qh_strays_end(); /* nothing a backend left running writes over the report (strays.h) */
    qh_sb b = {0};
    qh_sb_puts(&b, "{\n  \"backend\": \"");
    qh_sb_json(&b, be->spec);
    qh_sb_printf(&b, "\",\n  \"cases\": %zu,\n  \"skipped\": %lld,\n  \"unstable\": %lld,"
                 "\n  \"did_not_return\": %lld,\n  \"returned_once\": %lld,\n  \"profiles\": {",
                 s->count, (long long)r->skipped, (long long)r->unstable,
                 (long long)r->did_not_return, (long long)r->returned_once);
    for (int p = 0; p < qmm_profile_count(); p++)
        qh_sb_printf(&b, "%s\n    \"%s\": {\"matched\": %lld, \"total\": %lld}", p ? "," : "",
                     qmm_profile_name((qmm_profile)p), (long long)r->score[p].matched,
                     (long long)r->score[p].total);
    qh_sb_printf(&b, "\n  },\n  \"verdict\": \"%s\",\n  \"kind\": \"%s\",\n  \"judged\": %lld,"
                 "\n  \"deciding\": %lld,\n  \"deciding_forms\": \"",
                 d->kind == QH_FP_INCONCLUSIVE ? "inconclusive"
                 : d->kind == QH_FP_UNSTABLE   ? "not-deterministic"
                                               : verdict,
                 kind_names[d->kind], (long long)d->judged, (long long)d->deciding);
    qh_sb_json(&b, d->forms);
    qh_sb_puts(&b, "\",\n  \"matching\": [");
    sb_profile_list(&b, r->matching_all, ", ", 1);
    qh_sb_puts(&b, "],\n  \"closest\": ");
    if (r->closest >= 0)
        qh_sb_printf(&b, "\"%s\"", qmm_profile_name((qmm_profile)r->closest));
    else
        qh_sb_puts(&b, "null");
    if (cpu_flags < 0) {
        qh_sb_puts(&b, ",\n  \"cpu_flags\": null");
    } else {
        qh_sb_puts(&b, ",\n  \"cpu_flags\": [");
        sb_flag_list(&b, cpu_flags, ", ", 1);
        qh_sb_puts(&b, "]");
    }
    qh_sb_printf(&b, ",\n  \"cpu_class\": \"%s\"", qh_cpu_name(be->iso.cpu));
    qh_sb_puts(&b, ",\n  \"results\": [");
    for (size_t i = 0; i < s->count; i++) {
        const qh_fp_case_result *cr = &r->cases[i];
        qh_sb_printf(&b, "%s\n    {\"case\": \"%s\", \"answer\": \"%s\", \"matches\": [",
                     i ? "," : "", s->cases[i].name, cr->skipped ? "SKIPPED" : answer_name(cr));
        sb_profile_list(&b, cr->skipped ? 0 : cr->matched, ", ", 1);
        qh_sb_puts(&b, "], \"message\": \"");
        qh_sb_json(&b, cr->problem);
        qh_sb_puts(&b, "\", \"asked_again\": \"");
        if (cr->once)
            qh_sb_puts(&b, "did not return: ");
        qh_sb_json(&b, cr->unstable || cr->once ? cr->again : "same");
        qh_sb_puts(&b, "\"}");
    }
    qh_sb_puts(&b, "\n  ]\n}\n");
    if (b.failed) {
        qh_sb_free(&b);
        fprintf(stderr, "qmmcheck: fingerprint: out of memory building the report\n");
        return -1;
    }
    qh_error err; /* checked again: it may have changed while the suite ran */
    int rc = qh_report_check_spec(spec, &err) != 0
                 ? -1
                 : qh_write_file_atomic(spec + 5, b.s, b.len, &err);
    qh_sb_free(&b);
    if (rc != 0)
        qh_eprint_clean("qmmcheck: fingerprint: report: ", err.msg);
    return rc;
}

int qh_cmd_fingerprint(int argc, char **argv)
{
    fp_opts o;
    int done;
    int rc = parse(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    qh_backend be;
    qh_error err;
    qh_isolation iso = {.isolate = o.isolate, .timeout_s = o.timeout_s, .start_s = o.start_s,
                        .memory_limit = QH_MEMORY_LIMIT_DEFAULT, .cpu = o.cpu};
    if (qh_backend_open_isolated(o.backend, &iso, &be, &err) != 0) {
        fprintf(stderr, "qmmcheck: %s\n%s", err.msg, qh_open_printed());
        return EXIT_USAGE;
    }
    qh_fp_suite suite;
    if (qh_fp_suite_build(&suite) != 0) {
        fprintf(stderr, "qmmcheck: fingerprint: out of memory building the suite\n");
        qh_backend_close(&be);
        return EXIT_BAD;
    }
    qh_invoke_opts io = {.isolate = be.isolated, .timeout_s = o.timeout_s};
    qh_fp_result res;
    char msg[512];
    int exit_code = 0;
    if (qh_fingerprint_run(&be, &suite, &io, &res, msg, sizeof msg) != 0) {
        fprintf(stderr, "qmmcheck: fingerprint: %s\n%s", msg, qh_open_printed());
        exit_code = EXIT_BAD;
    } else {
        char verdict[128];
        qh_fp_verdict(&res, verdict, sizeof verdict);
        int cpu_flags = qh_cpu_emulated(o.cpu) ? class_kernel_flags(o.cpu) : host_kernel_flags();
        qh_fp_decision dec;
        qh_fp_decide(&suite, &res, &dec);
        print_text(&be, &suite, &res, &dec, verdict, cpu_flags, o.verbose);
        exit_code = dec.kind == QH_FP_INCONCLUSIVE ? QH_FP_EXIT_INCONCLUSIVE
                    : dec.kind == QH_FP_PROFILE    ? 0
                                                   : QH_FP_EXIT_NOT_A_PROFILE;
        /* the worker (and what it started) ends before the report is written, so that
         * nothing it left running can write over it (strays.h) */
        char why[512];
        qh_backend_finish(&be, why, sizeof why);
        if (o.report && write_json(o.report, &be, &suite, &res, &dec, verdict, cpu_flags) != 0)
            exit_code = EXIT_BAD;
    }
    fflush(stdout);
    qh_fp_result_free(&res);
    qh_fp_suite_free(&suite);
    qh_backend_close(&be);
    return exit_code;
}
