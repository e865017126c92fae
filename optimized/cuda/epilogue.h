/* optimized/cuda/epilogue.h — the exact per-element arithmetic of the CUDA backend, shared by
 * the device kernels (nvcc) and the host emulation / unit tests (the C compiler).
 *
 * One source for both is the point: without a GPU the device epilogue cannot run, but the very
 * same functions run on the host (backend option emulate=1 and tests/test_cuda.c), so the
 * zero-point algebra and the exact requantization are tested bit for bit against the
 * reference even on a machine with no device.
 *
 * QLinearMatMul / MatMulInteger. Operands are mapped onto int8 by the exact shift
 * a' = a - 128 for uint8 (a' = a for int8), likewise b'. With da_i = shift_a - za_i and
 * db_j = shift_b - zb_j (so a - za = a' + da, b - zb = b' + db):
 *     acc = dot + db_j * rowsum_i + da_i * colsum_j + K * da_i * db_j        (mod 2^32)
 * where dot = sum_k a'b' (the int8 GEMM), rowsum_i = sum_k a'_ik, colsum_j = sum_k b'_kj. The
 * identity holds over the integers, so modulo 2^32 it gives exactly the int32-wrapped
 * accumulator: the spec's accepted overflow result (and MatMulInteger's only result).
 *
 * Requantization: the CPU backend's, the one implementation both share
 * (optimized/requant_exact.h, built here for the device too): a double fast path
 * v = fl(acc * fl(sa * fl(sb / sy))) (three roundings, |v - x| <= 2^-51 |v|) decides unless v is
 * within 2^-28 of a half-integer; then an exact integer quotient decides (two-word integers,
 * shift-subtract division: no __int128, so it compiles identically for the device and for any
 * C11 host).
 */
#ifndef QMM_CUDA_EPILOGUE_H
#define QMM_CUDA_EPILOGUE_H

#include <math.h>
#include <stdint.h>

#include "optimized/qordered_exact.h"
#include "optimized/requant_exact.h"

/* Functions for both compilers, and double operations explicitly rounded on the device (never
 * contracted into a fused multiply-add, which would change an error bound's operation count):
 * requant_exact.h's, under this file's names. */
#define QMM_CU_FN QMM_RQ_FN
#define QMM_CU_MUL QMM_RQ_MUL
#define QMM_CU_DIV QMM_RQ_DIV
#define QMM_CU_ADD QMM_RQ_ADD

/* uint8 -> int8 by the exact -128 shift (the top-bit flip), int8 as is. */
QMM_CU_FN int8_t qmm_cu_s8(uint8_t v, int is_signed)
{
    return is_signed ? (int8_t)v : (int8_t)(uint8_t)(v ^ 0x80u);
}

/* The corrected accumulator, modulo 2^32 (see the header comment). */
QMM_CU_FN int32_t qmm_cu_correct(int32_t dot, int32_t rowsum, int32_t colsum, int32_t da,
                                 int32_t db, int64_t k)
{
    uint32_t acc = (uint32_t)dot + (uint32_t)db * (uint32_t)rowsum +
                   (uint32_t)da * (uint32_t)colsum +
                   (uint32_t)(uint64_t)k * (uint32_t)da * (uint32_t)db;
    return qmm_rq_wrap(acc);
}

/* clamp(RNE(acc * sa * sb / sy) + zy, qmin, qmax) exactly; cm = fl(sb / sy). */
QMM_CU_FN int32_t qmm_cu_requant(int32_t acc, double sa, double sb, double sy, double cm,
                                 int32_t zy, int32_t qmin, int32_t qmax)
{
    return qmm_rq_requant(acc, QMM_CU_MUL(sa, cm), sa, sb, sy, zy, qmin, qmax);
}

/* qmm_cu_requant's fast path alone: 1 with *out when it decides, 0 when the caller must call
 * qmm_cu_requant (which then decides exactly). */
QMM_CU_FN int qmm_cu_requant_fast(int32_t acc, double sa, double cm, int32_t zy, int32_t qmin,
                                  int32_t qmax, int32_t *out)
{
    return qmm_rq_fast(acc, QMM_CU_MUL(sa, cm), zy, qmin, qmax, out);
}

/* ---- the QLinearMatMul / MatMulInteger epilogue over one batch matrix ---- */

/* Everything one batch's epilogue reads; pointers are device pointers in a kernel and host
 * pointers in the emulation. Row vectors are this batch's (index i < m), column vectors this
 * batch's (j < n). */
typedef struct qmm_cu_epi {
    int64_t m, n, k;
    int64_t ldd;           /* row stride of dot */
    const int32_t *dot;    /* sum_k a'b', row i at dot + i * ldd */
    const int32_t *rowsum; /* sum_k a'_ik */
    const int32_t *colsum; /* sum_k b'_kj */
    const int32_t *da;     /* shift_a - za_i */
    const int32_t *db;     /* shift_b - zb_j */
    void *y;               /* this batch's output, row-major m x n, row i at y + i * ldy */
    int64_t ldy;           /* row stride of y: n, or the whole row's for a slab of columns */
    int mmi;               /* MatMulInteger: y is int32, the wrapped accumulator */
    /* QLinearMatMul */
    const double *sa;      /* a_scale per row */
    const double *sb;      /* b_scale per column */
    const double *cm;      /* sb_j / sy per column (per-tensor y only) */
    int y_per_tensor;
    double sy;
    int32_t zy;
    const double *ys;      /* y_scale decoded, whole tensor (not per-tensor) */
    const int32_t *yz;     /* y_zero_point, whole tensor */
    int64_t y_base, y_rs, y_cs; /* y parameter offset = y_base + y_rs * i + y_cs * j */
    int32_t qmin, qmax;
} qmm_cu_epi;

QMM_CU_FN void qmm_cu_epi_element(const qmm_cu_epi *p, int64_t i, int64_t j)
{
    int32_t acc = qmm_cu_correct(p->dot[i * p->ldd + j], p->rowsum[i], p->colsum[j], p->da[i],
                                 p->db[j], p->k);
    int64_t o = i * p->ldy + j;
    if (p->mmi) {
        ((int32_t *)p->y)[o] = acc;
        return;
    }
    int32_t q;
    if (p->y_per_tensor) {
        q = qmm_cu_requant(acc, p->sa[i], p->sb[j], p->sy, p->cm[j], p->zy, p->qmin, p->qmax);
    } else {
        int64_t yo = p->y_base + p->y_rs * i + p->y_cs * j;
        double sy = p->ys[yo];
        q = qmm_cu_requant(acc, p->sa[i], p->sb[j], sy, QMM_CU_DIV(p->sb[j], sy), p->yz[yo],
                           p->qmin, p->qmax);
    }
    ((uint8_t *)p->y)[o] = (uint8_t)((uint32_t)q & 0xffu);
}

/* ---- QOrderedMatMul ---- */

/* cublasLtOrder_t offsets of element (r, c) in a matrix of `rows` rows and `cols` columns
 * (docs/semantics.md §4.2; the clean shapes the validation demands make every offset < rows *
 * cols). */
QMM_CU_FN int64_t qmm_cu_order_offset(int order, int64_t r, int64_t c, int64_t rows,
                                      int64_t cols)
{
    switch (order) {
    case 0: /* COL */
        return c * rows + r;
    case 1: /* ROW */
        return r * cols + c;
    case 2: /* COL32 */
        return (c / 32) * 32 * rows + 32 * r + c % 32;
    case 3: { /* COL4_4R2_8C */
        int64_t ld = 32 * ((rows + 7) / 8 * 8);
        return (c / 32) * ld + (r / 8) * 256 + (r % 2) * 128 + ((c % 32) / 4) * 16 +
               ((r % 8) / 2) * 4 + c % 4;
    }
    default: { /* COL32_2R_4R4 */
        int64_t ld = 32 * ((rows + 31) / 32 * 32), rr = r % 32;
        return (c / 32) * ld + (r / 32) * 1024 + (((rr % 8) / 2 * 4 + rr / 8) * 2 + rr % 2) * 32 +
               c % 32;
    }
    }
}

/* One batch of QOrderedMatMul's epilogue: y = sat_int8(RNE(x)) with
 *     x = sA * sB_j * acc / sY + bias_j + sC * C / sY,
 * decided by the fast decision of optimized/qordered_exact.h (qmm_qord_fast, its error bound
 * there), which the CPU backend shares; an element it leaves "undecided" is decided on the host,
 * exactly (exact.c, qmm_cu_qord_exact: qordered_exact.h's qmm_qord_exact). */
typedef struct qmm_cu_qord {
    int64_t m, n;
    int order_y;            /* QMM_ORDER_ROW or QMM_ORDER_COL32 */
    const int32_t *acc;     /* sum_k A B: row-major, or at the same offset as y */
    int acc_row_major;      /* 1: acc[r * acc_ld + c]; 0: acc at y's offset */
    int64_t acc_ld;
    const int8_t *c;        /* optional C, same order and shape as y (NULL: none) */
    int8_t *y;
    double sa, sy, sc;
    const double *sb;       /* per column (a scalar scale_B is broadcast on the host) */
    const double *bias;     /* per column or NULL */
    /* undecided elements: their y offset, accumulator, column and C value */
    unsigned int *n_undecided;
    int64_t *u_off;
    int32_t *u_acc, *u_col, *u_c;
} qmm_cu_qord;

/* Returns 1 when decided (y written), 0 when the exact path must decide. */
QMM_CU_FN int qmm_cu_qord_fast(const qmm_cu_qord *p, int32_t acc, int64_t col, int32_t cv,
                               int32_t *out)
{
    double alpha = QMM_CU_DIV(QMM_CU_MUL(p->sa, p->sb[col]), p->sy);
    double t3 = p->c ? QMM_CU_MUL((double)cv, QMM_CU_DIV(p->sc, p->sy)) : 0.0;
    return qmm_qord_fast(acc, alpha, p->bias ? p->bias[col] : 0.0, t3, out);
}

QMM_CU_FN void qmm_cu_qord_element(const qmm_cu_qord *p, int64_t r, int64_t col)
{
    int64_t o = qmm_cu_order_offset(p->order_y, r, col, p->m, p->n);
    int32_t acc = p->acc_row_major ? p->acc[r * p->acc_ld + col] : p->acc[o];
    int32_t cv = p->c ? p->c[o] : 0;
    int32_t q;
    if (qmm_cu_qord_fast(p, acc, col, cv, &q)) {
        p->y[o] = (int8_t)q;
        return;
    }
    p->y[o] = 0;
#if defined(__CUDA_ARCH__)
    unsigned int slot = atomicAdd(p->n_undecided, 1u);
#else
    unsigned int slot = (*p->n_undecided)++;
#endif
    p->u_off[slot] = o;
    p->u_acc[slot] = acc;
    p->u_col[slot] = (int32_t)col;
    p->u_c[slot] = cv;
}

#endif /* QMM_CUDA_EPILOGUE_H */
