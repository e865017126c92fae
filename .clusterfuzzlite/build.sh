#!/bin/bash -eu
# Builds the fuzz targets for ClusterFuzzLite and OSS-Fuzz. The engine's environment supplies
# $CC, $CFLAGS (coverage instrumentation and the sanitizer), $LIB_FUZZING_ENGINE (the engine
# to link: libFuzzer, AFL++'s driver, ...) and $OUT (where targets, seeds and dicts go), so
# the same script serves every engine and sanitizer they run.
# The Dockerfile copies the tree to $SRC/qmmcheck; run by hand, the script's own tree is used.
if [ -n "${SRC:-}" ] && [ -d "$SRC/qmmcheck" ]; then
  src=$SRC/qmmcheck
else
  src=$(cd "$(dirname "$0")/.." && pwd)
fi
build=${WORK:-/tmp}/qmm-build

# QMM_FUZZ_ENGINE=external: CFLAGS already instrument every library, QMM_FUZZ_LINK links the
# engine. GMP is linked statically (pkg-config's cached library path is pointed at libgmp.a),
# since the image that runs the targets has no GMP shared library.
gmp_static=$($CC -print-file-name=libgmp.a)
cmake -S "$src" -B "$build" \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_BUILD_TYPE=Release \
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
  # Seeds and dictionaries are picked up by name: <target>_seed_corpus.zip, <target>.dict.
  if [ -d "$src/fuzz/corpus/$t" ]; then
    (cd "$src/fuzz/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  fi
  case "$t" in
    fuzz_onnx_tensor|fuzz_onnx_model) cp "$src/fuzz/dict/onnx.dict" "$OUT/$t.dict" ;;
    fuzz_meta) cp "$src/fuzz/dict/meta.dict" "$OUT/$t.dict" ;;
    *) cp "$src/fuzz/dict/decode.dict" "$OUT/$t.dict" ;;
  esac
done
