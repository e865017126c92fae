#!/usr/bin/env bash
# Runs every mutant backend over the default suites (vectors/) and asserts that each is killed
# with the expected status and reason; the unmutated control build, the reference and (when
# built) the optimized backend must pass the same suites.
#   check_mutants.sh QMMCHECK MUTANT_DIR SOURCE_DIR [--table FILE]
set -uo pipefail
qmmcheck=$1 dir=$2 src=$3
table=""
[ "${4:-}" = "--table" ] && table=$5
cd "$src"

# name | expected status | reason pattern (grep -E) | extra options
# (hang-m1 runs the peers' cases only: each of the 167 M = 1 cases of the default suites costs
# its whole timeout, 170 s in all; the 14 under peers/ show the same kill in 15 s)
mutants=(
  "ties-away|FAILED|errors:[0-9]+|"
  "zp-before-rounding|FAILED|errors:[0-9]+|"
  "float32-requant|FAILED|errors:[0-9]+|"
  "wrap-not-saturate|FAILED|errors:[0-9]+|"
  "pair-sum-saturation|FAILED|errors:[0-9]+|"
  "row-params-per-column|FAILED|errors:[0-9]+|"
  "ignore-b-scale-per-column|FAILED|errors:[0-9]+|"
  "ignore-a-zero-point|FAILED|errors:[0-9]+|"
  "drop-last-k|FAILED|errors:[0-9]+|"
  "write-past-output|FAILED|wrote 1 byte past the end of y|"
  "write-input|FAILED|wrote into input [aA]|"
  "crash-k0|CRASHED|killed by SIGSEGV|"
  "hang-m1|TIMEOUT|no answer within|--timeout 1 --filter ^peers/"
  "thread-dependent|FAILED|not deterministic: .*threads=2|--determinism --variants threads=2"
)

fail=0
rows=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for entry in "${mutants[@]}"; do
  IFS='|' read -r name status reason extra <<<"$entry"
  out="$tmp/$name.txt"
  # shellcheck disable=SC2086
  "$qmmcheck" run --quiet --backend "$dir/libmutant-$name.so" --vectors vectors $extra >"$out" 2>&1
  rc=$?
  line=$(grep -E "^[0-9]+:$status " "$out" | grep -E -m1 "$reason")
  summary=$(grep '^SUMMARY:' "$out")
  if [ "$rc" -ne 1 ] || [ -z "$line" ]; then
    echo "NOT KILLED as expected: $name (exit $rc, want 1 with a $status line matching /$reason/)"
    echo "  $summary"
    fail=1
    rows+=("| $name | — | not killed | |")
    continue
  fi
  case_name=$(sed -E 's/^[0-9]+:[A-Z]+ ([^ ]+).*/\1/' <<<"$line")
  detail=$(sed -E 's/^[0-9]+:[A-Z]+ [^ ]+ \((.*)\) __REPRO:.*/\1/' <<<"$line")
  killed=$(grep -cE "^[0-9]+:(FAILED|CRASHED|TIMEOUT) " "$out")
  echo "killed: $name by $case_name ($status: $detail); $killed cases kill it"
  rows+=("| \`$name\` | \`$case_name\` | $status | $detail | $killed |")
done

# The control build and the real backends must pass the very suites that kill the mutants.
controls=("$dir/libmutant-none.so" reference)
"$qmmcheck" list --backends | grep -qx optimized && controls+=(optimized)
for be in "${controls[@]}"; do
  if "$qmmcheck" run --quiet --backend "$be" --vectors vectors >"$tmp/control.txt" 2>&1; then
    echo "passes: $be ($(grep '^SUMMARY:' "$tmp/control.txt"))"
  else
    echo "CONTROL FAILED: $be"
    cat "$tmp/control.txt"
    fail=1
  fi
done

if [ -n "$table" ]; then
  # the sections after the table (check_reduce.sh's "Reduced by qmmcheck reduce") are kept
  kept=$(sed -n '/^## /,$p' "$table" 2>/dev/null)
  {
    echo "# Mutant backends and the cases that kill them"
    echo
    echo "Each mutant in \`tests/mutants/\` is the correct control backend (\`mutant.c\` built without"
    echo "a mutant macro) with one real bug put in. The default suites (\`vectors/\`: ONNX node tests,"
    echo "seeds, edge suites) must kill every one; ctest's \`mutants_killed_by_default_suites\` checks"
    echo "the status and reason below, and that the control, the reference and the optimized backend"
    echo "pass the same suites. The thread-count mutant is run with \`--determinism --variants threads=2\`,"
    echo "the hang with \`--timeout 1\`. \"First case\" is the first in run order (cases sort by name)."
    echo
    echo "Regenerate: \`tests/mutants/check_mutants.sh build/harness/qmmcheck build/tests/mutants . --table docs/mutants.md\`"
    echo
    echo "| mutant | first case that kills it | status | reason | cases that kill it |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    [ -n "$kept" ] && printf '\n%s\n' "$kept"
  } >"$table"
fi
exit $fail
