#!/usr/bin/env bash
# tests/export_partial.sh QMMCHECK — a case export writes over is never left judgeable from parts:
# an earlier case's model.onnx goes first and the new one last, after the data and qmm.meta, so a
# write cut short (here: qmm.meta cannot be written) leaves a folder that is no case (run and
# list skip it, export exits 1); and an earlier case's output_0.pb does not stay beside a case
# that has none (an expected error): it would be judged against the old answer.
set -euo pipefail
qmmcheck=$1
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$qmmcheck" export --suite random --out "$tmp/e" >/dev/null || fail "export: exit $?"
with=$(dirname "$(find "$tmp/e" -path '*/test_data_set_0/output_0.pb' | sort | head -1)")
with=$(dirname "$with")
without=""
for m in $(find "$tmp/e" -name model.onnx | sort); do
  d=$(dirname "$m")
  [ -f "$d/test_data_set_0/output_0.pb" ] || { without=$d; break; }
done
[ -n "$without" ] || fail "the random suite has no case without an output to test with"
# a case whose qmm.meta cannot be written (a folder in its place): export stops, and that
# case is no case
rm "$with/qmm.meta" && mkdir "$with/qmm.meta"
rc=0
"$qmmcheck" export --suite random --out "$tmp/e" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "export onto an unwritable qmm.meta: exit $rc, expected 1 ($(cat "$tmp/out"))"
[ ! -e "$with/model.onnx" ] || fail "$with kept a model.onnx beside a qmm.meta it could not write"
"$qmmcheck" list --vectors "$tmp/e" >"$tmp/list" 2>&1 || fail "list: exit $?"
! grep -Fq "$(basename "$with")" "$tmp/list" || fail "list shows the half-written case $with"
# an earlier answer beside a case that has none: removed when the case is written again
rmdir "$with/qmm.meta"
cp "$with/test_data_set_0/output_0.pb" "$without/test_data_set_0/output_0.pb"
"$qmmcheck" export --suite random --out "$tmp/e" >/dev/null || fail "export again: exit $?"
[ ! -e "$without/test_data_set_0/output_0.pb" ] ||
  fail "an earlier output_0.pb stayed beside $without, a case without one"
[ -f "$with/model.onnx" ] && [ -f "$with/qmm.meta" ] || fail "$with not written again whole"
echo "export_partial: ok"
