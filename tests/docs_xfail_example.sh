#!/usr/bin/env bash
# tests/docs_xfail_example.sh — the expected-failure list docs/formats.md shows (the first block
# of its section "Expected-failure lists") names real cases: each entry's CASE-GLOB matches a case of
# `qmmcheck list --vectors vectors`, and qmmcheck reads the list (a run with it starts).
#   docs_xfail_example.sh QMMCHECK SOURCE_DIR
set -euo pipefail
qmmcheck=$(realpath "$1") src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"
awk '/^## Expected-failure lists/ {on = 1; next} on && /^```$/ {if (copy) exit; copy = 1; next} copy' \
    docs/formats.md >"$tmp/example.txt"
grep -q . "$tmp/example.txt" || { echo "no xfail example in docs/formats.md" >&2; exit 1; }
"$qmmcheck" list --vectors vectors 2>/dev/null | cut -f1 >"$tmp/cases.txt"
python3 - "$tmp/example.txt" "$tmp/cases.txt" <<'PY'
import fnmatch, sys
cases = open(sys.argv[2]).read().split()
bad = []
for line in open(sys.argv[1]):
    words = line.split("#", 1)[0].split() if not line.startswith("#") else []
    if words and not any(fnmatch.fnmatchcase(c, words[0]) for c in cases):
        bad.append(words[0])
if bad:
    sys.exit(f"docs/formats.md's xfail example names no case: {bad}")
PY
# the list parses: a run with it gets past reading it (exit 0 or 1, never 2)
rc=0
"$qmmcheck" run --quiet --backend reference --vectors vectors/seeds --xfail "$tmp/example.txt" \
    >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$tmp/out"; exit 1; }
echo "docs_xfail_example: ok"
