#!/usr/bin/env bash
# One command for a fresh Debian machine: install dependencies, build, and run the
# conformance suite (every committed vector) against the built-in backends.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/pydeps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
exec build/harness/qmmcheck run --backend reference --backend optimized --vectors vectors "$@"
