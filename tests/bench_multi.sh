#!/usr/bin/env bash
# tests/bench_multi.sh QMMCHECK FAKE_PLUGIN FLAKY_PLUGIN EXEC_CHILD — `qmmcheck bench` with several
# backends (issue 29 item 4) on a tiny shape: the machine line, every backend checked against the
# reference before timing, rounds alternating in the order given, medians and ratios against the
# first; a wrong backend (the fake plugin's zeros) FAILED with no time and no ratio, one that
# passes the check and then answers otherwise (flaky right=1) FAILED after its first round, a
# failed first backend gives nobody a ratio; the JSON report says the same. A FAILED line names
# its first mismatch and the profiles that give the backend's values; a large shape's reference
# answer is announced, and a wrong backend there costs no profile's whole output. Every timed
# call is checked (one or several backends), a rate above the peak loop is called suspect, nothing
# timed exits 3; bench's report: its strings escaped, no earlier one left by a bench that stops
# (a shape over the work limit, SIGTERM), no temporary file left.
set -euo pipefail
qmmcheck=$1 fake=$2 flaky=$3 child=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }
bench() { "$qmmcheck" bench --shape 3x40x5 --types u8s8u8 --threads 1 --reps 2 "$@" >"$tmp/out" 2>"$tmp/err"; }

rc=0
bench --backend optimized --backend reference --backend "$fake:mode=zeros" --rounds 3 \
  --report "json:$tmp/r.json" || rc=$?
[ "$rc" = 1 ] || fail "a FAILED backend: exit $rc, expected 1 ($(cat "$tmp/err"))"
grep -Eq '^machine: .+, class [a-z0-9-]+, [0-9]+ CPU\(s\) online, load average .*threads=1' "$tmp/out" ||
  fail "no machine line"
for b in 'optimized[^ ]* PASSED' 'reference PASSED' 'fake FAILED'; do
  grep -Eq "^check 3x40x5 u8s8u8 threads=1 b=input $b " "$tmp/out" || fail "no check line '$b'"
done
# alternation: round 1 A B, round 2 A B, round 3 A B; the failed one never timed
got=$(grep '^round ' "$tmp/out" | awk '{print $2, $7}' | sed 's/:.*//' | tr '\n' ' ')
[ "$got" = "1 optimized 1 reference 2 optimized 2 reference 3 optimized 3 reference " ] ||
  fail "rounds not alternating: '$got'"
grep -Eq '^result 3x40x5 u8s8u8 threads=1 b=input optimized[^ ]* PASSED median=[0-9.]+ s [0-9.]+ GOPS cpu=[0-9.]+ s rounds=3 reps=2 bound=[0-9.]+ ratio=1\.00 ' "$tmp/out" ||
  fail "no result line for the first backend"
grep -Eq '^result 3x40x5 u8s8u8 threads=1 b=input reference PASSED median=[0-9.]+ s [0-9.]+ GOPS cpu=[0-9.]+ s rounds=3 reps=2 bound=[0-9.]+ ratio=[0-9.]+ per round [0-9.]+,[0-9.]+,[0-9.]+ \(reference time / optimized' "$tmp/out" ||
  fail "no ratio line for the second backend"
# the bound: the peak loop sampled in each round (x86 always has one), explained once
grep -q '^bound: in each round the peak loop (' "$tmp/out" || fail "no bound line"
[ "$(grep -c '^peak-round [123] 3x40x5 threads=1 b=input [0-9.]* GOPS$' "$tmp/out")" = 3 ] ||
  fail "not one peak per round"
line=$(grep '^result .* fake ' "$tmp/out")
case "$line" in *"FAILED (errors:15 total:15; y[0,0] (index 0): expected "*", got 0; acc "*"; got matches no known profile): no time, no ratio") ;; *) fail "fake: '$line'" ;; esac
case "$line" in *median=*|*ratio=*) fail "a FAILED backend got a time or ratio: '$line'" ;; esac
python3 - "$tmp/r.json" <<'PY' || fail "JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["backend"].split(":")[0]: x for x in d["results"]}
assert d["machine"]["class"] and d["threads"] == 1 and d["rounds"] == 3, d
assert r["fake"]["status"] == "FAILED" and r["fake"]["ratio"] is None and r["fake"]["median_s"] is None
assert r["reference"]["status"] == "PASSED" and len(r["reference"]["round_ratio"]) == 3
assert len(r["reference"]["round_cpu_s"]) == 3 and r["reference"]["cpu_median_s"] > 0
assert r["fake"]["cpu_median_s"] is None and r["fake"]["cpu_ratio"] is None
assert r["optimized"]["ratio"] == 1.0 and len(r["optimized"]["round_s"]) == 3
# bound = median over rounds of (round peak / the backend's rate), each >= 1
ops = 2 * 3 * 40 * 5
for name in ("optimized", "reference"):
    x = r[name]
    assert len(x["round_peak_gops"]) == 3 and min(x["round_peak_gops"]) > 0, x
    want = sorted(p * 1e9 * t / ops for p, t in zip(x["round_peak_gops"], x["round_s"]))[1]
    assert x["bound"] >= 1 and abs(x["bound"] - want) <= 1e-3 * want, (x["bound"], want)
    assert len(x["round_bound"]) == 3
assert r["fake"]["bound"] is None and r["fake"]["round_peak_gops"] == []
PY

# a FAILED line names the profiles that give what the backend wrote, for --profile
rc=0
bench --backend optimized --backend reference:profile=truncation --rounds 1 || rc=$?
[ "$rc" = 1 ] || fail "truncation judged under spec: exit $rc"
grep -Eq '^check 3x40x5 .* reference:profile=truncation FAILED \(errors:[0-9]+ total:15; y\[[0-9,]+\] \(index [0-9]+\): expected [0-9]+, got [0-9]+; acc -?[0-9]+; acc\*scale = [-0-9.]+; got matches: truncation; --profile B=PROFILE judges a backend under one; profile spec\)$' "$tmp/out" ||
  fail "truncation's check line names no profile"
# one mismatch names no profile (a coincidence) and does not say that none gives it
rc=0
"$qmmcheck" bench --shape 1x3x1 --threads 1 --reps 1 --rounds 1 --backend optimized \
  --backend reference:profile=truncation >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "1x3x1 truncation: exit $rc"
grep -Eq '^check 1x3x1 .* reference:profile=truncation FAILED \(errors:1 total:1; y\[0,0\] \(index 0\): expected [0-9]+, got [0-9]+; acc -?[0-9]+; acc\*scale = [-0-9.]+; profile spec\)$' "$tmp/out" ||
  fail "1x3x1 truncation's check line"
# a large shape: the reference's answer announced before it is computed (seconds), and a wrong
# backend's profiles compared at its kept mismatches only (30 whole outputs were minutes)
rc=0
"$qmmcheck" bench --shape 1024x1024x1024 --threads 1 --reps 2 --rounds 1 --backend optimized \
  --backend "$fake:mode=zeros" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "1024^3 with a wrong backend: exit $rc ($(cat "$tmp/err"))"
grep -q "^qmmcheck bench: 1024x1024x1024: computing the reference's answer under profile spec first (1.1e+09 units of work" "$tmp/err" ||
  fail "no announcement: $(cat "$tmp/err")"
grep -Eq '^check 1024x1024x1024 .* fake FAILED \(errors:1048576 total:1048576; y\[0,0\] \(index 0\): expected [0-9]+, got 0; acc -?[0-9]+; .* \(judged at the kept mismatches only' "$tmp/out" ||
  fail "1024^3 fake's check line"

# right at the check, wrong in the timed calls: FAILED after round 1, no ratio
rc=0
bench --backend optimized --backend "$flaky:right=1" --rounds 2 || rc=$?
[ "$rc" = 1 ] || fail "a backend wrong while timed: exit $rc"
grep -Eq '^check .* flaky PASSED' "$tmp/out" || fail "flaky right=1 did not pass the check"
grep -Eq "^round 1 .* flaky FAILED \(round 1, timed call 1 of 2 answered otherwise" "$tmp/out" ||
  fail "the timed answers were not compared"
grep -q '^round 2 .* flaky' "$tmp/out" && fail "a failed backend was timed again"
grep -Eq '^result .* flaky FAILED .*: no time, no ratio$' "$tmp/out" || fail "flaky got a ratio"

# the first backend failed: nobody's ratio is against it
rc=0
bench --backend "$fake" --backend optimized --b-both --rounds 2 || rc=$?
[ "$rc" = 1 ] || fail "first backend FAILED: exit $rc"
[ "$(grep -c '^result .* optimized.* ratio=none (the first backend, fake, has no time)' "$tmp/out")" = 2 ] ||
  fail "ratios against a failed first backend (or not both B modes)"

# --profile names a backend that is not there: a usage error
rc=0
bench --backend optimized --backend reference --profile nosuch=onednn-fp32 || rc=$?
[ "$rc" = 2 ] && grep -q 'no --backend is that' "$tmp/err" || fail "--profile of no backend: exit $rc"
# no --threads: the optimized backend runs on every online CPU, so the peak the bound divides
# by is sampled on as many threads (one thread's peak would halve the bound on two CPUs)
"$qmmcheck" bench --shape 3x4x5 --reps 1 --rounds 1 --backend optimized --backend reference \
  >"$tmp/out" 2>"$tmp/err" || fail "bench without --threads: exit $? ($(cat "$tmp/err"))"
want=$(sed -n 's/^backend 1 optimized:isa=[a-z0-9]*,threads=\([0-9]*\) .*/\1/p' "$tmp/out")
grep -Eq "^peak-round 1 3x4x5 threads=$want b=input [0-9.]+ GOPS$" "$tmp/out" ||
  fail "the peak's threads are not the optimized backend's ($want)"
# ... and the machine line and the results name that count, not 1 (they said threads=1)
grep -Eq "^machine: .*; threads=$want \(optimized: threads=$want;" "$tmp/out" ||
  fail "the machine line's threads are not the optimized backend's ($want)"
grep -Eq "^result 3x4x5 u8s8u8 threads=$want b=input optimized" "$tmp/out" ||
  fail "the result line's threads are not the optimized backend's ($want)"

# every timed call is compared, not only a round's last: right on odd calls, wrong on even ones
rc=0
"$qmmcheck" bench --backend reference --backend "exec:$child alternate" --shape 8x8x8 --rounds 3 \
  --reps 2 --threads 1 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "alternate: exit $rc, expected 1"
grep -Eq '^result 8x8x8 .* test-child FAILED \(round 1, timed call [12] of 2 answered otherwise than the check before timing: 1 of 64 elements differ from the reference.s\): no time, no ratio$' "$tmp/out" ||
  fail "alternate's wrong timed calls were not caught"
# y is refilled before every timed call: a kernel that does nothing while y holds an answer is
# timed doing the work (before: 0.00 of the reference's time, far above the peak)
"$qmmcheck" bench --backend reference --backend "$flaky:lazy=1,wrong=0" --shape 64x64x64 \
  --rounds 3 --reps 3 --threads 1 >"$tmp/out" 2>"$tmp/err" || fail "lazy: exit $?"
line=$(grep '^result .* flaky ' "$tmp/out")
ratio=$(sed -n 's/.* ratio=\([0-9.]*\) per round.*/\1/p' <<<"$line")
awk -v r="$ratio" 'BEGIN { exit !(r >= 0.3) }' || fail "lazy kernel timed skipping its work: '$line'"
# a kernel right but above the peak loop (it copies a kept answer): PASSED, but called suspect.
# K long and y small, so that copying y beats every class's peak loop, AMX's tiles too (at
# 64x64x64 the copy ran at 4993 GOPS on a Zen 4, 105 ns a call: within what an AMX core's
# tile loop reaches, 2048 int8 ops a cycle; at 64x16384x64, 789503 GOPS)
"$qmmcheck" bench --backend reference --backend "$flaky:cache=1,wrong=0" --shape 64x16384x64 \
  --rounds 2 --reps 3 --threads 1 --report "json:$tmp/c.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "cache: exit $?"
grep -Eq "^result .* flaky PASSED .* bound=none .*; SUSPECT: in round [12] it ran at [0-9.]+ GOPS, above this machine's int8 peak loop \([0-9.]+ GOPS\)" "$tmp/out" ||
  fail "a rate above the peak not called suspect: $(grep '^result' "$tmp/out")"
grep -q '"above_peak": true' "$tmp/c.json" || fail "no above_peak in the report"
# every backend SKIPPED: nothing timed, exit 3 (as run)
rc=0
bench --backend "$fake:mode=unsupported" --backend "$fake:mode=unsupported" --rounds 1 || rc=$?
[ "$rc" = 3 ] || fail "all SKIPPED: exit $rc, expected 3"
grep -q '^nothing was timed: every backend was SKIPPED' "$tmp/out" || fail "no 'nothing was timed' line"

# one backend: its answer checked before timing and at every timed call
rc=0
"$qmmcheck" bench --backend "$fake:mode=accept" --shape 64x64x64 --reps 2 --threads 1 \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "one backend that writes nothing: exit $rc, expected 1"
grep -Eq '^check 64x64x64 u8s8u8 fake FAILED \(errors:4096 total:4096; ' "$tmp/out" ||
  fail "one backend: no FAILED check line"
grep -q '^bench ' "$tmp/out" && fail "a FAILED backend timed"
rc=0
"$qmmcheck" bench --backend "exec:$child alternate" --shape 8x8x8 --reps 3 --threads 1 \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "one backend, alternate: exit $rc, expected 1"
grep -Eq '^qmmcheck bench: test-child: 8x8x8: FAILED: timed call [12] of 3 answered otherwise than the check before timing: 1 of 64 elements differ' "$tmp/err" ||
  fail "one backend: a wrong timed call not caught: $(cat "$tmp/err")"
"$qmmcheck" bench --backend "$flaky:lazy=1,wrong=0" --shape 64x64x64 --reps 3 --threads 1 \
  >"$tmp/out" 2>"$tmp/err" || fail "one backend, lazy: exit $?"
grep -q '^peak raised' "$tmp/out" && fail "one backend: a lazy kernel timed skipping its work"
grep -q '^check 64x64x64 u8s8u8 flaky PASSED (the reference agrees; every timed call is compared too)$' "$tmp/out" ||
  fail "one backend: no check line"

# one backend's report: a name with quotes and a backslash stays one string
"$qmmcheck" bench --backend "$flaky:quote-name=1,wrong=0" --shape 4x5x6 --reps 2 --threads 1 \
  --report "json:$tmp/q.json" >"$tmp/out" 2>"$tmp/err" || fail "quote-name: exit $?"
python3 - "$tmp/q.json" <<'PY' || fail "a backend's name injected JSON: $(cat "$tmp/q.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == 'flaky", "checked": true, "status": "PASSED \\', d["backend"]
assert set(d) == {"backend", "types", "peak", "results"}, d.keys()
assert d["results"][0]["checked"] is True
PY

# a bench that does not finish leaves no earlier report: a later shape over the work limit is
# refused before anything is timed (one backend or several), with the same line
for several in "" "--backend reference --rounds 1"; do
  echo stale >"$tmp/r.json"
  rc=0
  timeout 60 "$qmmcheck" bench --backend reference $several --shape 4x4x4 \
    --shape 16384x16384x16384 --reps 1 --report "json:$tmp/r.json" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] || fail "16384^3 ($several): exit $rc, expected 1"
  grep -q "^qmmcheck bench: 16384x16384x16384: the reference cannot check it: .*QH_MAX_WORK" "$tmp/err" ||
    fail "16384^3 ($several): $(cat "$tmp/err")"
  grep -q '^check ' "$tmp/out" && fail "16384^3 ($several): a shape was timed before the refusal"
  [ ! -e "$tmp/r.json" ] || fail "16384^3 ($several): the earlier report was left"
done
# SIGTERM: exit 128+15, no earlier report and no temporary file left
echo stale >"$tmp/r.json"
"$qmmcheck" bench --backend reference --backend "exec:$child slow=3" --shape 4x4x4 --rounds 1 \
  --reps 1 --threads 1 --report "json:$tmp/r.json" >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 1
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "SIGTERM: exit $rc, expected 143"
left=$(cd "$tmp" && ls r.json* 2>/dev/null || true)
[ -z "$left" ] || fail "SIGTERM left: $left"
echo "bench_multi: ok"
