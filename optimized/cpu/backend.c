/* optimized/cpu/backend.c — the optimized backend as a qmm_backend table: option parsing,
 * the variant's selection from the variant table (kernels.c; QMM_ISA / isa= override), the
 * persistent pool, and the prepack API entry points. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/qmm_optimized.h"

/* "auto" -> -1; a variant's name -> its index; else -2. */
static int parse_isa(const char *v, size_t len)
{
    if (len == 4 && strncmp(v, "auto", 4) == 0)
        return -1;
    int i = qmm_opt_variant_find(v, len);
    return i < 0 ? -2 : i;
}

/* What isa= and QMM_ISA accept, for messages: the variants' names joined by `sep`, then
 * `last` and "auto" ("scalar|avx2|...|auto", "scalar, avx2, ... or auto"). Returns buf. */
static const char *isa_choices(char *buf, size_t size, const char *sep, const char *last)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < qmm_opt_variant_count() && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? sep : "",
                              qmm_opt_variant_at(i)->name);
    if (o < size)
        snprintf(buf + o, size - o, "%sauto", last);
    return buf;
}

static int is_ours(const qmm_backend *be);

static qmm_status_code opt_query(const qmm_backend *self, const qmm_call *call, qmm_status *st)
{
    const qmm_opt_backend *ob = self->impl;
    if (call->op != QMM_OP_QLINEARMATMUL && call->op != QMM_OP_MATMULINTEGER &&
        call->op != QMM_OP_QORDEREDMATMUL && call->op != QMM_OP_MATMULNBITS &&
        call->op != QMM_OP_DYNAMICQUANTIZEMATMUL && call->op != QMM_OP_MATMUL_INTEGER_TO_FLOAT)
        return qmm_status_no_operator(st, ob->name, call->op);
    if (ob->missing)
        return qmm_status_because(st, QMM_UNSUPPORTED, ob->name, ob->missing);
    const char *why = call->op == QMM_OP_MATMULNBITS
                          ? qmm_opt_matmulnbits_unsupported(&call->u.matmulnbits)
                      : call->op == QMM_OP_MATMUL_INTEGER_TO_FLOAT
                          ? qmm_opt_matmul_integer_to_float_unsupported(
                                &call->u.matmul_integer_to_float)
                          : NULL;
    if (why)
        return qmm_status_because(st, QMM_UNSUPPORTED, ob->name, why);
    /* Validation belongs to the operator call (invalid input is still "supported"); the
     * call itself answers UNSUPPORTED where it cannot compute valid operands, after validating
     * (float8 on a B prepacked for the integer kernels: matmul.c). */
    return qmm_status_ok(st);
}

static qmm_status_code opt_qlinearmatmul(const qmm_backend *self, const qmm_qlinearmatmul *c,
                                         qmm_status *st)
{
    return qmm_opt_qlinearmatmul(self->impl, c, NULL, st);
}

static qmm_status_code opt_matmulinteger(const qmm_backend *self, const qmm_matmulinteger *c,
                                         qmm_status *st)
{
    return qmm_opt_matmulinteger(self->impl, c, NULL, st);
}

static qmm_status_code opt_qorderedmatmul(const qmm_backend *self,
                                          const qmm_qorderedmatmul *c, qmm_status *st)
{
    return qmm_opt_qorderedmatmul(self->impl, c, st);
}

/* The operators without a pointer of their own (nbits.c, dynq.c). */
static qmm_status_code opt_call(const qmm_backend *self, qmm_call *call, qmm_status *st)
{
    switch (call->op) {
    case QMM_OP_MATMULNBITS:
        return qmm_opt_matmulnbits(self->impl, &call->u.matmulnbits, st);
    case QMM_OP_DYNAMICQUANTIZEMATMUL:
        return qmm_opt_dynamicquantizematmul(self->impl, &call->u.dynamicquantizematmul, st);
    case QMM_OP_MATMUL_INTEGER_TO_FLOAT:
        return qmm_opt_matmul_integer_to_float(self->impl, &call->u.matmul_integer_to_float,
                                               st);
    default:
        return qmm_status_no_operator(st, ((const qmm_opt_backend *)self->impl)->name,
                                      call->op);
    }
}

static void opt_close(qmm_backend *self)
{
    if (!self)
        return;
    qmm_opt_backend *ob = self->impl;
    qmm_opt_pool_destroy(ob->pool);
    pthread_mutex_destroy(&ob->ws_lock);
    qmm_opt_big_free(ob->ws, ob->ws_size);
    free(ob);
}

static int is_ours(const qmm_backend *be)
{
    return be && be->qlinearmatmul == opt_qlinearmatmul && be->impl;
}

/* The tuning options (tests, measurements): each sets one field of the CPU model's tuning
 * (kernels.c), is parsed, applied and named in the backend's name from this one table. */
static const struct tuning_option {
    const char *name, *value; /* the option, and its value in the usage text */
    long min, max;
    size_t offset; /* of its field in qmm_opt_tuning: a size_t, or an int where max is 1 */
} tuning_options[] = {
    {"raw_a_k", "K", 0, 2147483647, offsetof(qmm_opt_tuning, raw_a_k_max)},
    {"fuse_wide", "0|1", 0, 1, offsetof(qmm_opt_tuning, fuse_wide)},
    {"row_block", "R", 1, QMM_OPT_ROW_BLOCK_CAP, offsetof(qmm_opt_tuning, row_block)},
    {"cols_first_from", "BYTES", 0, 2147483647, offsetof(qmm_opt_tuning, cols_first_from)},
};
enum { TUNING_OPTIONS = sizeof tuning_options / sizeof tuning_options[0] };

static void tuning_set(qmm_opt_tuning *t, const struct tuning_option *o, long v)
{
    char *field = (char *)t + o->offset;
    if (o->max == 1)
        *(int *)(void *)field = (int)v;
    else
        *(size_t *)(void *)field = (size_t)v;
}

/* isa=, threads= and the tuning options (tuned[i]: -1 where not given) */
static qmm_status_code parse_options(const char *options, int *isa, int *threads,
                                     long tuned[TUNING_OPTIONS], qmm_status *st)
{
    qmm_option o;
    long n;
    char choices[128];
    for (const char *p = options; qmm_option_next(&p, &o);) {
        size_t i = 0;
        while (i < TUNING_OPTIONS && !qmm_option_is(&o, tuning_options[i].name))
            i++;
        if (i < TUNING_OPTIONS) {
            const struct tuning_option *t = &tuning_options[i];
            if (!qmm_option_int(&o, t->min, t->max, &n))
                return t->max == 1 ? qmm_option_refuse(st, &o, "%s must be 0 or 1", t->name)
                                   : qmm_option_refuse(st, &o, "%s must be %ld..%ld", t->name,
                                                       t->min, t->max);
            tuned[i] = n;
        } else if (qmm_option_is(&o, "isa")) {
            *isa = parse_isa(o.value, (size_t)o.value_len);
            if (*isa == -2)
                return qmm_option_refuse(st, &o, "unknown ISA (%s)",
                                         isa_choices(choices, sizeof choices, ", ", " or "));
        } else if (qmm_option_is(&o, "threads")) {
            if (!qmm_option_int(&o, 1, 256, &n))
                return qmm_option_refuse(st, &o, "threads must be 1..256");
            *threads = (int)n;
        } else {
            char usage[160] = "";
            for (size_t j = 0; j < TUNING_OPTIONS; j++)
                snprintf(usage + strlen(usage), sizeof usage - strlen(usage), ", %s=%s",
                         tuning_options[j].name, tuning_options[j].value);
            return qmm_option_refuse(st, &o, "unknown (the optimized backend accepts isa=%s, "
                                             "threads=N%s)",
                                     isa_choices(choices, sizeof choices, "|", "|"), usage);
        }
    }
    return QMM_OK;
}

qmm_backend *qmm_optimized_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!qmm_backend_abi_check("optimized", harness_abi, st))
        return NULL;
    int isa = -1, threads = 0;
    long given[TUNING_OPTIONS];
    for (size_t i = 0; i < TUNING_OPTIONS; i++)
        given[i] = -1;
    if (parse_options(options, &isa, &threads, given, st) != QMM_OK)
        return NULL;
    if (isa == -1) {
        const char *env = getenv("QMM_ISA");
        if (env && *env) {
            isa = parse_isa(env, strlen(env));
            if (isa == -2) {
                char choices[128];
                qmm_status_set(st, QMM_INVALID_ARGUMENT, "QMM_ISA=%s: unknown ISA (%s)", env,
                               isa_choices(choices, sizeof choices, ", ", " or "));
                return NULL;
            }
        }
        if (isa == -1)
            isa = qmm_opt_variant_auto();
    }
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : n > 256 ? 256 : (int)n;
    }
    qmm_opt_backend *ob = calloc(1, sizeof *ob);
    if (!ob) {
        qmm_status_oom(st, "optimized", NULL);
        return NULL;
    }
    pthread_mutex_init(&ob->ws_lock, NULL);
    ob->v = qmm_opt_variant_at(isa);
    ob->missing = qmm_opt_variant_missing(isa);
    ob->threads = threads;
    /* the tuning options (tests, measurements) name themselves; the CPU model's values do
     * not: they change no answer */
    ob->tuning = qmm_opt_tuning_of_cpu();
    char tuned[96] = "";
    for (size_t i = 0; i < TUNING_OPTIONS; i++)
        if (given[i] >= 0) {
            tuning_set(&ob->tuning, &tuning_options[i], given[i]);
            snprintf(tuned + strlen(tuned), sizeof tuned - strlen(tuned), ",%s=%ld",
                     tuning_options[i].name, given[i]);
        }
    snprintf(ob->name, sizeof ob->name, "optimized:isa=%s,threads=%d%s", ob->v->name, threads,
             tuned);
    snprintf(ob->description, sizeof ob->description,
             "optimized CPU backend: %s microkernels (%dx%d), %d thread(s), exact "
             "requantization, profile spec%s%s",
             ob->v->name, ob->v->layout->mr, ob->v->layout->nr, threads,
             ob->missing ? "; UNSUPPORTED here: " : "", ob->missing ? ob->missing : "");
    /* no pool for a variant that cannot run: it never computes anything */
    if (!ob->missing) {
        ob->pool = qmm_opt_pool_create(threads);
        if (!ob->pool) {
            pthread_mutex_destroy(&ob->ws_lock);
            free(ob);
            qmm_status_set(st, QMM_OUT_OF_MEMORY, "optimized: cannot start %d threads",
                           threads);
            return NULL;
        }
    }
    qmm_backend *be = &ob->table;
    qmm_backend_init(be, ob->name, ob->description, ob);
    be->query = opt_query;
    be->matmulinteger = opt_matmulinteger;
    be->qlinearmatmul = opt_qlinearmatmul;
    be->qorderedmatmul = opt_qorderedmatmul;
    be->close = opt_close;
    be->call = opt_call;
    qmm_status_ok(st);
    return be;
}

/* ---- prepack API ---- */

qmm_optimized_packed_b *qmm_optimized_pack_b(const qmm_backend *be, const qmm_tensor *b,
                                             qmm_status *st)
{
    if (!is_ours(be)) {
        qmm_status_set(st, QMM_INVALID_ARGUMENT, "pack_b: not an optimized backend");
        return NULL;
    }
    const qmm_opt_backend *ob = be->impl;
    if (ob->missing) {
        qmm_status_because(st, QMM_UNSUPPORTED, ob->name, ob->missing);
        return NULL;
    }
    qmm_optimized_packed_b *pb = calloc(1, sizeof *pb);
    if (!pb) {
        qmm_status_oom(st, "pack_b", NULL);
        return NULL;
    }
    if (qmm_opt_pack_b_all(ob, b, pb, st) != QMM_OK) {
        qmm_optimized_packed_b_free(pb);
        return NULL;
    }
    return pb;
}

void qmm_optimized_packed_b_free(qmm_optimized_packed_b *pb)
{
    if (!pb)
        return;
    qmm_opt_big_free(pb->data, qmm_opt_packed_b_bytes(pb));
    free(pb->colsum);
    free(pb);
}

qmm_status_code qmm_optimized_qlinearmatmul_packed(const qmm_backend *be,
                                                   const qmm_qlinearmatmul *call,
                                                   const qmm_optimized_packed_b *pb,
                                                   qmm_status *st)
{
    if (!is_ours(be) || !pb)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "qlinearmatmul_packed: needs an optimized backend and a packed B");
    return qmm_opt_qlinearmatmul(be->impl, call, pb, st);
}

qmm_status_code qmm_optimized_matmulinteger_packed(const qmm_backend *be,
                                                   const qmm_matmulinteger *call,
                                                   const qmm_optimized_packed_b *pb,
                                                   qmm_status *st)
{
    if (!is_ours(be) || !pb)
        return qmm_status_set(st, QMM_INVALID_ARGUMENT,
                              "matmulinteger_packed: needs an optimized backend and a packed B");
    return qmm_opt_matmulinteger(be->impl, call, pb, st);
}

const char *qmm_optimized_variant_of(const qmm_backend *be)
{
    if (!is_ours(be))
        return NULL;
    const qmm_opt_backend *ob = be->impl;
    return ob->v->name;
}

const char *qmm_optimized_variant_name(int i)
{
    const qmm_opt_variant *v = qmm_opt_variant_at(i);
    return v ? v->name : NULL;
}

int qmm_optimized_variant_info(int i, qmm_optimized_variant *d)
{
    const qmm_opt_variant *v = qmm_opt_variant_at(i);
    if (!v)
        return 0;
    d->name = v->name;
    d->kernel = v->kernel_name;
    d->layout = v->layout->name;
    d->mr = v->layout->mr;
    d->nr = v->layout->nr;
    d->kgroup = v->layout->kg;
    d->missing = qmm_opt_variant_missing(i);
    return 1;
}

int qmm_optimized_threads(const qmm_backend *be)
{
    if (!is_ours(be))
        return 0;
    const qmm_opt_backend *ob = be->impl;
    return ob->threads;
}
