/* fuzz/decode.c — the structural decoder and its inverse (decode.h says why it is structural;
 * the operators' layouts are above the codec table at the end).
 *
 * Each reader below has a writer next to it; the two must agree byte for byte, which
 * `make_corpus --check` verifies on every vector it converts.
 */
#include "fuzz/decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/tensor.h"
#include "ops/qmm_ops.h"
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

/* A float8 code that is NaN or an infinity (docs/semantics.md §2.6: invalid in a or b). */
static int f8_not_finite(int32_t dtype, uint8_t code)
{
    return qmm_is_float8(dtype) && !isfinite(qmm_float8_decode(dtype, code));
}

static void *alloc_tensor(qh_fz_case *c, qmm_tensor *t)
{
    int64_t n = qmm_tensor_numel(t);
    size_t es = qmm_dtype_size(t->dtype);
    size_t bytes = n > 0 ? (size_t)n * (es ? es : 1) : 0;
    t->data = qh_owned_call_alloc(&c->oc, bytes);
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

static double scale_value(src *s, unsigned fam)
{
    switch (fam) {
    case 0:
    case 1:
        /* byte 0 (also an exhausted tail) gives 2^-1: with every scale 0.5,
         * sa·sb/sy = 0.5 and every odd accumulator is a tie */
        return ldexp(1.0, (int)((tail(s) + 19) % 40) - 20);
    case 2: {
        unsigned m = 1 + tail(s) % 64;
        return ldexp((double)m, (int)(tail(s) % 40) - 26);
    }
    case 3:
        return common_scales[tail(s) % 16];
    case 6: {
        unsigned hi = tail(s);
        unsigned u = hi << 8 | tail(s);
        return ldexp(1.0 + u / 65536.0, (int)(tail(s) % 24) - 16);
    }
    default:
        return 1.0;
    }
}

/* A family byte, then each element: families 4 and 5 are raw bits from the tail, low byte
 * first (4 bytes for float, else 2), the others the value `value` reads, rounded to the
 * tensor's type. */
static void read_values_of(src *s, qmm_tensor *t, double (*value)(src *s, unsigned fam),
                           unsigned fam)
{
    int64_t n = qmm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (fam != 4 && fam != 5) {
            store_scale_bits(t, i, qmm_scale_encode(t->dtype, value(s, fam)));
            continue;
        }
        uint32_t bits = 0;
        for (int j = 0; j < (t->dtype == QMM_DTYPE_FLOAT ? 4 : 2); j++)
            bits |= (uint32_t)tail(s) << (8 * j);
        store_scale_bits(t, i, bits);
    }
}

static void read_values(src *s, qmm_tensor *t, double (*value)(src *s, unsigned fam))
{
    read_values_of(s, t, value, tail(s) & 7);
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

/* Bias families (QOrderedMatMul; the bias is in output units, so it moves results across
 * rounding cells and saturation bounds directly), chosen by a byte (low 3 bits):
 *   0,1  k/2 for a signed byte k: halves, so a tie survives or appears (byte 0: 0.0)
 *   2    k·2^-e: dyadic fractions down to 2^-23
 *   3    the saturation edges and their neighbours (127.5, -128.5, ...)
 *   4,5  raw bit patterns as for scales: NaN and infinities (invalid), huge, subnormal
 *   6    k + u/65536: general values, far from ties
 *   7    0.5 throughout */
static const double bias_edges[8] = {127.5, -128.5, 126.5,     -127.5,
                                     128.5, -129.5, 127.49999, -128.49999};

/* The byte as a two's complement int8, without an implementation-defined conversion. */
static int signed_byte(unsigned b)
{
    return (int)((b & 0xffu) ^ 0x80u) - 128;
}

static double bias_value(src *s, unsigned fam)
{
    switch (fam) {
    case 0:
    case 1:
        return signed_byte(tail(s)) / 2.0;
    case 2: {
        int k = signed_byte(tail(s));
        return ldexp((double)k, -(int)(tail(s) % 24));
    }
    case 3:
        return bias_edges[tail(s) % 8];
    case 6: {
        int whole = signed_byte(tail(s));
        unsigned hi = tail(s);
        return whole + (double)(hi << 8 | tail(s)) / 65536.0;
    }
    default:
        return 0.5;
    }
}

/* Zero point modes (low 3 bits): 0-3 one byte per element; 4 all qmin; 5 all qmax;
 * 6 alternating qmin/qmax; 7 all zero. The extremes are where (q - zp) reaches ±255. */
static void read_zps(src *s, qmm_tensor *t)
{
    unsigned mode = tail(s) & 7;
    int64_t n = qmm_tensor_numel(t);
    uint8_t *p = t->data;
    int64_t lo = qh_dtype_qmin(t->dtype), hi = qh_dtype_qmax(t->dtype);
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
 * 15 generated only, from a seed byte (long tensors without long inputs).
 * Float8 operands: qmin/qmax are the largest finite value of each sign, ±2 steps the code's
 * magnitude, and in every mode but 8 a NaN or infinity code reads as +0 (so most problems
 * are valid); mode 8 keeps every byte as it is (NaN and infinities: invalid input). */
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
    int64_t lo = qh_dtype_qmin(t->dtype), hi = qh_dtype_qmax(t->dtype);
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
            if (qmm_is_float8(t->dtype)) {
                v = qmm_float8_signed(t->dtype, zp & 0x80,
                                      (zp & 0x7f) + (int64_t)(front(s) % 5) - 2);
                break;
            }
            v = zp + (int64_t)(front(s) % 5) - 2;
            v = v < lo ? lo : v > hi ? hi : v;
            break;
        case 15: v = next_random(s); break;
        default: v = front(s); break;
        }
        if (m.mode != 8 && f8_not_finite(t->dtype, (uint8_t)v))
            v = 0;
        p[i] = (uint8_t)v;
    }
}

static int64_t first_zp(const qmm_tensor *zp)
{
    if (!qmm_tensor_present(zp) || qmm_tensor_numel(zp) < 1)
        return 0;
    const uint8_t *p = zp->data;
    return zp->dtype == QMM_DTYPE_INT8 ? (int64_t)(int8_t)p[0] : (int64_t)p[0]; /* float8: code */
}

/* The data mode that gives t's bytes back from the front: 0, or 8 where a float8 operand
 * holds a NaN or an infinity (mode 0 would read it as +0). */
static unsigned data_mode_of(const qmm_tensor *t)
{
    int64_t n = qmm_tensor_numel(t);
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < n; i++)
        if (f8_not_finite(t->dtype, p[i]))
            return 8;
    return 0;
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

/* 1 when the reference's work on a batch x M x N output with K stays within the bounds: the
 * output elements and their multiply-adds, and also its loops over batch and rows, which run
 * even when the output is empty (A [65535,65535,0] would be 2^32 iterations of nothing: seconds
 * in an instrumented build). */
static int work_fits(int64_t batch, int64_t m, int64_t n, int64_t k)
{
    const int64_t dims[3] = {batch, m, n};
    int64_t loops = 1, outputs = 1;
    for (int i = 0; i < 3; i++) {
        int64_t d = dims[i] > 0 ? dims[i] : 1;
        if (loops > QH_FZ_MAX_MACS / d)
            return 0;
        loops *= d;
        outputs *= dims[i];
    }
    return outputs <= QH_FZ_MAX_OUTPUT && (k <= 0 || outputs <= QH_FZ_MAX_MACS / k);
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
    if (!work_fits(g.batch, g.m, g.n, g.k))
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

/* Two characters per type, as the crash functions of differential.c read them ("e4"
 * float8e4m3fn, "z4" float8e4m3fnuz, "e5" float8e5m2, "z5" float8e5m2fnuz). */
static const char *type_tag(int32_t dtype)
{
    switch (dtype) {
    case QMM_DTYPE_INT8: return "s8";
    case QMM_DTYPE_UINT8: return "u8";
    case QMM_DTYPE_FLOAT8E4M3FN: return "e4";
    case QMM_DTYPE_FLOAT8E4M3FNUZ: return "z4";
    case QMM_DTYPE_FLOAT8E5M2: return "e5";
    case QMM_DTYPE_FLOAT8E5M2FNUZ: return "z5";
    default: return "xx";
    }
}

static int32_t flip8(int32_t dtype)
{
    return dtype == QMM_DTYPE_INT8 ? QMM_DTYPE_UINT8 : QMM_DTYPE_INT8;
}

/* The operands last: their data modes, then their values (a's, then b's), each filled around
 * its zero point's first value. 0, or -1 when memory runs out. */
static int operands(src *s, qh_fz_case *c, qmm_tensor *a, qmm_tensor *b, const qmm_tensor *za,
                    const qmm_tensor *zb)
{
    data_mode ma = read_data_mode(s), mb = read_data_mode(s);
    if (!alloc_tensor(c, a) || !alloc_tensor(c, b))
        return -1;
    fill_data(s, a, ma, first_zp(za));
    fill_data(s, b, mb, first_zp(zb));
    return 0;
}

/* ---- QLinearMatMul -------------------------------------------------------------------- *
 * Types byte: bit 0 a int8, bit 1 b int8, bit 2 y int8, bits 3-4 the scale type (float,
 * float, float16, bfloat16), bit 5 flips the opset away from the natural one (10 for float,
 * 21 otherwise: the wrong one is invalid for 16-bit scales), bits 6-7 both set: a twist byte
 * follows: 0 a_zero_point of the other 8-bit type, 1 b_zero_point of the other type, 2 b_scale
 * of the next scale type, 3 y_scale of the next scale type (all invalid input), by its value
 * mod 4 — except that a twist byte from 0xF0 on is the float8 form instead (no twist): a
 * float8 byte follows, and a, b and y each take a type code (a: the float8 byte's bits 0-2,
 * b: its bits 3-5, y: the twist byte's bits 0-2): 1-4 float8e4m3fn, float8e4m3fnuz,
 * float8e5m2, float8e5m2fnuz; 0 and 5-7 the 8-bit type the types byte gives. Zero points take
 * their operand's type; the natural opset of the float8 form is 21 whatever the scale type
 * (bit 5 makes it 10: invalid). docs/semantics.md §2.6. */
static const int32_t f8_codes[8] = {QMM_DTYPE_UNDEFINED, QMM_DTYPE_FLOAT8E4M3FN,
                                    QMM_DTYPE_FLOAT8E4M3FNUZ, QMM_DTYPE_FLOAT8E5M2,
                                    QMM_DTYPE_FLOAT8E5M2FNUZ, QMM_DTYPE_UNDEFINED,
                                    QMM_DTYPE_UNDEFINED, QMM_DTYPE_UNDEFINED};
#define QLM_FLOAT8_FORM 0xF0u

/* The type of type code `code` (f8_codes), `int8` choosing the 8-bit one. */
static int32_t f8_type(unsigned code, unsigned int8)
{
    int32_t t = f8_codes[code & 7];
    return t != QMM_DTYPE_UNDEFINED ? t : int8 ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
}

/* The inverse: 0 for uint8/int8. */
static unsigned f8_code_of(int32_t dtype)
{
    for (unsigned i = 1; i < 5; i++)
        if (f8_codes[i] == dtype)
            return i;
    return 0;
}
static const int32_t scale_types[4] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16,
                                       QMM_DTYPE_BFLOAT16};

static int32_t next_scale_type(int32_t t)
{
    return t == QMM_DTYPE_FLOAT ? QMM_DTYPE_FLOAT16
           : t == QMM_DTYPE_FLOAT16 ? QMM_DTYPE_BFLOAT16 : QMM_DTYPE_FLOAT;
}

/* Empties the case and names the operator and its node inputs from its descriptor
 * (ops/operator.h); the source starts on the input. */
static void begin_case(qh_fz_case *c, qmm_op_kind op, int64_t opset, src *s,
                       const uint8_t *data, size_t len)
{
    memset(c, 0, sizeof *c);
    qmm_call_init(&c->oc.call, op, (int32_t)opset);
    const qmm_op_desc *d = qmm_call_desc(&c->oc.call);
    c->op_type = d->op_type;
    c->opset = opset;
    for (int32_t i = 0; i < d->n_inputs; i++)
        c->inputs[i] = qmm_call_input(&c->oc.call, i);
    c->n_inputs = d->n_inputs;
    s->d = data;
    s->front = 0;
    s->back = len;
    s->rng = 0x5DEECE66DULL ^ (uint64_t)len;
}

static int decode_qlinearmatmul(const uint8_t *data, size_t len, qh_fz_case *c)
{
    qmm_qlinearmatmul *q = &c->oc.call.u.qlinearmatmul;
    src s;
    begin_case(c, QMM_OP_QLINEARMATMUL, 0, &s, data, len);

    unsigned ty = tail(&s);
    unsigned tw = (ty & 0xC0) == 0xC0 ? tail(&s) : 0;
    unsigned twist = (ty & 0xC0) == 0xC0 && tw < QLM_FLOAT8_FORM ? tw % 4 : 4;
    unsigned f8 = tw >= QLM_FLOAT8_FORM ? tail(&s) : 0;
    int32_t st = scale_types[(ty >> 3) & 3];
    q->a.dtype = f8_type(f8, ty & 1);
    q->b.dtype = f8_type(f8 >> 3, ty & 2);
    q->y_zero_point.dtype = f8_type(tw >= QLM_FLOAT8_FORM ? tw : 0, ty & 4);
    q->a_zero_point.dtype = twist == 0 ? flip8(q->a.dtype) : q->a.dtype;
    q->b_zero_point.dtype = twist == 1 ? flip8(q->b.dtype) : q->b.dtype;
    q->a_scale.dtype = st;
    q->b_scale.dtype = twist == 2 ? next_scale_type(st) : st;
    q->y_scale.dtype = twist == 3 ? next_scale_type(st) : st;
    q->y.dtype = q->y_zero_point.dtype;
    int natural = st == QMM_DTYPE_FLOAT && tw < QLM_FLOAT8_FORM ? 10 : 21;
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
    for (int r = 0; r < 3; r++) {
        read_param_shape(&s, scales[r], refs[r], other[r]);
        read_zp_shape(&s, zps[r], scales[r], refs[r], other[r]);
        if (!within(scales[r]) || !within(zps[r]))
            return -1;
        if (!alloc_tensor(c, scales[r]) || !alloc_tensor(c, zps[r]))
            return -1;
        read_values(&s, scales[r], scale_value);
        read_zps(&s, zps[r]);
    }
    return operands(&s, c, &q->a, &q->b, &q->a_zero_point, &q->b_zero_point);
}

/* ---- MatMulInteger -------------------------------------------------------------------- *
 * Types byte: bit 0 a int8, bit 1 b int8, bits 2-3 nonzero: a_zero_point present, bits 4-5
 * nonzero: b_zero_point present, bits 6-7 both set: a twist byte (0: a_zero_point of the
 * other type, 1: b_zero_point of the other type, 2-3 nothing). Zero points have no scale to
 * share a shape with, so each has a parameter-shape byte of its own. */
static int decode_matmulinteger(const uint8_t *data, size_t len, qh_fz_case *c)
{
    qmm_matmulinteger *q = &c->oc.call.u.matmulinteger;
    src s;
    begin_case(c, QMM_OP_MATMULINTEGER, 10, &s, data, len);

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
        if (!within(zps[r]) || !alloc_tensor(c, zps[r]))
            return -1;
        read_zps(&s, zps[r]);
    }
    return operands(&s, c, &q->a, &q->b, &q->a_zero_point, &q->b_zero_point);
}

/* ---- QOrderedMatMul ------------------------------------------------------------------- *
 * Form byte: bits 0-1 the order combination (0 and 3: A ROW, B COL, Y ROW; 1: A COL32,
 * B COL4_4R2_8C, Y COL32; 2: A COL32, B COL32_2R_4R4, Y COL32); bit 2 a bias [N] (in the ROW
 * combination: the COL32 one takes none); bit 3 C and scale_C; bit 4 scale_B per-column [N];
 * bits 5-7 all set: a twist byte and its argument bytes follow (one rule broken, below).
 * Layout byte: bit 0 A is [batch,M,K] (else [M,K]); bits 1-2 B is [K,N] (0), [1,K,N] (1) or
 * [batch,K,N] (2, 3); bits 3-4 the same for C and [M,N].
 * Scalars byte: bits 0-3 make scale_A, scale_B (when not per-column), scale_Y, scale_C [1]
 * rather than [].
 * Dims: M, K, N, then batch when A is 3-D (else 1). In the COL32 combinations K and N are
 * whole 32-wide tiles, as those orders require (tile_dim: a small dim counts tiles, a larger
 * one is rounded up to a tile), so every shape there tiles cleanly.
 * Then the scales of A, B, Y, [C] (scale_value), [the bias (bias_value)], and the data modes of
 * A, B, [C], whose data is filled in their physical (ordered) layout.
 *
 * Twists: the twist byte % QOM_TWISTS names the rule; those from QOM_DTYPE on take one more
 * byte, which picks the tensor. A twist that needs C or a bias makes it present. QOM_TILES and
 * QOM_BIAS_ANY break nothing in the ROW combination (a plain valid problem there). */
enum {
    QOM_ORDERS,       /* three bytes: order_A, order_B, order_Y = byte % 8 (5-7: no order) */
    QOM_TILES,        /* K and N are plain dims in the COL32 combinations: rarely clean */
    QOM_K,            /* B's K is K + 1 */
    QOM_B_BATCH,      /* B is [batch + 2, K, N] */
    QOM_C_BATCH,      /* C is [batch + 2, M, N] */
    QOM_C_SHAPE,      /* C is [M, N + 1] */
    QOM_BIAS_SHAPE,   /* the bias is [N + 1] */
    QOM_BIAS_ANY,     /* a bias [N] in either combination (the COL32 one forbids it) */
    QOM_DTYPE,        /* A, B, C uint8; scale_A, scale_B, scale_Y, scale_C or bias float16 */
    QOM_PAIRING,      /* C without scale_C (odd byte), scale_C without C (even) */
    QOM_SCALE_SHAPE,  /* scale_A [2], scale_B [N + 1], scale_Y [2] or scale_C [2] */
    QOM_RANK,         /* A [1,batch,M,K], B [1,1,K,N], C [1,1,M,N] or A [K] */
    QOM_TWISTS,
};

static const int32_t order_combos[4][3] = {
    {QMM_ORDER_ROW, QMM_ORDER_COL, QMM_ORDER_ROW},
    {QMM_ORDER_COL32, QMM_ORDER_COL4_4R2_8C, QMM_ORDER_COL32},
    {QMM_ORDER_COL32, QMM_ORDER_COL32_2R_4R4, QMM_ORDER_COL32},
    {QMM_ORDER_ROW, QMM_ORDER_COL, QMM_ORDER_ROW},
};

/* K or N in a COL32 combination: a small dim 1..8 gives 1 to 4 tiles (32, 32, 64, 64, ...,
 * 128), a larger one is rounded up to a tile (15..32 -> 32, 33..64 -> 64, ...): with a batch,
 * M and two such dims, most problems still fit the work bounds. */
static int64_t tile_dim(int64_t d)
{
    return d <= 8 ? 32 * ((d + 1) / 2) : (d + 31) / 32 * 32;
}

/* The dim that tile_dim() turns into v, a multiple of 32. */
static int64_t tile_dim_code(int64_t v)
{
    return v == 0 ? 0 : v <= 128 ? 2 * (v / 32) - 1 : v;
}

static void set_shape(qmm_tensor *t, int32_t dtype, int32_t rank, const int64_t *dims)
{
    t->dtype = dtype;
    t->rank = rank;
    memset(t->dims, 0, sizeof t->dims);
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
}

/* [r, c], or [batch, r, c] when `batched` */
static void set_matrix(qmm_tensor *t, int batched, int64_t batch, int64_t r, int64_t c)
{
    const int64_t d[3] = {batch, r, c};
    set_shape(t, QMM_DTYPE_INT8, batched ? 3 : 2, batched ? d : d + 1);
}

/* A float [] ([1] when `one`), or [n] with n >= 0 */
static void set_float(qmm_tensor *t, int one, int64_t n)
{
    set_shape(t, QMM_DTYPE_FLOAT, one || n >= 0 ? 1 : 0, (const int64_t[]){n >= 0 ? n : 1});
}

typedef struct qom_dims {
    int64_t batch, m, k, n;
} qom_dims;

static void qom_need_c(qmm_qorderedmatmul *q, const qom_dims *d)
{
    if (!qmm_tensor_present(&q->c))
        set_matrix(&q->c, 0, 1, d->m, d->n);
    if (!qmm_tensor_present(&q->scale_c))
        set_float(&q->scale_c, 0, -1);
}

static void qom_need_bias(qmm_qorderedmatmul *q, const qom_dims *d)
{
    if (!qmm_tensor_present(&q->bias))
        set_float(&q->bias, 0, d->n);
}

static void qom_twist(qmm_qorderedmatmul *q, unsigned twist, unsigned arg, const qom_dims *d)
{
    switch (twist) {
    case QOM_K:
        q->b.dims[q->b.rank - 2] = d->k + 1;
        break;
    case QOM_B_BATCH:
        set_matrix(&q->b, 1, d->batch + 2, d->k, d->n);
        break;
    case QOM_C_BATCH:
        qom_need_c(q, d);
        set_matrix(&q->c, 1, d->batch + 2, d->m, d->n);
        break;
    case QOM_C_SHAPE:
        qom_need_c(q, d);
        set_matrix(&q->c, 0, 1, d->m, d->n + 1);
        break;
    case QOM_BIAS_SHAPE:
        set_float(&q->bias, 0, d->n + 1);
        break;
    case QOM_BIAS_ANY:
        qom_need_bias(q, d);
        break;
    case QOM_DTYPE: {
        qmm_tensor *t[8] = {&q->a, &q->b, &q->c, &q->scale_a, &q->scale_b, &q->scale_y,
                            &q->scale_c, &q->bias};
        unsigned w = arg % 8;
        if (w == 2 || w == 6)
            qom_need_c(q, d);
        if (w == 7)
            qom_need_bias(q, d);
        t[w]->dtype = w < 3 ? QMM_DTYPE_UINT8 : QMM_DTYPE_FLOAT16;
        break;
    }
    case QOM_PAIRING:
        qom_need_c(q, d);
        if (arg & 1)
            q->scale_c.dtype = QMM_DTYPE_UNDEFINED;
        else
            q->c.dtype = QMM_DTYPE_UNDEFINED;
        break;
    case QOM_SCALE_SHAPE: {
        unsigned w = arg % 4;
        if (w == 3)
            qom_need_c(q, d);
        qmm_tensor *t[4] = {&q->scale_a, &q->scale_b, &q->scale_y, &q->scale_c};
        set_float(t[w], 0, w == 1 ? d->n + 1 : 2);
        break;
    }
    case QOM_RANK: {
        unsigned w = arg % 4;
        if (w == 0) {
            set_shape(&q->a, q->a.dtype, 4, (const int64_t[]){1, d->batch, d->m, d->k});
        } else if (w == 1) {
            set_shape(&q->b, q->b.dtype, 4, (const int64_t[]){1, 1, d->k, d->n});
        } else if (w == 2) {
            qom_need_c(q, d);
            set_shape(&q->c, q->c.dtype, 4, (const int64_t[]){1, 1, d->m, d->n});
        } else {
            set_shape(&q->a, q->a.dtype, 1, (const int64_t[]){d->k});
        }
        break;
    }
    default:
        break;
    }
}

static int decode_qorderedmatmul(const uint8_t *data, size_t len, qh_fz_case *c)
{
    qmm_qorderedmatmul *q = &c->oc.call.u.qorderedmatmul;
    src s;
    begin_case(c, QMM_OP_QORDEREDMATMUL, 1, &s, data, len);

    unsigned form = tail(&s), twist = QOM_TWISTS, arg = 0;
    unsigned combo = form & 3;
    q->order_a = order_combos[combo][0];
    q->order_b = order_combos[combo][1];
    q->order_y = order_combos[combo][2];
    if (form >> 5 == 7) {
        twist = tail(&s) % QOM_TWISTS;
        if (twist == QOM_ORDERS) {
            q->order_a = (int32_t)(tail(&s) % 8);
            q->order_b = (int32_t)(tail(&s) % 8);
            q->order_y = (int32_t)(tail(&s) % 8);
        } else if (twist >= QOM_DTYPE) {
            arg = tail(&s);
        }
    }
    int col32 = combo == 1 || combo == 2;
    unsigned layout = tail(&s), scalars = tail(&s);
    qom_dims d;
    d.m = read_dim(&s);
    d.k = read_dim(&s);
    d.n = read_dim(&s);
    if (col32 && twist != QOM_TILES) {
        d.k = tile_dim(d.k);
        d.n = tile_dim(d.n);
    }
    d.batch = (layout & 1) ? read_dim(&s) : 1;

    unsigned bf = (layout >> 1) & 3, cf = (layout >> 3) & 3;
    set_matrix(&q->a, layout & 1, d.batch, d.m, d.k);
    set_matrix(&q->b, bf != 0, bf >= 2 ? d.batch : 1, d.k, d.n);
    set_float(&q->scale_a, scalars & 1, -1);
    set_float(&q->scale_b, scalars & 2, (form & 0x10) ? d.n : -1);
    set_float(&q->scale_y, scalars & 4, -1);
    if (form & 8) {
        set_matrix(&q->c, cf != 0, cf >= 2 ? d.batch : 1, d.m, d.n);
        set_float(&q->scale_c, scalars & 8, -1);
    }
    if ((form & 4) && !col32)
        qom_need_bias(q, &d);
    qom_twist(q, twist, arg, &d);
    q->y.dtype = QMM_DTYPE_INT8;
    snprintf(c->types, sizeof c->types, "%s%s%s", type_tag(q->a.dtype), type_tag(q->b.dtype),
             type_tag(q->y.dtype));

    for (int32_t i = 0; i < c->n_inputs; i++)
        if (!within(c->inputs[i]))
            return -1;
    qmm_status st;
    if (qmm_qordered_y_shape(&q->a, &q->b, &q->y.rank, q->y.dims, &st) == QMM_OK) {
        int32_t r = q->a.rank;
        if (!work_fits(r == 3 ? q->a.dims[0] : 1, q->a.dims[r - 2], q->b.dims[q->b.rank - 1],
                       q->a.dims[r - 1]))
            return -1;
    } else {
        q->y.rank = 0; /* invalid input: the backends must say so */
    }
    for (int i = 0; i < 8; i++)
        if (qmm_tensor_present(c->inputs[i]) && !alloc_tensor(c, c->inputs[i]))
            return -1;
    read_values(&s, &q->scale_a, scale_value);
    read_values(&s, &q->scale_b, scale_value);
    read_values(&s, &q->scale_y, scale_value);
    if (qmm_tensor_present(&q->scale_c))
        read_values(&s, &q->scale_c, scale_value);
    if (qmm_tensor_present(&q->bias))
        read_values(&s, &q->bias, bias_value);
    qmm_tensor *ops[3] = {&q->a, &q->b, &q->c};
    data_mode modes[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int i = 0; i < 3; i++)
        if (qmm_tensor_present(ops[i]))
            modes[i] = read_data_mode(&s);
    for (int i = 0; i < 3; i++)
        if (qmm_tensor_present(ops[i]))
            fill_data(&s, ops[i], modes[i], 0);
    return 0;
}

/* ---- the float-output operators: shared readers --------------------------------------- *
 * MatMulNBits, DequantizeLinear, DynamicQuantizeMatMul and MatMulIntegerToFloat (docs/semantics.md
 * §8-§10). Their reference computes several exact models per element (GMP), so their work bound
 * is tighter than the integer operators': QH_FZ_LLM_MACS. */

/* Float data (MatMulNBits' A, DynamicQuantizeMatMul's A), by a mode (low 3 bits of a tail
 * byte), the values from the front:
 *   0  b/16 for a signed byte b: small values, exact in every T1 (an exhausted front: 0.0 ..)
 *   1  b/2, and ±127 where the byte's low nibble is 15: with a block maximum of 127 the
 *      level-4 int8 quantization (§8.3: r = 1) meets exact ties
 *   2  ±(1 + m/256)·2^(e−8) from two bytes: general values
 *   3  raw bits (4 bytes for float, else 2): NaN, infinities, subnormals, huge
 *   4  one value (mode 0's, one byte) everywhere: a constant A (DynamicQuantizeLinear's
 *      hi = lo, a level-4 block whose every element is its maximum)
 *   5  "1 + u + u + ...": each row's first element 1, the others 2^-24 (float32's u): a
 *      sequential sum loses every u, the worst error a correct order makes ((K − 1)·u against
 *      the bound's (K + 1)·u), so an error twice that fails (an all-zero A is mode 4's byte 0)
 *   6  −64 and 63.5 first, then b/4: DynamicQuantizeLinear's scale is exactly 0.5 and A/sa
 *      lands on ties
 *   7  ±2^(b/2) for a signed byte b: products in float32's subnormal and overflow ranges */
#define FLOAT_DATA_RAW 3u

static double small_value(src *s)
{
    return signed_byte(front(s)) / 16.0;
}

static void fill_float(src *s, qmm_tensor *t, unsigned mode)
{
    int64_t n = qmm_tensor_numel(t);
    int w = t->dtype == QMM_DTYPE_FLOAT ? 4 : 2;
    double c = (mode & 7) == 4 ? small_value(s) : 0.0;
    int64_t row = t->rank > 0 && t->dims[t->rank - 1] > 0 ? t->dims[t->rank - 1] : 1;
    for (int64_t i = 0; i < n; i++) {
        double v;
        unsigned b, e;
        switch (mode & 7) {
        case 1:
            b = front(s);
            v = (b & 15) == 15 ? ((b & 0x80) ? -127.0 : 127.0) : signed_byte(b) / 2.0;
            break;
        case 2:
            e = front(s);
            b = front(s);
            v = ldexp(1.0 + b / 256.0, (int)(e & 15) - 8);
            v = (e & 0x80) ? -v : v;
            break;
        case FLOAT_DATA_RAW: {
            uint32_t bits = 0;
            for (int j = 0; j < w; j++)
                bits |= (uint32_t)front(s) << (8 * j);
            store_scale_bits(t, i, bits);
            continue;
        }
        case 4: v = c; break;
        case 5: v = i % row == 0 ? 1.0 : ldexp(1.0, -24); break;
        case 6: v = i == 0 ? -64.0 : i == 1 ? 63.5 : signed_byte(front(s)) / 4.0; break;
        case 7:
            b = front(s);
            v = ldexp((b & 1) ? -1.0 : 1.0, signed_byte(b) / 2);
            break;
        default: v = small_value(s); break;
        }
        store_scale_bits(t, i, qmm_scale_encode(t->dtype, v));
    }
}

/* A form byte; when its bit 7 is set, a twist byte and an argument byte follow: a twist byte
 * below 0x80 breaks rule (byte % n), one from 0x80 on none (so that a random input is valid
 * three times in four). *twist is n for "none". */
static unsigned read_form(src *s, unsigned n, unsigned *twist, unsigned *arg)
{
    unsigned form = tail(s);
    *twist = n;
    *arg = 0;
    if (form & 0x80) {
        unsigned t = tail(s);
        *arg = tail(s);
        *twist = t < 0x80 ? t % n : n;
    }
    return form;
}

/* An operand that is float (fill_float's mode byte) or 8-bit (read_data_mode's). */
typedef struct operand_mode {
    unsigned float_mode;
    data_mode int_mode;
} operand_mode;

static operand_mode read_operand_mode(src *s, const qmm_tensor *t)
{
    operand_mode m = {0, {0, 0}};
    if (qmm_is_scale_type(t->dtype))
        m.float_mode = tail(s);
    else
        m.int_mode = read_data_mode(s);
    return m;
}

static void fill_operand(src *s, qmm_tensor *t, operand_mode m, int64_t zp)
{
    if (qmm_is_scale_type(t->dtype))
        fill_float(s, t, m.float_mode);
    else
        fill_data(s, t, m.int_mode, zp);
}

/* Every byte of t's data to the front (any element width). */
static void write_bytes(sink *k, const qmm_tensor *t)
{
    int64_t n = qmm_tensor_numel(t);
    size_t bytes = n > 0 ? (size_t)n * qmm_dtype_size(t->dtype) : 0;
    const uint8_t *p = t->data;
    for (size_t i = 0; i < bytes; i++)
        put_front(k, p[i]);
}

/* Scales where every value is valid (§8.1, §9, §10: zero, negative, subnormal, huge all
 * are): a family byte whose low 3 bits are read_values' families, then bit 3 negates every
 * element, bit 4 scales it by 2^-136 (float32 subnormal; float16 0), bit 5 by 2^100 (huge;
 * float16 infinity), bit 6 makes every third element (from the second) zero. */
static void read_llm_scales(src *s, qmm_tensor *t)
{
    unsigned fam = tail(s);
    read_values_of(s, t, scale_value, fam & 7);
    if (!(fam & 0x78))
        return;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++) {
        double v = qmm_scale_decode(t->dtype, t->data, i);
        v = (fam & 0x08) ? -v : v;
        v = (fam & 0x10) ? ldexp(v, -136) : v;
        v = (fam & 0x20) ? ldexp(v, 100) : v;
        v = (fam & 0x40) && i % 3 == 1 ? 0.0 : v;
        store_scale_bits(t, i, qmm_scale_encode(t->dtype, v));
    }
}

/* The extremes of an integer type DequantizeLinear takes (qh_dtype_qmin's for 8-bit and
 * float8). */
static void int_range(int32_t dtype, int64_t *lo, int64_t *hi)
{
    switch (dtype) {
    case QMM_DTYPE_INT16: *lo = -32768; *hi = 32767; break;
    case QMM_DTYPE_UINT16: *lo = 0; *hi = 65535; break;
    case QMM_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default: *lo = qh_dtype_qmin(dtype); *hi = qh_dtype_qmax(dtype); break;
    }
}

/* Integer zero points of any width (DequantizeLinear): a mode byte (low 2 bits): 0 raw, the
 * element's bytes from the tail, low byte first; 1 all qmin; 2 all qmax; 3 alternating. A
 * float8 zero point is +0 in modes 1-3 (the only valid one; raw codes may be anything). */
static void read_int_zps(src *s, qmm_tensor *t)
{
    unsigned mode = tail(s) & 3;
    size_t w = qmm_dtype_size(t->dtype);
    int64_t lo, hi;
    int_range(t->dtype, &lo, &hi);
    uint8_t *p = t->data;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++) {
        if (mode == 0) {
            for (size_t j = 0; j < w; j++)
                p[(size_t)i * w + j] = (uint8_t)tail(s);
            continue;
        }
        if (qmm_is_float8(t->dtype)) /* +0, the only valid float8 zero point */
            continue;
        qh_tensor_set_int(t, i, mode == 1 ? lo : mode == 2 ? hi : (i & 1) ? hi : lo);
    }
}

static void write_int_zps(sink *k, const qmm_tensor *t)
{
    put(k, 0);
    int64_t n = qmm_tensor_numel(t);
    size_t bytes = n > 0 ? (size_t)n * qmm_dtype_size(t->dtype) : 0;
    const uint8_t *p = t->data;
    for (size_t i = 0; i < bytes; i++)
        put(k, p[i]);
}

/* Integer data of any width: 8-bit and float8 tensors as fill_data; wider ones by the same
 * mode byte, with 9 all qmin, 10 all qmax, 11 alternating, 15 generated bytes, anything else
 * raw bytes from the front. */
static void fill_ints(src *s, qmm_tensor *t, data_mode m, int64_t zp)
{
    size_t w = qmm_dtype_size(t->dtype);
    if (w == 1) {
        fill_data(s, t, m, zp);
        return;
    }
    int64_t lo, hi;
    int_range(t->dtype, &lo, &hi);
    if (m.mode == 15)
        s->rng ^= 0x9E3779B97F4A7C15ULL * (m.seed + 1);
    uint8_t *p = t->data;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++) {
        if (m.mode >= 9 && m.mode <= 11) {
            qh_tensor_set_int(t, i, m.mode == 9 ? lo : m.mode == 10 ? hi : (i & 1) ? hi : lo);
            continue;
        }
        for (size_t j = 0; j < w; j++)
            p[(size_t)i * w + j] = m.mode == 15 ? next_random(s) : front(s);
    }
}

/* y's type and shape as the operator's descriptor says (rank 0 when the inputs do not fit:
 * invalid input, which the backends must say so). */
static void set_output(qh_fz_case *c)
{
    const qmm_op_desc *d = qmm_call_desc(&c->oc.call);
    qmm_tensor *y = qmm_call_output(&c->oc.call);
    qmm_status st;
    y->dtype = qmm_call_output_dtype(&c->oc.call);
    y->rank = 0;
    if (d->y_shape(&c->oc.call, &y->rank, y->dims, &st) != QMM_OK)
        y->rank = 0;
}

/* Every present input within the operand bound, then allocated. 0, or -1. */
static int alloc_inputs(qh_fz_case *c)
{
    for (int32_t i = 0; i < c->n_inputs; i++)
        if (qmm_tensor_present(c->inputs[i]) &&
            (!within(c->inputs[i]) || !alloc_tensor(c, c->inputs[i])))
            return -1;
    return 0;
}

static const char *t1_tag(int32_t dtype)
{
    return dtype == QMM_DTYPE_FLOAT ? "f32" : dtype == QMM_DTYPE_FLOAT16 ? "f16"
           : dtype == QMM_DTYPE_BFLOAT16 ? "bf16" : "xx";
}

/* 1 when rows x n outputs with k terms each stay within the float operators' bounds (empty
 * dims counted as 1 for the loops, as work_fits does). */
static int llm_work_fits(int64_t rows, int64_t n, int64_t k)
{
    int64_t r = rows > 0 ? rows : 1, nn = n > 0 ? n : 1, kk = k > 0 ? k : 1;
    if (r > QH_FZ_LLM_MACS || nn > QH_FZ_LLM_MACS || r * nn > QH_FZ_MAX_OUTPUT)
        return 0;
    return r * nn * kk <= QH_FZ_LLM_MACS;
}

/* ---- MatMulNBits ---------------------------------------------------------------------- *
 * Form byte: bits 0-1 `bits` (4, 2, 8, 4: the default first), bits 2-3 T1 (float, float,
 * float16, bfloat16), bit 4 a bias [N], bits 5-6 zero points (absent, packed uint8, T1,
 * absent), bit 7 a twist byte and its argument byte follow (read_form: one rule broken, below).
 * Block byte: bits 0-2 block_size 16 << (v % 7) (16..1024), bits 3-5 accuracy_level (v % 5),
 * bit 6 scales flat [N·k_blocks] (else [N, k_blocks]), bit 7 zero points flat.
 * Shape byte: bits 0-1 A's rank (2, 1, 3, 2), bit 2 g_idx [K], bits 3-4 K's form: 0 (and 3)
 * a dim byte; 1 whole blocks, 1 + (next byte % 4) of them; 2 a short last block: (next % 3)
 * whole blocks and 1 + (two bytes) % (block_size − 1) more; bits 5-7 M: 1-4 M = 127, 128,
 * 129, 257 (llm_rows), else a dim byte.
 * Dims: M (A of rank >= 2, when a dim byte), K, N, batch (A of rank 3). Then the values: scales
 * (read_llm_scales), zero points (packed: read_zps; T1: read_float_zps), bias (bias
 * families), g_idx (read_g_idx), the data modes of A (fill_float) and B (read_data_mode:
 * codes packed low bits first; mode 13 is every code at the default zero point), A, B. */
enum {
    MNB_BITS,         /* the attribute `bits` = argument % 16 */
    MNB_BLOCK,        /* block_size = argument (rarely a power of 2 >= 16) */
    MNB_K,            /* the attribute K is A's last dim + 1 */
    MNB_N,            /* the attribute N is B's first dim + 1 */
    MNB_B_SHAPE,      /* B [N, k_blocks + 1, blob_size] */
    MNB_B_TYPE,       /* B int8 */
    MNB_SCALES_SHAPE, /* scales [N, k_blocks + 1] */
    MNB_SCALES_TYPE,  /* scales of the next T1 */
    MNB_ZP_TYPE,      /* zero points int8 (present) */
    MNB_ZP_SHAPE,     /* zero points one column more (present) */
    MNB_ZP_EMPTY,     /* zero points [0]: present but empty (OpenVINO 32198) */
    MNB_G_IDX,        /* g_idx present, element (argument % K) = k_blocks: out of range */
    MNB_BIAS,         /* bias [N + 1] (argument odd) or of the next T1 (even) */
    MNB_LEVEL,        /* accuracy_level 5 + argument % 3, or -1 */
    MNB_A,            /* A uint8 (argument odd) or of rank 0 (even) */
    MNB_TWISTS,
};

static const int32_t t1_types[4] = {QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16,
                                    QMM_DTYPE_BFLOAT16};
static const int32_t nbits_bits[4] = {4, 2, 8, 4};
static const int32_t nbits_ranks[4] = {2, 1, 3, 2};
/* M where LLM kernels change paths: a 128-row tile and its neighbours (ONNX Runtime runs its
 * M = 1 kernel on the last row of M = 129), and two tiles and one */
static const int64_t llm_rows[4] = {127, 128, 129, 257};

/* Float zero points (MatMulNBits' unpacked T1 form): a mode byte (low 2 bits), then per
 * element: 0 a tail byte b as the code b % 2^bits; 1 (b >> 1) % 2^bits, plus 0.5 when b is odd;
 * 2 raw bits (4 bytes for float, else 2: NaN, infinities, huge); 3 b/2 for a signed byte b
 * (negative and out of range). */
#define FLOAT_ZP_RAW 2u

static void read_float_zps(src *s, qmm_tensor *t, int32_t bits)
{
    unsigned mode = tail(s) & 3;
    int w = t->dtype == QMM_DTYPE_FLOAT ? 4 : 2;
    unsigned mask = (1u << bits) - 1;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++) {
        if (mode == FLOAT_ZP_RAW) {
            uint32_t v = 0;
            for (int j = 0; j < w; j++)
                v |= (uint32_t)tail(s) << (8 * j);
            store_scale_bits(t, i, v);
            continue;
        }
        unsigned b = tail(s);
        double v = mode == 0   ? (double)(b & mask)
                   : mode == 1 ? (double)((b >> 1) & mask) + ((b & 1) ? 0.5 : 0.0)
                               : signed_byte(b) / 2.0;
        store_scale_bits(t, i, qmm_scale_encode(t->dtype, v));
    }
}

static void write_float_zps(sink *k, const qmm_tensor *t)
{
    put(k, FLOAT_ZP_RAW);
    int w = t->dtype == QMM_DTYPE_FLOAT ? 4 : 2;
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++)
        for (int j = 0; j < w; j++)
            put(k, p[w * i + j]);
}

/* g_idx: a mode byte (low 2 bits): 0 and 3 k / block_size (what g_idx absent means); 1 a tail
 * byte % k_blocks per element; 2 raw int32, four tail bytes per element, low first. */
#define G_IDX_RAW 2u

static void read_g_idx(src *s, qmm_tensor *t, int64_t block, int64_t k_blocks)
{
    unsigned mode = tail(s) & 3;
    uint8_t *p = t->data;
    for (int64_t i = 0; i < qmm_tensor_numel(t); i++) {
        if (mode == G_IDX_RAW) {
            for (int j = 0; j < 4; j++)
                p[4 * i + j] = (uint8_t)tail(s);
            continue;
        }
        qh_tensor_set_int(t, i, mode == 1 ? (int64_t)tail(s) % (k_blocks > 0 ? k_blocks : 1)
                                          : i / block);
    }
}

static void write_g_idx(sink *k, const qmm_tensor *t)
{
    put(k, G_IDX_RAW);
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < 4 * qmm_tensor_numel(t); i++)
        put(k, p[i]);
}

/* K by the shape byte's form (bits 3-4 of `shape`). */
static int64_t read_nbits_k(src *s, unsigned shape, int64_t block)
{
    switch ((shape >> 3) & 3) {
    case 1: return block * (1 + (int64_t)(tail(s) % 4));
    case 2: {
        int64_t whole = (int64_t)(tail(s) % 3);
        unsigned hi = tail(s);
        return whole * block + 1 + (int64_t)((hi << 8 | tail(s)) % (unsigned)(block - 1));
    }
    default: return read_dim(s);
    }
}

static int32_t next_t1(int32_t t)
{
    return next_scale_type(t);
}

static void mnb_twist(qmm_matmulnbits *q, unsigned twist, unsigned arg, int64_t kb)
{
    switch (twist) {
    case MNB_BITS: q->bits = (int32_t)(arg % 16); break;
    case MNB_BLOCK: q->block_size = (int32_t)arg; break;
    case MNB_K: q->k++; break;
    case MNB_N: q->n++; break;
    case MNB_B_SHAPE: q->b.dims[1]++; break;
    case MNB_B_TYPE: q->b.dtype = QMM_DTYPE_INT8; break;
    case MNB_SCALES_SHAPE: set_shape(&q->scales, q->scales.dtype, 2, (int64_t[]){q->n, kb + 1}); break;
    case MNB_SCALES_TYPE: q->scales.dtype = next_t1(q->scales.dtype); break;
    case MNB_ZP_TYPE:
    case MNB_ZP_SHAPE:
    case MNB_ZP_EMPTY:
        if (!qmm_tensor_present(&q->zero_points))
            set_shape(&q->zero_points, QMM_DTYPE_UINT8, 2,
                     (int64_t[]){q->n, (kb * q->bits + 7) / 8});
        if (twist == MNB_ZP_TYPE)
            q->zero_points.dtype = QMM_DTYPE_INT8;
        else if (twist == MNB_ZP_SHAPE)
            q->zero_points.dims[q->zero_points.rank - 1]++;
        else
            set_shape(&q->zero_points, q->zero_points.dtype, 1, (int64_t[]){0});
        break;
    case MNB_G_IDX:
        set_shape(&q->g_idx, QMM_DTYPE_INT32, 1, (int64_t[]){q->k});
        break;
    case MNB_BIAS:
        if (arg & 1)
            set_shape(&q->bias, q->a.dtype, 1, (int64_t[]){q->n + 1});
        else
            set_shape(&q->bias, next_t1(q->a.dtype), 1, (int64_t[]){q->n});
        break;
    case MNB_LEVEL: q->accuracy_level = arg & 1 ? -1 : 5 + (int32_t)(arg % 3); break;
    case MNB_A:
        if (arg & 1)
            q->a.dtype = QMM_DTYPE_UINT8;
        else
            q->a.rank = 0;
        break;
    default: break;
    }
}

static int decode_matmulnbits(const uint8_t *data, size_t len, qh_fz_case *c)
{
    qmm_matmulnbits *q = &c->oc.call.u.matmulnbits;
    src s;
    begin_case(c, QMM_OP_MATMULNBITS, 1, &s, data, len);

    unsigned twist, arg, form = read_form(&s, MNB_TWISTS, &twist, &arg);
    unsigned blk = tail(&s), shape = tail(&s);
    int32_t t1 = t1_types[(form >> 2) & 3];
    unsigned zf = (form >> 5) & 3;
    q->bits = nbits_bits[form & 3];
    q->block_size = 16 << (blk & 7) % 7;
    q->accuracy_level = (int32_t)(((blk >> 3) & 7) % 5);
    int64_t bs = q->block_size;
    int32_t ar = nbits_ranks[shape & 3];
    unsigned rows = (shape >> 5) & 7;
    int64_t m = ar < 2 ? 1 : rows >= 1 && rows <= 4 ? llm_rows[rows - 1] : read_dim(&s);
    int64_t k = read_nbits_k(&s, shape, bs);
    int64_t n = read_dim(&s);
    int64_t batch = ar == 3 ? read_dim(&s) : 1;
    if (k < 1 || n < 1 || k > 65535 || !llm_work_fits(m * batch, n, k))
        return -1;
    q->k = (int32_t)k;
    q->n = (int32_t)n;
    int64_t kb = (k + bs - 1) / bs, blob = bs * q->bits / 8, zrow = (kb * q->bits + 7) / 8;
    const int64_t ad[3] = {batch, m, k};
    set_shape(&q->a, t1, ar, ad + 3 - ar);
    set_shape(&q->b, QMM_DTYPE_UINT8, 3, (int64_t[]){n, kb, blob});
    int flat = (blk >> 6) & 1, zflat = (blk >> 7) & 1;
    set_shape(&q->scales, t1, flat ? 1 : 2, (int64_t[]){flat ? n * kb : n, kb});
    if (zf == 1 || zf == 2) {
        int64_t cols = zf == 1 ? zrow : kb;
        set_shape(&q->zero_points, zf == 1 ? QMM_DTYPE_UINT8 : t1, zflat ? 1 : 2,
                 (int64_t[]){zflat ? n * cols : n, cols});
    }
    if (form & 0x10)
        set_shape(&q->bias, t1, 1, (int64_t[]){n});
    if (shape & 4)
        set_shape(&q->g_idx, QMM_DTYPE_INT32, 1, (int64_t[]){k});
    mnb_twist(q, twist, arg, kb);
    set_output(c);
    snprintf(c->types, sizeof c->types, "%s-%db", t1_tag(t1), (int)q->bits);
    if (alloc_inputs(c) != 0)
        return -1;

    read_llm_scales(&s, &q->scales);
    if (qmm_tensor_present(&q->zero_points)) {
        if (q->zero_points.dtype == QMM_DTYPE_UINT8 || q->zero_points.dtype == QMM_DTYPE_INT8)
            read_zps(&s, &q->zero_points);
        else
            read_float_zps(&s, &q->zero_points, nbits_bits[form & 3]);
    }
    if (qmm_tensor_present(&q->bias))
        read_values(&s, &q->bias, bias_value);
    if (qmm_tensor_present(&q->g_idx)) {
        read_g_idx(&s, &q->g_idx, bs, kb);
        if (twist == MNB_G_IDX && q->g_idx.dims[0] > 0)
            qh_tensor_set_int(&q->g_idx, (int64_t)arg % q->g_idx.dims[0], kb);
    }
    operand_mode am = read_operand_mode(&s, &q->a);
    data_mode bm = read_data_mode(&s);
    fill_operand(&s, &q->a, am, 0);
    /* mode 13 ("every code the zero point"): the default 2^(bits-1) in every code */
    int b8 = nbits_bits[form & 3];
    int64_t dflt = b8 == 8 ? 0x80 : b8 == 4 ? 0x88 : 0xAA;
    fill_data(&s, &q->b, bm, dflt);
    return 0;
}

/* ---- DequantizeLinear ----------------------------------------------------------------- *
 * Form byte: bits 0-3 x's type (dql_x_types: int8 and uint8 most often, int16, uint16, int32,
 * the four float8), bits 4-5 the scale type (float, float, float16, bfloat16), bit 6 a zero
 * point (x's type, the scale's shape), bit 7 a twist byte and its argument byte follow (read_form).
 * Attribute byte: bits 0-1 the form (per tensor [], per axis [D_axis], blocked, per tensor
 * [1]), bits 2-4 the opset 21 + (v % 5), bits 5-6 output_dtype (0, float, float16, bfloat16;
 * set from opset 23 on, else 0).
 * Rank byte: bits 0-2 x's rank (2, 1, 3, 2, 4, 1, 3, 0); then x's dims (dim bytes); then the
 * axis byte: below 0xF0 the axis (v % 2r) − r (any valid one; rank 0: 1, the default), from
 * 0xF0 on the next byte as a signed axis (mostly out of range). Blocked: a block byte: below
 * 0xF0, odd v: 1 + (v >> 1) % 64, even: 16 << (v >> 1) % 7; from 0xF0 on a dim byte.
 * Values: the scales (read_llm_scales), the zero point (read_int_zps), x's data mode and data
 * (fill_ints: mode 8 keeps float8 NaN and infinity codes, valid here: IEEE). */
static const int32_t dql_x_types[16] = {
    QMM_DTYPE_INT8,           QMM_DTYPE_UINT8,       QMM_DTYPE_INT8,
    QMM_DTYPE_UINT8,          QMM_DTYPE_INT16,       QMM_DTYPE_UINT16,
    QMM_DTYPE_INT32,          QMM_DTYPE_FLOAT8E4M3FN, QMM_DTYPE_FLOAT8E4M3FNUZ,
    QMM_DTYPE_FLOAT8E5M2,     QMM_DTYPE_FLOAT8E5M2FNUZ, QMM_DTYPE_INT8,
    QMM_DTYPE_UINT8,          QMM_DTYPE_INT16,       QMM_DTYPE_INT32,
    QMM_DTYPE_UINT8,
};
static const int32_t dql_ranks[8] = {2, 1, 3, 2, 4, 1, 3, 0};
static const int32_t dql_out_types[4] = {0, QMM_DTYPE_FLOAT, QMM_DTYPE_FLOAT16,
                                         QMM_DTYPE_BFLOAT16};
enum { DQL_PER_TENSOR, DQL_PER_AXIS, DQL_BLOCKED, DQL_PER_TENSOR_1 };
#define DQL_EXPLICIT 0xF0u

enum {
    DQL_ZP_SHAPE,   /* the zero point [numel(scale) + 1] */
    DQL_ZP_TYPE,    /* the zero point of another type (int8 <-> uint8, else int8) */
    DQL_SCALE_TYPE, /* the scale int8 */
    DQL_AXIS,       /* axis r + argument % 3 (blocked or per axis), out of range */
    DQL_BLOCK,      /* block_size -1 - argument % 4 */
    DQL_SCALE_SHAPE,/* the scale one longer in its last dim (or [2] for a scalar) */
    DQL_OUTPUT,     /* output_dtype int8 (opset 23 on), or float before opset 23 */
    DQL_OPSET,      /* opset 19 or 20 */
    DQL_F8_ZP,      /* x float8e4m3fn with a zero point whose first element is 1.0 */
    DQL_X_TYPE,     /* x float (argument odd) or int64 (even): not a T1 modelled */
    DQL_TWISTS,
};

/* The scale's shape for the form (blocked: x's with ceil(D_axis / block) at the axis; an
 * out-of-range axis gives x's shape). */
static void dql_scale_shape(const qmm_tensor *x, unsigned form, int32_t axis, int64_t block,
                            qmm_tensor *scale)
{
    int32_t r = x->rank, ax = axis < 0 ? axis + r : axis;
    int ok = ax >= 0 && ax < r;
    if (form == DQL_PER_TENSOR) {
        scale->rank = 0;
    } else if (form == DQL_PER_TENSOR_1) {
        scale->rank = 1;
        scale->dims[0] = 1;
    } else if (form == DQL_PER_AXIS) {
        scale->rank = 1;
        scale->dims[0] = ok ? x->dims[ax] : 1;
    } else {
        scale->rank = r;
        memcpy(scale->dims, x->dims, sizeof scale->dims);
        if (ok && block > 0)
            scale->dims[ax] = (x->dims[ax] + block - 1) / block;
    }
}

static void dql_twist(qmm_dequantizelinear *q, unsigned twist, unsigned arg)
{
    switch (twist) {
    case DQL_ZP_SHAPE:
        set_shape(&q->x_zero_point, q->x.dtype, 1,
                 (int64_t[]){qmm_tensor_numel(&q->x_scale) + 1});
        break;
    case DQL_ZP_TYPE:
        set_shape(&q->x_zero_point, q->x.dtype == QMM_DTYPE_INT8 ? QMM_DTYPE_UINT8
                                                                 : QMM_DTYPE_INT8,
                 q->x_scale.rank, q->x_scale.dims);
        break;
    case DQL_SCALE_TYPE: q->x_scale.dtype = QMM_DTYPE_INT8; break;
    case DQL_AXIS: q->axis = q->x.rank + (int32_t)(arg % 3); break;
    case DQL_BLOCK: q->block_size = -1 - (int32_t)(arg % 4); break;
    case DQL_SCALE_SHAPE:
        if (q->x_scale.rank == 0)
            set_shape(&q->x_scale, q->x_scale.dtype, 1, (int64_t[]){2});
        else
            q->x_scale.dims[q->x_scale.rank - 1]++;
        break;
    case DQL_OUTPUT:
        q->output_dtype = q->opset >= 23 ? QMM_DTYPE_INT8 : QMM_DTYPE_FLOAT;
        break;
    case DQL_OPSET: q->opset = 19 + (int32_t)(arg & 1); break;
    case DQL_F8_ZP:
        q->x.dtype = QMM_DTYPE_FLOAT8E4M3FN;
        set_shape(&q->x_zero_point, q->x.dtype, q->x_scale.rank, q->x_scale.dims);
        break;
    case DQL_X_TYPE: q->x.dtype = (arg & 1) ? QMM_DTYPE_FLOAT : QMM_DTYPE_INT64; break;
    default: break;
    }
}

static int decode_dequantizelinear(const uint8_t *data, size_t len, qh_fz_case *c)
{
    qmm_dequantizelinear *q = &c->oc.call.u.dequantizelinear;
    src s;
    begin_case(c, QMM_OP_DEQUANTIZELINEAR, 21, &s, data, len);

    unsigned twist, arg, form = read_form(&s, DQL_TWISTS, &twist, &arg);
    unsigned attrs = tail(&s), rank = tail(&s);
    q->opset = 21 + (int32_t)(((attrs >> 2) & 7) % 5);
    c->opset = q->opset;
    q->output_dtype = q->opset >= 23 ? dql_out_types[(attrs >> 5) & 3] : 0;
    unsigned sf = attrs & 3;
    int32_t r = dql_ranks[rank & 7];
    int64_t xd[QMM_MAX_RANK];
    for (int32_t i = 0; i < r; i++)
        xd[i] = read_dim(&s);
    set_shape(&q->x, dql_x_types[form & 15], r, xd);
    unsigned ab = tail(&s);
    q->axis = ab >= DQL_EXPLICIT ? signed_byte(tail(&s))
              : r > 0        ? (int32_t)(ab % (unsigned)(2 * r)) - r
                             : 1;
    q->block_size = 0;
    if (sf == DQL_BLOCKED) {
        unsigned b = tail(&s);
        q->block_size = b >= DQL_EXPLICIT ? (int32_t)read_dim(&s)
                        : (b & 1)       ? 1 + (int32_t)((b >> 1) % 64)
                                        : 16 << (b >> 1) % 7;
    }
    q->x_scale.dtype = t1_types[(form >> 4) & 3];
    dql_scale_shape(&q->x, sf, q->axis, q->block_size, &q->x_scale);
    if (form & 0x40)
        set_shape(&q->x_zero_point, q->x.dtype, q->x_scale.rank, q->x_scale.dims);
    dql_twist(q, twist, arg);
    set_output(c);
    snprintf(c->types, sizeof c->types, "%s-%s", qmm_dtype_name(q->x.dtype),
             t1_tag(q->x_scale.dtype));
    /* the work: x's elements, and the loops over its dims (empty ones counted as 1) */
    int64_t loops = 1;
    for (int32_t i = 0; i < r; i++) {
        loops *= xd[i] > 0 ? xd[i] : 1;
        if (loops > QH_FZ_MAX_MACS)
            return -1;
    }
    if (qmm_tensor_numel(&q->x) > QH_FZ_MAX_OUTPUT || alloc_inputs(c) != 0)
        return -1;

    if (qmm_is_scale_type(q->x_scale.dtype))
        read_llm_scales(&s, &q->x_scale);
    if (qmm_tensor_present(&q->x_zero_point)) {
        read_int_zps(&s, &q->x_zero_point);
        if (twist == DQL_F8_ZP && qmm_tensor_numel(&q->x_zero_point) > 0)
            ((uint8_t *)q->x_zero_point.data)[0] = 0x38; /* 1.0 in float8e4m3fn */
    }
    data_mode xm = read_data_mode(&s);
    fill_ints(&s, &q->x, xm, first_zp(&q->x_zero_point));
    return 0;
}

/* ---- DynamicQuantizeMatMul and MatMulIntegerToFloat ----------------------------------- *
 * Form byte: bit 0 A int8 (MatMulIntegerToFloat; DynamicQuantizeMatMul's A is float), bit 1 B
 * int8, bit 2 the scales, bias and y float16 (MatMulIntegerToFloat's T3), bit 3 b_scale per
 * column [N] (else per tensor), bit 4 a_zero_point (MatMulIntegerToFloat), bit 5
 * b_zero_point, bit 6 a bias [N], bit 7 a twist byte and its argument byte follow (read_form).
 * Scalars byte: bit 0 a_scale is [1] (else []), bit 1 a per-tensor b_scale is [1]; the zero
 * points take their scale's shape.
 * Then the shape section (read_shapes: ranks 1-5, batches, b's own K), the values: a_scale
 * and a_zero_point (MatMulIntegerToFloat), b_scale (read_llm_scales), b_zero_point
 * (read_zps), the bias (bias families), the data modes of A (fill_float for
 * DynamicQuantizeMatMul) and B, A, B. */
enum {
    I2F_A_TYPE,      /* A float16 (DynamicQuantizeMatMul) or float (MatMulIntegerToFloat) */
    I2F_B_ZP_TYPE,   /* b_zero_point of the other 8-bit type (present) */
    I2F_B_ZP_SHAPE,  /* b_zero_point [N + 1] */
    I2F_B_SCALE,     /* b_scale [N + 1] (argument odd) or [1, 1] */
    I2F_BIAS_SHAPE,  /* bias [N + 1] */
    I2F_BIAS_TYPE,   /* bias of the other T3 (bfloat16 for DynamicQuantizeMatMul) */
    I2F_SCALE_TYPE,  /* b_scale bfloat16 (DynamicQuantizeMatMul), a_scale bfloat16 */
    I2F_A_SCALE,     /* a_scale [2] (MatMulIntegerToFloat); b_scale [2] */
    I2F_A_ZP,        /* a_zero_point of the other 8-bit type (MatMulIntegerToFloat) */
    I2F_TWISTS,
};

typedef struct i2f_view {
    qmm_tensor *a, *b, *a_scale, *a_zp, *b_scale, *b_zp, *bias; /* a_scale, a_zp: NULL for DQM */
} i2f_view;

static i2f_view i2f_of(qmm_call *call)
{
    i2f_view v;
    memset(&v, 0, sizeof v);
    if (call->op == QMM_OP_DYNAMICQUANTIZEMATMUL) {
        qmm_dynamicquantizematmul *q = &call->u.dynamicquantizematmul;
        v.a = &q->a, v.b = &q->b, v.b_scale = &q->b_scale, v.b_zp = &q->b_zero_point;
        v.bias = &q->bias;
    } else {
        qmm_matmul_integer_to_float *q = &call->u.matmul_integer_to_float;
        v.a = &q->a, v.b = &q->b, v.b_scale = &q->b_scale, v.b_zp = &q->b_zero_point;
        v.bias = &q->bias, v.a_scale = &q->a_scale, v.a_zp = &q->a_zero_point;
    }
    return v;
}

static void i2f_twist(const i2f_view *v, unsigned twist, unsigned arg, int64_t n)
{
    int dynamic = v->a_scale == NULL;
    switch (twist) {
    case I2F_A_TYPE: v->a->dtype = dynamic ? QMM_DTYPE_FLOAT16 : QMM_DTYPE_FLOAT; break;
    case I2F_B_ZP_TYPE:
        set_shape(v->b_zp, flip8(v->b->dtype), v->b_scale->rank, v->b_scale->dims);
        break;
    case I2F_B_ZP_SHAPE: set_shape(v->b_zp, v->b->dtype, 1, (int64_t[]){n + 1}); break;
    case I2F_B_SCALE:
        if (arg & 1)
            set_shape(v->b_scale, v->b_scale->dtype, 1, (int64_t[]){n + 1});
        else
            set_shape(v->b_scale, v->b_scale->dtype, 2, (int64_t[]){1, 1});
        break;
    case I2F_BIAS_SHAPE: set_shape(v->bias, v->b_scale->dtype, 1, (int64_t[]){n + 1}); break;
    case I2F_BIAS_TYPE:
        set_shape(v->bias, v->b_scale->dtype == QMM_DTYPE_FLOAT16 || dynamic ? QMM_DTYPE_BFLOAT16
                                                                              : QMM_DTYPE_FLOAT16,
                 1, (int64_t[]){n});
        break;
    case I2F_SCALE_TYPE:
        (dynamic ? v->b_scale : v->a_scale)->dtype = QMM_DTYPE_BFLOAT16;
        break;
    case I2F_A_SCALE:
        set_shape(dynamic ? v->b_scale : v->a_scale, (dynamic ? v->b_scale : v->a_scale)->dtype,
                 1, (int64_t[]){2});
        break;
    case I2F_A_ZP:
        if (!dynamic)
            set_shape(v->a_zp, flip8(v->a->dtype), v->a_scale->rank, v->a_scale->dims);
        break;
    default: break;
    }
}

static int decode_i2f(qmm_op_kind op, const uint8_t *data, size_t len, qh_fz_case *c)
{
    src s;
    begin_case(c, op, 1, &s, data, len);
    i2f_view v = i2f_of(&c->oc.call);
    int dynamic = op == QMM_OP_DYNAMICQUANTIZEMATMUL;

    unsigned twist, arg, form = read_form(&s, I2F_TWISTS, &twist, &arg);
    unsigned scalars = tail(&s);
    int32_t ft = !dynamic && (form & 4) ? QMM_DTYPE_FLOAT16 : QMM_DTYPE_FLOAT;
    v.a->dtype = dynamic ? QMM_DTYPE_FLOAT : (form & 1) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    v.b->dtype = (form & 2) ? QMM_DTYPE_INT8 : QMM_DTYPE_UINT8;
    read_shapes(&s, v.a, v.b);
    qmm_tensor *y = qmm_call_output(&c->oc.call);
    if (shape_output(v.a, v.b, y) != 0)
        return -1;
    int64_t n = cols_of(v.b);
    if (!dynamic) {
        set_shape(v.a_scale, ft, scalars & 1, (int64_t[]){1});
        if (form & 0x10)
            set_shape(v.a_zp, v.a->dtype, v.a_scale->rank, v.a_scale->dims);
    }
    if (form & 8)
        set_shape(v.b_scale, ft, 1, (int64_t[]){n});
    else
        set_shape(v.b_scale, ft, (scalars >> 1) & 1, (int64_t[]){1});
    if (form & 0x20)
        set_shape(v.b_zp, v.b->dtype, v.b_scale->rank, v.b_scale->dims);
    if (form & 0x40)
        set_shape(v.bias, ft, 1, (int64_t[]){n});
    i2f_twist(&v, twist, arg, n);
    y->dtype = qmm_call_output_dtype(&c->oc.call);
    if (dynamic)
        snprintf(c->types, sizeof c->types, "%s%s", t1_tag(v.a->dtype), type_tag(v.b->dtype));
    else
        snprintf(c->types, sizeof c->types, "%s%s-%s", type_tag(v.a->dtype),
                 type_tag(v.b->dtype), t1_tag(v.a_scale->dtype));
    if (alloc_inputs(c) != 0)
        return -1;

    if (!dynamic) {
        read_llm_scales(&s, v.a_scale);
        if (qmm_tensor_present(v.a_zp))
            read_zps(&s, v.a_zp);
    }
    if (qmm_is_scale_type(v.b_scale->dtype))
        read_llm_scales(&s, v.b_scale);
    if (qmm_tensor_present(v.b_zp))
        read_zps(&s, v.b_zp);
    if (qmm_tensor_present(v.bias))
        read_values(&s, v.bias, bias_value);
    operand_mode am = read_operand_mode(&s, v.a);
    data_mode bm = read_data_mode(&s);
    fill_operand(&s, v.a, am, v.a_zp ? first_zp(v.a_zp) : 0);
    fill_data(&s, v.b, bm, first_zp(v.b_zp));
    return 0;
}

static int decode_dynamicquantizematmul(const uint8_t *data, size_t len, qh_fz_case *c)
{
    return decode_i2f(QMM_OP_DYNAMICQUANTIZEMATMUL, data, len, c);
}

static int decode_matmul_integer_to_float(const uint8_t *data, size_t len, qh_fz_case *c)
{
    return decode_i2f(QMM_OP_MATMUL_INTEGER_TO_FLOAT, data, len, c);
}

void qh_fz_case_free(qh_fz_case *c)
{
    qh_owned_call_free(&c->oc);
}

/* ---- the encoder ---------------------------------------------------------------------- */

static int encode_qlinearmatmul(sink *k, const qmm_qlinearmatmul *q)
{
    int32_t st = q->a_scale.dtype;
    unsigned sc = st == QMM_DTYPE_FLOAT ? 0 : st == QMM_DTYPE_FLOAT16 ? 2
                  : st == QMM_DTYPE_BFLOAT16 ? 3 : 4;
    int u8s8 = 1, float8 = 0;
    const qmm_tensor *e8[5] = {&q->a, &q->b, &q->y_zero_point, &q->a_zero_point,
                               &q->b_zero_point};
    for (int i = 0; i < 5; i++) {
        float8 |= qmm_is_float8(e8[i]->dtype);
        u8s8 &= qmm_is_q8(e8[i]->dtype) || qmm_is_float8(e8[i]->dtype);
    }
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
    if (twist == 5 || (float8 && twist != 4))
        return -1; /* the float8 form has no twist */
    int natural = st == QMM_DTYPE_FLOAT && !float8 ? 10 : 21;
    int opset = q->opset >= 21 ? 21 : 10;
    unsigned ty = (q->a.dtype == QMM_DTYPE_INT8 ? 1u : 0u) |
                  (q->b.dtype == QMM_DTYPE_INT8 ? 2u : 0u) |
                  (q->y_zero_point.dtype == QMM_DTYPE_INT8 ? 4u : 0u) | sc << 3 |
                  (opset != natural ? 0x20u : 0u) | (twist < 4 || float8 ? 0xC0u : 0u);
    put(k, ty);
    if (twist < 4)
        put(k, twist);
    if (float8) {
        put(k, QLM_FLOAT8_FORM | f8_code_of(q->y_zero_point.dtype));
        put(k, f8_code_of(q->a.dtype) | f8_code_of(q->b.dtype) << 3);
    }
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
    put(k, data_mode_of(&q->a));
    put(k, data_mode_of(&q->b));
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

/* The layout byte's form of an operand's batch: 0 for [r,c], 1 for [1,r,c], 2 for
 * [batch,r,c]; -1 when the decoder cannot give the shape. */
static int batch_form(const qmm_tensor *t, int64_t batch, int64_t r, int64_t c)
{
    if (t->rank != 2 && t->rank != 3)
        return -1;
    if (t->dims[t->rank - 2] != r || t->dims[t->rank - 1] != c)
        return -1;
    if (t->rank == 2)
        return 0;
    return t->dims[0] == 1 ? 1 : t->dims[0] == batch ? 2 : -1;
}

/* 0 for [], 1 for [1], -1 for any other shape */
static int scalar_form(const qmm_tensor *t)
{
    return t->rank == 0 ? 0 : t->rank == 1 && t->dims[0] == 1 ? 1 : -1;
}

/* Valid calls, and calls that break only the order rule (QOM_ORDERS), the tile rule
 * (QOM_TILES) or the no-bias rule of the COL32 combination (QOM_BIAS_ANY): what the committed
 * vectors hold. */
static int encode_qorderedmatmul(sink *k, const qmm_qorderedmatmul *q)
{
    int has_c = qmm_tensor_present(&q->c), has_bias = qmm_tensor_present(&q->bias);
    const qmm_tensor *floats[5] = {&q->scale_a, &q->scale_b, &q->scale_y, &q->scale_c, &q->bias};
    for (int i = 0; i < 5; i++)
        if (qmm_tensor_present(floats[i]) && floats[i]->dtype != QMM_DTYPE_FLOAT)
            return -1;
    if (q->a.dtype != QMM_DTYPE_INT8 || q->b.dtype != QMM_DTYPE_INT8 ||
        !qmm_tensor_present(&q->scale_a) || !qmm_tensor_present(&q->scale_b) ||
        !qmm_tensor_present(&q->scale_y) || (has_c && q->c.dtype != QMM_DTYPE_INT8) ||
        has_c != qmm_tensor_present(&q->scale_c) ||
        (q->a.rank != 2 && q->a.rank != 3) || q->b.rank < 2)
        return -1;
    qom_dims d = {q->a.rank == 3 ? q->a.dims[0] : 1, q->a.dims[q->a.rank - 2],
                  q->a.dims[q->a.rank - 1], q->b.dims[q->b.rank - 1]};
    int bf = batch_form(&q->b, q->a.rank == 3 ? d.batch : 1, d.k, d.n);
    int cf = has_c ? batch_form(&q->c, q->a.rank == 3 ? d.batch : 1, d.m, d.n) : 0;
    int per_col = scalar_form(&q->scale_b) < 0;
    unsigned scalars = 0;
    const qmm_tensor *sc[4] = {&q->scale_a, &q->scale_b, &q->scale_y, &q->scale_c};
    for (int i = 0; i < 4; i++) {
        int f = qmm_tensor_present(sc[i]) ? scalar_form(sc[i]) : 0;
        if (f < 0 && !(i == 1 && q->scale_b.rank == 1 && q->scale_b.dims[0] == d.n))
            return -1;
        scalars |= (f > 0 ? 1u : 0u) << i;
    }
    if (bf < 0 || cf < 0 || (has_bias && (q->bias.rank != 1 || q->bias.dims[0] != d.n)))
        return -1;

    unsigned combo = 0, twist = QOM_TWISTS;
    while (combo < 3 && !(order_combos[combo][0] == q->order_a &&
                          order_combos[combo][1] == q->order_b &&
                          order_combos[combo][2] == q->order_y))
        combo++;
    if (combo == 3) {
        combo = 0;
        twist = QOM_ORDERS;
        if (q->order_a < 0 || q->order_a > 7 || q->order_b < 0 || q->order_b > 7 ||
            q->order_y < 0 || q->order_y > 7)
            return -1;
    }
    int tiles = combo != 0;
    if (tiles && (d.k % 32 != 0 || d.n % 32 != 0)) {
        tiles = 0;
        twist = QOM_TILES;
    }
    if (has_bias && combo != 0) {
        if (twist != QOM_TWISTS)
            return -1;
        twist = QOM_BIAS_ANY;
    }
    put(k, combo | (has_bias && combo == 0 ? 4u : 0u) | (has_c ? 8u : 0u) |
               (per_col ? 0x10u : 0u) | (twist != QOM_TWISTS ? 0xE0u : 0u));
    if (twist != QOM_TWISTS)
        put(k, twist);
    if (twist == QOM_ORDERS) {
        put(k, (unsigned)q->order_a);
        put(k, (unsigned)q->order_b);
        put(k, (unsigned)q->order_y);
    }
    put(k, (q->a.rank == 3 ? 1u : 0u) | (unsigned)bf << 1 | (unsigned)cf << 3);
    put(k, scalars);
    write_dim(k, d.m);
    write_dim(k, tiles ? tile_dim_code(d.k) : d.k);
    write_dim(k, tiles ? tile_dim_code(d.n) : d.n);
    if (q->a.rank == 3)
        write_dim(k, d.batch);
    for (int i = 0; i < 5; i++)
        if (qmm_tensor_present(floats[i]))
            write_scales(k, floats[i]); /* the bias's raw family is the scales' (4) */
    const qmm_tensor *ops[3] = {&q->a, &q->b, &q->c};
    for (int i = 0; i < 3; i++)
        if (qmm_tensor_present(ops[i]))
            put(k, 0);
    for (int i = 0; i < 3; i++)
        if (qmm_tensor_present(ops[i]))
            write_data(k, ops[i]);
    return 0;
}

/* A T1 tensor [n, cols] (*flat = 0) or [n·cols] (*flat = 1); 0 when it is neither. */
static int matrix_or_flat(const qmm_tensor *t, int32_t dtype, int64_t n, int64_t cols, int *flat)
{
    if (t->dtype != dtype)
        return 0;
    *flat = t->rank == 1;
    if (t->rank == 1)
        return t->dims[0] == n * cols;
    return t->rank == 2 && t->dims[0] == n && t->dims[1] == cols;
}

static int vector_of(const qmm_tensor *t, int32_t dtype, int64_t n)
{
    return t->dtype == dtype && t->rank == 1 && t->dims[0] == n;
}

/* Valid MatMulNBits calls with block sizes 16..1024 and A of rank 1..3. */
static int encode_matmulnbits(sink *k, const qmm_matmulnbits *q)
{
    int32_t t1 = q->a.dtype;
    unsigned tc = t1 == QMM_DTYPE_FLOAT ? 0 : t1 == QMM_DTYPE_FLOAT16 ? 2
                  : t1 == QMM_DTYPE_BFLOAT16 ? 3 : 4;
    unsigned bc = q->bits == 4 ? 0 : q->bits == 2 ? 1 : q->bits == 8 ? 2 : 4;
    int lg = -1;
    for (int i = 0; i < 7; i++)
        if (q->block_size == 16 << i)
            lg = i;
    int32_t r = q->a.rank;
    if (tc == 4 || bc == 4 || lg < 0 || q->accuracy_level < 0 || q->accuracy_level > 4 ||
        q->k < 1 || q->n < 1 || q->k > 65535 || q->n > 65535 || r < 1 || r > 3 ||
        q->a.dims[r - 1] != q->k)
        return -1;
    int64_t bs = q->block_size, kb = (q->k + bs - 1) / bs, blob = bs * q->bits / 8;
    int64_t zrow = (kb * q->bits + 7) / 8;
    int flat = 0, zflat = 0;
    unsigned zf = 0;
    if (q->b.dtype != QMM_DTYPE_UINT8 || q->b.rank != 3 || q->b.dims[0] != q->n ||
        q->b.dims[1] != kb || q->b.dims[2] != blob ||
        !matrix_or_flat(&q->scales, t1, q->n, kb, &flat))
        return -1;
    if (qmm_tensor_present(&q->zero_points)) {
        zf = q->zero_points.dtype == QMM_DTYPE_UINT8 ? 1 : 2;
        if (!matrix_or_flat(&q->zero_points, q->zero_points.dtype, q->n, zf == 1 ? zrow : kb,
                            &zflat) ||
            (zf == 2 && q->zero_points.dtype != t1))
            return -1;
    }
    int bias = qmm_tensor_present(&q->bias), gidx = qmm_tensor_present(&q->g_idx);
    if ((bias && !vector_of(&q->bias, t1, q->n)) ||
        (gidx && !vector_of(&q->g_idx, QMM_DTYPE_INT32, q->k)))
        return -1;
    put(k, bc | tc << 2 | (bias ? 0x10u : 0u) | zf << 5);
    put(k, (unsigned)lg | (unsigned)q->accuracy_level << 3 | (unsigned)flat << 6 |
               (unsigned)zflat << 7);
    put(k, (r == 1 ? 1u : r == 3 ? 2u : 0u) | (gidx ? 4u : 0u));
    if (r >= 2)
        write_dim(k, q->a.dims[r - 2]);
    write_dim(k, q->k);
    write_dim(k, q->n);
    if (r == 3)
        write_dim(k, q->a.dims[0]);
    write_scales(k, &q->scales);
    if (zf == 1)
        write_zps(k, &q->zero_points);
    else if (zf == 2)
        write_float_zps(k, &q->zero_points);
    if (bias)
        write_scales(k, &q->bias); /* the bias's raw family is the scales' (4) */
    if (gidx)
        write_g_idx(k, &q->g_idx);
    put(k, FLOAT_DATA_RAW);
    put(k, 0);
    write_bytes(k, &q->a);
    write_data(k, &q->b);
    return 0;
}

/* Valid DequantizeLinear calls of the modelled types (opset 21..25), and those whose axis is
 * out of range but fits a signed byte. */
static int encode_dequantizelinear(sink *k, const qmm_dequantizelinear *q)
{
    unsigned xc = 16, sc = 4, oc = 4, rc = 8, sf;
    for (unsigned i = 0; i < 16 && xc == 16; i++)
        if (dql_x_types[i] == q->x.dtype)
            xc = i;
    for (unsigned i = 1; i < 4 && sc == 4; i++)
        if (t1_types[i] == q->x_scale.dtype)
            sc = i == 1 ? 0 : i;
    for (unsigned i = 0; i < 4 && oc == 4; i++)
        if (dql_out_types[i] == q->output_dtype)
            oc = i;
    for (unsigned i = 0; i < 8 && rc == 8; i++)
        if (dql_ranks[i] == q->x.rank)
            rc = i;
    if (xc == 16 || sc == 4 || oc == 4 || rc == 8 || q->opset < 21 || q->opset > 25 ||
        (q->opset < 23 && oc != 0) || q->block_size < 0 || q->block_size > 65535)
        return -1;
    if (q->block_size > 0)
        sf = DQL_BLOCKED;
    else if (q->x_scale.rank == 0)
        sf = DQL_PER_TENSOR;
    else if (q->x_scale.rank == 1 && q->x_scale.dims[0] == 1)
        sf = DQL_PER_TENSOR_1;
    else
        sf = DQL_PER_AXIS;
    qmm_tensor shape = q->x_scale;
    dql_scale_shape(&q->x, sf, q->axis, q->block_size, &shape);
    int zp = qmm_tensor_present(&q->x_zero_point);
    if (!same_shape(&shape, &q->x_scale) ||
        (zp && (q->x_zero_point.dtype != q->x.dtype || !same_shape(&q->x_zero_point, &shape))))
        return -1;
    int32_t r = q->x.rank;
    put(k, xc | sc << 4 | (zp ? 0x40u : 0u));
    put(k, sf | (unsigned)(q->opset - 21) << 2 | oc << 5);
    put(k, rc);
    for (int32_t i = 0; i < r; i++)
        write_dim(k, q->x.dims[i]);
    if (r > 0 && q->axis >= -r && q->axis < r) {
        put(k, (unsigned)(q->axis + r));
    } else if (r == 0 && q->axis == 1) {
        put(k, 0);
    } else if (q->axis >= -128 && q->axis <= 127) {
        put(k, DQL_EXPLICIT);
        put(k, (unsigned)(q->axis & 0xff));
    } else {
        return -1;
    }
    if (sf == DQL_BLOCKED) {
        put(k, DQL_EXPLICIT);
        write_dim(k, q->block_size);
    }
    write_scales(k, &q->x_scale);
    if (zp)
        write_int_zps(k, &q->x_zero_point);
    put(k, data_mode_of(&q->x));
    write_bytes(k, &q->x);
    return 0;
}

/* Valid calls of the pair: per-tensor or per-column b_scale, zero points of their operand's
 * type and their scale's shape, a bias [N]. */
static int encode_i2f(sink *k, const qmm_call *call)
{
    i2f_view v = i2f_of((qmm_call *)call);
    int dynamic = call->op == QMM_OP_DYNAMICQUANTIZEMATMUL;
    int32_t ft = dynamic ? QMM_DTYPE_FLOAT : v.a_scale->dtype;
    if ((ft != QMM_DTYPE_FLOAT && ft != QMM_DTYPE_FLOAT16) || !qmm_is_q8(v.b->dtype) ||
        (dynamic ? v.a->dtype != QMM_DTYPE_FLOAT : !qmm_is_q8(v.a->dtype)) ||
        v.b_scale->dtype != ft)
        return -1;
    int64_t n = cols_of(v.b);
    unsigned form = (v.a->dtype == QMM_DTYPE_INT8 ? 1u : 0u) |
                    (v.b->dtype == QMM_DTYPE_INT8 ? 2u : 0u) |
                    (ft == QMM_DTYPE_FLOAT16 ? 4u : 0u);
    unsigned scalars = 0;
    int sa = dynamic ? 0 : scalar_form(v.a_scale), sb = scalar_form(v.b_scale);
    if (sa < 0)
        return -1;
    scalars |= (unsigned)sa;
    if (sb >= 0)
        scalars |= (unsigned)sb << 1;
    else if (vector_of(v.b_scale, ft, n))
        form |= 8;
    else
        return -1;
    if (!dynamic && qmm_tensor_present(v.a_zp)) {
        if (v.a_zp->dtype != v.a->dtype || !same_shape(v.a_zp, v.a_scale))
            return -1;
        form |= 0x10;
    }
    if (qmm_tensor_present(v.b_zp)) {
        if (v.b_zp->dtype != v.b->dtype || !same_shape(v.b_zp, v.b_scale))
            return -1;
        form |= 0x20;
    }
    if (qmm_tensor_present(v.bias)) {
        if (!vector_of(v.bias, ft, n))
            return -1;
        form |= 0x40;
    }
    put(k, form);
    put(k, scalars);
    write_shapes(k, v.a, v.b);
    if (!dynamic) {
        write_scales(k, v.a_scale);
        if (qmm_tensor_present(v.a_zp))
            write_zps(k, v.a_zp);
    }
    write_scales(k, v.b_scale);
    if (qmm_tensor_present(v.b_zp))
        write_zps(k, v.b_zp);
    if (qmm_tensor_present(v.bias))
        write_scales(k, v.bias);
    put(k, dynamic ? FLOAT_DATA_RAW : 0u);
    put(k, 0);
    if (dynamic)
        write_bytes(k, v.a);
    else
        write_data(k, v.a);
    write_data(k, v.b);
    return 0;
}

/* The encoders on one signature, for the codec table. */
static int encode_qlm_call(sink *k, const qmm_call *c) { return encode_qlinearmatmul(k, &c->u.qlinearmatmul); }
static int encode_mmi_call(sink *k, const qmm_call *c) { return encode_matmulinteger(k, &c->u.matmulinteger); }
static int encode_qom_call(sink *k, const qmm_call *c) { return encode_qorderedmatmul(k, &c->u.qorderedmatmul); }
static int encode_mnb_call(sink *k, const qmm_call *c) { return encode_matmulnbits(k, &c->u.matmulnbits); }
static int encode_dql_call(sink *k, const qmm_call *c) { return encode_dequantizelinear(k, &c->u.dequantizelinear); }

/* One row per operator: its byte format's decoder and encoder (the formats differ, so this is
 * which code runs, not a description of the operator; that is ops/operator.h).
 *
 * Tail layouts, in the order they are consumed (the first byte is the input's last byte):
 *   QLinearMatMul  types, [twist], shape section, params(a), params(b), params(y), data modes
 *   MatMulInteger  types, [twist], shape section, [params(a_zp)], [params(b_zp)], data modes
 *   QOrderedMatMul form (orders, bias, C, per-column scale_B), [twist + its bytes], layout
 *                  (batches of A, B, C), scalar shapes, dims of M, K, N, [batch], scales of
 *                  A, B, Y, [C], [bias], data modes of A, B, [C]
 *   shape section  form byte, dims of M, K, N (a "dim byte" each: small values most of the
 *                  time, a table of tile boundaries, zero, or explicit values), batch dims
 *   params(x)      scale shape, zero-point shape, scale family + values, zero-point mode + values
 *   MatMulNBits    form (bits, T1, bias, zero-point form), [twist + argument], block (block_size,
 *                  accuracy_level, flat scales / zero points), shape (A's rank, g_idx, K's form),
 *                  dims of M, K, N, [batch], scales, [zero points], [bias], [g_idx], data modes
 *                  of A and B
 *   DequantizeLinear  form (x's type, scale type, zero point), [twist + argument], attributes
 *                  (parameter form, opset, output_dtype), rank, x's dims, axis, [block_size],
 *                  scales, [zero point], x's data mode
 *   DynamicQuantizeMatMul, MatMulIntegerToFloat  form (types, per-column b_scale, zero points,
 *                  bias), [twist + argument], scalar shapes, shape section, [a_scale,
 *                  a_zero_point], b_scale, [b_zero_point], [bias], data modes of A and B
 */
typedef struct codec {
    qmm_op_kind op;
    qh_fz_decoder decode;
    int (*encode)(sink *k, const qmm_call *c);
} codec;

static const codec codecs[] = {
    {QMM_OP_QLINEARMATMUL, decode_qlinearmatmul, encode_qlm_call},
    {QMM_OP_MATMULINTEGER, decode_matmulinteger, encode_mmi_call},
    {QMM_OP_QORDEREDMATMUL, decode_qorderedmatmul, encode_qom_call},
    {QMM_OP_MATMULNBITS, decode_matmulnbits, encode_mnb_call},
    {QMM_OP_DEQUANTIZELINEAR, decode_dequantizelinear, encode_dql_call},
    {QMM_OP_DYNAMICQUANTIZEMATMUL, decode_dynamicquantizematmul, encode_i2f},
    {QMM_OP_MATMUL_INTEGER_TO_FLOAT, decode_matmul_integer_to_float, encode_i2f},
};

static const codec *codec_of(qmm_op_kind op)
{
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        if (codecs[i].op == op)
            return &codecs[i];
    return NULL;
}

qh_fz_decoder qh_fz_decoder_of(qmm_op_kind op)
{
    const codec *c = codec_of(op);
    return c ? c->decode : NULL;
}

int qh_fz_encode(const qmm_call *call, int64_t opset, uint8_t **out, size_t *len)
{
    sink k;
    memset(&k, 0, sizeof k);
    *out = NULL;
    *len = 0;
    const codec *cd = codec_of(call->op);
    int rc = -1;
    if (cd) {
        /* the node's opset, where the call keeps one, is the one the bytes say */
        qmm_call c = *call;
        const qmm_op_desc *d = qmm_call_desc(&c);
        if (d->opset_offset >= 0)
            *(int32_t *)((char *)&c + d->opset_offset) = (int32_t)opset;
        rc = cd->encode(&k, &c);
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
    size_t bytes = qmm_dtype_bytes(x->dtype, qmm_tensor_numel(x)); /* sub-byte types packed */
    return bytes == 0 || memcmp(x->data, y->data, bytes) == 0;
}

int qh_fz_same_call(const qmm_call *x, int64_t x_opset, const qmm_call *y, int64_t y_opset)
{
    const qmm_op_desc *d = qmm_call_desc(x);
    if (!d || x->op != y->op)
        return 0;
    /* two opsets are the same problem when the type rule does not tell them apart
     * (QLinearMatMul 10 and 13 alike; 21 differs) */
    for (int32_t i = 0; i < d->n_inputs; i++)
        if (d->input_types((int32_t)x_opset, i) != d->input_types((int32_t)y_opset, i) ||
            !same_tensor(qmm_call_input_c(x, i), qmm_call_input_c(y, i)))
            return 0;
    for (int32_t i = 0; i < d->n_attrs; i++)
        if (qmm_call_attr_value(x, i) != qmm_call_attr_value(y, i))
            return 0;
    return 1;
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
