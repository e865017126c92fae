/* tests/test_edge.c — the edge-case suites and `qmmcheck export` / `qmmcheck diff`: the
 * committed vectors/edge/ is exactly what the generator writes, every case passes against the
 * reference, hand-computed expectations hold, and diff finds, reports and saves differences. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_support.h"
#include "harness/gen/edge.h"
#include "harness/io/onnx_io.h"
#include "harness/judge/compare.h"
#include "ops/qmm_ops.h"

TestSuite(edge, .init = make_tmp, .fini = remove_tmp);

/* ---- the generator itself ---- */

Test(edge, every_suite_builds_with_unique_names_and_provenance)
{
    size_t total = 0;
    for (size_t i = 0; i < qh_edge_suite_count(); i++) {
        const qh_edge_suite *s = qh_edge_suite_at(i);
        cr_assert(qh_edge_suite_find(s->name) == s);
        qh_edge_cases cs = {0};
        qh_error err;
        cr_assert_eq(qh_edge_build(s, s->seed, &cs, &err), 0, "%s", err.msg);
        cr_expect(cs.count > 0, "suite %s is empty", s->name);
        char prov[128];
        snprintf(prov, sizeof prov, "qmmcheck edge generator, suite %s, seed %llu", s->name,
                 (unsigned long long)s->seed);
        for (size_t k = 0; k < cs.count; k++) {
            const qh_edge_case *c = &cs.items[k];
            cr_expect_str_eq(c->meta.provenance, prov);
            cr_expect(qh_meta_has_tag(&c->meta, s->name), "%s lacks its suite tag", c->name);
            cr_expect(c->meta.description[0] != '\0', "%s has no description", c->name);
            /* an invalid case stores no output; a valid one stores the reference's */
            cr_expect_eq(c->has_output, c->meta.expect == QMM_OK, "%s", c->name);
        }
        total += cs.count;
        qh_edge_cases_free(&cs);
    }
    cr_expect(total >= 200, "only %zu cases", total);
    cr_expect(qh_edge_suite_find("no-such-suite") == NULL);
}

/* Every rule of the suites exists in the simplest form (tag simple-form: 2-D, per-tensor,
 * float32 scales) of every type combination, and a kernel that supports only one combination
 * in that form gets at least 40 QLinearMatMul cases. */
Test(edge, every_rule_in_the_simplest_form_of_every_type_combination)
{
    /* a rule: the tags a case carries, and for how many cases */
    static const struct {
        const char *tags[3];
        int qlm, mmi; /* cases wanted per combination of each operator (0: not its rule) */
    } rules[] = {
        {{"tie", "even-zp", "positive"}, 1, 0},
        {{"tie", "even-zp", "negative"}, 1, 0},
        {{"tie", "odd-zp", "positive"}, 1, 0},
        {{"tie", "odd-zp", "negative"}, 1, 0},
        {{"tie", "inexact-multiplier", NULL}, 2, 0},
        {{"near-tie", "float32-fooled", "positive"}, 1, 0},
        {{"near-tie", "float32-fooled", "negative"}, 1, 0},
        {{"near-tie", "float64-fooled", NULL}, 2, 0},
        {{"saturation", "high", NULL}, 2, 0},
        {{"saturation", "low", NULL}, 2, 0},
        {{"zero-point-extremes", NULL, NULL}, 4, 4},
        {{"past-2p24", "positive", NULL}, 1, 1},
        {{"past-2p24", "negative", NULL}, 1, 1},
        {{"k-large", "extreme-values", NULL}, 1, 1}, /* K = 33026: past int32 */
        {{"k0", NULL, NULL}, 3, 3},
    };
    enum { N_RULES = sizeof rules / sizeof rules[0] };
    static const char *const combos[12] = {"u8u8u8", "u8u8s8", "u8s8u8", "u8s8s8",
                                           "s8u8u8", "s8u8s8", "s8s8u8", "s8s8s8",
                                           "u8u8",   "u8s8",   "s8u8",   "s8s8"};
    int found[12][N_RULES] = {{0}}, simple[12] = {0};
    for (size_t i = 0; i < qh_edge_suite_count(); i++) {
        const qh_edge_suite *s = qh_edge_suite_at(i);
        qh_edge_cases cs = {0};
        qh_error err;
        cr_assert_eq(qh_edge_build(s, s->seed, &cs, &err), 0, "%s", err.msg);
        for (size_t k = 0; k < cs.count; k++) {
            const qh_meta *m = &cs.items[k].meta;
            if (!qh_meta_has_tag(m, QH_EDGE_SIMPLE_FORM_TAG))
                continue;
            for (int t = 0; t < 12; t++) {
                if (!qh_meta_has_tag(m, combos[t]))
                    continue;
                simple[t]++;
                for (int r = 0; r < N_RULES; r++) {
                    int all = 1;
                    for (int j = 0; j < 3 && rules[r].tags[j]; j++)
                        all &= qh_meta_has_tag(m, rules[r].tags[j]);
                    found[t][r] += all;
                }
            }
        }
        qh_edge_cases_free(&cs);
    }
    for (int t = 0; t < 12; t++) {
        int qlm = t < 8;
        if (qlm)
            cr_expect_geq(simple[t], 40, "%s: %d cases in the simplest form", combos[t],
                          simple[t]);
        for (int r = 0; r < N_RULES; r++) {
            int want = qlm ? rules[r].qlm : rules[r].mmi;
            cr_expect_geq(found[t][r], want, "%s: %d simplest-form cases tagged %s %s %s, want %d",
                          combos[t], found[t][r], rules[r].tags[0],
                          rules[r].tags[1] ? rules[r].tags[1] : "",
                          rules[r].tags[2] ? rules[r].tags[2] : "", want);
        }
    }
}

/* Each suite is one file, harness/gen/edge/<name>.c, found by harness/CMakeLists.txt (as
 * reference/op-*.c are): every file's suite is listed, once, in the order of the seeds. */
Test(edge, each_suite_is_one_file_listed_by_seed)
{
    size_t n = qh_edge_suite_count();
    for (size_t i = 0; i < n; i++) {
        const qh_edge_suite *s = qh_edge_suite_at(i);
        cr_assert(s, "suite %zu of %zu is missing", i, n);
        cr_expect(s->build != NULL, "suite %s has no builder", s->name);
        if (i > 0)
            cr_expect_gt(s->seed, qh_edge_suite_at(i - 1)->seed, "suite %s: seeds are unique and "
                         "give the order", s->name);
        for (size_t j = 0; j < i; j++)
            cr_expect_str_neq(s->name, qh_edge_suite_at(j)->name);
        char path[1024];
        snprintf(path, sizeof path, "%s/harness/gen/edge/%s.c", env("QMM_SOURCE_DIR"), s->name);
        FILE *f = fopen(path, "r");
        cr_expect(f != NULL, "suite %s is not its own file %s", s->name, path);
        if (f)
            fclose(f);
    }
    cr_expect(qh_edge_suite_at(n) == NULL);
    cr_expect_str_eq(qh_edge_suite_at(0)->name, "ties");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/harness/gen/edge", env("QMM_SOURCE_DIR"));
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        files += len > 2 && strcmp(e->d_name + len - 2, ".c") == 0;
    }
    closedir(d);
    cr_expect_eq(files, n, "%zu files in %s, %zu suites listed", files, dir, n);
}

Test(edge, same_seed_same_cases_other_seed_other_values)
{
    const qh_edge_suite *s = qh_edge_suite_find("types");
    cr_assert(s);
    qh_edge_cases a = {0}, b = {0}, c = {0};
    qh_error err;
    cr_assert_eq(qh_edge_build(s, s->seed, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(qh_edge_build(s, s->seed, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(qh_edge_build(s, s->seed + 1, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(a.count, b.count);
    int differs = 0;
    for (size_t k = 0; k < a.count; k++) {
        const qmm_tensor *x = &a.items[k].problem.call.u.qlinearmatmul.a;
        const qmm_tensor *y = &b.items[k].problem.call.u.qlinearmatmul.a;
        const qmm_tensor *z = &c.items[k].problem.call.u.qlinearmatmul.a;
        size_t n = (size_t)qmm_tensor_numel(x);
        cr_expect(memcmp(x->data, y->data, n) == 0);
        differs |= memcmp(x->data, z->data, n) != 0;
    }
    cr_expect(differs, "another seed should draw other operands");
    qh_edge_cases_free(&a);
    qh_edge_cases_free(&b);
    qh_edge_cases_free(&c);
}

/* ---- export and the committed vectors ---- */

Test(edge, export_reproduces_committed_vectors_byte_for_byte)
{
    char *out;
    int rc = qmmcheck(&out, "export --suite all --out '%s/edge'", tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* every file, both ways: a changed byte, a missing or an extra file all show */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && diff -r -q vectors/edge '%s/edge' > '%s/diff.txt' 2>&1",
             env("QMM_SOURCE_DIR"), tmpdir, tmpdir);
    rc = system(cmd);
    snprintf(cmd, sizeof cmd, "%s/diff.txt", tmpdir);
    char *d = slurp(cmd);
    cr_expect_eq(rc, 0,
                 "vectors/edge differs from a fresh export (regenerate with `qmmcheck export "
                 "--suite all --out vectors/edge` after removing it):\n%s",
                 d);
    free(d);
}

Test(edge, every_committed_edge_case_passes_against_the_reference)
{
    char *out;
    int rc = qmmcheck(&out, "run -q --backend reference --vectors vectors/edge");
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, " failed:0 mistrusted:0 skipped:0 unchecked:0 crashed:0 timeout:0 "
                          "error:0 ") != NULL,
              "%s", out);
    expect_in(out, "SUMMARY: total:863 passed:863 ");
    free(out);
}

Test(edge, list_names_suites_counts_and_tags)
{
    char *out;
    cr_assert_eq(qmmcheck(&out, "export --list"), 0);
    for (size_t i = 0; i < qh_edge_suite_count(); i++)
        expect_in(out, qh_edge_suite_at(i)->name);
    expect_in(out, "ties          116 cases  seed 1");
    expect_in(out, "tags: ties, tie, even-zp");
    expect_in(out, "863 cases");
    free(out);
    cr_expect_eq(qmmcheck(&out, "export --suite nonsense --out '%s/x'", tmpdir), 2);
    free(out);
    cr_expect_eq(qmmcheck(&out, "export --suite ties"), 2);
    free(out);
    cr_expect_eq(qmmcheck(&out, "export --suite ties --out '%s/x' --bogus", tmpdir), 2);
    free(out);
}

/* The dq-matmul suite's two forms agree: each DequantizeLinear case's y (the weights, [K, N]),
 * times its fused MatMulNBits cases' A plus their bias, is their stored output. The values are
 * short (A 3-bit mantissas, weights 11 bits), so the double sum is exact and RN32 of it is R's
 * rounding. */
static const qh_edge_case *case_named(const qh_edge_cases *cs, const char *name)
{
    for (size_t i = 0; i < cs->count; i++)
        if (strcmp(cs->items[i].name, name) == 0)
            return &cs->items[i];
    return NULL;
}

Test(edge, dq_matmul_unfused_and_fused_forms_agree)
{
    qh_edge_cases cs = {0};
    qh_error err;
    const qh_edge_suite *s = qh_edge_suite_find("dq-matmul");
    cr_assert(s != NULL);
    cr_assert_eq(qh_edge_build(s, s->seed, &cs, &err), 0, "%s", err.msg);
    int pairs = 0;
    for (size_t i = 0; i < cs.count; i++) {
        const qh_edge_case *dq = &cs.items[i];
        if (dq->problem.call.op != QMM_OP_DEQUANTIZELINEAR)
            continue;
        const char *id = strrchr(dq->name, '/') + 1;
        for (int level = 0; level <= 4; level += 4) {
            char name[256];
            snprintf(name, sizeof name, "matmulnbits/dq-matmul/%s-fused-level%d", id, level);
            const qh_edge_case *f = case_named(&cs, name);
            cr_assert(f != NULL, "%s has no %s", dq->name, name);
            const qmm_matmulnbits *q = &f->problem.call.u.matmulnbits;
            cr_assert_eq(q->accuracy_level, level);
            int64_t k_total = q->k, n_cols = q->n, rows = qmm_tensor_numel(&q->a) / q->k;
            cr_assert_eq(qmm_tensor_numel(&dq->output), k_total * n_cols, "%s", dq->name);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t n = 0; n < n_cols; n++) {
                    double sum = qmm_tensor_present(&q->bias)
                                     ? qmm_scale_decode(q->bias.dtype, q->bias.data, n)
                                     : 0.0;
                    for (int64_t k = 0; k < k_total; k++)
                        sum += qmm_scale_decode(q->a.dtype, q->a.data, r * k_total + k) *
                               qmm_scale_decode(dq->output.dtype, dq->output.data,
                                                k * n_cols + n);
                    double got = qmm_scale_decode(f->output.dtype, f->output.data,
                                                  r * n_cols + n);
                    cr_expect_eq((float)sum, (float)got, "%s [%lld,%lld]: A*y+bias %.9g, fused %.9g",
                                 name, (long long)r, (long long)n, sum, got);
                }
            pairs++;
        }
    }
    cr_expect_geq(pairs, 12, "%d fused cases", pairs);
    qh_edge_cases_free(&cs);
}

/* The MatMulNBits suites catch real kernels' bugs: tests/plugins/nbits_orders.c with one bug
 * put in fails the cases named, and without it passes every case it runs (the float16 and
 * bfloat16 ones it skips). */
Test(edge, matmulnbits_suites_catch_deliberate_bugs)
{
    static const struct {
        const char *bug, *caught[2];
    } bugs[] = {
        {"floor-blocks", {"nbits-blocks/bits4-block32-level0", "nbits-rows/m2-level4"}},
        {"zp-default-zero", {"nbits-zero-points/bits4-absent", "nbits-blocks/bits8-block16-level0"}},
        {"zp-unpacked", {"nbits-zero-points/bits4-packed", "nbits-zero-points/bits2-packed-flat"}},
        {"drop-last-row", {"nbits-rows/m129-level4", "nbits-rows/m257-level0"}},
        {"block512-zeros", {"nbits-blocks/bits4-block512-level4", "dq-matmul/u4-bs512-m1-k771-fused-level4"}},
    };
    char *out;
    int rc = qmmcheck(&out, "run --backend '%s:order=sequential' --vectors vectors/edge/matmulnbits",
                      env("QMM_NBITS_PLUGIN"));
    cr_expect_eq(rc, 0, "%s", out);
    expect_in(out, " failed:0 mistrusted:0 ");
    free(out);
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
        rc = qmmcheck(&out, "run --backend '%s:order=sequential,bug=%s' "
                            "--vectors vectors/edge/matmulnbits",
                      env("QMM_NBITS_PLUGIN"), bugs[i].bug);
        cr_expect_eq(rc, 1, "%s: %s", bugs[i].bug, out);
        for (int j = 0; j < 2; j++) {
            char line[160];
            snprintf(line, sizeof line, "FAILED %s (", bugs[i].caught[j]);
            cr_expect(strstr(out, line) != NULL, "bug %s: %s not failed", bugs[i].bug,
                      bugs[i].caught[j]);
        }
        free(out);
    }
}

/* An exported model declares only the attributes its opset defines: DequantizeLinear's
 * output_dtype exists from opset 23, so an opset-21 node written with output_dtype = 0 was
 * rejected by onnxruntime ("Unrecognized attribute: output_dtype") and onnx.checker; an optional
 * attribute at its default is now left out, and a set one is written. */
static int64_t model_attr(const char *path, const char *name)
{
    qh_model *m = calloc(1, sizeof *m);
    qh_error err;
    cr_assert(m != NULL);
    cr_assert_eq(qh_read_model_file(path, m, &err), 0, "%s", err.msg);
    int64_t v = -1;
    for (int32_t i = 0; i < m->n_attrs; i++)
        if (strcmp(m->attrs[i].name, name) == 0)
            v = m->attrs[i].i;
    free(m);
    return v;
}

Test(edge, exported_models_declare_only_the_attributes_of_their_opset)
{
    char *out = qmmcheck_expect(0, "export --suite dq-blocked --out '%s/e'", tmpdir);
    free(out);
    char path[4096];
    snprintf(path, sizeof path, "%s/e/dequantizelinear/dq-blocked/axis0-rank3/model.onnx", tmpdir);
    cr_expect_eq(model_attr(path, "output_dtype"), -1, "opset 21 wrote output_dtype");
    cr_expect_eq(model_attr(path, "axis"), 0);
    cr_expect_eq(model_attr(path, "block_size"), 16);
    snprintf(path, sizeof path, "%s/e/dequantizelinear/dq-blocked/per-axis/model.onnx", tmpdir);
    cr_expect_eq(model_attr(path, "axis"), -1, "axis 1 is the default");
    snprintf(path, sizeof path, "%s/e/dequantizelinear/dq-blocked/output-float16/model.onnx",
             tmpdir);
    cr_expect_eq(model_attr(path, "output_dtype"), QMM_DTYPE_FLOAT16);
    /* and the case loads back as the call it was: it passes against the reference */
    out = qmmcheck_expect(0, "run -q --backend reference --vectors '%s/e'", tmpdir);
    expect_in(out, "SUMMARY: total:43 passed:43 ");
    free(out);
}

/* The case writer (harness/io/casedir.h) follows links among the parents the user named, but
 * refuses a case directory that is a link, and a path component that is not a directory,
 * naming the path. */
Test(edge, export_refuses_a_linked_case_dir_and_a_file_in_the_way)
{
    char cmd[2048], *out;
    const qh_edge_suite *s = qh_edge_suite_find("ties");
    qh_edge_cases cs = {0};
    qh_error err;
    cr_assert(s);
    cr_assert_eq(qh_edge_build(s, s->seed, &cs, &err), 0, "%s", err.msg);
    char first[192];
    snprintf(first, sizeof first, "%s", cs.items[0].name);
    qh_edge_cases_free(&cs);

    snprintf(cmd, sizeof cmd, "mkdir '%s/real' && ln -s real '%s/link'", tmpdir, tmpdir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(qmmcheck(&out, "export --suite ties --out '%s/link/'", tmpdir), 0, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/real/%s/model.onnx", tmpdir, first);
    char *model = slurp(cmd);
    cr_expect(model != NULL, "a link among the parents is followed: %s missing", cmd);
    free(model);

    snprintf(cmd, sizeof cmd, "mkdir '%s/f' && touch '%s/f/qlinearmatmul'", tmpdir, tmpdir);
    cr_assert_eq(system(cmd), 0);
    cr_expect_eq(qmmcheck(&out, "export --suite ties --out '%s/f'", tmpdir), 1, "%s", out);
    snprintf(cmd, sizeof cmd, "%s/f/qlinearmatmul: exists and is not a directory (a regular file)",
             tmpdir);
    expect_in(out, cmd);
    free(out);

    snprintf(cmd, sizeof cmd, "mkdir -p '%s/l/%s' '%s/elsewhere' && rmdir '%s/l/%s' && "
             "ln -s '%s/elsewhere' '%s/l/%s'",
             tmpdir, first, tmpdir, tmpdir, first, tmpdir, tmpdir, first);
    cr_assert_eq(system(cmd), 0);
    cr_expect_eq(qmmcheck(&out, "export --suite ties --out '%s/l'", tmpdir), 1, "%s", out);
    snprintf(cmd, sizeof cmd, "%s/l/%s: a symbolic link", tmpdir, first);
    expect_in(out, cmd);
    free(out);
    snprintf(cmd, sizeof cmd, "rmdir '%s/elsewhere'", tmpdir); /* still empty */
    cr_expect_eq(system(cmd), 0, "something was written through the link");
}

/* ---- hand-checked expectations ---- */

static void read_output(const char *case_dir, qh_tensor *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/edge/%s/test_data_set_0/output_0.pb",
             env("QMM_SOURCE_DIR"), case_dir);
    qh_error err;
    cr_assert_eq(qh_read_tensor_file(path, t, &err), 0, "%s", err.msg);
}

Test(edge, tie_outputs_round_half_to_even_before_the_zero_point)
{
    /* a − za rows [2i+1, 1], b − zb = [[1,1],[0,2]], multiplier 1/2: y_real col 0 = 0.5, 1.5,
     * ..., 7.5; col 1 = 1.5, ..., 8.5. RNE: 0,2,2,4,4,6,6,8 and 2,2,4,4,6,6,8,8; then + 127. */
    static const uint8_t want_odd[16] = {127, 129, 129, 129, 129, 131, 131, 131,
                                         131, 133, 133, 133, 133, 135, 135, 135};
    qh_tensor t;
    read_output("qlinearmatmul/ties/odd-zp-pos-u8s8u8", &t);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_UINT8);
    cr_assert_eq(t.t.rank, 2);
    cr_assert_eq(t.t.dims[0], 8);
    cr_assert_eq(t.t.dims[1], 2);
    cr_expect(memcmp(t.t.data, want_odd, 16) == 0);
    qh_tensor_free(&t);

    /* the same, negative (b − zb = [[-1,-1],[0,2]]): col 0 = -0.5 .. -7.5 -> -0,-2,-2,-4,...;
     * col 1 = (-(2i+1)+2)/2 = 0.5, -0.5, -1.5, ... -> 0,0,-2,-2,-4,-4,-6,-6; int8 zy -5 */
    static const int8_t want_neg[16] = {-5, -5, -7,  -5, -7,  -7,  -9,  -7,
                                        -9, -9, -11, -9, -11, -11, -13, -11};
    read_output("qlinearmatmul/ties/odd-zp-neg-s8u8s8", &t);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_INT8);
    cr_expect(memcmp(t.t.data, want_neg, 16) == 0);
    qh_tensor_free(&t);
}

Test(edge, float8_ties_saturation_and_zeros_by_hand)
{
    /* docs/semantics.md §2.6, float8e4m3fn: rows are the midpoints 0|2^-9, 1|2 and 2|3
     * subnormal units, 7|8 units (largest subnormal | smallest normal), 0.9375|1, 1|1.125,
     * 384|416, 416|448, each then negated, and 0: ties go to the even code, negative ones
     * that round to zero to -0 (0x80), the exact 0 to +0 */
    static const uint8_t want[17] = {0x00, 0x80, 0x02, 0x82, 0x02, 0x82, 0x08, 0x88, 0x38,
                                     0xb8, 0x38, 0xb8, 0x7c, 0xfc, 0x7e, 0xfe, 0x00};
    qh_tensor t;
    read_output("qlinearmatmul/float8/ties-e4m3fn", &t);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_FLOAT8E4M3FN);
    cr_assert_eq(qmm_tensor_numel(&t.t), 17);
    cr_expect(memcmp(t.t.data, want, 17) == 0);
    qh_tensor_free(&t);
    /* y_zero_point -448: x = 0 keeps it, x = -1 saturates, x = 448 is +0, x = 896 is 448 */
    read_output("qlinearmatmul/float8/zero-point-at-lowest-e4m3fn", &t);
    cr_expect(memcmp(t.t.data, (const uint8_t[]){0xfe, 0xfe, 0x00, 0x7e}, 4) == 0);
    qh_tensor_free(&t);
    /* e5m2fnuz: ±57344, ±61440, ±114688, ±127*2^100 all saturate to ±57344 (0x7f / 0xff) */
    read_output("qlinearmatmul/float8/saturation-e5m2fnuz", &t);
    cr_expect(memcmp(t.t.data, (const uint8_t[]){0x7f, 0xff, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0xff},
                     8) == 0);
    qh_tensor_free(&t);
}

/* A float8 mismatch line names codes, and the profile match compares them: before, every
 * float8 element read as 0, so any wrong float8 answer "matched spec". */
Test(edge, float8_elements_read_as_their_codes)
{
    uint8_t codes[3] = {0x00, 0x80, 0x7e};
    qmm_tensor t = {QMM_DTYPE_FLOAT8E4M3FN, 1, {3}, codes};
    cr_expect_eq(qh_tensor_int(&t, 0), 0x00);
    cr_expect_eq(qh_tensor_int(&t, 1), 0x80);
    cr_expect_eq(qh_tensor_int(&t, 2), 0x7e);
}

Test(edge, overflow_cases_store_the_exact_and_matmulinteger_the_wrapped_sum)
{
    qh_tensor t;
    read_output("matmulinteger/overflow/u8u8-k33026", &t);
    cr_assert_eq(t.t.dtype, QMM_DTYPE_INT32);
    int32_t y[2];
    memcpy(y, t.t.data, sizeof y);
    /* ±33026·65025 = ±2147515650, wrapped modulo 2^32 */
    cr_expect_eq(y[0], -2147451646);
    cr_expect_eq(y[1], 2147451646);
    qh_tensor_free(&t);

    /* QLinearMatMul, y_scale 2^25: the exact acc gives +64 / -64, plus zy 128 */
    read_output("qlinearmatmul/overflow/u8u8u8-k33026", &t);
    cr_expect_eq(((uint8_t *)t.t.data)[0], 192);
    cr_expect_eq(((uint8_t *)t.t.data)[1], 64);
    qh_tensor_free(&t);
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/edge/qlinearmatmul/overflow/u8u8u8-k33026/qmm.meta",
             env("QMM_SOURCE_DIR"));
    char *meta = slurp(path);
    cr_expect(strstr(meta, "overflow-permitted") != NULL, "%s", meta);
    free(meta);
}

Test(edge, invalid_cases_expect_invalid_argument_and_store_no_output)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/edge/qlinearmatmul/invalid/scale-nan/qmm.meta",
             env("QMM_SOURCE_DIR"));
    char *meta = slurp(path);
    cr_expect(strncmp(meta, "expect = INVALID_ARGUMENT\n", 26) == 0, "%s", meta);
    free(meta);
    snprintf(path, sizeof path,
             "%s/vectors/edge/qlinearmatmul/invalid/scale-nan/test_data_set_0/output_0.pb",
             env("QMM_SOURCE_DIR"));
    FILE *f = fopen(path, "rb");
    cr_expect(f == NULL);
    if (f)
        fclose(f);
}

/* ---- diff ---- */

Test(edge, diff_of_a_backend_with_itself_finds_nothing)
{
    char *out = qmmcheck_expect(0, "diff --backend reference --backend reference --seed 7 "
                                   "--count 300 --out '%s/d'", tmpdir);
    expect_in(out, "DIFF SUMMARY: problems:300 same:300 differences:0 ");
    free(out);
}

Test(edge, diff_reports_saves_and_replays_a_difference)
{
    char *out;
    /* onnx-ref adds the zero point before rounding: ties with odd zero points differ */
    out = qmmcheck_expect(1, "diff --backend reference --backend reference:profile=onnx-ref "
                             "--seed 1 --count 400 --max-diffs 3 --out '%s/d'", tmpdir);
    cr_expect_eq(count_lines_with(out, "DIFF seed=1 problem="), 3, "%s", out);
    cr_expect_eq(count_lines_with(out, "__REPRO: qmmcheck diff --backend reference --backend "
                                       "reference:profile=onnx-ref --seed 1 --problem "), 3, "%s", out);
    expect_in(out, "reference (spec) agrees with A");
    expect_in(out, "differences:3");
    /* the first difference, replayed alone, is the same line */
    const char *p = strstr(out, "DIFF seed=1 problem=");
    cr_assert(p);
    unsigned long long index = strtoull(p + strlen("DIFF seed=1 problem="), NULL, 10);
    const char *eol = strchr(p, '\n');
    char first[4096];
    snprintf(first, sizeof first, "%.*s", (int)(eol - p), p);
    free(out);
    out = qmmcheck_expect(1, "diff --backend reference --backend reference:profile=onnx-ref "
                             "--seed 1 --problem %llu --out '%s/d2'", index, tmpdir);
    cr_expect(strstr(out, first) != NULL, "%s\nwant: %s", out, first);
    free(out);
    /* the saved cases hold the reference's answer: they pass against it, and fail onnx-ref */
    out = qmmcheck_expect(0, "run --backend reference --vectors '%s/d'", tmpdir);
    expect_in(out, "total:3 passed:3 ");
    free(out);
    out = qmmcheck_expect(1, "run --backend reference:profile=onnx-ref --vectors '%s/d'", tmpdir);
    free(out);
}

/* What `diff --only OP` draws for the float-output operators covers issue 27's edge forms: the
 * row counts 1, 2, 127, 128, 129, 257 (MatMulNBits, DynamicQuantizeMatMul,
 * MatMulIntegerToFloat), and for MatMulNBits every block size 16..1024, bits 2/4/8, K not a
 * multiple of the block, every zero-point form including a present but empty one, bias or
 * none, levels 0 and 4, float16 T1, scales zero, negative, subnormal and huge. Before: an empty
 * zero_points was never drawn, nor M above 64 for the two integer-to-float operators. */
static int64_t rows_of(const qmm_tensor *a)
{
    return a->rank >= 2 ? a->dims[a->rank - 2] : 1;
}

Test(edge, diff_draws_the_llm_operators_edge_forms)
{
    static const qmm_op_kind ops[3] = {QMM_OP_MATMULNBITS, QMM_OP_DYNAMICQUANTIZEMATMUL,
                                       QMM_OP_MATMUL_INTEGER_TO_FLOAT};
    static const int64_t ms[6] = {1, 2, 127, 128, 129, 257};
    for (int o = 0; o < 3; o++) {
        int seen_m[6] = {0}, blocks[7] = {0}, bits[9] = {0}, zp[4] = {0}, partial = 0;
        int bias[2] = {0}, level[5] = {0}, f16 = 0, sc[4] = {0};
        for (uint64_t i = 0; i < 3000; i++) {
            qh_rng r;
            qh_rng_seed(&r, 1, i);
            qh_problem p;
            qh_random_opts ro = {.invalid_per_mille = 20, .float8_per_mille = 300,
                                 .float_op = ops[o]};
            cr_assert_eq(qh_problem_random(&p, &r, &ro), 0);
            const qmm_tensor *a = qh_problem_input_c(&p, 0);
            for (int j = 0; j < 6; j++)
                seen_m[j] |= a->rank >= 2 && rows_of(a) == ms[j];
            if (ops[o] == QMM_OP_MATMULNBITS) {
                const qmm_matmulnbits *c = &p.call.u.matmulnbits;
                for (int j = 0; j < 7; j++)
                    blocks[j] |= c->block_size == 16 << j;
                if (c->bits >= 0 && c->bits <= 8)
                    bits[c->bits]++;
                partial |= c->block_size > 0 && c->k % c->block_size != 0;
                zp[!qmm_tensor_present(&c->zero_points)              ? 0
                   : qmm_tensor_numel(&c->zero_points) == 0           ? 3
                   : c->zero_points.dtype == QMM_DTYPE_UINT8          ? 1
                                                                      : 2]++;
                bias[qmm_tensor_present(&c->bias)]++;
                level[c->accuracy_level]++;
                f16 |= c->a.dtype == QMM_DTYPE_FLOAT16;
                for (int64_t j = 0; j < qmm_tensor_numel(&c->scales); j++) {
                    double v = qmm_scale_decode(c->scales.dtype, c->scales.data, j);
                    sc[v == 0 ? 0 : v < 0 ? 1 : v < 0x1p-126 ? 2 : v > 0x1p60 ? 3 : 0]++;
                }
            }
            qh_problem_free(&p);
        }
        for (int j = 0; j < 6; j++)
            cr_expect(seen_m[j], "%s: M = %lld never drawn", qmm_op_name(ops[o]),
                      (long long)ms[j]);
        if (ops[o] != QMM_OP_MATMULNBITS)
            continue;
        for (int j = 0; j < 7; j++)
            cr_expect(blocks[j], "block_size %d never drawn", 16 << j);
        cr_expect(bits[2] && bits[4] && bits[8] && partial && f16);
        for (int j = 0; j < 4; j++)
            cr_expect(zp[j], "zero-point form %d never drawn", j);
        for (int j = 0; j < 4; j++)
            cr_expect(sc[j], "scale kind %d (zero, negative, subnormal, huge) never drawn", j);
        cr_expect(bias[0] && bias[1] && level[0] && level[4]);
    }
}

Test(edge, diff_draws_float8_problems_and_catches_a_float8_mutant)
{
    /* QLinearMatMul-21 with a float8 a, b or y: a share of every seeded run */
    char *out = qmmcheck_expect(0, "diff --backend reference --backend reference --seed 7 "
                                   "--count 300 --only float8 --quiet");
    const char *s = strstr(out, "DIFF SUMMARY: problems:");
    cr_assert(s, "%s", out);
    unsigned long long n = strtoull(s + strlen("DIFF SUMMARY: problems:"), NULL, 10);
    cr_expect(n >= 20 && n < 150, "%llu float8 problems of 300\n%s", n, out);
    free(out);
    /* a plugin that flushes subnormal float8 results to zero differs on some of them, and
     * every difference is a float8 problem (it answers the rest through the reference) */
    out = qmmcheck_expect(1, "diff --backend reference --backend '%s' --seed 7 --count 300 "
                             "--quiet --out '%s/f8'", env("QMM_FLOAT8_FTZ_PLUGIN"), tmpdir);
    int diffs = count_lines_with(out, "DIFF seed=7 problem=");
    cr_expect_gt(diffs, 0, "%s", out);
    cr_expect_eq(count_lines_with(out, "DIFF seed=7 problem="),
                 count_lines_with(out, "QLinearMatMul opset 21 float8") +
                     count_lines_with(out, "QLinearMatMul opset 21 u8float8") +
                     count_lines_with(out, "QLinearMatMul opset 21 s8float8") +
                     count_lines_with(out, "QLinearMatMul opset 21 u8u8float8") +
                     count_lines_with(out, "QLinearMatMul opset 21 u8s8float8") +
                     count_lines_with(out, "QLinearMatMul opset 21 s8u8float8") +
                     count_lines_with(out, "QLinearMatMul opset 21 s8s8float8"),
                 "%s", out);
    expect_in(out, "reference (spec) agrees with A");
    free(out);
}

Test(edge, diff_usage_errors_exit_2)
{
    const char *bad[] = {
        "diff --backend reference --seed 1 --count 3",
        "diff --backend reference --backend reference --count 3",
        "diff --backend reference --backend reference --seed 1",
        "diff --backend reference --backend reference --seed x --count 3",
        "diff --backend reference --backend reference --seed 1 --count 3 --profile nope",
        "diff --backend nosuch --backend reference --seed 1 --count 3",
    };
    expect_usage_errors(bad, sizeof bad / sizeof bad[0]);
}

Test(edge, diff_seconds_bounds_the_run)
{
    char *out = qmmcheck_expect(0, "diff --backend reference --backend reference --seed 3 "
                                   "--seconds 0.5 --quiet");
    expect_in(out, "DIFF SUMMARY: problems:");
    free(out);
}
