/* harness/run/runner.c — judging one case against one backend. */
#include "harness/run/runner.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/io/clean.h"
#include "harness/run/compare.h"
#include "harness/run/exec.h"
#include "harness/run/cpu.h"
#include "harness/run/expect.h"
#include "harness/run/invoke.h"
#include "harness/report/strbuf.h"
#include "ops/qmm_ops.h"

static const char *const status_names[QH_STATUS_COUNT] = {
    "PASSED", "FAILED", "MISTRUSTED", "SKIPPED", "UNCHECKED",
    "CRASHED", "TIMEOUT", "ERROR", "XFAIL", "XPASS",
};
static const char *const status_keys[QH_STATUS_COUNT] = {
    "passed", "failed", "mistrusted", "skipped", "unchecked",
    "crashed", "timeout", "error", "xfail", "xpass",
};

const char *qh_case_status_name(qh_case_status s)
{
    return s < QH_STATUS_COUNT ? status_names[s] : "UNKNOWN";
}

const char *qh_case_status_key(qh_case_status s)
{
    return s < QH_STATUS_COUNT ? status_keys[s] : "unknown";
}

int qh_case_status_is_bad(qh_case_status s)
{
    return s == QH_FAILED || s == QH_CRASHED || s == QH_TIMEOUT || s == QH_ERROR;
}

void qh_result_free(qh_result *r)
{
    free(r->name);
    free(r->path);
    free(r->summary);
    free(r->detail);
    free(r->first_mismatch);
    memset(r, 0, sizeof *r);
}


char *qh_repro_command(const qh_case_ref *ref, const char *backend_spec, const char *profile)
{
    qh_sb b = {0};
    qh_sb_puts(&b, "qmmcheck repro --backend ");
    qh_sb_shell_word(&b, backend_spec);
    if (profile && strcmp(profile, QH_DEFAULT_PROFILE) != 0) {
        qh_sb_puts(&b, " --profile ");
        qh_sb_shell_word(&b, profile);
    }
    if (ref->data_set > 0)
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
            if (t->dtype == QMM_DTYPE_FLOAT || t->dtype == QMM_DTYPE_FLOAT16 ||
                t->dtype == QMM_DTYPE_BFLOAT16)
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

/* ---- judging -------------------------------------------------------------------------- */

typedef struct verdict {
    qh_case_status status;
    qh_sb summary;
    qh_sb detail;
    qh_sb first; /* the first mismatching element, for reports that show one line */
} verdict;

/* Untrusted text (a plugin's status message, a worker's problem) as one clean line, read at
 * most `max` bytes far: a plugin need not have terminated its message. */
typedef struct clean_text {
    char s[QH_CLEAN_LINE_MAX + 1];
} clean_text;

static const char *cleaned(clean_text *t, const char *s, size_t max)
{
    qh_clean_into(t->s, sizeof t->s, s, strnlen(s, max), QH_CLEAN_LINE_MAX);
    return t->s;
}

#define CLEAN(t, field) cleaned(&(t), (field), sizeof(field))

/* What the worker printed during the call (a process's stderr, a traceback): a header, then
 * one detail line per line printed, "    | " and the line cleaned on its own and cut at
 * QH_CLEAN_LINE_MAX, so nothing printed starts a line of its own. At most WORKER_LINES_SHOWN
 * lines and WORKER_BYTES_SHOWN cleaned bytes, the last ones (where a traceback ends), after a
 * line counting those left out. */
#define WORKER_LINES_SHOWN 64
#define WORKER_BYTES_SHOWN 4096

/* The line s[start, stop) cleaned into t (a CR before its newline left out): its length. */
static size_t clean_line(clean_text *t, const char *s, size_t start, size_t stop)
{
    if (stop > start && s[stop - 1] == '\r')
        stop--;
    return qh_clean_into(t->s, sizeof t->s, s + start, stop - start, QH_CLEAN_LINE_MAX);
}

static void sb_worker_output(qh_sb *b, const qh_invocation *inv)
{
    const char *s = inv->output ? inv->output : "";
    size_t n = strlen(s);
    if (n == 0 && inv->output_dropped == 0)
        return;
    qh_sb_printf(b, "    worker output (%zu bytes, %zu dropped):\n", n, inv->output_dropped);
    if (n == 0)
        return;
    size_t end = s[n - 1] == '\n' ? n - 1 : n; /* a last newline ends a line, starts none */
    clean_text t;
    size_t first = end, stop = end, shown = 0, bytes = 0;
    for (;;) { /* back from the last line, while they fit: lines from `first` on are shown */
        size_t start = stop;
        while (start > 0 && s[start - 1] != '\n')
            start--;
        size_t len = clean_line(&t, s, start, stop);
        if (shown == WORKER_LINES_SHOWN || (shown && bytes + len > WORKER_BYTES_SHOWN))
            break;
        shown++, bytes += len, first = start;
        if (start == 0)
            break;
        stop = start - 1;
    }
    size_t left = 0;
    for (size_t i = 0; i < first; i++)
        left += s[i] == '\n';
    if (left)
        qh_sb_printf(b, "    ... %zu earlier lines not shown\n", left);
    for (size_t start = first;; start = stop + 1) {
        const char *nl = memchr(s + start, '\n', end - start);
        stop = nl ? (size_t)(nl - s) : end;
        qh_sb_printf(b, "    |%s%s\n", clean_line(&t, s, start, stop) ? " " : "", t.s);
        if (!nl)
            break;
    }
}

/* Does the stored output agree with the reference? `cmp` is the stored output compared with
 * the expectation (read only when the reference answers OK and the vector stores one).
 * Returns 1 when the vector is mistrusted, with the reason in `why`. */
static int vector_mistrusted(const qh_case *c, const qh_expectation *e, const qh_compare *cmp,
                             qh_sb *why)
{
    if (c->meta.expect != QMM_OK && c->meta.expect != e->code) {
        qh_sb_printf(why, "qmm.meta expects %s but the reference answers %s%s%s",
                     qmm_status_name(c->meta.expect), qmm_status_name(e->code),
                     e->message[0] ? ": " : "", e->message);
        return 1;
    }
    if (e->code != QMM_OK) {
        if (c->meta.expect == QMM_OK && c->n_outputs > 0) {
            qh_sb_printf(why, "the vector stores an output, but the reference rejects it: %s",
                         e->message);
            return 1;
        }
        return 0;
    }
    if (c->n_outputs == 0 || cmp->errors == 0)
        return 0;
    const qmm_tensor *stored = &c->outputs[0].t;
    if (cmp->shape_differs) {
        char d1[256], d2[256];
        qh_format_dims(stored, d1, sizeof d1);
        qh_format_dims(&e->exact, d2, sizeof d2);
        qh_sb_printf(why, "stored output_0 is %s %s, the reference gives %s %s",
                     qmm_dtype_name(stored->dtype), d1, qmm_dtype_name(e->exact.dtype), d2);
        return 1;
    }
    int64_t i = cmp->kept[0];
    qh_sb_printf(why,
                 "stored output_0 differs from the reference at %lld of %lld elements "
                 "(first at index %lld: stored %lld, reference %lld)",
                 (long long)cmp->errors, (long long)cmp->total, (long long)i,
                 (long long)qh_tensor_int(stored, i), (long long)cmp->expected[0]);
    return 1;
}

/* What one pass over the expectation's parts compares it with: the backend's output and the
 * vector's stored output (each NULL when not compared). */
typedef struct comparison {
    const qmm_tensor *got, *stored;
    qh_compare vs_got, vs_stored;
} comparison;

static void compare_part(void *ctx, int64_t first, int64_t count, const void *exact,
                         const void *alt)
{
    comparison *cm = ctx;
    if (cm->got)
        qh_compare_part(exact, alt, cm->got, first, count, &cm->vs_got);
    if (cm->stored)
        qh_compare_part(exact, alt, cm->stored, first, count, &cm->vs_stored);
}

/* Computes e a part at a time (never the whole output at once), comparing each part with
 * cm->got and cm->stored; e->code may change (an answer the data gives, memory, an
 * interruption). */
static void compare_with_expectation(qh_expectation *e, comparison *cm)
{
    if (cm->got)
        qh_compare_start(&e->exact, cm->got, &cm->vs_got);
    if (cm->stored)
        qh_compare_start(&e->exact, cm->stored, &cm->vs_stored);
    qh_expect_scan(e, 0, compare_part, cm);
}

/* Runs the call again on the same backend and on each variant; every answer must equal the
 * first bit for bit (status code and every output byte). */
static void check_determinism(qh_case *c, qh_backend *hb, const qh_eval_opts *o,
                              const qh_invocation *first, verdict *v)
{
    for (int32_t r = -1; r < o->n_variants; r++) {
        qh_backend *vb = r < 0 ? hb : &o->variants[r];
        qh_invocation again;
        const char *who = r < 0 ? "a second run" : vb->spec;
        clean_text t;
        if (qh_invoke(vb, &c->call, &o->invoke, &again) != 0) {
            /* never passed over: a run that did not happen checked nothing */
            v->status = QH_ERROR;
            qh_sb_printf(&v->summary, "--determinism: %s could not run: %s", who,
                         CLEAN(t, again.problem));
            qh_invocation_free(&again);
            return;
        }
        size_t bytes = (size_t)qmm_tensor_numel(&first->y) * qmm_dtype_size(first->y.dtype);
        if (again.outcome != QH_RETURNED || again.code != first->code) {
            v->status = QH_FAILED;
            qh_sb_printf(&v->summary, "not deterministic: %s answered %s%s%s, the first run %s",
                         who, again.outcome == QH_RETURNED ? qmm_status_name(again.code) : "",
                         again.outcome == QH_RETURNED ? "" : "abnormally: ",
                         again.outcome == QH_RETURNED ? "" : CLEAN(t, again.problem),
                         qmm_status_name(first->code));
        } else if (first->code == QMM_OK && bytes &&
                   memcmp(first->y.data, again.y.data, bytes) != 0) {
            qh_compare cmp;
            qh_compare_outputs(&first->y, NULL, &again.y, &cmp);
            int64_t i = cmp.n_kept ? cmp.kept[0] : 0;
            v->status = QH_FAILED;
            qh_sb_printf(&v->summary,
                         "not deterministic: %s differs from the first run at %lld of %lld "
                         "elements (first at index %lld: %lld vs %lld)",
                         who, (long long)cmp.errors, (long long)cmp.total, (long long)i,
                         (long long)qh_tensor_int(&again.y, i),
                         (long long)qh_tensor_int(&first->y, i));
        }
        qh_invocation_free(&again);
        if (v->status == QH_FAILED)
            return;
    }
}

/* 1 when every byte of element i of y is `fill`. */
static int element_is_fill(const qmm_tensor *y, int64_t i, unsigned char fill)
{
    size_t es = qmm_dtype_size(y->dtype);
    const unsigned char *p = (const unsigned char *)y->data + (size_t)i * es;
    for (size_t k = 0; k < es; k++)
        if (p[k] != fill)
            return 0;
    return 1;
}

/* The first element at or after `from` whose bytes are all `fill`, or n. memchr skips the
 * bytes that cannot start one, so an output of several GiB with no fill costs one fast pass. */
static int64_t next_fill(const qmm_tensor *y, int64_t from, int64_t n, unsigned char fill)
{
    size_t es = qmm_dtype_size(y->dtype);
    const unsigned char *base = y->data, *end = base + (size_t)n * es;
    const unsigned char *p = base + (size_t)from * es;
    while (p < end) {
        const unsigned char *hit = memchr(p, fill, (size_t)(end - p));
        if (!hit)
            return n;
        int64_t i = (int64_t)((size_t)(hit - base) / es);
        if (element_is_fill(y, i, fill))
            return i;
        p = base + (size_t)(i + 1) * es;
    }
    return n;
}

/* A backend answered OK. An element still holding the fill may be unwritten, or written with
 * a value that happens to be the fill (165 everywhere is a right answer for K = 0): only then
 * is the call run again with another fill, and an element holding the fill both times was
 * never written. Elements that differ otherwise between the runs are not deterministic.
 * Returns 1 with the verdict set when the backend fails this. */
static int check_unwritten(qh_case *c, qh_backend *hb, const qh_eval_opts *o,
                           const qh_invocation *first, verdict *v)
{
    const qmm_tensor *y = &first->y;
    /* qh_invoke's fill (0xa5 unless asked otherwise), then its complement (0x5a) */
    const unsigned char fill1 = o->invoke.fill ? o->invoke.fill : 0xa5;
    const unsigned char fill2 = (unsigned char)~fill1;
    int64_t n = qmm_tensor_numel(y);
    int64_t i0 = n > 0 ? next_fill(y, 0, n, fill1) : 0;
    if (i0 >= n)
        return 0;
    qh_invoke_opts io = o->invoke;
    io.fill = fill2;
    qh_invocation again;
    clean_text t;
    if (qh_invoke(hb, &c->call, &io, &again) != 0) {
        v->status = QH_ERROR;
        qh_sb_printf(&v->summary, "%s", CLEAN(t, again.problem));
        qh_invocation_free(&again);
        return 1;
    }
    if (again.outcome != QH_RETURNED || again.code != QMM_OK) {
        v->status = QH_FAILED;
        qh_sb_printf(&v->summary,
                     "not deterministic: a second run (to find unwritten elements) answered %s%s",
                     again.outcome == QH_RETURNED ? qmm_status_name(again.code) : "abnormally: ",
                     again.outcome == QH_RETURNED ? "" : CLEAN(t, again.problem));
        qh_invocation_free(&again);
        return 1;
    }
    int64_t unwritten = 0, changed = 0, first_unwritten = -1, first_changed = -1;
    size_t es = qmm_dtype_size(y->dtype);
    for (int64_t i = i0; i < n; i = next_fill(y, i + 1, n, fill1)) {
        if (element_is_fill(&again.y, i, fill2)) {
            if (unwritten++ == 0)
                first_unwritten = i;
        } else if (memcmp((const char *)again.y.data + (size_t)i * es,
                          (const char *)y->data + (size_t)i * es, es) != 0) {
            if (changed++ == 0)
                first_changed = i;
        }
    }
    if (unwritten) {
        v->status = QH_FAILED;
        qh_sb_puts(&v->summary, "did not write ");
        qh_sb_coord(&v->summary, y, first_unwritten);
        qh_sb_printf(&v->summary, " (%lld of %lld elements unwritten)", (long long)unwritten,
                     (long long)n);
        qh_sb_printf(&v->detail, "    first unwritten element: index %lld; it kept the "
                     "output's fill byte in two runs with different fills (0x%02x, 0x%02x)\n",
                     (long long)first_unwritten, fill1, fill2);
    } else if (changed) {
        v->status = QH_FAILED;
        qh_sb_puts(&v->summary, "not deterministic: ");
        qh_sb_coord(&v->summary, y, first_changed);
        qh_sb_printf(&v->summary, " was %lld in one run and %lld in another (%lld elements "
                     "differ)", (long long)qh_tensor_int(y, first_changed),
                     (long long)qh_tensor_int(&again.y, first_changed), (long long)changed);
    }
    qh_invocation_free(&again);
    return unwritten || changed;
}

/* Invalid geometry: give the backend the stored output's shape so a backend that wrongly
 * accepts the call still has somewhere to write. */
static void lend_stored_shape(qh_case *c)
{
    if (c->y_shape_known || c->n_outputs == 0)
        return;
    qmm_tensor *y = qh_call_output(&c->call);
    y->rank = c->outputs[0].t.rank;
    memcpy(y->dims, c->outputs[0].t.dims, sizeof y->dims);
}

/* 1 when the reference's answer can judge the backend (OK or INVALID_ARGUMENT); else 0 with
 * the verdict set (SKIPPED, or ERROR). */
static int expectation_usable(const qh_expectation *e, verdict *v)
{
    if (e->code == QMM_UNSUPPORTED) {
        v->status = QH_SKIPPED;
        qh_sb_printf(&v->summary, "the reference cannot judge this case: %s", e->message);
        return 0;
    }
    if (e->code != QMM_OK && e->code != QMM_INVALID_ARGUMENT) {
        v->status = QH_ERROR;
        qh_sb_printf(&v->summary, "reference: %s: %s", qmm_status_name(e->code), e->message);
        return 0;
    }
    return 1;
}

/* The profile the vector's own qmm.meta names (spec by default; an unknown one: the judged
 * profile), which it is trusted against whatever profile the backend is judged under. */
static const char *vector_profile(const qh_case *c, const qh_expectation *e)
{
    const char *vp = c->meta.profile[0] ? c->meta.profile : QH_DEFAULT_PROFILE;
    return qh_profile_known(vp) ? vp : e->profile;
}

/* The vector against a profile other than the judged one: its own pass over the parts. */
static int vector_mistrusted_under(qh_case *c, const char *profile, qh_sb *why)
{
    qh_expectation ve;
    int mistrusted = 0;
    if (qh_expect_plan(&c->call, profile, &ve) == 0) {
        comparison cm = {.stored = c->n_outputs > 0 && ve.code == QMM_OK ? &c->outputs[0].t
                                                                          : NULL};
        compare_with_expectation(&ve, &cm);
        mistrusted = vector_mistrusted(c, &ve, &cm.vs_stored, why);
    }
    qh_expectation_free(&ve);
    return mistrusted;
}

/* The call did not return normally (interrupted, crashed, hung, broke a memory rule): sets
 * the verdict and returns 1; 0 when it returned. */
static int classify_abnormal(const qh_invocation *inv, verdict *v)
{
    clean_text said;
    if (inv->outcome == QH_INTERRUPTED) {
        v->status = QH_ERROR;
        qh_sb_puts(&v->summary, "interrupted");
        return 1;
    }
    if (inv->outcome == QH_DIED)
        v->status = QH_CRASHED;
    else if (inv->outcome == QH_HUNG)
        v->status = QH_TIMEOUT;
    else if (inv->outcome == QH_MISBEHAVED)
        v->status = QH_FAILED;
    else if (inv->outcome == QH_MALFORMED)
        v->status = QH_ERROR;
    else
        return 0;
    qh_sb_puts(&v->summary, CLEAN(said, inv->problem));
    return 1;
}

/* The reference rejects the input: the backend must answer INVALID_ARGUMENT too. */
static void classify_invalid(const qh_expectation *e, const qh_invocation *inv, int verbose,
                             verdict *v)
{
    clean_text said;
    if (inv->code == QMM_INVALID_ARGUMENT) {
        v->status = QH_PASSED;
        if (verbose)
            qh_sb_printf(&v->detail, "  rejected as expected: %s\n",
                         CLEAN(said, inv->st.message));
    } else if (inv->code == QMM_OK) {
        v->status = QH_UNCHECKED;
        qh_sb_printf(&v->summary, "accepted invalid input; the reference says: %s", e->message);
    } else {
        v->status = QH_FAILED;
        qh_sb_printf(&v->summary, "answered %s for invalid input (expected INVALID_ARGUMENT): %s",
                     qmm_status_name(inv->code), CLEAN(said, inv->st.message));
    }
}

/* A valid call the backend answered OK: every element written, each equal to the reference's
 * (or to the overflow-permitted alternative). */
static void classify_output(qh_case *c, qh_backend *hb, const qh_eval_opts *o,
                            const qh_expectation *e, const qh_invocation *inv,
                            const qh_compare *vs_got, verdict *v)
{
    if (check_unwritten(c, hb, o, inv, v))
        return; /* the verdict is set: an unwritten element says more than the mismatch */
    qh_compare cmp = *vs_got;
    if (cmp.errors == 0) {
        v->status = QH_PASSED;
        return;
    }
    v->status = QH_FAILED;
    qh_sb_printf(&v->summary, "errors:%lld total:%lld", (long long)cmp.errors,
                 (long long)cmp.total);
    if (cmp.n_kept > 0) {
        int64_t i = cmp.kept[0];
        qh_sb_coord(&v->first, &e->exact, i);
        qh_sb_printf(&v->first, " (index %lld): got %lld, expected %lld", (long long)i,
                     (long long)qh_tensor_int(&inv->y, i), (long long)cmp.expected[0]);
    }
    qh_explain_mismatches(&v->detail, e, &inv->y, &cmp, o->verbose ? QH_COMPARE_KEEP : 4);
}

/* The backend's answer against the reference's. Everything the backend or its worker says is
 * cleaned: a summary stays one line. */
static void classify(qh_case *c, qh_backend *hb, const qh_eval_opts *o, const qh_expectation *e,
                     const qh_invocation *inv, const qh_compare *vs_got, verdict *v)
{
    clean_text said;
    if (classify_abnormal(inv, v))
        return;
    if (inv->code == QMM_UNSUPPORTED) {
        v->status = QH_SKIPPED;
        qh_sb_printf(&v->summary, "unsupported: %s", CLEAN(said, inv->st.message));
    } else if (e->code == QMM_INVALID_ARGUMENT) {
        classify_invalid(e, inv, o->verbose, v);
    } else if (inv->code != QMM_OK) {
        v->status = QH_FAILED;
        qh_sb_printf(&v->summary, "answered %s for a valid call: %s",
                     qmm_status_name(inv->code), CLEAN(said, inv->st.message));
    } else {
        classify_output(c, hb, o, e, inv, vs_got, v);
    }
}

/* A mistrusted vector turns a pass into MISTRUSTED; any other verdict keeps its status and
 * notes the mistrust. */
static void apply_mistrust(const qh_sb *why, verdict *v)
{
    if (v->status == QH_PASSED) {
        v->status = QH_MISTRUSTED;
        qh_sb_puts(&v->summary, why->s ? why->s : "");
    } else {
        qh_sb_printf(&v->detail, "    note: the vector is also mistrusted: %s\n",
                     why->s ? why->s : "");
    }
}

/* Calls the backend and judges its answer: the expectation computed a part at a time and
 * compared with the output and the stored one in the same pass, the answer classified, then
 * (when asked) run again for determinism, the worker's output kept, the vector's mistrust
 * applied. */
static void invoke_and_judge(qh_case *c, qh_backend *hb, const qh_eval_opts *o,
                             qh_expectation *e, verdict *v)
{
    qh_invocation inv = {0};
    if (qh_invoke(hb, &c->call, &o->invoke, &inv) != 0) {
        clean_text said;
        v->status = QH_ERROR;
        qh_sb_puts(&v->summary, CLEAN(said, inv.problem));
        qh_invocation_free(&inv);
        return;
    }
    const char *vp = vector_profile(c, e);
    int own_profile = strcmp(vp, e->profile) == 0;
    comparison cm = {0};
    if (inv.outcome == QH_RETURNED && inv.code == QMM_OK)
        cm.got = &inv.y;
    if (own_profile && c->n_outputs > 0)
        cm.stored = &c->outputs[0].t;
    compare_with_expectation(e, &cm);
    if (expectation_usable(e, v)) {
        qh_sb why = {0};
        int mistrusted = own_profile ? vector_mistrusted(c, e, &cm.vs_stored, &why)
                                     : vector_mistrusted_under(c, vp, &why);
        classify(c, hb, o, e, &inv, &cm.vs_got, v);
        if (o->determinism && (v->status == QH_PASSED || v->status == QH_UNCHECKED))
            check_determinism(c, hb, o, &inv, v);
        if (o->verbose || (v->status != QH_PASSED && v->status != QH_SKIPPED))
            sb_worker_output(&v->detail, &inv);
        if (mistrusted)
            apply_mistrust(&why, v);
        qh_sb_free(&why);
    }
    qh_invocation_free(&inv);
}

static void judge(qh_case *c, qh_backend *hb, const qh_eval_opts *o, verdict *v)
{
    lend_stored_shape(c);
    qh_expectation e;
    if (qh_expect_plan(&c->call, o->profile, &e) != 0) {
        v->status = QH_ERROR;
        qh_sb_printf(&v->summary, "reference: %s", e.message);
        return;
    }
    if (expectation_usable(&e, v)) {
        if (o->verbose)
            sb_call_inputs(&v->detail, &c->call);
        invoke_and_judge(c, hb, o, &e, v);
    }
    qh_expectation_free(&e);
}

void qh_eval_case(const qh_case_ref *ref, qh_backend *b, const qh_eval_opts *o, qh_result *res)
{
    memset(res, 0, sizeof *res);
    double t0 = qh_mono_seconds();
    res->backend = b->spec;
    /* the table's own name only where it is ours to trust: never an isolated plugin's (the
     * parent holds no table) nor an exec: process's hello, which says what it likes */
    res->backend_name = b->isolated || qh_exec_is_spec(b->spec) ? NULL : b->table.name;
    res->cpu = b->iso.cpu ? qh_cpu_name(b->iso.cpu) : NULL;
    res->data_set = ref->data_set;
    res->name = malloc(strlen(ref->name) + 1);
    res->path = malloc(strlen(ref->dir) + 1);
    if (res->name)
        strcpy(res->name, ref->name);
    if (res->path)
        strcpy(res->path, ref->dir);

    verdict v = {0};
    qh_case c;
    qh_error err = {{0}};
    if (qh_case_load(ref, &c, &err) != 0) {
        v.status = QH_ERROR;
        qh_sb_puts(&v.summary, err.msg);
    } else {
        judge(&c, b, o, &v);
        qh_case_free(&c);
    }
    res->status = v.status;
    res->summary = v.summary.s ? qh_sb_take(&v.summary) : NULL;
    res->detail = v.detail.s ? qh_sb_take(&v.detail) : NULL;
    res->first_mismatch = v.first.s ? qh_sb_take(&v.first) : NULL;
    res->seconds = qh_mono_seconds() - t0;
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
    for (char *w = strtok_r(NULL, " \t\r", &save); w && w[0] != '#';
         w = strtok_r(NULL, " \t\r", &save)) {
        const char *bad = "";
        if (strncmp(w, "status=", 7) == 0) {
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
    for (char *next = text, *line; rc == 0 && (line = next) != NULL;) {
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
    qh_xfail_entry *first = NULL;
    for (int32_t i = 0; i < x->count; i++) {
        qh_xfail_entry *e = &x->entries[i];
        if (!xfail_matches(e, backend_name, res))
            continue;
        e->matched++;
        if (!first)
            first = e;
        if (res->status != QH_XFAIL && (e->statuses & (1u << res->status))) {
            if (res->status != QH_PASSED)
                res->status = QH_XFAIL;
            e->waived++;
        }
    }
    if (!first || res->status == QH_XFAIL || (first->statuses & (1u << res->status)))
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
