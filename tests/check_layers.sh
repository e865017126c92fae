#!/usr/bin/env bash
# tests/check_layers.sh SRC — the harness's layers only point down (docs/architecture.md §2).
#
# Each folder of harness/ is one layer, one static library (harness/CMakeLists.txt), in this
# order from the bottom: base, io, gen, invoke, judge, run, report, cli. A file may include its
# own folder's headers and those of the layers below it; an #include "harness/X/..." of a layer
# above (up) or of a folder that is not a layer (sideways: a new folder must be given its place
# here and in harness/CMakeLists.txt) fails, one line per include naming the file and line.
# A folder below a layer (gen/edge/) is that layer. The fuzz parser targets link qmm_onnx (the
# io layer's ONNX files): those files may not include a case's call, a backend or a reference,
# so that library stays free of backends.
set -uo pipefail
src=${1:?usage: check_layers.sh SOURCE_DIR}
cd "$src" || exit 2

layers=(base io gen invoke judge run report cli)
rank() {
  local i
  for i in "${!layers[@]}"; do
    if [ "${layers[$i]}" = "$1" ]; then
      echo "$i"
      return
    fi
  done
  echo -1
}

# the io files in qmm_onnx, which must not reach a backend
onnx_files=$(sed -n '/^add_library(qmm_onnx$/,/)/p' harness/CMakeLists.txt | grep -oE 'io/[a-z_]+\.c')

fail=0
checked=0
while IFS= read -r f; do
  own=$(cut -d/ -f2 <<<"$f")
  own_rank=$(rank "$own")
  if [ "$own_rank" -lt 0 ]; then
    echo "LAYER: $f is in harness/$own/, which is not a layer (base io gen invoke judge run report cli)"
    fail=1
    continue
  fi
  while IFS=: read -r line inc; do
    checked=$((checked + 1))
    to=$(sed -E 's#.*"harness/([a-z_]+)/.*#\1#' <<<"$inc")
    to_rank=$(rank "$to")
    if [ "$to_rank" -lt 0 ]; then
      echo "SIDEWAYS: $f:$line includes harness/$to/, which is not a layer: $inc"
      fail=1
    elif [ "$to_rank" -gt "$own_rank" ]; then
      echo "UP: $f:$line ($own) includes a header of $to, a layer above it: $inc"
      fail=1
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"harness/' "$f" | cut -d: -f1,2-)
done < <(find harness -name '*.[ch]' | sort)

# qmm_onnx stays free of backends: its files and the headers they include
for c in $onnx_files; do
  f=harness/$c
  for h in "$f" "${f%.c}.h"; do
    [ -f "$h" ] || continue
    bad=$(grep -nE '#[[:space:]]*include[[:space:]]*"(harness/io/case\.h|reference/|optimized/|harness/(gen|invoke|judge|run|report|cli)/)' "$h")
    if [ -n "$bad" ]; then
      echo "BACKEND: $h is in qmm_onnx (what the fuzz parser targets link) but includes: $bad"
      fail=1
    fi
  done
done

if [ "$fail" = 0 ]; then
  echo "layers: $checked includes checked, every one points down or within its layer"
fi
exit $fail
