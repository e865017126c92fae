#!/bin/bash
# tests/kernel_unrolled.sh LIB — the intrinsics tile kernels in the optimized backend's static
# library LIB keep their accumulators in registers: each function has at least as many
# vpdpbusd instructions as its unrolled tiles need (one per accumulator per K step), which a
# loop over rows that the compiler left rolled does not (it ran the accumulators through memory
# and was 1.6-2.6x slower: gemm-u8s8-8x32c4-avx512vnni.c). Optimized builds only (CMake
# registers it so); 77 (skip) without objdump or where the library has no x86 kernels.
set -euo pipefail
lib=$1
command -v objdump >/dev/null || { echo "SKIP: no objdump"; exit 77; }
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
objdump -d --no-show-raw-insn "$lib" > "$dis"
# function, the fewest vpdpbusd its tiles need:
#   rx32c4 avx512vnni: rows 1-4 on two accumulator sets with a one-group tail (6 per row),
#                      rows 5-8 one set (2 per row): 6 * (1+2+3+4) + 2 * (5+6+7+8)
#   6x16c4 avxvnni: 6 rows x 2 column halves; rx16c4: rows 1-5 and the default 6, 2 per row
#   rx32c4_tiles amx: the vnni rows 1-4, two sets (4 per row)
want=(
  "qmm_gemm_u8s8_rx32c4__avx512vnni 112"
  "qmm_gemm_u8s8_6x16c4__avxvnni 12"
  "qmm_gemm_u8s8_rx16c4__avxvnni 42"
  "qmm_gemm_u8s8_rx32c4_tiles__amx 40"
)
seen=0 bad=0
for w in "${want[@]}"; do
  fn=${w% *} min=${w#* }
  if ! grep -q "<$fn>:" "$dis"; then
    echo "absent: $fn (not an x86 build?)"
    continue
  fi
  seen=$((seen + 1))
  n=$(awk -v f="<$fn>:" '$2 == f {on = 1; next} on && /^$/ {on = 0} on && /vpdpbusd/ {c++} END {print c + 0}' "$dis")
  if [ "$n" -lt "$min" ]; then
    echo "FAIL: $fn has $n vpdpbusd, its unrolled tiles need at least $min (a row loop left rolled?)"
    bad=1
  else
    echo "ok: $fn has $n vpdpbusd (at least $min)"
  fi
done
[ "$seen" -gt 0 ] || { echo "SKIP: no x86 tile kernels in $lib"; exit 77; }
exit $bad
