#!/usr/bin/env bash
# CI step for the CUDA backend (issue 7 item 3): configures a separate build with QMM_CUDA=ON,
# compiles and links the backend, qmmcheck with it, its test and tools, and runs test_cuda and
# cuda_layout_check. CI has no GPU: test_cuda then checks the "no CUDA device" answers and the
# backend's pipeline emulated on the host; cuda_layout_check reports skipped.
# Without nvcc (on PATH or in /usr/local/cuda/bin) the step is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc" ]; then
  echo "ci: CUDA step SKIPPED: nvcc not found on PATH or in /usr/local/cuda/bin"
  exit 0
fi
dir=build-cuda
echo "ci: CUDA step: $nvcc, build dir $dir (QMM_CUDA=ON, sm_90 only to keep the build short)"
# CMake finds the toolkit from the compiler's location, so nvcc need not be on PATH.
cmake -S . -B "$dir" -DQMM_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90
cmake --build "$dir" -j"$(nproc)" --target qmm_cuda qmmcheck test_cuda test_cuda_exact qmm_cuda_layout_check \
  qmm_cublaslt_bench
ctest --test-dir "$dir" --output-on-failure -R '^(test_cuda|test_cuda_exact|cuda_layout_check)$'
