#!/usr/bin/env bash
# qmmcheck diff --only supported against a kernel of one form (a mutant restricted to the
# simplest u8*s8->u8 form): problems are drawn again until both backends' queries accept them,
# so more than 90% of --count 200 are compared (without it 199 of 200 are SKIPPED); each
# differing element shows the reference's acc and exact value (issue 26).
#   check_diff_supported.sh QMMCHECK MUTANT_DIR SOURCE_DIR
set -uo pipefail
qmmcheck=$1 dir=$2 src=$3
cd "$src"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# in process: a worker's round trip per refused draw would take most of the time
"$qmmcheck" diff --backend reference --backend "$dir/libmutant-none.so:only=u8s8u8" --seed 1 \
  --count 200 --only supported --quiet --no-isolate --out "$tmp/d0" >"$tmp/none" 2>&1
rc=$?
summary=$(grep '^DIFF SUMMARY' "$tmp/none")
echo "control: exit $rc, $summary"
same=$(sed -nE 's/.* same:([0-9]+) .*/\1/p' <<<"$summary")
if [ "$rc" -ne 0 ] || [ "${same:-0}" -le 180 ]; then
  echo "FAIL: want exit 0 and more than 180 of 200 problems compared"
  fail=1
fi

"$qmmcheck" diff --backend reference --backend "$dir/libmutant-ties-away.so:only=u8s8u8" \
  --seed 1 --count 40 --only supported --quiet --no-isolate --out "$tmp/d1" >"$tmp/ties" 2>&1
rc=$?
grep -m1 '^DIFF seed' "$tmp/ties" | grep -o '__REPRO.*'
grep -m2 '(index ' "$tmp/ties"
grep '^DIFF SUMMARY' "$tmp/ties"
if [ "$rc" -ne 1 ] || ! grep -qE '\(index [0-9]+\): A [0-9]+, B [0-9]+, reference [0-9]+; acc -?[0-9]+; exact -?[0-9.]+$' "$tmp/ties" ||
   ! grep -qE -- '--only supported --draw [0-9]+$' "$tmp/ties"; then
  echo "FAIL: want exit 1, differences with acc and exact, and __REPRO lines keeping --only and naming the draw"
  fail=1
fi
# the __REPRO line reproduces the same problem
repro=$(grep -m1 -o '__REPRO: qmmcheck diff .*' "$tmp/ties" | sed 's/^__REPRO: qmmcheck //')
first=$(grep -m1 '(index ' "$tmp/ties")
# shellcheck disable=SC2086
eval "\"$qmmcheck\" $repro --quiet --no-isolate --out \"$tmp/d2\"" >"$tmp/repro" 2>&1
if ! grep -qF -- "$first" "$tmp/repro"; then
  echo "FAIL: the __REPRO line did not give '$first'"
  fail=1
fi
exit $fail
