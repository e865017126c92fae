#!/usr/bin/env bash
# tests/fuzz_campaign_inputs.sh — fuzz/campaign, campaign-record and campaign-plot take no input
# as something else: a --hours that is not a positive number of at least one second, a bad
# QMM_CAMPAIGN_INTERVAL (0 made the recorder a busy loop), an unknown or repeated target, a
# missing option value are usage errors (exit 2) naming the value, before anything starts; a
# target whose binary is missing starts no fuzzer (one left running by an earlier target had
# no end); no path, target name or CSV byte becomes gnuplot code (a '"', a newline and
# system("touch ...") in the campaign directory, the PNG path, TMPDIR and the CSV). The
# campaigns run fake fuzzers (shell scripts) in a copy of the fuzz/ scripts: nothing is built.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
fake_pids=$tmp/pids
mkdir -p "$fake_pids"
cleanup() {
    local f
    # the fake fuzzers this test started, by their ids, if a campaign left one running
    for f in "$fake_pids"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
bad=0
fail() { echo "FAIL $*"; bad=1; }
ok() { echo "ok   $*"; }
export QMM_PWNED=$tmp/PWNED-abs
# a directory name that closes a gnuplot string and runs system() on the next line
hostile=$'c"\nsystem("touch PWNED; touch $QMM_PWNED")\n\'"q'
pwned() { [ -e PWNED ] || [ -e "$QMM_PWNED" ] || [ -n "$(find "$tmp" -name PWNED 2>/dev/null)" ]; }

# expect_usage WHAT CMD...: CMD exits 2 within 30 s and its stderr says "campaign..."
expect_usage() {
    local what=$1 rc
    shift
    timeout 30 "$@" >out.txt 2>err.txt
    rc=$?
    if [ "$rc" = 2 ] && grep -q '^campaign' err.txt; then
        ok "$what: usage error: $(head -1 err.txt)"
    else
        fail "$what: exit $rc (want 2): $(head -c 300 err.txt) $(head -c 200 out.txt)"
    fi
}

# 1. --hours: under one second, zero, negative, not a number, empty, absurd: refused
plan=("$src/fuzz/campaign" --plan --jobs 10 --dir "$tmp/plan")
for h in 0.0001 0.0002 0 -1 -0.5 abc "" 1e3 nan inf 1000000 "1 " 0x10; do
    expect_usage "--hours '$h'" "${plan[@]}" --hours "$h"
done
expect_usage "--hours without a value" "${plan[@]}" --hours
for pair in 0.0003:1 0.5:1800 .5:1800 168:604800; do
    line=$("${plan[@]}" --hours "${pair%%:*}" 2>&1 | grep 'stops after')
    [ "$line" = "campaign: stops after ${pair#*:} s (--hours ${pair%%:*})" ] &&
        ok "--hours ${pair%%:*}: $line" || fail "--hours ${pair%%:*}: '$line'"
done

# 2. QMM_CAMPAIGN_INTERVAL: campaign refuses it before starting; the recorder refuses it too
#    instead of appending rows as fast as it can
#    (empty is unset: the default, 60)
for i in 0 abc 4 -5 " 60" 1m 86401 ""; do
    [ -z "$i" ] ||
        expect_usage "QMM_CAMPAIGN_INTERVAL='$i' (campaign)" env QMM_CAMPAIGN_INTERVAL="$i" "${plan[@]}"
    rm -rf rec && mkdir rec
    expect_usage "INTERVAL '$i' (campaign-record)" "$src/fuzz/campaign-record" rec libfuzzer "$i" fuzz_meta
    rows=$(($(cat rec/progress.csv 2>/dev/null | wc -l) - 1))
    [ "$rows" -le 0 ] || fail "INTERVAL '$i': $rows rows appended"
done
expect_usage "campaign-record ENGINE x" "$src/fuzz/campaign-record" rec x 60 fuzz_meta
expect_usage "campaign-record TARGET ../x" "$src/fuzz/campaign-record" rec libfuzzer 60 ../x
expect_usage "campaign-record TARGET a,b" "$src/fuzz/campaign-record" rec libfuzzer 60 a,b
# a valid interval samples once per interval: in 3 s of a 5-second interval, one row at most
# (the one written when it is stopped)
rm -rf rec && mkdir rec
"$src/fuzz/campaign-record" rec libfuzzer 5 fuzz_meta 2>err.txt &
rec=$!
sleep 3
kill -TERM "$rec"
wait "$rec"
rc=$?
rows=$(($(wc -l <rec/progress.csv) - 1))
[ "$rc" = 0 ] && [ "$rows" -le 1 ] && ok "interval 5: $rows row(s) in 3 s, exit 0" ||
    fail "interval 5: exit $rc, $rows rows in 3 s: $(cat err.txt)"

# 3. the other options: targets, jobs, import, engine, missing values
expect_usage "--targets nosuch" "${plan[@]}" --targets "fuzz_meta nosuch"
expect_usage "--targets twice" "${plan[@]}" --targets "fuzz_meta fuzz_meta"
expect_usage "--targets ''" "${plan[@]}" --targets ""
expect_usage "--targets ../x" "${plan[@]}" --targets "../fuzz_meta"
expect_usage "--jobs 08" "${plan[@]}" --jobs 08
expect_usage "--engine x" "${plan[@]}" --engine x
expect_usage "--import missing" "${plan[@]}" --import "$tmp/no-such-dir"
expect_usage "--dir without a value" "${plan[@]}" --dir

# 4. campaign-plot: the hostile directory (CSV and PNG in it) and TMPDIR; a CSV whose fields
#    hold gnuplot text. The plot is made (gnuplot here) or refused with a line; nothing runs.
mkdir -p "$hostile" "tmp$hostile"
{
    echo "unix_time,target,engine,exec_per_s,corpus,cov,ft,crashes,cases"
    echo "1000,fuzz_meta,libfuzzer,10,5,100,200,0,0"
    echo "1060,fuzz_meta,libfuzzer,12,6,110,210,0,1"
    echo '1100,fuzz_meta,libfuzzer,1 "; system("touch PWNED") ;",6,110,210,0,1'
    echo '1120,x"; system("touch PWNED"),libfuzzer,1,6,110,210,0,1'
} >"$hostile/progress.csv"
TMPDIR=$tmp/tmp$hostile "$src/fuzz/campaign-plot" "$hostile/progress.csv" >plot.out 2>plot.err
rc=$?
if pwned; then
    fail "campaign-plot ran the directory name as gnuplot: PWNED exists (exit $rc)"
elif [ "$rc" = 0 ] && [ -s "$hostile/progress.png" ]; then
    ok "campaign-plot: a hostile directory is plotted, nothing run: $(cat plot.out)"
elif ! command -v gnuplot >/dev/null && grep -q '^campaign-plot: gnuplot not found' plot.err; then
    ok "campaign-plot: no gnuplot here (refused with a line); nothing run"
else
    fail "campaign-plot: exit $rc: $(cat plot.err)"
fi

# 5. campaigns over fake fuzzers in a copy of the scripts: fake/fuzz/{campaign,...} and
#    fake/build-fuzz/fuzz/<target>, a script that logs its arguments and its pid
fake=$tmp/fake
mkdir -p "$fake/fuzz/dict" "$fake/build-fuzz/fuzz"
cp "$src"/fuzz/campaign* "$fake/fuzz/"
for f in "$src"/fuzz/fuzz_*.c; do : >"$fake/fuzz/$(basename "$f")"; done
cat >"$fake/build-fuzz/fuzz/fuzz_meta" <<'EOF'
#!/bin/sh
echo "$(basename "$0") $*" >>"$FAKE_ARGS"
case " $* " in *" -merge=1 "*) exit 0 ;; esac
echo $$ >"$FAKE_PIDS/$(basename "$0").pid"
echo "#2 INITED cov: 10 ft: 20 corp: 3/30b exec/s: 0 rss: 30Mb" >&2
exec sleep "$FAKE_SLEEP"
EOF
chmod +x "$fake/build-fuzz/fuzz/fuzz_meta"
export FAKE_ARGS=$tmp/args FAKE_PIDS=$fake_pids

# 5a. the second target's binary is missing: nothing may be left running
FAKE_SLEEP=60 timeout 60 "$fake/fuzz/campaign" --jobs 2 --targets "fuzz_meta fuzz_onnx_model" \
    --dir "$tmp/c1" >c1.out 2>c1.err
rc=$?
sleep 1
left=""
for f in "$fake_pids"/*.pid; do
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && left+=" $(basename "$f" .pid)"
done
if [ -n "$left" ]; then
    fail "a missing binary (exit $rc) left fuzzers running:$left"
elif [ "$rc" != 0 ] && grep -q 'not built' c1.err; then
    ok "a missing binary: exit $rc before any fuzzer started: $(cat c1.err)"
else
    fail "a missing binary: exit $rc: $(cat c1.err)"
fi
rm -f "$fake_pids"/*.pid

# 5b. a whole campaign in the hostile directory: --hours reaches the fuzzer as seconds, the
#     progress is recorded and plotted, nothing runs
cp "$fake/build-fuzz/fuzz/fuzz_meta" "$fake/build-fuzz/fuzz/fuzz_onnx_model"
: >"$FAKE_ARGS"
FAKE_SLEEP=2 timeout 120 "$fake/fuzz/campaign" --jobs 2 --targets "fuzz_meta fuzz_onnx_model" \
    --hours 0.5 --dir "$tmp/$hostile/camp" >c2.out 2>c2.err
rc=$?
if pwned; then
    fail "a campaign in a hostile directory ran its name: PWNED exists"
elif [ "$rc" != 0 ]; then
    fail "a campaign over fake fuzzers exited $rc: $(cat c2.err) $(cat c2.out)"
elif [ "$(grep -c -- '-max_total_time=1800 ' "$FAKE_ARGS")" != 2 ]; then
    fail "--hours 0.5 did not reach both fuzzers as -max_total_time=1800: $(cat "$FAKE_ARGS")"
else
    ok "a campaign over fake fuzzers in a hostile directory: exit 0, -max_total_time=1800, nothing run"
fi
exit $bad
