/* peers/gemmlowp/gemmlowp_peer.cc — qmmcheck plugin over gemmlowp's public API, in C++.
 *
 * It also shows a vendor how a C++ library exports qmmcheck's entry point: the one function
 * qmmcheck looks up is declared extern "C" (no name mangling) with default visibility, while the
 * rest of the library is built with -fvisibility=hidden; no C++ exception crosses the C ABI.
 *
 * QLinearMatMul u8 x u8 -> u8 with per-tensor parameters, computed as TFLite computes a
 * quantized fully-connected layer with gemmlowp: lhs_offset = -a_zero_point and rhs_offset =
 * -b_zero_point give the exact int32 accumulator, then OutputStageQuantizeDownInt32ByFixedPoint
 * (SaturatingRoundingDoublingHighMul by a Q31 multiplier, then RoundingDivideByPOT by the
 * shift), + y_zero_point, and OutputStageSaturatingCastToUint8.
 */
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <tuple>

#include <gemmlowp/public/gemmlowp.h>

#include "../common/peer_call.h"

#ifndef QMM_GEMMLOWP_VERSION
#define QMM_GEMMLOWP_VERSION "unknown"
#endif

extern "C" __attribute__((visibility("default"))) qmm_backend *
qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st);

namespace {

/* The real multiplier M = sa·sb/sy as TFLite quantizes it: M is computed in double (TFLite's
 * GetQuantizedConvolutionMultipler in tensorflow/lite/kernels/kernel_util.cc multiplies the
 * input and filter scales as doubles, then divides by the output scale); QuantizeMultiplier
 * (tensorflow/lite/kernels/internal/quantization_util.cc) writes M = q·2^e with frexp
 * (q in [0.5, 1)), takes multiplier = round-half-away-from-zero(q·2^31); when that rounds up to
 * 2^31 it halves it and increments e; when e < -31 it gives multiplier 0 and e 0. The stage
 * then divides by 2^(-e), so it needs e <= 0. */
struct fixed_point {
    int32_t multiplier;
    int exponent;
};

fixed_point quantize_multiplier(double m)
{
    int e = 0;
    double q = std::frexp(m, &e);
    int64_t fixed = static_cast<int64_t>(std::round(q * static_cast<double>(1ll << 31)));
    if (fixed == (1ll << 31)) {
        fixed /= 2;
        ++e;
    }
    if (e < -31) {
        e = 0;
        fixed = 0;
    }
    return {static_cast<int32_t>(fixed), e};
}

qmm_status_code check_forms(const qmm_qlinearmatmul *q, const peer_geom *g, qmm_status *st)
{
    if (q->a.dtype != QMM_DTYPE_UINT8 || q->b.dtype != QMM_DTYPE_UINT8 ||
        q->y_zero_point.dtype != QMM_DTYPE_UINT8)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "gemmlowp: uint8 x uint8 -> uint8 only (got %s x %s -> %s)",
                              qmm_dtype_name(q->a.dtype), qmm_dtype_name(q->b.dtype),
                              qmm_dtype_name(q->y_zero_point.dtype));
    const qmm_tensor *p[6] = {&q->a_scale, &q->a_zero_point, &q->b_scale, &q->b_zero_point,
                              &q->y_scale, &q->y_zero_point};
    for (const qmm_tensor *t : p)
        if (peer_form_of(t, g->n) != PEER_TENSOR)
            return qmm_status_set(st, QMM_UNSUPPORTED,
                                  "gemmlowp: per-tensor parameters only (the TFLite pipeline has "
                                  "one multiplier and one offset)");
    return QMM_OK;
}

qmm_status_code gemmlowp_query(const qmm_backend *, const qmm_call *call, qmm_status *st)
{
    if (call->op != QMM_OP_QLINEARMATMUL)
        return qmm_status_set(st, QMM_UNSUPPORTED, "gemmlowp: %s not mapped (QLinearMatMul only)",
                              qmm_op_name(call->op));
    return peer_query_qlinear(&call->u.qlinearmatmul, check_forms, st);
}

typedef gemmlowp::MatrixMap<const std::uint8_t, gemmlowp::MapOrder::RowMajor> in_map;
typedef gemmlowp::MatrixMap<std::uint8_t, gemmlowp::MapOrder::RowMajor> out_map;

qmm_status_code gemmlowp_qlinearmatmul(const qmm_backend *, const qmm_qlinearmatmul *q,
                                       qmm_status *st)
{
    peer_geom g;
    qmm_status_code rc = peer_admit_qlinear(q, check_forms, &g, st);
    if (rc != QMM_OK)
        return rc;
    if (g.m > INT32_MAX || g.k > INT32_MAX || g.n > INT32_MAX)
        return qmm_status_set(st, QMM_UNSUPPORTED, "gemmlowp: dimensions are int");
    double m = static_cast<double>(peer_scale(&q->a_scale, 0)) * peer_scale(&q->b_scale, 0) /
               peer_scale(&q->y_scale, 0);
    fixed_point fp = quantize_multiplier(m);
    if (fp.exponent > 0)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "gemmlowp: sa*sb/sy = %.17g >= 1 (Q31 %d, exponent %d): "
                              "OutputStageQuantizeDownInt32ByFixedPoint only shifts right",
                              m, fp.multiplier, fp.exponent);
    if (fp.multiplier == 0)
        return qmm_status_set(st, QMM_UNSUPPORTED,
                              "gemmlowp: sa*sb/sy = %.17g < 2^-32 quantizes to multiplier 0 "
                              "(QuantizeMultiplier's shift < -31 rule)", m);
    gemmlowp::OutputStageQuantizeDownInt32ByFixedPoint down;
    down.result_fixedpoint_multiplier = fp.multiplier;
    down.result_shift = -fp.exponent;
    down.result_offset_after_shift = peer_q8(&q->y_zero_point, 0);
    gemmlowp::OutputStageSaturatingCastToUint8 cast;
    const auto pipeline = std::make_tuple(down, cast);
    const int rows = static_cast<int>(g.m), depth = static_cast<int>(g.k);
    const int cols = static_cast<int>(g.n);
    const std::uint8_t *a = static_cast<const std::uint8_t *>(q->a.data);
    const std::uint8_t *b = static_cast<const std::uint8_t *>(q->b.data);
    std::uint8_t *y = static_cast<std::uint8_t *>(q->y.data);
    try {
        gemmlowp::GemmContext context;
        for (int64_t i = 0; i < g.batch; i++) {
            in_map lhs(a + peer_batch_source(&g, g.a, i) * g.m * g.k, rows, depth);
            in_map rhs(b + peer_batch_source(&g, g.b, i) * g.k * g.n, depth, cols);
            out_map result(y + i * g.m * g.n, rows, cols);
            gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::uint8_t,
                                             gemmlowp::DefaultL8R8BitDepthParams>(
                &context, lhs, rhs, &result, -peer_q8(&q->a_zero_point, 0),
                -peer_q8(&q->b_zero_point, 0), pipeline);
        }
    } catch (const std::bad_alloc &) {
        return qmm_status_oom(st, "gemmlowp", nullptr);
    }
    return qmm_status_ok(st);
}

} // namespace

qmm_backend *qmm_backend_open(uint32_t harness_abi, const char *options, qmm_status *st)
{
    if (!peer_open_check("gemmlowp", harness_abi, options, st))
        return nullptr;
    return peer_qlinear_table("gemmlowp",
                              "gemmlowp " QMM_GEMMLOWP_VERSION " u8 GEMM, TFLite fixed-point "
                              "output pipeline (Q31 multiplier, right shift)",
                              gemmlowp_query, gemmlowp_qlinearmatmul, st);
}
