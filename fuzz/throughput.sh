#!/usr/bin/env bash
# fuzz/throughput.sh BUILD_DIR [RUNS] [REPEATS] — exec/s of the differential targets on the
# committed corpus: each target runs RUNS inputs (default 20000; the corpus first, then
# mutations, new inputs into a temporary directory, never into fuzz/corpus/), REPEATS times
# (default 3), and the median of libFuzzer's final exec/s is printed per target, with the
# median of inputs per CPU second (user + system, every thread), which a busy machine
# disturbs less than the wall clock libFuzzer's figure divides by. The
# environment passes through, so QMM_FUZZ_VARIANTS=all measures running every variant on every
# input. Issue 16 asks for >= 2000 exec/s without sanitizers (-DQMM_SANITIZE=OFF) and >= 500
# with ASan + UBSan (the default fuzzing build); fuzz/README.md, "Throughput", has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/throughput.sh BUILD_DIR [RUNS] [REPEATS]}
runs=${2:-20000}
reps=${3:-3}
# -runs=-1 is libFuzzer's "for ever", and a non-number 0 runs
[[ "$runs" =~ ^[1-9][0-9]{0,8}$ ]] ||
  { echo "throughput: RUNS $(printf %q "$runs"): a whole number from 1" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]?$ ]] ||
  { echo "throughput: REPEATS $(printf %q "$reps"): a whole number, 1 to 99" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# the differential targets, found as fuzz/CMakeLists.txt finds them: the fuzz_*.c files that
# include fuzz/differential.h
for src in $(grep -l '#include "fuzz/differential.h"' fuzz/fuzz_*.c); do
  t=$(basename "$src" .c)
  bin=$build/fuzz/$t
  [ -x "$bin" ] || { echo "throughput: $bin is not built"; exit 1; }
  rates=() cpu=()
  for ((i = 0; i < reps; i++)); do
    rm -rf "${scratch:?}"/*
    # bash's `time` keyword writes "user sys" (TIMEFORMAT) after the command's own stderr
    out=$( { TIMEFORMAT='%U %S'; time "$bin" -runs="$runs" -print_final_stats=1 \
               -dict=fuzz/dict/decode.dict "$scratch" "fuzz/corpus/$t" 2>&1; } 2>&1)
    r=$(sed -n 's/^stat::average_exec_per_sec: *//p' <<<"$out")
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' <<<"$out")
    rates+=("${r:-0}")
    cpu+=("$(tail -n 1 <<<"$out" | awk -v n="${n:-0}" '{ s = $1 + $2; printf "%d", (s > 0 ? n / s : 0) }')")
  done
  mid=$(((reps + 1) / 2))
  median=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n "${mid}p")
  cmedian=$(printf '%s\n' "${cpu[@]}" | sort -n | sed -n "${mid}p")
  echo "throughput: $t median ${median} exec/s, ${cmedian} exec per CPU second" \
       "(runs: ${rates[*]} exec/s; ${cpu[*]} exec/CPU-s; $runs inputs each)"
done
