/* fuzz/make_corpus.c — seed inputs for the fuzz targets, from vectors and from a built-in set.
 *
 *   make_corpus [--check] [--synthetic] [--out DIR] [ROOT...]
 *
 * For every ONNX node-test case under each ROOT (vectors/onnx, vectors/seeds, vectors/edge,
 * vectors/qordered):
 *   - the call, encoded for the decoder (fuzz/decode.h), goes to DIR/fuzz_qlinearmatmul/,
 *     DIR/fuzz_matmulinteger/ or DIR/fuzz_qorderedmatmul/, after checking that it decodes back
 *     to the same call;
 *   - model.onnx to DIR/fuzz_onnx_model/, every .pb of the data set to DIR/fuzz_onnx_tensor/,
 *     qmm.meta to DIR/fuzz_meta/.
 * --synthetic adds problems chosen to start a campaign at the interesting places: tile
 * boundaries, every type combination, each parameter form, 1-D and batched operands, K = 0,
 * power-of-two scales (exact ties), 16-bit scales, extreme values; for QOrderedMatMul both
 * order combinations, C, bias, per-column scale_B and batches.
 * Files are named by a hash of their content, so re-running only adds what is new.
 * --check writes nothing: it verifies the encode/decode round trip on every vector (ctest
 * runs it as fuzz_corpus_roundtrip) and exits 1 when one fails to invert.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/decode.h"
#include "harness/gen/problem.h"
#include "harness/io/case.h"
#include "harness/io/casedir.h"
#include "harness/io/onnx_io.h"
#include "ops/qmm_ops.h"
#include "reference/qmm_reference.h"

typedef struct opts {
    int check;
    const char *out;
    long written, skipped, failed;
} opts;

static void save(opts *o, const char *target, const uint8_t *data, size_t len)
{
    if (o->check) {
        o->written++;
        return;
    }
    char dir[1024], path[1100];
    qh_error err;
    snprintf(dir, sizeof dir, "%s/%s", o->out, target);
    if (qh_mkdirs(dir, &err) != 0) {
        fprintf(stderr, "make_corpus: %s\n", err.msg);
        o->failed++;
        return;
    }
    snprintf(path, sizeof path, "%s/%016llx", dir, (unsigned long long)qh_fz_hash(data, len));
    struct stat st;
    if (stat(path, &st) == 0)
        return;
    if (qh_write_file_atomic(path, data, len, &err) != 0) {
        fprintf(stderr, "make_corpus: %s\n", err.msg);
        o->failed++;
        return;
    }
    o->written++;
}

static void save_file(opts *o, const char *target, const char *path)
{
    uint8_t *buf;
    size_t len;
    qh_error err;
    if (qh_read_file(path, 1u << 20, &buf, &len, &err) != 0)
        return; /* absent (qmm.meta is optional) or too large for a seed */
    save(o, target, buf, len);
    free(buf);
}

/* Saves an encoded call (*buf, len bytes, from malloc) for the operator's differential
 * target, fuzz_<slug> (ops/operator.h), with the one byte more those targets read, the last:
 * which built-in variant runs (fuzz/differential.h); a byte of the call's hash spreads seeds
 * over them. *buf may move. */
static void save_seed(opts *o, const qmm_op_desc *d, uint8_t **buf, size_t len)
{
    uint8_t *seed = realloc(*buf, len + 1);
    if (!seed) {
        o->failed++;
        return;
    }
    *buf = seed;
    seed[len] = (uint8_t)(qh_fz_hash(seed, len) >> 56);
    char target[64];
    snprintf(target, sizeof target, "fuzz_%s", d->slug);
    save(o, target, seed, len + 1);
}

/* Encodes a call, proves the decoder gives it back, and saves it for the operator's
 * differential target, fuzz_<slug> (ops/operator.h). `name` for messages. */
static void save_call(opts *o, const char *name, const qmm_call *call, int64_t opset)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    qh_fz_decoder decode = qh_fz_decoder_of(call->op);
    uint8_t *buf;
    size_t len;
    if (!d || !decode || qh_fz_encode(call, opset, &buf, &len) != 0) {
        o->skipped++; /* a rank, size or broken rule the decoder does not reach */
        return;
    }
    qh_fz_case c;
    if (decode(buf, len, &c) != 0) {
        o->skipped++; /* over the decoder's work bounds */
    } else if (!qh_fz_same_call(call, opset, &c.oc.call, c.opset)) {
        fprintf(stderr, "make_corpus: %s: decode(encode(call)) is not the call\n", name);
        o->failed++;
    } else {
        save_seed(o, d, &buf, len);
    }
    qh_fz_case_free(&c);
    free(buf);
}

static void from_case(opts *o, const qh_case_ref *ref)
{
    qh_case c;
    qh_error err;
    char path[2048];
    snprintf(path, sizeof path, "%s/model.onnx", ref->dir);
    save_file(o, "fuzz_onnx_model", path);
    snprintf(path, sizeof path, "%s/qmm.meta", ref->dir);
    save_file(o, "fuzz_meta", path);
    if (ref->data_set >= 0) {
        char set[2048];
        snprintf(set, sizeof set, "%s/test_data_set_%d", ref->dir, ref->data_set);
        DIR *d = opendir(set);
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            size_t n = strlen(e->d_name);
            if (n > 3 && strcmp(e->d_name + n - 3, ".pb") == 0) {
                snprintf(path, sizeof path, "%s/%s", set, e->d_name);
                save_file(o, "fuzz_onnx_tensor", path);
            }
        }
        if (d)
            closedir(d);
    }
    if (qh_case_load(ref, &c, &err) != 0) {
        o->skipped++; /* a deliberately broken vector; the parsers' seeds cover it */
        return;
    }
    save_call(o, ref->name, &c.oc.call, c.opset);
    qh_case_free(&c);
}

/* ---- the synthetic set ---------------------------------------------------------------- */

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 24;
}

typedef struct synth {
    int32_t ta, tb, ty;          /* dtypes */
    int32_t sdt;                 /* scale dtype */
    int32_t ar, br;              /* operand ranks (1, 2 or 3) */
    int64_t m, k, n, batch_a, batch_b;
    int a_form, b_form;          /* 0 per-tensor, 1 per-row [M] / per-column [N], 2 [M,1] / [1,N] */
    int data;                    /* 0 random, 1 extremes, 2 ties-friendly small */
    uint32_t seed;
} synth;

static void set_dims(qmm_tensor *t, int32_t rank, int64_t batch, int64_t r, int64_t c,
                     int is_b)
{
    t->rank = rank;
    if (rank == 1) {
        t->dims[0] = is_b ? r : c;
    } else if (rank == 2) {
        t->dims[0] = r;
        t->dims[1] = c;
    } else {
        t->dims[0] = batch;
        t->dims[1] = r;
        t->dims[2] = c;
    }
}

/* An int8 [r,c], or [batch,r,c] when `batched`, on `buf`. */
static void synth_dims(qmm_tensor *t, int batched, int64_t batch, int64_t r, int64_t c,
                       uint8_t *buf)
{
    t->dtype = QMM_DTYPE_INT8;
    t->data = buf;
    set_dims(t, batched ? 3 : 2, batch, r, c, 0);
}

static void fill8(qmm_tensor *t, int mode, uint32_t *seed)
{
    int64_t n = qmm_tensor_numel(t);
    uint8_t *p = t->data;
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = lcg(seed);
        if (mode == 1)
            r = (r & 1) ? 0x7f : 0x80; /* int8 extremes, uint8 127/128 */
        if (mode == 3)
            r = (r & 1) ? 0xff : 0x00;
        else if (mode == 2)
            r = r % 7;
        p[i] = (uint8_t)r;
    }
}

static void put_scale(qmm_tensor *t, int64_t i, double v)
{
    uint32_t bits = qmm_scale_encode(t->dtype, v);
    uint8_t *p = t->data;
    size_t w = qmm_dtype_size(t->dtype);
    for (size_t j = 0; j < w; j++)
        p[(size_t)i * w + j] = (uint8_t)(bits >> (8 * j));
}

static void make_param(qmm_tensor *scale, qmm_tensor *zp, int form, int64_t len, int is_b,
                       int32_t sdt, int32_t zdt, uint8_t *sbuf, uint8_t *zbuf, uint32_t *seed,
                       int ties)
{
    scale->dtype = sdt;
    zp->dtype = zdt;
    if (form == 0) {
        scale->rank = 0;
    } else if (form == 1) {
        scale->rank = 1;
        scale->dims[0] = len;
    } else {
        scale->rank = 2;
        scale->dims[0] = is_b ? 1 : len;
        scale->dims[1] = is_b ? len : 1;
    }
    zp->rank = scale->rank;
    memcpy(zp->dims, scale->dims, sizeof zp->dims);
    scale->data = sbuf;
    zp->data = zbuf;
    int64_t n = qmm_tensor_numel(scale);
    for (int64_t i = 0; i < n; i++) {
        /* powers of two make sa*sb*acc/sy land on .5 exactly: ties */
        double v = ties ? 1.0 / (double)(1u << (lcg(seed) % 4)) : 0.001 + (lcg(seed) % 97) / 512.0;
        put_scale(scale, i, v);
        ((uint8_t *)zbuf)[i] = (uint8_t)(ties ? lcg(seed) % 3 : lcg(seed));
    }
}

static void synth_one(opts *o, const synth *s, int qlinear)
{
    static uint8_t abuf[1 << 16], bbuf[1 << 16], sb[3][1024], zb[3][256];
    uint32_t seed = s->seed;
    qmm_call call;
    memset(&call, 0, sizeof call);
    qmm_tensor a = {.dtype = s->ta, .data = abuf}, b = {.dtype = s->tb, .data = bbuf};
    set_dims(&a, s->ar, s->batch_a, s->m, s->k, 0);
    set_dims(&b, s->br, s->batch_b, s->k, s->n, 1);
    if (qmm_tensor_numel(&a) > (int64_t)sizeof abuf || qmm_tensor_numel(&b) > (int64_t)sizeof bbuf)
        return;
    fill8(&a, s->data, &seed);
    fill8(&b, s->data == 1 ? 3 : s->data, &seed);
    int64_t rows = s->ar == 1 ? 1 : s->m, cols = s->br == 1 ? 1 : s->n;
    /* the 1-D per-row form [M] is only for a 2-D a */
    int af = s->ar == 2 ? s->a_form : s->a_form ? 2 : 0;
    int bf = s->b_form;
    int ties = s->data == 2;
    if (qlinear) {
        call.op = QMM_OP_QLINEARMATMUL;
        qmm_qlinearmatmul *q = &call.u.qlinearmatmul;
        q->a = a;
        q->b = b;
        make_param(&q->a_scale, &q->a_zero_point, af, rows, 0, s->sdt, s->ta, sb[0], zb[0], &seed,
                   ties);
        make_param(&q->b_scale, &q->b_zero_point, bf, cols, 1, s->sdt, s->tb, sb[1], zb[1], &seed,
                   ties);
        make_param(&q->y_scale, &q->y_zero_point, 0, 1, 0, s->sdt, s->ty, sb[2], zb[2], &seed,
                   ties);
        q->y.dtype = s->ty;
        q->opset = s->sdt == QMM_DTYPE_FLOAT ? 10 : 21;
        save_call(o, "synthetic", &call, q->opset);
    } else {
        call.op = QMM_OP_MATMULINTEGER;
        qmm_matmulinteger *q = &call.u.matmulinteger;
        q->a = a;
        q->b = b;
        qmm_tensor unused;
        if (s->a_form != 0 || s->data == 1)
            make_param(&unused, &q->a_zero_point, af, rows, 0, QMM_DTYPE_FLOAT, s->ta, sb[0],
                       zb[0], &seed, 0);
        if (s->b_form != 0 || s->data == 1)
            make_param(&unused, &q->b_zero_point, bf, cols, 1, QMM_DTYPE_FLOAT, s->tb, sb[1],
                       zb[1], &seed, 0);
        q->y.dtype = QMM_DTYPE_INT32;
        save_call(o, "synthetic", &call, 10);
    }
}

/* QOrderedMatMul: both COL32 combinations at a few tile counts, the ROW one around the SIMD
 * tile sizes; alternately batched A (with B of batch 1 or A's), C (broadcast or batched),
 * per-column scale_B and a bias; power-of-two scales and half-integer biases (ties). */
static void synthetic_qordered(opts *o, uint32_t *seed)
{
    static const int64_t shapes[][4] = {
        /* order combination (0 ROW, 1 COL32 + COL4_4R2_8C, 2 COL32 + COL32_2R_4R4), M, K, N */
        {0, 1, 1, 1},   {0, 2, 3, 4},   {0, 7, 15, 17}, {0, 8, 32, 16}, {0, 3, 64, 33},
        {0, 1, 0, 5},   {1, 1, 32, 32}, {1, 3, 32, 64}, {1, 8, 64, 32}, {2, 2, 32, 32},
        {2, 32, 64, 32}, {2, 5, 32, 64},
    };
    static const int32_t orders[3][3] = {
        {QMM_ORDER_ROW, QMM_ORDER_COL, QMM_ORDER_ROW},
        {QMM_ORDER_COL32, QMM_ORDER_COL4_4R2_8C, QMM_ORDER_COL32},
        {QMM_ORDER_COL32, QMM_ORDER_COL32_2R_4R4, QMM_ORDER_COL32},
    };
    static uint8_t abuf[1 << 13], bbuf[1 << 14], cbuf[1 << 13], fbuf[5][256];
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int64_t *sh = shapes[i];
        int batched = (i & 1) != 0, c_present = (i & 2) != 0;
        int64_t batch = batched ? 2 : 1;
        qmm_call call;
        memset(&call, 0, sizeof call);
        call.op = QMM_OP_QORDEREDMATMUL;
        qmm_qorderedmatmul *q = &call.u.qorderedmatmul;
        q->order_a = orders[sh[0]][0];
        q->order_b = orders[sh[0]][1];
        q->order_y = orders[sh[0]][2];
        synth_dims(&q->a, batched, batch, sh[1], sh[2], abuf);
        synth_dims(&q->b, batched && (i & 4), batch, sh[2], sh[3], bbuf);
        fill8(&q->a, i % 5 == 4, seed);
        fill8(&q->b, i % 5 == 4, seed);
        qmm_tensor *floats[5] = {&q->scale_a, &q->scale_b, &q->scale_y, &q->scale_c, &q->bias};
        for (int f = 0; f < 5; f++) {
            floats[f]->dtype = QMM_DTYPE_FLOAT;
            floats[f]->data = fbuf[f];
        }
        /* per-column scale_B and bias [N]; N <= 64 */
        if (i % 3 == 1) {
            q->scale_b.rank = 1;
            q->scale_b.dims[0] = sh[3];
        }
        if (sh[0] == 0 && i % 2 == 0) {
            q->bias.rank = 1;
            q->bias.dims[0] = sh[3];
        } else {
            q->bias.dtype = QMM_DTYPE_UNDEFINED;
        }
        if (c_present) {
            synth_dims(&q->c, batched && (i & 8), batch, sh[1], sh[3], cbuf);
            fill8(&q->c, 0, seed);
        } else {
            q->c.dtype = q->scale_c.dtype = QMM_DTYPE_UNDEFINED;
        }
        for (int f = 0; f < 5; f++)
            for (int64_t j = 0; qmm_tensor_present(floats[f]) && j < qmm_tensor_numel(floats[f]);
                 j++)
                put_scale(floats[f], j,
                          f == 4 ? ((int)lcg(seed) - 128) / 2.0 : 1.0 / (1u << (lcg(seed) % 4)));
        q->y.dtype = QMM_DTYPE_INT8;
        save_call(o, "synthetic", &call, 1);
    }
}

/* The float-output operators (MatMulNBits, DequantizeLinear, DynamicQuantizeMatMul,
 * MatMulIntegerToFloat): problems of `diff`'s own generator for each (harness/gen/problem.c:
 * bits 2/4/8, blocks 16..1024, K not a multiple of the block, every zero-point form, scales
 * zero/negative/subnormal/huge, bias, T1 float16/bfloat16, levels 0..4; DequantizeLinear per
 * tensor, per axis, blocked over every modelled type; the pair's per-column scales and zero
 * points), a few invalid ones among them, kept small (the fuzz targets' work bound) so that
 * most encode. */
static void synthetic_llm(opts *o)
{
    static const qmm_op_kind ops[4] = {QMM_OP_MATMULNBITS, QMM_OP_DEQUANTIZELINEAR,
                                       QMM_OP_DYNAMICQUANTIZEMATMUL,
                                       QMM_OP_MATMUL_INTEGER_TO_FLOAT};
    for (int k = 0; k < 4; k++) {
        qh_random_opts ro = {.invalid_per_mille = 100, .max_outputs = 256,
                             .max_macs = QH_FZ_LLM_MACS, .float_op = ops[k]};
        for (uint64_t i = 0; i < 40; i++) {
            qh_rng r;
            qh_problem p;
            qh_rng_seed(&r, 27, i);
            if (qh_problem_random(&p, &r, &ro) != 0)
                continue;
            save_call(o, "synthetic", &p.call, qmm_call_opset(&p.call));
            qh_problem_free(&p);
        }
    }
}

static void synthetic(opts *o)
{
    /* M, K, N around the tiles SIMD kernels use (4/8/16/32/64 wide), K = 0, M = 0 */
    static const int64_t mkn[][3] = {
        {1, 1, 1},   {2, 3, 4},   {4, 16, 8},  {7, 15, 17}, {8, 32, 16}, {3, 33, 31},
        {16, 64, 8}, {1, 65, 63}, {5, 0, 3},   {0, 4, 3},   {17, 7, 2},  {2, 128, 33},
    };
    static const int32_t t8[2] = {QMM_DTYPE_UINT8, QMM_DTYPE_INT8};
    static const int32_t st[3] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16, QMM_DTYPE_BFLOAT16};
    uint32_t seed = 12345;
    for (size_t i = 0; i < sizeof mkn / sizeof mkn[0]; i++) {
        for (int types = 0; types < 8; types++) {
            synth s = {.ta = t8[types & 1], .tb = t8[(types >> 1) & 1], .ty = t8[(types >> 2) & 1],
                       .sdt = st[(i + (size_t)types) % 3], .ar = 2, .br = 2,
                       .m = mkn[i][0], .k = mkn[i][1], .n = mkn[i][2], .batch_a = 1,
                       .batch_b = 1, .a_form = (int)(i % 3), .b_form = (int)((i + 1) % 3),
                       .data = types % 3, .seed = seed++};
            synth_one(o, &s, 1);
            if (types < 4)
                synth_one(o, &s, 0);
        }
    }
    /* 1-D operands and batch broadcasting */
    static const int32_t ranks[][4] = {
        {1, 2, 1, 1}, {2, 1, 1, 1}, {1, 1, 1, 1}, {3, 2, 2, 1}, {2, 3, 1, 3}, {3, 3, 1, 4},
        {3, 3, 2, 2}, {3, 1, 3, 1},
    };
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
        synth s = {.ta = t8[i & 1], .tb = t8[(i >> 1) & 1], .ty = QMM_DTYPE_UINT8,
                   .sdt = QMM_DTYPE_FLOAT, .ar = ranks[i][0], .br = ranks[i][1],
                   .m = 3, .k = 17, .n = 5, .batch_a = ranks[i][2], .batch_b = ranks[i][3],
                   .a_form = (int)(i % 3), .b_form = (int)(i % 2), .data = (int)(i % 3),
                   .seed = seed++};
        synth_one(o, &s, 1);
        synth_one(o, &s, 0);
    }
    synthetic_qordered(o, &seed);
    synthetic_llm(o);
}

static void synthetic_overflow(opts *o);

int main(int argc, char **argv)
{
    opts o = {.out = "fuzz/corpus"};
    int want_synth = 0, roots = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0) {
            o.check = 1;
        } else if (strcmp(argv[i], "--synthetic") == 0) {
            want_synth = 1;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            o.out = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: make_corpus [--check] [--synthetic] [--out DIR] [ROOT...]\n");
            return 2;
        } else {
            qh_case_list list = {0};
            qh_error err;
            roots++;
            if (qh_discover(argv[i], &list, NULL, &err) != 0) {
                fprintf(stderr, "make_corpus: %s\n", err.msg);
                return 1;
            }
            for (size_t j = 0; j < list.count; j++)
                from_case(&o, &list.items[j]);
            qh_case_list_free(&list);
        }
    }
    if (want_synth) {
        synthetic(&o);
        synthetic_overflow(&o);
    }
    if (!want_synth && roots == 0) {
        fprintf(stderr, "make_corpus: nothing to do (give ROOTs and/or --synthetic)\n");
        return 2;
    }
    printf("make_corpus: %ld seed%s %s, %ld skipped (unreachable or unloadable), %ld failed\n",
           o.written, o.written == 1 ? "" : "s", o.check ? "checked" : "written", o.skipped,
           o.failed);
    return o.failed ? 1 : 0;
}

/* ---- int32 overflow: the wrapped alternative ----------------------------------------- */

/* Seeds whose int32 accumulator overflows, so that the reference computes the wrapped
 * alternative (reference/op-*.c, y_wrapped) and the optimized kernels wrap: |a - za| and
 * |b - zb| are at most 255, so 255 * 255 * K leaves int32 from K = 33026 on, and the
 * decoder's operand bound (QH_FZ_MAX_OPERAND elements) leaves a 1 x 1 output. Raw data would
 * make a 68 KB input, over the campaigns' -max_len; the operands are uniform, so the data
 * modes "all qmin" / "all qmax" say them instead: the encoder writes raw mode 0 for both
 * operands as the tail's last two bytes (decode.c, the tail layouts), which are the two bytes
 * right after the front data, and the front is then dropped. The round trip below proves the
 * short form decodes to the same call; when it does not (the decoder's layout changed) the
 * seed is counted as failed. */
enum { OVF_K = 34000 };

static void save_uniform(opts *o, const qmm_call *call, int64_t opset, const qmm_tensor *a,
                         unsigned mode_a, const qmm_tensor *b, unsigned mode_b)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    size_t front = (size_t)(qmm_tensor_numel(a) + qmm_tensor_numel(b));
    uint8_t *buf;
    size_t len;
    if (qh_fz_encode(call, opset, &buf, &len) != 0 || len < front + 2) {
        free(buf);
        fprintf(stderr, "make_corpus: overflow seed: not encoded\n");
        o->failed++;
        return;
    }
    memmove(buf, buf + front, len - front);
    len -= front;
    buf[0] = (uint8_t)mode_b; /* consumed last */
    buf[1] = (uint8_t)mode_a;
    qh_fz_case c;
    int same = qh_fz_decoder_of(call->op)(buf, len, &c) == 0 &&
               qh_fz_same_call(call, opset, &c.oc.call, c.opset);
    qh_fz_case_free(&c);
    if (same) {
        save_seed(o, d, &buf, len);
    } else {
        fprintf(stderr, "make_corpus: overflow seed: the short form does not decode to the call\n");
        o->failed++;
    }
    free(buf);
}

/* One overflow seed: a [1,K] and b [K,1] all `ea` / `eb` (bytes), zero points za / zb
 * (per-tensor, absent for MatMulInteger when both are 0), QLinearMatMul scales 1, 1 and y_scale
 * 2^24 so that the exact and the wrapped sums requantize to different values. */
typedef struct overflow_seed {
    int qlinear;
    int32_t ta, tb, ty;
    uint8_t ea, eb, za, zb;
    unsigned mode_a, mode_b; /* the decoder's data modes that say ea, eb: 9 qmin, 10 qmax */
} overflow_seed;

static void overflow_one(opts *o, const overflow_seed *v)
{
    static uint8_t abuf[OVF_K], bbuf[OVF_K], sbuf[3][4], zbuf[3];
    memset(abuf, v->ea, sizeof abuf);
    memset(bbuf, v->eb, sizeof bbuf);
    zbuf[0] = v->za;
    zbuf[1] = v->zb;
    zbuf[2] = 0;
    qmm_tensor a = {.dtype = v->ta, .rank = 2, .dims = {1, OVF_K}, .data = abuf};
    qmm_tensor b = {.dtype = v->tb, .rank = 2, .dims = {OVF_K, 1}, .data = bbuf};
    qmm_tensor zp[3] = {{.dtype = v->ta, .data = &zbuf[0]},
                        {.dtype = v->tb, .data = &zbuf[1]},
                        {.dtype = v->ty, .data = &zbuf[2]}};
    qmm_call call;
    if (v->qlinear) {
        qmm_call_init(&call, QMM_OP_QLINEARMATMUL, 10);
        qmm_qlinearmatmul *q = &call.u.qlinearmatmul;
        qmm_tensor *scales[3] = {&q->a_scale, &q->b_scale, &q->y_scale};
        for (int i = 0; i < 3; i++) {
            *scales[i] = (qmm_tensor){.dtype = QMM_DTYPE_FLOAT, .data = sbuf[i]};
            put_scale(scales[i], 0, i == 2 ? 0x1p24 : 1.0);
        }
        q->a = a;
        q->b = b;
        q->a_zero_point = zp[0];
        q->b_zero_point = zp[1];
        q->y_zero_point = zp[2];
        q->y.dtype = v->ty;
        save_uniform(o, &call, 10, &a, v->mode_a, &b, v->mode_b);
    } else {
        qmm_call_init(&call, QMM_OP_MATMULINTEGER, 10);
        qmm_matmulinteger *q = &call.u.matmulinteger;
        q->a = a;
        q->b = b;
        if (v->za || v->zb) {
            q->a_zero_point = zp[0];
            q->b_zero_point = zp[1];
        }
        q->y.dtype = QMM_DTYPE_INT32;
        save_uniform(o, &call, 10, &a, v->mode_a, &b, v->mode_b);
    }
}

static void synthetic_overflow(opts *o)
{
    enum { U8 = QMM_DTYPE_UINT8, S8 = QMM_DTYPE_INT8, QMIN = 9, QMAX = 10 };
    static const overflow_seed seeds[] = {
        /* 255 * 255 * K: above INT32_MAX */
        {1, U8, U8, U8, 0xff, 0xff, 0, 0, QMAX, QMAX},
        {0, U8, U8, 0, 0xff, 0xff, 0, 0, QMAX, QMAX},
        /* (-128 - 127)^2 * K: signed operands, zero points at the other end */
        {1, S8, S8, S8, 0x80, 0x80, 0x7f, 0x7f, QMIN, QMIN},
        {0, S8, S8, 0, 0x80, 0x80, 0x7f, 0x7f, QMIN, QMIN},
        /* 255 * (-128 - 127) * K: below INT32_MIN */
        {1, U8, S8, S8, 0xff, 0x80, 0, 0x7f, QMAX, QMIN},
        {0, U8, S8, 0, 0xff, 0x80, 0, 0x7f, QMAX, QMIN},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        overflow_one(o, &seeds[i]);
}
