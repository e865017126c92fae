#!/usr/bin/env bash
# One command for a fresh Debian machine: install dependencies, build, and run the
# conformance suite (every committed vector) against the built-in backends.
#   scripts/setup.sh [--no-python] [qmmcheck run ARGUMENTS...]
# The Python part (.venv from PyPI: Python exec: backends, the Python peers and their tests,
# scripts/pydeps.sh) is optional: without PyPI it is left out with a line saying so and how to
# add it later, and the C part (all a kernel vendor needs) is built and run as ever. --no-python
# leaves it out without trying. The exit status is the conformance run's.
set -euo pipefail
cd "$(dirname "$0")/.."
python=1
if [ "${1:-}" = --no-python ]; then
    python=0
    shift
fi
scripts/deps.sh
if [ "$python" = 0 ]; then
    echo "setup: the Python part left out (--no-python): scripts/pydeps.sh adds it later"
elif ! scripts/pydeps.sh; then
    echo "setup: the Python part (.venv from PyPI: Python exec: backends, the Python peers and" \
        "their tests) could not be set up (above: scripts/pydeps.sh); the C part goes on." \
        "Run scripts/pydeps.sh once PyPI is reachable, or scripts/setup.sh --no-python." >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
exec build/harness/qmmcheck run --backend reference --backend optimized --vectors vectors "$@"
