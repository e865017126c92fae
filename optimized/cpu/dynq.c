/* optimized/cpu/dynq.c — DynamicQuantizeMatMul and MatMulIntegerToFloat (com.microsoft,
 * docs/semantics.md §10) in the optimized backend. The integer product is the backend's own
 * exact MatMulInteger (every variant's u8·s8 kernels, threads, int32 wrapping as the contract
 * says), on A quantized per tensor exactly as DynamicQuantizeLinear does for
 * DynamicQuantizeMatMul; then the float tail RN32(RN32(float(acc)·RN32(sa·sb)) + bias), the
 * one the reference writes. Float T3 only (a float16 MatMulIntegerToFloat is UNSUPPORTED: the
 * reference does not model it yet). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/qmm_ops.h"
#include "optimized/cpu/opt_internal.h"

/* y[i] = RN32(RN32(float(acc[i]) · RN32(sa·sb_j)) + bias_j), j = i mod n. */
static void tail(const int32_t *acc, size_t count, size_t n, float sa, const float *sb,
                 int per_column, const float *bias, float *y)
{
    for (size_t i = 0; i < count; i += n)
        for (size_t j = 0; j < n && i + j < count; j++) {
            volatile float m = sa * sb[per_column ? j : 0];
            volatile float v = (float)acc[i + j] * m;
            y[i + j] = bias ? v + bias[j] : v;
        }
}

/* The exact int32 product of a (already uint8/int8) and c's b through MatMulInteger, then the
 * tail into y. */
static qmm_status_code integer_then_tail(const qmm_opt_backend *ob, const qmm_tensor *a,
                                         const qmm_tensor *az, const qmm_tensor *b,
                                         const qmm_tensor *bz, float sa, const qmm_tensor *bs,
                                         const qmm_tensor *bias, const qmm_tensor *y,
                                         const qmm_i2f_plan *p, qmm_status *st)
{
    size_t count = (size_t)qmm_tensor_numel(y);
    /* N from the geometry: a 1-D B makes y's last dim M, not N (numpy.matmul's promotion) */
    size_t n = (size_t)p->g.n;
    int per_column = p->b_per_column;
    int32_t *acc = malloc((count ? count : 1) * sizeof *acc);
    if (!acc)
        return qmm_status_oom(st, ob->name, "for the integer accumulators");
    qmm_matmulinteger mi = {.a = *a, .b = *b, .y = *y};
    if (az)
        mi.a_zero_point = *az;
    if (qmm_tensor_present(bz))
        mi.b_zero_point = *bz;
    mi.y.dtype = QMM_DTYPE_INT32;
    mi.y.data = acc;
    qmm_status_code rc = qmm_opt_matmulinteger(ob, &mi, NULL, st);
    if (rc == QMM_OK && count && n)
        tail(acc, count, n, sa, bs->data, per_column,
             qmm_tensor_present(bias) ? bias->data : NULL, y->data);
    free(acc);
    return rc;
}

qmm_status_code qmm_opt_dynamicquantizematmul(const qmm_opt_backend *ob,
                                              const qmm_dynamicquantizematmul *c,
                                              qmm_status *st)
{
    qmm_i2f_plan p;
    QMM_TRY(qmm_validate_dynamicquantizematmul(c, &p, st));
    size_t count = (size_t)qmm_tensor_numel(&c->a);
    const float *a = c->a.data;
    /* DynamicQuantizeLinear, every step one float32 rounding (semantics.md §10.1) */
    float mn = 0.0f, mx = 0.0f;
    int nonfinite = 0;
    for (size_t i = 0; i < count; i++) {
        nonfinite |= !isfinite(a[i]);
        mn = a[i] < mn ? a[i] : mn;
        mx = a[i] > mx ? a[i] : mx;
    }
    if (nonfinite) {
        /* min/max of a NaN is implementation-defined: the reference accepts any answer */
        size_t ny = (size_t)qmm_tensor_numel(&c->y);
        for (size_t i = 0; i < ny; i++)
            ((float *)c->y.data)[i] = NAN;
        return qmm_status_ok(st);
    }
    volatile float range = mx - mn;
    float scale = mx != mn ? range / 255.0f : 1.0f;
    volatile float ratio = mn / scale;
    float zpf = 0.0f - ratio;
    /* in float, NaN-safe: a range whose /255 underflows to 0 makes lo/sa and a/sa infinite
     * or NaN (the reference's conversion of a NaN is the C implementation's), and no
     * conversion here is undefined */
    zpf = zpf >= 0.0f ? (zpf <= 255.0f ? zpf : 255.0f) : 0.0f;
    int32_t zp = (int32_t)nearbyintf(zpf);
    uint8_t *qa = malloc(count ? count : 1);
    if (!qa)
        return qmm_status_oom(st, ob->name, "for the quantized A");
    for (size_t i = 0; i < count; i++) {
        volatile float r = a[i] / scale;
        float q = nearbyintf(r) + (float)zp;
        qa[i] = (uint8_t)(q >= 0.0f ? (q <= 255.0f ? (int32_t)q : 255) : 0);
    }
    uint8_t za = (uint8_t)zp;
    qmm_tensor ta = c->a, tz = {.dtype = QMM_DTYPE_UINT8, .rank = 0, .data = &za};
    ta.dtype = QMM_DTYPE_UINT8;
    ta.data = qa;
    qmm_status_code rc = integer_then_tail(ob, &ta, &tz, &c->b, &c->b_zero_point, scale,
                                           &c->b_scale, &c->bias, &c->y, &p, st);
    free(qa);
    return rc;
}

const char *qmm_opt_matmul_integer_to_float_unsupported(const qmm_matmul_integer_to_float *c)
{
    return c->a_scale.dtype == QMM_DTYPE_FLOAT16
               ? "MatMulIntegerToFloat with float16 scales: float only here"
               : NULL;
}

qmm_status_code qmm_opt_matmul_integer_to_float(const qmm_opt_backend *ob,
                                                const qmm_matmul_integer_to_float *c,
                                                qmm_status *st)
{
    qmm_i2f_plan p;
    QMM_TRY(qmm_validate_matmul_integer_to_float(c, &p, st));
    const char *why = qmm_opt_matmul_integer_to_float_unsupported(c);
    if (why)
        return qmm_status_because(st, QMM_UNSUPPORTED, ob->name, why);
    float sa = *(const float *)c->a_scale.data;
    return integer_then_tail(ob, &c->a,
                             qmm_tensor_present(&c->a_zero_point) ? &c->a_zero_point : NULL,
                             &c->b, &c->b_zero_point, sa, &c->b_scale, &c->bias, &c->y,
                             &p, st);
}
