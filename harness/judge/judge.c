/* harness/judge/judge.c — the judge (harness/judge/judge.h): an answer against the expectation,
 * as a structured verdict and the text made from it. */
#include "harness/judge/judge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/clean.h"
#include "ops/operator.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

/* ---- statuses and reasons ------------------------------------------------------------- */

static const char *const status_names[QH_STATUS_COUNT] = {
    "PASSED", "FAILED", "MISTRUSTED", "SKIPPED", "UNCHECKED",
    "CRASHED", "TIMEOUT", "ERROR", "XFAIL", "XPASS", "INCONCLUSIVE",
};
static const char *const status_keys[QH_STATUS_COUNT] = {
    "passed", "failed", "mistrusted", "skipped", "unchecked",
    "crashed", "timeout", "error", "xfail", "xpass", "inconclusive",
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

/* docs/formats.md "Verdicts" lists the same names, one row each */
static const char *const reason_names[QH_REASON_COUNT] = {
    [QH_REASON_NONE] = "none",
    [QH_REASON_EQUAL] = "equal",
    [QH_REASON_REJECTED] = "rejected",
    [QH_REASON_VALUES] = "values",
    [QH_REASON_SHAPE] = "shape",
    [QH_REASON_UNWRITTEN] = "unwritten",
    [QH_REASON_NOT_DETERMINISTIC] = "not-deterministic",
    [QH_REASON_WRONG_STATUS_VALID] = "wrong-status-valid",
    [QH_REASON_WRONG_STATUS_INVALID] = "wrong-status-invalid",
    [QH_REASON_ACCEPTED_INVALID] = "accepted-invalid",
    [QH_REASON_UNSUPPORTED] = "unsupported",
    [QH_REASON_REFERENCE_CANNOT_JUDGE] = "reference-cannot-judge",
    [QH_REASON_REFERENCE_ERROR] = "reference-error",
    [QH_REASON_CRASHED] = "crashed",
    [QH_REASON_TIMEOUT] = "timeout",
    [QH_REASON_MISBEHAVED] = "misbehaved",
    [QH_REASON_MALFORMED] = "malformed",
    [QH_REASON_INTERRUPTED] = "interrupted",
    [QH_REASON_NOT_RUN] = "not-run",
    [QH_REASON_CASE_ERROR] = "case-error",
    [QH_REASON_MISTRUSTED] = "mistrusted",
    [QH_REASON_UNDETERMINED] = "undetermined",
};

const char *qh_reason_name(qh_reason r)
{
    return r < QH_REASON_COUNT && reason_names[r] ? reason_names[r] : "unknown";
}

void qh_verdict_init(qh_verdict *v)
{
    memset(v, 0, sizeof *v);
}

void qh_verdict_free(qh_verdict *v)
{
    qh_sb_free(&v->summary);
    qh_sb_free(&v->detail);
    qh_sb_free(&v->first);
    qh_verdict_init(v);
}

static void set(qh_verdict *v, qh_case_status status, qh_reason reason)
{
    v->status = status;
    v->reason = reason;
}

/* ---- cleaned text ----------------------------------------------------------------------- */

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

void qh_judge_cause(const char *problem, char *buf, size_t size)
{
    size_t n = 0;
    int in_digits = 0;
    for (const char *s = problem; *s && *s != ':' && *s != '[' && *s != '(' && n + 1 < size;
         s++) {
        int digit = *s >= '0' && *s <= '9';
        if (!(digit && in_digits))
            buf[n++] = digit ? '#' : *s;
        in_digits = digit;
    }
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    buf[n] = '\0';
}

/* A reason the invocation reports: its words are the summary, its cause the class. */
static void from_invocation(qh_verdict *v, qh_case_status status, qh_reason reason,
                            const qh_invocation *inv)
{
    clean_text said;
    set(v, status, reason);
    qh_sb_puts(&v->summary, CLEAN(said, inv->problem));
    v->cause = inv->cause;
    v->cause_arg = inv->cause_arg;
}

void qh_judge_not_run(const char *prefix, const char *problem, size_t max, qh_verdict *v)
{
    clean_text said;
    set(v, QH_ERROR, QH_REASON_NOT_RUN);
    cleaned(&said, problem, max);
    qh_sb_printf(&v->summary, "%s%s", prefix, said.s);
}

int qh_verdict_same_class(const qh_verdict *a, const qh_verdict *b)
{
    if (a->status != b->status || a->reason != b->reason)
        return 0;
    if ((a->reason == QH_REASON_WRONG_STATUS_VALID ||
         a->reason == QH_REASON_WRONG_STATUS_INVALID) && a->answered != b->answered)
        return 0;
    return a->cause == b->cause && a->cause_arg == b->cause_arg;
}

/* ---- comparing ------------------------------------------------------------------------- */

static int rule_of(const qh_expectation *e)
{
    const qmm_op_desc *d = qmm_call_desc(&e->call);
    return d ? (int)d->compare : (int)QMM_COMPARE_EXACT;
}

void qh_judge_compare_start(const qh_expectation *e, const qmm_tensor *got, qh_compare *r)
{
    qh_compare_start(&e->exact, got, r); /* the shapes, whatever the rule */
}

/* The accept rule: element i of got (qmm_ref_float_at: exact, NaN for any NaN) against its
 * accepted values. */
static void accept_element(const qmm_ref_accept *a, const qmm_tensor *got, int64_t i,
                           qh_compare *r)
{
    double y = qmm_ref_float_at(got->dtype, got->data, i), units = INFINITY;
    int model = -1;
    qmm_ref_verdict verdict = qmm_ref_accept_judge(a, y, &units, &model);
    const qmm_ref_interval *iv = &a->iv[model >= 0 ? model : 0];
    if (verdict == QMM_REF_PASS) {
        if (model >= 0 && iv->e > 0 && isfinite(units) && units > r->worst) {
            r->worst = units;
            r->worst_index = i;
        }
        return;
    }
    if (verdict == QMM_REF_INCONCLUSIVE) {
        if (r->inconclusive++ == 0) {
            r->first_inconclusive = i;
            for (int m = 0; m < a->n; m++) /* the model that accepts it */
                if (a->iv[m].inconclusive &&
                    ((a->iv[m].lo == -INFINITY && a->iv[m].hi == INFINITY) ||
                     (a->iv[m].lo <= y && y <= a->iv[m].hi))) {
                    r->inconclusive_model = a->iv[m].model;
                    break;
                }
        }
        return;
    }
    if (r->n_kept < QH_COMPARE_KEEP) {
        qh_bounded *b = &r->kept_bound[r->n_kept];
        b->lo = a->n ? iv->lo : NAN;
        b->hi = a->n ? iv->hi : NAN;
        b->exact = a->n ? iv->r : NAN;
        b->bound = a->n ? iv->e : NAN;
        b->units = units;
        b->model = a->n ? iv->model : "none";
        r->expected[r->n_kept] = isnan(b->exact) ? 0 : qmm_scale_encode(got->dtype, b->exact);
        r->kept[r->n_kept++] = i;
    }
    r->errors++;
}

/* Accepted values are computed this many elements at a time (about 300 bytes each). */
#define ACCEPT_CHUNK 1024

static void accept_part(const qh_expectation *e, const qmm_tensor *got, int64_t first,
                        int64_t count, qh_compare *r)
{
    r->bounded = 1;
    if (r->shape_differs || r->failed != QMM_OK || count <= 0)
        return;
    qmm_ref_accept *acc = malloc(ACCEPT_CHUNK * sizeof *acc);
    if (!acc) {
        r->failed = QMM_OUT_OF_MEMORY;
        snprintf(r->failed_why, sizeof r->failed_why, "cannot allocate the accepted values "
                 "of %d elements", ACCEPT_CHUNK);
        return;
    }
    for (int64_t c0 = first; c0 < first + count; c0 += ACCEPT_CHUNK) {
        qmm_ref_part part = {c0, first + count - c0 < ACCEPT_CHUNK ? first + count - c0
                                                                   : ACCEPT_CHUNK};
        qmm_status st;
        qmm_status_ok(&st);
        qmm_status_code code = qmm_ref_accept_part(&e->call, &part, acc, &st);
        if (code != QMM_OK) {
            r->failed = code;
            snprintf(r->failed_why, sizeof r->failed_why, "%s", st.message);
            break;
        }
        for (int64_t j = 0; j < part.count; j++)
            accept_element(&acc[j], got, c0 + j, r);
    }
    free(acc);
}

void qh_judge_compare_part(const qh_expectation *e, const void *exact, const void *alt,
                           const qmm_tensor *got, int64_t first, int64_t count, qh_compare *r)
{
    switch (rule_of(e)) {
    case QMM_COMPARE_ACCEPT: /* within an accepted interval of one of the models */
        accept_part(e, got, first, count, r);
        break;
    case QMM_COMPARE_EXACT: /* the exact value, or the overflow-permitted one */
    default:
        qh_compare_part(exact, alt, got, first, count, r);
        break;
    }
}

void qh_judge_compare(const qh_expectation *e, const qmm_tensor *got, qh_compare *r)
{
    qh_judge_compare_start(e, got, r);
    qh_judge_compare_part(e, e->exact.data, e->overflow ? e->alt.data : NULL, got, 0, r->total,
                          r);
}

/* ---- the mismatches as data ------------------------------------------------------------- */

static void coords_of(const qmm_tensor *y, int64_t index, qh_mismatch *m)
{
    int64_t rest = index;
    m->rank = y->rank;
    for (int32_t d = y->rank - 1; d >= 0; d--) {
        m->coord[d] = y->dims[d] ? rest % y->dims[d] : 0;
        rest = y->dims[d] ? rest / y->dims[d] : 0;
    }
}

/* v's mismatches from the comparison: where, expected, got; with `explain`, what the
 * reference computes there (acc, the exact scaled value, an overflow's wrapped result). */
static void keep_mismatches(const qh_expectation *e, const qmm_tensor *got, const qh_compare *cmp,
                            int explain, qh_verdict *v)
{
    v->errors = cmp->errors;
    v->total = cmp->total;
    v->n_mismatches = cmp->n_kept;
    for (int32_t k = 0; k < cmp->n_kept; k++) {
        qh_mismatch *m = &v->mismatches[k];
        memset(m, 0, sizeof *m);
        m->index = cmp->kept[k];
        coords_of(&e->exact, m->index, m);
        m->expected = cmp->expected[k];
        m->got = qh_tensor_int(got, m->index);
        m->bound = m->fraction = NAN; /* the exact rule has no bound */
        if (cmp->bounded) {
            m->range = 1;
            m->accepted = cmp->kept_bound[k];
            m->bound = m->accepted.bound;
            m->fraction = m->accepted.units;
        }
        qmm_ref_element el;
        qmm_status st;
        if (explain && qmm_ref_explain(&e->call, m->index, &el, &st) == QMM_OK) {
            m->explained = 1;
            m->acc = el.acc;
            memcpy(m->scaled, el.scaled, sizeof m->scaled);
            m->overflow = el.overflow;
            m->wrapped = el.wrapped;
        }
    }
}

static void sb_mismatch_coord(qh_sb *b, const qh_mismatch *m)
{
    qh_sb_puts(b, "y[");
    for (int32_t d = 0; d < m->rank; d++)
        qh_sb_printf(b, "%s%lld", d ? "," : "", (long long)m->coord[d]);
    qh_sb_puts(b, "]");
}

/* Which profiles give `got`'s value at each kept mismatch: every profile's expectation is
 * computed a part at a time (a whole output per profile, not one element: the Orion profile's
 * refusals depend on every element), and only its values at the kept indices are looked at.
 * Computed on the first mismatch that asks for it and reused for the others.
 * That is the reference's work once per profile (30): where it would pass
 * QH_MATCH_MAX_WORK, only the parts holding the kept mismatches are computed (MATCH_KEPT),
 * without the profiles whose answer on a part depends on the whole call
 * (qmm_profile_whole_call: orion-fp16x16, which a part neither rules out nor computes at a
 * part's cost), which are then "not compared"; the text says both. Where even those parts
 * would pass it, no profile is compared (MATCH_NONE). 2048^3 under one profile is about 35 s
 * of the reference's on a Zen 4, and QH_MATCH_MAX_WORK (all profiles together) about 4 s. */
#define QH_MATCH_MAX_WORK ((int64_t)1 << 30)
typedef enum { MATCH_WHOLE, MATCH_KEPT, MATCH_NONE } match_scope;
typedef struct profile_matches {
    int computed;
    match_scope scope;
    uint64_t unjudged; /* MATCH_KEPT: the profiles left out (bit p: profile p) */
    const qh_verdict *v;
    const qmm_tensor *got;
    int profile;
    uint64_t bits[QH_COMPARE_KEEP]; /* bit p: profile p gives got's value at mismatch k */
} profile_matches;
_Static_assert(QMM_PROFILE_MAX <= 64, "profile_matches.bits holds a bit per profile");

static void match_part(void *ctx, int64_t first, int64_t count, const void *exact,
                       const void *alt)
{
    profile_matches *pm = ctx;
    qmm_tensor ex = {.dtype = pm->got->dtype, .data = (void *)exact};
    qmm_tensor al = {.dtype = pm->got->dtype, .data = (void *)alt};
    for (int32_t k = 0; k < pm->v->n_mismatches; k++) {
        int64_t i = pm->v->mismatches[k].index;
        if (i < first || i >= first + count)
            continue;
        int64_t g = qh_tensor_int(pm->got, i);
        if (qh_tensor_int(&ex, i - first) == g || (alt && qh_tensor_int(&al, i - first) == g))
            pm->bits[k] |= (uint64_t)1 << pm->profile;
    }
}

/* The match's scope for this call and these mismatches (`at`, n of them). */
static match_scope match_scope_of(const qmm_call *call, const int64_t *at, int n)
{
    int64_t per_profile = QH_MATCH_MAX_WORK / qmm_profile_count();
    int64_t work = qh_expect_work(call);
    if (work <= per_profile)
        return MATCH_WHOLE;
    const qmm_tensor *y = qmm_call_output_c(call);
    int64_t elements = y ? qmm_tensor_numel(y) : 0, first[QH_COMPARE_KEEP];
    if (elements <= 0)
        return MATCH_NONE;
    int64_t unit = qmm_ref_part_unit(call);
    int64_t parts = qh_expect_parts_at(call, at, n, first);
    /* parts x unit elements of work / elements each (work fits int64: no overflow below) */
    long double kept = (long double)parts * (long double)(unit < elements ? unit : elements) *
                       ((long double)work / (long double)elements);
    return kept <= (long double)per_profile ? MATCH_KEPT : MATCH_NONE;
}

static void profile_matches_compute(profile_matches *pm, const qmm_call *call)
{
    if (pm->computed)
        return;
    pm->computed = 1;
    int64_t at[QH_COMPARE_KEEP];
    int n = pm->v->n_mismatches;
    for (int k = 0; k < n; k++)
        at[k] = pm->v->mismatches[k].index;
    pm->scope = match_scope_of(call, at, n);
    for (int p = 0; pm->scope != MATCH_NONE && p < qmm_profile_count(); p++) {
        if (pm->scope == MATCH_KEPT && qmm_profile_whole_call((qmm_profile)p)) {
            qmm_status st;
            if (qmm_ref_profile_supports(call, (qmm_profile)p, &st) == QMM_OK)
                pm->unjudged |= (uint64_t)1 << p;
            continue;
        }
        qh_expectation x;
        if (qh_expect_plan(call, qmm_profile_name((qmm_profile)p), &x) == 0) {
            uint64_t before[QH_COMPARE_KEEP];
            memcpy(before, pm->bits, sizeof before);
            pm->profile = p;
            if (pm->scope == MATCH_WHOLE)
                qh_expect_scan(&x, 0, match_part, pm);
            else
                qh_expect_scan_at(&x, at, n, match_part, pm);
            if (x.code != QMM_OK) /* the profile refuses the call: it is not listed */
                memcpy(pm->bits, before, sizeof before);
        }
        qh_expectation_free(&x);
    }
}

/* The profiles (wrong rules too) that explain a case's mismatches: those giving `got` at every
 * kept mismatch, when there are at least QH_MATCH_MIN_MISMATCHES of them: a profile that gives
 * one element only may do so by coincidence, and nothing is said of it. A combination
 * (REQ+ACC) is named only where its requantization under the default accumulation does not
 * give `got` too: where both do, its accumulation model made no difference. The same set is
 * the text's "got matches:" and each mismatch's "models" in the reports. */
#define QH_MATCH_MIN_MISMATCHES 2
static uint64_t case_models(profile_matches *pm, const qh_expectation *e)
{
    profile_matches_compute(pm, &e->call);
    uint64_t every = pm->v->n_mismatches >= QH_MATCH_MIN_MISMATCHES ? ~(uint64_t)0 : 0;
    for (int32_t i = 0; i < pm->v->n_mismatches; i++)
        every &= pm->bits[i];
    uint64_t named = 0;
    for (int p = 0; p < qmm_profile_count(); p++) {
        int base = (int)qmm_profile_base((qmm_profile)p);
        if ((every >> p & 1) && (base == p || !(every >> base & 1)))
            named |= (uint64_t)1 << p;
    }
    return named;
}

/* What the match says at one mismatch: the case's profiles, this element's, the scope and
 * the profiles left out. */
typedef struct match_at {
    uint64_t named, here, unjudged;
    match_scope scope;
} match_at;

/* Mismatch k's match: from the mismatch where keep_models put it there, else from pm
 * (computed here if not yet). */
static match_at match_of(const qh_mismatch *m, profile_matches *pm, const qh_expectation *e,
                         int32_t k)
{
    if (m->models_known)
        return (match_at){m->models, m->models_here, m->models_unjudged,
                          m->models_kept ? MATCH_KEPT : MATCH_WHOLE};
    uint64_t named = case_models(pm, e);
    return (match_at){named, pm->bits[k], pm->unjudged, pm->scope};
}

/* "; got matches: onnx-ref, ort-fp32", or "; got matches no known profile" where no profile
 * gives this element's value; on the first mismatch, the scope where it is not the whole
 * output: " (judged at the kept mismatches only; orion-fp16x16 not compared)". */
static void sb_profiles_giving(qh_sb *b, const qh_mismatch *m, profile_matches *pm,
                               const qh_expectation *e, int32_t k)
{
    match_at r = match_of(m, pm, e, k);
    if (r.scope == MATCH_NONE) {
        if (k == 0)
            qh_sb_puts(b, "; the profiles were not compared (their work together, even at the "
                          "kept mismatches only, is over QH_MATCH_MAX_WORK)");
        return;
    }
    qh_sb scope = {0};
    if (r.scope == MATCH_KEPT && k == 0) {
        qh_sb_puts(&scope, " (judged at the kept mismatches only: the whole output under every "
                           "profile is too much work");
        for (int p = 0, c = 0; p < qmm_profile_count(); p++)
            if (r.unjudged >> p & 1)
                qh_sb_printf(&scope, "%s%s", c++ ? ", " : "; not compared: ",
                             qmm_profile_name((qmm_profile)p));
        qh_sb_puts(&scope, ")");
    }
    const char *sc = scope.s ? scope.s : "";
    int n = 0;
    for (int p = 0; p < qmm_profile_count(); p++)
        if (r.named >> p & 1) {
            if (n++ == 0)
                qh_sb_printf(b, "; got matches%s: ", sc);
            else
                qh_sb_puts(b, ", ");
            qh_sb_puts(b, qmm_profile_name((qmm_profile)p));
        }
    if (n == 0 && r.here == 0)
        qh_sb_printf(b, "; got matches no known profile%s", sc);
    else if (n == 0 && sc[0]) /* nothing named (fewer than 2 mismatches): the scope still */
        qh_sb_printf(b, "; no profile named%s", sc);
    qh_sb_free(&scope);
}

/* Each kept mismatch's matching profiles as data (the JSON report's "models"); none where
 * they were not compared (MATCH_NONE). */
static void keep_models(const qh_expectation *e, const qmm_tensor *got, qh_verdict *v)
{
    profile_matches pm;
    memset(&pm, 0, sizeof pm);
    pm.v = v;
    pm.got = got;
    uint64_t named = case_models(&pm, e);
    for (int32_t k = 0; pm.scope != MATCH_NONE && k < v->n_mismatches; k++) {
        qh_mismatch *m = &v->mismatches[k];
        m->models = named;
        m->models_here = pm.bits[k];
        m->models_unjudged = pm.unjudged;
        m->models_known = 1;
        m->models_kept = pm.scope == MATCH_KEPT;
    }
}

/* Under the accept rule, what an element had to be: ", expected [LO, HI]: exact R +/- bound B
 * (model M); error U bounds", or ", expected V exactly (model M)" where it is determined.
 * `decimal`: the exact value the reference explains the element with (its first model's), used
 * where it is this model's R; otherwise R as a double. */
static void sb_bounded(qh_sb *b, const qh_bounded *a, const char *decimal)
{
    if (isnan(a->lo) && isnan(a->hi)) {
        qh_sb_printf(b, ", expected a NaN (model %s)", a->model);
        return;
    }
    if (a->bound == 0.0 || a->lo == a->hi) {
        qh_sb_printf(b, ", expected %.9g exactly (model %s)", a->lo, a->model);
        return;
    }
    qh_sb_printf(b, ", expected [%.9g, %.9g]: exact ", a->lo, a->hi);
    if (decimal && decimal[0] && strtod(decimal, NULL) == a->exact) /* that model's value */
        qh_sb_puts(b, decimal);
    else
        qh_sb_printf(b, "%.17g", a->exact);
    qh_sb_printf(b, " +/- bound %.6g (model %s); error %.4g bounds", a->bound, a->model,
                 a->units);
}

static void sb_accepted(qh_sb *b, const qh_mismatch *m)
{
    sb_bounded(b, &m->accepted, m->explained ? m->scaled : NULL);
}

void qh_judge_explain(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                      const qh_verdict *v, int32_t limit)
{
    profile_matches pm;
    memset(&pm, 0, sizeof pm);
    pm.v = v;
    pm.got = got;
    int32_t shown = 0;
    for (int32_t k = 0; k < v->n_mismatches && k < limit; k++, shown++) {
        const qh_mismatch *m = &v->mismatches[k];
        qh_sb_puts(b, "    ");
        sb_mismatch_coord(b, m);
        if (m->range) {
            qh_sb_printf(b, " (index %lld): got ", (long long)m->index);
            qh_sb_value(b, got->dtype, m->got);
            sb_accepted(b, m);
            qh_sb_puts(b, "\n");
            continue;
        }
        qh_sb_printf(b, " (index %lld): expected %lld, got %lld", (long long)m->index,
                     (long long)m->expected, (long long)m->got);
        if (m->explained) {
            qh_sb_printf(b, "; acc %lld", (long long)m->acc);
            if (m->scaled[0])
                qh_sb_printf(b, "; acc*scale = %s", m->scaled);
            if (m->overflow)
                qh_sb_printf(b, "; acc overflows int32, wrapped result %lld also accepted",
                             (long long)m->wrapped);
        }
        sb_profiles_giving(b, m, &pm, e, k);
        qh_sb_puts(b, "\n");
    }
    if (v->errors > shown)
        qh_sb_printf(b, "    ... %lld more\n", (long long)(v->errors - shown));
}

void qh_explain_mismatches(qh_sb *b, const qh_expectation *e, const qmm_tensor *got,
                           const qh_compare *cmp, int32_t limit)
{
    qh_verdict *v = malloc(sizeof *v);
    if (!v) {
        b->failed = 1;
        return;
    }
    qh_verdict_init(v);
    keep_mismatches(e, got, cmp, 1, v);
    qh_judge_explain(b, e, got, v, limit);
    qh_verdict_free(v);
    free(v);
}

/* ---- judging ----------------------------------------------------------------------------- */

int qh_judge_expectation(const qh_expectation *e, qh_verdict *v)
{
    if (e->code == QMM_UNSUPPORTED) {
        set(v, QH_SKIPPED, QH_REASON_REFERENCE_CANNOT_JUDGE);
        qh_sb_printf(&v->summary, "the reference cannot judge this case: %s", e->message);
        return 0;
    }
    if (e->code != QMM_OK && e->code != QMM_INVALID_ARGUMENT) {
        set(v, QH_ERROR, QH_REASON_REFERENCE_ERROR);
        qh_sb_printf(&v->summary, "reference: %s: %s", qmm_status_name(e->code), e->message);
        return 0;
    }
    return 1;
}

/* The call did not return normally (interrupted, crashed, hung, broke a memory rule): sets
 * the verdict and returns 1; 0 when it returned. Each outcome's status and reason: */
static const struct {
    qh_case_status status;
    qh_reason reason;
} abnormal[] = {
    [QH_DIED] = {QH_CRASHED, QH_REASON_CRASHED},
    [QH_HUNG] = {QH_TIMEOUT, QH_REASON_TIMEOUT},
    [QH_MISBEHAVED] = {QH_FAILED, QH_REASON_MISBEHAVED},
    [QH_MALFORMED] = {QH_ERROR, QH_REASON_MALFORMED},
};

static int judge_abnormal(const qh_invocation *inv, qh_verdict *v)
{
    if (inv->outcome == QH_RETURNED)
        return 0;
    if (inv->outcome == QH_INTERRUPTED) {
        set(v, QH_ERROR, QH_REASON_INTERRUPTED);
        qh_sb_puts(&v->summary, "interrupted");
        return 1;
    }
    if ((size_t)inv->outcome >= sizeof abnormal / sizeof abnormal[0] ||
        abnormal[inv->outcome].reason == QH_REASON_NONE)
        return 0;
    from_invocation(v, abnormal[inv->outcome].status, abnormal[inv->outcome].reason, inv);
    return 1;
}

/* A second call of the case (`who`: which, in the text) that did not return normally is
 * judged as the first call would be: CRASHED, TIMEOUT, ERROR (malformed, interrupted) or
 * FAILED (misbehaved), never "not deterministic", which --xfail could waive. 1 with v set;
 * 0 when it returned. */
static int judge_abnormal_again(const qh_invocation *again, const char *who, qh_verdict *v)
{
    if (again->outcome == QH_RETURNED)
        return 0;
    qh_sb_printf(&v->summary, "%s: ", who);
    if (judge_abnormal(again, v))
        return 1;
    /* an outcome judge_abnormal does not know: an error, never a pass */
    from_invocation(v, QH_ERROR, QH_REASON_MALFORMED, again);
    return 1;
}

/* The reference rejects the input: the backend must answer INVALID_ARGUMENT too. */
static void judge_invalid(const qh_expectation *e, const qh_invocation *inv,
                          const qh_judge_opts *o, qh_verdict *v)
{
    clean_text said;
    if (inv->code == QMM_INVALID_ARGUMENT) {
        set(v, QH_PASSED, QH_REASON_REJECTED);
        if (o->verbose)
            qh_sb_printf(&v->detail, "  rejected as expected: %s\n",
                         CLEAN(said, inv->st.message));
    } else if (inv->code == QMM_OK) {
        set(v, QH_UNCHECKED, QH_REASON_ACCEPTED_INVALID);
        qh_sb_printf(&v->summary, "accepted invalid input; the reference says: %s", e->message);
    } else {
        set(v, QH_FAILED, QH_REASON_WRONG_STATUS_INVALID);
        qh_sb_printf(&v->summary, "answered %s for invalid input (expected INVALID_ARGUMENT): %s",
                     qmm_status_name(inv->code), CLEAN(said, inv->st.message));
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
 * is the call run again with another fill (o->rerun), and an element holding the fill both
 * times was never written. Elements that differ otherwise between the runs are not
 * deterministic. Returns 1 with the verdict set when the backend fails this. */
static int judge_unwritten(const qh_invocation *first, const qh_judge_opts *o, qh_verdict *v)
{
    const qmm_tensor *y = &first->y;
    /* qh_invoke's fill (0xa5 unless asked otherwise), then its complement (0x5a) */
    const unsigned char fill1 = o->fill ? o->fill : 0xa5;
    const unsigned char fill2 = (unsigned char)~fill1;
    int64_t n = qmm_tensor_numel(y);
    int64_t i0 = n > 0 ? next_fill(y, 0, n, fill1) : 0;
    if (!o->rerun || i0 >= n)
        return 0;
    qh_invocation again;
    if (o->rerun(o->rerun_ctx, fill2, &again) != 0) {
        qh_judge_not_run("", again.problem, sizeof again.problem, v);
        qh_invocation_free(&again);
        return 1;
    }
    if (judge_abnormal_again(&again, "a second run (to find unwritten elements)", v)) {
        qh_invocation_free(&again);
        return 1;
    }
    if (again.code != QMM_OK) {
        set(v, QH_FAILED, QH_REASON_NOT_DETERMINISTIC);
        qh_sb_printf(&v->summary,
                     "not deterministic: a second run (to find unwritten elements) answered %s",
                     qmm_status_name(again.code));
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
        set(v, QH_FAILED, QH_REASON_UNWRITTEN);
        v->errors = unwritten;
        v->total = n;
        qh_sb_puts(&v->summary, "did not write ");
        qh_sb_coord(&v->summary, y, first_unwritten);
        qh_sb_printf(&v->summary, " (%lld of %lld elements unwritten)", (long long)unwritten,
                     (long long)n);
        qh_sb_printf(&v->detail, "    first unwritten element: index %lld; it kept the "
                     "output's fill byte in two runs with different fills (0x%02x, 0x%02x)\n",
                     (long long)first_unwritten, fill1, fill2);
    } else if (changed) {
        set(v, QH_FAILED, QH_REASON_NOT_DETERMINISTIC);
        qh_sb_puts(&v->summary, "not deterministic: ");
        qh_sb_coord(&v->summary, y, first_changed);
        qh_sb_printf(&v->summary, " was %lld in one run and %lld in another (%lld elements "
                     "differ)", (long long)qh_tensor_int(y, first_changed),
                     (long long)qh_tensor_int(&again.y, first_changed), (long long)changed);
    }
    qh_invocation_free(&again);
    return unwritten || changed;
}

/* No element failed, but some are accepted only by a model that gives no usable bound. */
static void judge_undetermined(const qmm_tensor *y, const qh_compare *vs, qh_verdict *v)
{
    set(v, QH_INCONCLUSIVE, QH_REASON_UNDETERMINED);
    qh_sb_printf(&v->summary, "undetermined:%lld total:%lld", (long long)vs->inconclusive,
                 (long long)vs->total);
    qh_sb_puts(&v->detail, "    ");
    qh_sb_coord(&v->detail, y, vs->first_inconclusive);
    qh_sb_printf(&v->detail, " (index %lld): got ", (long long)vs->first_inconclusive);
    qh_sb_element(&v->detail, y, vs->first_inconclusive);
    qh_sb_printf(&v->detail, ", which only model %s accepts, and it gives no usable bound "
                 "there (docs/semantics.md 8.4): neither a pass nor a failure\n",
                 vs->inconclusive_model ? vs->inconclusive_model : "?");
}

/* A valid call the backend answered OK: every element written, each an accepted value. */
static void judge_output(const qh_expectation *e, const qh_invocation *inv, const qh_compare *vs,
                         const qh_judge_opts *o, qh_verdict *v)
{
    if (judge_unwritten(inv, o, v))
        return; /* the verdict is set: an unwritten element says more than the mismatch */
    qh_compare own;
    if (!vs) {
        qh_judge_compare(e, &inv->y, &own);
        vs = &own;
    }
    if (vs->failed != QMM_OK) { /* the accepted values could not be computed */
        set(v, QH_ERROR, QH_REASON_REFERENCE_ERROR);
        qh_sb_printf(&v->summary, "reference: %s: %s", qmm_status_name(vs->failed),
                     vs->failed_why);
        return;
    }
    v->errors = vs->errors;
    v->total = vs->total;
    if (vs->errors == 0) {
        if (vs->inconclusive)
            judge_undetermined(&inv->y, vs, v);
        else
            set(v, QH_PASSED, QH_REASON_EQUAL);
        if (o->verbose && vs->bounded && vs->worst > 0) {
            qh_sb_puts(&v->detail, "    worst error ");
            qh_sb_printf(&v->detail, "%.4g of its bound, at ", vs->worst);
            qh_sb_coord(&v->detail, &inv->y, vs->worst_index);
            qh_sb_puts(&v->detail, "\n");
        }
        return;
    }
    set(v, QH_FAILED, vs->shape_differs ? QH_REASON_SHAPE : QH_REASON_VALUES);
    keep_mismatches(e, &inv->y, vs, o->text, v);
    qh_sb_printf(&v->summary, "errors:%lld total:%lld", (long long)vs->errors,
                 (long long)vs->total);
    if (v->n_mismatches > 0) {
        const qh_mismatch *m = &v->mismatches[0];
        sb_mismatch_coord(&v->first, m);
        if (m->range) {
            qh_sb_printf(&v->first, " (index %lld): got ", (long long)m->index);
            qh_sb_value(&v->first, inv->y.dtype, m->got);
            sb_accepted(&v->first, m);
        } else {
            qh_sb_printf(&v->first, " (index %lld): got %lld, expected %lld",
                         (long long)m->index, (long long)m->got, (long long)m->expected);
        }
    }
    if (o->text) {
        if (v->n_mismatches > 0 && !v->mismatches[0].range) /* profiles: exact-rule ops */
            keep_models(e, &inv->y, v);
        qh_judge_explain(&v->detail, e, &inv->y, v, o->verbose ? QH_COMPARE_KEEP : 4);
        if (vs->inconclusive)
            qh_sb_printf(&v->detail, "    (and %lld elements not determined)\n",
                         (long long)vs->inconclusive);
    }
}

void qh_judge(const qh_expectation *e, const qh_invocation *inv, const qh_compare *vs,
              const qh_judge_opts *o, qh_verdict *v)
{
    static const qh_judge_opts none;
    clean_text said;
    if (!o)
        o = &none;
    v->answered = inv->code;
    if (judge_abnormal(inv, v))
        return;
    if (inv->code == QMM_UNSUPPORTED) {
        set(v, QH_SKIPPED, QH_REASON_UNSUPPORTED);
        qh_sb_printf(&v->summary, "unsupported: %s", CLEAN(said, inv->st.message));
    } else if (e->code == QMM_INVALID_ARGUMENT) {
        judge_invalid(e, inv, o, v);
    } else if (inv->code != QMM_OK) {
        set(v, QH_FAILED, QH_REASON_WRONG_STATUS_VALID);
        qh_sb_printf(&v->summary, "answered %s for a valid call: %s",
                     qmm_status_name(inv->code), CLEAN(said, inv->st.message));
    } else {
        judge_output(e, inv, vs, o, v);
    }
}

qh_case_status qh_judge_status(const qh_expectation *e, const qh_invocation *inv)
{
    qh_verdict v;
    qh_verdict_init(&v);
    qh_judge(e, inv, NULL, NULL, &v);
    qh_case_status s = v.status;
    qh_verdict_free(&v);
    return s;
}

int qh_judge_passes(const qh_expectation *e, const qh_invocation *inv)
{
    return qh_judge_status(e, inv) == QH_PASSED;
}

int qh_judge_again(const qh_invocation *first, const qh_invocation *again, const char *who,
                   qh_verdict *v)
{
    size_t bytes = (size_t)qmm_tensor_numel(&first->y) * qmm_dtype_size(first->y.dtype);
    if (judge_abnormal_again(again, who, v))
        return 1;
    if (again->code != first->code) {
        set(v, QH_FAILED, QH_REASON_NOT_DETERMINISTIC);
        qh_sb_printf(&v->summary, "not deterministic: %s answered %s, the first run %s", who,
                     qmm_status_name(again->code), qmm_status_name(first->code));
        return 1;
    }
    if (first->code == QMM_OK && bytes && memcmp(first->y.data, again->y.data, bytes) != 0) {
        qh_compare cmp;
        qh_compare_outputs(&first->y, NULL, &again->y, &cmp);
        int64_t i = cmp.n_kept ? cmp.kept[0] : 0;
        set(v, QH_FAILED, QH_REASON_NOT_DETERMINISTIC);
        qh_sb_printf(&v->summary,
                     "not deterministic: %s differs from the first run at %lld of %lld "
                     "elements (first at index %lld: %lld vs %lld)",
                     who, (long long)cmp.errors, (long long)cmp.total, (long long)i,
                     (long long)qh_tensor_int(&again->y, i),
                     (long long)qh_tensor_int(&first->y, i));
        return 1;
    }
    return 0;
}

int qh_judge_vector(qmm_status_code meta_expect, int n_outputs, const qmm_tensor *stored,
                    const qh_expectation *e, const qh_compare *cmp, qh_sb *why)
{
    if (meta_expect != QMM_OK && meta_expect != e->code) {
        qh_sb_printf(why, "qmm.meta expects %s but the reference answers %s%s%s",
                     qmm_status_name(meta_expect), qmm_status_name(e->code),
                     e->message[0] ? ": " : "", e->message);
        return 1;
    }
    if (e->code != QMM_OK) {
        if (meta_expect == QMM_OK && n_outputs > 0) {
            qh_sb_printf(why, "the vector stores an output, but the reference rejects it: %s",
                         e->message);
            return 1;
        }
        return 0;
    }
    if (n_outputs == 0 || cmp->errors == 0)
        return 0;
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
                 "(first at index %lld: stored ", (long long)cmp->errors, (long long)cmp->total,
                 (long long)i);
    qh_sb_element(why, stored, i);
    if (cmp->bounded) {
        sb_bounded(why, &cmp->kept_bound[0], NULL);
        qh_sb_puts(why, ")");
        return 1;
    }
    qh_sb_puts(why, ", reference ");
    qh_sb_value(why, stored->dtype, cmp->expected[0]);
    qh_sb_puts(why, ")");
    return 1;
}

void qh_judge_mistrust(const qh_sb *why, qh_verdict *v)
{
    v->mistrusted = 1;
    if (v->status == QH_PASSED) {
        set(v, QH_MISTRUSTED, QH_REASON_MISTRUSTED);
        qh_sb_puts(&v->summary, why->s ? why->s : "");
    } else {
        qh_sb_printf(&v->detail, "    note: the vector is also mistrusted: %s\n",
                     why->s ? why->s : "");
    }
}
