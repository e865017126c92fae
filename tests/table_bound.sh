#!/usr/bin/env bash
# tests/table_bound.sh — bench/table.py's bound column from a run's --json (measuring nothing):
# oneDNN's and ORT's `bound` beside each row, ours as a percentage of the peak (100 / our bound), the rows
# whose bound is below 1.05 named as out of reach, and "—" for a row of an older report that
# has no bound.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }
# the section of run.json's 8x64x64 T = 1 rows, into $tmp/out
render() {
  python3 "$src/bench/table.py" --from-json "$tmp/run.json" --shapes 8x64x64 --threads 1 \
    >"$tmp/out" 2>&1 || fail "table.py --from-json: exit $?"
}
# no text of the run began a line of its own or closed the section's marker
one_section() {
  grep -q '^| forged\|^## forged' "$tmp/out" && fail "$1 began a line of its own"
  [ "$(grep -c 'end -->' "$tmp/out")" = 1 ] || fail "$1 closed the section's marker"
}
python3 - "$tmp/run.json" <<'PY'
import json, sys
def row(shape, b, backend, ms, bound):
    r = {"shape": shape, "threads": 1, "b": b, "backend": backend, "status": "PASSED",
         "median_s": ms / 1e3, "ratio": 1.0 if backend.startswith("optimized") else 1.01,
         "round_ratio": [1.0, 1.02], "cpu_ratio": 1.0}
    if bound is not None:
        r["bound"] = bound
    return r
rep = {"threads": 1, "backends": [{"name": "onednn", "description": "oneDNN x"}], "results": [
    row("8x64x64", "input", "optimized:isa=x", 1.0, 1.25),
    row("8x64x64", "input", "onednn", 1.01, 1.02),
    row("8x64x64", "constant", "optimized:isa=x", 1.0, 1.10),
    row("8x64x64", "constant", "onednn", 1.01, 1.20),
    row("16x64x64", "input", "optimized:isa=x", 1.0, None),   # an older report: no bound
    row("16x64x64", "input", "onednn", 1.01, None),
    row("16x64x64", "constant", "optimized:isa=x", 1.0, 1.3),
    row("16x64x64", "constant", "onednn", 1.01, 1.0496)]}  # below 1.05, though it rounds to it
def ort(shape, b, bound):
    r = {"shape": shape, "threads": 1, "b": b, "ours_s": 0.001, "ort_s": 0.0011, "ratio": 1.1,
         "round_ratio": [1.1]}
    if bound is not None:
        r["bound"] = bound
    return r
orts = [ort("8x64x64", "input", 1.3), ort("8x64x64", "const", 1.04), ort("16x64x64", "input", None)]
json.dump({"machine": {"class": "avx512-vnni"}, "machine_line": "machine: test, 2 CPU(s) online, "
           "load average 0.1 0.1 0.1", "began": "2026-11-27T00:00:00+00:00", "load_end": "0.1 0.1 0.1",
           "onednn_profile": "onednn-fp32", "onnxruntime": "1.0", "onednn": [rep], "ort": orts},
          open(sys.argv[1], "w"))
PY
python3 "$src/bench/table.py" --from-json "$tmp/run.json" --shapes 8x64x64 16x64x64 --threads 1 \
  >"$tmp/out" 2>&1 || fail "table.py --from-json: exit $?"
grep -Fq '| 8x64x64 | 1 | input | 1.000 | 1.010 | **1.01** (1.00, 1.02) | 1.00 | 1.02 | 80% | 1.000 | 1.100 | **1.10** (1.10) | 1.30 |' "$tmp/out" ||
  fail "the input row: bound 1.02, ours 80% of the peak, ORT bound 1.30"
grep -Fq '| 8x64x64 | 1 | constant | 1.000 | 1.010 | **1.01** (1.00, 1.02) | 1.00 | 1.20 | 91% | 1.000 | 1.100 | **1.10** (1.10) | 1.04 |' "$tmp/out" ||
  fail "the constant row: bound 1.20, ours 91%, ORT bound 1.04"
grep -Fq '| 16x64x64 | 1 | input | 1.000 | 1.010 | **1.01** (1.00, 1.02) | 1.00 | — | — | 1.000 | 1.100 | **1.10** (1.10) | — |' "$tmp/out" ||
  fail "a row without a bound"
grep -Fq 'out of reach in this run (ORT bound below 1.05): 8x64x64 T=1 B constant (1.0400).' "$tmp/out" ||
  fail "the ORT out-of-reach line"
grep -Fq 'out of reach in this run (bound below 1.05): 8x64x64 T=1 B input (1.0200), 16x64x64 T=1 B constant (1.0496).' "$tmp/out" ||
  fail "the out-of-reach line"
# --update: one section per CPU class and model; another model's section of the class stays
python3 - "$tmp/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["machine"]["cpu"] = "CPU B"
json.dump(d, open(sys.argv[1], "w"))
PY
printf '<!-- bench/table.py: avx512-vnni, CPU A -->\n## A\nold A\n<!-- bench/table.py: avx512-vnni, CPU A end -->\n\n## next\n' > "$tmp/doc.md"
python3 "$src/bench/table.py" --from-json "$tmp/run.json" --shapes 8x64x64 --threads 1 \
  --update "$tmp/doc.md" >"$tmp/out" 2>&1 || fail "table.py --from-json --update: exit $?"
grep -Fq 'old A' "$tmp/doc.md" || fail "CPU A's section was overwritten: $(cat "$tmp/doc.md")"
grep -Fq '## Issue 29 table: class avx512-vnni, CPU B' "$tmp/doc.md" ||
  fail "no section for CPU B: $(cat "$tmp/doc.md")"
python3 "$src/bench/table.py" --from-json "$tmp/run.json" --shapes 8x64x64 --threads 1 \
  --update "$tmp/doc.md" >"$tmp/out" 2>&1 || fail "table.py --update again: exit $?"
[ "$(grep -c '^<!-- bench/table.py: avx512-vnni, CPU B -->' "$tmp/doc.md")" = 1 ] ||
  fail "a second update added CPU B's section again: $(cat "$tmp/doc.md")"
# the new section went before A's, not between A's marker and its heading
python3 - "$tmp/doc.md" <<'PY' || fail "CPU B's section is inside CPU A's: $(cat "$tmp/doc.md")"
import sys
d = open(sys.argv[1]).read()
a, a_end = d.index("<!-- bench/table.py: avx512-vnni, CPU A -->"), d.index("CPU A end -->")
b, b_end = d.index("<!-- bench/table.py: avx512-vnni, CPU B -->"), d.index("CPU B end -->")
sys.exit(0 if b_end < a and d.index("## A") == a + len("<!-- bench/table.py: avx512-vnni, CPU A -->\n") else 1)
PY
# --isa (a lower class's code here): bound and % of peak against that ISA's loop
# (isa_peak_gops), whatever the report's own bound; a section of its own beside the class's
python3 - "$tmp/run.json" "$tmp/isa.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["isa"], d["ort"] = "avx2", []
d["onednn"][0]["isa_peak_gops"] = 1.25 * 2 * 8 * 64 * 64 / 1e6  # ours at 1 ms: bound 1.25
json.dump(d, open(sys.argv[2], "w"))
PY
python3 "$src/bench/table.py" --from-json "$tmp/isa.json" --shapes 8x64x64 --threads 1 \
  --update "$tmp/doc.md" >"$tmp/out" 2>&1 || fail "table.py --from-json of an --isa run: exit $?"
grep -Fq '| 8x64x64 | 1 | input | 1.000 | 1.010 | **1.01** (1.00, 1.02) | 1.00 | 1.26 | 80% | — | — | — | — |' "$tmp/out" ||
  fail "--isa: the bound against the avx2 loop (1.26 for oneDNN at 1.01 ms, ours 80%)"
grep -Fq 'ONEDNN_MAX_CPU_ISA=AVX2' "$tmp/out" || fail "--isa: the section does not say how oneDNN was capped"
grep -Fq '## Issue 29 table: avx2 code on avx512-vnni, CPU B' "$tmp/doc.md" ||
  fail "--isa: no section of its own: $(cat "$tmp/doc.md")"
[ "$(grep -c '^<!-- bench/table.py: avx512-vnni, CPU B -->' "$tmp/doc.md")" = 1 ] ||
  fail "--isa replaced or doubled the class's own section: $(cat "$tmp/doc.md")"
# what a section says of its run comes from the run: its rounds (counted from the per-round
# ratios of a --json that did not record them: 2 here), build and commit; not the defaults of
# the command that renders it, nor the checkout's HEAD at that time
render
grep -Fq -- '--rounds 2 --ort-rounds 1 --update' "$tmp/out" ||
  fail "an unrecorded run's rounds: 2 oneDNN rounds and 1 ORT round, counted"
grep -Fq '2 rounds alternating with ours' "$tmp/out" || fail "the peers line's rounds"
grep -Fq 'commit not recorded in run.json' "$tmp/out" || fail "an unrecorded commit named as such"
python3 - "$tmp/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(rounds=7, ort_rounds=5, build="Release", commit="abc1234")
json.dump(d, open(sys.argv[1], "w"))
PY
render
grep -Fq -- '--rounds 7 --ort-rounds 5 --update' "$tmp/out" || fail "the recorded rounds"
grep -Fq 'Release build, commit abc1234.' "$tmp/out" || fail "the recorded build and commit"
# a recorded build or commit is text from a file: one line, no marker comment, no code span
python3 - "$tmp/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(build="Release`\n| forged | row |", commit="abc\n<!-- bench/table.py: avx512-vnni, CPU B end -->\n## forged")
json.dump(d, open(sys.argv[1], "w"))
PY
render
one_section "a recorded build or commit"
grep -Fq "Release' | forged | row | build, commit abc <!- bench/table.py: avx512-vnni, CPU B end -> ## forged." "$tmp/out" ||
  fail "the recorded build and commit, made one line"
# every other text the section takes from a run is cleaned the same way: the machine line, the
# CPU's name (the section's marker), the peer's description, profile and version, a status
python3 - "$tmp/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(build="Release", commit="abc1234", onednn_profile="p`\n| forged | profile |",
         onnxruntime="1.0\n## forged version", load_end="0.1\n| forged | load |",
         machine_line="machine: test\n| forged | machine |\n2 CPU(s) online, load average 0.1")
d["machine"]["cpu"] = "CPU C\n## forged cpu --"
d["onednn"][0]["backends"][0]["description"] = "x\n<!-- bench/table.py: avx512-vnni, CPU B end -->"
for r in d["onednn"][0]["results"]:
    if r["backend"] == "onednn" and r["shape"] == "8x64x64" and r["b"] == "input":
        r["status"] = "FAILED | forged | cell"
json.dump(d, open(sys.argv[1], "w"))
PY
render
one_section "a run's text"
grep -Fq '<!-- bench/table.py: avx512-vnni, CPU C ## forged cpu - -->' "$tmp/out" ||
  fail "the CPU's name in the marker, made one line"
grep -Fq '| 8x64x64 | 1 | input | 1.000 | FAILED / forged / cell | — | — | — |' "$tmp/out" ||
  fail "a status with | as one cell"
echo "table_bound: ok"
