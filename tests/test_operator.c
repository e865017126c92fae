/* tests/test_operator.c — the operator table (ops/operator.h), and that the layers reading it
 * agree: a random problem of every operator written by the one node-test writer loads back as
 * the same call and passes in and out of process, and `qmmcheck diff` generates every
 * operator, QOrderedMatMul included. And the count of docs/architecture.md §4.1: the files
 * that name an operator are its six places or listed places a new one need not touch, and the
 * backends answer UNSUPPORTED for an operator they were not written for. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_support.h"
#include "harness/gen/problem.h"
#include "harness/io/case.h"
#include "harness/judge/expect.h"
#include "ops/qmm_ops.h"
#include "optimized/qmm_optimized.h"
#include "reference/qmm_reference.h"
#include "tests/casefile_support.h"

TestSuite(operator, .init = make_tmp, .fini = remove_tmp);

static const qmm_op_kind kinds[] = {QMM_OP_MATMULINTEGER, QMM_OP_QLINEARMATMUL,
                                    QMM_OP_QORDEREDMATMUL, QMM_OP_MATMULNBITS,
                                    QMM_OP_DEQUANTIZELINEAR, QMM_OP_DYNAMICQUANTIZEMATMUL,
                                    QMM_OP_MATMUL_INTEGER_TO_FLOAT};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))
/* The first N_RANDOM_KINDS are what qh_problem_random's mixed draw gives; issue 27's four come
 * from their own generators, only when qh_random_opts.float_op names one (harness/gen/problem.c),
 * so the tests below that use the mixed draw stop at N_RANDOM_KINDS. */
#define N_RANDOM_KINDS 3

/* ---- the table ---- */

Test(operator, every_operator_has_one_descriptor)
{
    cr_expect_eq(qmm_op_count(), N_KINDS);
    for (int i = 0; i < N_KINDS; i++) {
        const qmm_op_desc *d = qmm_op_desc_of(kinds[i]);
        cr_assert_not_null(d, "no descriptor for %s", qmm_op_name(kinds[i]));
        cr_expect_eq(d->kind, kinds[i]);
        cr_expect_str_eq(d->op_type, qmm_op_name(kinds[i]));
        int seen = 0;
        for (int32_t j = 0; j < qmm_op_count(); j++)
            seen += qmm_op_at(j)->kind == kinds[i];
        cr_expect_eq(seen, 1, "%s is in the table %d times", d->op_type, seen);
    }
    cr_expect_null(qmm_op_at(-1));
    cr_expect_null(qmm_op_at(qmm_op_count()));
}

/* Where a field sits must be inside qmm_call's union and land on that operator's member. */
static void expect_inside(const qmm_op_desc *d, const char *what, size_t offset, size_t size)
{
    cr_expect(offset >= offsetof(qmm_call, u) && offset + size <= sizeof(qmm_call),
              "%s %s: offset %zu outside the call", d->op_type, what, offset);
}

Test(operator, names_unique_and_offsets_inside_the_call)
{
    for (int32_t i = 0; i < qmm_op_count(); i++) {
        const qmm_op_desc *d = qmm_op_at(i);
        cr_expect(d->n_inputs > 0 && d->n_inputs <= QMM_MAX_OP_INPUTS);
        cr_expect(d->n_attrs >= 0 && d->n_attrs <= QMM_MAX_OP_ATTRS);
        cr_expect(d->a_input >= 0 && d->a_input < d->n_inputs);
        cr_expect(d->b_input >= 0 && d->b_input < d->n_inputs && d->b_input != d->a_input);
        cr_expect(d->input_types && d->y_shape && d->validate && d->slug && d->output_name);
        cr_expect(d->opset_min <= d->opset_max);
        const char *names[QMM_MAX_OP_INPUTS + QMM_MAX_OP_ATTRS + 1];
        size_t offsets[QMM_MAX_OP_INPUTS + 1];
        int n = 0, no = 0;
        for (int32_t j = 0; j < d->n_inputs; j++) {
            expect_inside(d, d->inputs[j].name, d->inputs[j].offset, sizeof(qmm_tensor));
            names[n++] = d->inputs[j].name;
            offsets[no++] = d->inputs[j].offset;
            /* an optional input is never followed by a required one (ONNX drops trailing
             * absent inputs, and the loader counts on it) */
            if (j > 0 && d->inputs[j - 1].optional)
                cr_expect(d->inputs[j].optional, "%s: required %s after an optional input",
                          d->op_type, d->inputs[j].name);
        }
        expect_inside(d, "output", d->output_offset, sizeof(qmm_tensor));
        offsets[no++] = d->output_offset;
        names[n++] = d->output_name;
        for (int32_t j = 0; j < d->n_attrs; j++) {
            expect_inside(d, d->attrs[j].name, d->attrs[j].offset, sizeof(int32_t));
            cr_expect(d->attrs[j].lo <= d->attrs[j].hi);
            names[n++] = d->attrs[j].name;
        }
        if (d->opset_offset >= 0)
            expect_inside(d, "opset", (size_t)d->opset_offset, sizeof(int32_t));
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                cr_expect(strcmp(names[a], names[b]) != 0, "%s: '%s' twice", d->op_type,
                          names[a]);
        for (int a = 0; a < no; a++)
            for (int b = a + 1; b < no; b++)
                cr_expect_neq(offsets[a], offsets[b], "%s: two tensors share an offset",
                              d->op_type);
    }
}

Test(operator, lookup_by_domain_and_op_type)
{
    cr_expect_eq(qmm_op_lookup("", "QLinearMatMul")->kind, QMM_OP_QLINEARMATMUL);
    cr_expect_eq(qmm_op_lookup("ai.onnx", "QLinearMatMul")->kind, QMM_OP_QLINEARMATMUL);
    cr_expect_eq(qmm_op_lookup("", "MatMulInteger")->kind, QMM_OP_MATMULINTEGER);
    cr_expect_eq(qmm_op_lookup("com.microsoft", "QOrderedMatMul")->kind,
                 QMM_OP_QORDEREDMATMUL);
    /* the domain is part of the name */
    cr_expect_null(qmm_op_lookup("", "QOrderedMatMul"));
    cr_expect_null(qmm_op_lookup("com.microsoft", "QLinearMatMul"));
    cr_expect_null(qmm_op_lookup("", "MatMul"));
    cr_expect_null(qmm_op_lookup("", "qlinearmatmul"));
    cr_expect_null(qmm_op_desc_of(QMM_OP_NONE));
    cr_expect_null(qmm_op_desc_of((qmm_op_kind)99));
}

Test(operator, accessors_read_the_call_through_the_table)
{
    qmm_call c;
    qmm_call_init(&c, QMM_OP_QORDEREDMATMUL, 1);
    cr_expect_eq(qmm_call_input(&c, 0), &c.u.qorderedmatmul.a);
    cr_expect_eq(qmm_call_input(&c, 2), &c.u.qorderedmatmul.b);
    cr_expect_eq(qmm_call_input(&c, 7), &c.u.qorderedmatmul.scale_c);
    cr_expect_null(qmm_call_input(&c, 8));
    cr_expect_null(qmm_call_input(&c, -1));
    cr_expect_eq(qmm_call_output(&c), &c.u.qorderedmatmul.y);
    cr_expect_eq(qmm_call_attr(&c, 1), &c.u.qorderedmatmul.order_b);
    cr_expect_null(qmm_call_attr(&c, 3));
    cr_expect_eq(qmm_call_output_dtype(&c), QMM_DTYPE_INT8);
    qmm_call_init(&c, QMM_OP_QLINEARMATMUL, 21);
    cr_expect_eq(c.u.qlinearmatmul.opset, 21);
    cr_expect_eq(qmm_call_opset(&c), 21);
    cr_expect_eq(qmm_call_input(&c, 3), &c.u.qlinearmatmul.b);
    c.u.qlinearmatmul.y_zero_point.dtype = QMM_DTYPE_INT8;
    cr_expect_eq(qmm_call_output_dtype(&c), QMM_DTYPE_INT8);
    qmm_call_init(&c, QMM_OP_MATMULINTEGER, 0);
    cr_expect_eq(qmm_call_opset(&c), 10);
    cr_expect_eq(qmm_call_output_dtype(&c), QMM_DTYPE_INT32);
    cr_expect_null(qmm_call_attr(&c, 0));
    qmm_call_init(&c, QMM_OP_NONE, 0);
    cr_expect_null(qmm_call_input(&c, 0));
    cr_expect_null(qmm_call_output(&c));
}

/* ---- the loader, the writer and the invocation agree ---- */

/* The reference's verdict on a problem (its validator needs y's buffer, which qh_expect
 * allocates). */
static qmm_status_code verdict(const qh_problem *p)
{
    qh_expectation e;
    cr_assert_eq(qh_expect(&p->call, "spec", &e), 0);
    qmm_status_code code = e.code;
    qh_expectation_free(&e);
    return code;
}

/* The first valid random problem of operator `op` (seed 7) with a non-empty y, within a small
 * budget. */
static void random_of(qmm_op_kind op, qh_problem *p)
{
    qh_random_opts o = {.invalid_per_mille = 0, .max_outputs = 256, .max_macs = 1 << 14};
    for (uint64_t i = 0; i < 1000; i++) {
        qh_rng r;
        qh_rng_seed(&r, 7, i);
        cr_assert_eq(qh_problem_random(p, &r, &o), 0);
        if (p->call.op == op && p->y_shape_known &&
            qmm_tensor_numel(qmm_call_output_c(&p->call)) > 0 && verdict(p) == QMM_OK)
            return;
        qh_problem_free(p);
    }
    cr_assert_fail("no valid random %s in 1000 problems", qmm_op_name(op));
}

static void expect_same_tensor(const char *what, const qmm_tensor *x, const qmm_tensor *y)
{
    cr_expect_eq(x->dtype, y->dtype, "%s: dtype", what);
    if (!qmm_tensor_present(x))
        return;
    cr_expect_eq(x->rank, y->rank, "%s: rank", what);
    for (int32_t i = 0; i < x->rank; i++)
        cr_expect_eq(x->dims[i], y->dims[i], "%s: dim %d", what, i);
    if (!x->data)
        return;
    size_t bytes = (size_t)qmm_tensor_numel(x) * qmm_dtype_size(x->dtype);
    cr_expect(bytes == 0 || memcmp(x->data, y->data, bytes) == 0, "%s: bytes", what);
}

Test(operator, every_operator_written_by_the_writer_loads_back_as_the_same_call)
{
    for (int k = 0; k < N_RANDOM_KINDS; k++) {
        qh_problem p;
        random_of(kinds[k], &p);
        const qmm_op_desc *d = qmm_call_desc(&p.call);
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", tmpdir, d->slug);
        qh_error err;
        qh_expectation e;
        cr_assert_eq(qh_expect(&p.call, "spec", &e), 0);
        cr_assert_eq(e.code, QMM_OK, "%s", e.message);
        cr_assert_eq(qh_problem_write_dir(dir, &p, &e.exact, NULL, &err), 0, "%s", err.msg);
        qh_expectation_free(&e);
        qh_case_ref ref = {.dir = dir, .name = (char *)d->slug, .data_set = 0};
        qh_case c;
        cr_assert_eq(qh_case_load(&ref, &c, &err), 0, "%s: %s", d->op_type, err.msg);
        cr_expect_eq(c.oc.call.op, p.call.op);
        cr_expect_eq(qmm_call_opset(&c.oc.call), qmm_call_opset(&p.call), "%s", d->op_type);
        for (int32_t i = 0; i < d->n_attrs; i++)
            cr_expect_eq(qmm_call_attr_value(&c.oc.call, i), qmm_call_attr_value(&p.call, i),
                         "%s %s", d->op_type, d->attrs[i].name);
        for (int32_t i = 0; i < d->n_inputs; i++)
            expect_same_tensor(d->inputs[i].name, qmm_call_input_c(&p.call, i),
                               qmm_call_input_c(&c.oc.call, i));
        cr_expect(c.oc.y_shape_known);
        expect_same_tensor("y", qmm_call_output_c(&p.call), qmm_call_output_c(&c.oc.call));
        /* the node names its inputs as the descriptor does (vectors/qordered/ spell them so) */
        for (int32_t i = 0; i < c.model.n_inputs; i++)
            if (c.model.inputs[i][0])
                cr_expect_str_eq(c.model.inputs[i], d->inputs[i].name);
        cr_expect_str_eq(c.model.outputs[0], d->output_name);
        qh_case_free(&c);
        qh_problem_free(&p);
    }
    /* the reference's answer, computed in a forked worker from what crossed the wire, is
     * what it computes in process: the invocation reads the call as the loader built it */
    char *out;
    int rc = qmmcheck(&out, "run --isolate --backend reference --vectors '%s'", tmpdir);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "SUMMARY: total:3 passed:3 ") != NULL, "%s", out);
    free(out);
}

Test(operator, the_committed_qordered_vectors_name_inputs_as_the_table_does)
{
    qh_case_list list;
    discover_committed("vectors/qordered", &list);
    qh_error err;
    const qmm_op_desc *d = qmm_op_desc_of(QMM_OP_QORDEREDMATMUL);
    for (size_t i = 0; i < list.count; i++) {
        qh_case c;
        if (qh_case_load(&list.items[i], &c, &err) != 0)
            continue;
        for (int32_t j = 0; j < c.model.n_inputs; j++)
            if (c.model.inputs[j][0])
                cr_expect_str_eq(c.model.inputs[j], d->inputs[j].name, "%s",
                                 list.items[i].name);
        cr_expect_str_eq(c.model.outputs[0], d->output_name, "%s", list.items[i].name);
        qh_case_free(&c);
    }
    qh_case_list_free(&list);
}

/* ---- diff generates every operator ---- */

Test(operator, random_problems_cover_every_operator)
{
    int seen[4] = {0}, valid_qom = 0;
    qh_random_opts o = {.invalid_per_mille = 100};
    for (uint64_t i = 0; i < 400; i++) {
        qh_rng r;
        qh_rng_seed(&r, 3, i);
        qh_problem p;
        cr_assert_eq(qh_problem_random(&p, &r, &o), 0);
        cr_assert(p.call.op >= 1 && p.call.op <= 3);
        seen[p.call.op]++;
        if (p.call.op == QMM_OP_QORDEREDMATMUL && verdict(&p) == QMM_OK)
            valid_qom++;
        qh_problem_free(&p);
    }
    for (int k = 0; k < N_RANDOM_KINDS; k++)
        cr_expect_gt(seen[kinds[k]], 20, "%s: %d of 400", qmm_op_name(kinds[k]), seen[kinds[k]]);
    /* most QOrderedMatMul problems are valid: the generator keeps to the tiles and orders */
    cr_expect_gt(valid_qom, seen[QMM_OP_QORDEREDMATMUL] * 8 / 10, "%d of %d valid", valid_qom,
                 seen[QMM_OP_QORDEREDMATMUL]);
}

Test(operator, diff_sees_qorderedmatmul_and_counts_unsupported_as_skipped)
{
    char *out;
    /* the onnx-ref profile answers UNSUPPORTED for QOrderedMatMul (after validation): skipped,
     * not a difference (until 2026-11-27 the optimized backend did; it computes it now) */
    int rc = qmmcheck(&out, "diff --backend reference --backend reference:profile=onnx-ref "
                            "--seed 5 --count 300 --only qorderedmatmul --allow-empty "
                            "--out '%s/d' --quiet", tmpdir);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, " differences:0 ") != NULL, "%s", out);
    unsigned long long skipped = 0;
    const char *s = strstr(out, " skipped:");
    cr_assert(s, "%s", out);
    skipped = strtoull(s + 9, NULL, 10);
    cr_expect_gt(skipped, 10, "%s", out);
    free(out);
    /* a backend that implements it is compared on it */
    rc = qmmcheck(&out, "diff --backend reference --backend optimized --seed 5 --count 300 "
                        "--only qorderedmatmul --out '%s/d2' --quiet", tmpdir);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, " differences:0 skipped:0 ") != NULL, "%s", out);
    free(out);
}

/* ---- adding an operator (docs/architecture.md §4.1) ---- */

/* The places a new operator must touch, "%s" standing for its slug: the count is this array's
 * size. */
static const struct place {
    const char *path;
    const char *what;
} required[] = {
    {"include/qmm/ops.h", "the call struct, qmm_op_kind, the union member, qmm_op_name"},
    {"ops/operator.c", "the descriptor row (with its validator when its rules are new)"},
    {"reference/op-%s.c", "the exact computation and explanation (the registry finds it)"},
    {"harness/gen/problem.c", "the random generator row (diff and the random edge suite)"},
    {"fuzz/decode.c", "the byte format: decoder, encoder, codec row"},
    {"fuzz/fuzz_%s.c", "the fuzz target (fuzz/CMakeLists.txt and the scripts find it)"},
};
_Static_assert(sizeof required / sizeof required[0] == 6,
               "docs/architecture.md §4.1 says six files: change both together");

/* Files that name an operator although a new one need not touch them, each with why; a path
 * ending in '/' is a folder. Anything else naming an operator fails the test below. */
static const struct place optional[] = {
    {"include/qmm/backend.h", "the own entries of the three operators older than `call`; frozen"},
    {"reference/backend.c", "the reference's entries for those three; frozen"},
    {"reference/profiles.c", "a profile computing an operator its own way (else UNSUPPORTED)"},
    {"reference/ref_internal.h", "declares such a profile form living in the operator's file"},
    {"ops/qmm_ops.h", "a validator that returns its plan, for backends that implement it"},
    {"ops/validate.c", "the matmul-shaped operators' validators"},
    {"ops/qordered_layout.c", "QOrderedMatMul's layouts and rules"},
    {"harness/gen/edge/", "hand-written edge suites, one file each (the random one needs nothing)"},
    {"harness/gen/edge_build.c", "the edge suites' builders: a case's call as its operator"},
    {"harness/gen/edge_build.h", "the same"},
    {"harness/gen/problem.h", "a comment"},
    {"harness/gen/edge.h", "a comment"},
    {"harness/run/fingerprint.c", "the profile fingerprint is a QLinearMatMul suite"},
    {"harness/cli/cmd_bench.c", "bench times QLinearMatMul"},
    {"ops/operator.h", "a comment"},
    {"fuzz/differential.c", "a plain QLinearMatMul probes whether a variant runs on this CPU"},
    {"fuzz/differential.h", "a comment"},
    {"fuzz/make_corpus.c", "synthetic seeds"},
    {"fuzz/CMakeLists.txt", "a ctest of the backend probe runs the QLinearMatMul replay binary"},
    {".clusterfuzzlite/build.sh", "a comment"},
    {"optimized/", "an optimized implementation"},
    {"examples/", "the vendor example plugin"},
};

static int is_place(const char *file, const struct place *p, size_t n, const char *slug)
{
    for (size_t i = 0; i < n; i++) {
        char path[256];
        snprintf(path, sizeof path, p[i].path, slug);
        size_t len = strlen(path);
        if (path[len - 1] == '/' ? strncmp(file, path, len) == 0 : strcmp(file, path) == 0)
            return 1;
    }
    return 0;
}

/* The operator's constant and slug, as the §4.1 grep finds them in the source (not tests/,
 * docs/, vectors/ or build trees); one file per line, relative to the root (malloc'd). */
static char *files_naming(const qmm_op_desc *d)
{
    char upper[64];
    size_t n = strlen(d->slug);
    cr_assert_lt(n, sizeof upper);
    for (size_t i = 0; i <= n; i++)
        upper[i] = (char)(d->slug[i] >= 'a' && d->slug[i] <= 'z' ? d->slug[i] - 32 : d->slug[i]);
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/grep.out", tmpdir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && grep -rlE 'QMM_OP_%s|%s' --include='*.c' --include='*.h' "
             "--include='*.cu' --include=CMakeLists.txt --include='*.cmake' --include='*.sh' "
             "--include='*.py' include ops reference harness fuzz optimized examples "
             ".clusterfuzzlite CMakeLists.txt | sort > '%s'",
             env("QMM_SOURCE_DIR"), upper, d->slug, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    return slurp(path);
}

Test(operator, only_the_six_places_and_the_listed_ones_name_an_operator)
{
    for (int32_t i = 0; i < qmm_op_count(); i++) {
        const qmm_op_desc *d = qmm_op_at(i);
        char *files = files_naming(d);
        int found[sizeof required / sizeof required[0]] = {0};
        for (char *line = strtok(files, "\n"); line; line = strtok(NULL, "\n")) {
            int req = is_place(line, required, sizeof required / sizeof required[0], d->slug);
            cr_expect(req || is_place(line, optional, sizeof optional / sizeof optional[0],
                                      d->slug),
                      "%s names %s but is none of the places docs/architecture.md §4.1 lists: "
                      "read the operator from ops/operator.h, or list it here with why",
                      line, d->op_type);
            for (size_t r = 0; r < sizeof required / sizeof required[0]; r++)
                found[r] += is_place(line, &required[r], 1, d->slug);
        }
        for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
            char path[256];
            snprintf(path, sizeof path, required[r].path, d->slug);
            cr_expect(found[r], "%s: %s does not name it (%s)", d->op_type, path,
                      required[r].what);
        }
        free(files);
    }
}

/* A kind no file was written for: what a new operator is to the code that has not learnt it. */
#define UNKNOWN_KIND ((qmm_op_kind)(QMM_MAX_OP_KINDS - 1))

Test(operator, kinds_fit_the_bound_and_an_unknown_one_is_unsupported_everywhere)
{
    for (int32_t i = 0; i < qmm_op_count(); i++)
        cr_expect_lt((int)qmm_op_at(i)->kind, QMM_MAX_OP_KINDS, "%s", qmm_op_at(i)->op_type);
    cr_assert_null(qmm_op_desc_of(UNKNOWN_KIND));
    qmm_status st;
    qmm_backend *backends[] = {qmm_reference_open(QMM_ABI_VERSION, "", &st),
                               qmm_reference_open(QMM_ABI_VERSION, "profile=ort-fp32", &st),
                               qmm_optimized_open(QMM_ABI_VERSION, "", &st)};
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        qmm_backend *be = backends[b];
        cr_assert_not_null(be);
        qmm_call call;
        memset(&call, 0, sizeof call);
        call.op = UNKNOWN_KIND;
        cr_expect_eq(be->query(be, &call, &st), QMM_UNSUPPORTED, "%s query", be->name);
        cr_expect_eq(qmm_backend_run(be, &call, &st), QMM_UNSUPPORTED, "%s: %s", be->name,
                     st.message);
        be->close(be);
    }
}
