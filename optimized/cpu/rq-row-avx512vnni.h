/* optimized/cpu/rq-row-avx512vnni.h — the overlapped kernels' row step, as assembly text:
 * one row of the previous 8x32 tile requantized between two stretches of the next tile's K
 * loop (gemm-u8s8-8x32c4-avx512vnni.c, QMM_RQ_BODY). A header of its own so that
 * bench/vnni_overlap.c times these very instructions beside vpdpbusd; no dependencies. The
 * operands it names: %[q] the qmm_opt_rq_tile (zr at 0, decided at 32, ldy at 64), %[i] the
 * row, %[s] the previous tile's sums (advanced by %[ldcb] a row), %[p] the column
 * corrections (32 int32) and float multipliers (32 float, at 128), %[y] the row's 32 output
 * bytes (advanced by ldy a row). */
#ifndef QMM_OPT_RQ_ROW_AVX512VNNI_H
#define QMM_OPT_RQ_ROW_AVX512VNNI_H

/* One row of the previous tile requantized (qmm_opt_rq_tile): x = sums - zr - zc, then
 * qmm_opt_requant_row_avx512's float first try on columns 0-15 (zmm20-22, k1) and 16-31
 * (zmm23-25, k2), every rounding embedded RNE; the decided masks to rq->decided[row] (and
 * ANDed into k4, which the kernel stores with them after the last row); the
 * bytes through NARROW(register, offset). Constants (the kernels' rq_const): zmm26 lim, zmm27 -lim,
 * zmm28 the half, zmm29 the absolute-value mask; zmm30 zy, zmm31 zero. %[i] is the row. */
#define QMM_RQ_ROW(NARROW) \
        "vpbroadcastd (%[q],%[i],4), %%zmm22\n\t" \
        "vmovdqu32 (%[s]), %%zmm20\n\t" \
        "vmovdqu32 64(%[s]), %%zmm23\n\t" \
        "vpsubd %%zmm22, %%zmm20, %%zmm20\n\t" \
        "vpsubd %%zmm22, %%zmm23, %%zmm23\n\t" \
        "vpsubd (%[p]), %%zmm20, %%zmm20\n\t" \
        "vpsubd 64(%[p]), %%zmm23, %%zmm23\n\t" \
        "vcvtdq2ps %{rn-sae%}, %%zmm20, %%zmm20\n\t" \
        "vcvtdq2ps %{rn-sae%}, %%zmm23, %%zmm23\n\t" \
        "vmovups 128(%[p]), %%zmm21\n\t" \
        "vmovups 192(%[p]), %%zmm24\n\t" \
        "vmulps %{rn-sae%}, %%zmm21, %%zmm20, %%zmm20\n\t" \
        "vmulps %{rn-sae%}, %%zmm24, %%zmm23, %%zmm23\n\t" \
        "vmaxps %%zmm27, %%zmm20, %%zmm20\n\t" \
        "vmaxps %%zmm27, %%zmm23, %%zmm23\n\t" \
        "vminps %%zmm26, %%zmm20, %%zmm20\n\t" \
        "vminps %%zmm26, %%zmm23, %%zmm23\n\t" \
        "vreduceps $0, %%zmm20, %%zmm21\n\t" \
        "vreduceps $0, %%zmm23, %%zmm24\n\t" \
        "vpandd %%zmm29, %%zmm21, %%zmm21\n\t" \
        "vpandd %%zmm29, %%zmm24, %%zmm24\n\t" \
        "vcmpps $0x11, %%zmm28, %%zmm21, %%k1\n\t" \
        "vcmpps $0x11, %%zmm28, %%zmm24, %%k2\n\t" \
        "vcvtps2dq %{rn-sae%}, %%zmm20, %%zmm20\n\t" \
        "vcvtps2dq %{rn-sae%}, %%zmm23, %%zmm23\n\t" \
        "vpaddd %%zmm30, %%zmm20, %%zmm20\n\t" \
        "vpaddd %%zmm30, %%zmm23, %%zmm23\n\t" \
        NARROW("20", "0") \
        NARROW("23", "16") \
        "kunpckwd %%k1, %%k2, %%k3\n\t" \
        "kmovd %%k3, 32(%[q],%[i],4)\n\t" \
        "kandd %%k3, %%k4, %%k4\n\t" \
        "add %[ldcb], %[s]\n\t" \
        "add 64(%[q]), %[y]\n\t"
#define QMM_NARROW_U8(R, OFF) \
        "vpmaxsd %%zmm31, %%zmm" R ", %%zmm" R "\n\t" \
        "vpmovusdb %%zmm" R ", " OFF "(%[y])\n\t"
#define QMM_NARROW_S8(R, OFF) "vpmovsdb %%zmm" R ", " OFF "(%[y])\n\t"

#endif
