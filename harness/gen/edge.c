/* harness/gen/edge.c — the edge-case suites (see edge.h and docs/edge-suites.md): the list of
 * them, and building one: its file's builder adds the cases (harness/gen/edge/<suite>.c, with
 * the vocabulary of edge_build.h), then every case gets its common tags and the exact
 * reference's answer, and the names are checked unique.
 *
 * Every case is constructed so that the property it targets holds by arithmetic, not by luck:
 * ties come from power-of-two (or odd-denominator) multipliers with odd accumulators; near-ties
 * from solving mb·c − my·D = ±1 (so the exact value sits 1/(my·2^G) from a half-integer);
 * overflow from K·65025 crossing 2^31. The reference then computes what the answer is.
 */
#include "harness/gen/edge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/gen/edge_build.h"
#include "harness/io/case.h"
#include "harness/base/tensor.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

/* ---- the list ---------------------------------------------------------------------------- */

size_t qh_edge_suite_count(void)
{
    size_t n = 0;
    while (qh_edge_suites[n])
        n++;
    return n;
}

/* s comes before t: by seed, then by name (tests/test_edge.c keeps both unique). */
static int before(const qh_edge_suite *s, const qh_edge_suite *t)
{
    return s->seed != t->seed ? s->seed < t->seed : strcmp(s->name, t->name) < 0;
}

const qh_edge_suite *qh_edge_suite_at(size_t i)
{
    /* the registry is in file-name order: the i-th by seed is the one with i suites before
     * it (a quadratic walk over fifteen) */
    for (size_t k = 0; qh_edge_suites[k]; k++) {
        size_t earlier = 0;
        for (size_t j = 0; qh_edge_suites[j]; j++)
            earlier += (size_t)before(qh_edge_suites[j], qh_edge_suites[k]);
        if (earlier == i)
            return qh_edge_suites[k];
    }
    return NULL;
}

const qh_edge_suite *qh_edge_suite_find(const char *name)
{
    for (size_t i = 0; qh_edge_suites[i]; i++)
        if (strcmp(qh_edge_suites[i]->name, name) == 0)
            return qh_edge_suites[i];
    return NULL;
}

/* ---- expected outputs -------------------------------------------------------------------- */

static int compute_expected(qh_edge_case *c, qh_error *err)
{
    qh_problem_finish(&c->problem);
    int whatever = c->meta.expect == QMM_UNSUPPORTED; /* random suite: take the verdict */
    int meant_invalid = c->meta.expect == QMM_INVALID_ARGUMENT;
    c->meta.expect = QMM_OK;
    qmm_call call = c->problem.call;
    qmm_tensor *y = qh_call_output(&call);
    qmm_tensor alt = *y;
    if (qh_alloc_tensor(y, 0) != 0 || qh_alloc_tensor(&alt, 0) != 0) {
        free(y->data);
        snprintf(err->msg, sizeof err->msg, "%s: cannot allocate the output", c->name);
        return -1;
    }
    qmm_status st;
    qmm_status_ok(&st);
    int overflow = 0;
    qmm_status_code code = qmm_ref_compute(&call, &alt, &overflow, &st);
    free(alt.data);
    if (code == QMM_OK && !meant_invalid) {
        c->output = *y;
        c->has_output = 1;
        c->overflow = overflow;
        if (overflow)
            qh_edge_tag(c, "overflow-permitted");
        return 0;
    }
    free(y->data);
    if (code == QMM_INVALID_ARGUMENT && (meant_invalid || whatever)) {
        c->meta.expect = QMM_INVALID_ARGUMENT;
        if (whatever)
            qh_edge_tag(c, "invalid");
        return 0;
    }
    snprintf(err->msg, sizeof err->msg,
             "%s: generator bug: meant %s, the reference answers %s: %s", c->name,
             meant_invalid ? "invalid" : "valid", qmm_status_name(code), st.message);
    return -1;
}

/* Tags every case can be found by: operator, types, opset and scale type (where the call
 * has them), attributes, and the simplest form. */
static void common_tags(qh_edge_case *c)
{
    const qh_problem *p = &c->problem;
    const qmm_op_desc *d = qmm_call_desc(&p->call);
    char t[64];
    qh_edge_tag(c, d->slug);
    qh_problem_types(p, t, sizeof t);
    qh_edge_tag(c, t);
    if (d->opset_offset >= 0) {
        snprintf(t, sizeof t, "opset%d", qmm_call_opset(&p->call));
        qh_edge_tag(c, t);
        snprintf(t, sizeof t, "%s-scales", qmm_dtype_name(qh_problem_scale_type(p)));
        qh_edge_tag(c, t);
    }
    for (int32_t i = 0; i < d->n_attrs; i++) {
        snprintf(t, sizeof t, "%s-%d", d->attrs[i].name, qmm_call_attr_value(&p->call, i));
        qh_edge_tag(c, t);
    }
    if (qh_edge_simple_form(&p->call))
        qh_edge_tag(c, QH_EDGE_SIMPLE_FORM_TAG);
}

int qh_edge_build(const qh_edge_suite *suite, uint64_t seed, qh_edge_cases *out, qh_error *err)
{
    if (!suite->build) {
        snprintf(err->msg, sizeof err->msg, "suite %s: no builder", suite->name);
        return -1;
    }
    qh_edge_builder x;
    memset(&x, 0, sizeof x);
    x.suite = suite;
    x.seed = seed;
    x.out = out;
    qh_rng_seed(&x.rng, seed, 0x5eed);
    size_t first = out->count;
    suite->build(&x);
    if (x.failed) {
        snprintf(err->msg, sizeof err->msg, "suite %s: %s", suite->name, x.why);
        return -1;
    }
    for (size_t i = first; i < out->count; i++) {
        common_tags(&out->items[i]);
        if (compute_expected(&out->items[i], err) != 0)
            return -1;
    }
    /* names must be unique: two cases in one directory would overwrite each other */
    for (size_t i = first; i < out->count; i++)
        for (size_t j = i + 1; j < out->count; j++)
            if (strcmp(out->items[i].name, out->items[j].name) == 0) {
                snprintf(err->msg, sizeof err->msg, "suite %s: duplicate case name %s",
                         suite->name, out->items[i].name);
                return -1;
            }
    return 0;
}

void qh_edge_cases_free(qh_edge_cases *c)
{
    for (size_t i = 0; i < c->count; i++) {
        qh_problem_free(&c->items[i].problem);
        if (c->items[i].has_output)
            free(c->items[i].output.data);
    }
    free(c->items);
    memset(c, 0, sizeof *c);
}

int qh_edge_write(const char *root, const qh_edge_case *c, qh_error *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, c->name);
    return qh_problem_write_dir(dir, &c->problem, c->has_output ? &c->output : NULL, &c->meta,
                                err);
}
