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
 * Requantization: the CPU backend's proven scheme (docs/optimized.md, optimized/cpu/requant.c),
 * ported: a double fast path v = fl(acc * fl(sa * fl(sb / sy))) (three roundings,
 * |v - x| <= 2^-51 |v|) decides unless v is within 2^-28 of a half-integer; then an exact
 * integer quotient decides. The exact path uses a two-word integer and shift-subtract division
 * (no __int128, so it compiles identically for the device and for any C11 host).
 */
#ifndef QMM_CUDA_EPILOGUE_H
#define QMM_CUDA_EPILOGUE_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define QMM_CU_FN static __host__ __device__ inline
#else
#define QMM_CU_FN static inline
#endif

/* Explicitly rounded double operations: on the device the intrinsics are never contracted into
 * a fused multiply-add, which would change the error bound's operation count. */
#if defined(__CUDA_ARCH__)
#define QMM_CU_MUL(x, y) __dmul_rn((x), (y))
#define QMM_CU_DIV(x, y) __ddiv_rn((x), (y))
#define QMM_CU_ADD(x, y) __dadd_rn((x), (y))
#else
#define QMM_CU_MUL(x, y) ((x) * (y))
#define QMM_CU_DIV(x, y) ((x) / (y))
#define QMM_CU_ADD(x, y) ((x) + (y))
#endif

/* |result| is clamped here: far outside any 8-bit result, so clamping never changes output */
#define QMM_CU_REQ_SAT ((int64_t)1 << 40)

/* uint8 -> int8 by the exact -128 shift (the top-bit flip), int8 as is. */
QMM_CU_FN int8_t qmm_cu_s8(uint8_t v, int is_signed)
{
    return is_signed ? (int8_t)v : (int8_t)(uint8_t)(v ^ 0x80u);
}

QMM_CU_FN int32_t qmm_cu_wrap(uint32_t u)
{
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

/* The corrected accumulator, modulo 2^32 (see the header comment). */
QMM_CU_FN int32_t qmm_cu_correct(int32_t dot, int32_t rowsum, int32_t colsum, int32_t da,
                                 int32_t db, int64_t k)
{
    uint32_t acc = (uint32_t)dot + (uint32_t)db * (uint32_t)rowsum +
                   (uint32_t)da * (uint32_t)colsum +
                   (uint32_t)(uint64_t)k * (uint32_t)da * (uint32_t)db;
    return qmm_cu_wrap(acc);
}

/* ---- exact path ---- */

typedef struct qmm_cu_u128 {
    uint64_t hi, lo;
} qmm_cu_u128;

QMM_CU_FN int qmm_cu_u128_bits(qmm_cu_u128 x)
{
    int n = 0;
    uint64_t w = x.hi ? x.hi : x.lo;
    while (w) {
        n++;
        w >>= 1;
    }
    return x.hi ? n + 64 : n;
}

/* x << s for 0 <= s < 128 (bits shifted out are lost; callers check the length first) */
QMM_CU_FN qmm_cu_u128 qmm_cu_u128_shl(qmm_cu_u128 x, int s)
{
    qmm_cu_u128 r;
    if (s == 0)
        return x;
    if (s >= 64) {
        r.hi = x.lo << (s - 64);
        r.lo = 0;
    } else {
        r.hi = (x.hi << s) | (x.lo >> (64 - s));
        r.lo = x.lo << s;
    }
    return r;
}

QMM_CU_FN qmm_cu_u128 qmm_cu_u128_shr1(qmm_cu_u128 x)
{
    qmm_cu_u128 r;
    r.lo = (x.lo >> 1) | (x.hi << 63);
    r.hi = x.hi >> 1;
    return r;
}

QMM_CU_FN int qmm_cu_u128_cmp(qmm_cu_u128 a, qmm_cu_u128 b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return a.lo < b.lo ? -1 : a.lo > b.lo;
}

QMM_CU_FN qmm_cu_u128 qmm_cu_u128_sub(qmm_cu_u128 a, qmm_cu_u128 b)
{
    qmm_cu_u128 r;
    r.lo = a.lo - b.lo;
    r.hi = a.hi - b.hi - (a.lo < b.lo);
    return r;
}

/* s = m * 2^e with m an odd integer (s > 0, finite); m < 2^24 for float-representable s. */
QMM_CU_FN void qmm_cu_split_scale(double s, uint64_t *m, int *e)
{
    int ex;
    double f = frexp(s, &ex); /* s = f * 2^ex, f in [0.5, 1): exact */
    uint64_t mant = (uint64_t)ldexp(f, 53);
    ex -= 53;
    while (mant && !(mant & 1)) {
        mant >>= 1;
        ex++;
    }
    *m = mant;
    *e = ex;
}

/* RNE(acc * sa * sb / sy) exactly, clamped to +-2^40 (scales positive, finite, each holding a
 * float, float16 or bfloat16 value). The same decisions as qmm_opt_requant_exact. */
QMM_CU_FN int64_t qmm_cu_requant_exact(int32_t acc, double sa, double sb, double sy)
{
    if (acc == 0)
        return 0;
    uint64_t ma, mb, my;
    int ea, eb, ey;
    qmm_cu_split_scale(sa, &ma, &ea);
    qmm_cu_split_scale(sb, &mb, &eb);
    qmm_cu_split_scale(sy, &my, &ey);
    int negative = acc < 0;
    uint64_t mag_acc = negative ? (uint64_t)0 - (uint64_t)(int64_t)acc : (uint64_t)acc;
    /* num = |acc| * ma * mb < 2^32 * 2^24 * 2^24: the first product fits 64 bits, the second
     * is formed from the 32-bit halves of the first */
    uint64_t x = mag_acc * ma;
    uint64_t plo = (x & 0xffffffffu) * mb, phi = (x >> 32) * mb;
    qmm_cu_u128 num, den;
    num.lo = plo + (phi << 32);
    num.hi = (phi >> 32) + (num.lo < plo);
    den.hi = 0;
    den.lo = my;
    int s = ea + eb - ey;
    const int64_t sat = negative ? -QMM_CU_REQ_SAT : QMM_CU_REQ_SAT;
    /* x = num * 2^s / den; keep both sides below 2^127 */
    if (s > 0) {
        /* num >= 1 and den < 2^24: a result this long is beyond 2^40 anyway */
        if (s >= 64 || qmm_cu_u128_bits(num) + s > 126)
            return sat;
        num = qmm_cu_u128_shl(num, s);
    } else if (s < 0) {
        /* num < 2^80: with -s > 100, |x| < 2^-20, which rounds to 0 */
        if (-s > 100)
            return 0;
        den = qmm_cu_u128_shl(den, -s);
    }
    /* q = num / den by shift-subtract; a quotient of 42 or more bits saturates */
    uint64_t q = 0;
    qmm_cu_u128 r = num;
    if (qmm_cu_u128_cmp(num, den) >= 0) {
        int sh = qmm_cu_u128_bits(num) - qmm_cu_u128_bits(den);
        if (sh >= 42)
            return sat;
        qmm_cu_u128 d = qmm_cu_u128_shl(den, sh);
        for (int t = sh; t >= 0; t--) {
            q <<= 1;
            if (qmm_cu_u128_cmp(r, d) >= 0) {
                r = qmm_cu_u128_sub(r, d);
                q |= 1;
            }
            d = qmm_cu_u128_shr1(d);
        }
    }
    /* round half to even: r < den < 2^124, so 2r fits */
    int c = qmm_cu_u128_cmp(qmm_cu_u128_shl(r, 1), den);
    if (c > 0 || (c == 0 && (q & 1)))
        q++;
    int64_t mag = q > (uint64_t)QMM_CU_REQ_SAT ? QMM_CU_REQ_SAT : (int64_t)q;
    return negative ? -mag : mag;
}

QMM_CU_FN int32_t qmm_cu_clamp_add(int64_t q, int32_t zy, int32_t qmin, int32_t qmax)
{
    int64_t v = q + zy;
    return v < qmin ? qmin : v > qmax ? qmax : (int32_t)v;
}

/* clamp(RNE(acc * sa * sb / sy) + zy, qmin, qmax) exactly; cm = fl(sb / sy). */
QMM_CU_FN int32_t qmm_cu_requant(int32_t acc, double sa, double sb, double sy, double cm,
                                 int32_t zy, int32_t qmin, int32_t qmax)
{
    if (acc == 0)
        return qmm_cu_clamp_add(0, zy, qmin, qmax);
    double v = QMM_CU_MUL((double)acc, QMM_CU_MUL(sa, cm));
    /* |v| >= 2^21: |x| > 2^21 - 1, far past every 8-bit range: saturate by the sign */
    if (!(fabs(v) < 2097152.0))
        return v > 0 ? qmax : qmin;
    double r = rint(v); /* RNE in the default rounding mode, device and host */
    /* |v - x| < 2^-30 here; |v - r| < 1/2 - 2^-28 puts x strictly nearer r than any other
     * integer, ties included */
    if (fabs(v - r) < 0.5 - 1.0 / 268435456.0)
        return qmm_cu_clamp_add((int64_t)r, zy, qmin, qmax);
    return qmm_cu_clamp_add(qmm_cu_requant_exact(acc, sa, sb, sy), zy, qmin, qmax);
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
    void *y;               /* this batch's output, row-major m x n */
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
    int64_t o = i * p->n + j;
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
 *     x = sA * sB_j * acc / sY + bias_j + sC * C / sY.
 * Fast path: t1 = fl(acc * fl(fl(sA * sB_j) / sY)) (sA * sB_j is exact: 24 + 24 bits),
 * t3 = fl(C * fl(sC / sY)), v = fl(fl(t1 + bias_j) + t3). Every intermediate is a normal double
 * (float scales: quotients and products within 2^-426 .. 2^403), so with
 * B = |t1| + |bias_j| + |t3|, |v - x| <= 4.04 u B (u = 2^-53); eb = B * 2^-50 bounds it with
 * room for the rounding of B itself. The result is decided when the interval [v - eb, v + eb]
 * lies strictly inside one rounding cell (or beyond a saturation bound); otherwise the element
 * is "undecided" and the host decides it exactly (exact.c, qmm_cu_qord_exact). */
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
    double t1 = QMM_CU_MUL((double)acc, QMM_CU_DIV(QMM_CU_MUL(p->sa, p->sb[col]), p->sy));
    double t2 = p->bias ? p->bias[col] : 0.0;
    double t3 = p->c ? QMM_CU_MUL((double)cv, QMM_CU_DIV(p->sc, p->sy)) : 0.0;
    double v = QMM_CU_ADD(QMM_CU_ADD(t1, t2), t3);
    double eb = QMM_CU_MUL(QMM_CU_ADD(QMM_CU_ADD(fabs(t1), fabs(t2)), fabs(t3)),
                           1.0 / 1125899906842624.0); /* 2^-50 */
    if (v - eb > 127.5) {
        *out = 127;
        return 1;
    }
    if (v + eb < -128.5) {
        *out = -128;
        return 1;
    }
    if (!(fabs(v) < 1024.0) || !(eb < 0.25))
        return 0;
    double r = rint(v);
    /* x within eb of v and |v - r| + eb < 1/2: x strictly nearer r than any other integer */
    if (fabs(v - r) + eb < 0.5) {
        *out = r < -128.0 ? -128 : r > 127.0 ? 127 : (int32_t)r;
        return 1;
    }
    return 0;
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
