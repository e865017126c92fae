/* optimized/cpu/pack.c — operand packing into the microkernels' layouts (opt_internal.h).
 *
 * B is the big operand for most shapes and is packed on every call unless prepacked, so its
 * full panels go through SSE2 byte interleaves (SSE2 is baseline x86-64, so this file needs no
 * special flags); edges and other targets take the plain element loop, which defines the
 * layout.
 */
#include <string.h>

#include "optimized/cpu/opt_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The int8 value B' the kernels see: uint8 b is shifted by -128 (flipping the top bit). */
static inline int8_t b_prime(const uint8_t *b, size_t idx, uint8_t flip)
{
    return (int8_t)(uint8_t)(b[idx] ^ flip);
}

/* sum_k (a[k] - z) mod 2^32, as a sum of bytes less k*z. An int8 byte is read as its uint8
 * image (a ^ 0x80 = a + 128), so the sum is the unsigned one less 128 per byte. The SSE2 path
 * adds 16 bytes at a time with PSADBW against zero (two 64-bit lane sums, exact: at most 255
 * per byte); a plain byte loop was 80% of packing A (perf, 128x768x768, Zen 4). */
static uint32_t row_sum(const uint8_t *src, size_t k, int a_signed, int32_t z)
{
    uint8_t flip = a_signed ? 0x80 : 0;
    uint64_t sum = 0;
    size_t kk = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128(), vflip = _mm_set1_epi8((char)flip);
    __m128i acc = zero;
    for (; kk + 16 <= k; kk += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(src + kk));
        acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_xor_si128(x, vflip), zero));
    }
    uint64_t lanes[2];
    _mm_storeu_si128((__m128i *)(void *)lanes, acc);
    sum = lanes[0] + lanes[1];
#endif
    for (; kk < k; kk++)
        sum += (uint8_t)(src[kk] ^ flip);
    uint32_t s = (uint32_t)sum - (a_signed ? 128u * (uint32_t)k : 0u);
    return s - (uint32_t)k * (uint32_t)z;
}

/* Group word t of one row: the int16 pair (a - z) or the uint8 quad a' = a (+128 for int8);
 * k values past the row's end are 0 (pairs) or a' = 0 (quads), which adds nothing. */
static inline uint32_t a_word(const uint8_t *src, size_t k, size_t t, int a_signed, int32_t z,
                              int kg)
{
    uint32_t w = 0;
    if (kg == 2) {
        for (size_t q = 0; q < 2; q++) {
            size_t kk = 2 * t + q;
            if (kk < k) {
                int32_t x = a_signed ? (int32_t)(int8_t)src[kk] : (int32_t)src[kk];
                w |= ((uint32_t)(x - z) & 0xffffu) << (16 * q);
            }
        }
        return w;
    }
    uint8_t flip = a_signed ? 0x80 : 0;
    for (size_t q = 0; q < 4; q++) {
        size_t kk = 4 * t + q;
        if (kk < k)
            w |= (uint32_t)(uint8_t)(src[kk] ^ flip) << (8 * q);
    }
    return w;
}

/* What qmm_opt_pack_a leaves to its vector blocks' caller: in each row group, rows
 * [0, in_group / row_quantum * row_quantum) x K groups [0, done_t) are packed already (every
 * other word is packed here, and every row sum taken). */
void qmm_opt_pack_a_rest(const qmm_opt_layout *L, const uint8_t *a, size_t lda, int a_signed,
                         size_t rows, size_t k, const int32_t *za, size_t kgroups, int32_t *dst,
                         int32_t *rowsum, size_t row_quantum, size_t done_t)
{
    int mr = L->mr, kg = L->kg;
    size_t full = k / (size_t)kg; /* groups with every k inside the row */
    size_t groups = (rows + (size_t)mr - 1) / (size_t)mr;
    uint32_t flip4 = a_signed ? 0x80808080u : 0;
    for (size_t g = 0; g < groups; g++) {
        int32_t *gd = dst + g * kgroups * (size_t)mr;
        size_t in_group = rows - g * (size_t)mr < (size_t)mr ? rows - g * (size_t)mr : (size_t)mr;
        size_t done_rows = in_group / row_quantum * row_quantum;
        for (int r = 0; r < mr; r++) {
            size_t row = g * (size_t)mr + (size_t)r;
            int32_t *col = gd + r;
            if (row >= rows) {
                for (size_t t = 0; t < kgroups; t++)
                    col[t * (size_t)mr] = 0;
                continue;
            }
            const uint8_t *src = a + row * lda;
            int32_t z = za[row];
            if (rowsum)
                rowsum[row] = (int32_t)row_sum(src, k, a_signed, z);
            size_t t = (size_t)r < done_rows ? done_t : 0; /* the groups done by the caller */
            if (kg == 4) {
                for (; t < full; t++) {
                    uint32_t w;
                    memcpy(&w, src + 4 * t, 4); /* little-endian: byte q is k = 4t + q */
                    col[t * (size_t)mr] = (int32_t)(w ^ flip4);
                }
            } else {
                for (; t < full; t++) {
                    int32_t x0 = a_signed ? (int32_t)(int8_t)src[2 * t] : (int32_t)src[2 * t];
                    int32_t x1 = a_signed ? (int32_t)(int8_t)src[2 * t + 1]
                                          : (int32_t)src[2 * t + 1];
                    col[t * (size_t)mr] = (int32_t)(((uint32_t)(x0 - z) & 0xffffu) |
                                                    (((uint32_t)(x1 - z) & 0xffffu) << 16));
                }
            }
            for (; t < kgroups; t++)
                col[t * (size_t)mr] = (int32_t)a_word(src, k, t, a_signed, z, kg);
        }
    }
}

void qmm_opt_pack_a(const qmm_opt_layout *L, const uint8_t *a, size_t lda, int a_signed,
                    size_t rows, size_t k, const int32_t *za, size_t kgroups, int32_t *dst,
                    int32_t *rowsum)
{
    size_t tq = 0;
#if defined(__SSE2__)
    /* quads: rows in fours, 16 bytes of each (4 groups) transposed at once */
    int mr = L->mr;
    if (L->kg == 4) {
        size_t full = k / 4, groups = (rows + (size_t)mr - 1) / (size_t)mr;
        tq = full / 4 * 4;
        const __m128i vflip = _mm_set1_epi32((int)(a_signed ? 0x80808080u : 0));
        for (size_t g = 0; g < groups; g++) {
            int32_t *gd = dst + g * kgroups * (size_t)mr;
            size_t in_group = rows - g * (size_t)mr < (size_t)mr ? rows - g * (size_t)mr
                                                                 : (size_t)mr;
            for (size_t r0 = 0; r0 < in_group / 4 * 4; r0 += 4) {
                const uint8_t *s0 = a + (g * (size_t)mr + r0) * lda;
                for (size_t t = 0; t < tq; t += 4) {
                    __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(s0 + 4 * t));
                    __m128i x1 =
                        _mm_loadu_si128((const __m128i *)(const void *)(s0 + lda + 4 * t));
                    __m128i x2 =
                        _mm_loadu_si128((const __m128i *)(const void *)(s0 + 2 * lda + 4 * t));
                    __m128i x3 =
                        _mm_loadu_si128((const __m128i *)(const void *)(s0 + 3 * lda + 4 * t));
                    __m128i l01 = _mm_unpacklo_epi32(x0, x1), h01 = _mm_unpackhi_epi32(x0, x1);
                    __m128i l23 = _mm_unpacklo_epi32(x2, x3), h23 = _mm_unpackhi_epi32(x2, x3);
                    __m128i w[4] = {_mm_unpacklo_epi64(l01, l23), _mm_unpackhi_epi64(l01, l23),
                                    _mm_unpacklo_epi64(h01, h23), _mm_unpackhi_epi64(h01, h23)};
                    for (size_t q = 0; q < 4; q++)
                        _mm_storeu_si128((__m128i *)(void *)(gd + (t + q) * (size_t)mr + r0),
                                         _mm_xor_si128(w[q], vflip));
                }
            }
        }
    }
    /* pairs: rows in twos, 16 bytes of each (8 int16 pairs a - z) at once; the words of the
     * two rows interleaved, so that each k pair's two words go out in one 8-byte store
     * (before: a scalar loop, 3.4% of the samples of a 1024^3 T = 1 call with QMM_ISA=avx2,
     * Zen 5) */
    if (L->kg == 2) {
        size_t full = k / 2, groups = (rows + (size_t)mr - 1) / (size_t)mr;
        tq = full / 8 * 8;
        const __m128i zero = _mm_setzero_si128();
        for (size_t g = 0; g < groups; g++) {
            int32_t *gd = dst + g * kgroups * (size_t)mr;
            size_t in_group = rows - g * (size_t)mr < (size_t)mr ? rows - g * (size_t)mr
                                                                 : (size_t)mr;
            for (size_t r0 = 0; r0 < in_group / 2 * 2; r0 += 2) {
                size_t row = g * (size_t)mr + r0;
                const uint8_t *s0 = a + row * lda;
                const __m128i z0 = _mm_set1_epi16((short)za[row]);
                const __m128i z1 = _mm_set1_epi16((short)za[row + 1]);
                for (size_t t = 0; t < tq; t += 8) {
                    __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(s0 + 2 * t));
                    __m128i x1 =
                        _mm_loadu_si128((const __m128i *)(const void *)(s0 + lda + 2 * t));
                    /* int16 values: zero-extended, or sign-extended (int8: the byte in the
                     * high half, shifted down arithmetically) */
                    __m128i l0 = a_signed ? _mm_srai_epi16(_mm_unpacklo_epi8(x0, x0), 8)
                                          : _mm_unpacklo_epi8(x0, zero);
                    __m128i h0 = a_signed ? _mm_srai_epi16(_mm_unpackhi_epi8(x0, x0), 8)
                                          : _mm_unpackhi_epi8(x0, zero);
                    __m128i l1 = a_signed ? _mm_srai_epi16(_mm_unpacklo_epi8(x1, x1), 8)
                                          : _mm_unpacklo_epi8(x1, zero);
                    __m128i h1 = a_signed ? _mm_srai_epi16(_mm_unpackhi_epi8(x1, x1), 8)
                                          : _mm_unpackhi_epi8(x1, zero);
                    /* a - z modulo 2^16: the word's halves (pairs 0-3 in l, 4-7 in h) */
                    l0 = _mm_sub_epi16(l0, z0), h0 = _mm_sub_epi16(h0, z0);
                    l1 = _mm_sub_epi16(l1, z1), h1 = _mm_sub_epi16(h1, z1);
                    __m128i w[4] = {_mm_unpacklo_epi32(l0, l1), _mm_unpackhi_epi32(l0, l1),
                                    _mm_unpacklo_epi32(h0, h1), _mm_unpackhi_epi32(h0, h1)};
                    for (size_t q = 0; q < 4; q++) {
                        int32_t *o = gd + (t + 2 * q) * (size_t)mr + r0;
                        _mm_storel_epi64((__m128i *)(void *)o, w[q]);
                        _mm_storel_epi64((__m128i *)(void *)(o + mr), _mm_unpackhi_epi64(w[q], w[q]));
                    }
                }
            }
        }
        qmm_opt_pack_a_rest(L, a, lda, a_signed, rows, k, za, kgroups, dst, rowsum, 2, tq);
        return;
    }
#endif
    qmm_opt_pack_a_rest(L, a, lda, a_signed, rows, k, za, kgroups, dst, rowsum, 4, tq);
}

void qmm_opt_pack_a_tiles(const qmm_opt_layout *L, const uint8_t *a, size_t lda, int a_signed,
                          size_t rows, size_t k, const int32_t *za, size_t kgroups,
                          int32_t *dst, int32_t *rowsum)
{
    int mr = L->mr;
    size_t ktiles = kgroups / 16, full = k / 64, groups = (rows + (size_t)mr - 1) / (size_t)mr;
    uint8_t flip = a_signed ? 0x80 : 0;
    for (size_t g = 0; g < groups; g++) {
        uint8_t *gd = (uint8_t *)(dst + g * kgroups * (size_t)mr);
        for (size_t r = 0; r < (size_t)mr; r++) {
            size_t row = g * (size_t)mr + r;
            uint8_t *o = gd + r * 64;
            size_t ostride = (size_t)mr * 64; /* from one K tile of the row to the next */
            if (row >= rows) {
                for (size_t t = 0; t < ktiles; t++)
                    memset(o + t * ostride, 0, 64);
                continue;
            }
            const uint8_t *src = a + row * lda;
            if (rowsum)
                rowsum[row] = (int32_t)row_sum(src, k, a_signed, za[row]);
            size_t t = 0;
#if defined(__SSE2__)
            const __m128i vflip = _mm_set1_epi8((char)flip);
            for (; t < full; t++)
                for (size_t q = 0; q < 64; q += 16)
                    _mm_storeu_si128((__m128i *)(void *)(o + t * ostride + q),
                                     _mm_xor_si128(_mm_loadu_si128((const __m128i *)(
                                                       const void *)(src + 64 * t + q)),
                                                   vflip));
#endif
            for (; t < ktiles; t++)
                for (size_t q = 0; q < 64; q++) {
                    size_t kk = 64 * t + q;
                    o[t * ostride + q] = kk < k ? (uint8_t)(src[kk] ^ flip) : 0;
                }
        }
    }
}

/* The defining element loop for one panel (columns j0 .. j0+nr-1, any of them past n). */
static void pack_b_panel_generic(const uint8_t *b, size_t ldb, uint8_t flip, size_t k,
                                 size_t kgroups, size_t n, size_t j0, int nr, int kg,
                                 int8_t *dst)
{
    for (size_t t = 0; t < kgroups; t++)
        for (int c = 0; c < nr; c++)
            for (int q = 0; q < kg; q++) {
                size_t kk = t * (size_t)kg + (size_t)q, j = j0 + (size_t)c;
                int8_t v = (kk < k && j < n) ? b_prime(b, kk * ldb + j, flip) : 0;
                dst[(t * (size_t)nr + (size_t)c) * (size_t)kg + (size_t)q] = v;
            }
}

/* The defining element loop of the "unsigned words" layout (nr 16, kg 2), one panel. */
static void pack_b_panel_uw_generic(const uint8_t *b, size_t ldb, uint8_t flip, size_t k,
                                    size_t n, size_t j0, int8_t *dst)
{
    size_t kpairs = (k + 1) / 2;
    for (size_t t = 0; t < kpairs; t++)
        for (size_t l = 0; l < 8; l++)
            for (size_t q = 0; q < 4; q++) {
                size_t kk = 2 * t + q / 2, j = j0 + l + 8 * (q % 2);
                uint8_t v = (kk < k && j < n) ? (uint8_t)(b[kk * ldb + j] ^ flip) : 0;
                dst[32 * t + 4 * l + q] = (int8_t)v;
            }
}

#if defined(__SSE2__)
/* A full "unsigned words" panel (16 columns inside n). Rows past k read as 0. */
static void pack_b_panel_uw_sse2(const uint8_t *b, size_t ldb, uint8_t flip, size_t k,
                                 size_t j0, int8_t *dst)
{
    size_t kpairs = (k + 1) / 2;
    const __m128i vflip = _mm_set1_epi8((char)flip);
    for (size_t t = 0; t < kpairs; t++) {
        size_t k0 = 2 * t, k1 = 2 * t + 1;
        __m128i r0 = _mm_xor_si128(
            _mm_loadu_si128((const __m128i *)(const void *)(b + k0 * ldb + j0)), vflip);
        __m128i r1 = k1 < k ? _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(
                                                b + k1 * ldb + j0)),
                                            vflip)
                            : _mm_setzero_si128();
        /* words (r[l], r[l+8]) for l < 8, then dwords (row 2t word, row 2t+1 word) */
        __m128i x0 = _mm_unpacklo_epi8(r0, _mm_srli_si128(r0, 8));
        __m128i x1 = _mm_unpacklo_epi8(r1, _mm_srli_si128(r1, 8));
        _mm_storeu_si128((__m128i *)(void *)(dst + 32 * t), _mm_unpacklo_epi16(x0, x1));
        _mm_storeu_si128((__m128i *)(void *)(dst + 32 * t + 16), _mm_unpackhi_epi16(x0, x1));
    }
}

/* A full panel (all nr columns inside n) with nr a multiple of 16. Rows past k read as 0. */
static void pack_b_panel_sse2(const uint8_t *b, size_t ldb, uint8_t flip, size_t k,
                              size_t kgroups, size_t j0, int nr, int kg, int8_t *dst)
{
    const __m128i vflip = _mm_set1_epi8((char)flip);
    const __m128i zero = _mm_setzero_si128();
    for (size_t t = 0; t < kgroups; t++) {
        for (int c = 0; c < nr; c += 16) {
            __m128i r[4];
            for (int q = 0; q < kg; q++) {
                size_t kk = t * (size_t)kg + (size_t)q;
                r[q] = kk < k ? _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(
                                                  b + kk * ldb + j0 + (size_t)c)),
                                              vflip)
                              : zero;
            }
            int8_t *o = dst + (t * (size_t)nr + (size_t)c) * (size_t)kg;
            if (kg == 2) {
                _mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi8(r[0], r[1]));
                _mm_storeu_si128((__m128i *)(void *)(o + 16), _mm_unpackhi_epi8(r[0], r[1]));
            } else {
                __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
                __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
                _mm_storeu_si128((__m128i *)(void *)o, _mm_unpacklo_epi16(lo01, lo23));
                _mm_storeu_si128((__m128i *)(void *)(o + 16), _mm_unpackhi_epi16(lo01, lo23));
                _mm_storeu_si128((__m128i *)(void *)(o + 32), _mm_unpacklo_epi16(hi01, hi23));
                _mm_storeu_si128((__m128i *)(void *)(o + 48), _mm_unpackhi_epi16(hi01, hi23));
            }
        }
    }
}
#endif

void qmm_opt_pack_b(const qmm_opt_layout *L, const uint8_t *b, size_t ldb, int b_signed,
                    size_t k, size_t kgroups, size_t j0, size_t j1, int8_t *dst)
{
    int nr = L->nr, kg = L->kg;
    uint8_t flip = b_signed ? 0 : 0x80;
    size_t kp = kgroups * (size_t)kg;
    /* ldb is the matrix's n: columns past it are padding */
    size_t n = ldb;
    if (L->b_unsigned) { /* nr 16, kg 2; no column sums (the pairs-style A carries a - za) */
        for (size_t j = j0; j < j1; j += 16) {
            int8_t *panel = dst + (j - j0) / 16 * kp * 16;
#if defined(__SSE2__)
            if (j + 16 <= n)
                pack_b_panel_uw_sse2(b, ldb, flip ^ 0x80, k, j, panel);
            else
#endif
                pack_b_panel_uw_generic(b, ldb, flip ^ 0x80, k, n, j, panel);
        }
        return;
    }
    for (size_t j = j0; j < j1; j += (size_t)nr) {
        int8_t *panel = dst + (j - j0) / (size_t)nr * kp * (size_t)nr;
#if defined(__SSE2__)
        if (j + (size_t)nr <= n && nr % 16 == 0)
            pack_b_panel_sse2(b, ldb, flip, k, kgroups, j, nr, kg, panel);
        else
#endif
            pack_b_panel_generic(b, ldb, flip, k, kgroups, n, j, nr, kg, panel);
    }
}

void qmm_opt_pack_b_sums(const qmm_opt_variant *v, const uint8_t *b, size_t ldb, int b_signed,
                         size_t k, size_t kgroups, size_t j0, size_t j1, int8_t *dst,
                         int32_t *colsum)
{
    const qmm_opt_layout *L = v->layout;
    L->pack_b(L, b, ldb, b_signed, k, kgroups, j0, j1, dst);
    if (colsum) /* from the panels just written, still in cache */
        v->colsum(dst, kgroups, (j1 - j0 + (size_t)L->nr - 1) / (size_t)L->nr,
                  kgroups * (size_t)L->kg * (size_t)L->nr, colsum);
}
