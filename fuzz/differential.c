/* fuzz/differential.c — see differential.h.
 *
 * State: the list of implementations is built once per process and then only read. A fuzz
 * target is a process-wide singleton by nature (the engine owns main), so this is the one
 * place in the project where file-scope mutable state is the right shape.
 */
#include "fuzz/differential.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/input_pages.h"
#include "harness/gen/problem.h"
#include "harness/io/case.h"
#include "harness/invoke/backends.h"
#include "harness/base/clean.h"
#include "harness/judge/judge.h"
#include "harness/judge/compare.h"
#include "harness/invoke/cpu.h"
#include "harness/judge/expect.h"
#include "harness/invoke/guard.h"
#include "harness/invoke/invoke.h"
#include "harness/io/meta.h"
#include "harness/io/onnx_io.h"
#include "harness/base/strbuf.h"
#include "ops/qmm_ops.h"
#include "optimized/qmm_optimized.h"

#define QH_FZ_MAX_VARIANTS 16

typedef struct variant {
    char spec[512];  /* what qh_backend_open is given */
    char label[256]; /* what the signature calls it */
    int is_plugin;
    int state;       /* 0 not opened yet, 1 open, -1 dropped */
    qh_backend b;
} variant;

static variant variants[QH_FZ_MAX_VARIANTS];
static int n_variants;
static int set_up;
static int opened;
static int debug;
static int every_variant; /* QMM_FUZZ_VARIANTS=all: every input runs every implementation */
/* QMM_FUZZ_CPU=CLASS: the QMM_FUZZ_BACKEND backends run in a worker under qemu with that CPU
 * class (harness/invoke/cpu.h), so their CPUID dispatch is that CPU's; NULL: in process */
static const qh_cpu_target *fuzz_cpu;

static void add_variant(const char *spec, int is_plugin)
{
    if (n_variants == QH_FZ_MAX_VARIANTS) {
        fprintf(stderr, "qmm-fuzz: more than %d implementations; ignoring %s\n",
                QH_FZ_MAX_VARIANTS, spec);
        return;
    }
    variant *v = &variants[n_variants++];
    memset(v, 0, sizeof *v);
    snprintf(v->spec, sizeof v->spec, "%s", spec);
    qh_clean_into(v->label, sizeof v->label, spec, strlen(spec), 0); /* printed, and in signatures */
    v->is_plugin = is_plugin;
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 0 || v > 1024 ? dflt : (int)v;
}

/* The float-output operators a backend may implement alone (a MatMulNBits plugin:
 * tests/plugins/nbits_orders.c). */
static const qmm_op_kind float_ops[] = {QMM_OP_MATMULNBITS, QMM_OP_DYNAMICQUANTIZEMATMUL,
                                        QMM_OP_MATMUL_INTEGER_TO_FLOAT,
                                        QMM_OP_DEQUANTIZELINEAR};

/* What the backend's query says to small valid problems of `op` from diff's generator
 * (harness/gen/problem.c): the first answer that is not UNSUPPORTED, or UNSUPPORTED when all
 * of 16 are (each form a backend may refuse, float16 or g_idx, is drawn now and then only). */
static qmm_status_code ask_float_op(qh_backend *b, qmm_op_kind op, qmm_status *st)
{
    qh_random_opts o = {.invalid_per_mille = 0, .max_outputs = 16, .max_macs = 256,
                        .float_op = op};
    qmm_status_code code = QMM_UNSUPPORTED;
    for (uint64_t i = 0; i < 16 && code == QMM_UNSUPPORTED; i++) {
        qh_rng r;
        qh_problem p;
        qh_rng_seed(&r, 27, i);
        if (qh_problem_random(&p, &r, &o) != 0)
            break;
        qmm_status_ok(st);
        code = qh_backend_ask(b, &p.call, st);
        qh_problem_free(&p);
    }
    return code;
}

/* Opens one implementation; drops it (with one line on stderr) when it cannot be opened or
 * its query refuses a plain 2x2 uint8 problem and small problems of every float-output
 * operator, which is how a variant for an ISA this CPU lacks answers. */
static void open_variant(variant *v)
{
    qh_error err;
    qh_isolation iso = {.isolate = 1, .timeout_s = 30, .memory_limit = QH_MEMORY_LIMIT_DEFAULT,
                        .cpu = fuzz_cpu};
    int emulated = v->is_plugin && qh_cpu_emulated(fuzz_cpu);
    if (emulated ? qh_backend_open_isolated(v->spec, &iso, &v->b, &err) != 0
                 : qh_backend_open(v->spec, &v->b, &err) != 0) {
        char why[QH_CLEAN_LINE_MAX], spec[QH_CLEAN_LINE_MAX];
        qh_clean_into(why, sizeof why, err.msg, strnlen(err.msg, sizeof err.msg), 0);
        qh_clean_into(spec, sizeof spec, v->spec, strlen(v->spec), 0);
        if (v->is_plugin) {
            /* The user named it: fuzzing on without it would report hours of "no difference"
             * for a backend that never ran. */
            fprintf(stderr, "qmm-fuzz: QMM_FUZZ_BACKEND %s cannot be opened: %s\n", spec, why);
            exit(2);
        }
        fprintf(stderr, "qmm-fuzz: skipping %s: %s\n", spec, why);
        v->state = -1;
        return;
    }
    if (v->is_plugin && v->b.table.name) {
        /* "mutant-ties-away" reads better in a signature than a path; the plugin's name and
         * the spec's options (an exec: command) are outside text, so cleaned
         * (harness/base/clean.h) */
        const char *colon = strchr(v->spec, ':');
        char name[128], label[sizeof v->label];
        qh_clean_into(name, sizeof name, v->b.table.name, strlen(v->b.table.name), 0);
        snprintf(label, sizeof label, "%s%s%s", name, colon ? ":" : "", colon ? colon + 1 : "");
        qh_clean_into(v->label, sizeof v->label, label, strlen(label), 0);
    }
    if (emulated) { /* its table is in the worker: every call is tried there */
        size_t k = strlen(v->label);
        snprintf(v->label + k, sizeof v->label - k, " [cpu %s]", qh_cpu_name(fuzz_cpu));
        v->state = 1;
        fprintf(stderr, "qmm-fuzz: comparing reference with %s\n", v->label);
        return;
    }
    /* A backend is compared when it computes at least one of the common QLinearMatMul forms
     * (a peer over oneDNN refuses u8 b; one over gemmlowp computes u8u8u8 only); the cases it
     * refuses later are skipped one by one. */
    static uint8_t ab[4] = {1, 2, 3, 4}, zp[1] = {0};
    static float one = 1.0f;
    static const int32_t forms[][3] = {{QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8},
                                       {QMM_DTYPE_UINT8, QMM_DTYPE_INT8, QMM_DTYPE_UINT8},
                                       {QMM_DTYPE_INT8, QMM_DTYPE_INT8, QMM_DTYPE_INT8}};
    qmm_status st;
    qmm_status_code code = QMM_UNSUPPORTED;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0] && code == QMM_UNSUPPORTED; f++) {
        qmm_call c;
        memset(&c, 0, sizeof c);
        c.op = QMM_OP_QLINEARMATMUL;
        qmm_qlinearmatmul *q = &c.u.qlinearmatmul;
        const qmm_tensor m = {.rank = 2, .dims = {2, 2}, .data = ab};
        const qmm_tensor s0 = {.rank = 0, .data = zp};
        q->a = q->b = q->y = m;
        q->a.dtype = forms[f][0];
        q->b.dtype = forms[f][1];
        q->y.dtype = forms[f][2];
        q->a_zero_point = q->b_zero_point = q->y_zero_point = s0;
        q->a_zero_point.dtype = forms[f][0];
        q->b_zero_point.dtype = forms[f][1];
        q->y_zero_point.dtype = forms[f][2];
        q->a_scale = (qmm_tensor){.dtype = QMM_DTYPE_FLOAT, .rank = 0, .data = &one};
        q->b_scale = q->y_scale = q->a_scale;
        q->opset = 10;
        qmm_status_ok(&st);
        code = qh_backend_ask(&v->b, &c, &st);
    }
    for (size_t f = 0; f < sizeof float_ops / sizeof float_ops[0] && code == QMM_UNSUPPORTED; f++)
        code = ask_float_op(&v->b, float_ops[f], &st);
    if (code == QMM_UNSUPPORTED) {
        char said[QH_CLEAN_LINE_MAX];
        qh_clean_into(said, sizeof said, st.message, strnlen(st.message, sizeof st.message), 0);
        fprintf(stderr, "qmm-fuzz: skipping %s (no u8u8u8, u8s8u8 or s8s8s8 QLinearMatMul, no "
                        "float-output operator): %s\n",
                v->label, said);
        qh_backend_close(&v->b);
        v->state = -1;
        return;
    }
    v->state = 1;
    fprintf(stderr, "qmm-fuzz: comparing reference with %s\n", v->label);
}

void qh_fz_diff_setup(void)
{
    if (set_up)
        return;
    set_up = 1;
    debug = env_int("QMM_FUZZ_DEBUG", 0);
    const char *mode = getenv("QMM_FUZZ_VARIANTS");
    every_variant = mode && strcmp(mode, "all") == 0;
    const char *cpu = getenv("QMM_FUZZ_CPU");
    if (cpu && *cpu) {
        char why[1024];
        if (qh_cpu_parse(cpu, &fuzz_cpu, 1, why, sizeof why) < 0) {
            char shown[QH_CLEAN_LINE_MAX];
            qh_clean_into(shown, sizeof shown, why, strlen(why), 0);
            fprintf(stderr, "qmm-fuzz: QMM_FUZZ_CPU: %s\n", shown);
            exit(2);
        }
    }
    if (env_int("QMM_FUZZ_BUILTINS", 1)) {
        int threads = env_int("QMM_FUZZ_THREADS", 3);
        for (int i = 0; qh_builtin_backends[i]; i++) {
            const char *name = qh_builtin_backends[i];
            if (strcmp(name, "reference") == 0)
                continue;
            if (strcmp(name, "optimized") != 0) {
                add_variant(name, 0);
                /* without a device `cuda` is dropped below (its query answers UNSUPPORTED);
                 * its host emulation runs the same epilogue and layouts everywhere */
                if (strcmp(name, "cuda") == 0)
                    add_variant("cuda:emulate=1", 0);
                continue;
            }
            const char *isa;
            for (int k = 0; (isa = qmm_optimized_isa_variant(k)) != NULL; k++) {
                char spec[128];
                snprintf(spec, sizeof spec, "optimized:isa=%s,threads=1", isa);
                add_variant(spec, 0);
                if (threads > 1) {
                    snprintf(spec, sizeof spec, "optimized:isa=%s,threads=%d", isa, threads);
                    add_variant(spec, 0);
                }
            }
        }
    }
    const char *plugins = getenv("QMM_FUZZ_BACKEND");
    if (plugins && *plugins) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", plugins);
        for (char *save = NULL, *p = strtok_r(buf, ";", &save); p; p = strtok_r(NULL, ";", &save))
            if (*p)
                add_variant(p, 1);
    }
    /* Plugins are opened now, before any fork: dlopen is the slow part of starting, and a
     * fork server that forks after it saves that time on every child. */
    for (int i = 0; i < n_variants; i++)
        if (variants[i].is_plugin)
            open_variant(&variants[i]);
    if (n_variants == 0)
        fprintf(stderr, "qmm-fuzz: nothing to compare with the reference yet (no built-in "
                        "backend besides it, QMM_FUZZ_BACKEND unset): decoding and the "
                        "reference are exercised alone\n");
}

static void open_all(void)
{
    if (opened)
        return;
    opened = 1;
    for (int i = 0; i < n_variants; i++)
        if (variants[i].state == 0)
            open_variant(&variants[i]);
}

/* ---- reporting ------------------------------------------------------------------------ */

static void sanitize(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.' || *s == '_'))
            *s = '_';
}

/* One tag per attribute, "order_A-2" (as the edge suites tag them), from meta.tags[from] on;
 * returns the tag count. */
static int32_t attr_tags(const qh_fz_case *c, qh_meta *meta, int32_t from)
{
    const qmm_op_desc *d = qmm_call_desc(&c->oc.call);
    for (int32_t i = 0; i < d->n_attrs && from < QH_META_MAX_TAGS; i++, from++)
        snprintf(meta->tags[from], sizeof meta->tags[from], "%s-%d", d->attrs[i].name,
                 qmm_call_attr_value(&c->oc.call, i));
    return from;
}

/* The problem as an ONNX node-test directory any runner can load: model.onnx, the present
 * inputs, the reference's output (when it has one) and a qmm.meta saying what happened.
 * The other implementation's output goes beside them as got_output_0.pb. */
static int write_case(const char *dir, const char *target, const char *sig, uint64_t hash,
                      const qh_fz_case *c, const qh_expectation *e, const variant *v,
                      const qh_invocation *inv, qh_error *err)
{
    const char *yname = qmm_call_desc(&c->oc.call)->output_name;
    qh_model m;
    memset(&m, 0, sizeof m);
    qh_call_model(&c->oc.call, &e->exact, 1, &m);
    snprintf(m.producer_name, sizeof m.producer_name, "qmmcheck-fuzz");
    snprintf(m.graph_name, sizeof m.graph_name, "%s", target);
    qh_meta meta;
    qh_meta_init(&meta);
    meta.expect = e->code == QMM_INVALID_ARGUMENT ? QMM_INVALID_ARGUMENT : QMM_OK;
    snprintf(meta.tags[0], sizeof meta.tags[0], "fuzz");
    snprintf(meta.tags[1], sizeof meta.tags[1], "%s", c->types);
    meta.n_tags = attr_tags(c, &meta, 2);
    if (v->is_plugin && qh_cpu_meta_class(fuzz_cpu))
        snprintf(meta.cpu_class, sizeof meta.cpu_class, "%s", qh_cpu_meta_class(fuzz_cpu));
    snprintf(meta.provenance, sizeof meta.provenance, "%s input %016llx: %s", target,
             (unsigned long long)hash, sig);
    snprintf(meta.description, sizeof meta.description,
             "reference: %s; %s: %s%s%.300s%s%s; got_output_0.pb holds what %s wrote",
             qmm_status_name(e->code), v->label, qmm_status_name(inv->code),
             inv->st.message[0] ? ": " : "", inv->st.message, inv->problem[0] ? "; " : "",
             inv->problem, v->label);
    if (qh_call_write_dir(dir, &c->oc.call, &m, e->code == QMM_OK ? &e->exact : NULL, &meta,
                          err) != 0)
        return -1;
    if (inv->code == QMM_OK && inv->y.data) {
        char path[1200];
        snprintf(path, sizeof path, "%s/got_output_0.pb", dir);
        if (qh_write_tensor_file(path, &inv->y, yname, err) != 0)
            return -1;
    }
    return 0;
}

static void print_tensor(const char *who, const qmm_tensor *t)
{
    char dims[128];
    qh_format_dims(t, dims, sizeof dims);
    int64_t n = qmm_tensor_numel(t);
    fprintf(stderr, "  %s y %s %s = [", who, qmm_dtype_name(t->dtype), dims);
    for (int64_t i = 0; i < n && i < 64; i++)
        fprintf(stderr, "%s%lld", i ? ", " : "", (long long)qh_tensor_int(t, i));
    fprintf(stderr, "%s]\n", n > 64 ? ", ..." : "");
}

/* ---- the crash: one function per (implementation, types) ----------------------------- *
 * Engines tell bugs apart by the crash's stack (libFuzzer -fork / ClusterFuzz: the top
 * frames; AFL++: the path to it). One abort site would merge every difference into one
 * "bug", so the abort is reached through a function named after the implementation slot and
 * one named after the type combination: the top frames then read
 *   abort <- qh_fz_difference_types_u8s8u8 <- qh_fz_difference_in_variant_3 <- ...
 * and the signature itself is the last line printed before abort(). */
static volatile int qh_fz_sink;

#define QH_FZ_TYPES_FN(tag, idx)                                                            \
    __attribute__((noinline, noreturn)) static void qh_fz_difference_types_##tag(           \
        const char *sig)                                                                   \
    {                                                                                      \
        qh_fz_sink = idx;                                                                  \
        fprintf(stderr, "==qmm-fuzz== DIFFERENCE: %s\n", sig);                             \
        fflush(stderr);                                                                    \
        abort();                                                                           \
    }
QH_FZ_TYPES_FN(u8u8u8, 0)
QH_FZ_TYPES_FN(s8u8u8, 1)
QH_FZ_TYPES_FN(u8s8u8, 2)
QH_FZ_TYPES_FN(s8s8u8, 3)
QH_FZ_TYPES_FN(u8u8s8, 4)
QH_FZ_TYPES_FN(s8u8s8, 5)
QH_FZ_TYPES_FN(u8s8s8, 6)
QH_FZ_TYPES_FN(s8s8s8, 7)
QH_FZ_TYPES_FN(other, 8)

__attribute__((noinline, noreturn)) static void by_types(const char *types, const char *sig)
{
    /* MatMulInteger's "u8s8" lands on the QLinearMatMul functions with y = u8: the op is
     * already told apart by the target binary. Types that are not pairs of "u8"/"s8" (float8,
     * the float-output operators' "f32-4b", "s8-bf16", ...) land on "other". */
    unsigned idx = 0;
    for (int i = 0; i < 3; i++) {
        const char *t = types + 2 * i;
        if (t[0] == '\0')
            break;
        if ((t[0] != 's' && t[0] != 'u') || t[1] != '8')
            idx = 8;
        else if (t[0] == 's')
            idx |= 1u << i;
    }
    switch (idx) {
    case 0: qh_fz_difference_types_u8u8u8(sig);
    case 1: qh_fz_difference_types_s8u8u8(sig);
    case 2: qh_fz_difference_types_u8s8u8(sig);
    case 3: qh_fz_difference_types_s8s8u8(sig);
    case 4: qh_fz_difference_types_u8u8s8(sig);
    case 5: qh_fz_difference_types_s8u8s8(sig);
    case 6: qh_fz_difference_types_u8s8s8(sig);
    case 7: qh_fz_difference_types_s8s8s8(sig);
    default: qh_fz_difference_types_other(sig);
    }
}

#define QH_FZ_SLOT_FN(i)                                                                   \
    __attribute__((noinline, noreturn)) static void qh_fz_difference_in_variant_##i(        \
        const char *types, const char *sig)                                                \
    {                                                                                      \
        qh_fz_sink = 100 + i;                                                              \
        by_types(types, sig);                                                              \
    }
QH_FZ_SLOT_FN(0)
QH_FZ_SLOT_FN(1)
QH_FZ_SLOT_FN(2)
QH_FZ_SLOT_FN(3)
QH_FZ_SLOT_FN(4)
QH_FZ_SLOT_FN(5)
QH_FZ_SLOT_FN(6)
QH_FZ_SLOT_FN(7)
QH_FZ_SLOT_FN(8)
QH_FZ_SLOT_FN(9)
QH_FZ_SLOT_FN(10)
QH_FZ_SLOT_FN(11)
QH_FZ_SLOT_FN(12)
QH_FZ_SLOT_FN(13)
QH_FZ_SLOT_FN(14)
QH_FZ_SLOT_FN(15)

__attribute__((noreturn)) static void crash(int slot, const char *types, const char *sig)
{
    switch (slot) {
    case 0: qh_fz_difference_in_variant_0(types, sig);
    case 1: qh_fz_difference_in_variant_1(types, sig);
    case 2: qh_fz_difference_in_variant_2(types, sig);
    case 3: qh_fz_difference_in_variant_3(types, sig);
    case 4: qh_fz_difference_in_variant_4(types, sig);
    case 5: qh_fz_difference_in_variant_5(types, sig);
    case 6: qh_fz_difference_in_variant_6(types, sig);
    case 7: qh_fz_difference_in_variant_7(types, sig);
    case 8: qh_fz_difference_in_variant_8(types, sig);
    case 9: qh_fz_difference_in_variant_9(types, sig);
    case 10: qh_fz_difference_in_variant_10(types, sig);
    case 11: qh_fz_difference_in_variant_11(types, sig);
    case 12: qh_fz_difference_in_variant_12(types, sig);
    case 13: qh_fz_difference_in_variant_13(types, sig);
    case 14: qh_fz_difference_in_variant_14(types, sig);
    default: qh_fz_difference_in_variant_15(types, sig);
    }
}

__attribute__((noreturn)) static void report(const char *target, int slot, const qh_fz_case *c,
                                             const qh_expectation *e, const qh_invocation *inv,
                                             const qh_compare *cmp, const uint8_t *data,
                                             size_t len)
{
    const variant *v = &variants[slot];
    char sig[512];
    /* the operator's slug is its lower-case name (ops/operator.h) */
    snprintf(sig, sizeof sig, "reference-%s-%s-%s-difference", v->label,
             qmm_call_desc(&c->oc.call)->slug, c->types);
    uint64_t hash = qh_fz_hash(data, len);
    const char *root = getenv("QMM_FUZZ_ARTIFACTS");
    if (!root || !*root)
        root = ".";
    char name[512], dir[1024];
    snprintf(name, sizeof name, "%s", sig);
    sanitize(name);
    snprintf(dir, sizeof dir, "%s/%s-%016llx", root, name, (unsigned long long)hash);

    fprintf(stderr, "\n==qmm-fuzz== %s: reference and %s differ on %s %s (opset %lld)\n",
            target, v->label, c->op_type, c->types, (long long)c->opset);
    fprintf(stderr, "  reference: %s%s%s\n", qmm_status_name(e->code), e->message[0] ? ": " : "",
            e->message);
    char said[QH_CLEAN_LINE_MAX];
    qh_clean_into(said, sizeof said, inv->st.message,
                  strnlen(inv->st.message, sizeof inv->st.message), 0);
    fprintf(stderr, "  %s: %s%s%s\n", v->label, qmm_status_name(inv->code), said[0] ? ": " : "",
            said);
    if (inv->problem[0])
        fprintf(stderr, "  %s %s\n", v->label, inv->problem);
    if (e->code == QMM_OK)
        print_tensor("reference", &e->exact);
    if (inv->code == QMM_OK)
        print_tensor(v->label, &inv->y);
    if (cmp && (cmp->errors > 0 || cmp->shape_differs)) {
        fprintf(stderr, "  first differences (%lld of %lld elements differ):\n",
                (long long)cmp->errors, (long long)cmp->total);
        qh_sb b = {0};
        qh_explain_mismatches(&b, e, &inv->y, cmp, 8);
        if (b.s)
            fputs(b.s, stderr);
        qh_sb_free(&b);
    }
    qh_error err;
    if (write_case(dir, target, sig, hash, c, e, v, inv, &err) == 0)
        fprintf(stderr, "  case written: %s\n  reproduce: qmmcheck run%s%s --backend '%s' "
                        "--vectors '%s'\n",
                dir, v->is_plugin && fuzz_cpu ? " --cpu " : "",
                v->is_plugin && fuzz_cpu ? qh_cpu_name(fuzz_cpu) : "", v->spec, dir);
    else
        fprintf(stderr, "  could not write the case: %s\n", err.msg);
    crash(slot, c->types, sig);
}

/* ---- one input ------------------------------------------------------------------------ */

/* The call as the implementations see it: every input copied into read-only pages that end
 * at an inaccessible zone (input_pages.h, kept from input to input; harness/invoke/guard.h's
 * fresh mappings when that fails), so a backend that writes into an input, or reads past
 * one's end, faults on the spot, even uninstrumented plugin code that ASan cannot see. The
 * reference reads the original call. Falls back to the plain inputs if mapping fails. */
static void guard_inputs(const qh_fz_case *c, qmm_call *guarded, qh_guarded *g)
{
    *guarded = c->oc.call;
    memset(g, 0, sizeof(qh_guarded) * 8);
    for (int32_t i = 0; i < c->n_inputs; i++) {
        size_t off = (size_t)((const char *)c->inputs[i] - (const char *)&c->oc.call);
        qmm_tensor *t = (qmm_tensor *)((char *)guarded + off);
        int64_t n = qmm_tensor_present(t) ? qmm_tensor_numel(t) : 0;
        if (n <= 0)
            continue;
        size_t bytes = qmm_dtype_bytes(t->dtype, n); /* sub-byte types packed */
        const void *kept = qh_fz_input_pages(i, t->data, bytes);
        if (kept)
            t->data = (void *)(uintptr_t)kept;
        else if (qh_guard_input(&g[i], "input", t->data, bytes) == 0)
            t->data = g[i].data;
    }
}

/* QMM_FUZZ_DEBUG=1: one line per decoded input, for seeing what a crash input means. */
static void describe(const qh_fz_case *c)
{
    const qmm_op_desc *d = qmm_call_desc(&c->oc.call);
    fprintf(stderr, "qmm-fuzz: %s %s opset %lld", c->op_type, c->types, (long long)c->opset);
    for (int32_t i = 0; i < d->n_attrs; i++)
        fprintf(stderr, " %s %d", d->attrs[i].name, qmm_call_attr_value(&c->oc.call, i));
    fprintf(stderr, ":");
    for (int32_t i = 0; i < c->n_inputs; i++) {
        char dims[128];
        if (!qmm_tensor_present(c->inputs[i])) {
            fprintf(stderr, " -");
            continue;
        }
        qh_format_dims(c->inputs[i], dims, sizeof dims);
        fprintf(stderr, " %s%s", qmm_dtype_name(c->inputs[i]->dtype), dims);
    }
    fprintf(stderr, "\n");
}

/* Runs implementation `i` on the call and compares it with the reference (aborting on a
 * difference); returns 0 when it computed, -1 when it answered UNSUPPORTED or the harness ran
 * out of memory (the call was not compared). */
static int compare_one(const char *target, int i, const qh_fz_case *c, const qmm_call *guarded,
                       const qh_expectation *e, const uint8_t *data, size_t len)
{
    qh_invocation inv;
    if (debug)
        fprintf(stderr, "qmm-fuzz: running %s\n", variants[i].label);
    /* the inputs as guarded (read-only pages: any write faults), not the in-process copies */
    qh_invoke_opts io = {.timeout_s = variants[i].b.iso.timeout_s, .inputs_as_given = 1};
    if (qh_invoke(&variants[i].b, guarded, &io, &inv) != 0 || inv.code == QMM_UNSUPPORTED) {
        /* out of memory is not the backend's fault; UNSUPPORTED never counts */
        qh_invocation_free(&inv);
        return -1;
    }
    /* the judge decides, as run does: anything but PASSED (or INCONCLUSIVE: an element the
     * reference cannot decide is no difference) is a difference */
    qh_verdict v;
    qh_verdict_init(&v);
    qh_compare cmp;
    memset(&cmp, 0, sizeof cmp);
    if (e->code == QMM_OK && inv.outcome == QH_RETURNED && inv.code == QMM_OK)
        qh_judge_compare(e, &inv.y, &cmp);
    qh_judge(e, &inv, inv.code == QMM_OK ? &cmp : NULL, NULL, &v);
    if (v.status != QH_PASSED && v.status != QH_INCONCLUSIVE) {
        /* an emulated worker's crash, hang or guard fault is contained: reported here */
        if (inv.outcome != QH_RETURNED && inv.code == QMM_OK)
            inv.code = QMM_INTERNAL;
        report(target, i, c, e, &inv, v.reason == QH_REASON_VALUES ||
                                      v.reason == QH_REASON_SHAPE ? &cmp : NULL, data, len);
    }
    qh_verdict_free(&v);
    qh_invocation_free(&inv);
    return 0;
}

void qh_fz_diff_one(const char *target, qh_fz_decoder decode, const uint8_t *data, size_t len)
{
    qh_fz_diff_setup();
    open_all();
    /* the last byte picks the built-in implementation (differential.h); the rest is the
     * decoder's */
    unsigned pick = len ? data[len - 1] : 0u;
    qh_fz_case c;
    if (decode(data, len ? len - 1 : 0, &c) != 0) {
        qh_fz_case_free(&c);
        return;
    }
    if (debug)
        describe(&c);
    qh_expectation e;
    if (qh_expect(&c.oc.call, "spec", &e) != 0 ||
        (e.code != QMM_OK && e.code != QMM_INVALID_ARGUMENT)) {
        /* out of memory, or a call the reference does not compute (UNSUPPORTED) */
        qh_expectation_free(&e);
        qh_fz_case_free(&c);
        return;
    }
    qmm_call guarded;
    qh_guarded g[8];
    guard_inputs(&c, &guarded, g);
    /* Plugins run on every input (they are what a campaign with QMM_FUZZ_BACKEND is for).
     * Of the open built-ins, the picked one runs; when it answers UNSUPPORTED (the optimized
     * backend on a float16 MatMulNBits) the next one in the list does, so no input goes
     * uncompared while any built-in computes it. */
    int builtin[QH_FZ_MAX_VARIANTS], n_builtin = 0;
    for (int i = 0; i < n_variants; i++) {
        if (variants[i].state != 1)
            continue;
        if (variants[i].is_plugin || every_variant)
            compare_one(target, i, &c, &guarded, &e, data, len);
        else
            builtin[n_builtin++] = i;
    }
    for (int k = 0; k < n_builtin; k++)
        if (compare_one(target, builtin[(pick + (unsigned)k) % (unsigned)n_builtin], &c, &guarded,
                        &e, data, len) == 0)
            break;
    for (int i = 0; i < 8; i++)
        qh_guard_free(&g[i]);
    qh_expectation_free(&e);
    qh_fz_case_free(&c);
}
