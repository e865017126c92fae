/* harness/cli/cmd_run.c — `qmmcheck run`, `list` and `repro`: the commands that read vector trees
 * and case directories, with the options they share (docs/formats.md). */
#define _DEFAULT_SOURCE /* realpath */
#include <fnmatch.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/invoke/backends.h"
#include "harness/invoke/cpu.h"
#include "harness/io/case.h"
#include "harness/base/clean.h"
#include "harness/io/case_tags.h"
#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/cli/options.h"
#include "harness/cli/progress.h"
#include "harness/cli/datadir.h"
#include "harness/judge/expect.h"
#include "harness/invoke/exec.h"
#include "harness/invoke/invoke.h"
#include "harness/invoke/strays.h"
#include "harness/base/numparse.h"
#include "harness/report/matrix.h"
#include "harness/report/html.h"
#include "harness/report/report.h"
#include "harness/run/runner.h"
#include "harness/base/strbuf.h"
#include "optimized/qmm_optimized.h"
#include "reference/qmm_reference.h"

#define EXIT_BAD 1
#define EXIT_USAGE 2
#define EXIT_EMPTY QH_EXIT_EMPTY /* the run judged no case (harness/cli/options.h) */
#define MAX_MULTI 64
_Static_assert(MAX_MULTI <= QH_EVAL_MAX, "one case is judged against every backend at once");
#define MAX_VARIANTS 8 /* --determinism variants per backend */
#define QH_DETERMINISM_VARIANTS "threads=1;threads=2;threads=3" /* without --variants */
#define MAX_CPUS 8     /* --cpu classes */

typedef struct opts {
    const char *backends[MAX_MULTI];
    int n_backends;
    const char *vectors[MAX_MULTI];
    int n_vectors;
    const char *reports[MAX_MULTI];
    int n_reports;
    const char *filter;
    const char *tags[MAX_MULTI]; /* --tag groups (harness/io/case_tags.h) */
    int n_tags, list_tags;
    const char *xfail;
    int xfail_strict;     /* a stale --xfail entry or an XPASS fails the run */
    const char *profile;
    int shard_i, shard_n; /* --shard I/N, 1 <= I <= N; 0/0 without it */
    int quiet, verbose, list_backends, list_profiles;
    int data_set;
    int isolate;          /* -1: plugins isolated, built-ins not; 0 never; 1 always */
    double timeout_s;
    double start_s;       /* --start-timeout as qh_isolation.start_s (0: the default) */
    uint64_t memory_limit; /* per isolated worker; 0 none; QH_MEMORY_LIMIT_DEFAULT */
    int max_skipped;      /* -1: no limit */
    int determinism;
    const char *variants;
    int allow_empty;      /* a run that judges no case exits 0, not EXIT_EMPTY */
    const qh_cpu_target *cpus[MAX_CPUS]; /* --cpu (harness/invoke/cpu.h); none: native, unnamed */
    int n_cpus, list_cpus;
    const qh_cpu_target *backend_cpu[MAX_MULTI]; /* the class backends[i] runs under */
} opts;

/* How many cases each step of collect() kept, to say why a run judged nothing. */
typedef struct found_counts {
    size_t discovered, filtered, tagged, sharded;
} found_counts;

/* Where the cases an --xfail entry names lie, under --shard (check_xfail): */
#define XF_ANY_CASE 1u   /* it names a case of the whole (filtered) list */
#define XF_ELSEWHERE 2u  /* it names a case another shard runs */

/* `qmmcheck: MESSAGE`, then where the usage is (the command's own --help). */
static int usage_error_in(const char *cmd, const char *fmt, const char *arg)
{
    char shown[512]; /* the command line is untrusted text: one clean line */
    qh_clean_into(shown, sizeof shown, arg, strlen(arg), 0);
    fprintf(stderr, "qmmcheck: ");
    fprintf(stderr, fmt, shown);
    fprintf(stderr, "\nrun 'qmmcheck %s --help' for usage\n", cmd);
    return EXIT_USAGE;
}

#define usage_error(...) usage_error_in(cmd->name, __VA_ARGS__)

/* The three commands share one table; each row says which of them take it. */
enum { RUN = 1, LIST = 2, REPRO = 4 };
enum {
    O_BACKEND, O_VECTORS, O_REPORT, O_FILTER, O_PROFILE, O_XFAIL, O_XFAIL_STRICT, O_SHARD,
    O_DATA_SET, O_ISOLATE, O_NO_ISOLATE, O_TIMEOUT, O_START_TIMEOUT, O_MEMORY_LIMIT, O_MAX_SKIPPED,
    O_ALLOW_EMPTY, O_DETERMINISM, O_VARIANTS, O_QUIET, O_VERBOSE, O_BACKENDS, O_PROFILES,
    O_CPU, O_CPUS, O_TAG, O_TAGS
};
static const qh_option run_options[] = {
    {O_BACKEND, "--backend", 'b', "SPEC", RUN,
     "a built-in backend, a plugin (.so path) or exec:COMMAND (repeatable)"},
    {O_BACKEND, "--backend", 'b', "SPEC", REPRO,
     "a built-in backend, a plugin (.so path) or exec:COMMAND (one; default reference)"},
    {O_VECTORS, "--vectors", 0, "DIR", RUN | LIST,
     "a vector tree to read (repeatable; also as plain arguments); run without it reads the installed suites"},
    {O_FILTER, "--filter", 0, "REGEX", RUN | LIST, "only the cases whose name matches (POSIX ERE)"},
    {O_TAG, "--tag", 0, "TAG[,TAG...]", RUN | LIST,
     "only the cases whose qmm.meta carries one of these tags (repeated: one of each)"},
    {O_SHARD, "--shard", 0, "I/N", RUN | LIST, "only every N-th case, starting at the I-th"},
    {O_XFAIL, "--xfail", 0, "FILE", RUN, "expected failures, one case a line (docs/formats.md)"},
    {O_XFAIL_STRICT, "--xfail-strict", 0, NULL, RUN,
     "a stale --xfail entry or an XPASS fails the run"},
    {O_REPORT, "--report", 0, "KIND:FILE", RUN,
     "also write a report: json:FILE, junit:FILE or html:FILE (repeatable)"},
    {O_PROFILE, "--profile", 0, "NAME", RUN | REPRO,
     "judge against this semantics profile (default spec)"},
    {O_DATA_SET, "--data-set", 0, "N", REPRO, "the case's test_data_set_N (default 0)"},
    {O_QUIET, "--quiet", 'q', NULL, RUN, "print only the cases that did not pass; no progress"},
    {O_VERBOSE, "--verbose", 'v', NULL, RUN, "print every case's detail"},
    {O_ISOLATE, "--isolate", 0, NULL, RUN | REPRO, "run every backend in a forked worker"},
    {O_NO_ISOLATE, "--no-isolate", 0, NULL, RUN | REPRO, "run plugins in process too"},
    {O_TIMEOUT, "--timeout", 0, "S", RUN | REPRO,
     "seconds an isolated call may take (default 30; 0: none)"},
    {O_START_TIMEOUT, "--start-timeout", 0, "S", RUN | REPRO, QH_START_TIMEOUT_HELP},
    {O_MEMORY_LIMIT, "--memory-limit", 0, "BYTES", RUN | REPRO,
     "an isolated worker's data size beyond its start's, e.g. 512M (default half the "
     "memory; 0: none)"},
    {O_MAX_SKIPPED, "--max-skipped", 0, "N", RUN, "fail when more than N cases are SKIPPED"},
    {O_ALLOW_EMPTY, "--allow-empty", 0, NULL, RUN, "a run that judged no case exits 0, not 3"},
    {O_DETERMINISM, "--determinism", 0, NULL, RUN | REPRO,
     "also check each backend gives the same bytes in variants"},
    {O_VARIANTS, "--variants", 0, "LIST", RUN | REPRO,
     "--determinism's option sets, e.g. 'threads=1;threads=2'"},
    {O_BACKENDS, "--backends", 0, NULL, LIST, "list the built-in backends instead of cases"},
    {O_TAGS, "--tags", 0, NULL, LIST,
     "list the tags of the (selected) cases with how many carry each, instead of cases"},
    {O_PROFILES, "--profiles", 0, NULL, LIST,
     "list the semantics profiles (REQUANTIZATION[+ACCUMULATION]) instead of cases"},
    {O_CPU, "--cpu", 0, "CLASS[,CLASS...]", RUN | LIST | REPRO,
     "run the backend as that CPU runs it, under qemu (several: a matrix; see list --cpus)"},
    {O_CPUS, "--cpus", 0, NULL, LIST, "list the CPU classes --cpu emulates (qemu model, what each lacks)"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_run_usage = {
    "run", "--backend SPEC [--backend SPEC...] [--vectors DIR...] [options]",
    "judge every case under the vector trees against each backend",
    "SPEC is a built-in backend (reference, optimized, and cuda where built: list --backends; a\n"
    "built-in name wins over a file of that name), a plugin (a path to a shared library:\n"
    "./libx.so, libx.so, dir/libx.so), optionally followed by :OPTIONS, e.g.\n"
    "reference:profile=spec; or exec[,OPTIONS]:COMMAND, a process speaking\n"
    "docs/exec-protocol.md. --opt=value is the same as --opt value.\n"
    "Exit status: 0 when no case FAILED, CRASHED, TIMED OUT or had an ERROR; 1 otherwise;\n"
    "2 for usage errors; 3 when the run judged no case unless --allow-empty is given;\n"
    "128+N when signal N stopped it.\n",
    run_options, RUN};
const qh_command qh_list_usage = {
    "list",
    "--vectors DIR [DIR...] [--filter REGEX] [--tag TAGS] [--shard I/N] [--tags] | --backends [--cpu CLASS] | --profiles | --cpus",
    "list the cases under the vector trees (name, tab, directory), or the built-in backends",
    NULL, run_options, LIST};
const qh_command qh_repro_usage = {
    "repro", "[--backend SPEC] [--data-set N] [--profile NAME] [--determinism [--variants LIST]] CASE_DIR",
    "judge one case against one backend (default reference), in full detail", NULL,
    run_options, REPRO};

/* "I/N" with 1 <= I <= N, each part strict (harness/base/numparse.h). */
static int parse_shard(const char *val, int *i, int *n)
{
    const char *slash = strchr(val, '/');
    char first[16];
    if (!slash || (size_t)(slash - val) >= sizeof first)
        return -1;
    memcpy(first, val, (size_t)(slash - val));
    first[slash - val] = '\0';
    int a, b;
    if (qh_parse_int(first, 1, 1000000000, &a) || qh_parse_int(slash + 1, 1, 1000000000, &b) ||
        a > b)
        return -1;
    *i = a;
    *n = b;
    return 0;
}

/* Appends the value of a repeatable option to its list, after `check` (when given) accepts it;
 * the usage error's exit status when it does not or the list is full, else 0. */
static int add_multi(const qh_command *cmd, const char **list, int *n, const char *val,
                     const char *option, int (*check)(const char *, qh_error *))
{
    qh_error err;
    if (check && check(val, &err) != 0)
        return usage_error("%s", err.msg);
    if (*n == MAX_MULTI)
        return usage_error("too many %s options", option);
    list[(*n)++] = val;
    return 0;
}

/* Parses `cmd`'s options into `o`; positional arguments go to `vectors`. Returns 0, or the
 * exit status after printing why (0 with *done set after --help). */
static int parse_opts(const qh_command *cmd, int argc, char **argv, opts *o, int *done)
{
    memset(o, 0, sizeof *o);
    o->isolate = -1;
    o->timeout_s = QH_TIMEOUT_S_DEFAULT;
    o->memory_limit = QH_MEMORY_LIMIT_DEFAULT;
    o->max_skipped = -1;
    *done = 0;
    qh_opt_parser p;
    qh_opt_init(&p, cmd, argc, argv);
    const char *val;
    int rc;
    for (int id; (id = qh_opt_next(&p, &val)) != QH_OPT_END;) {
        switch (id) {
        case QH_OPT_HELP: *done = 1; return 0;
        case QH_OPT_BAD: return usage_error("%s", p.error);
        case QH_OPT_ARG:
        case O_VECTORS:
            if (o->n_vectors == MAX_MULTI)
                return usage_error("too many directories (%s)", val);
            o->vectors[o->n_vectors++] = val;
            break;
        case O_BACKEND:
            if ((rc = add_multi(cmd, o->backends, &o->n_backends, val, "--backend", NULL)))
                return rc;
            break;
        case O_REPORT:
            if ((rc = add_multi(cmd, o->reports, &o->n_reports, val, "--report",
                                qh_report_check_spec)))
                return rc;
            break;
        case O_FILTER: o->filter = val; break;
        case O_TAG:
            if ((rc = add_multi(cmd, o->tags, &o->n_tags, val, "--tag", qh_tag_group_check)))
                return rc;
            break;
        case O_TAGS: o->list_tags = 1; break;
        case O_PROFILE: {
            char why[2048];
            if (qh_profile_usage(val, why, sizeof why))
                return usage_error("%s", why);
            o->profile = val;
            break;
        }
        case O_XFAIL: o->xfail = val; break;
        case O_XFAIL_STRICT: o->xfail_strict = 1; break;
        case O_SHARD:
            if (parse_shard(val, &o->shard_i, &o->shard_n))
                return usage_error("--shard %s: expected I/N, the I-th of N slices, with "
                                   "1 <= I <= N (e.g. 1/4)", val);
            break;
        case O_DATA_SET:
            if (qh_parse_int(val, 0, QH_MAX_DATA_SET, &o->data_set))
                return usage_error("--data-set %s: " QH_DATA_SET_EXPECTED, val);
            break;
        case O_ISOLATE: o->isolate = 1; break;
        case O_NO_ISOLATE: o->isolate = 0; break;
        case O_TIMEOUT:
            if (qh_parse_double(val, 0, QH_TIMEOUT_S_MAX, &o->timeout_s))
                return usage_error("--timeout %s: expected seconds >= 0 (0: none)", val);
            break;
        case O_START_TIMEOUT:
            if (qh_opt_start_timeout(val, &o->start_s))
                return usage_error("--start-timeout %s: expected seconds >= 0 (0: none)", val);
            break;
        case O_MEMORY_LIMIT:
            if (qh_parse_bytes(val, &o->memory_limit))
                return usage_error("--memory-limit %s: expected bytes, e.g. 512M (0: none)", val);
            break;
        case O_MAX_SKIPPED:
            if (qh_parse_int(val, 0, 1000000000, &o->max_skipped))
                return usage_error("--max-skipped %s: expected a number >= 0", val);
            break;
        case O_ALLOW_EMPTY: o->allow_empty = 1; break;
        case O_DETERMINISM: o->determinism = 1; break;
        case O_VARIANTS: o->variants = val; break;
        case O_QUIET: o->quiet = 1; break;
        case O_VERBOSE: o->verbose = 1; break;
        case O_BACKENDS: o->list_backends = 1; break;
        case O_PROFILES: o->list_profiles = 1; break;
        case O_CPUS: o->list_cpus = 1; break;
        case O_CPU: {
            char err[1024];
            if (o->n_cpus)
                return usage_error("--cpu %s: give --cpu once, its classes comma-separated", val);
            o->n_cpus = qh_cpu_parse(val, o->cpus, MAX_CPUS, err, sizeof err);
            if (o->n_cpus < 0)
                return usage_error("%s", err);
            break;
        }
        }
    }
    if (o->variants && !o->determinism) /* checked nothing, said nothing: a usage error */
        return usage_error("--variants %s: these are --determinism's option sets: give "
                           "--determinism too", o->variants);
    return 0;
}

#undef usage_error

/* Marks in xf_where[e] whether --xfail entry e names the case `name`, and one that --shard
 * left to another shard (`kept` 0). */
static void note_xfail_cases(const qh_xfail *xf, unsigned char *xf_where, const char *name,
                             int kept)
{
    for (int32_t e = 0; xf && e < xf->count; e++)
        if (xf->entries[e].pattern && fnmatch(xf->entries[e].pattern, name, 0) == 0)
            xf_where[e] |= XF_ANY_CASE | (kept ? 0 : XF_ELSEWHERE);
}

/* --vectors D --vectors D, or a tree inside another, judges the same cases again under other
 * names: said once on stderr (not refused: a long run is sometimes made so on purpose). */
static void warn_overlapping_trees(const opts *o)
{
    int repeats = 0;
    char first[2][1024] = {"", ""};
    char *real[MAX_MULTI] = {0};
    for (int i = 0; i < o->n_vectors && i < MAX_MULTI; i++)
        real[i] = realpath(o->vectors[i], NULL);
    for (int i = 0; i < o->n_vectors && i < MAX_MULTI; i++)
        for (int j = 0; j < i && real[i]; j++) {
            size_t n = real[j] ? strlen(real[j]) : 0;
            if (!real[j] || strncmp(real[i], real[j], n) != 0 ||
                (real[i][n] != '/' && real[i][n] != '\0' && strcmp(real[j], "/") != 0))
                continue;
            if (repeats++ == 0) {
                snprintf(first[0], sizeof first[0], "%s", o->vectors[i]);
                snprintf(first[1], sizeof first[1], "%s", o->vectors[j]);
            }
            break;
        }
    for (int i = 0; i < o->n_vectors && i < MAX_MULTI; i++)
        free(real[i]);
    if (repeats == 0)
        return;
    char a[1100], b[1100];
    qh_clean_into(a, sizeof a, first[0], strlen(first[0]), 200);
    qh_clean_into(b, sizeof b, first[1], strlen(first[1]), 200);
    fprintf(stderr, "qmmcheck: warning: %d --vectors tree%s the same as or inside an earlier "
            "one (the first: %s, in %s): %s cases are judged more than once\n", repeats,
            repeats == 1 ? " is" : "s are", a, b, repeats == 1 ? "its" : "their");
}

/* Where a bracket expression that starts at p ('[') ends: its ']' (a '^' and a first ']'
 * belong to it, and any [:class:], [=x=] or [.x.] inside it), or the string's end. */
static const char *bracket_end(const char *p)
{
    p++;
    if (*p == '^')
        p++;
    if (*p == ']')
        p++;
    for (; *p && *p != ']'; p++)
        if (*p == '[' && (p[1] == ':' || p[1] == '=' || p[1] == '.')) {
            const char *end = strchr(p + 2, p[1]);
            while (end && end[1] != ']')
                end = strchr(end + 1, p[1]);
            if (end)
                p = end + 1;
        }
    return p;
}

/* What makes an extended regular expression costly for glibc, outside bracket expressions:
 * *backref, whether it holds a back-reference (\1 to \9, which glibc accepts in ERE:
 * (.*)(.*)(.*)(.*)\4\3\2\1x matched for minutes); and, returned, the product of its
 * repetition counts ({m}, {m,}, {m,n}: the larger number), each of which glibc expands when it
 * compiles ('(.{0,100}){0,100}){0,100}' took 2.4 GB and '(.{0,1000}){0,1000}' 7.5 GB). */
#define FILTER_REPS_MAX 4096
static double filter_cost(const char *re, int *backref)
{
    double product = 1;
    *backref = 0;
    for (const char *p = re; *p; p++) {
        if (*p == '\\') {
            *backref |= p[1] >= '1' && p[1] <= '9';
            if (p[1])
                p++;
        } else if (*p == '[') {
            p = bracket_end(p);
            if (!*p)
                break;
        } else if (*p == '{') {
            char *end;
            double m = strtod(p + 1, &end), n = m;
            if (end != p + 1 && *end == ',' && end[1] != '}')
                n = strtod(end + 1, &end);
            else if (end != p + 1 && *end == ',')
                end++;
            if (*end == '}' && (m > n ? m : n) > 1)
                product *= m > n ? m : n;
        }
    }
    return product;
}

/* "qmmcheck: --filter FILTER: WHY", the filter cleaned; EXIT_USAGE. */
static int refuse_filter(const char *filter, const char *why)
{
    char *shown = qh_clean_dup(filter, strlen(filter), 0);
    fprintf(stderr, "qmmcheck: --filter %s: %s\n", shown ? shown : "?", why);
    free(shown);
    return EXIT_USAGE;
}

/* Discovers, filters and shards the cases. With a --xfail list (xf, NULL for none), notes in
 * xf_where where each entry's cases lie. Returns 0, or EXIT_USAGE after printing why. */
static int collect(const opts *o, const qh_xfail *xf, unsigned char *xf_where,
                   qh_case_list *list, found_counts *found)
{
    memset(list, 0, sizeof *list);
    regex_t re;
    int backref = 0;
    double reps = o->filter ? filter_cost(o->filter, &backref) : 1;
    if (reps > FILTER_REPS_MAX) {
        char why[160];
        snprintf(why, sizeof why, "its repetition counts ({m,n}) multiply to %.0f, past %d: "
                 "compiling it takes gigabytes", reps, FILTER_REPS_MAX);
        return refuse_filter(o->filter, why);
    }
    if (backref)
        return refuse_filter(o->filter, "a back-reference (\\1 to \\9): not taken, since "
                                        "matching one can take exponential time");
    if (o->filter) {
        int rc = regcomp(&re, o->filter, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char msg[256];
            regerror(rc, &re, msg, sizeof msg);
            return refuse_filter(o->filter, msg);
        }
    }
    warn_overlapping_trees(o);
    qh_case_list all = {0};
    for (int i = 0; i < o->n_vectors; i++) {
        qh_error err;
        if (qh_discover(o->vectors[i], &all, &qh_interrupted, &err) != 0) {
            qh_eprint_clean("qmmcheck: ", err.msg);
            qh_case_list_free(&all);
            if (o->filter)
                regfree(&re);
            return EXIT_USAGE;
        }
    }
    /* Shard over the filtered list, so shards stay balanced whatever the filter. */
    size_t kept = 0;
    found->discovered = all.count;
    found->filtered = found->tagged = 0;
    for (size_t i = 0; i < all.count; i++) {
        qh_case_ref *r = &all.items[i];
        int keep = !qh_interrupted && (!o->filter || regexec(&re, r->name, 0, NULL, 0) == 0);
        found->filtered += (size_t)keep;
        keep = keep && qh_case_tag_selected(r, o->tags, o->n_tags);
        found->tagged += (size_t)keep;
        if (keep && o->shard_n > 0) {
            keep = (int)(kept++ % (size_t)o->shard_n) == o->shard_i - 1;
            note_xfail_cases(xf, xf_where, r->name, keep);
        }
        if (keep) {
            all.items[list->count] = *r; /* compact in place; list borrows the array */
            list->count++;
        } else {
            free(r->dir);
            free(r->name);
        }
    }
    list->items = all.items;
    list->cap = all.cap;
    found->sharded = list->count;
    if (o->filter)
        regfree(&re);
    return 0;
}

/* Closes the backend's worker, asking the backend to close first: when that crashed or hung,
 * fills `row` ("<close>", CRASHED or TIMEOUT), prints its line (even with --quiet: it is
 * never a pass) and returns 1; else 0. */
static int finish_backend(qh_backend *be, qh_result *row, int64_t number)
{
    char why[512];
    int rc = qh_backend_finish(be, why, sizeof why);
    if (rc != QH_DIED && rc != QH_HUNG && rc != QH_MALFORMED)
        return 0; /* closed, or the run was interrupted (reported on the SUMMARY line) */
    memset(row, 0, sizeof *row);
    row->number = number;
    row->name = strdup("<close>");
    row->path = strdup("");
    row->backend = be->spec;
    row->cpu = be->iso.cpu ? qh_cpu_name(be->iso.cpu) : NULL;
    row->status = rc == QH_DIED ? QH_CRASHED : rc == QH_HUNG ? QH_TIMEOUT : QH_ERROR;
    row->summary = qh_clean_dup(why, strlen(why), QH_CLEAN_LINE_MAX);
    qh_sb line = {0};
    qh_sb_printf(&line, "%lld:%s <close> (%s) __REPRO: qmmcheck run%s%s --backend ",
                 (long long)number, qh_case_status_name(row->status),
                 row->summary ? row->summary : "", row->cpu ? " --cpu " : "",
                 row->cpu ? row->cpu : "");
    qh_sb_shell_word(&line, be->spec);
    qh_repro_isolation(&line, &be->iso);
    qh_sb_puts(&line, " --vectors DIR");
    printf("%s\n", line.s ? line.s : "");
    qh_sb_free(&line);
    fflush(stdout);
    return 1;
}

static char *join_command(int argc, char **argv)
{
    qh_sb b = {0};
    qh_sb_puts(&b, "qmmcheck");
    for (int i = 0; i < argc; i++) {
        qh_sb_puts(&b, " ");
        qh_sb_puts(&b, argv[i]);
    }
    return qh_sb_take(&b);
}

/* Prints text from a file or a plugin as one clean line (harness/base/clean.h). */
static void put_clean(const char *s, size_t n, size_t max_out, FILE *f)
{
    char *c = qh_clean_dup(s, n, max_out);
    fputs(c ? c : "(out of memory)", f);
    free(c);
}

/* The detail lines, each cleaned on its own: the harness's line breaks stay, and a line that
 * does not start with the detail indent gets it, so no detail can pass for a case line. */
static void put_detail(const char *d)
{
    while (*d) {
        const char *nl = strchr(d, '\n');
        size_t len = nl ? (size_t)(nl - d) : strlen(d);
        if (len < 4 || strncmp(d, "    ", 4) != 0)
            fputs("    ", stdout);
        put_clean(d, len, 0, stdout);
        fputc('\n', stdout);
        d += len + (nl != NULL);
    }
}

/* The case line (docs/formats.md): name and summary cleaned here, whatever produced them. */
/* The --determinism options a case line's repro command carries ("" without them): the
 * verdict may come from a variant's call, which repro makes only when asked to. */
static void determinism_words(const opts *o, char *out, size_t size)
{
    out[0] = '\0';
    if (!o->determinism)
        return;
    qh_sb b = {0};
    qh_sb_puts(&b, " --determinism");
    if (o->variants) {
        qh_sb_puts(&b, " --variants ");
        qh_sb_shell_word(&b, o->variants);
    }
    snprintf(out, size, "%s", b.s ? b.s : "");
    qh_sb_free(&b);
}

/* Prints a case's line (and its detail); with `keep` (the run writes reports) its `__REPRO:`
 * command stays in r->repro for them. A row --quiet does not print makes no command unless
 * a report keeps it. */
static void print_result(qh_result *r, const qh_case_ref *ref, const char *profile,
                         const qh_isolation *iso, const char *determinism, int quiet, int keep)
{
    int shown = !(quiet && (r->status == QH_PASSED || r->status == QH_SKIPPED));
    if (!shown && !keep)
        return; /* --quiet: skips are counted per suite (print_skips) */
    char *repro = qh_cpu_repro(qh_repro_command(ref, r->backend, profile, iso), r->cpu);
    if (repro && determinism[0]) { /* options after the case directory, as --cpu's */
        qh_sb b = {0};
        qh_sb_puts(&b, repro);
        qh_sb_puts(&b, determinism);
        free(repro);
        repro = qh_sb_take(&b);
    }
    free(r->repro);
    r->repro = keep ? repro : NULL;
    if (!shown) /* only kept, for the reports */
        return;
    printf("%lld:%s ", (long long)r->number, qh_case_status_name(r->status));
    put_clean(r->name, strlen(r->name), 0, stdout);
    if (r->summary && r->summary[0]) {
        fputs(" (", stdout);
        put_clean(r->summary, strlen(r->summary), QH_CLEAN_LINE_MAX, stdout);
        fputs(")", stdout);
    }
    printf(" __REPRO: %s\n", repro ? repro : "");
    if (r->detail && r->detail[0])
        put_detail(r->detail);
    fflush(stdout);
    if (!keep)
        free(repro);
}

/* How the options isolate a backend (--isolate/--no-isolate, --timeout, --start-timeout,
 * --memory-limit). */
static qh_isolation isolation_of(const opts *o)
{
    return (qh_isolation){.isolate = o->isolate, .timeout_s = o->timeout_s, .start_s = o->start_s,
                          .memory_limit = o->memory_limit};
}

static int open_backends(const opts *o, qh_backend *bes)
{
    qh_isolation iso = isolation_of(o);
    for (int i = 0; i < o->n_backends; i++) {
        qh_error err;
        iso.cpu = o->backend_cpu[i];
        if (qh_backend_open_isolated(o->backends[i], &iso, &bes[i], &err) != 0) {
            fprintf(stderr, "qmmcheck: %s\n%s", err.msg, qh_open_printed());
            for (int j = 0; j < i; j++)
                qh_backend_close(&bes[j]);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The backend with extra options appended: "reference" + "threads=2" -> "reference:threads=2",
 * "x.so:isa=avx2" + "threads=2" -> "x.so:isa=avx2,threads=2". */
static void variant_spec(const char *base, const char *extra, char *out, size_t size)
{
    if (qh_exec_variant_spec(base, extra, out, size))
        return; /* "exec:CMD" + "threads=2" -> "exec,threads=2:CMD" */
    const char *colon = strchr(base, ':');
    int has_opts = colon && colon[1] != '\0';
    snprintf(out, size, "%s%s%s", base, has_opts ? "," : colon ? "" : ":", extra);
}

/* --cpu A,B,...: every backend once per class, each (backend, class) a backend of its own,
 * so that a case's rows are the columns of the matrix. -1 when that makes too many. */
static int expand_cpus(opts *o)
{
    if (o->n_cpus == 0)
        return 0;
    if (o->n_backends * o->n_cpus > MAX_MULTI)
        return -1;
    const char *given[MAX_MULTI];
    memcpy(given, o->backends, sizeof given);
    int k = 0;
    for (int i = 0; i < o->n_backends; i++)
        for (int c = 0; c < o->n_cpus; c++) {
            o->backends[k] = given[i];
            o->backend_cpu[k++] = o->cpus[c];
        }
    o->n_backends = k;
    return 0;
}

/* Everything one `qmmcheck run` holds, from its options to its rows. */
typedef struct run_state {
    opts o;
    qh_xfail xf;
    qh_case_list list;
    found_counts found;
    qh_backend bes[MAX_MULTI];
    qh_eval_opts eos[MAX_MULTI];
    qh_backend variants[MAX_MULTI][MAX_VARIANTS];
    qh_result *results; /* one row per case and backend, and room for one "<close>" row and
                         * MAX_VARIANTS more per backend: a variant is a "<variant>" row (it
                         * did not open) or open, and then perhaps a "<close>" row */
    size_t k;           /* the rows filled */
    qh_run_summary sum;
    char shard[32];     /* "I/N" for the SUMMARY line and the reports, under --shard */
    unsigned char *xf_where; /* per --xfail entry: XF_ANY_CASE, XF_ELSEWHERE (--shard only) */
    char *variant_specs[MAX_MULTI * MAX_VARIANTS]; /* owned: the "<variant>" rows' backends */
    int n_variant_specs;
    int64_t n_marked;   /* rows that kept where their mismatches lie (the HTML report) */
} run_state;

/* Parses the options, clears the reports, reads --xfail and collects the cases. Returns 0,
 * or the exit status after printing why. */
static int prepare_run(int argc, char **argv, run_state *r, int *done)
{
    opts *o = &r->o;
    int rc = parse_opts(&qh_run_usage, argc, argv, o, done);
    if (rc || *done)
        return rc;
    if (o->n_backends == 0)
        return usage_error_in("run", "%s", "run: give at least one --backend");
    if (expand_cpus(o) != 0)
        return usage_error_in("run", "%s", "run: too many --backend and --cpu combinations");
    if (o->n_vectors == 0 && !(o->vectors[o->n_vectors++] = qh_default_vectors()))
        return EXIT_USAGE; /* qh_default_vectors said where it looked */
    for (int i = 0; i < o->n_reports; i++) {
        qh_error err; /* every spec good and each its own file before any is cleared */
        if (qh_report_check_spec(o->reports[i], &err) != 0 ||
            qh_opt_report_not_input(o->reports[i], o->backends, o->n_backends, o->xfail,
                                    o->vectors, o->n_vectors, &err) != 0 ||
            (i + 1 == o->n_reports && qh_report_check_distinct(o->reports, i + 1, &err) != 0)) {
            qh_eprint_clean("qmmcheck: ", err.msg);
            return EXIT_USAGE;
        }
    }
    for (int i = 0; i < o->n_reports; i++) {
        qh_error err;
        if (qh_report_clear(o->reports[i], &err) != 0) {
            qh_eprint_clean("qmmcheck: ", err.msg);
            return EXIT_USAGE;
        }
    }
    if (o->xfail) {
        qh_error err;
        if (qh_xfail_read(o->xfail, &r->xf, &err) != 0) {
            qh_eprint_clean("qmmcheck: --xfail: ", err.msg);
            return EXIT_USAGE;
        }
    }
    r->xf_where = calloc((size_t)r->xf.count + 1, 1);
    if (!r->xf_where) {
        fprintf(stderr, "qmmcheck: out of memory\n");
        rc = EXIT_BAD;
    } else {
        rc = collect(o, &r->xf, r->xf_where, &r->list, &r->found);
    }
    if (rc) {
        qh_xfail_free(&r->xf);
        free(r->xf_where);
    }
    return rc;
}

/* The row of a --determinism variant that could not be opened: "<variant>", its status
 * (TIMEOUT for an open that hung, CRASHED for one that died, ERROR otherwise), printed at
 * once (even with --quiet: it is never a pass) and counted. */
static void variant_row(run_state *r, const char *spec, qh_case_status status, const char *why,
                        const qh_isolation *iso)
{
    const qh_cpu_target *cpu = iso->cpu;
    qh_result *row = &r->results[r->k];
    memset(row, 0, sizeof *row);
    row->number = (int64_t)r->k + 1;
    row->name = strdup("<variant>");
    row->path = strdup("");
    row->backend = r->variant_specs[r->n_variant_specs++] = strdup(spec);
    row->cpu = cpu ? qh_cpu_name(cpu) : NULL;
    row->status = status;
    row->summary = qh_clean_dup(why, strlen(why), QH_CLEAN_LINE_MAX);
    qh_sb line = {0};
    qh_sb_printf(&line, "%lld:%s <variant> (%s) __REPRO: qmmcheck run%s%s --backend ",
                 (long long)row->number, qh_case_status_name(status),
                 row->summary ? row->summary : "", row->cpu ? " --cpu " : "",
                 row->cpu ? row->cpu : "");
    qh_sb_shell_word(&line, spec);
    qh_repro_isolation(&line, iso);
    qh_sb_puts(&line, " --vectors DIR");
    printf("%s\n", line.s ? line.s : "");
    fflush(stdout);
    qh_sb_free(&line);
    r->sum.counts[status]++;
    r->sum.total++;
    r->k++;
}

/* What to do with a variant that could not be opened (its spec, the row's status, why). */
typedef void variant_failed_fn(void *ctx, const char *spec, qh_case_status status,
                               const char *why);

/* Opens the --determinism variants of backend `be` (`variants`: ';'-separated option sets;
 * NULL: QH_DETERMINISM_VARIANTS) into out[MAX_VARIANTS], for run and repro alike. A variant
 * the backend refuses (its entry point answers INVALID_ARGUMENT or UNSUPPORTED: an option it
 * does not know) is left out with one line on stderr. A variant whose open crashed, hung past
 * --timeout or failed otherwise is not a refusal: a line on stderr and, where failed is not
 * NULL, failed(...) with the row's status (CRASHED, TIMEOUT or ERROR); counted in *n_failed.
 * Returns how many are open. */
static int open_variants_of(const qh_backend *be, const char *variants, qh_backend *out,
                            variant_failed_fn *failed, void *ctx, int *n_failed)
{
    char list[1024];
    snprintf(list, sizeof list, "%s", variants ? variants : QH_DETERMINISM_VARIANTS);
    int n = 0;
    *n_failed = 0;
    for (char *save = NULL, *v = strtok_r(list, ";", &save); v && n < MAX_VARIANTS;
         v = strtok_r(NULL, ";", &save)) {
        char spec[2048];
        variant_spec(be->spec, v, spec, sizeof spec);
        qh_error err;
        qh_isolation iso = be->iso; /* its CPU class too */
        int opened = qh_backend_open_isolated(spec, &iso, &out[n], &err) == 0;
        const char *why = !opened ? err.msg : out[n].broken[0] ? out[n].broken : NULL;
        if (!why) {
            n++;
            continue;
        }
        int refused = !opened && out[n].refused;
        char said[sizeof out[n].broken + 512];
        int printed = !opened;
        if (opened && out[n].captured_len) { /* what it printed before its open hung or died */
            snprintf(said, sizeof said, "%s", why);
            qh_append_open_printed(said, sizeof said, &out[n]);
            why = said;
            printed = 1;
        }
        fputs("qmmcheck: --determinism: variant ", stderr);
        put_clean(spec, strlen(spec), 0, stderr);
        fprintf(stderr, " %s: ", refused ? "left out" : "cannot be opened");
        put_clean(why, strlen(why), 0, stderr);
        fprintf(stderr, "\n%s", printed ? qh_open_printed() : "");
        qh_case_status status = QH_ERROR;
        if (opened && out[n].broken_how == QH_HUNG)
            status = QH_TIMEOUT;
        else if (opened && out[n].broken_how == QH_DIED)
            status = QH_CRASHED;
        /* an interrupted open is neither: the SUMMARY line says the run was interrupted */
        if (!refused && !(opened && out[n].broken_how == QH_INTERRUPTED)) {
            (*n_failed)++;
            if (failed)
                failed(ctx, spec, status, why);
        }
        if (opened)
            qh_backend_close(&out[n]);
    }
    return n;
}

/* run: a variant that could not be opened is a "<variant>" row of its backend j */
typedef struct variant_ctx {
    run_state *r;
    int j;
} variant_ctx;

static void variant_failed_row(void *ctx, const char *spec, qh_case_status status,
                               const char *why)
{
    variant_ctx *c = ctx;
    variant_row(c->r, spec, status, why, &c->r->bes[c->j].iso);
}

static int open_variants(run_state *r, int j)
{
    variant_ctx c = {r, j};
    int failed;
    return open_variants_of(&r->bes[j], r->o.variants, r->variants[j], variant_failed_row, &c,
                            &failed);
}

/* How each backend is judged: the run's options, its isolation, its --determinism variants. */
static void set_eval_opts(run_state *r)
{
    const opts *o = &r->o;
    for (int j = 0; j < o->n_backends; j++) {
        qh_eval_opts *eo = &r->eos[j];
        *eo = (qh_eval_opts){.verbose = o->verbose, .profile = o->profile};
        eo->invoke.isolate = r->bes[j].isolated;
        eo->invoke.timeout_s = o->timeout_s;
        eo->determinism = o->determinism;
        for (int i = 0; i < o->n_reports; i++) /* the HTML report draws where mismatches lie */
            eo->marks |= strncmp(o->reports[i], "html:", 5) == 0;
        if (o->determinism) {
            eo->n_variants = open_variants(r, j);
            eo->variants = r->variants[j];
        }
    }
}

/* Judges every case against every backend, printing each row, until done or interrupted;
 * on a terminal, with the progress line under the rows (harness/cli/progress.h). */
static void run_cases(run_state *r)
{
    qh_progress pr;
    qh_progress_start(&pr, r->o.quiet, "cases", "failed");
    char det[1024];
    determinism_words(&r->o, det, sizeof det);
    uint64_t total = (uint64_t)r->list.count * (uint64_t)r->o.n_backends, failures = 0;
    for (size_t i = 0; i < r->list.count && !qh_interrupted; i++) {
        /* every backend judged at once: the case loaded and its expectation computed once */
        qh_result *res = &r->results[r->k];
        int n = r->o.n_backends;
        qh_eval_cases(&r->list.items[i], n, r->bes, r->eos, res);
        if (qh_interrupted) {
            /* the case under way when the signal came has no verdict: left out */
            for (int j = 0; j < n; j++) {
                qh_result_free(&res[j]);
                memset(&res[j], 0, sizeof res[j]);
            }
            break;
        }
        for (int j = 0; j < n; j++, res++) {
            res->number = (int64_t)r->k + 1;
            /* backend= matches a name only an in-process table gives (qh_eval_case) */
            qh_xfail_apply(&r->xf, res->backend_name, res);
            r->sum.counts[res->status]++;
            r->sum.total++;
            failures += qh_case_status_is_bad(res->status) != 0;
            if (res->marks && ++r->n_marked > QH_HTML_MAX_PICTURES) { /* never drawn */
                qh_marks_free(res->marks);
                free(res->marks);
                res->marks = NULL;
            }
            qh_progress_hide(&pr);
            print_result(res, &r->list.items[i], r->o.profile, &r->bes[j].iso, det, r->o.quiet,
                         r->o.n_reports > 0);
            qh_progress_show(&pr);
            r->k++;
            qh_progress_update(&pr, r->k, total, failures, -1);
        }
    }
    qh_progress_end(&pr);
}

/* Closes one backend or variant; a close that crashed, hung or answered garbage adds its
 * "<close>" row. */
static void finish_one(run_state *r, qh_backend *be)
{
    if (finish_backend(be, &r->results[r->k], (int64_t)r->k + 1)) {
        r->sum.counts[r->results[r->k].status]++;
        r->sum.total++;
        r->k++;
    }
}

/* Closes each backend and each of its --determinism variants: a variant's close is a call
 * into the backend like any other, and its crash is a row as the backend's own is. */
static void finish_backends(run_state *r)
{
    for (int j = 0; j < r->o.n_backends; j++) {
        finish_one(r, &r->bes[j]);
        for (int32_t v = 0; v < r->eos[j].n_variants; v++)
            finish_one(r, &r->eos[j].variants[v]);
    }
}

/* Whether this run can tell that --xfail entry i is stale. Under --shard, an entry naming a
 * case another shard runs cannot be judged by one shard (its row may fail there), and one
 * naming no case at all is left to shard 1, so that N shards report it once (docs/ci.md). */
static int xfail_checked_here(const run_state *r, int32_t i)
{
    if (r->o.shard_n == 0)
        return 1;
    if (r->xf_where[i] & XF_ELSEWHERE)
        return 0;
    return (r->xf_where[i] & XF_ANY_CASE) || r->o.shard_i == 1;
}

/* Each --xfail entry that waived no row is warned about on stderr; under --xfail-strict it
 * also becomes an ERROR row named "<xfail>" (so reports and the SUMMARY show it). Not after
 * an interruption: the entries were not all given their chance. */
static void check_xfail(run_state *r)
{
    if (qh_interrupted)
        return;
    for (int32_t i = 0; i < r->xf.count; i++) {
        char why[1024];
        if (!xfail_checked_here(r, i) || !qh_xfail_stale(&r->xf, i, why, sizeof why))
            continue;
        /* the entry is text from a file: cleaned like any name before it reaches a terminal */
        char *shown = qh_clean_dup(why, strlen(why), QH_CLEAN_LINE_MAX);
        fprintf(stderr, "qmmcheck: %s: %s\n", r->o.xfail_strict ? "error" : "warning",
                shown ? shown : "(out of memory)");
        if (!r->o.xfail_strict) {
            free(shown);
            continue;
        }
        qh_result *grown = realloc(r->results, sizeof *grown * (r->k + 1));
        if (!grown) {
            free(shown);
            return;
        }
        r->results = grown;
        qh_result *row = &r->results[r->k];
        *row = (qh_result){.number = (int64_t)r->k + 1, .status = QH_ERROR};
        row->name = strdup("<xfail>");
        row->path = strdup(r->xf.path ? r->xf.path : "");
        row->backend = r->xf.entries[i].backend ? r->xf.entries[i].backend : "*";
        row->summary = shown;
        printf("%lld:ERROR <xfail> (%s) __REPRO: qmmcheck run ... --xfail ",
               (long long)row->number, row->summary ? row->summary : "");
        put_clean(row->path, strlen(row->path), 0, stdout);
        putchar('\n');
        r->sum.counts[QH_ERROR]++;
        r->sum.total++;
        r->k++;
    }
    fflush(stdout);
}

/* --quiet: the SKIPPED rows as one line per suite and backend, in the order they came,
 * with the first row's reason and how many others gave another: "SKIPPED 386 in
 * edge/OP/ties (unsupported: a is 3-D; 12 with other reasons)". Sorted once by (backend,
 * suite, row) so that a run of 100,000 skipped rows costs a sort, not their square. */
typedef struct skip_row {
    size_t row;
    const char *backend;
    char *suite;
    size_t group_first; /* the first row of its group, once grouped */
    int64_t count, others;
} skip_row;

static int by_group(const void *a, const void *b)
{
    const skip_row *x = a, *y = b;
    /* one backend's rows share its name's pointer (as the rows' grouping always compared) */
    int c = (x->backend > y->backend) - (x->backend < y->backend);
    if (c == 0)
        c = strcmp(x->suite, y->suite);
    return c ? c : (x->row > y->row) - (x->row < y->row);
}

static int by_first_row(const void *a, const void *b)
{
    const skip_row *x = a, *y = b;
    return (x->group_first > y->group_first) - (x->group_first < y->group_first);
}

static void print_skip_line(const run_state *r, const skip_row *g)
{
    const qh_result *x = &r->results[g->row];
    printf("SKIPPED %lld in ", (long long)g->count);
    put_clean(g->suite, strlen(g->suite), QH_CLEAN_LINE_MAX, stdout);
    if (r->o.n_backends > 1) {
        fputs(" on ", stdout);
        put_clean(x->backend, strlen(x->backend), QH_CLEAN_LINE_MAX, stdout);
    }
    fputs(" (", stdout);
    put_clean(x->summary ? x->summary : "", x->summary ? strlen(x->summary) : 0,
              QH_CLEAN_LINE_MAX, stdout);
    if (g->others)
        printf("; %lld with other reasons", (long long)g->others);
    fputs(")\n", stdout);
}

static void print_skips(const run_state *r)
{
    if (!r->o.quiet)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->k; i++)
        n += r->results[i].status == QH_SKIPPED;
    skip_row *s = calloc(n ? n : 1, sizeof *s);
    size_t filled = 0;
    for (size_t i = 0; s && i < r->k; i++) {
        if (r->results[i].status != QH_SKIPPED)
            continue;
        s[filled] = (skip_row){.row = i, .backend = r->results[i].backend,
                               .suite = qh_report_suite(r->results[i].name)};
        if (!s[filled++].suite)
            goto out;
    }
    if (!s)
        return;
    qsort(s, n, sizeof *s, by_group);
    /* each group's first element (its earliest row) gets the group's counts; the rest are
     * dropped, and the groups are put back in the order their first rows came */
    size_t groups = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        skip_row g = s[i];
        g.count = 0;
        g.group_first = s[i].row;
        const qh_result *x = &r->results[s[i].row];
        for (; j < n && s[j].backend == s[i].backend && strcmp(s[j].suite, s[i].suite) == 0;
             j++) {
            const qh_result *y = &r->results[s[j].row];
            g.count++;
            g.others += strcmp(x->summary ? x->summary : "", y->summary ? y->summary : "") != 0;
            if (j > i)
                free(s[j].suite);
        }
        s[groups++] = g;
        i = j;
    }
    qsort(s, groups, sizeof *s, by_first_row);
    for (size_t i = 0; i < groups; i++)
        print_skip_line(r, &s[i]);
    filled = groups;
out:
    for (size_t i = 0; i < filled; i++)
        free(s[i].suite);
    free(s);
    fflush(stdout);
}

/* Under several --cpu classes, the rows as a matrix (harness/report/matrix.h). */
static void print_matrix(const run_state *r)
{
    qh_matrix m;
    if (r->o.n_cpus < 2 || qh_matrix_build(r->results, r->k, &m) != 0)
        return;
    qh_matrix_print(&m, r->o.quiet, stdout);
    qh_matrix_free(&m);
    fflush(stdout);
}

/* The SUMMARY line, with the run's duration since t0, the shard it ran (so that N shards'
 * logs can be told apart) and the signal that stopped it, if any. */
static void summarize(run_state *r, int sig, double t0)
{
    qh_run_summary *sum = &r->sum;
    if (sig)
        sum->interrupted = sig == SIGINT ? "SIGINT" : "SIGTERM";
    if (r->o.shard_n > 0) {
        snprintf(r->shard, sizeof r->shard, "%d/%d", r->o.shard_i, r->o.shard_n);
        sum->shard = r->shard;
    }
    sum->seconds = qh_mono_seconds() - t0;

    char line[512];
    qh_summary_format(sum, line, sizeof line);
    printf("SUMMARY: %s (%.3f s)%s%s%s%s\n", line, sum->seconds,
           sum->shard ? " shard " : "", sum->shard ? sum->shard : "",
           sig ? " interrupted by " : "", sig ? sum->interrupted : "");
    fflush(stdout);
}

/* Who skipped the skipped rows, for the messages: "the backend answered UNSUPPORTED", "the
 * reference cannot judge them under the profile", or both with their counts (a run whose
 * reference could not judge a case under --profile blamed the backend). */
static void skipped_by(const run_state *r, char *buf, size_t size)
{
    int64_t backend = 0, reference = 0;
    const char *first = NULL; /* the backend of the first row a backend skipped */
    int several = 0;          /* ... and another backend skipped rows too */
    for (size_t i = 0; i < r->k; i++)
        if (r->results[i].status == QH_SKIPPED) {
            if (r->results[i].reason == QH_REASON_REFERENCE_CANNOT_JUDGE) {
                reference++;
                continue;
            }
            backend++;
            const char *b = r->results[i].backend ? r->results[i].backend : "";
            if (!first)
                first = b;
            else if (strcmp(first, b) != 0)
                several = 1;
        }
    if (reference == 0 && r->o.n_backends > 1 && first && !several) {
        char spec[160];
        qh_clean_into(spec, sizeof spec, first, strlen(first), 120);
        snprintf(buf, size, "backend %s answered UNSUPPORTED", spec);
    } else if (reference == 0)
        snprintf(buf, size, "%s answered UNSUPPORTED", several ? "the backends" : "the backend");
    else if (backend == 0)
        snprintf(buf, size, "the reference cannot judge them under the profile");
    else
        snprintf(buf, size, "%lld: the backend answered UNSUPPORTED; %lld: the reference "
                 "cannot judge them under the profile", (long long)backend, (long long)reference);
}

/* Why a run judged no case, for the EXIT_EMPTY message (into buf). */
static const char *empty_reason(const run_state *r, char *buf, size_t size)
{
    const found_counts *f = &r->found;
    if (f->discovered == 0)
        return "no case was found under the --vectors directories";
    if (f->filtered == 0)
        return "the --filter matched no case";
    if (f->tagged == 0)
        return "no case carries the --tag tags (qmmcheck list --tags --vectors DIR lists them)";
    if (f->sharded == 0)
        return "the --shard holds no case";
    if (r->sum.total == 0)
        return "no case ran";
    char who[160];
    skipped_by(r, who, sizeof who);
    snprintf(buf, size, "every case was SKIPPED (%s)", who);
    return buf;
}

/* A backend that supports nothing must never look green. */
static void warn_mostly_skipped(const run_state *r)
{
    const qh_run_summary *sum = &r->sum;
    int64_t skipped = sum->counts[QH_SKIPPED];
    if (sum->total > 0 && 2 * skipped > sum->total) {
        char who[160];
        skipped_by(r, who, sizeof who);
        printf("WARNING: %lld of %lld cases were SKIPPED (%s): this run checked almost "
               "nothing\n", (long long)skipped, (long long)sum->total, who);
        fprintf(stderr, "qmmcheck: WARNING: %lld of %lld cases were SKIPPED\n",
                (long long)skipped, (long long)sum->total);
    }
}

/* The exit status the rows give (docs/formats.md, "Exit status"), before the reports: 1 for
 * a bad status or more skipped than --max-skipped, 3 for a run that judged no case. */
static int exit_status(const run_state *r, int sig)
{
    const qh_run_summary *sum = &r->sum;
    int exit_code = 0;
    for (int s = 0; s < QH_STATUS_COUNT; s++)
        if (sum->counts[s] && qh_case_status_is_bad((qh_case_status)s))
            exit_code = EXIT_BAD;
    warn_mostly_skipped(r);
    if (r->o.xfail_strict && sum->counts[QH_XPASS]) {
        printf("FAILED: %lld expected failures passed (XPASS), under --xfail-strict\n",
               (long long)sum->counts[QH_XPASS]);
        exit_code = EXIT_BAD;
    }
    int64_t skipped = sum->counts[QH_SKIPPED];
    if (r->o.max_skipped >= 0 && skipped > r->o.max_skipped) {
        printf("FAILED: %lld cases skipped, more than --max-skipped %d\n", (long long)skipped,
               r->o.max_skipped);
        exit_code = EXIT_BAD;
    }
    char why[400];
    if (!sig && exit_code == 0 && sum->total == skipped && !r->o.allow_empty)
        exit_code = qh_exit_empty("qmmcheck", "no case was judged",
                                  empty_reason(r, why, sizeof why));
    return exit_code;
}

/* Writes each --report; one that cannot be written makes a passing or empty run exit 1. */
static int write_reports(const run_state *r, int argc, char **argv, int exit_code)
{
    char *command = join_command(argc + 1, argv - 1);
    for (int i = 0; i < r->o.n_reports; i++) {
        qh_error err;
        if (qh_report_write(r->o.reports[i], command, r->results, r->k, &r->sum, &err) != 0) {
            qh_eprint_clean("qmmcheck: report: ", err.msg);
            if (exit_code == 0 || exit_code == EXIT_EMPTY)
                exit_code = EXIT_BAD;
        }
    }
    free(command);
    return exit_code;
}

/* Frees the rows, closes every backend and its variants, frees the cases and --xfail. */
static void free_run(run_state *r)
{
    for (size_t i = 0; i < r->k; i++)
        qh_result_free(&r->results[i]);
    free(r->results);
    for (int j = 0; j < r->o.n_backends; j++) {
        for (int32_t v = 0; v < r->eos[j].n_variants; v++)
            qh_backend_close(&r->eos[j].variants[v]);
        qh_backend_close(&r->bes[j]);
    }
    qh_case_list_free(&r->list);
    qh_xfail_free(&r->xf);
    free(r->xf_where);
    for (int i = 0; i < r->n_variant_specs; i++)
        free(r->variant_specs[i]);
}

int qh_cmd_run(int argc, char **argv)
{
    run_state r;
    memset(&r, 0, sizeof r);
    int done;
    /* before the search of the trees, which can take long (and after which the old reports
     * are gone): a signal then ends the search, and the run writes its (empty) reports */
    qh_interrupt_install();
    /* a standard output whose reader went away (| head) must not kill the run before its
     * reports are written: its writes fail instead, and the run says so at the end */
    signal(SIGPIPE, SIG_IGN);
    int rc = prepare_run(argc, argv, &r, &done);
    if (rc || done)
        return rc;
    rc = open_backends(&r.o, r.bes);
    if (rc) {
        qh_case_list_free(&r.list);
        qh_xfail_free(&r.xf);
        free(r.xf_where);
        return rc;
    }
    r.results = calloc((r.list.count + 1 + MAX_VARIANTS) * (size_t)r.o.n_backends,
                       sizeof *r.results);
    if (!r.results) {
        fprintf(stderr, "qmmcheck: out of memory\n");
        return EXIT_BAD;
    }
    set_eval_opts(&r);
    r.sum.xpass_fails = r.o.xfail_strict;

    double t0 = qh_mono_seconds();
    run_cases(&r);
    finish_backends(&r);
    /* what a backend left running outside its worker's group dies before the reports */
    int strays = qh_strays_end();
    if (strays > 0)
        fprintf(stderr, "qmmcheck: warning: killed %d process%s a backend left running "
                        "(none that qmmcheck started: one that left its worker's group)\n",
                strays,
                strays == 1 ? "" : "es");
    check_xfail(&r);
    print_skips(&r);
    print_matrix(&r);
    int sig = qh_interrupted;
    summarize(&r, sig, t0);
    int exit_code = exit_status(&r, sig);
    exit_code = write_reports(&r, argc, argv, exit_code);
    if (fflush(stdout) != 0 || ferror(stdout))
        fprintf(stderr, "qmmcheck: standard output could not be written (closed?): the case "
                        "lines are not all there%s\n",
                r.o.n_reports ? "; the reports are complete" : "");
    free_run(&r);
    return sig ? 128 + sig : exit_code;
}

/* `list --backends`: the built-in names, one a line (scripts grep them), and under
 * `optimized` each variant of its kernel table with whether this CPU runs it. */
static void list_backends(void)
{
    for (int i = 0; qh_builtin_backends[i]; i++) {
        printf("%s\n", qh_builtin_backends[i]);
        if (strcmp(qh_builtin_backends[i], "optimized") != 0)
            continue;
        qmm_optimized_variant v;
        for (int k = 0; qmm_optimized_variant_info(k, &v); k++)
            printf("  optimized:isa=%-12s %-9s %s (%dx%d, K group %d, %s layout)%s%s\n", v.name,
                   v.missing ? "not here" : "available", v.kernel, v.mr, v.nr, v.kgroup,
                   v.layout, v.missing ? ": " : "", v.missing ? v.missing : "");
        /* what automatic dispatch picks here (under --cpu, what the emulated CPU makes it pick) */
        qmm_status st;
        qmm_backend *auto_be = qmm_optimized_open(QMM_ABI_VERSION, "threads=1", &st);
        if (auto_be) {
            printf("  optimized:isa=%-12s picks %s\n", "auto", qmm_optimized_isa(auto_be));
            auto_be->close(auto_be);
        }
    }
    /* not a name of its own: it needs a command (docs/exec-protocol.md) */
    printf("exec:COMMAND  a process speaking docs/exec-protocol.md "
           "(exec[,OPTIONS]:COMMAND)\n");
}

/* list --tags: "TAG<tab>CASES" by tag, then a count on stderr; consumes the list. */
static int list_tags(qh_case_list *list)
{
    qh_tag_counts tc = {0};
    int rc = 0;
    for (size_t i = 0; i < list->count && rc == 0; i++)
        rc = qh_tag_counts_add(&tc, &list->items[i]);
    qh_tag_counts_sort(&tc);
    for (size_t i = 0; i < tc.count && rc == 0; i++) {
        put_clean(tc.items[i].tag, strlen(tc.items[i].tag), 0, stdout);
        printf("\t%zu\n", tc.items[i].cases);
    }
    fflush(stdout);
    if (rc == 0)
        fprintf(stderr, "%zu tags over %zu cases (%zu without tags, %zu whose qmm.meta cannot "
                        "be read)\n", tc.count, list->count, tc.untagged, tc.unreadable);
    else
        fprintf(stderr, "qmmcheck: list --tags: out of memory\n");
    qh_tag_counts_free(&tc);
    qh_case_list_free(list);
    return rc ? EXIT_BAD : 0;
}

int qh_cmd_list(int argc, char **argv)
{
    opts o;
    int done;
    int rc = parse_opts(&qh_list_usage, argc, argv, &o, &done);
    if (rc || done)
        return rc;
    if (o.list_cpus) {
        qh_cpu_list();
        return 0;
    }
    if (o.n_cpus > 1 || (o.n_cpus && !o.list_backends))
        return usage_error_in("list", "%s", "list: --cpu takes one class, with --backends");
    if (o.list_backends && o.n_cpus && qh_cpu_emulated(o.cpus[0])) {
        /* the listing itself runs on the emulated CPU: what its CPUID makes each ISA say */
        char *args[] = {(char *)"list", (char *)"--backends", NULL};
        return qh_cpu_run_self(o.cpus[0], args);
    }
    if (o.list_backends) {
        list_backends();
        return 0;
    }
    if (o.list_profiles) {
        qh_print_profiles(stdout);
        return 0;
    }
    /* list --tags, like run, reads the installed suites without --vectors (README, --help) */
    if (o.n_vectors == 0 && o.list_tags && !(o.vectors[o.n_vectors++] = qh_default_vectors()))
        return EXIT_USAGE; /* qh_default_vectors said where it looked */
    if (o.n_vectors == 0)
        return usage_error_in("list", "%s",
                              "list: give --vectors DIR, --tags, --backends or --profiles");
    qh_case_list list;
    found_counts found;
    rc = collect(&o, NULL, NULL, &list, &found);
    if (rc)
        return rc;
    if (o.list_tags)
        return list_tags(&list);
    for (size_t i = 0; i < list.count; i++) {
        const qh_case_ref *r = &list.items[i];
        put_clean(r->name, strlen(r->name), 0, stdout);
        fputc('\t', stdout);
        put_clean(r->dir, strlen(r->dir), 0, stdout);
        fputc('\n', stdout);
    }
    fflush(stdout); /* the count after the list, also where both go to one pipe */
    fprintf(stderr, "%zu cases\n", list.count);
    qh_case_list_free(&list);
    return 0;
}

int qh_cmd_repro(int argc, char **argv)
{
    opts o;
    int done;
    int rc = parse_opts(&qh_repro_usage, argc, argv, &o, &done);
    if (rc || done)
        return rc;
    if (o.n_vectors != 1)
        return usage_error_in("repro", "%s", "repro: give exactly one CASE_DIR");
    if (o.n_backends == 0)
        o.backends[o.n_backends++] = "reference";
    if (o.n_backends != 1)
        return usage_error_in("repro", "%s", "repro: give at most one --backend");
    if (o.n_cpus > 1)
        return usage_error_in("repro", "%s", "repro: give one --cpu class (run takes several)");
    expand_cpus(&o);
    qh_backend be;
    rc = open_backends(&o, &be);
    if (rc)
        return rc;
    qh_case_ref ref = {.dir = (char *)o.vectors[0], .name = (char *)o.vectors[0],
                       .data_set = o.data_set};
    /* a path run reports as a badly named or misplaced data set is that ERROR here too */
    int set_n = -1;
    ref.problem = qh_classify_path(ref.dir, &set_n);
    if (ref.problem == QH_REF_SET_DIR)
        ref.data_set = set_n;
    /* --data-set N of a case whose test_data_set_N is a link to another of its data sets: run's
     * ERROR row for it (discovery's view of the case), not its data judged again */
    qh_case_list same = {0};
    qh_error derr;
    char model[4200];
    snprintf(model, sizeof model, "%s/model.onnx", ref.dir);
    if (ref.problem == QH_REF_OK && ref.data_set >= 0 && access(model, F_OK) == 0 &&
        qh_discover(ref.dir, &same, NULL, &derr) == 0) {
        char entry[64];
        snprintf(entry, sizeof entry, "/test_data_set_%d", ref.data_set);
        for (size_t i = 0; i < same.count; i++) {
            const char *d = same.items[i].dir;
            size_t dl = strlen(d), el = strlen(entry);
            if (same.items[i].problem == QH_REF_SET_SAME && dl >= el &&
                strcmp(d + dl - el, entry) == 0) {
                ref = same.items[i]; /* its dir and name stay owned by `same` until the end */
                break;
            }
        }
    }
    qh_result r;
    qh_eval_opts eo = {.verbose = 1, .profile = o.profile};
    eo.invoke.isolate = be.isolated;
    eo.invoke.timeout_s = o.timeout_s;
    /* --determinism: the variants as run opens them; one that cannot be opened (run's
     * "<variant>" row) ends the repro */
    qh_backend variants[MAX_VARIANTS];
    int n_variants = 0;
    if (o.determinism) {
        int failed;
        n_variants = open_variants_of(&be, o.variants, variants, NULL, NULL, &failed);
        if (failed) {
            for (int i = 0; i < n_variants; i++)
                qh_backend_close(&variants[i]);
            qh_backend_close(&be);
            qh_case_list_free(&same);
            return EXIT_BAD;
        }
        eo.determinism = 1;
        eo.variants = variants;
        eo.n_variants = n_variants;
    }
    qh_eval_case(&ref, &be, &eo, &r);
    r.number = 1;
    char det[1024];
    determinism_words(&o, det, sizeof det);
    print_result(&r, &ref, o.profile, &be.iso, det, 0, 0);
    int bad = qh_case_status_is_bad(r.status);
    qh_result_free(&r);
    for (int i = 0; i < n_variants; i++)
        qh_backend_close(&variants[i]);
    qh_backend_close(&be);
    qh_case_list_free(&same);
    return bad ? EXIT_BAD : 0;
}
