#!/usr/bin/env bash
# fuzz/coverage.sh [--build-dir DIR] [--corpus ROOT] [--html OUTDIR] [FOLDER...] — which code
# the committed corpora reach. Builds the replay drivers with clang's source-based coverage
# (-fprofile-instr-generate -fcoverage-mapping) in a build directory of their own (default
# build-cov), replays each target's corpus (ROOT/<target>/, default fuzz/corpus) through its
# driver (no engine, no mutation; the differential targets run every variant on every input,
# fuzz/driver.c), merges the profiles with llvm-profdata and prints llvm-cov's per-file table
# (regions, functions, lines, branches) for the FOLDERs (default: reference optimized ops).
# --html also writes the annotated sources there. fuzz/README.md, "Coverage", has the figures
# and, per file, why what is left uncovered is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-cov
corpus=$root/fuzz/corpus
html=""
folders=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --html) html=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "coverage: unknown option $1" >&2; exit 2 ;;
    *) folders+=("$1"); shift ;;
  esac
done
[ ${#folders[@]} -gt 0 ] || folders=(reference optimized ops)
# Debian's llvm package gives unversioned names; clang's own version first when both exist.
tool() {
  local v; v=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
  if command -v "$1-$v" >/dev/null; then echo "$1-$v"
  elif command -v "$1" >/dev/null; then echo "$1"
  else echo "coverage: $1 not found (Debian: apt-get install llvm)" >&2; exit 1
  fi
}
profdata=$(tool llvm-profdata)
cov=$(tool llvm-cov)
# CMAKE_C_FLAGS reach clang's link lines (which then add the profile runtime), but when the
# CUDA backend is built the executables with CUDA objects are linked by the host C++ compiler
# (g++), which knows neither the flag nor the runtime: the runtime goes at the end of every
# link line (C, C++ or CUDA, whichever links) as a library, with the symbol that pulls in its
# exit-time writer.
# -fprofile-update=atomic: the threads=3 variants run on worker threads, and with plain
# increments lost updates make llvm-cov's subtracted counts (an else region's) show code that
# never ran; with it two replays of one corpus give the same table.
flags="-fprofile-instr-generate -fcoverage-mapping -fprofile-update=atomic"
rt=$(clang --print-file-name=libclang_rt.profile-x86_64.a)
[ -f "$rt" ] || rt=$(clang --print-file-name="libclang_rt.profile-$(uname -m).a")
log=$build/coverage-build.log
mkdir -p "$build"
echo "coverage: building in $build (log $log)" >&2
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
      -DQMM_BUILD_TESTS=OFF -DQMM_PEERS=OFF -DCMAKE_C_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-u,__llvm_profile_runtime" \
      -DCMAKE_C_STANDARD_LIBRARIES="$rt" -DCMAKE_CXX_STANDARD_LIBRARIES="$rt" \
      -DCMAKE_CUDA_STANDARD_LIBRARIES="$rt" >"$log" 2>&1 ||
  { tail -20 "$log" >&2; exit 1; }
cmake --build "$build" -j"${QMM_JOBS:-2}" >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
for drv in "$build"/fuzz/fuzz_*_replay; do
  # grep without -q reads to the end: nm must not die of SIGPIPE under pipefail
  if ! nm "$drv" 2>/dev/null | grep ' [BD] __llvm_profile_runtime$' >/dev/null; then
    echo "coverage: $drv has no profile runtime (linked by another compiler than clang?)" >&2
    exit 1
  fi
done
prof=$build/profiles
rm -rf "$prof"
mkdir -p "$prof"
objects=()
for drv in "$build"/fuzz/fuzz_*_replay; do
  t=$(basename "$drv" _replay)
  [ -d "$corpus/$t" ] || continue
  objects+=(-object "$drv")
  # %m: one file per binary (merged in place), %p: per process
  if ! LLVM_PROFILE_FILE="$prof/$t-%p.profraw" QMM_FUZZ_ARTIFACTS="$prof" \
       "$drv" "$corpus/$t" >"$prof/$t.log" 2>&1; then
    tail -5 "$prof/$t.log" >&2
    echo "coverage: replaying $corpus/$t failed" >&2
    exit 1
  fi
  echo "coverage: $t: $(tail -1 "$prof/$t.log")" >&2
done
[ ${#objects[@]} -gt 0 ] || { echo "coverage: no corpus under $corpus" >&2; exit 1; }
"$profdata" merge -sparse "$prof"/*.profraw -o "$prof/merged.profdata"
paths=()
for f in "${folders[@]}"; do paths+=("$root/$f"); done
# the first object is the positional binary, the rest are -object
"$cov" report "${objects[@]:1}" -instr-profile="$prof/merged.profdata" \
       -show-branch-summary "${paths[@]}" | sed "s|$root/||"
if [ -n "$html" ]; then
  "$cov" show "${objects[@]:1}" -instr-profile="$prof/merged.profdata" -format=html \
         -show-branches=count -output-dir="$html" "${paths[@]}"
  echo "coverage: annotated sources in $html/index.html" >&2
fi
