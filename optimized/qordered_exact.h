/* optimized/qordered_exact.h — QOrderedMatMul's exact epilogue (docs/semantics.md §4.3),
 *     y = sat_int8(RNE(sA·sB_j·acc/sY + bias_j + sC·C/sY)),
 * shared by the CPU backend (optimized/cpu/qordered.c) and the CUDA backend (its device
 * epilogue, optimized/cuda/epilogue.h, takes the fast decision; its host decides the rest with
 * qmm_qord_exact through optimized/cuda/exact.c). Plain C11, as requant_exact.h, whose
 * conventions (QMM_RQ_FN, explicitly rounded operations on the device) it follows.
 *
 * Fast decision (qmm_qord_fast). With alpha = fl(fl(sA·sB_j)/sY) (sA·sB_j is exact: 24 + 24
 * bits), t1 = fl(acc·alpha), t3 = fl(C·fl(sC/sY)) and v = fl(fl(t1 + bias_j) + t3): every
 * intermediate is a normal double (float scales: quotients and products within 2^-426 ..
 * 2^403), so with B = |t1| + |bias_j| + |t3|, |v - x| <= 4.04 u B (u = 2^-53); eb = B·2^-50
 * bounds it with room for the rounding of B itself. The result is decided when [v - eb, v + eb]
 * lies strictly inside one rounding cell (or beyond a saturation bound); otherwise the exact
 * decision below is needed.
 *
 * Exact decision (qmm_qord_exact), with doubles only: no big-number library, no long double.
 * x = (sa·sb·acc + sc·cv)/sy + bias. Since sy > 0 (the validation demands finite scales > 0),
 * x > h exactly when
 *     D(h) = sa·sb·acc + sc·cv + sy·bias − sy·h > 0,
 * and D is a sum of a few doubles that are exact (below), so its sign is decided exactly with
 * floating-point expansions: Shewchuk, "Adaptive Precision Floating-Point Arithmetic and Fast
 * Robust Geometric Predicates" (1997), Two-Sum and Grow-Expansion, with the product sa·sb·acc
 * made an expansion of two doubles by the fma form of Two-Product. Growing a nonoverlapping
 * expansion by one double with Two-Sum gives a nonoverlapping expansion of the exact sum
 * (zero components allowed), and the sign of such an expansion is the sign of its largest
 * nonzero component. The rounded, saturated result is then found by a binary search over the
 * 255 half-integers h = j + 1/2, j = -128..126, that separate the int8 results.
 *
 * Why every step is exact. Float32 values are multiples of 2^-149 below 2^128 with at most 24
 * significant bits; subnormal float32 values are normal doubles with fewer bits, so they need
 * no special case. Hence:
 *   P  = sa·sb     at most 48 bits, a multiple of 2^-298, below 2^256: an exact double;
 *   sc·cv          |cv| <= 128: at most 32 bits, below 2^135: exact;
 *   sy·bias        at most 48 bits, a multiple of 2^-298 (or 0), below 2^256: exact;
 *   sy·h           2h an odd integer below 2^8: at most 33 bits: exact;
 *   P·acc          up to 80 bits; p = fl(P·acc) and e = fma(P, acc, −p) = P·acc − p exactly:
 *                  the error of a rounded product is a double when nothing underflows, and
 *                  every nonzero term here is at least 2^-298, far above 2^-1022;
 *   Two-Sum        exact in round-to-nearest unless a sum overflows, and every partial sum
 *                  is below 2^287 + 2^256 + 2^136 < 2^288.
 * C's fma() is correctly rounded by definition, so Two-Product does not depend on the
 * compiler's contraction setting; a contraction of the other (exact) products into the sums
 * cannot change a result either. Two-Sum needs each operation rounded to double, not to a
 * wider format: FLT_EVAL_METHOD 0, checked below. The exact decision is host code only.
 */
#ifndef QMM_OPTIMIZED_QORDERED_EXACT_H
#define QMM_OPTIMIZED_QORDERED_EXACT_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "optimized/requant_exact.h"

/* The fast decision: 1 and *out when decided, 0 when qmm_qord_exact must decide. alpha =
 * fl(fl(sa·sb_j)/sy), bias the column's bias (0 when absent), t3 = fl(cv·fl(sc/sy)) (0 without
 * C). */
QMM_RQ_FN int qmm_qord_fast(int32_t acc, double alpha, double bias, double t3, int32_t *out)
{
    double t1 = QMM_RQ_MUL((double)acc, alpha);
    double v = QMM_RQ_ADD(QMM_RQ_ADD(t1, bias), t3);
    double eb = QMM_RQ_MUL(QMM_RQ_ADD(QMM_RQ_ADD(fabs(t1), fabs(bias)), fabs(t3)),
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

#if !defined(__CUDA_ARCH__)

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "optimized/qordered_exact.h needs double operations rounded to double (FLT_EVAL_METHOD 0)"
#endif

/* The exact sum D, most components 5: two for P·acc, one per further term. */
typedef struct qmm_qord_expansion {
    double c[5]; /* increasing magnitude, nonoverlapping, zeros anywhere */
    int n;
} qmm_qord_expansion;

/* Two-Sum (Knuth): s + e = a + b exactly, s = fl(a + b). */
static inline void qmm_qord_two_sum(double a, double b, double *s, double *e)
{
    double x = a + b;
    double bv = x - a;
    double av = x - bv;
    *e = (a - av) + (b - bv);
    *s = x;
}

/* Grow-Expansion: x += b exactly. */
static inline void qmm_qord_grow(qmm_qord_expansion *x, double b)
{
    double q = b;
    for (int i = 0; i < x->n; i++)
        qmm_qord_two_sum(q, x->c[i], &q, &x->c[i]);
    x->c[x->n++] = q;
}

static inline int qmm_qord_sign(const qmm_qord_expansion *x)
{
    for (int i = x->n - 1; i >= 0; i--)
        if (x->c[i] != 0.0)
            return x->c[i] > 0.0 ? 1 : -1;
    return 0;
}

/* Whether RNE(x) > j for the half-integer h = j + 1/2: x > h, or x = h and j + 1 is even. */
static inline int qmm_qord_rounds_above(const qmm_qord_expansion *s, double sy, int j)
{
    qmm_qord_expansion d = *s;
    qmm_qord_grow(&d, -(sy * ((double)j + 0.5)));
    int c = qmm_qord_sign(&d);
    return c > 0 || (c == 0 && j % 2 != 0);
}

/* sat_int8(RNE((sa * sb * acc + sc * cv) / sy + bias)) exactly, for what the validation
 * admits: sa, sb, sy, sc positive finite float32 values, bias a finite float32 value (0 when
 * absent), all held in doubles; acc the int32 accumulator; cv the C element (0 when absent,
 * then sc is any such scale). */
static inline int8_t qmm_qord_exact(double sa, double sb, double sy, double bias, double sc,
                                    int32_t acc, int8_t cv)
{
    double p = sa * sb;
    qmm_qord_expansion s;
    s.c[1] = p * (double)acc;
    s.c[0] = fma(p, (double)acc, -s.c[1]);
    s.n = 2;
    qmm_qord_grow(&s, sc * (double)cv);
    qmm_qord_grow(&s, sy * bias);
    /* the result is the least r in [-128, 127] with RNE(x) <= r (127 when x rounds above all) */
    int lo = -128, hi = 127;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (qmm_qord_rounds_above(&s, sy, mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int8_t)lo;
}

#endif /* !__CUDA_ARCH__ */

#endif /* QMM_OPTIMIZED_QORDERED_EXACT_H */
