/* optimized/cuda/exact.c — QOrderedMatMul's exact rounding for the undecided elements: the
 * decision optimized/qordered_exact.h defines (and argues exact), which the CPU backend shares,
 * under the CUDA backend's name. */
#include "optimized/cuda/exact.h"
#include "optimized/qordered_exact.h"

int8_t qmm_cu_qord_exact(double sa, double sb, double sy, double bias, double sc, int32_t acc,
                         int8_t cv)
{
    return qmm_qord_exact(sa, sb, sy, bias, sc, acc, cv);
}
