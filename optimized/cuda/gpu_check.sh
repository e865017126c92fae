#!/usr/bin/env bash
# optimized/cuda/gpu_check.sh — issue 28's checks of the cuda backend on a machine with a GPU, in
# one command that ends on its own (every step has a time limit), for a short rented GPU:
#
#   optimized/cuda/gpu_check.sh [--build DIR] [--out DIR] [--diff-seconds S] [--diff-procs P]
#                               [--reps N] [--emulate] [--no-bench] [--only STEPS]
#
# --build: a build configured with -DQMM_CUDA=ON (default build-cuda; optimized/cuda/ci.sh makes
# one). It may have been built on another machine of the same architecture: nothing here uses
# CMake's absolute paths, and when the loader cannot find the CUDA libraries the usual toolkit
# and pip locations are searched. Steps, each logged to OUT/NAME.log, one line each in
# OUT/summary (name, exit status, seconds):
#   info        nvidia-smi, the libraries the binaries load
#   probe       the smallest pipeline on the device (77 there: no device, the check ends with 77)
#   bench       qmm_cublaslt_bench twice (plain cuBLASLt int8 GEMM vs the exact pipeline)
#   bench_e2e   qmmcheck bench, cuda against the optimized CPU backend, alternating
#   slabs       qmm_cublaslt_bench at 8192^3 and 4096^3 with --options slabs=2, 4, 8 and none,
#               alternating, two rounds (column slabs on two streams: docs/cuda.md)
#   layout      qmm_cuda_layout_check: the five QOrderedMatMul orders vs cublasLtMatrixTransform
#   test_exact  test_cuda_exact; test_cuda (the device differential and the emulated tests)
#   vectors     qmmcheck run --backend cuda over every suite in vectors/
#   determinism the same with --determinism: the device against itself and its host emulation
#   checked     qmmcheck bench (answers checked) at shapes random problems do not reach
#   scalar      5000 diff problems with QMM_CUDA_SCALAR_KERNELS=1 (the one-byte-a-thread kernels)
#   slabs_check the backend with slabs=4: 3000 diff problems, the vector suites, checked benches
#               at shapes of several slabs, and one of them under compute-sanitizer memcheck
#   diff        P processes of `qmmcheck diff --backend reference --backend cuda` for S seconds,
#               on disjoint problem ranges of one seed; the problems are added up
#   memcheck    compute-sanitizer memcheck over the vector suites and 300 diff problems
#   racecheck   compute-sanitizer racecheck over the QOrderedMatMul suite and 300 diff problems
# --no-bench: leave out bench, bench_e2e and slabs (a rerun of the checks after a fix).
# --only STEPS: run only these steps (comma-separated names from the list above; info and probe
# always run), e.g. --only slabs,slabs_check,test_cuda: one short call on a device.
# --emulate: the same steps against `cuda:emulate=1`, with no device (a rehearsal on the CPU:
# the device-only steps then fail or skip).
# Exit 0 when every step passed, 1 otherwise; 77 when no CUDA device answers.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-cuda
out=$PWD/gpu-check
diff_s=150
procs=$(($(nproc) > 4 ? $(nproc) - 2 : 2))
reps=50
be=cuda
bench=1
only=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --diff-seconds) diff_s=$2; shift 2 ;;
    --diff-procs) procs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --emulate) be=cuda:emulate=1; shift ;;
    --no-bench) bench=0; shift ;;
    --only) only=",$2,"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--out DIR] [--diff-seconds S] [--diff-procs P] [--reps N] [--emulate] [--no-bench] [--only STEPS]" >&2
       exit 2 ;;
  esac
done
for v in "$diff_s" "$procs" "$reps"; do
  case "$v" in
    "" | *[!0-9]* | 0*) echo "gpu_check: --diff-seconds, --diff-procs and --reps take whole numbers from 1" >&2
                        exit 2 ;;
  esac
done
# a reused folder would mix an earlier run's logs and saved cases into this run's totals
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2> /dev/null)" ]; then
  echo "gpu_check: $out is not empty: give --out a new or empty folder" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
q=$build/harness/qmmcheck
for f in "$q" "$build/tests/test_cuda" "$build/tests/test_cuda_exact" \
         "$build/optimized/cuda/qmm_cuda_layout_check" "$build/optimized/cuda/qmm_cublaslt_bench"; do
  [ -x "$f" ] || { echo "gpu_check: $f is missing: build with -DQMM_CUDA=ON first" >&2; exit 2; }
done

# The CUDA libraries, where the loader does not know them
if ldd "$q" | grep -q "not found"; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib \
           $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for l in "$d" "$d"/nvidia/cu13/lib "$d"/nvidia/cublas/lib "$d"/nvidia/cuda_runtime/lib; do
      [ -e "$l/libcublasLt.so.13" ] || [ -e "$l/libcudart.so.13" ] &&
        export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$l
    done
  done
fi
export QMM_SOURCE_DIR=$root QMMCHECK=$q QMM_VERSION=gpu-check
cd "$root" || exit 2
: > "$out/summary"
failed=0
# step NAME LIMIT COMMAND...: runs COMMAND (a program or a function of this script) under a time
# limit, its output in OUT/NAME.log
step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  case "$name" in info | probe) ;; *)
    if [ -n "$only" ] && [[ "$only" != *",$name,"* ]]; then
      return 0 # not asked for (--only)
    fi ;;
  esac
  t0=$(date +%s)
  echo "== $name ($(date -u +%H:%M:%S), limit ${limit}s)"
  timeout -k 10 "$limit" bash -c '"$@"' "$name" "$@" > "$out/$name.log" 2>&1
  rc=$?
  printf '%-12s rc=%-3s %4ss\n' "$name" "$rc" "$(($(date +%s) - t0))" | tee -a "$out/summary"
  [ "$rc" -eq 0 ] || failed=1
  return "$rc"
}

info() {
  local rc=0
  if ! nvidia-smi || ! nvidia-smi --format=csv \
         --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,power.limit; then
    echo "nvidia-smi is missing or failed"
    [ "$be" != cuda ] || rc=1
  fi
  command -v nvcc > /dev/null && nvcc --version
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ldd "$q" | grep -E "cuda|cublas|gmp|not found"
  if ldd "$q" "$build/tests/test_cuda" | grep "not found"; then
    rc=1
  fi
  return "$rc"
}
export -f info
export q out build be
step info 30 info
# The smallest pipeline on the device: 77 (no device) ends the check; any other failure is a
# failed step, and the other steps still run (their logs say more)
if [ "$be" = cuda ]; then
  step probe 60 "$build/optimized/cuda/qmm_cublaslt_bench" --reps 1 64
  if [ "$(awk '$1 == "probe" { print $2 }' "$out/summary")" = rc=77 ]; then
    echo "gpu_check: no usable CUDA device:" >&2
    cat "$out/probe.log" >&2
    exit 77
  fi
fi

if [ "$bench" = 1 ]; then
  step bench 120 bash -c '"$1" --reps "$2" && echo second run && "$1" --reps "$2"' bench \
    "$build/optimized/cuda/qmm_cublaslt_bench" "$reps"
  # end to end through the operator interface (host<->device copies included), against the CPU
  step bench_e2e 120 "$q" bench --backend "$be" --backend optimized --threads "$(nproc)" \
    --shape 2048x2048x2048 --shape 128x4096x4096 --shape 1x4096x4096 --rounds 5 --reps 10
  # column slabs against none, alternating (the ratio column of each line is the answer)
  slabs_bench() {
    local r o
    for r in 1 2; do
      for o in "" slabs=2 slabs=4 slabs=8; do
        echo "-- round $r, options '$o'"
        "$build/optimized/cuda/qmm_cublaslt_bench" --reps "$reps" --options "$o" 8192 4096 ||
          return $?
      done
    done
  }
  export -f slabs_bench
  export reps
  step slabs 240 slabs_bench
fi
step layout 60 "$build/optimized/cuda/qmm_cuda_layout_check"
step test_exact 120 bash -c 'cd "$1" && ./test_cuda_exact --jobs 4' test "$build/tests"
step test_cuda 300 bash -c 'cd "$1" && ./test_cuda --jobs 4 --verbose' test "$build/tests"
step vectors 120 "$q" run --backend "$be" --vectors vectors --quiet
step determinism 180 "$q" run --backend "$be" --vectors vectors --quiet --determinism \
  --variants 'emulate=1;device=0'
# shapes the random problems do not reach, each answer checked against the reference: M past
# 512 (16 rows a thread in the epilogue), K past 65536 through the 16-byte A preparation, N not
# a multiple of 4 (byte stores), for two type mixes
checked() {
  local t
  for t in u8s8u8 s8u8s8; do
    "$q" bench --backend "$be" --backend optimized --rounds 1 --reps 1 --types "$t" \
      --shape 600x1024x1028 --shape 520x65600x20 --shape 77x1000x1030 || return $?
  done
}
export -f checked
step checked 240 checked
# the first, one-byte-a-thread kernels that QMM_CUDA_SCALAR_KERNELS selects (docs/cuda.md): the
# long differential below checks the word-wide ones, this one keeps the others honest
step scalar 120 env QMM_CUDA_SCALAR_KERNELS=1 "$q" diff --backend reference --backend "$be" \
  --seed 30 --count 5000 --quiet --out "$out/diff-scalar"

# column slabs (docs/cuda.md): the same answers with slabs=4, at shapes of several slabs
# (random problems are mostly narrower than two device slabs of 256 columns)
if [ "$be" = cuda ]; then be_slabs=cuda:slabs=4; else be_slabs=cuda:emulate=1,slabs=4; fi
slabs_check() {
  local t
  "$q" diff --backend reference --backend "$be_slabs" --seed 31 --count 3000 --quiet \
    --out "$out/diff-slabs" || return $?
  "$q" run --backend "$be_slabs" --vectors vectors --quiet || return $?
  for t in u8s8u8 s8u8s8; do
    "$q" bench --backend "$be_slabs" --backend optimized --rounds 1 --reps 1 --types "$t" \
      --shape 600x1024x1028 --shape 77x1000x1030 --shape 8x4096x4096 || return $?
  done
  if [ -n "$cs" ] && [ "$be" = cuda ]; then
    "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$q" bench --backend "$be_slabs" --backend optimized --rounds 1 --reps 1 \
      --shape 600x1024x1028
  fi
}
cs=$(command -v compute-sanitizer ||
     ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
        /opt/nvidia/*/compute-sanitizer/compute-sanitizer 2> /dev/null | head -1)
export -f slabs_check
export be_slabs cs
step slabs_check 300 slabs_check

# The long differential and the sanitizers, in parallel (they mostly wait on the device)
diff_one() {
  "$q" diff --backend reference --backend "$be" --seed 28 --start "$(($1 * 100000000))" \
    --seconds "$diff_s" --max-diffs 10 --quiet --out "$out/diff-$1"
}
diff_all() {
  local pids=() rc=0 i r
  for i in $(seq 0 $((procs - 1))); do
    diff_one "$i" > "$out/diff-$i.out" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    r=$?
    if [ "$r" -ne 0 ]; then
      rc=1
      echo "diff process $i: exit $r"
      tail -5 "$out/diff-$i.out"
    fi
  done
  cat "$out"/diff-*.out | grep "DIFF SUMMARY" | awk '
    { for (f = 1; f <= NF; f++) { split($f, kv, ":"); if (kv[2] ~ /^[0-9]+$/) s[kv[1]] += kv[2] } }
    END { printf "DIFF TOTAL: problems:%d same:%d differences:%d skipped:%d tolerated:%d\n",
          s["problems"], s["same"], s["differences"], s["skipped"], s["tolerated"] }'
  return "$rc"
}
sanitize() {
  local tool=$1 suite=$2
  "$cs" --tool "$tool" --error-exitcode 9 --print-limit 20 \
    "$q" run --backend "$be" --vectors "$suite" --quiet || return $?
  "$cs" --tool "$tool" --error-exitcode 9 --print-limit 20 \
    "$q" diff --backend reference --backend "$be" --seed 29 --count 300 --quiet \
    --out "$out/sanitize-$tool"
}
export -f diff_one diff_all sanitize
export diff_s procs cs
san_s=$((diff_s + 30 > 180 ? diff_s + 30 : 180)) # memcheck over every suite takes about 25 s
pids=()
(step diff $((diff_s + 60)) diff_all) &
pids+=($!)
if [ -n "$cs" ]; then
  (step memcheck "$san_s" sanitize memcheck vectors) &
  pids+=($!)
  (step racecheck "$san_s" sanitize racecheck vectors/qordered) &
  pids+=($!)
elif [ -z "$only" ] || [[ "$only" == *,memcheck,* ]] || [[ "$only" == *,racecheck,* ]]; then
  echo "sanitizers   compute-sanitizer not found" | tee -a "$out/summary"
  failed=1
fi
for p in "${pids[@]}"; do
  wait "$p" || failed=1
done
# the long differential's total into the summary, which the caller's output ends with (on
# 2026-11-28 it was printed here, before the long bench logs, and cut from a returned tail)
grep -h "DIFF TOTAL" "$out/diff.log" 2> /dev/null >> "$out/summary"
# Saved differences, one file (a caller may fetch only a few files)
saved=()
for d in "$out"/diff-*/ "$out"/sanitize-*/; do
  [ -d "$d" ] && saved+=("$(basename "$d")")
done
if [ ${#saved[@]} -gt 0 ]; then
  tar -C "$out" -czf "$out/saved-cases.tgz" "${saved[@]}" &&
    (cd "$out" && rm -rf "${saved[@]}")
  echo "saved cases of the differences: $out/saved-cases.tgz (${saved[*]})"
fi
echo "== summary"
cat "$out/summary"
grep -h "SUMMARY" "$out/vectors.log" "$out/determinism.log" 2>/dev/null
cat "$out/bench.log" 2> /dev/null
cat "$out/slabs.log" 2> /dev/null
tail -12 "$out/bench_e2e.log" 2> /dev/null
exit "$failed"
