#!/usr/bin/env bash
# tests/bench_multi.sh QMMCHECK FAKE_PLUGIN FLAKY_PLUGIN — `qmmcheck bench` with several
# backends (issue 29 item 4) on a tiny shape: the machine line, every backend checked against the
# reference before timing, rounds alternating in the order given, medians and ratios against the
# first; a wrong backend (the fake plugin's zeros) FAILED with no time and no ratio, one that
# passes the check and then answers otherwise (flaky right=1) FAILED after its first round, a
# failed first backend gives nobody a ratio; the JSON report says the same. A FAILED line names
# its first mismatch and the profiles that give the backend's values; a large shape's reference
# answer is announced, and a wrong backend there costs no profile's whole output.
set -euo pipefail
qmmcheck=$1 fake=$2 flaky=$3
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
grep -Eq "^round 1 .* flaky FAILED \(round 1's timed calls answered otherwise" "$tmp/out" ||
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
echo "bench_multi: ok"
