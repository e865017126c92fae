/* optimized/cpu/nbits.c — MatMulNBits (com.microsoft, docs/semantics.md §8) in the optimized
 * backend: validation is the reference's (qmm_validate_matmulnbits); float T1 only.
 *
 * Work is split by panels of NB_PANEL columns of Y, one pool task each. A task unpacks its
 * columns' codes to one byte per k (SSE2, baseline), then either
 * - the float path (accuracy_level 0..3, float zero points, g_idx, or level 4 when the int8
 *   path does not apply): b̂ = RN32((q - zp)·s) per block (RN32(RN32(q - zp)·s) for float zero
 *   points), the `dequantize-first` model exactly, then dot products with A's rows (any order,
 *   FMA: the bound of §8.4), then + bias; or
 * - the int8 path (accuracy_level 4, integer zero points, no g_idx): A quantized once per call
 *   per row and block of min(block_size, 256) k as §8.3's x86 model says (sa = RN32(m/127),
 *   qa = RNE(RN32(a · RN32(127/m)))), exact integer block sums Σ qa·q (u8·s8: VNNI vpdpbusd
 *   or AVX2 vpmaddwd on widened words, no saturating step), the zero point as
 *   - zp·Σqa, then the float tail y += RN32(float(isum)·sa)·s per block, + bias: the
 *   `int8-a-block-B` model (int8-a-block-256 above 256) within its bound.
 */
#include <emmintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/qmm_ops.h"
#include "optimized/cpu/nbits_internal.h"
#include "optimized/cpu/opt_internal.h"

#define NB_PANEL 16

/* ---- the portable kernels ---- */

static void dot_f32_portable(size_t rows, size_t kp, const float *const a[4],
                             const float *const b[4], float out[16])
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < 4; c++) {
            float s = 0.0f;
            for (size_t k = 0; k < kp; k++)
                s += a[r][k] * b[c][k];
            out[r * 4 + c] = s;
        }
}

static void deq_portable(const uint8_t *codes, size_t len, int32_t zp, float s, float *b)
{
    for (size_t k = 0; k < len; k++)
        b[k] = (float)((int32_t)codes[k] - zp) * s;
}

static void bsum_portable(const int8_t *qa, const uint8_t *codes, size_t nblk, size_t ab,
                          int32_t *isum)
{
    for (size_t g = 0; g < nblk; g++) {
        int32_t s = 0;
        for (size_t t = 0; t < ab; t++)
            s += (int32_t)qa[g * ab + t] * (int32_t)codes[g * ab + t];
        isum[g] = s;
    }
}

const qmm_nb_kernels qmm_nb_portable = {"portable", dot_f32_portable, deq_portable,
                                        bsum_portable};

/* The kernels for the backend's variant: the AVX-512 ones where the variant runs AVX-512 VNNI
 * (avx512vnni, amx), AVX2 for avx2 and avxvnni, portable for scalar. */
static const qmm_nb_kernels *kernels_for(const qmm_opt_variant *v)
{
#if defined(__x86_64__)
    if (!strcmp(v->name, "avx512vnni") || !strcmp(v->name, "amx"))
        return &qmm_nb_avx512;
    if (!strcmp(v->name, "avx2") || !strcmp(v->name, "avxvnni"))
        return &qmm_nb_avx2;
#endif
    (void)v;
    return &qmm_nb_portable;
}

/* ---- unpacking codes: one byte per k, k in order (SSE2) ---- */

/* codes[0 .. count) of the low-bits-first stream at src (count a multiple of 8/bits·16 where
 * the SIMD loop runs; the rest byte by byte). */
static void unpack_codes(const uint8_t *src, size_t count, int bits, uint8_t *dst)
{
    size_t i = 0, nbytes = count * (size_t)bits / 8;
    if (bits == 8) {
        memcpy(dst, src, count);
        return;
    }
    if (bits == 4) {
        const __m128i m = _mm_set1_epi8(0x0f);
        for (; i + 16 <= nbytes; i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(src + i));
            __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
            _mm_storeu_si128((__m128i *)(dst + 2 * i), _mm_unpacklo_epi8(lo, hi));
            _mm_storeu_si128((__m128i *)(dst + 2 * i + 16), _mm_unpackhi_epi8(lo, hi));
        }
        for (; i < nbytes; i++) {
            dst[2 * i] = src[i] & 15;
            dst[2 * i + 1] = src[i] >> 4;
        }
        return;
    }
    const __m128i m = _mm_set1_epi8(3);
    for (; i + 16 <= nbytes; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i p0 = _mm_and_si128(x, m), p1 = _mm_and_si128(_mm_srli_epi16(x, 2), m);
        __m128i p2 = _mm_and_si128(_mm_srli_epi16(x, 4), m);
        __m128i p3 = _mm_and_si128(_mm_srli_epi16(x, 6), m);
        __m128i l01 = _mm_unpacklo_epi8(p0, p1), l23 = _mm_unpacklo_epi8(p2, p3);
        __m128i h01 = _mm_unpackhi_epi8(p0, p1), h23 = _mm_unpackhi_epi8(p2, p3);
        uint8_t *d = dst + 4 * i;
        _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(l01, l23));
        _mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(l01, l23));
        _mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(h01, h23));
        _mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(h01, h23));
    }
    for (; i < nbytes; i++)
        for (int p = 0; p < 4; p++)
            dst[4 * i + (size_t)p] = (uint8_t)((src[i] >> (2 * p)) & 3);
}

/* ---- the call ---- */

typedef struct nb_job {
    const qmm_matmulnbits *c;
    const qmm_nbits_plan *p;
    const qmm_nb_kernels *kr;
    size_t rows, k, n, kb, bs, kc; /* kc: buffer length per column (>= kb*bs, K padded) */
    size_t kd;                     /* K padded to QMM_NB_KPAD: the float rows' length */
    size_t kq;                     /* the int8 rows' length: whole A blocks, padded */
    int int8;                      /* the level-4 int8 path */
    const float *a;                /* float path: rows x kc, zero past K */
    const int8_t *qa;              /* int8 path: rows x kc */
    const float *sa;               /* rows x nab */
    const int32_t *asum;           /* rows x nab */
    size_t ab, nab;
    const float *scales, *bias;
    float *y;
    uint8_t *scratch; /* per worker: ws_size bytes */
    size_t ws_size;
} nb_job;

static size_t round_up(size_t v, size_t m)
{
    return (v + m - 1) / m * m;
}

/* Column n's zero point of block b as an integer (default or packed). */
static int32_t zp_int(const nb_job *J, size_t n, size_t b)
{
    const qmm_nbits_plan *p = J->p;
    if (p->zp_form != QMM_NBITS_ZP_PACKED)
        return 1 << (p->bits - 1);
    size_t bit = b * (size_t)p->bits;
    const uint8_t *row = (const uint8_t *)J->c->zero_points.data + n * (size_t)p->zp_row;
    return (row[bit / 8] >> (bit % 8)) & ((1 << p->bits) - 1);
}

/* b̂ of column n into bh[0 .. kc), zero past K. */
static void dequantize_column(const nb_job *J, size_t n, const uint8_t *codes, float *bh)
{
    const qmm_nbits_plan *p = J->p;
    const float *s = J->scales + n * J->kb;
    int has_g = qmm_tensor_present(&J->c->g_idx);
    if (p->zp_form == QMM_NBITS_ZP_FLOAT || has_g) {
        const float *zf = p->zp_form == QMM_NBITS_ZP_FLOAT
                              ? (const float *)J->c->zero_points.data + n * J->kb
                              : NULL;
        for (size_t k = 0; k < J->k; k++) {
            size_t b = has_g ? (size_t)qmm_nbits_block(&J->c->g_idx, p, (int64_t)k) : k / J->bs;
            if (zf) {
                volatile float d = (float)codes[k] - zf[b];
                bh[k] = d * s[b];
            } else {
                bh[k] = (float)((int32_t)codes[k] - zp_int(J, n, b)) * s[b];
            }
        }
    } else {
        for (size_t b = 0; b < J->kb; b++)
            J->kr->deq(codes + b * J->bs, J->bs, zp_int(J, n, b), s[b], bh + b * J->bs);
    }
    memset(bh + J->k, 0, (J->kc - J->k) * sizeof *bh);
}

static void task_float(const nb_job *J, size_t j0, size_t nc, const uint8_t *codes, float *bh)
{
    for (size_t c = 0; c < nc; c++)
        dequantize_column(J, j0 + c, codes + c * J->kc, bh + c * J->kc);
    for (size_t c0 = 0; c0 < nc; c0 += 4) {
        const float *b[4];
        for (size_t c = 0; c < 4; c++)
            b[c] = bh + (c0 + c < nc ? c0 + c : c0) * J->kc;
        for (size_t r0 = 0; r0 < J->rows; r0 += 4) {
            size_t rows = J->rows - r0 < 4 ? J->rows - r0 : 4;
            const float *a[4];
            for (size_t r = 0; r < 4; r++)
                a[r] = J->a + (r0 + (r < rows ? r : 0)) * J->kd;
            float out[16];
            J->kr->dot_f32(rows, J->kd, a, b, out);
            for (size_t r = 0; r < rows; r++)
                for (size_t c = 0; c < 4 && c0 + c < nc; c++) {
                    size_t j = j0 + c0 + c;
                    float v = out[r * 4 + c];
                    if (J->bias)
                        v += J->bias[j];
                    J->y[(r0 + r) * J->n + j] = v;
                }
        }
    }
}

static void task_int8(const nb_job *J, size_t j0, size_t nc, const uint8_t *codes,
                      int32_t *isum, int32_t *zps)
{
    size_t per = J->bs / J->ab; /* a blocks per weight block */
    for (size_t c = 0; c < nc; c++) {
        size_t j = j0 + c;
        const float *s = J->scales + j * J->kb;
        for (size_t b = 0; b < J->kb; b++)
            zps[b] = zp_int(J, j, b);
        for (size_t r = 0; r < J->rows; r++) {
            J->kr->bsum(J->qa + r * J->kq, codes + c * J->kc, J->nab, J->ab, isum);
            const float *sa = J->sa + r * J->nab;
            const int32_t *as = J->asum + r * J->nab;
            float acc = 0.0f;
            for (size_t g = 0; g < J->nab; g++) {
                size_t b = g / per;
                /* (isum·sa)·s, not isum·(sa·s): a subnormal sa·s would carry its
                 * underflow error times isum, outside the bound's 2Kη (§8.4) */
                float v = (float)(isum[g] - zps[b] * as[g]) * sa[g];
                acc += v * s[b];
            }
            if (J->bias)
                acc += J->bias[j];
            J->y[r * J->n + j] = acc;
        }
    }
}

static void nb_task(void *ctx, size_t t, int worker)
{
    const nb_job *J = ctx;
    size_t j0 = t * NB_PANEL, nc = J->n - j0 < NB_PANEL ? J->n - j0 : NB_PANEL;
    uint8_t *ws = J->scratch + (size_t)worker * J->ws_size;
    uint8_t *codes = ws;
    const uint8_t *b = J->c->b.data;
    size_t col_bytes = J->kb * (size_t)J->p->blob_size;
    for (size_t c = 0; c < nc; c++) {
        uint8_t *d = codes + c * J->kc;
        unpack_codes(b + (j0 + c) * col_bytes, J->kb * J->bs, J->p->bits, d);
        memset(d + J->k, 0, J->kc - J->k);
    }
    void *rest = ws + round_up((J->n < NB_PANEL ? J->n : NB_PANEL) * J->kc, 64);
    if (J->int8)
        task_int8(J, j0, nc, codes, rest, (int32_t *)rest + round_up(J->nab, 16));
    else
        task_float(J, j0, nc, codes, rest);
}

/* Level 4's activation quantization of row r (docs/semantics.md §8.3). */
static void quantize_row(const float *a, size_t k, size_t ab, size_t nab, int8_t *qa, float *sa,
                         int32_t *asum)
{
    for (size_t g = 0; g < nab; g++) {
        size_t s0 = g * ab, len = k - s0 < ab ? k - s0 : ab;
        float m = 0.0f;
        for (size_t t = 0; t < len; t++)
            m = fmaxf(m, fabsf(a[s0 + t]));
        volatile float scale = m / 127.0f;
        volatile float inv = m != 0.0f ? 127.0f / m : 0.0f;
        float r = inv;
        int32_t sum = 0;
        for (size_t t = 0; t < ab; t++) {
            int32_t q = 0;
            if (t < len) {
                /* |a·r| <= 127 up to rounding; a NaN or infinite a (which the reference
                 * leaves inconclusive) gives 0, never an undefined conversion */
                float pr = nearbyintf(a[s0 + t] * r);
                q = pr >= -127.0f && pr <= 127.0f ? (int32_t)pr : 0;
            }
            qa[s0 + t] = (int8_t)q;
            sum += q;
        }
        sa[g] = scale;
        asum[g] = sum;
    }
}

const char *qmm_opt_matmulnbits_unsupported(const qmm_matmulnbits *c)
{
    if (c->a.dtype == QMM_DTYPE_FLOAT16 || c->a.dtype == QMM_DTYPE_BFLOAT16)
        return "MatMulNBits with a float16/bfloat16 T1: float only here";
    return NULL;
}

qmm_status_code qmm_opt_matmulnbits(const qmm_opt_backend *ob, const qmm_matmulnbits *c,
                                    qmm_status *st)
{
    qmm_nbits_plan p;
    QMM_TRY(qmm_validate_matmulnbits(c, &p, st));
    const char *why = qmm_opt_matmulnbits_unsupported(c);
    if (why)
        return qmm_status_because(st, QMM_UNSUPPORTED, ob->name, why);
    if (p.rows == 0 || p.n == 0)
        return qmm_status_ok(st);
    nb_job J = {.c = c, .p = &p, .kr = kernels_for(ob->v)};
    J.rows = (size_t)p.rows;
    J.k = (size_t)p.k;
    J.n = (size_t)p.n;
    J.kb = (size_t)p.k_blocks;
    J.bs = (size_t)p.block_size;
    J.kc = round_up(J.kb * J.bs > J.k ? J.kb * J.bs : J.k, QMM_NB_KPAD);
    /* A's copy is K padded to 64, not to whole blocks: a short K with a large block must not
     * multiply the memory A takes (K 1, block 1024: 64 floats a row, not 1024) */
    J.kd = round_up(J.k, QMM_NB_KPAD);
    J.int8 = p.level == 4 && p.zp_form != QMM_NBITS_ZP_FLOAT && !qmm_tensor_present(&c->g_idx);
    J.scales = c->scales.data;
    J.bias = qmm_tensor_present(&c->bias) ? c->bias.data : NULL;
    J.y = c->y.data;
    const float *a = c->a.data;
    void *abuf = NULL, *sbuf = NULL;
    int threads = qmm_opt_pool_threads(ob->pool);
    size_t pc = J.n < NB_PANEL ? J.n : NB_PANEL; /* columns a task holds: fewer when N is */
    if (J.int8) {
        J.ab = J.bs < 256 ? J.bs : 256;
        J.nab = (J.k + J.ab - 1) / J.ab;
        J.kq = round_up(J.nab * J.ab, QMM_NB_KPAD);
        abuf = aligned_alloc(64, round_up(J.rows * J.kq, 64));
        sbuf = malloc(J.rows * J.nab * (sizeof(float) + sizeof(int32_t)));
        if (abuf && sbuf) {
            int8_t *qa = abuf;
            float *sa = sbuf;
            int32_t *asum = (int32_t *)(sa + J.rows * J.nab);
            for (size_t r = 0; r < J.rows; r++) {
                quantize_row(a + r * J.k, J.k, J.ab, J.nab, qa + r * J.kq, sa + r * J.nab,
                             asum + r * J.nab);
                memset(qa + r * J.kq + J.nab * J.ab, 0, J.kq - J.nab * J.ab);
            }
            J.qa = qa;
            J.sa = sa;
            J.asum = asum;
        }
        J.ws_size = round_up(pc * J.kc, 64) + 4 * round_up(J.nab, 16) + 4 * J.kb + 64;
    } else {
        abuf = aligned_alloc(64, round_up(J.rows * J.kd * sizeof(float), 64));
        if (abuf) {
            float *ap = abuf;
            for (size_t r = 0; r < J.rows; r++) {
                memcpy(ap + r * J.kd, a + r * J.k, J.k * sizeof *ap);
                memset(ap + r * J.kd + J.k, 0, (J.kd - J.k) * sizeof *ap);
            }
            J.a = ap;
        }
        J.ws_size = round_up(pc * J.kc, 64) + pc * J.kc * sizeof(float);
    }
    J.ws_size = round_up(J.ws_size, 64);
    J.scratch = aligned_alloc(64, J.ws_size * (size_t)threads);
    qmm_status_code rc = QMM_OK;
    if (!abuf || (J.int8 && !sbuf) || !J.scratch)
        rc = qmm_status_oom(st, ob->name, "for MatMulNBits scratch");
    else {
        qmm_opt_pool_run(ob->pool, (J.n + NB_PANEL - 1) / NB_PANEL, nb_task, &J);
        qmm_status_ok(st);
    }
    free(abuf);
    free(sbuf);
    free(J.scratch);
    return rc;
}
