/* fuzz/decode.c — the structural decoder and its inverse (see decode.h for the layout).
 *
 * Each reader below has a writer next to it; the two must agree byte for byte, which
 * `make_corpus --check` verifies on every vector it converts.
 */
#include "fuzz/decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference/qmm_reference.h"

/* ---- byte sources and sinks ----------------------------------------------------------- */

typedef struct src {
    const uint8_t *d;
    size_t front; /* next data byte */
    size_t back;  /* one past the next structure byte (read backwards) */
    uint64_t rng; /* fills data once the front meets the back */
} src;

/* An exhausted tail reads as 0: every field's 0 is its most ordinary value. */
static unsigned tail(src *s)
{
    return s->back > s->front ? s->d[--s->back] : 0u;
}

static uint8_t next_random(src *s)
{
    /* xorshift64*: deterministic, so a replayed input decodes identically */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (uint8_t)((s->rng * 0x2545F4914F6CDD1DULL) >> 56);
}

static uint8_t front(src *s)
{
    return s->front < s->back ? s->d[s->front++] : next_random(s);
}

typedef struct sink {
    uint8_t *t; /* structure bytes in consumption order; reversed onto the end at the finish */
    size_t nt, ct;
    uint8_t *f; /* data bytes */
    size_t nf, cf;
    int bad;    /* out of memory, or the call cannot be expressed */
} sink;

static void push(uint8_t **buf, size_t *n, size_t *cap, unsigned v, int *bad)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        uint8_t *p = realloc(*buf, nc);
        if (!p) {
            *bad = 1;
            return;
        }
        *buf = p;
        *cap = nc;
    }
    (*buf)[(*n)++] = (uint8_t)v;
}

static void put(sink *k, unsigned v)
{
    push(&k->t, &k->nt, &k->ct, v & 0xffu, &k->bad);
}

static void put_front(sink *k, unsigned v)
{
    push(&k->f, &k->nf, &k->cf, v & 0xffu, &k->bad);
}

/* ---- dimensions ----------------------------------------------------------------------- *
 * One dim byte: [0,152) small 1..8 (the common case: small problems run fast and still reach
 * every code path); [152,218) a tile boundary, where SIMD kernels switch between full blocks
 * and tails; [218,232) zero (empty output, K=0); [232,248) the next byte as the value;
 * [248,256) the next two bytes (high, low) for long K and wide N. */
static const int64_t tile_dims[15] = {1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65};
#define DIM_SMALL_END 152u
#define DIM_TILE_END 218u
#define DIM_ZERO_END 232u
#define DIM_BYTE_END 248u

static int64_t read_dim(src *s)
{
    unsigned b = tail(s);
    if (b < DIM_SMALL_END)
        return 1 + (int64_t)(b % 8);
    if (b < DIM_TILE_END)
        return tile_dims[(b - DIM_SMALL_END) % 15];
    if (b < DIM_ZERO_END)
        return 0;
    if (b < DIM_BYTE_END)
        return (int64_t)tail(s);
    unsigned hi = tail(s);
    return (int64_t)(hi << 8 | tail(s));
}

static void write_dim(sink *k, int64_t d)
{
    if (d >= 1 && d <= 8) {
        put(k, (unsigned)(d - 1));
        return;
    }
    if (d == 0) {
        put(k, DIM_TILE_END);
        return;
    }
    for (unsigned i = 0; i < 15; i++)
        if (tile_dims[i] == d) {
            put(k, DIM_SMALL_END + i);
            return;
        }
    if (d < 0 || d > 65535) {
        k->bad = 1;
        return;
    }
    if (d <= 255) {
        put(k, DIM_ZERO_END);
        put(k, (unsigned)d);
        return;
    }
    put(k, DIM_BYTE_END);
    put(k, (unsigned)(d >> 8));
    put(k, (unsigned)d);
}

/* ---- operand shapes ------------------------------------------------------------------- *
 * Form byte: bits 0-2 a's rank, bits 3-5 b's rank (through rank_table: 2-D most often, 1-D,
 * batched 3-D to 5-D), bit 6: b has its own K (usually a mismatch: invalid input), bit 7
 * unused. Then M (a of rank >= 2), K, N (b of rank >= 2), [b's K]. Then, when there are batch
 * dims, a relation byte (2 bits per batch position, innermost first: 0 equal, 1 a's is 1,
 * 2 b's is 1, 3 independent) and per position a dim byte (and a second for "independent"). */
static const int32_t rank_table[8] = {2, 2, 2, 1, 3, 3, 4, 5};

static int rank_code(int32_t r)
{
    switch (r) {
    case 2: return 0;
    case 1: return 3;
    case 3: return 4;
    case 4: return 6;
    case 5: return 7;
    default: return -1;
    }
}

static void read_shapes(src *s, qmm_tensor *a, qmm_tensor *b)
{
    unsigned form = tail(s);
    int32_t ar = rank_table[form & 7], br = rank_table[(form >> 3) & 7];
    int64_t m = ar >= 2 ? read_dim(s) : 1;
    int64_t k = read_dim(s);
    int64_t n = br >= 2 ? read_dim(s) : 1;
    int64_t kb = (form & 0x40) ? read_dim(s) : k;
    int32_t na = ar >= 2 ? ar - 2 : 0, nb = br >= 2 ? br - 2 : 0;
    int32_t npos = na > nb ? na : nb;
    a->rank = ar;
    b->rank = br;
    unsigned rel = npos > 0 ? tail(s) : 0;
    for (int32_t p = 0; p < npos; p++) {
        unsigned r = (rel >> (2 * p)) & 3;
        int64_t d = read_dim(s), da = d, db = d;
        if (p < na && p < nb) {
            if (r == 1)
                da = 1;
            else if (r == 2)
                db = 1;
            else if (r == 3)
                db = read_dim(s);
        }
        if (p < na)
            a->dims[na - 1 - p] = da;
        if (p < nb)
            b->dims[nb - 1 - p] = db;
    }
    if (ar == 1) {
        a->dims[0] = k;
    } else {
        a->dims[ar - 2] = m;
        a->dims[ar - 1] = k;
    }
    if (br == 1) {
        b->dims[0] = kb;
    } else {
        b->dims[br - 2] = kb;
        b->dims[br - 1] = n;
    }
}

static void write_shapes(sink *k, const qmm_tensor *a, const qmm_tensor *b)
{
    int ac = rank_code(a->rank), bc = rank_code(b->rank);
    if (ac < 0 || bc < 0) {
        k->bad = 1;
        return;
    }
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    put(k, (unsigned)ac | (unsigned)bc << 3 | (ka != kb ? 0x40u : 0u));
    if (a->rank >= 2)
        write_dim(k, a->dims[a->rank - 2]);
    write_dim(k, ka);
    if (b->rank >= 2)
        write_dim(k, b->dims[b->rank - 1]);
    if (ka != kb)
        write_dim(k, kb);
    int32_t na = a->rank >= 2 ? a->rank - 2 : 0, nb = b->rank >= 2 ? b->rank - 2 : 0;
    int32_t npos = na > nb ? na : nb;
    if (npos == 0)
        return;
    unsigned rel = 0;
    int64_t da[QMM_MAX_RANK], db[QMM_MAX_RANK];
    for (int32_t p = 0; p < npos; p++) {
        da[p] = p < na ? a->dims[na - 1 - p] : -1;
        db[p] = p < nb ? b->dims[nb - 1 - p] : -1;
        if (p < na && p < nb) {
            unsigned r = da[p] == db[p] ? 0 : da[p] == 1 ? 1 : db[p] == 1 ? 2 : 3;
            rel |= r << (2 * p);
        }
    }
    put(k, rel);
    for (int32_t p = 0; p < npos; p++) {
        unsigned r = (rel >> (2 * p)) & 3;
        if (p < na && p < nb) {
            write_dim(k, r == 1 ? db[p] : da[p]);
            if (r == 3)
                write_dim(k, db[p]);
        } else {
            write_dim(k, p < na ? da[p] : db[p]);
        }
    }
}

/* ---- parameter shapes ----------------------------------------------------------------- *
 * Relative to the operand the parameter belongs to (a, b, or y for y's parameters):
 *   0rrrmmmm... (bit 7 clear): rank = bits 0-2; dimension i from the right is the operand's
 *     when bit 3+i is set (i < 4), else 1. This reaches per-tensor [] and [1], per-row
 *     [M,1] / [B,M,1], per-column [1,N] / [B,1,N], full y shapes, and broadcasts of them.
 *   10...: the 1-D "other axis" form: [M] for a (the spec's per-row wording), [N] for b,
 *     [M] for y.
 *   11...rrr: rank = bits 0-2 and explicit dim bytes: mostly shapes the rules forbid. */
static void read_param_shape(src *s, qmm_tensor *p, const qmm_tensor *ref, int64_t other)
{
    unsigned v = tail(s);
    if (!(v & 0x80)) {
        p->rank = (int32_t)(v & 7);
        unsigned mask = (v >> 3) & 15;
        for (int32_t i = 0; i < p->rank; i++) {
            int use = i < 4 && ((mask >> i) & 1) && i < ref->rank;
            p->dims[p->rank - 1 - i] = use ? ref->dims[ref->rank - 1 - i] : 1;
        }
    } else if (!(v & 0x40)) {
        p->rank = 1;
        p->dims[0] = other;
    } else {
        p->rank = (int32_t)(v & 7);
        for (int32_t i = 0; i < p->rank; i++)
            p->dims[i] = read_dim(s);
    }
}

static void write_param_shape(sink *k, const qmm_tensor *p, const qmm_tensor *ref, int64_t other)
{
    if (p->rank > 7) {
        k->bad = 1;
        return;
    }
    unsigned mask = 0;
    int masked = 1;
    for (int32_t i = 0; i < p->rank && masked; i++) {
        int64_t d = p->dims[p->rank - 1 - i];
        if (d == 1)
            continue;
        if (i < 4 && i < ref->rank && ref->dims[ref->rank - 1 - i] == d)
            mask |= 1u << i;
        else
            masked = 0;
    }
    if (masked) {
        put(k, (unsigned)p->rank | mask << 3);
        return;
    }
    if (p->rank == 1 && p->dims[0] == other) {
        put(k, 0x80);
        return;
    }
    put(k, 0xC0u | (unsigned)p->rank);
    for (int32_t i = 0; i < p->rank; i++)
        write_dim(k, p->dims[i]);
}

/* Zero point shape: a byte below 0xF0 means "the scale's shape" (the only valid choice, so
 * the common one); from 0xF0 on, a shape of its own follows. */
static void read_zp_shape(src *s, qmm_tensor *zp, const qmm_tensor *scale, const qmm_tensor *ref,
                          int64_t other)
{
    if (tail(s) < 0xF0) {
        zp->rank = scale->rank;
        memcpy(zp->dims, scale->dims, sizeof zp->dims);
        return;
    }
    read_param_shape(s, zp, ref, other);
}

static int same_shape(const qmm_tensor *x, const qmm_tensor *y)
{
    if (x->rank != y->rank)
        return 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] != y->dims[i])
            return 0;
    return 1;
}

static void write_zp_shape(sink *k, const qmm_tensor *zp, const qmm_tensor *scale,
                           const qmm_tensor *ref, int64_t other)
{
    if (same_shape(zp, scale)) {
        put(k, 0);
        return;
    }
    put(k, 0xF0);
    write_param_shape(k, zp, ref, other);
}

/* ---- values --------------------------------------------------------------------------- */

static int64_t qmin(int32_t dtype)
{
    return dtype == QMM_DTYPE_INT8 ? -128 : 0;
}

static int64_t qmax(int32_t dtype)
{
    return dtype == QMM_DTYPE_INT8 ? 127 : 255;
}

static void *alloc_tensor(qh_fz_case *c, int slot, qmm_tensor *t)
{
    int64_t n = qmm_tensor_numel(t);
    size_t es = qmm_dtype_size(t->dtype);
    size_t bytes = n > 0 ? (size_t)n * (es ? es : 1) : 0;
    c->owned[slot] = calloc(1, bytes ? bytes : 1);
    t->data = c->owned[slot];
    return t->data;
}

/* Scale families, chosen per tensor by a byte (low 3 bits):
 *   0,1  2^e, e in [-20, 19] (byte 0: e = -1): every product of scales is a power of two, so requantized
 *        values land exactly on .5 ties often (ties are where rounding bugs hide)
 *   2    m·2^e, m in [1, 64]: dyadic, still exact, ties reachable
 *   3    scales seen in real models (1/255, 0.1, ...)
 *   4,5  raw bit patterns: NaN, infinities, negatives, zero, subnormals (invalid or exotic)
 *   6    (1 + u/65536)·2^e: general values, requantization far from ties
 *   7    1.0 throughout */
static const double common_scales[16] = {
    0.003921568859368563, 0.5, 0.25, 0.125, 0.1, 0.05, 0.02, 0.01,
    0.0078125, 1.0, 2.0, 3.0, 0.3, 0.007, 1e-4, 64.0,
};

static void store_scale_bits(qmm_tensor *t, int64_t i, uint32_t bits)
{
    uint8_t *p = t->data;
    if (t->dtype == QMM_DTYPE_FLOAT) {
        for (int j = 0; j < 4; j++)
            p[4 * i + j] = (uint8_t)(bits >> (8 * j));
    } else {
        p[2 * i] = (uint8_t)bits;
        p[2 * i + 1] = (uint8_t)(bits >> 8);
    }
}

static void read_scales(src *s, qmm_tensor *t)
{
    unsigned fam = tail(s) & 7;
    int64_t n = qmm_tensor_numel(t);
    int wide = t->dtype == QMM_DTYPE_FLOAT;
    for (int64_t i = 0; i < n; i++) {
        double v = 1.0;
        switch (fam) {
        case 0:
        case 1:
            /* byte 0 (also an exhausted tail) gives 2^-1: with every scale 0.5,
             * sa·sb/sy = 0.5 and every odd accumulator is a tie */
            v = ldexp(1.0, (int)((tail(s) + 19) % 40) - 20);
            break;
        case 2: {
            unsigned m = 1 + tail(s) % 64;
            v = ldexp((double)m, (int)(tail(s) % 40) - 26);
            break;
        }
        case 3:
            v = common_scales[tail(s) % 16];
            break;
        case 4:
        case 5: {
            uint32_t bits = 0;
            for (int j = 0; j < (wide ? 4 : 2); j++)
                bits |= (uint32_t)tail(s) << (8 * j);
            store_scale_bits(t, i, bits);
            continue;
        }
        case 6: {
            unsigned hi = tail(s);
            unsigned u = hi << 8 | tail(s);
            v = ldexp(1.0 + u / 65536.0, (int)(tail(s) % 24) - 16);
            break;
        }
        default:
            break;
        }
        store_scale_bits(t, i, qmm_scale_encode(t->dtype, v));
    }
}

static void write_scales(sink *k, const qmm_tensor *t)
{
    put(k, 4);
    int64_t n = qmm_tensor_numel(t);
    const uint8_t *p = t->data;
    int w = t->dtype == QMM_DTYPE_FLOAT ? 4 : 2;
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < w; j++)
            put(k, p[w * i + j]);
}

/* Zero point modes (low 3 bits): 0-3 one byte per element; 4 all qmin; 5 all qmax;
 * 6 alternating qmin/qmax; 7 all zero. The extremes are where (q - zp) reaches ±255. */
static void read_zps(src *s, qmm_tensor *t)
{
    unsigned mode = tail(s) & 7;
    int64_t n = qmm_tensor_numel(t);
    uint8_t *p = t->data;
    int64_t lo = qmin(t->dtype), hi = qmax(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = 0;
        if (mode < 4)
            v = (int64_t)tail(s);
        else if (mode == 4)
            v = lo;
        else if (mode == 5)
            v = hi;
        else if (mode == 6)
            v = (i & 1) ? hi : lo;
        p[i] = (uint8_t)v;
    }
}

static void write_zps(sink *k, const qmm_tensor *t)
{
    put(k, 0);
    int64_t n = qmm_tensor_numel(t);
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < n; i++)
        put(k, p[i]);
}

/* Operand data modes (low 4 bits): 0-8 bytes from the front (the generator continues when
 * they run out); 9 all qmin; 10 all qmax; 11 alternating; 12 qmin or qmax per front bit;
 * 13 all equal to the zero point (every product is zero); 14 zero point ±2 per front byte;
 * 15 generated only, from a seed byte (long tensors without long inputs). */
typedef struct data_mode {
    unsigned mode;
    unsigned seed;
} data_mode;

static data_mode read_data_mode(src *s)
{
    data_mode m = {tail(s) & 15, 0};
    if (m.mode == 15)
        m.seed = tail(s);
    return m;
}

static void fill_data(src *s, qmm_tensor *t, data_mode m, int64_t zp)
{
    int64_t n = qmm_tensor_numel(t);
    uint8_t *p = t->data;
    int64_t lo = qmin(t->dtype), hi = qmax(t->dtype);
    if (m.mode == 15)
        s->rng ^= 0x9E3779B97F4A7C15ULL * (m.seed + 1);
    uint8_t bits = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        switch (m.mode) {
        case 9: v = lo; break;
        case 10: v = hi; break;
        case 11: v = (i & 1) ? hi : lo; break;
        case 12:
            if ((i & 7) == 0)
                bits = front(s);
            v = (bits >> (i & 7)) & 1 ? hi : lo;
            break;
        case 13: v = zp; break;
        case 14:
            v = zp + (int64_t)(front(s) % 5) - 2;
            v = v < lo ? lo : v > hi ? hi : v;
            break;
        case 15: v = next_random(s); break;
        default: v = front(s); break;
        }
        p[i] = (uint8_t)v;
    }
}

static int64_t first_zp(const qmm_tensor *zp)
{
    if (!qmm_tensor_present(zp) || qmm_tensor_numel(zp) < 1)
        return 0;
    const uint8_t *p = zp->data;
    return zp->dtype == QMM_DTYPE_INT8 ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
}

static void write_data(sink *k, const qmm_tensor *t)
{
    int64_t n = qmm_tensor_numel(t);
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < n; i++)
        put_front(k, p[i]);
}

/* ---- bounds --------------------------------------------------------------------------- */

static int within(const qmm_tensor *t)
{
    int64_t n = qmm_tensor_numel(t);
    return n >= 0 && n <= QH_FZ_MAX_OPERAND;
}

/* Sets y's shape from a and b; -1 when the work would exceed the bounds. */
static int shape_output(qmm_tensor *a, qmm_tensor *b, qmm_tensor *y)
{
    if (!within(a) || !within(b))
        return -1;
    qmm_geometry g;
    qmm_status st;
    y->rank = 0;
    if (qmm_matmul_geometry(a, b, &g, &st) != QMM_OK)
        return 0; /* invalid input: the backends must say so; y stays a scalar */
    if (g.batch * g.m * g.n > QH_FZ_MAX_OUTPUT)
        return -1;
    if (g.k > 0 && g.batch * g.m * g.n > QH_FZ_MAX_MACS / g.k)
        return -1;
    y->rank = g.y_rank;
    memcpy(y->dims, g.y_dims, sizeof y->dims);
    return 0;
}

/* The "other axis" dimension of an operand after 1-D promotion. */
static int64_t rows_of(const qmm_tensor *a)
{
    return a->rank >= 2 ? a->dims[a->rank - 2] : 1;
}

static int64_t cols_of(const qmm_tensor *b)
{
    return b->rank >= 2 ? b->dims[b->rank - 1] : 1;
}

static const char *type_tag(int32_t dtype)
{
    return dtype == QMM_DTYPE_INT8 ? "s8" : dtype == QMM_DTYPE_UINT8 ? "u8" : "xx";
}

static int32_t flip8(int32_t dtype)
{
    return dtype == QMM_DTYPE_INT8 ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
}

/* ---- QLinearMatMul -------------------------------------------------------------------- *
 * Types byte: bit 0 a int8, bit 1 b int8, bit 2 y int8, bits 3-4 the scale type (float,
 * float, float16, bfloat16), bit 5 flips the opset away from the natural one (10 for float,
 * 21 otherwise: the wrong one is invalid for 16-bit scales), bits 6-7 both set: a twist byte
 * follows: 0 a_zero_point of the other 8-bit type, 1 b_zero_point of the other type, 2 b_scale
 * of the next scale type, 3 y_scale of the next scale type (all invalid input). */
static const int32_t scale_types[4] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16,
                                       QMM_DTYPE_BFLOAT16};

static int32_t next_scale_type(int32_t t)
{
    return t == QMM_DTYPE_FLOAT ? QMM_DTYPE_FLOAT16
           : t == QMM_DTYPE_FLOAT16 ? QMM_DTYPE_BFLOAT16 : QMM_DTYPE_FLOAT;
}

static void init_src(src *s, const uint8_t *data, size_t len)
{
    s->d = data;
    s->front = 0;
    s->back = len;
    s->rng = 0x5DEECE66DULL ^ (uint64_t)len;
}

int qh_fz_decode_qlinearmatmul(const uint8_t *data, size_t len, qh_fz_case *c)
{
    memset(c, 0, sizeof *c);
    c->op_type = "QLinearMatMul";
    c->call.op = QMM_OP_QLINEARMATMUL;
    qmm_qlinearmatmul *q = &c->call.u.qlinearmatmul;
    qmm_tensor *in[8] = {&q->a, &q->a_scale, &q->a_zero_point, &q->b,
                         &q->b_scale, &q->b_zero_point, &q->y_scale, &q->y_zero_point};
    memcpy(c->inputs, in, sizeof in);
    c->n_inputs = 8;
    src s;
    init_src(&s, data, len);

    unsigned ty = tail(&s);
    unsigned twist = (ty & 0xC0) == 0xC0 ? tail(&s) % 4 : 4;
    int32_t st = scale_types[(ty >> 3) & 3];
    q->a.dtype = (ty & 1) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    q->b.dtype = (ty & 2) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    q->y_zero_point.dtype = (ty & 4) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    q->a_zero_point.dtype = twist == 0 ? flip8(q->a.dtype) : q->a.dtype;
    q->b_zero_point.dtype = twist == 1 ? flip8(q->b.dtype) : q->b.dtype;
    q->a_scale.dtype = st;
    q->b_scale.dtype = twist == 2 ? next_scale_type(st) : st;
    q->y_scale.dtype = twist == 3 ? next_scale_type(st) : st;
    q->y.dtype = q->y_zero_point.dtype;
    int natural = st == QMM_DTYPE_FLOAT ? 10 : 21;
    q->opset = (ty & 0x20) ? 31 - natural : natural;
    c->opset = q->opset;
    snprintf(c->types, sizeof c->types, "%s%s%s", type_tag(q->a.dtype), type_tag(q->b.dtype),
             type_tag(q->y.dtype));

    read_shapes(&s, &q->a, &q->b);
    if (shape_output(&q->a, &q->b, &q->y) != 0)
        return -1;
    const qmm_tensor *refs[3] = {&q->a, &q->b, &q->y};
    int64_t other[3] = {rows_of(&q->a), cols_of(&q->b), rows_of(&q->a)};
    qmm_tensor *scales[3] = {&q->a_scale, &q->b_scale, &q->y_scale};
    qmm_tensor *zps[3] = {&q->a_zero_point, &q->b_zero_point, &q->y_zero_point};
    int slots[3][2] = {{1, 2}, {4, 5}, {6, 7}};
    for (int r = 0; r < 3; r++) {
        read_param_shape(&s, scales[r], refs[r], other[r]);
        read_zp_shape(&s, zps[r], scales[r], refs[r], other[r]);
        if (!within(scales[r]) || !within(zps[r]))
            return -1;
        if (!alloc_tensor(c, slots[r][0], scales[r]) || !alloc_tensor(c, slots[r][1], zps[r]))
            return -1;
        read_scales(&s, scales[r]);
        read_zps(&s, zps[r]);
    }
    data_mode ma = read_data_mode(&s), mb = read_data_mode(&s);
    if (!alloc_tensor(c, 0, &q->a) || !alloc_tensor(c, 3, &q->b))
        return -1;
    fill_data(&s, &q->a, ma, first_zp(&q->a_zero_point));
    fill_data(&s, &q->b, mb, first_zp(&q->b_zero_point));
    return 0;
}

/* ---- MatMulInteger -------------------------------------------------------------------- *
 * Types byte: bit 0 a int8, bit 1 b int8, bits 2-3 nonzero: a_zero_point present, bits 4-5
 * nonzero: b_zero_point present, bits 6-7 both set: a twist byte (0: a_zero_point of the
 * other type, 1: b_zero_point of the other type, 2-3 nothing). Zero points have no scale to
 * share a shape with, so each has a parameter-shape byte of its own. */
int qh_fz_decode_matmulinteger(const uint8_t *data, size_t len, qh_fz_case *c)
{
    memset(c, 0, sizeof *c);
    c->op_type = "MatMulInteger";
    c->call.op = QMM_OP_MATMULINTEGER;
    c->opset = 10;
    qmm_matmulinteger *q = &c->call.u.matmulinteger;
    qmm_tensor *in[4] = {&q->a, &q->b, &q->a_zero_point, &q->b_zero_point};
    memcpy(c->inputs, in, sizeof in);
    c->n_inputs = 4;
    src s;
    init_src(&s, data, len);

    unsigned ty = tail(&s);
    unsigned twist = (ty & 0xC0) == 0xC0 ? tail(&s) % 4 : 4;
    q->a.dtype = (ty & 1) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    q->b.dtype = (ty & 2) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    q->y.dtype = QMM_DTYPE_INT32;
    if (ty & 0x0C)
        q->a_zero_point.dtype = twist == 0 ? flip8(q->a.dtype) : q->a.dtype;
    if (ty & 0x30)
        q->b_zero_point.dtype = twist == 1 ? flip8(q->b.dtype) : q->b.dtype;
    snprintf(c->types, sizeof c->types, "%s%s", type_tag(q->a.dtype), type_tag(q->b.dtype));

    read_shapes(&s, &q->a, &q->b);
    if (shape_output(&q->a, &q->b, &q->y) != 0)
        return -1;
    qmm_tensor *zps[2] = {&q->a_zero_point, &q->b_zero_point};
    const qmm_tensor *refs[2] = {&q->a, &q->b};
    int64_t other[2] = {rows_of(&q->a), cols_of(&q->b)};
    for (int r = 0; r < 2; r++) {
        if (!qmm_tensor_present(zps[r]))
            continue;
        read_param_shape(&s, zps[r], refs[r], other[r]);
        if (!within(zps[r]) || !alloc_tensor(c, 2 + r, zps[r]))
            return -1;
        read_zps(&s, zps[r]);
    }
    data_mode ma = read_data_mode(&s), mb = read_data_mode(&s);
    if (!alloc_tensor(c, 0, &q->a) || !alloc_tensor(c, 1, &q->b))
        return -1;
    fill_data(&s, &q->a, ma, first_zp(&q->a_zero_point));
    fill_data(&s, &q->b, mb, first_zp(&q->b_zero_point));
    return 0;
}

void qh_fz_case_free(qh_fz_case *c)
{
    for (int i = 0; i < 8; i++) {
        free(c->owned[i]);
        c->owned[i] = NULL;
    }
}

/* ---- the encoder ---------------------------------------------------------------------- */

static int encode_qlinearmatmul(sink *k, const qmm_qlinearmatmul *q)
{
    int32_t st = q->a_scale.dtype;
    unsigned sc = st == QMM_DTYPE_FLOAT ? 0 : st == QMM_DTYPE_FLOAT16 ? 2
                  : st == QMM_DTYPE_BFLOAT16 ? 3 : 4;
    int u8s8 = 1;
    const qmm_tensor *e8[5] = {&q->a, &q->b, &q->y_zero_point, &q->a_zero_point,
                               &q->b_zero_point};
    for (int i = 0; i < 5; i++)
        u8s8 &= e8[i]->dtype == QMM_DTYPE_INT8 || e8[i]->dtype == QMM_DTYPE_UINT8;
    if (sc == 4 || !u8s8)
        return -1;
    unsigned twist = 4;
    if (q->a_zero_point.dtype != q->a.dtype)
        twist = 0;
    if (q->b_zero_point.dtype != q->b.dtype)
        twist = twist == 4 ? 1 : 5;
    if (q->b_scale.dtype != st)
        twist = twist == 4 && q->b_scale.dtype == next_scale_type(st) ? 2 : 5;
    if (q->y_scale.dtype != st)
        twist = twist == 4 && q->y_scale.dtype == next_scale_type(st) ? 3 : 5;
    if (twist == 5)
        return -1;
    int natural = st == QMM_DTYPE_FLOAT ? 10 : 21;
    int opset = q->opset >= 21 ? 21 : 10;
    unsigned ty = (q->a.dtype == QMM_DTYPE_INT8 ? 1u : 0u) |
                  (q->b.dtype == QMM_DTYPE_INT8 ? 2u : 0u) |
                  (q->y_zero_point.dtype == QMM_DTYPE_INT8 ? 4u : 0u) | sc << 3 |
                  (opset != natural ? 0x20u : 0u) | (twist < 4 ? 0xC0u : 0u);
    put(k, ty);
    if (twist < 4)
        put(k, twist);
    write_shapes(k, &q->a, &q->b);
    qmm_tensor y = q->y;
    qmm_tensor a = q->a, b = q->b;
    if (shape_output(&a, &b, &y) != 0)
        return -1;
    const qmm_tensor *refs[3] = {&q->a, &q->b, &y};
    int64_t other[3] = {rows_of(&q->a), cols_of(&q->b), rows_of(&q->a)};
    const qmm_tensor *scales[3] = {&q->a_scale, &q->b_scale, &q->y_scale};
    const qmm_tensor *zps[3] = {&q->a_zero_point, &q->b_zero_point, &q->y_zero_point};
    for (int r = 0; r < 3; r++) {
        write_param_shape(k, scales[r], refs[r], other[r]);
        write_zp_shape(k, zps[r], scales[r], refs[r], other[r]);
        write_scales(k, scales[r]);
        write_zps(k, zps[r]);
    }
    put(k, 0);
    put(k, 0);
    write_data(k, &q->a);
    write_data(k, &q->b);
    return 0;
}

static int encode_matmulinteger(sink *k, const qmm_matmulinteger *q)
{
    const qmm_tensor *zps[2] = {&q->a_zero_point, &q->b_zero_point};
    const qmm_tensor *ops[2] = {&q->a, &q->b};
    unsigned twist = 4;
    for (int r = 0; r < 2; r++) {
        if (ops[r]->dtype != QMM_DTYPE_INT8 && ops[r]->dtype != QMM_DTYPE_UINT8)
            return -1;
        if (!qmm_tensor_present(zps[r]))
            continue;
        if (zps[r]->dtype != QMM_DTYPE_INT8 && zps[r]->dtype != QMM_DTYPE_UINT8)
            return -1;
        if (zps[r]->dtype != ops[r]->dtype)
            twist = twist == 4 ? (unsigned)r : 5;
    }
    if (twist == 5)
        return -1;
    unsigned ty = (q->a.dtype == QMM_DTYPE_INT8 ? 1u : 0u) |
                  (q->b.dtype == QMM_DTYPE_INT8 ? 2u : 0u) |
                  (qmm_tensor_present(&q->a_zero_point) ? 0x04u : 0u) |
                  (qmm_tensor_present(&q->b_zero_point) ? 0x10u : 0u) |
                  (twist < 4 ? 0xC0u : 0u);
    put(k, ty);
    if (twist < 4)
        put(k, twist);
    write_shapes(k, &q->a, &q->b);
    int64_t other[2] = {rows_of(&q->a), cols_of(&q->b)};
    for (int r = 0; r < 2; r++) {
        if (!qmm_tensor_present(zps[r]))
            continue;
        write_param_shape(k, zps[r], ops[r], other[r]);
        write_zps(k, zps[r]);
    }
    put(k, 0);
    put(k, 0);
    write_data(k, &q->a);
    write_data(k, &q->b);
    return 0;
}

int qh_fz_encode(const qmm_call *call, int64_t opset, uint8_t **out, size_t *len)
{
    sink k;
    memset(&k, 0, sizeof k);
    *out = NULL;
    *len = 0;
    int rc = -1;
    if (call->op == QMM_OP_QLINEARMATMUL) {
        qmm_qlinearmatmul q = call->u.qlinearmatmul;
        q.opset = (int32_t)opset;
        rc = encode_qlinearmatmul(&k, &q);
    } else if (call->op == QMM_OP_MATMULINTEGER) {
        rc = encode_matmulinteger(&k, &call->u.matmulinteger);
    }
    if (rc == 0 && !k.bad) {
        *len = k.nf + k.nt;
        *out = malloc(*len ? *len : 1);
        if (*out) {
            if (k.nf)
                memcpy(*out, k.f, k.nf);
            for (size_t i = 0; i < k.nt; i++)
                (*out)[k.nf + i] = k.t[k.nt - 1 - i];
        } else {
            rc = -1;
        }
    } else {
        rc = -1;
    }
    free(k.t);
    free(k.f);
    return rc;
}

/* ---- comparison and hashing ----------------------------------------------------------- */

static int same_tensor(const qmm_tensor *x, const qmm_tensor *y)
{
    if (x->dtype != y->dtype)
        return 0;
    if (!qmm_tensor_present(x))
        return 1;
    if (!same_shape(x, y))
        return 0;
    int64_t n = qmm_tensor_numel(x);
    size_t bytes = n > 0 ? (size_t)n * qmm_dtype_size(x->dtype) : 0;
    return bytes == 0 || memcmp(x->data, y->data, bytes) == 0;
}

int qh_fz_same_call(const qmm_call *x, int64_t x_opset, const qmm_call *y, int64_t y_opset)
{
    if (x->op != y->op)
        return 0;
    if (x->op == QMM_OP_MATMULINTEGER) {
        const qmm_matmulinteger *p = &x->u.matmulinteger, *q = &y->u.matmulinteger;
        return same_tensor(&p->a, &q->a) && same_tensor(&p->b, &q->b) &&
               same_tensor(&p->a_zero_point, &q->a_zero_point) &&
               same_tensor(&p->b_zero_point, &q->b_zero_point);
    }
    if (x->op != QMM_OP_QLINEARMATMUL)
        return 0;
    const qmm_qlinearmatmul *p = &x->u.qlinearmatmul, *q = &y->u.qlinearmatmul;
    return (x_opset >= 21) == (y_opset >= 21) && same_tensor(&p->a, &q->a) &&
           same_tensor(&p->a_scale, &q->a_scale) &&
           same_tensor(&p->a_zero_point, &q->a_zero_point) && same_tensor(&p->b, &q->b) &&
           same_tensor(&p->b_scale, &q->b_scale) &&
           same_tensor(&p->b_zero_point, &q->b_zero_point) &&
           same_tensor(&p->y_scale, &q->y_scale) &&
           same_tensor(&p->y_zero_point, &q->y_zero_point);
}

uint64_t qh_fz_hash(const uint8_t *data, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= data[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
