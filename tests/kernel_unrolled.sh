#!/bin/bash
# tests/kernel_unrolled.sh LIB — the intrinsics kernels in the optimized backend's static
# library LIB keep their accumulators in registers: each function has at least as many
# multiply-add instructions (vpdpbusd; vpmaddwd for the AVX2 gemvs) as its unrolled tiles need
# (one per accumulator per K step), which a
# loop over rows that the compiler left rolled does not (it ran the accumulators through memory
# and was 1.6-3.9x slower: optimized/cpu/unroll.h); and the assembly tile kernels' K loops run
# two K groups a turn (1.4-4.2% faster, docs/optimized.md). CMake registers it for optimized x86-64
# builds without link-time optimization (whose archive holds no machine code), where every
# function below must be present; 77 (skip) only without objdump.
set -euo pipefail
lib=$1
command -v objdump >/dev/null || { echo "SKIP: no objdump"; exit 77; }
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
objdump -d --no-show-raw-insn "$lib" > "$dis"
# function, instruction, the fewest its tiles need:
#   rx32c4 avx512vnni: rows 1-4 on two accumulator sets with a one-group tail (6 per row),
#                      rows 5-8 one set (2 per row): 6 * (1+2+3+4) + 2 * (5+6+7+8)
#   rx32c4_dense avx512vnni: the same for rows 1-7: 6 * (1+2+3+4) + 2 * (5+6+7)
#   6x16c4 avxvnni: 6 rows x 2 column halves; rx16c4: rows 1-5 and the default 6, 2 per row
#   rx32c4_tiles amx: the vnni rows 1-4, two sets (4 per row)
#   gemv r4 avx2: rows R = 1-4, 4 column vectors a row, k-pair passes of 4, 1 and the odd
#                 last (6 pairs), for int8 and uint8 b: 2 * 4 * 6 * (1+2+3+4)
#   gemv r4x16c2 avx2: R rows x pp panels x 2 (R, pp = 1, 4 | 2, 2 | 3, 2 | 4, 1), plus the
#                      one-panel tail (2R; R = 4's is the same block): 8+2 + 8+4 + 12+6 + 8
want=(
  "qmm_gemm_u8s8_rx32c4__avx512vnni vpdpbusd 112"
  "qmm_gemm_u8s8_rx32c4_dense__avx512vnni vpdpbusd 96"
  "qmm_gemm_u8s8_6x16c4__avxvnni vpdpbusd 12"
  "qmm_gemm_u8s8_rx16c4__avxvnni vpdpbusd 42"
  "qmm_gemm_u8s8_rx32c4_tiles__amx vpdpbusd 40"
  "qmm_gemv_s16u8_r4__avx2 vpmaddwd 480"
  "qmm_gemv_s16u8_r4x16c2__avx2 vpmaddwd 48"
  # the assembly K loops two groups a turn (QMM_K_LOOP, QMM_AVX2_PAIR): the odd group's
  # products plus twice that; the overlapped kernels hold it twice (uint8 and int8 y) for
  # their first loop and their stretches
  "qmm_gemm_u8s8_8x32c4__avx512vnni vpdpbusd 48"
  "qmm_gemm_u8s8_8x32c4_rawa__avx512vnni vpdpbusd 48"
  "qmm_gemm_u8s8_8x32c4_rawa_rq__avx512vnni vpdpbusd 192"
  "qmm_gemm_u8s8_8x32c4_rq__avx512vnni vpdpbusd 192"
  "qmm_gemm_s16u8_6x16c2__avx2 vpmaddwd 36"
)
bad=0
for w in "${want[@]}"; do
  read -r fn insn min <<< "$w"
  if ! grep -q "<$fn>:" "$dis"; then
    echo "FAIL: $fn is not in $lib's machine code (renamed? an LTO archive?)"
    bad=1
    continue
  fi
  n=$(awk -v f="<$fn>:" -v i="$insn" '$2 == f {on = 1; next} on && /^$/ {on = 0} on && $0 ~ i {c++} END {print c + 0}' "$dis")
  if [ "$n" -lt "$min" ]; then
    echo "FAIL: $fn has $n $insn, its unrolled tiles need at least $min (a row loop left rolled?)"
    bad=1
  else
    echo "ok: $fn has $n $insn (at least $min)"
  fi
done
exit $bad
