#!/usr/bin/env bash
# Creates the Python virtual environment .venv at the repository root (ignored by git) and
# installs requirements.txt into it: what python/qmm_exec.py backends, the Python peers
# (peers/onnxruntime, peers/onnx-reference) and tests/test_exec.c, tests/test_pypeers.c
# use (the tests find .venv/bin/python, or QMM_PYTHON). Idempotent. Needs python3-venv
# (scripts/deps.sh installs it) and access to PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
echo "pydeps: .venv has $(.venv/bin/python -c 'import numpy, onnx, onnxruntime; print("numpy", numpy.__version__, "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)')"
