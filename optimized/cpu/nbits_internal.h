/* optimized/cpu/nbits_internal.h — the kernels behind the optimized backend's MatMulNBits
 * (nbits.c; docs/optimized.md "MatMulNBits"), one set per instruction set: portable C
 * (nbits.c), AVX2 (nbits-avx2.c) and AVX-512 VNNI (nbits-avx512.c). Each computes what the
 * portable one does; float sums may be in any order (docs/semantics.md §8.4's bound holds for
 * every order, with or without FMA), integer sums are exact. */
#ifndef QMM_OPT_NBITS_INTERNAL_H
#define QMM_OPT_NBITS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* The K unit every buffer is padded to (zeros past K). */
#define QMM_NB_KPAD 64

typedef struct qmm_nb_kernels {
    const char *name;
    /* out[r*4 + c] = sum_{k < kp} a[r][k] * b[c][k] for r < rows (1..4), c < 4; kp a
     * multiple of QMM_NB_KPAD; any order, FMA or not. */
    void (*dot_f32)(size_t rows, size_t kp, const float *const a[4], const float *const b[4],
                    float out[16]);
    /* b[k] = RN32((codes[k] - zp) * s) for k < len (len a multiple of 16). */
    void (*deq)(const uint8_t *codes, size_t len, int32_t zp, float s, float *b);
    /* isum[g] = sum_{t < ab} qa[g*ab + t] * codes[g*ab + t] exactly, g < nblk; ab a power of
     * 2, 16..256. */
    void (*bsum)(const int8_t *qa, const uint8_t *codes, size_t nblk, size_t ab,
                 int32_t *isum);
} qmm_nb_kernels;

extern const qmm_nb_kernels qmm_nb_portable;
extern const qmm_nb_kernels qmm_nb_avx2;
extern const qmm_nb_kernels qmm_nb_avx512;

#endif
