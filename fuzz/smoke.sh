#!/usr/bin/env bash
# fuzz/smoke.sh [SECONDS] — the CI fuzz step: builds the libFuzzer targets with clang into
# build-fuzz (-DQMM_FUZZ=ON: ASan + UBSan + coverage; the CUDA backend too where nvcc is found,
# for the host emulation the differential targets compare) and runs each for SECONDS (default 60)
# from the committed corpus (read, never written: new inputs go to a temporary directory).
# Fails on any crash, sanitizer report, leak or "...-difference" abort; the crashing input
# and, for a difference, its ONNX case directory are kept under build-fuzz/smoke/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
# libFuzzer reads -max_total_time=0 (and a non-number, as 0) as no limit: refused
if ! [[ "$secs" =~ ^[1-9][0-9]{0,5}$ ]]; then
  echo "fuzz smoke: SECONDS $(printf %q "$secs"): a whole number of seconds, 1 to 999999" >&2
  exit 2
fi
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DQMM_FUZZ=ON -DQMM_BUILD_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
out=build-fuzz/smoke
rm -rf "$out"
failed=()
# Every target the build produced (fuzz/CMakeLists.txt makes one per fuzz/fuzz_*.c): the engine
# binaries, not the _replay drivers or AFL++'s _afl builds.
targets=()
for bin in build-fuzz/fuzz/fuzz_*; do
  t=$(basename "$bin")
  case "$t" in *_replay|*_afl) continue ;; esac
  [ -f "$bin" ] && [ -x "$bin" ] && targets+=("$t")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz smoke: the build produced no fuzz target (is clang's libFuzzer available?)"
  exit 1
fi
echo "fuzz smoke: ${#targets[@]} targets: ${targets[*]}"
for t in "${targets[@]}"; do
  case "$t" in
    fuzz_onnx_*) dict=fuzz/dict/onnx.dict ;;
    fuzz_meta) dict=fuzz/dict/meta.dict ;;
    *) dict=fuzz/dict/decode.dict ;;
  esac
  mkdir -p "$out/$t/new" "$out/$t/crashes"
  echo "fuzz smoke: $t for ${secs}s"
  # a target without committed seeds yet starts from nothing
  seeds=()
  [ -d "fuzz/corpus/$t" ] && seeds=("fuzz/corpus/$t")
  if ! QMM_FUZZ_ARTIFACTS="$out/$t/crashes" build-fuzz/fuzz/$t -max_total_time="$secs" \
        -timeout=25 -rss_limit_mb=2560 -dict="$dict" -artifact_prefix="$out/$t/crashes/" \
        -print_final_stats=1 "$out/$t/new" "${seeds[@]}" >"$out/$t/log" 2>&1; then
    failed+=("$t")
    grep -E "==qmm-fuzz== DIFFERENCE|SUMMARY|ERROR" "$out/$t/log" | head -5 || true
  fi
  grep -E "stat::(number_of_executed_units|average_exec_per_sec)" "$out/$t/log" | tr '\n' ' ' || true
  echo
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz smoke: FAILED: ${failed[*]} (logs and inputs in $out/)"
  exit 1
fi
echo "fuzz smoke: all ${#targets[@]} targets (${targets[*]}) ran ${secs}s without a crash or difference"
