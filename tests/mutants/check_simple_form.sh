#!/usr/bin/env bash
# The default suites in the simplest form of each type combination (2-D a and b, per-tensor
# parameters, float32 scales): every mutant that can exist in that form, restricted to it with
# only=TYPES (tests/mutants/mutant.c) as a kernel that supports only that form is, must be
# caught by at least 3 cases of each combination; the unmutated control, restricted the same
# way, must pass, and for every QLinearMatMul combination judge at least 40 cases.
#   check_simple_form.sh QMMCHECK MUTANT_DIR SOURCE_DIR [VECTORS_DIR]
# Prints one line per combination: the judged cases, then each mutant's count of catching
# cases (FAILED, CRASHED or TIMEOUT lines).
set -uo pipefail
qmmcheck=$1 dir=$2 src=$3 vectors=${4:-vectors}
cd "$src"
min_caught=3 min_judged=40

# name | extra options. row-params-per-column and ignore-b-scale-per-column need per-row or
# per-column parameters, which the simplest form does not have.
qlm_mutants=(
  "ties-away|" "zp-before-rounding|" "float32-requant|" "wrap-not-saturate|"
  "pair-sum-saturation|" "ignore-a-zero-point|" "drop-last-k|" "write-past-output|"
  "write-input|" "crash-k0|" "hang-m1|--timeout 0.25"
  "thread-dependent|--determinism --variants threads=2"
)
# MatMulInteger has no requantization (and the thread-count mutant is QLinearMatMul's only)
mmi_mutants=(
  "pair-sum-saturation|" "ignore-a-zero-point|" "drop-last-k|" "write-past-output|"
  "write-input|" "crash-k0|" "hang-m1|--timeout 0.25"
)

fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for types in u8u8u8 u8u8s8 u8s8u8 u8s8s8 s8u8u8 s8u8s8 s8s8u8 s8s8s8 u8u8 u8s8 s8u8 s8s8; do
  "$qmmcheck" run --quiet --allow-empty --backend "$dir/libmutant-none.so:only=$types" \
    --vectors "$vectors" >"$tmp/control.txt" 2>&1
  rc=$?
  summary=$(grep '^SUMMARY:' "$tmp/control.txt")
  total=$(sed -E 's/.*total:([0-9]+).*/\1/' <<<"$summary")
  skipped=$(sed -E 's/.* skipped:([0-9]+).*/\1/' <<<"$summary")
  judged=$((total - skipped))
  line="$types judged:$judged"
  if [ "$rc" -ne 0 ]; then
    echo "CONTROL FAILED: none:only=$types (exit $rc)"
    grep -E '^[0-9]+:(FAILED|CRASHED|TIMEOUT|ERROR) ' "$tmp/control.txt" | head -5
    fail=1
  fi
  if [ "${#types}" = 6 ] && [ "$judged" -lt "$min_judged" ]; then
    echo "TOO FEW: $types judges $judged cases (want >= $min_judged)"
    fail=1
  fi
  if [ "${#types}" = 6 ]; then list=("${qlm_mutants[@]}"); else list=("${mmi_mutants[@]}"); fi
  for entry in "${list[@]}"; do
    IFS='|' read -r name extra <<<"$entry"
    # shellcheck disable=SC2086
    "$qmmcheck" run --quiet --allow-empty --backend "$dir/libmutant-$name.so:only=$types" \
      --vectors "$vectors" $extra >"$tmp/m.txt" 2>&1
    caught=$(grep -cE '^[0-9]+:(FAILED|CRASHED|TIMEOUT) ' "$tmp/m.txt")
    line+=" $name:$caught"
    if [ "$caught" -lt "$min_caught" ]; then
      echo "NOT CAUGHT ENOUGH: $name restricted to the simplest $types form: $caught cases (want >= $min_caught)"
      fail=1
    fi
  done
  echo "$line"
done
exit $fail
