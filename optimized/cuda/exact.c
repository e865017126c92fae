/* optimized/cuda/exact.c — QOrderedMatMul's exact rounding for the undecided elements, with
 * doubles only: no big-number library, no long double.
 *
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
 * wider format: FLT_EVAL_METHOD 0, checked below.
 */
#include <float.h>
#include <math.h>

#include "optimized/cuda/exact.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "optimized/cuda/exact.c needs double operations rounded to double (FLT_EVAL_METHOD 0)"
#endif

/* The exact sum D, most components 5: two for P·acc, one per further term. */
typedef struct expansion {
    double c[5]; /* increasing magnitude, nonoverlapping, zeros anywhere */
    int n;
} expansion;

/* Two-Sum (Knuth): s + e = a + b exactly, s = fl(a + b). */
static void two_sum(double a, double b, double *s, double *e)
{
    double x = a + b;
    double bv = x - a;
    double av = x - bv;
    *e = (a - av) + (b - bv);
    *s = x;
}

/* Grow-Expansion: x += b exactly. */
static void grow(expansion *x, double b)
{
    double q = b;
    for (int i = 0; i < x->n; i++)
        two_sum(q, x->c[i], &q, &x->c[i]);
    x->c[x->n++] = q;
}

static int sign_of(const expansion *x)
{
    for (int i = x->n - 1; i >= 0; i--)
        if (x->c[i] != 0.0)
            return x->c[i] > 0.0 ? 1 : -1;
    return 0;
}

/* Whether RNE(x) > j for the half-integer h = j + 1/2: x > h, or x = h and j + 1 is even. */
static int rounds_above(const expansion *s, double sy, int j)
{
    expansion d = *s;
    grow(&d, -(sy * ((double)j + 0.5)));
    int c = sign_of(&d);
    return c > 0 || (c == 0 && j % 2 != 0);
}

int8_t qmm_cu_qord_exact(double sa, double sb, double sy, double bias, double sc, int32_t acc,
                         int8_t cv)
{
    double p = sa * sb;
    expansion s;
    s.c[1] = p * (double)acc;
    s.c[0] = fma(p, (double)acc, -s.c[1]);
    s.n = 2;
    grow(&s, sc * (double)cv);
    grow(&s, sy * bias);
    /* the result is the least r in [-128, 127] with RNE(x) <= r (127 when x rounds above all) */
    int lo = -128, hi = 127;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (rounds_above(&s, sy, mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int8_t)lo;
}
