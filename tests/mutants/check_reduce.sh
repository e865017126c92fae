#!/usr/bin/env bash
# Runs `qmmcheck diff` of the reference against every mutant backend, reduces the first
# difference it saves (`diff --reduce`) and checks the reduced shape against the table
# "Reduced by qmmcheck reduce" of docs/mutants.md: each bug must shrink to the smallest shape
# it needs, no larger (a weaker reducer) and no smaller (a reducer that lost the bug).
#   check_reduce.sh QMMCHECK MUTANT_DIR SOURCE_DIR
set -uo pipefail
qmmcheck=$1 dir=$2 src=$3
table="$src/docs/mutants.md"

# name | backend options | diff and reduce options
mutants=(
  "ties-away||"
  "zp-before-rounding||"
  "float32-requant||"
  "wrap-not-saturate||"
  "pair-sum-saturation||"
  "row-params-per-column||"
  "ignore-b-scale-per-column||"
  "ignore-a-zero-point||"
  "drop-last-k||"
  "write-past-output||"
  "write-input||"
  "crash-k0||"
  "hang-m1||--timeout 0.5"
  "thread-dependent|:threads=2|"
)

# The expected shape of a mutant: the backquoted third column of its row in the table.
expected() {
  sed -n '/^## Reduced by/,$p' "$table" | grep -E "^\| \`$1\` \|" |
    awk -F'|' '{print $4}' | sed -E 's/^ *`?//; s/`? *$//'
}

fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for entry in "${mutants[@]}"; do
  IFS='|' read -r name opts extra <<<"$entry"
  want=$(expected "$name")
  if [ -z "$want" ]; then
    echo "NO ROW for $name in $table (section 'Reduced by qmmcheck reduce')"
    fail=1
    continue
  fi
  out="$tmp/$name.txt"
  # shellcheck disable=SC2086
  "$qmmcheck" diff --quiet --backend reference --backend "$dir/libmutant-$name.so$opts" \
    --seed 1 --count 5000 --max-diffs 1 --out "$tmp/$name" --reduce $extra >"$out" 2>&1
  got=$(grep -m1 -E '^ *REDUCED ' "$out" | sed -E 's/.* -> (.*) in [0-9]+ tries.*/\1/')
  if [ "$got" != "$want" ]; then
    echo "WRONG: $name reduced to '${got:-nothing}', the table says '$want'"
    cat "$out"
    fail=1
    continue
  fi
  echo "reduced: $name to $got ($(grep -m1 -oE 'in [0-9]+ tries' "$out"))"
  # the reduced case must still fail the same way when replayed as its repro line says
  repro=$(grep -m1 -E '^ *[A-Z]+ .*-reduced \(.*__REPRO: ' "$out")
  status=$(awk '{print $1}' <<<"$repro")
  rdir=$(ls -d "$tmp/$name"/problem-*-reduced 2>/dev/null | head -1)
  # shellcheck disable=SC2086
  "$qmmcheck" repro --backend "$dir/libmutant-$name.so$opts" $extra "$rdir" >"$tmp/repro.txt" 2>&1
  if [ -z "$status" ] || ! grep -q "^1:$status " "$tmp/repro.txt"; then
    echo "NOT REPRODUCED: $name: $rdir is not $status"
    cat "$tmp/repro.txt"
    fail=1
  fi
done
exit $fail
