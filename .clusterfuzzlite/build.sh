#!/bin/bash -eu
# Builds the fuzz targets for ClusterFuzzLite and OSS-Fuzz. The engine's environment supplies
# $CC and $CXX, $CFLAGS and $CXXFLAGS (coverage instrumentation and the sanitizer),
# $LIB_FUZZING_ENGINE (the engine to link: libFuzzer, AFL++'s driver, ...), $SRC, $WORK and
# $OUT (where targets, .options files, seed corpora and dictionaries go), so the same script
# serves every engine and sanitizer they run. The sources are C, compiled with $CC $CFLAGS;
# the targets are linked with $CXX $CXXFLAGS, as OSS-Fuzz requires (the engines are C++).
# The Dockerfile puts the tree at $SRC/qmmcheck; run by hand, the script's own tree is used.
# ctest clusterfuzzlite_build (tests/clusterfuzzlite_build.sh) runs it with these variables set
# by hand.
if [ -n "${SRC:-}" ] && [ -d "$SRC/qmmcheck" ]; then
  src=$SRC/qmmcheck
else
  src=$(cd "$(dirname "$0")/.." && pwd)
fi
build=${WORK:-/tmp}/qmm-build

# QMM_FUZZ_ENGINE=external: CFLAGS already instrument every library, QMM_FUZZ_LINK links the
# engine, and fuzz/CMakeLists.txt links the targets with the C++ compiler. GMP is linked
# statically (pkg-config's cached library path is pointed at libgmp.a), since the image that
# runs the targets has no GMP shared library.
gmp_static=$($CC -print-file-name=libgmp.a)
if [ ! -f "$gmp_static" ]; then
  echo "build.sh: no libgmp.a for $CC (install libgmp-dev)" >&2
  exit 1
fi
cmake -S "$src" -B "$build" \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
  -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="$CXXFLAGS" -DCMAKE_BUILD_TYPE=Release \
  -DQMM_FUZZ=ON -DQMM_FUZZ_ENGINE=external -DQMM_FUZZ_LINK="$LIB_FUZZING_ENGINE" \
  -DQMM_BUILD_TESTS=OFF -DQMM_CUDA=OFF -Dpkgcfg_lib_GMP_gmp="$gmp_static"

# fuzz_qorderedmatmul: with QMM_CUDA=OFF (no nvcc in the image) no built-in backend but the
# reference implements QOrderedMatMul, so here it checks the decoder and the reference under
# the sanitizers; campaigns built with nvcc also compare the cuda backend's host emulation.
# Every fuzz/fuzz_*.c is a target (fuzz/CMakeLists.txt builds one per file).
targets=$(cd "$src/fuzz" && for f in fuzz_*.c; do echo "${f%.c}"; done)
echo "build.sh: targets:" $targets
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $targets

for t in $targets; do
  cp "$build/fuzz/$t" "$OUT/"
  # Seeds, dictionaries and options are picked up by name: <target>_seed_corpus.zip,
  # <target>.dict, <target>.options.
  if [ -d "$src/fuzz/corpus/$t" ]; then
    rm -f "$OUT/${t}_seed_corpus.zip"
    (cd "$src/fuzz/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  fi
  # The limits fuzz/smoke.sh and fuzz/campaign use: 25 s a input (the reference's exact
  # arithmetic on the largest decoded problems takes a few seconds under ASan); inputs up to
  # 8 KiB for the differential targets (the decoders' work bounds are reached well below), and
  # 64 KiB for the parsers (the committed ONNX tensors reach 33 KB).
  case "$t" in
    fuzz_onnx_tensor|fuzz_onnx_model) dict=onnx.dict; max_len=65536 ;;
    fuzz_meta) dict=meta.dict; max_len=65536 ;;
    *) dict=decode.dict; max_len=8192 ;;
  esac
  cp "$src/fuzz/dict/$dict" "$OUT/$t.dict"
  printf '[libfuzzer]\nmax_len = %d\ntimeout = 25\ndict = %s.dict\n' "$max_len" "$t" \
    >"$OUT/$t.options"
done
