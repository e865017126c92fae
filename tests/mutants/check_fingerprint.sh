#!/usr/bin/env bash
# qmmcheck fingerprint on the deliberately broken kernels of issue 26, each restricted to the
# simplest u8*s8->u8 form (only=u8s8u8): a kernel that rounds ties away from zero, one that wraps
# instead of saturating and one that adds the zero point before rounding are named by their
# wrong rule (exit 5), never by a correct profile; the unmutated control is spec (exit 0); a
# kernel whose answered cases cannot decide (MatMulInteger s8*s8 only) is inconclusive (exit 4),
# naming forms that would decide. The example vendor plugin (examples/vendor-plugin), which
# requantizes in double, is named by the float64 wrong rule (exit 5), not spec. And run's "got
# matches" names the ties-away rule on a case whose every mismatch it explains, and nothing on a
# single mismatch.
#   check_fingerprint.sh QMMCHECK MUTANT_DIR SOURCE_DIR EXAMPLE_PLUGIN
set -uo pipefail
qmmcheck=$1 dir=$2 src=$3 example=$4
cd "$src"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fingerprint MUTANT:OPTIONS (or a path) WANT_EXIT WANT_LINE
check() {
  local be=$dir/libmutant-$1
  case $1 in /*) be=$1 ;; esac
  "$qmmcheck" fingerprint --backend "$be" >"$tmp/out" 2>&1
  local rc=$?
  local got
  got=$(grep '^verdict:' "$tmp/out")
  echo "$1: exit $rc, $got"
  if [ "$rc" -ne "$2" ] || ! grep -qF -- "$3" "$tmp/out"; then
    echo "FAIL: $1: want exit $2 and '$3'"
    sed 's/^/  | /' "$tmp/out" | grep -v SKIPPED
    fail=1
  fi
}

check ties-away.so:only=u8s8u8 5 "verdict: ties-away (matches every case it defines)"
check ties-away.so:only=u8s8u8 5 "ties-away is a wrong rule, not an implementation's: the spec with ties rounded half away from zero"
check wrap-not-saturate.so:only=u8s8u8 5 "verdict: wrap (matches every case it defines)"
check zp-before-rounding.so:only=u8s8u8 5 "verdict: zp-before-rounding (matches every case it defines)"
check float32-requant.so:only=u8s8u8 0 "verdict: ort-fp32 (matches every case it defines)"
check none.so:only=u8s8u8 0 "verdict: spec (matches every case it defines)"
check ties-away.so 5 "verdict: ties-away (matches every case it defines)"
check wrap-not-saturate.so 5 "verdict: wrap (matches every case it defines)"
check none.so:only=s8s8 4 "verdict: inconclusive (spec, onnx-ref, ort-fp32, onednn-fp32, ties-away, truncation, wrap, zp-before-rounding, float64 each match every case answered)"
check "$example" 5 "verdict: float64 (matches every case it defines)"
check "$example" 5 "float64 is a wrong rule, not an implementation's: the spec with requantization in float64"
check none.so:only=s8s8 4 "  forms that would decide: QLinearMatMul u8*u8->u8, 2-D, per-tensor, float scales;"

# run: every mismatch of even-zp-pos-u8s8u8 is a tie rounded away; high-zp-at-bound-u8s8u8 has
# one mismatch, which onnx-ref's rule gives by coincidence
"$qmmcheck" run --backend "$dir/libmutant-ties-away.so:only=u8s8u8" \
  --vectors vectors/edge/qlinearmatmul \
  --filter 'ties/even-zp-pos-u8s8u8$|saturation/high-zp-at-bound-u8s8u8$' >"$tmp/run" 2>&1
grep -E 'FAILED|got matches|index' "$tmp/run" | cut -c1-160
if ! grep -q "expected 128, got 129; acc 1; acc\*scale = 0.5; got matches: ties-away$" "$tmp/run" ||
   grep -q "got matches: onnx-ref, onednn-fp32$" "$tmp/run"; then
  echo "FAIL: run's got matches"
  fail=1
fi
exit $fail
