#!/usr/bin/env bash
# Builds and runs the whole test suite under ctest.
#   scripts/test.sh              normal build in build/
#   scripts/test.sh --sanitize   ASan + UBSan build in build-asan/ (clang)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
extra=()
labels=()
# anything else is refused: a misspelt --sanitize used to run the plain build, and pass
case "$#:${1:-}" in
  0: | 1:--sanitize) ;;
  *) echo "usage: scripts/test.sh [--sanitize] (not: $(printf '%q ' "$@"))" >&2; exit 2 ;;
esac
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  extra=(-DCMAKE_C_COMPILER=clang -DQMM_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # clusterfuzzlite_build (label `long`) makes its own ASan + UBSan build of the fuzz targets
  # whatever this build is; the plain run has already run it, so the sanitizer pass skips it;
  # so it does mutants_caught_in_the_simplest_form (long; mutants_killed_by_default_suites runs).
  labels=(-LE long)
fi
cmake -S . -B "$dir" "${extra[@]}"
if [ "$dir" = build-asan ]; then
  # A configure that drops its options (CMake discarding a cache it thinks changed) builds a
  # plain, unsanitized suite that passes: refuse to run one under this name.
  cache=$dir/CMakeCache.txt
  if ! grep -qx 'QMM_SANITIZE:STRING=address,undefined' "$cache" ||
     ! grep -Eq '^CMAKE_C_COMPILER:[A-Z]+=.*clang$' "$cache"; then
    echo "scripts/test.sh: $dir is not an ASan + UBSan clang build:" >&2
    grep -E '^(QMM_SANITIZE|CMAKE_C_COMPILER|CMAKE_CXX_COMPILER):' "$cache" >&2
    exit 1
  fi
fi
cmake --build "$dir" -j"$(nproc)"
if [ "$dir" = build-asan ] && ! nm "$dir/harness/qmmcheck" | grep '__asan_init' >/dev/null; then
  echo "scripts/test.sh: $dir/harness/qmmcheck has no AddressSanitizer runtime" >&2
  exit 1
fi
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "${labels[@]}"
