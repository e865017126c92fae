/* optimized/cpu/gemm-u8s8-32x32c4-tiles-amx.c — AMX-INT8 microkernel (built with -mamx-tile
 * -mamx-int8 and the AVX-512 VNNI flags).
 * 32 rows x 32 columns as four 16x16 int32 C tiles; per K tile (64 k
 * values) two A tiles and two B tiles are loaded and multiplied with tdpbusd (uint8 A times
 * int8 B, four products summed into each int32 element without saturation: the sums wrap
 * modulo 2^32 like vpdpbusd's, Intel SDM vol. 2, TDPBUSD).
 *
 * Operands: A in the "tiles" layout (qmm_opt_pack_a_tiles: a 16-row slice of one K tile is
 * 1 KB, stride 64), B in the quads layout with nr 32 (K group t of a panel is 128 bytes:
 * columns 0-15 then 16-31, four k each), so a B tile is 16 groups of 64 bytes at stride 128.
 * kgroups is a multiple of 16 (the table's kalign): the packers zero the padding.
 *
 * The tile configuration is per thread and costs ~50 ns to load (measured on a Sapphire
 * Rapids-class Xeon, 2026-11-23), so the driver loads it once per task (task_begin) rather
 * than per kernel call, and releases the tiles at the task's end.
 */
#include <immintrin.h>
#include <string.h>

#include "optimized/cpu/opt_internal.h"
#include "optimized/cpu/unroll.h"

enum { MR = 32, NR = 32, KT = 16 /* K groups per tile */ };

/* Palette 1: tiles 0-3 C (16 rows x 16 int32), 4-5 A (16 rows x 64 uint8), 6-7 B (16 K
 * groups x 16 columns x 4 int8); every tile 16 rows of 64 bytes. */
typedef struct __attribute__((packed, aligned(64))) tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

qmm_opt_task_ft qmm_gemm_begin__amx; /* kernels.c */
void qmm_gemm_begin__amx(void)
{
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    /* not _tile_loadconfig: GCC 12's version names only the first 8 bytes of the
     * configuration as its memory operand, so the stores to the rest are dropped as dead */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

qmm_opt_task_ft qmm_gemm_end__amx; /* kernels.c */
void qmm_gemm_end__amx(void)
{
    _tile_release();
}

/* `slices` (1 or 2, a constant after inlining) 16-row slices of the group: C tiles 0-1 hold
 * rows 0-15, 2-3 rows 16-31. With one slice, rows 16-31 of c are left alone. */
static inline __attribute__((always_inline)) void tiles(int slices, size_t kgroups,
                                                        const int32_t *a, const int8_t *b,
                                                        int32_t *c, size_t ldc, int accumulate)
{
    const uint8_t *ap = (const uint8_t *)a;
    size_t ldcb = ldc * sizeof(int32_t);
    int32_t *c2 = c + 16 * ldc;
    if (accumulate) {
        _tile_loadd(0, c, ldcb);
        _tile_loadd(1, c + 16, ldcb);
        if (slices == 2) {
            _tile_loadd(2, c2, ldcb);
            _tile_loadd(3, c2 + 16, ldcb);
        }
    } else {
        _tile_zero(0);
        _tile_zero(1);
        if (slices == 2) {
            _tile_zero(2);
            _tile_zero(3);
        }
    }
    for (size_t t = 0; t < kgroups; t += KT) {
        _tile_loadd(4, ap, 64);
        _tile_loadd(6, b, NR * 4);
        _tile_loadd(7, b + 64, NR * 4);
        _tile_dpbusd(0, 4, 6);
        if (slices == 2)
            _tile_loadd(5, ap + 16 * 64, 64);
        _tile_dpbusd(1, 4, 7);
        if (slices == 2) {
            _tile_dpbusd(2, 5, 6);
            _tile_dpbusd(3, 5, 7);
        }
        ap += MR * 64;
        b += KT * NR * 4;
    }
    _tile_stored(0, c, ldcb);
    _tile_stored(1, c + 16, ldcb);
    if (slices == 2) {
        _tile_stored(2, c2, ldcb);
        _tile_stored(3, c2 + 16, ldcb);
    }
}

qmm_opt_kernel_ft qmm_gemm_u8s8_32x32c4_tiles__amx; /* kernels.c */
void qmm_gemm_u8s8_32x32c4_tiles__amx(size_t rows, size_t kgroups, const int32_t *a,
                                      const int8_t *b, int32_t *c, size_t ldc, int accumulate)
{
    (void)rows; /* MR: partial groups take qmm_gemm_u8s8_rx32c4_tiles__amx */
    tiles(2, kgroups, a, b, c, ldc, accumulate);
}

/* Rows 0..R-1 (R <= 4, a constant after inlining) with AVX-512 VNNI on the tiles layout:
 * row r's word for K group 16T + u is word 16*(T*MR + r) + u of the block. A tile multiply
 * costs the same for 1 row as for 16, so a few rows (M = 1 on a prepacked B) run as a gemv;
 * K groups alternate between two accumulator sets, as in gemm-u8s8-8x32c4-avx512vnni.c, and
 * the loops over r are unrolled by pragma for the same reason as there (at -O2 GCC 12 left
 * them rolled, the accumulators in memory; not timed on an AMX CPU). */
static inline __attribute__((always_inline)) void rows_vnni(int R, size_t kgroups,
                                                            const int32_t *a, const int8_t *b,
                                                            int32_t *c, size_t ldc,
                                                            int accumulate)
{
    __m512i acc[4][2], alt[4][2];
    QMM_UNROLL
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = alt[r][0] = alt[r][1] = _mm512_setzero_si512();
    for (size_t t = 0; t < kgroups; t += KT) {
        const int32_t *at = a + t * MR; /* K tile t / 16: 16 * MR words */
        for (int u = 0; u < KT; u += 2) {
            const int8_t *bu = b + (t + (size_t)u) * NR * 4;
            __m512i b0 = _mm512_loadu_si512((const void *)bu);
            __m512i b1 = _mm512_loadu_si512((const void *)(bu + 64));
            __m512i b2 = _mm512_loadu_si512((const void *)(bu + 128));
            __m512i b3 = _mm512_loadu_si512((const void *)(bu + 192));
            QMM_UNROLL
            for (int r = 0; r < R; r++) {
                __m512i av = _mm512_set1_epi32(at[16 * r + u]);
                __m512i aw = _mm512_set1_epi32(at[16 * r + u + 1]);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
                acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
                alt[r][0] = _mm512_dpbusd_epi32(alt[r][0], aw, b2);
                alt[r][1] = _mm512_dpbusd_epi32(alt[r][1], aw, b3);
            }
        }
    }
    QMM_UNROLL
    for (int r = 0; r < R; r++) {
        int32_t *p0 = c + (size_t)r * ldc, *p1 = p0 + 16;
        __m512i s0 = _mm512_add_epi32(acc[r][0], alt[r][0]);
        __m512i s1 = _mm512_add_epi32(acc[r][1], alt[r][1]);
        if (accumulate) {
            s0 = _mm512_add_epi32(s0, _mm512_loadu_si512((const void *)p0));
            s1 = _mm512_add_epi32(s1, _mm512_loadu_si512((const void *)p1));
        }
        _mm512_storeu_si512((void *)p0, s0);
        _mm512_storeu_si512((void *)p1, s1);
    }
}

qmm_opt_kernel_ft qmm_gemm_u8s8_rx32c4_tiles__amx; /* kernels.c */
void qmm_gemm_u8s8_rx32c4_tiles__amx(size_t rows, size_t kgroups, const int32_t *a, const int8_t *b,
                                     int32_t *c, size_t ldc, int accumulate)
{
    switch (rows) {
    case 1: rows_vnni(1, kgroups, a, b, c, ldc, accumulate); return;
    case 2: rows_vnni(2, kgroups, a, b, c, ldc, accumulate); return;
    case 3: rows_vnni(3, kgroups, a, b, c, ldc, accumulate); return;
    case 4: rows_vnni(4, kgroups, a, b, c, ldc, accumulate); return;
    default: break;
    }
    /* rows 5-16 on one A slice (its padding rows included), 17-31 as a full tile */
    if (rows <= 16)
        tiles(1, kgroups, a, b, c, ldc, accumulate);
    else
        tiles(2, kgroups, a, b, c, ldc, accumulate);
}

/* Peak loop: four independent tdpbusd chains on operands already in tile registers (zeros:
 * the instruction's speed does not depend on the values). */
qmm_opt_peak_ft qmm_peak_u8s8_tiles__amx; /* kernels.c */
uint64_t qmm_peak_u8s8_tiles__amx(uint64_t iters)
{
    qmm_gemm_begin__amx();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    for (uint64_t i = 0; i < iters; i++) {
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    qmm_gemm_end__amx();
    return iters * 4u * 16u * 16u * 64u;
}
