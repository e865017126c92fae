/* harness/cli/cmd_diff.c — `qmmcheck diff`: seeded random differential testing of two backends
 * (docs/architecture.md §2). Problem I of seed S is generated from (S, I) alone, so any difference
 * can be replayed on its own with --problem I. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/invoke/strays.h"
#include "harness/invoke/backends.h"
#include "harness/base/clean.h"
#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/cli/options.h"
#include "harness/cli/progress.h"
#include "harness/judge/judge.h"
#include "harness/judge/compare.h"
#include "harness/invoke/cpu.h"
#include "harness/judge/expect.h"
#include "harness/invoke/invoke.h"
#include "harness/run/reduce.h"
#include "harness/base/numparse.h"
#include "harness/gen/problem.h"
#include "harness/base/strbuf.h"
#include "ops/operator.h"
#include "reference/qmm_reference.h"

enum {
    O_BACKEND, O_SEED, O_COUNT, O_SECONDS, O_OUT, O_PROFILE, O_PROBLEM, O_START, O_MAX_DIFFS,
    O_ONLY, O_ISOLATE, O_NO_ISOLATE, O_TIMEOUT, O_START_TIMEOUT, O_QUIET, O_REDUCE, O_ALLOW_EMPTY, O_CPU,
    O_DRAW
};
static const qh_option diff_options[] = {
    {O_BACKEND, "--backend", 'b', "SPEC", 0, "a backend to compare (give exactly two)"},
    {O_SEED, "--seed", 0, "S", 0, "the seed: problem I of seed S is always the same problem"},
    {O_COUNT, "--count", 0, "N", 0, "run N problems (with --seconds: whichever ends first)"},
    {O_SECONDS, "--seconds", 0, "T", 0, "run problems for T seconds (with --count: whichever ends first)"},
    {O_OUT, "--out", 0, "DIR", 0, "where differences are saved (default ./qmmcheck-diff-S/)"},
    {O_PROFILE, "--profile", 0, "NAME", 0, "the profile whose answer a saved case expects"},
    {O_PROBLEM, "--problem", 0, "I", 0, "run problem I alone (replays a difference)"},
    {O_DRAW, "--draw", 0, "D", 0, "with --problem I and --only supported: draw D of problem I, "
                                  "asked for no further (the __REPRO line gives it)"},
    {O_START, "--start", 0, "I", 0, "the first problem's index (default 0)"},
    {O_MAX_DIFFS, "--max-diffs", 0, "N", 0, "stop after N differences (default 100)"},
    {O_ONLY, "--only", 0, "FORMS", 0, "run only problems of these forms (below)"},
    {O_ISOLATE, "--isolate", 0, NULL, 0, "run both backends in forked workers"},
    {O_NO_ISOLATE, "--no-isolate", 0, NULL, 0, "run plugins in process too"},
    {O_TIMEOUT, "--timeout", 0, "S", 0, "seconds an isolated call may take (default 30)"},
    {O_START_TIMEOUT, "--start-timeout", 0, "S", 0, QH_START_TIMEOUT_HELP},
    {O_QUIET, "--quiet", 'q', NULL, 0, "no progress on stderr"},
    {O_REDUCE, "--reduce", 0, NULL, 0, "reduce each saved case beside it (DIR/problem-I-reduced)"},
    {O_ALLOW_EMPTY, "--allow-empty", 0, NULL, 0, "a diff that compared no problem exits 0, not 3"},
    {O_CPU, "--cpu", 0, "CLASS[,CLASS]", 0,
     "run the backends as that CPU runs them, under qemu (two classes: A's, then B's)"},
    {0, NULL, 0, NULL, 0, NULL},
};

const qh_command qh_diff_usage = {
    "diff", "--backend A --backend B --seed S (--count N | --seconds T) [options]",
    "seeded random differential of two backends",
    "Runs random problems through both backends; a difference in status or output bytes is\n"
    "printed with a __REPRO: line and saved as an ONNX case under DIR (default\n"
    "./qmmcheck-diff-S/), whose output_0.pb is the reference's answer under --profile.\n"
    "A DIR/problem-I that diff or reduce wrote earlier is replaced whole; any other is left as\n"
    "it is, and that case is not saved.\n"
    "--only runs only the problems of the forms named (comma-separated): a type combination\n"
    "as the problem lists them (u8s8u8: a, b, y of QLinearMatMul; u8s8: a and b of MatMulInteger,\n"
    "and of QOrderedMatMul for s8s8), per-tensor (every scale\n"
    "and zero point has one element), nonempty (no dimension is 0), float8 (QLinearMatMul-21\n"
    "with a float8 a, b or y), an operator's name in lower case (that operator only); the\n"
    "others are not run and are counted as filtered. Problem I is the same problem with or\n"
    "without --only. `supported` draws again, from problem I's own stream, until both backends'\n"
    "capability queries accept it (at most 4000 draws; the draws refused are counted as\n"
    "redrawn), so a kernel of one form is compared on that form; a form refused 3 times and\n"
    "never accepted is drawn again without asking. Which draw problem I took so depends on\n"
    "the problems before it, so its __REPRO line names it (--draw D): the replay takes that\n"
    "draw whatever came before. A __REPRO line keeps --only whole.\n"
    "Each differing element shows the reference's acc and exact scaled value.\n"
    "The operators with a float output (judged by accepted values, docs/semantics.md 8.4)\n"
    "are drawn when --only names one: problem I is then that operator's problem I. Two of\n"
    "their answers whose bits differ but that the judge both accepts or cannot decide are\n"
    "tolerated, not a difference.\n"
    "--reduce: each saved case is also reduced against the backend the reference disagrees\n"
    "with (B first), as qmmcheck reduce does, into DIR/problem-I-reduced beside it (at most\n"
    "2000 judged candidates or 60 s each).\n"
    "Exit status: 0 no difference, 1 differences, 2 usage errors or a backend that could not\n"
    "be opened, 3 no problem was compared (none ran, --only left none, or every one was\n"
    "skipped: a backend answered UNSUPPORTED, or both returned the same error, e.g. INTERNAL)\n"
    "unless --allow-empty is given. Two backends that both crash, hang or break a memory rule\n"
    "on a problem are a difference all the same: each is a finding.\n",
    diff_options, 0};

#define usage(...) qh_opt_error(&qh_diff_usage, QH_ERR_USAGE, __VA_ARGS__)
#define bad_value(...) qh_opt_bad_value(&qh_diff_usage, QH_ERR_USAGE, __VA_ARGS__)

typedef struct diff_opts {
    int reduce; /* --reduce: each saved case is reduced beside it */
    int allow_empty; /* a diff that compared no problem exits 0, not QH_EXIT_EMPTY */
    const char *spec[2];
    unsigned long long seed, count, start, problem, max_diffs;
    unsigned long long draw; /* --draw D (with --problem): draw D of the problem, not asked */
    double seconds;
    int have_seed, have_count, have_seconds, have_problem;
    const char *out;
    const char *profile;
    int isolate; /* -1: plugins only */
    double timeout_s;
    double start_s; /* --start-timeout as qh_isolation.start_s (0: the default) */
    int quiet;
    const char *cpu_arg;          /* --cpu as given, for the __REPRO: line */
    const qh_cpu_target *cpu[2];   /* A's and B's class (harness/invoke/cpu.h); NULL: none given */
    qh_progress *progress; /* hidden while a difference is printed */
    /* --only: the forms a problem must have to run (empty types: any) */
    int have_only;
    char only_types[8];
    int only_per_tensor, only_nonempty, only_float8;
    int only_supported;         /* draw again until both backends' queries accept */
    const char *only_arg;       /* --only's list, for the __REPRO line */
    const qmm_op_desc *only_op; /* an operator named by its slug (ops/operator.h) */
} diff_opts;

/* The operator whose slug is `w`, or NULL. */
static const qmm_op_desc *op_of_slug(const char *w)
{
    for (int32_t i = 0; i < qmm_op_count(); i++)
        if (strcmp(qmm_op_at(i)->slug, w) == 0)
            return qmm_op_at(i);
    return NULL;
}

/* Parses --only's comma-separated list into `o`; 0, or -1 naming nothing it knows. */
static int parse_only(const char *list, diff_opts *o)
{
    char buf[128];
    if (strlen(list) >= sizeof buf) /* not cut short: a form past the cut would be dropped */
        return -1;
    snprintf(buf, sizeof buf, "%s", list);
    o->have_only = 1;
    int words = 0;
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        size_t len = strlen(w);
        words++;
        if (strcmp(w, "per-tensor") == 0)
            o->only_per_tensor = 1;
        else if (strcmp(w, "supported") == 0)
            o->only_supported = 1;
        else if (strcmp(w, "nonempty") == 0)
            o->only_nonempty = 1;
        else if (strcmp(w, "float8") == 0)
            o->only_float8 = 1;
        else if (!o->only_op && op_of_slug(w))
            o->only_op = op_of_slug(w);
        else if ((len == 4 || len == 6) && strspn(w, "us8") == len && !o->only_types[0])
            snprintf(o->only_types, sizeof o->only_types, "%s", w);
        else
            return -1;
    }
    return words > 0 ? 0 : -1; /* --only "" names no form: not "every problem" */
}

/* Whether problem `p` has the forms --only asks for. */
static int wanted(const diff_opts *o, const qh_problem *p)
{
    if (!o->have_only)
        return 1;
    if (o->only_types[0]) {
        char types[16];
        qh_problem_types(p, types, sizeof types);
        if (strcmp(types, o->only_types) != 0) /* the operator's own type list (problem.h) */
            return 0;
    }
    if (o->only_float8 && !qh_problem_has_float8(p))
        return 0;
    if (o->only_op && qmm_call_desc(&p->call) != o->only_op)
        return 0;
    int32_t n = qh_problem_n_inputs(p);
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    for (int32_t i = 0; i < n; i++) {
        const qmm_tensor *t = qh_problem_input_c(p, i);
        int operand = d && (i == d->a_input || i == d->b_input);
        if (o->only_per_tensor && !operand && qmm_tensor_present(t) && qmm_tensor_numel(t) > 1)
            return 0;
        if (o->only_nonempty && operand && qmm_tensor_numel(t) == 0)
            return 0;
    }
    return !o->only_nonempty || qmm_tensor_numel(qmm_call_output_c(&p->call)) > 0;
}

/* "OK", "INVALID_ARGUMENT", "CRASHED (signal 11)", ... */
static void outcome_text(const qh_invocation *inv, char *buf, size_t size)
{
    switch (inv->outcome) {
    case QH_RETURNED: snprintf(buf, size, "%s", qmm_status_name(inv->code)); break;
    case QH_DIED: snprintf(buf, size, "CRASHED (%s)", inv->problem); break;
    case QH_HUNG: snprintf(buf, size, "TIMEOUT (%s)", inv->problem); break;
    case QH_MISBEHAVED: snprintf(buf, size, "MISBEHAVED (%s)", inv->problem); break;
    case QH_INTERRUPTED: snprintf(buf, size, "INTERRUPTED (%s)", inv->problem); break;
    case QH_MALFORMED: snprintf(buf, size, "MALFORMED (%s)", inv->problem); break;
    }
}

static size_t out_bytes(const qmm_tensor *y)
{
    int64_t n = qmm_tensor_numel(y);
    return n > 0 ? (size_t)n * qmm_dtype_size(y->dtype) : 0;
}

/* "[1, 2, 3, ... (12 elements)]" */
static void sb_values(qh_sb *b, const qmm_tensor *y, int64_t limit)
{
    int64_t n = qmm_tensor_numel(y);
    qh_sb_puts(b, "[");
    for (int64_t i = 0; i < n && i < limit; i++) {
        qh_sb_puts(b, i ? ", " : "");
        qh_sb_element(b, y, i);
    }
    if (n > limit)
        qh_sb_printf(b, ", ... (%lld elements)", (long long)n);
    qh_sb_puts(b, "]");
}


/* Prints one line built from backend answers (their messages are untrusted): cleaned, so a
 * message cannot start a line of its own. */
static void print_clean(const char *indent, const qh_sb *b)
{
    char *c = qh_clean_dup(b->s ? b->s : "", b->len, 0);
    printf("%s%s\n", indent, c ? c : "(out of memory)");
    free(c);
}

/* What writing a case replaced (qh_case_stage_publish), as a detail line; nothing for "". */
static void print_note(const char *note)
{
    char *c = note[0] ? qh_clean_dup(note, strlen(note), 0) : NULL; /* it names the path */
    if (c)
        printf("    %s\n", c);
    free(c);
}

typedef struct counts {
    unsigned long long problems, same, differences, skipped, tolerated, filtered, redrawn;
} counts;

/* --only supported: how many draws problem I may take before it is left as it is */
#define SUPPORTED_MAX_DRAWS 4000

/* --only supported: the forms (operator, type combination, the operands' ranks: 1, 2, more,
 * the scales' types, per-tensor or not, an empty operand or not) the backends refused and
 * never accepted. A form refused
 * FORM_REFUSALS times and never accepted is drawn again without asking: the queries of a
 * kernel of one form answer by the form, and a worker's round trip per draw would make most
 * of the time. Hashed, open addressing; a full table asks every time. */
#define FORM_SLOTS 8192
#define FORM_REFUSALS 3
static struct {
    uint64_t key[FORM_SLOTS];
    unsigned refused[FORM_SLOTS];
    unsigned char accepted[FORM_SLOTS];
} form_memo;

static void hash_mix(uint64_t *h, int64_t v)
{
    for (int i = 0; i < 8; i++) {
        *h ^= (uint64_t)(v >> (8 * i)) & 0xff;
        *h *= 1099511628211ULL; /* FNV-1a */
    }
}

/* The slot of p's form (its key set), or -1 when the table is full. */
static int form_slot(const qh_problem *p)
{
    uint64_t h = 14695981039346656037ULL;
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    char types[16];
    qh_problem_types(p, types, sizeof types);
    hash_mix(&h, p->call.op);
    for (const char *c = types; *c; c++)
        hash_mix(&h, *c);
    int per_tensor = 1, empty = qmm_tensor_numel(qmm_call_output_c(&p->call)) == 0;
    for (int32_t i = 0; i < qh_problem_n_inputs(p); i++) {
        const qmm_tensor *t = qh_problem_input_c(p, i);
        if (d && (i == d->a_input || i == d->b_input)) {
            hash_mix(&h, t->rank > 2 ? 3 : t->rank);
            empty |= qmm_tensor_numel(t) == 0;
        } else if (qmm_tensor_present(t)) {
            per_tensor &= qmm_tensor_numel(t) <= 1;
            if (t->dtype == QMM_DTYPE_FLOAT || t->dtype == QMM_DTYPE_FLOAT16 ||
                t->dtype == QMM_DTYPE_BFLOAT16) /* the scales' type */
                hash_mix(&h, t->dtype);
        }
    }
    hash_mix(&h, per_tensor);
    hash_mix(&h, empty);
    h |= 1; /* 0 marks a free slot */
    for (unsigned probe = 0; probe < FORM_SLOTS; probe++) {
        unsigned i = (unsigned)(h + probe) & (FORM_SLOTS - 1);
        if (form_memo.key[i] == h)
            return (int)i;
        if (form_memo.key[i] == 0) {
            form_memo.key[i] = h;
            return (int)i;
        }
    }
    return -1;
}

/* --reduce: the saved case `dir` reduced against B, or A when B does not fail it (the
 * reference sided with B), into DIR-reduced beside it. */
static void reduce_saved(const diff_opts *o, qh_backend *be, const qh_invoke_opts *io,
                         const char *dir, const qh_meta *m)
{
    qh_case_ref ref = {.dir = (char *)dir, .name = (char *)dir, .data_set = 0};
    char out[4200], why[512];
    snprintf(out, sizeof out, "%s-reduced", dir);
    if (!qh_case_dir_replaceable(out, why, sizeof why)) { /* said before the work */
        char *c = qh_clean_dup(why, strlen(why), 0);
        printf("    not reduced: %s\n", c ? c : "");
        free(c);
        return;
    }
    for (int k = 1; k >= 0; k--) {
        qh_reduce_opts ro = {.profile = o->profile, .invoke = io[k], .max_tries = 2000,
                             .seconds = 60, .progress = !o->quiet};
        qh_reduce_result r;
        qh_error err;
        int rc = qh_reduce_case(&ref, &be[k], &ro, &r, &err);
        char prov[512], note[sizeof err.msg];
        snprintf(prov, sizeof prov, "%s, reduced against %s", m->provenance, be[k].spec);
        qh_meta mk = *m; /* the class of the backend it is reduced against */
        if (qh_cpu_meta_class(o->cpu[k]))
            snprintf(mk.cpu_class, sizeof mk.cpu_class, "%s", qh_cpu_meta_class(o->cpu[k]));
        if (rc == 0 && !qh_interrupted)
            rc = qh_reduce_write(out, &r, &be[k], &ro, &mk, prov, note, sizeof note, &err);
        if (qh_interrupted && rc != 0) { /* its judgments did not finish: no verdict on it */
            printf("    not reduced: interrupted by %s\n", qh_interrupt_name(qh_interrupted));
            qh_reduce_result_free(&r);
            return;
        }
        if (rc == 0) {
            print_note(note);
            char *text = qh_reduce_report(&r, out, &be[k], o->profile, "    ");
            text = qh_cpu_repro_in(text, o->cpu[k] ? qh_cpu_name(o->cpu[k]) : NULL);
            fputs(text ? text : "    (out of memory)\n", stdout);
            free(text);
        } else if (rc != 1) { /* -1: the harness; 2: the backend's verdicts differ */
            char *c = qh_clean_dup(err.msg, strlen(err.msg), 0);
            printf("    %s: %s\n", rc < 0 ? "could not reduce the case" : "not reduced",
                   c ? c : "");
            free(c);
        }
        qh_reduce_result_free(&r);
        if (rc != 1)
            return;
    }
    printf("    not reduced: neither backend fails the saved case as run judges it\n");
}


/* Reports and saves one difference. */
static void report_difference(const diff_opts *o, qh_backend *be, const qh_invoke_opts *io,
                              unsigned long long index, unsigned long long draw,
                              const qh_problem *p, const qh_invocation *inv, int outputs_differ,
                              const qh_expectation *e, int have_e)
{
    char desc[512], sa[160], sb[160];
    qh_progress_hide(o->progress);
    qh_problem_describe(p, desc, sizeof desc);
    outcome_text(&inv[0], sa, sizeof sa);
    outcome_text(&inv[1], sb, sizeof sb);
    qh_sb line = {0};
    qh_sb_printf(&line, "DIFF seed=%llu problem=%llu %s: A %s answered %s, B %s answered %s",
                 o->seed, index, desc, be[0].spec, sa, be[1].spec, sb);
    qh_compare cmp;
    memset(&cmp, 0, sizeof cmp);
    if (outputs_differ) {
        qh_compare_outputs(&inv[0].y, NULL, &inv[1].y, &cmp);
        qh_sb_printf(&line, "; %lld of %lld elements differ", (long long)cmp.errors,
                     (long long)cmp.total);
    }
    /* which of the two the reference sides with; the saved case's line names the other (B
       when it sides with neither or both, or cannot say) */
    const char *prof = o->profile ? o->profile : "spec";
    int fails = 1;
    if (have_e) {
        qh_case_status st[2] = {qh_judge_status(e, &inv[0]), qh_judge_status(e, &inv[1])};
        int ok[2] = {st[0] == QH_PASSED, st[1] == QH_PASSED};
        /* the one the judge fails: B, unless only A is failed (one INCONCLUSIVE beside a
           FAILED is not the one to blame: its repro line would not fail) */
        int failed[2] = {!ok[0] && st[0] != QH_INCONCLUSIVE, !ok[1] && st[1] != QH_INCONCLUSIVE};
        fails = failed[0] && !failed[1] ? 0 : 1;
        if (e->code != QMM_OK)
            qh_sb_printf(&line, "; reference (%s): %s", prof, qmm_status_name(e->code));
        else
            qh_sb_printf(&line, "; reference (%s) agrees with %s", prof,
                         ok[0] && ok[1] ? "both" : ok[0] ? "A" : ok[1] ? "B" : "neither");
    }
    qh_sb_puts(&line, " __REPRO: qmmcheck diff --backend ");
    qh_sb_shell_word(&line, be[0].spec);
    qh_sb_puts(&line, " --backend ");
    qh_sb_shell_word(&line, be[1].spec);
    qh_sb_printf(&line, " --seed %llu --problem %llu", o->seed, index);
    qh_repro_isolation(&line, &be[0].iso);
    if (o->cpu_arg) {
        qh_sb_puts(&line, " --cpu ");
        qh_sb_shell_word(&line, o->cpu_arg);
    }
    if (o->profile) {
        qh_sb_puts(&line, " --profile ");
        qh_sb_shell_word(&line, o->profile);
    }
    /* --only whole: a float-output operator's name picks its own generator (problem I is
       that operator's), and `supported` the draw, which --draw names */
    if (o->have_only) {
        qh_sb_puts(&line, " --only ");
        qh_sb_shell_word(&line, o->only_arg);
    }
    if (o->only_supported)
        qh_sb_printf(&line, " --draw %llu", draw);
    print_clean("", &line);
    qh_sb_free(&line);

    /* detail: the first differing elements, both outputs in full (bounded) */
    if (outputs_differ) {
        for (int32_t k = 0; k < cmp.n_kept && k < 8; k++) {
            int64_t i = cmp.kept[k];
            qh_sb d = {0};
            qh_sb_puts(&d, "    ");
            qh_sb_coord(&d, &inv[0].y, i);
            qh_sb_printf(&d, " (index %lld): A ", (long long)i);
            qh_sb_element(&d, &inv[0].y, i);
            qh_sb_puts(&d, ", B ");
            qh_sb_element(&d, &inv[1].y, i);
            if (have_e && e->code == QMM_OK) {
                qh_sb_puts(&d, ", reference ");
                qh_sb_element(&d, &e->exact, i);
                qmm_ref_element el;
                qmm_status est;
                const qmm_op_desc *od = qmm_call_desc(&e->call);
                if (od && od->compare == QMM_COMPARE_EXACT &&
                    qmm_ref_explain(&e->call, i, &el, &est) == QMM_OK) {
                    qh_sb_printf(&d, "; acc %lld", (long long)el.acc);
                    if (el.scaled[0])
                        qh_sb_printf(&d, "; exact %s", el.scaled);
                }
            }
            printf("%s\n", d.s ? d.s : "");
            qh_sb_free(&d);
        }
    }
    qh_sb vals = {0};
    for (int k = 0; k < 2; k++) {
        if (inv[k].outcome == QH_RETURNED && inv[k].code == QMM_OK) {
            qh_sb_printf(&vals, "%s%s (%s) gave ", k ? "; " : "", k ? "B" : "A", be[k].spec);
            sb_values(&vals, &inv[k].y, 16);
        } else {
            qh_sb_printf(&vals, "%s%s (%s) answered %s%s%s", k ? "; " : "", k ? "B" : "A",
                         be[k].spec, k ? sb : sa, inv[k].st.message[0] ? ": " : "",
                         inv[k].outcome == QH_RETURNED ? inv[k].st.message : "");
        }
    }
    print_clean("    ", &vals);

    /* the saved case: the reference's answer is the expected output, never backend A's */
    char dir[4096];
    char defdir[64];
    snprintf(defdir, sizeof defdir, "qmmcheck-diff-%llu", o->seed);
    snprintf(dir, sizeof dir, "%s/problem-%llu", o->out ? o->out : defdir, index);
    qh_meta m;
    qh_meta_init(&m);
    snprintf(m.tags[m.n_tags++], sizeof m.tags[0], "diff");
    qh_problem_types(p, m.tags[m.n_tags], sizeof m.tags[0]);
    m.n_tags++;
    snprintf(m.provenance, sizeof m.provenance, "qmmcheck diff --seed %llu --problem %llu%s%s",
             o->seed, index, o->cpu_arg ? " --cpu " : "", o->cpu_arg ? o->cpu_arg : "");
    if (qh_cpu_meta_class(o->cpu[fails])) /* the class the failing answer came from */
        snprintf(m.cpu_class, sizeof m.cpu_class, "%s", qh_cpu_meta_class(o->cpu[fails]));
    /* the backends' messages are untrusted: one clean line, cut at a character boundary */
    qh_clean_into(m.description, sizeof m.description, vals.s ? vals.s : "", vals.len, 0);
    qh_sb_free(&vals);
    if (o->profile && strcmp(o->profile, "spec") != 0)
        snprintf(m.profile, sizeof m.profile, "%s", o->profile);
    const qmm_tensor *expected = NULL;
    if (have_e && e->code == QMM_OK)
        expected = &e->exact;
    else if (have_e && e->code == QMM_INVALID_ARGUMENT)
        m.expect = QMM_INVALID_ARGUMENT;
    qh_error err;
    qh_case_stage st;
    char note[sizeof err.msg];
    int saved = qh_case_stage_open(dir, &st, &err) == 0;
    if (saved && qh_problem_write_dir(st.dir, p, expected, &m, &err) != 0) {
        qh_case_stage_discard(&st);
        saved = 0;
    }
    if (!saved || qh_case_stage_publish(&st, note, sizeof note, &err) != 0) {
        char *c = qh_clean_dup(err.msg, strlen(err.msg), 0); /* it names the --out path */
        printf("    could not save the case: %s\n", c ? c : "");
        free(c);
    } else {
        /* the case's repro line as run prints it, for the backend the reference disagrees
           with (its spec, --cpu and isolation options): that line then fails as the diff did */
        qh_case_ref ref = {.dir = (char *)dir, .name = (char *)dir, .data_set = 0};
        char *repro = qh_cpu_repro(
            qh_repro_command(&ref, be[fails].spec, o->profile, &be[fails].iso),
            o->cpu[fails] ? qh_cpu_name(o->cpu[fails]) : NULL);
        qh_sb r = {0};
        qh_sb_puts(&r, "    saved ");
        qh_sb_shell_word(&r, dir);
        if (have_e && e->code == QMM_UNSUPPORTED) /* no expected output: its repro SKIPs */
            qh_sb_printf(&r, " (no expected output: the reference cannot judge it under %s, so "
                         "run and repro SKIP it; %s)", prof, repro ? repro : "");
        else
            qh_sb_printf(&r, " (%s)", repro ? repro : "");
        printf("%s\n", r.s ? r.s : "");
        qh_sb_free(&r);
        free(repro);
        print_note(note);
        if (o->reduce)
            reduce_saved(o, be, io, dir, &m);
    }
    fflush(stdout);
    qh_progress_show(o->progress);
}

/* The judge passes the answer or cannot decide it. */
static int not_failed(const qh_expectation *e, const qh_invocation *inv)
{
    qh_case_status s = qh_judge_status(e, inv);
    return s == QH_PASSED || s == QH_INCONCLUSIVE;
}

/* Runs problem `index`; returns -1 when the harness itself failed. */
/* A backend that could not run a problem (its worker's open hung or crashed): which one, why,
 * and what it printed, cleaned, as a failed open shows it (qh_append_printed). */
static void say_not_run(const qh_backend *b, int k, const qh_invocation *inv)
{
    char spec[QH_CLEAN_LINE_MAX], msg[QH_CLEAN_LINE_MAX + 512];
    qh_clean_into(spec, sizeof spec, b->spec, strlen(b->spec), 0);
    qh_clean_into(msg, sizeof msg, inv->problem, strnlen(inv->problem, sizeof inv->problem), 0);
    qh_append_call_printed(msg, sizeof msg, inv);
    fprintf(stderr, "qmmcheck diff: %s (%s): %s\n%s", k ? "B" : "A", spec, msg,
            qh_open_printed());
}

static int run_one(const diff_opts *o, qh_backend *be, const qh_invoke_opts *io,
                   unsigned long long index, counts *n)
{
    qh_rng r;
    qh_rng_seed(&r, o->seed, index);
    qh_problem p;
    qh_random_opts ro = {.invalid_per_mille = 20, .float8_per_mille = 300};
    if (o->only_op && o->only_op->compare == QMM_COMPARE_ACCEPT)
        ro.float_op = o->only_op->kind; /* a float-output operator: its own generator */
    qh_invocation inv[2];
    int rc = 0;
    /* the first draw is problem I; --only supported draws again from the same stream until
     * both backends accept one; --draw D takes draw D as it is (the draws before it made and
     * dropped, the stream's order) */
    unsigned long long draw = 1;
    for (;; draw++) {
        if (qh_problem_random(&p, &r, &ro) != 0) {
            qh_problem_free(&p);
            fprintf(stderr, "qmmcheck diff: out of memory\n");
            return -1;
        }
        if (o->draw && draw < o->draw) {
            qh_problem_free(&p);
            continue;
        }
        int again = o->only_supported && !o->draw && draw < SUPPORTED_MAX_DRAWS &&
                    !qh_interrupted;
        int slot = o->only_supported ? form_slot(&p) : -1;
        int known_refused = slot >= 0 && !form_memo.accepted[slot] &&
                            form_memo.refused[slot] >= FORM_REFUSALS;
        if (!wanted(o, &p) || (again && known_refused)) {
            qh_problem_free(&p);
            if (again) {
                n->redrawn++;
                continue;
            }
            n->filtered++;
            return 0;
        }
        memset(inv, 0, sizeof inv);
        /* while drawing again, the backend that refused more so far is asked first, and the
         * other not at all when it refuses */
        static unsigned long long refusals[2];
        int first = again && refusals[1] > refusals[0];
        int refused = 0;
        for (int j = 0; j < 2 && rc == 0 && !(again && refused); j++) {
            int k = j ^ first;
            if (qh_invoke(&be[k], &p.call, &io[k], &inv[k]) != 0) {
                say_not_run(&be[k], k, &inv[k]);
                rc = -1;
            }
            int no = inv[k].outcome == QH_RETURNED && inv[k].code == QMM_UNSUPPORTED;
            refusals[k] += (unsigned long long)no;
            refused |= no;
        }
        if (slot >= 0 && rc == 0) {
            form_memo.refused[slot] += (unsigned)refused;
            form_memo.accepted[slot] |= (unsigned char)!refused;
        }
        if (rc != 0 || !again || !refused)
            break;
        n->redrawn++;
        qh_invocation_free(&inv[0]);
        qh_invocation_free(&inv[1]);
        qh_problem_free(&p);
    }
    /* the problem under way when a signal came has no verdict: left out, never a difference */
    if (rc == 0 && !qh_interrupted) {
        n->problems++;
        /* not compared: a backend answered UNSUPPORTED, or both failed alike (INTERNAL, ...:
           no output, no judgment of either; two backends failing every call were "same") */
        int both_failed = inv[0].outcome == QH_RETURNED && inv[1].outcome == QH_RETURNED &&
                          inv[0].code == inv[1].code && inv[0].code != QMM_OK &&
                          inv[0].code != QMM_INVALID_ARGUMENT;
        int not_compared = (inv[0].outcome == QH_RETURNED && inv[0].code == QMM_UNSUPPORTED) ||
                           (inv[1].outcome == QH_RETURNED && inv[1].code == QMM_UNSUPPORTED) ||
                           both_failed;
        int status_differs = inv[0].outcome != inv[1].outcome ||
                             (inv[0].outcome == QH_RETURNED && inv[0].code != inv[1].code) ||
                             inv[0].outcome != QH_RETURNED;
        int outputs_differ = 0;
        if (!status_differs && inv[0].code == QMM_OK) {
            size_t bytes = out_bytes(&inv[0].y);
            outputs_differ = bytes && memcmp(inv[0].y.data, inv[1].y.data, bytes) != 0;
        }
        if (not_compared) {
            n->skipped++;
        } else if (!status_differs && !outputs_differ) {
            n->same++;
        } else {
            qh_expectation e;
            int have_e = qh_expect(&p.call, o->profile, &e) == 0;
            if (qh_interrupted) { /* the expectation was stopped: no verdict either */
                n->problems--;
                if (have_e)
                    qh_expectation_free(&e);
                goto done;
            }
            /* two different outputs the judge both accepts (where an accumulator overflows
             * int32, the exact and the wrapped result; a float output's sum in two orders) or
             * cannot decide (INCONCLUSIVE: no difference is proven) */
            int tolerated = outputs_differ && have_e && e.code == QMM_OK &&
                            not_failed(&e, &inv[0]) && not_failed(&e, &inv[1]);
            if (tolerated) {
                n->tolerated++;
            } else {
                n->differences++;
                report_difference(o, be, io, index, draw, &p, inv, outputs_differ, &e, have_e);
            }
            if (have_e)
                qh_expectation_free(&e);
        }
    }
done:
    qh_invocation_free(&inv[0]);
    qh_invocation_free(&inv[1]);
    qh_problem_free(&p);
    return rc;
}

int qh_cmd_diff(int argc, char **argv)
{
    diff_opts o;
    memset(&o, 0, sizeof o);
    o.isolate = -1;
    o.timeout_s = QH_TIMEOUT_S_DEFAULT;
    o.max_diffs = 100;
    int n_spec = 0;
    qh_opt_parser parser;
    qh_opt_init(&parser, &qh_diff_usage, argc, argv);
    const char *val;
    for (int id; (id = qh_opt_next(&parser, &val)) != QH_OPT_END;) {
        const char *a = parser.name;
        uint64_t u = 0;
        switch (id) {
        case QH_OPT_HELP: return 0;
        case QH_OPT_BAD: return usage("%s", parser.error);
        case QH_OPT_ARG: return usage("unknown argument %s", val);
        case O_SEED: case O_COUNT: case O_START: case O_PROBLEM: case O_MAX_DIFFS: case O_DRAW:
            if (qh_parse_u64(val, UINT64_MAX, &u) != 0)
                return bad_value(a, val, "a number >= 0");
            break;
        }
        switch (id) {
        case O_ISOLATE: o.isolate = 1; break;
        case O_NO_ISOLATE: o.isolate = 0; break;
        case O_QUIET: o.quiet = 1; break;
        case O_REDUCE: o.reduce = 1; break;
        case O_ALLOW_EMPTY: o.allow_empty = 1; break;
        case O_CPU: {
            char why[1024];
            int n = qh_cpu_parse(val, o.cpu, 2, why, sizeof why);
            if (n < 0)
                return usage("%s", why);
            if (n == 1)
                o.cpu[1] = o.cpu[0]; /* one class: both backends run under it */
            o.cpu_arg = val;
            break;
        }
        case O_BACKEND:
            if (n_spec == 2)
                return usage("%s", "give exactly two --backend options");
            o.spec[n_spec++] = val;
            break;
        case O_OUT:
            if (!*val)
                return usage("%s", QH_EMPTY_OUT);
            o.out = val;
            break;
        case O_ONLY:
            o.only_arg = val;
            if (parse_only(val, &o) != 0)
                return bad_value(a, val, "a comma-separated list of a type combination "
                                         "(u8s8u8, u8s8, ...), per-tensor, nonempty, ... "
                                         "(at most 127 characters)");
            break;
        case O_PROFILE: {
            char why[2048];
            if (qh_profile_usage(val, why, sizeof why))
                return usage("%s", why);
            o.profile = val;
            break;
        }
        case O_SECONDS:
        case O_TIMEOUT: {
            double v;
            if (qh_parse_double(val, 0, QH_TIMEOUT_S_MAX, &v))
                return bad_value(a, val, "seconds from 0 to 1000000, as a decimal (0.5, not "
                                         "5e-1)");
            if (id == O_SECONDS) {
                o.seconds = v;
                o.have_seconds = 1;
            } else {
                o.timeout_s = v;
            }
            break;
        }
        case O_START_TIMEOUT:
            if (qh_opt_start_timeout(val, &o.start_s))
                return bad_value(a, val, "seconds >= 0 (0: none)");
            break;
        case O_SEED: o.seed = u; o.have_seed = 1; break;
        case O_COUNT: o.count = u; o.have_count = 1; break;
        case O_START: o.start = u; break;
        case O_PROBLEM: o.problem = u; o.have_problem = 1; break;
        case O_MAX_DIFFS: o.max_diffs = u; break;
        case O_DRAW:
            if (u < 1 || u > SUPPORTED_MAX_DRAWS)
                return bad_value(a, val, "a draw from 1 to 4000");
            o.draw = u;
            break;
        }
    }
    if (n_spec != 2)
        return usage("%s", "give exactly two --backend options");
    if (!o.have_seed)
        return usage("%s", "give --seed S");
    if (!o.have_problem && !o.have_count && !o.have_seconds)
        return usage("%s", "give --count N or --seconds T (or --problem I)");
    if (o.have_problem && (o.have_count || o.have_seconds || o.start))
        return usage("%s", "--problem I replays one problem: --count, --seconds and --start do "
                           "not go with it");
    if (o.draw && !(o.have_problem && o.only_supported))
        return usage("%s", "--draw D names a draw of one problem of --only supported: give it "
                           "with --problem I and --only supported");
    if (o.max_diffs == 0)
        return usage("%s", "--max-diffs 0 would stop before the first problem: give N >= 1");
    if (!o.have_problem && o.have_count && o.count > 0 && o.start + (o.count - 1) < o.start)
        return usage("%s", "--start I with --count N passes the last problem index, 2^64 - 1: "
                           "give I + N - 1 <= 18446744073709551615");
    if (o.have_problem) {
        o.start = o.problem;
        o.count = 1;
        o.have_count = 1;
        o.have_seconds = 0;
    }

    qh_interrupt_install(); /* before the backends open (interrupt.h) */
    qh_backend be[2];
    for (int k = 0; k < 2; k++) {
        qh_error err;
        qh_isolation iso = {.isolate = o.isolate, .timeout_s = o.timeout_s, .start_s = o.start_s,
                            .memory_limit = QH_MEMORY_LIMIT_DEFAULT, .cpu = o.cpu[k]};
        if (qh_backend_open_isolated(o.spec[k], &iso, &be[k], &err) != 0) {
            char *c = qh_clean_dup(err.msg, strlen(err.msg), 0); /* it quotes the spec */
            fprintf(stderr, "qmmcheck diff: %s\n%s", c ? c : err.msg, qh_open_printed());
            free(c);
            if (k)
                qh_backend_close(&be[0]);
            return 2;
        }
        if (be[k].broken[0]) {
            /* its worker's open hung or died: no problem can run, and that is no difference
               (it exited 1, "differences", with differences:0), as reduce refuses it */
            char spec[QH_CLEAN_LINE_MAX], why[sizeof be[k].broken + 512];
            qh_clean_into(spec, sizeof spec, be[k].spec, strlen(be[k].spec), 0);
            qh_backend_why_broken(&be[k], why, sizeof why);
            fprintf(stderr, "qmmcheck diff: %s (%s) could not be opened: %s\n%s", k ? "B" : "A",
                    spec, why, qh_open_printed());
            for (int j = 0; j <= k; j++)
                qh_backend_close(&be[j]);
            return 2;
        }
    }
    qh_invoke_opts io[2];
    for (int k = 0; k < 2; k++) {
        io[k].isolate = be[k].isolated; /* --cpu isolates a built-in too */
        io[k].timeout_s = o.timeout_s;
    }

    counts n;
    memset(&n, 0, sizeof n);
    qh_progress pr;
    qh_progress_start(&pr, o.quiet, "problems", "differences");
    o.progress = &pr;
    double t0 = qh_mono_seconds(), last = t0;
    int harness_failed = 0;
    for (unsigned long long i = o.start; !qh_interrupted; i++) {
        if (i < o.start) /* --seconds past 2^64 - 1: no index is run twice */
            break;
        if (o.have_count && i - o.start >= o.count)
            break;
        double t = qh_mono_seconds();
        if (o.have_seconds && t - t0 >= o.seconds)
            break;
        if (n.differences >= o.max_diffs) {
            qh_progress_end(&pr);
            printf("stopping after %llu differences (--max-diffs)\n", n.differences);
            break;
        }
        /* on a terminal the progress line; in a log a line every 2 s */
        qh_progress_update(&pr, i - o.start, o.have_count ? o.count : 0, n.differences,
                           o.have_seconds ? o.seconds - (t - t0) : -1);
        if (!o.quiet && !pr.on && t - last >= 2.0) {
            fprintf(stderr, "diff: %llu problems (%.0f/s), %llu differences, %llu skipped\n",
                    n.problems, (double)n.problems / (t - t0), n.differences, n.skipped);
            last = t;
        }
        if (run_one(&o, be, io, i, &n) != 0) {
            harness_failed = 1;
            break;
        }
    }
    qh_progress_end(&pr);
    qh_strays_end(); /* what a backend left running, before the summary (strays.h) */
    double secs = qh_mono_seconds() - t0;
    char filtered[96] = "";
    if (o.have_only)
        snprintf(filtered, sizeof filtered, " filtered:%llu", n.filtered);
    if (o.only_supported)
        snprintf(filtered + strlen(filtered), sizeof filtered - strlen(filtered),
                 " redrawn:%llu", n.redrawn);
    int sig = qh_interrupted;
    printf("DIFF SUMMARY: problems:%llu same:%llu differences:%llu skipped:%llu tolerated:%llu%s "
           "(%.3f s, %.0f problems/s)%s%s\n",
           n.problems, n.same, n.differences, n.skipped, n.tolerated, filtered, secs,
           secs > 0 ? (double)n.problems / secs : 0.0, sig ? " interrupted by " : "",
           sig ? qh_interrupt_name(sig) : "");
    if (n.problems > 0 && 2 * n.skipped > n.problems)
        printf("WARNING: %llu of %llu problems were skipped (a backend answered UNSUPPORTED, or "
               "both failed alike)\n", n.skipped, n.problems);
    qh_backend_close(&be[0]);
    qh_backend_close(&be[1]);
    if (sig) /* never a pass, whatever was compared before the signal */
        return 128 + sig;
    if (harness_failed || n.differences)
        return 1;
    if (n.same + n.tolerated > 0 || o.allow_empty)
        return 0;
    return qh_exit_empty("qmmcheck diff", "no problem was compared",
                         n.problems ? "every problem was SKIPPED (a backend answered "
                                      "UNSUPPORTED, or both failed alike)"
                         : n.filtered ? "--only left no problem"
                                      : "no problem ran (--count 0, or --seconds too short)");
}
