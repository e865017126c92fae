/* harness/run/runner.c — judging a case against backends: loaded once, its expectation
 * computed once, each answer decided by the judge (harness/judge/judge.h). */
#include "harness/run/runner.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/base/clean.h"
#include "harness/judge/judge.h"
#include "harness/judge/compare.h"
#include "harness/invoke/exec.h"
#include "harness/invoke/cpu.h"
#include "harness/judge/expect.h"
#include "harness/invoke/invoke.h"
#include "harness/base/strbuf.h"
#include "ops/qmm_ops.h"

void qh_result_free(qh_result *r)
{
    free(r->name);
    free(r->path);
    free(r->summary);
    free(r->detail);
    free(r->first_mismatch);
    free(r->repro);
    free(r->tags);
    free(r->description);
    free(r->mismatches);
    if (r->marks)
        qh_marks_free(r->marks);
    free(r->marks);
    memset(r, 0, sizeof *r);
}


/* Seconds as the options read them back: decimal, never an exponent (--timeout 0.00001 is
 * "1e-05" in %g, which qh_parse_double refuses), with the fewest digits that give v again
 * (0.3, not 0.29999999999999999; a tiny value keeps its digits, never "0", which means none). */
static void sb_seconds(qh_sb *b, double v)
{
    char t[400];
    for (int d = 0; d <= 340; d++) {
        snprintf(t, sizeof t, "%.*f", d, v);
        if (strtod(t, NULL) == v)
            break;
    }
    qh_sb_puts(b, t);
}

void qh_repro_isolation(qh_sb *b, const qh_isolation *iso)
{
    if (!iso)
        return;
    if (iso->isolate >= 0)
        qh_sb_puts(b, iso->isolate ? " --isolate" : " --no-isolate");
    if (iso->timeout_s != QH_TIMEOUT_S_DEFAULT) {
        qh_sb_puts(b, " --timeout ");
        sb_seconds(b, iso->timeout_s > 0 ? iso->timeout_s : 0.0);
    }
    if (iso->start_s != 0) {
        qh_sb_puts(b, " --start-timeout ");
        sb_seconds(b, iso->start_s > 0 ? iso->start_s : 0.0);
    }
    if (iso->memory_limit != QH_MEMORY_LIMIT_DEFAULT)
        qh_sb_printf(b, " --memory-limit %llu", (unsigned long long)iso->memory_limit);
}

char *qh_repro_command(const qh_case_ref *ref, const char *backend_spec, const char *profile,
                       const qh_isolation *iso)
{
    qh_sb b = {0};
    qh_sb_puts(&b, "qmmcheck repro --backend ");
    qh_sb_shell_word(&b, backend_spec);
    if (profile && strcmp(profile, QH_DEFAULT_PROFILE) != 0) {
        qh_sb_puts(&b, " --profile ");
        qh_sb_shell_word(&b, profile);
    }
    qh_repro_isolation(&b, iso);
    if (ref->data_set > 0 && ref->problem == QH_REF_OK) /* a problem's N is its message's */
        qh_sb_printf(&b, " --data-set %d", ref->data_set);
    qh_sb_puts(&b, " ");
    qh_sb_shell_word(&b, ref->dir);
    return qh_sb_take(&b);
}

/* ---- describing inputs ---------------------------------------------------------- */

static void sb_tensor_brief(qh_sb *b, const char *name, const qmm_tensor *t)
{
    char dims[256];
    if (!qmm_tensor_present(t)) {
        qh_sb_printf(b, "    %s: absent\n", name);
        return;
    }
    qh_format_dims(t, dims, sizeof dims);
    qh_sb_printf(b, "    %s: %s %s", name, qmm_dtype_name(t->dtype), dims);
    int64_t n = qmm_tensor_numel(t);
    if (n >= 1 && n <= 8) {
        qh_sb_puts(b, " =");
        for (int64_t i = 0; i < n; i++) {
            if (qmm_is_scale_type(t->dtype) || t->dtype == QMM_DTYPE_FLOAT8E8M0)
                qh_sb_printf(b, " %.9g", qmm_scale_decode(t->dtype, t->data, i));
            else
                qh_sb_printf(b, " %lld", (long long)qh_tensor_int(t, i));
        }
    }
    qh_sb_puts(b, "\n");
}

/* "  QLinearMatMul (opset 21)" / "  QOrderedMatMul (order_A 1, order_B 0, order_Y 1)", then
 * every input by its ONNX name. */
static void sb_call_inputs(qh_sb *b, const qmm_call *call)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (!d)
        return;
    qh_sb_printf(b, "  %s", d->op_type);
    const char *sep = " (";
    if (d->opset_offset >= 0) {
        qh_sb_printf(b, "%sopset %d", sep, qmm_call_opset(call));
        sep = ", ";
    }
    for (int32_t i = 0; i < d->n_attrs; i++, sep = ", ")
        qh_sb_printf(b, "%s%s %d", sep, d->attrs[i].name, qmm_call_attr_value(call, i));
    qh_sb_puts(b, sep[0] == ',' ? ")\n" : "\n");
    for (int32_t i = 0; i < d->n_inputs; i++)
        sb_tensor_brief(b, d->inputs[i].name, qmm_call_input_c(call, i));
}

/* ---- judging ------------------------------------------------------------------------ */

/* What the worker printed during the call (a process's stderr, a traceback): a header, then
 * one detail line per line printed (qh_sb_detail_lines), at most WORKER_LINES_SHOWN lines and
 * WORKER_BYTES_SHOWN cleaned bytes, the last ones (where a traceback ends). */
#define WORKER_LINES_SHOWN 64
#define WORKER_BYTES_SHOWN 4096

static void sb_worker_output(qh_sb *b, const qh_invocation *inv)
{
    const char *s = inv->output ? inv->output : "";
    size_t n = strlen(s);
    if (n == 0 && inv->output_dropped == 0)
        return;
    qh_sb_printf(b, "    worker output (%zu bytes, %zu dropped):\n", n, inv->output_dropped);
    qh_sb_detail_lines(b, s, n, WORKER_LINES_SHOWN, WORKER_BYTES_SHOWN);
}

/* Invalid geometry: give the backend the stored output's shape so a backend that wrongly
 * accepts the call still has somewhere to write. */
static void lend_stored_shape(qh_case *c)
{
    if (c->oc.y_shape_known || c->n_outputs == 0)
        return;
    qmm_tensor *y = qh_call_output(&c->oc.call);
    y->rank = c->outputs[0].t.rank;
    memcpy(y->dims, c->outputs[0].t.dims, sizeof y->dims);
}

/* The profile the vector's own qmm.meta names (spec by default; an unknown one: the judged
 * profile), which it is trusted against whatever profile the backend is judged under. */
static const char *vector_profile(const qh_case *c, const qh_expectation *e)
{
    const char *vp = c->meta.profile[0] ? c->meta.profile : QH_DEFAULT_PROFILE;
    return qh_profile_known(vp) ? vp : e->profile;
}

/* What one pass over the expectation's parts compares it with: each backend's output and the
 * vector's stored output (each NULL when not compared). */
typedef struct comparison {
    int n;
    const qh_expectation *e;
    const qmm_tensor *got[QH_EVAL_MAX];
    qh_compare vs_got[QH_EVAL_MAX];
    const qmm_tensor *stored;
    qh_compare vs_stored;
    qh_marks *marks; /* not NULL: marks[j] records where got[j]'s mismatches lie */
} comparison;

static void compare_part(void *ctx, int64_t first, int64_t count, const void *exact,
                         const void *alt)
{
    comparison *cm = ctx;
    for (int j = 0; j < cm->n; j++)
        if (cm->got[j])
            qh_judge_compare_part(cm->e, exact, alt, cm->got[j], first, count, &cm->vs_got[j]);
    if (cm->stored) /* by the operator's rule too: a float output's stored answer is one of many */
        qh_judge_compare_part(cm->e, exact, alt, cm->stored, first, count, &cm->vs_stored);
}

/* Computes e a part at a time (never the whole output at once), comparing each part with every
 * cm->got and cm->stored in the same pass: the expectation is computed once, whatever the
 * number of answers; e->code may change (an answer the data gives, memory, an interruption). */
static void compare_with_expectation(qh_expectation *e, comparison *cm)
{
    cm->e = e;
    for (int j = 0; j < cm->n; j++)
        if (cm->got[j]) {
            qh_judge_compare_start(e, cm->got[j], &cm->vs_got[j]);
            if (cm->marks && !cm->vs_got[j].shape_differs &&
                qh_marks_init(&cm->marks[j], cm->got[j]) == 0)
                cm->vs_got[j].marks = &cm->marks[j];
        }
    if (cm->stored)
        qh_judge_compare_start(e, cm->stored, &cm->vs_stored);
    qh_expect_scan(e, 0, compare_part, cm);
}

/* The vector against a profile other than the judged one: its own pass over the parts. */
static int vector_mistrusted_under(qh_case *c, const char *profile, qh_sb *why)
{
    qh_expectation ve;
    int mistrusted = 0;
    if (qh_expect_plan(&c->oc.call, profile, &ve) == 0) {
        comparison cm = {.stored = c->n_outputs > 0 && ve.code == QMM_OK ? &c->outputs[0].t
                                                                          : NULL};
        compare_with_expectation(&ve, &cm);
        mistrusted = qh_judge_vector(c->meta.expect, c->n_outputs, cm.stored, &ve,
                                     &cm.vs_stored, why);
    }
    qh_expectation_free(&ve);
    return mistrusted;
}

/* One backend's part in judging a case. */
typedef struct judged {
    qh_backend *b;
    const qh_eval_opts *o;
    qmm_call *call;
    qh_invocation inv;
    int returned;  /* qh_invoke ran the call (the verdict is not set yet) */
    double seconds;
} judged;

/* qh_judge_opts.rerun: the call again with the output pre-filled with `fill`. */
static int rerun(void *ctx, unsigned char fill, qh_invocation *again)
{
    judged *jb = ctx;
    qh_invoke_opts io = jb->o->invoke;
    io.fill = fill;
    return qh_invoke(jb->b, jb->call, &io, again);
}

/* Runs the call again on the same backend and on each variant; every answer must equal the
 * first bit for bit (status code and every output byte). */
static void check_determinism(judged *jb, qh_verdict *v)
{
    const qh_eval_opts *o = jb->o;
    for (int32_t r = -1; r < o->n_variants; r++) {
        qh_backend *vb = r < 0 ? jb->b : &o->variants[r];
        qh_invocation again;
        const char *who = r < 0 ? "a second run" : vb->spec;
        if (qh_invoke(vb, jb->call, &o->invoke, &again) != 0) {
            /* never passed over: a run that did not happen checked nothing */
            char prefix[600];
            snprintf(prefix, sizeof prefix, "--determinism: %s could not run: ", who);
            qh_judge_not_run(prefix, again.problem, sizeof again.problem, v);
            qh_invocation_free(&again);
            return;
        }
        int differs = qh_judge_again(&jb->inv, &again, who, v);
        qh_invocation_free(&again);
        if (differs)
            return;
    }
}

/* Judges the loaded case against n backends judged under the same profile (o[j].profile):
 * every backend called, then the expectation computed once, a part at a time, compared with
 * every answer (and the stored output) in the same pass; then each answer judged, run again
 * for determinism when asked, the worker's output kept, the vector's mistrust applied. */
static void judge_loaded(qh_case *c, int n, qh_backend *b, const qh_eval_opts *o, qh_verdict *v,
                         double *seconds, qh_marks *marks)
{
    judged jb[QH_EVAL_MAX];
    memset(jb, 0, sizeof jb);
    lend_stored_shape(c);
    qh_expectation e;
    if (qh_expect_plan(&c->oc.call, o[0].profile, &e) != 0) {
        for (int j = 0; j < n; j++) {
            v[j].status = QH_ERROR;
            v[j].reason = QH_REASON_REFERENCE_ERROR;
            qh_sb_printf(&v[j].summary, "reference: %s", e.message);
        }
        qh_expectation_free(&e);
        return;
    }
    int usable = 1;
    for (int j = 0; j < n; j++)
        usable = qh_judge_expectation(&e, &v[j]);
    if (!usable) {
        qh_expectation_free(&e);
        return;
    }
    comparison cm = {.n = n, .marks = marks};
    for (int j = 0; j < n; j++) {
        double tj = qh_mono_seconds();
        jb[j] = (judged){.b = &b[j], .o = &o[j], .call = &c->oc.call};
        if (o[j].verbose)
            sb_call_inputs(&v[j].detail, &c->oc.call);
        if (qh_invoke(&b[j], &c->oc.call, &o[j].invoke, &jb[j].inv) != 0) {
            qh_judge_not_run("", jb[j].inv.problem, sizeof jb[j].inv.problem, &v[j]);
            /* what it printed before it could not run (an open that hung) says why */
            sb_worker_output(&v[j].detail, &jb[j].inv);
        } else
            jb[j].returned = 1;
        /* the answer waits for the other backends' calls: the worker's mapping is no longer
         * read, so that a worker left running cannot change it meanwhile */
        if (jb[j].returned && jb[j].inv.outcome == QH_RETURNED && jb[j].inv.code == QMM_OK &&
            n > 1)
            qh_invocation_detach(&jb[j].inv);
        if (jb[j].returned && jb[j].inv.outcome == QH_RETURNED && jb[j].inv.code == QMM_OK)
            cm.got[j] = &jb[j].inv.y;
        jb[j].seconds = qh_mono_seconds() - tj;
    }
    const char *vp = vector_profile(c, &e);
    int own_profile = strcmp(vp, e.profile) == 0;
    if (own_profile && c->n_outputs > 0)
        cm.stored = &c->outputs[0].t;
    double ts = qh_mono_seconds();
    compare_with_expectation(&e, &cm);
    qh_sb why = {0};
    int mistrusted = -1; /* not looked at yet: only once some answer is judged */
    double shared = (qh_mono_seconds() - ts) / n;
    for (int j = 0; j < n; j++) {
        double tj = qh_mono_seconds();
        if (!jb[j].returned || !qh_judge_expectation(&e, &v[j])) {
            jb[j].seconds += shared + qh_mono_seconds() - tj;
            continue;
        }
        if (mistrusted < 0)
            mistrusted = own_profile ? qh_judge_vector(c->meta.expect, c->n_outputs, cm.stored,
                                                       &e, &cm.vs_stored, &why)
                                     : vector_mistrusted_under(c, vp, &why);
        qh_judge_opts jo = {.verbose = o[j].verbose, .text = 1, .fill = o[j].invoke.fill,
                            .rerun = rerun, .rerun_ctx = &jb[j]};
        qh_judge(&e, &jb[j].inv, cm.got[j] ? &cm.vs_got[j] : NULL, &jo, &v[j]);
        if (o[j].determinism && (v[j].status == QH_PASSED || v[j].status == QH_UNCHECKED ||
                                 v[j].status == QH_INCONCLUSIVE))
            check_determinism(&jb[j], &v[j]);
        if (o[j].verbose || (v[j].status != QH_PASSED && v[j].status != QH_SKIPPED))
            sb_worker_output(&v[j].detail, &jb[j].inv);
        if (mistrusted > 0)
            qh_judge_mistrust(&why, &v[j]);
        jb[j].seconds += shared + qh_mono_seconds() - tj;
    }
    qh_sb_free(&why);
    for (int j = 0; j < n; j++) {
        qh_invocation_free(&jb[j].inv);
        if (seconds)
            seconds[j] = jb[j].seconds;
    }
    qh_expectation_free(&e);
}

void qh_judge_case(qh_case *c, qh_backend *b, const qh_eval_opts *o, qh_verdict *v)
{
    judge_loaded(c, 1, b, o, v, NULL, NULL);
}

/* What the reports say of a case beside its verdicts: its tags and description, y's shape. */
typedef struct case_facts {
    const qh_meta *meta; /* NULL: the case did not load */
    int y_known;
    int32_t y_rank;
    int64_t y_dims[QMM_MAX_RANK];
} case_facts;

/* The verdict's mismatches and, for wrong values, where they all lie (`marks`, handed over),
 * and the case's facts, into the row; what does not fit in memory is left out. */
static void fill_facts(const case_facts *f, const qh_verdict *v, qh_marks *marks, qh_result *res)
{
    res->y_known = f->y_known;
    res->y_rank = f->y_rank;
    memcpy(res->y_dims, f->y_dims, sizeof res->y_dims);
    if (f->meta && f->meta->n_tags > 0 &&
        (res->tags = malloc(sizeof *res->tags * (size_t)f->meta->n_tags)) != NULL) {
        memcpy(res->tags, f->meta->tags, sizeof *res->tags * (size_t)f->meta->n_tags);
        res->n_tags = f->meta->n_tags;
    }
    if (f->meta && f->meta->description[0])
        res->description = strdup(f->meta->description);
    if (v->n_mismatches > 0 &&
        (res->mismatches = malloc(sizeof *res->mismatches * (size_t)v->n_mismatches)) != NULL) {
        memcpy(res->mismatches, v->mismatches, sizeof *res->mismatches * (size_t)v->n_mismatches);
        res->n_mismatches = v->n_mismatches;
    }
    if (marks && marks->bits && v->reason == QH_REASON_VALUES &&
        (res->marks = malloc(sizeof *res->marks)) != NULL)
        *res->marks = *marks;
    else if (marks)
        qh_marks_free(marks);
}

/* A result's row from its verdict (the verdict's text handed over). */
static void fill_result(const qh_case_ref *ref, qh_backend *b, qh_verdict *v, qh_result *res)
{
    res->backend = b->spec;
    /* the table's own name only where it is ours to trust: never an isolated plugin's (the
     * parent holds no table) nor an exec: process's hello, which says what it likes */
    res->backend_name = b->isolated || qh_exec_is_spec(b->spec) ? NULL : b->table.name;
    res->cpu = b->iso.cpu ? qh_cpu_name(b->iso.cpu) : NULL;
    res->data_set = ref->data_set;
    res->name = strdup(ref->name);
    res->path = strdup(ref->dir);
    res->status = v->status;
    res->reason = v->reason;
    res->errors = v->errors;
    res->total = v->total;
    res->summary = v->summary.s ? qh_sb_take(&v->summary) : NULL;
    res->detail = v->detail.s ? qh_sb_take(&v->detail) : NULL;
    res->first_mismatch = v->first.s ? qh_sb_take(&v->first) : NULL;
}

void qh_eval_cases(const qh_case_ref *ref, int n, qh_backend *b, const qh_eval_opts *o,
                   qh_result *res)
{
    double t0 = qh_mono_seconds(), seconds[QH_EVAL_MAX] = {0};
    qh_marks marks[QH_EVAL_MAX];
    memset(marks, 0, sizeof marks);
    case_facts facts = {0};
    qh_verdict one, *v = n > 1 ? calloc((size_t)n, sizeof *v) : &one; /* zeroed: initialised */
    for (int j = 0; j < n; j++)
        memset(&res[j], 0, sizeof res[j]);
    if (!v) { /* every row an ERROR, as any problem of the harness's is */
        for (int j = 0; j < n; j++) {
            res[j].status = QH_ERROR;
            res[j].reason = QH_REASON_NOT_RUN;
            res[j].backend = b[j].spec;
            res[j].summary = strdup("out of memory");
        }
        return;
    }
    qh_verdict_init(&one);
    qh_case c;
    qh_error err = {{0}};
    if (qh_case_load(ref, &c, &err) != 0) {
        for (int j = 0; j < n; j++) {
            v[j].status = QH_ERROR;
            v[j].reason = QH_REASON_CASE_ERROR;
            qh_sb_puts(&v[j].summary, err.msg);
        }
    } else {
        /* one expectation for the backends judged under one profile (all of them, for run) */
        for (int j = 0, k; j < n; j = k) {
            for (k = j + 1; k < n && strcmp(o[k].profile ? o[k].profile : QH_DEFAULT_PROFILE,
                                            o[j].profile ? o[j].profile : QH_DEFAULT_PROFILE) == 0;
                 k++)
                ;
            judge_loaded(&c, k - j, &b[j], &o[j], &v[j], &seconds[j],
                         o[j].marks ? &marks[j] : NULL);
        }
        facts.meta = &c.meta;
        const qmm_tensor *y = qh_call_output(&c.oc.call);
        if (c.oc.y_shape_known) {
            facts.y_known = 1;
            facts.y_rank = y->rank;
            memcpy(facts.y_dims, y->dims, sizeof facts.y_dims);
        }
    }
    double load = (qh_mono_seconds() - t0) / n;
    for (int j = 0; j < n; j++)
        load -= seconds[j] / n;
    for (int j = 0; j < n; j++) {
        fill_facts(&facts, &v[j], &marks[j], &res[j]);
        fill_result(ref, &b[j], &v[j], &res[j]);
        res[j].seconds = seconds[j] + (load > 0 ? load : 0);
        qh_verdict_free(&v[j]);
    }
    if (facts.meta)
        qh_case_free(&c);
    if (v != &one)
        free(v);
}

void qh_eval_case(const qh_case_ref *ref, qh_backend *b, const qh_eval_opts *o, qh_result *res)
{
    qh_eval_cases(ref, 1, b, o, res);
}

/* ---- expected failures ---------------------------------------------------------------- */

/* The statuses an entry may expect: a wrong answer, a dead or hung backend, and UNCHECKED
 * (invalid input accepted: not a failure, but a behaviour a CI pins so that a fix shows up
 * as XPASS). PASSED beside them marks a behaviour that is not deterministic (a backend
 * returning uninitialised memory is sometimes right): a pass then stays PASSED, not XPASS.
 * ERROR is the case's own fault and never waived. */
#define XFAIL_WAIVABLE                                                                      \
    ((1u << QH_FAILED) | (1u << QH_CRASHED) | (1u << QH_TIMEOUT) | (1u << QH_UNCHECKED) |  \
     (1u << QH_PASSED))

/* "FAILED,CRASHED" -> bits; -1 with the word it could not take. */
static int xfail_statuses(char *list, unsigned *bits, const char **bad)
{
    *bits = 0;
    for (char *save = NULL, *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int s = 0; s < QH_STATUS_COUNT; s++)
            if (strcmp(w, qh_case_status_name((qh_case_status)s)) == 0)
                found = s;
        if (found < 0 || !(XFAIL_WAIVABLE & (1u << found))) {
            *bad = w;
            return -1;
        }
        *bits |= 1u << found;
    }
    if (*bits == 1u << QH_PASSED) { /* PASSED alone expects no failure */
        *bad = "PASSED";
        return -1;
    }
    return *bits ? 0 : -1;
}

/* One entry's words after the pattern: status=..., backend=..., until a '#' word. Returns 0,
 * or -1 with err naming the line. */
static int xfail_options(char *save, qh_xfail_entry *e, const char *path, qh_error *err)
{
    int statuses = 0; /* status= given already: a second one replaced the first, silently */
    for (char *w = strtok_r(NULL, " \t\r", &save); w && w[0] != '#';
         w = strtok_r(NULL, " \t\r", &save)) {
        const char *bad = "";
        if (strncmp(w, "status=", 7) == 0 && statuses++ == 0) {
            if (xfail_statuses(w + 7, &e->statuses, &bad) != 0) {
                snprintf(err->msg, sizeof err->msg, "%s:%d: status '%.64s': expected FAILED, "
                         "CRASHED, TIMEOUT or UNCHECKED, comma-separated (PASSED only "
                         "beside one of them)", path, e->line, bad);
                return -1;
            }
        } else if (strncmp(w, "backend=", 8) == 0 && w[8] && !e->backend) {
            e->backend = strdup(w + 8);
        } else {
            snprintf(err->msg, sizeof err->msg, "%s:%d: '%.64s': expected status=S or "
                     "backend=NAME (once each) after the case pattern", path, e->line, w);
            return -1;
        }
    }
    return 0;
}

int qh_xfail_read(const char *path, qh_xfail *x, qh_error *err)
{
    memset(x, 0, sizeof *x);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (qh_read_file(path, (size_t)1 << 24, &buf, &len, err) != 0)
        return -1;
    char *text = realloc(buf, len + 1);
    x->path = strdup(path);
    if (!text || !x->path) {
        free(text ? (void *)text : (void *)buf);
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
        qh_xfail_free(x);
        return -1;
    }
    text[len] = '\0';
    const char *nul = memchr(text, '\0', len);
    if (nul) { /* it would end the list there, leaving every later entry unread */
        int line = 1;
        for (const char *p = text; p < nul; p++)
            line += *p == '\n';
        snprintf(err->msg, sizeof err->msg, "%s:%d: a NUL byte: an expected-failure list is "
                 "text", path, line);
        free(text);
        qh_xfail_free(x);
        return -1;
    }
    int rc = 0, number = 0;
    /* a UTF-8 byte-order mark (some editors write one) is no part of the first pattern: it
     * made the first entry match nothing, stale */
    char *start = len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? text + 3 : text;
    for (char *next = start, *line; rc == 0 && (line = next) != NULL;) {
        number++;
        char *nl = strchr(line, '\n');
        next = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        char *save = NULL;
        char *pattern = strtok_r(line, " \t\r", &save);
        if (!pattern || pattern[0] == '#')
            continue;
        qh_xfail_entry *p = realloc(x->entries, sizeof *p * (size_t)(x->count + 1));
        if (!p) {
            snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
            rc = -1;
            break;
        }
        x->entries = p;
        qh_xfail_entry *e = &x->entries[x->count++];
        *e = (qh_xfail_entry){.pattern = strdup(pattern), .line = number,
                              .statuses = 1u << QH_FAILED};
        rc = xfail_options(save, e, path, err);
    }
    free(text);
    if (rc != 0)
        qh_xfail_free(x);
    return rc;
}

/* backend= is matched against the name the backend gives itself, which only an in-process
 * backend tells the harness, and against the spec as given (the row's `backend`). */
static int xfail_matches(const qh_xfail_entry *e, const char *backend_name, const qh_result *res)
{
    if (!e->pattern || fnmatch(e->pattern, res->name, 0) != 0)
        return 0;
    if (!e->backend)
        return 1;
    return (backend_name && fnmatch(e->backend, backend_name, 0) == 0) ||
           (res->backend && fnmatch(e->backend, res->backend, 0) == 0);
}

/* "FAILED,CRASHED" for an entry's statuses. */
static void xfail_status_words(unsigned bits, qh_sb *b)
{
    const char *sep = "";
    for (int s = 0; s < QH_STATUS_COUNT; s++)
        if (bits & (1u << s)) {
            qh_sb_printf(b, "%s%s", sep, qh_case_status_name((qh_case_status)s));
            sep = ",";
        }
}

void qh_xfail_apply(qh_xfail *x, const char *backend_name, qh_result *res)
{
    /* the first matching entry whose statuses hold the row's status waives it; every one that
     * holds it counts it (none is stale, whichever comes first); else the first matching one
     * speaks. Until 2026-11-29 a PASSED row waived by a later entry (status=FAILED,PASSED) was
     * still made XPASS by an earlier one that expects FAILED alone, so the verdict hung on the
     * order of the lines. */
    qh_xfail_entry *first = NULL, *waiver = NULL;
    for (int32_t i = 0; i < x->count; i++) {
        qh_xfail_entry *e = &x->entries[i];
        if (!xfail_matches(e, backend_name, res))
            continue;
        e->matched++;
        if (!first)
            first = e;
        if (e->statuses & (1u << res->status)) {
            e->waived++;
            if (!waiver)
                waiver = e;
        }
    }
    if (waiver) {
        if (res->status != QH_PASSED)
            res->status = QH_XFAIL;
        return;
    }
    if (!first)
        return;
    /* matched, but not in the status it expects: say so on the row */
    qh_sb note = {0};
    qh_sb_printf(&note, "expected ");
    xfail_status_words(first->statuses, &note);
    qh_sb_printf(&note, " (%s:%d)", x->path ? x->path : "--xfail", first->line);
    if (res->status == QH_PASSED) {
        res->status = QH_XPASS;
        first->xpassed++;
        free(res->summary);
        res->summary = qh_sb_take(&note);
        return;
    }
    qh_sb d = {0};
    qh_sb_printf(&d, "%s    note: %s, got %s\n", res->detail ? res->detail : "", note.s,
                 qh_case_status_name(res->status));
    qh_sb_free(&note);
    free(res->detail);
    res->detail = qh_sb_take(&d);
}

int qh_xfail_stale(const qh_xfail *x, int32_t i, char *buf, size_t size)
{
    const qh_xfail_entry *e = &x->entries[i];
    if (e->waived || e->xpassed)
        return 0;
    qh_sb b = {0};
    qh_sb_printf(&b, "%s:%d: expected-failure entry '%s", x->path ? x->path : "--xfail", e->line,
                 e->pattern);
    if (e->backend)
        qh_sb_printf(&b, " backend=%s", e->backend);
    qh_sb_printf(&b, "' ");
    if (e->matched == 0) {
        qh_sb_printf(&b, "matches no case");
    } else {
        qh_sb_printf(&b, "matched %lld row(s), none ", (long long)e->matched);
        xfail_status_words(e->statuses, &b);
    }
    snprintf(buf, size, "%s", b.s ? b.s : "");
    qh_sb_free(&b);
    return 1;
}

void qh_xfail_free(qh_xfail *x)
{
    for (int32_t i = 0; i < x->count; i++) {
        free(x->entries[i].pattern);
        free(x->entries[i].backend);
    }
    free(x->entries);
    free(x->path);
    memset(x, 0, sizeof *x);
}
