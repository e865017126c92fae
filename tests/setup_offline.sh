#!/usr/bin/env bash
# tests/setup_offline.sh — scripts/setup.sh for a C-only user without PyPI: when
# scripts/pydeps.sh fails (no network), setup says so in a line naming the way to add the
# Python part later, and still builds and runs the conformance suite (its exit status is the
# run's); --no-python does not try. Run in a copy of setup.sh beside stand-ins for deps.sh,
# pydeps.sh, cmake and the built qmmcheck, so that nothing is installed or built.
#   setup_offline.sh SOURCE_DIR
set -euo pipefail
src=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "setup_offline: FAILED: $*" >&2
    exit 1
}
mkdir -p "$tmp/tree/scripts" "$tmp/tree/build/harness" "$tmp/bin"
cp "$src/scripts/setup.sh" "$tmp/tree/scripts/"
stub() { # PATH BODY: an executable stand-in that logs its call
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n%s\n' "${1##*/}" "$tmp" "$2" >"$1"
    chmod +x "$1"
}
stub "$tmp/tree/scripts/deps.sh" "exit 0"
stub "$tmp/tree/scripts/pydeps.sh" "echo 'ERROR: Could not find a version that satisfies the requirement numpy' >&2; exit 1"
stub "$tmp/bin/cmake" "exit 0"
stub "$tmp/tree/build/harness/qmmcheck" "exit 0"

rc=0
PATH="$tmp/bin:$PATH" "$tmp/tree/scripts/setup.sh" --quiet >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$tmp/out"; fail "setup without PyPI exited $rc, want 0 (the run's)"; }
grep -q "^setup: the Python part .* could not be set up .*Run scripts/pydeps.sh once PyPI is reachable, or scripts/setup.sh --no-python" "$tmp/out" ||
    fail "no line saying the Python part was left out: $(cat "$tmp/out")"
grep -q "^qmmcheck run --backend reference --backend optimized --vectors vectors --quiet$" "$tmp/calls" ||
    fail "the conformance run did not run: $(cat "$tmp/calls")"
grep -q "^cmake --build build" "$tmp/calls" || fail "nothing was built: $(cat "$tmp/calls")"

: >"$tmp/calls"
PATH="$tmp/bin:$PATH" "$tmp/tree/scripts/setup.sh" --no-python >"$tmp/out" 2>&1 ||
    { cat "$tmp/out"; fail "setup --no-python failed"; }
! grep -q "^pydeps.sh" "$tmp/calls" || fail "--no-python ran pydeps.sh"
grep -q "^setup: the Python part left out (--no-python)" "$tmp/out" || fail "$(cat "$tmp/out")"
grep -q "^qmmcheck run .*--vectors vectors$" "$tmp/calls" || fail "$(cat "$tmp/calls")"

# the run's failure is setup's exit status
stub "$tmp/tree/build/harness/qmmcheck" "exit 1"
rc=0
PATH="$tmp/bin:$PATH" "$tmp/tree/scripts/setup.sh" --no-python >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a failing run: setup exited $rc, want 1"
echo "setup_offline: ok"
