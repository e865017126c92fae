#!/usr/bin/env bash
# tests/ci/gate_check.sh — runs ci/qmmcheck-gate.sh, the script every CI integration calls
# (docs/ci.md), as a CI would: two shards of a built-in and of a plugin built by
# --build-plugin, whose cases together must be a full run's, each once; a mutant plugin
# (docs/mutants.md) and a stale entry under --xfail-strict must fail the gate; a bad shard is a
# usage error; the GitHub step outputs name the reports; QMM_GATE_VECTORS and
# QMM_GATE_EXTRA_ARGS given as YAML blocks run every line, and what the gate cannot read is a
# usage error. Then the documented path end to end (docs/ci.md): qmmcheck built and installed
# once by the gate's build step, the example plugin's sources (and a mutant of them that rounds
# half away from zero) built by plain `cmake`/`make` commands against that prefix in each shard,
# a shard with nothing to judge, and the verdict over the shards with its GitHub step summary
# and annotations. Last, action.yml, the reusable workflow and the GitLab template parse and
# call the script as documented, and no input reaches GITHUB_ENV raw.
#   gate_check.sh QMMCHECK MUTANTS_DIR SOURCE_DIR
set -euo pipefail
# absolute: the checks run in a temporary directory
qmmcheck=$(realpath "$1") mutants=$(realpath "$2") src=$(realpath "$3")
gate=$src/ci/qmmcheck-gate.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() {
    echo "gate_check: FAILED: $*" >&2
    exit 1
}

# "NAME DATA_SET" of each case in the JSON reports, one a line (python3's json: stdlib).
names() {
    python3 - "$@" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    for case in json.load(open(path))["cases"]:
        print(case["name"], case["data_set"])
EOF
}

# gate BACKEND OUT EXPECTED_EXIT [OPTIONS...]: one gate run of each shard of two.
gate_shards() {
    local backend=$1 out=$2 want=$3
    shift 3
    for i in 1 2; do
        local rc=0
        "$gate" run --qmmcheck "$qmmcheck" --source "$src" --backend "$backend" --shard "$i/2" \
            --out "$out" "$@" >"$out.$i.log" 2>&1 || rc=$?
        [ "$rc" = "$want" ] || { cat "$out.$i.log"; fail "$backend shard $i/2 exited $rc, want $want"; }
        for ext in xml json log; do
            [ -s "$out/qmmcheck-shard-$i-of-2.$ext" ] || fail "$backend: no $out/qmmcheck-shard-$i-of-2.$ext"
        done
        grep -q "<testsuites" "$out/qmmcheck-shard-$i-of-2.xml" || fail "$backend: JUnit of shard $i"
        grep -q "^SUMMARY: .* shard $i/2$" "$out/qmmcheck-shard-$i-of-2.log" ||
            fail "$backend: the log of shard $i does not end in its SUMMARY"
    done
}

# The two shards' cases are the full run's, none twice.
same_as_full_run() {
    local backend=$1 out=$2
    "$qmmcheck" run --quiet --backend "$backend" --vectors "$src/vectors" \
        --report "json:$out/full.json" >/dev/null 2>&1 || true
    names "$out/full.json" | sort >"$out/full.txt"
    names "$out/qmmcheck-shard-1-of-2.json" "$out/qmmcheck-shard-2-of-2.json" | sort >"$out/shards.txt"
    [ -s "$out/full.txt" ] || fail "$backend: the full run judged nothing"
    "$src/tests/schema/check_report.sh" "$out"/*.json || fail "$backend: a JSON report is not valid"
    diff "$out/full.txt" "$out/shards.txt" >/dev/null ||
        fail "$backend: the shards' cases differ from the full run's: $(diff "$out/full.txt" "$out/shards.txt" | head -5)"
    [ -z "$(uniq -d "$out/shards.txt")" ] || fail "$backend: a case ran in both shards"
    comm -12 <(names "$out/qmmcheck-shard-1-of-2.json" | sort) \
        <(names "$out/qmmcheck-shard-2-of-2.json" | sort) | grep -q . &&
        fail "$backend: shards 1 and 2 overlap"
    echo "gate_check: $backend: 2 shards = the full run ($(wc -l <"$out/full.txt") cases)"
}

# 1. a built-in backend
gate_shards optimized builtin 0
same_as_full_run optimized builtin

# 2. a plugin the gate builds first, given by a relative path as in a kernel repository
control=$mutants/libmutant-none.so
gate_shards ./libmykernels.so plugin 0 --build-plugin "cp '$control' libmykernels.so"
same_as_full_run "$tmp/libmykernels.so" plugin

# 3. a backend with a bug fails the gate, and still leaves its reports
gate_shards "$mutants/libmutant-ties-away.so" mutant 1
grep -q "<failure" mutant/qmmcheck-shard-*-of-2.xml || fail "the mutant's JUnit has no <failure>"

# 4. a stale expected-failure entry passes with a warning, fails under --xfail-strict
echo "no/such/case" >stale.txt
gate_shards optimized xfail 0 --xfail stale.txt
rc=0
"$gate" run --qmmcheck "$qmmcheck" --source "$src" --backend optimized --out strict \
    --xfail stale.txt --xfail-strict >strict.log 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat strict.log; fail "a stale entry under --xfail-strict exited $rc, want 1"; }

# 4b. a list that waives a mutant's failures, each in some shard, holds in every shard under
#     --xfail-strict (a shard does not call the other shards' entries stale); an entry naming
#     no case is reported by shard 1 only
mutant=$mutants/libmutant-ties-away.so
"$qmmcheck" run --quiet --backend "$mutant" --vectors "$src/vectors" \
    --report json:mutant-full.json >/dev/null 2>&1 || true
python3 - mutant-full.json >waive.txt <<'EOF2'
import json, sys
print("\n".join(sorted({c["name"] for c in json.load(open(sys.argv[1]))["cases"]
                         if c["status"] == "failed"})))
EOF2
[ "$(wc -l <waive.txt)" -ge 2 ] || fail "the mutant fails fewer than 2 cases: $(cat waive.txt)"
gate_shards "$mutant" waived 0 --xfail waive.txt --xfail-strict
echo "no/such/case" >>waive.txt
for i in 1 2; do
    rc=0
    "$gate" run --qmmcheck "$qmmcheck" --source "$src" --backend "$mutant" --shard "$i/2" \
        --out nocase --xfail waive.txt --xfail-strict >nocase.log 2>&1 || rc=$?
    want=$((i == 1 ? 1 : 0))
    [ "$rc" = "$want" ] || { cat nocase.log; fail "an entry naming no case: shard $i/2 exited $rc, want $want"; }
done

# 5. usage errors exit 2 before anything runs
for bad in 0/0 3/2 x/y 1/0; do
    rc=0
    "$gate" run --qmmcheck "$qmmcheck" --backend optimized --shard "$bad" >bad.log 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "--shard $bad exited $rc, want 2"
    grep -q "expected I/N" bad.log || fail "--shard $bad: $(cat bad.log)"
done
rc=0
"$gate" run --qmmcheck "$qmmcheck" --source "$src" >bad.log 2>&1 || rc=$?
if [ "$rc" != 2 ] || ! grep -q "give --backend" bad.log; then
    fail "no --backend: exit $rc: $(cat bad.log)"
fi

# 6. on GitHub, the step outputs name the reports; the environment replaces the options
export GITHUB_OUTPUT=$tmp/github_output QMM_GATE_BACKEND=optimized QMM_GATE_SHARD=2/2 \
    QMM_GATE_OUT=env QMM_GATE_QMMCHECK=$qmmcheck QMM_GATE_SOURCE=$src
"$gate" run >env.log 2>&1 || { cat env.log; fail "the gate configured by its environment failed"; }
for line in junit=env/qmmcheck-shard-2-of-2.xml json=env/qmmcheck-shard-2-of-2.json exit-code=0; do
    grep -qx "$line" "$GITHUB_OUTPUT" || fail "GITHUB_OUTPUT lacks $line: $(cat "$GITHUB_OUTPUT")"
done
unset GITHUB_OUTPUT QMM_GATE_BACKEND QMM_GATE_SHARD QMM_GATE_OUT QMM_GATE_QMMCHECK QMM_GATE_SOURCE

# 6b. QMM_GATE_VECTORS and QMM_GATE_EXTRA_ARGS are lists of words (docs/ci.md, "Lists in
#     variables"): a YAML block (one suite a line) runs every line, and the gate names each
#     suite; a quoted word stays one word; a value the gate cannot read whole is a usage error
gate_env() { # EXPECTED_EXIT LOG [gate run options...]: the gate with the current environment
    local want=$1 log=$2 rc=0
    shift 2
    "$gate" run --qmmcheck "$qmmcheck" --source "$src" "$@" >"$log" 2>&1 || rc=$?
    [ "$rc" = "$want" ] || { cat "$log"; fail "$log: the gate exited $rc, want $want"; }
}
ties=$src/vectors/edge/qlinearmatmul/ties
QMM_GATE_VECTORS="$src/vectors/edge/matmulinteger
$ties
" gate_env 1 lines.log --backend "$mutant" --out lines
grep -qx "qmmcheck-gate:   $ties" lines.log || fail "the gate does not name the second suite: $(cat lines.log)"
# grep without -q reads to the end: names must not die of SIGPIPE under pipefail
names lines/qmmcheck-shard-1-of-1.json | grep '^even-zp' >/dev/null ||
    fail "the second line's suite did not run: $(head -3 lines.log)"
QMM_GATE_EXTRA_ARGS='--timeout 60
--filter "^edge/qlinearmatmul/(ties|types)/"' gate_env 1 extra.log --backend "$mutant" \
    --out extra --vectors "$src/vectors"
grep -q 'extra run arguments (4)' extra.log || fail "not 4 extra arguments: $(grep extra extra.log)"
others=$(names extra/qmmcheck-shard-1-of-1.json | grep -cvE '^edge/qlinearmatmul/(ties|types)/' || true)
[ "$others" = 0 ] || fail "the second line's --filter was not applied: $others other cases ran"
for bad in "--filter 'ties" '--filter "ties' '--timeout 60 \' '--shard 1/2' '--shard=2/2'; do
    QMM_GATE_EXTRA_ARGS=$bad gate_env 2 bad.log --backend optimized --out unread
    grep -q "qmmcheck-gate: .*\(quote is not closed\|lone backslash\|give the shard\)" bad.log ||
        fail "QMM_GATE_EXTRA_ARGS=$bad: $(cat bad.log)"
done
[ ! -e unread ] || fail "a value the gate could not read still ran: $(ls unread)"
for bad in "$src/vectors/edge '$ties" "''" "$src/vectors/edge no-such-suite" \
    "$(head -c 16385 /dev/zero | tr '\0' x)"; do
    QMM_GATE_VECTORS=$bad gate_env 2 bad.log --backend optimized --out unread
    grep -q "qmmcheck-gate: .*\(quote is not closed\|empty suite\|not a directory\|at most 16384\)" bad.log ||
        fail "QMM_GATE_VECTORS=$bad: $(cat bad.log)"
done
# QMM_GATE_XFAIL_STRICT: 1/true or 0/false/empty; a typo is not read as 'not strict'
QMM_GATE_XFAIL_STRICT=true gate_env 1 strict.log --backend optimized --out strict2 --xfail stale.txt
QMM_GATE_XFAIL_STRICT=yes gate_env 2 strict.log --backend optimized --out strict3 --xfail stale.txt
grep -q "QMM_GATE_XFAIL_STRICT=yes: expected" strict.log || fail "XFAIL_STRICT=yes: $(cat strict.log)"
# a results directory that starts with '-' is a directory, not an option of mkdir or cat
gate_env 0 dash.log --backend optimized --out -res --vectors "$ties"
[ -s ./-res/qmmcheck-shard-1-of-1.json ] || fail "--out -res: no report: $(cat dash.log)"
# what the gate prints of its inputs has no raw control character (a forged or erased line)
gate_env 0 esc.log --backend optimized --vectors "$ties" --out esc \
    --build-plugin "$(printf 'true \033[2K\rSUMMARY: forged')"
! grep -q "$(printf '\033')" esc.log || fail "a raw ESC from --build-plugin reached the log"
# a step of the gate that fails is exit 2 with a line, not 1 (a case failed)
gate_env 2 nodir.log --backend optimized --out /dev/null/res --vectors "$ties"
grep -q "^qmmcheck-gate: line [0-9]*: mkdir" nodir.log || fail "--out /dev/null/res: $(cat nodir.log)"
# a line break in --out would add lines to GITHUB_OUTPUT (a forged exit-code=0)
: >forged_output
GITHUB_OUTPUT=$tmp/forged_output gate_env 2 out.log --backend "$mutant" \
    --out "$(printf 'res\nexit-code=0\nx')"
[ ! -s forged_output ] || fail "--out with a line break wrote GITHUB_OUTPUT: $(cat forged_output)"

# 8. the documented path (docs/ci.md), end to end: one build of qmmcheck, installed into a
#    prefix, serves every shard; the kernel repository's plugin is built from its sources by the
#    commands a kernel repository has (no path to qmmcheck in them: the gate says where)
"$gate" build --source "$src" --build-dir "$tmp/gate-build" --jobs 2 >gate-build.log 2>&1 ||
    { cat gate-build.log; fail "the gate's build step failed"; }
prefix=$tmp/gate-build/prefix
[ -x "$prefix/bin/qmmcheck" ] || fail "the build step installed no $prefix/bin/qmmcheck"
cp -r "$src/examples/vendor-plugin" kernel
cp -r "$src/examples/vendor-plugin" mutant-kernel
# the mutant rounds half away from zero (C's round) where the example rounds half to even
sed -i 's/nearbyint(/round(/' mutant-kernel/mykernels.c
grep -q 'round((double)acc' mutant-kernel/mykernels.c || fail "the mutant's sed changed nothing"
# two cases in two shards: one the example computes, one it declines (per-row: SKIPPED), so
# shard 2/2 judges nothing (exit 3)
ties=$src/vectors/edge/qlinearmatmul/ties
pick='^(even-zp-pos-u8u8u8|per-row-col-odd-zp-s8u8u8)$'
run_shards() { # DIR BUILD_COMMAND BACKEND WANT1 WANT2 [env...]: both shards from DIR, fresh
    local dir=$1 build=$2 be=$3 want i rc
    shift 3
    for i in 1 2; do
        want=$1
        shift
        rc=0
        (cd "$dir" && rm -rf build libmykernels.so &&
            env GITHUB_RUN_ATTEMPT=1 "$gate" run --prefix "$prefix" --source "$src" --shard "$i/2" \
                --vectors "$ties" --build-plugin "$build" --backend "$be" -- --filter "$pick") \
            >"$dir.$i.log" 2>&1 || rc=$?
        [ "$rc" = "$want" ] || { cat "$dir.$i.log"; fail "$dir shard $i/2 exited $rc, want $want"; }
        grep -q "the plugin's build finds qmmcheck in $prefix" "$dir.$i.log" ||
            fail "$dir shard $i: the plugin's build was not told the prefix: $(head -3 "$dir.$i.log")"
    done
}
# with CMake (find_package(qmm) through CMAKE_PREFIX_PATH) and with pkg-config (make)
run_shards kernel 'cmake -S . -B build && cmake --build build' ./build/libmykernels.so 0 3
grep -q "shard 2/2 judged nothing (exit 3): not a failure" kernel.2.log ||
    fail "the empty shard does not say it is no failure: $(tail -3 kernel.2.log)"
rc=0
"$gate" verdict --out kernel/qmmcheck-results >verdict.log 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat verdict.log; fail "the example's verdict exited $rc, want 0"; }
grep -q "^VERDICT: pass: 1 case(s) judged, none failed; 1 shard(s) judged nothing (every case SKIPPED), not a failure" verdict.log ||
    fail "the verdict does not count the empty shard: $(cat verdict.log)"
grep -q "^VERDICT: total:2 passed:1 failed:0 .* skipped:1 " verdict.log || fail "verdict counts: $(cat verdict.log)"
export GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=$tmp/summary.md
run_shards mutant-kernel make ./libmykernels.so 1 3
unset GITHUB_ACTIONS
# the failing shard's annotation carries the case and its __REPRO: line
grep -q "^::error title=qmmcheck shard 1/2::1:FAILED even-zp-pos-u8u8u8 (errors:[0-9]* total:16) __REPRO: qmmcheck repro --backend $tmp/mutant-kernel/libmykernels.so $ties/even-zp-pos-u8u8u8\$" \
    mutant-kernel.1.log || fail "no ::error annotation with the __REPRO: line: $(cat mutant-kernel.1.log)"
rc=0
GITHUB_ACTIONS=true "$gate" verdict --out mutant-kernel/qmmcheck-results >verdict.log 2>&1 || rc=$?
unset GITHUB_STEP_SUMMARY
[ "$rc" = 1 ] || { cat verdict.log; fail "the mutant's verdict exited $rc, want 1"; }
grep -q "^1:FAILED even-zp-pos-u8u8u8 .* __REPRO: qmmcheck repro --backend $tmp/mutant-kernel/libmykernels.so $ties/even-zp-pos-u8u8u8\$" verdict.log ||
    fail "the verdict does not name the failure and its __REPRO: line: $(cat verdict.log)"
# the failing lines under the shard they come from (case numbers are each shard's own)
grep -A1 -x "qmmcheck-gate: shard 1/2:" verdict.log | grep -q "^1:FAILED even-zp-pos-u8u8u8 " ||
    fail "the verdict's failures are not under their shard's line: $(cat verdict.log)"
grep -q "^VERDICT: FAILED: 1 shard(s) with a failing case; 1 shard(s) judged nothing" verdict.log ||
    fail "the mutant's verdict line: $(cat verdict.log)"
grep -q "^::error title=qmmcheck verdict::FAILED" verdict.log || fail "no verdict annotation: $(cat verdict.log)"
# the step summary: each shard's table row and the failure with its mismatches, and the verdict
grep -q "^| 1/2 | 1 | 1 | 0 | 1 | 0 | 0 |" summary.md || fail "summary: no row of shard 1: $(cat summary.md)"
grep -q "^| 2/2 | 3 | 1 | 0 | 0 | 0 | 1 |" summary.md || fail "summary: no row of shard 2: $(cat summary.md)"
grep -q "^## qmmcheck verdict: FAILED" summary.md || fail "summary: no verdict heading: $(cat summary.md)"
grep -q "^| all | 1 | 2 | 0 | 1 | 0 | 1 |" summary.md || fail "summary: no totals: $(cat summary.md)"
grep -q "^    y\[0,0\] (index 0): expected 128, got 129; acc 1; acc\*scale = 0.5" summary.md ||
    fail "summary: no mismatch line: $(cat summary.md)"

# verdicts over reports that are not a whole run: no shard judged anything (3); a shard
# missing (2); a shard reported twice by one attempt (two gates sharing a name: 2); a later
# attempt's reports replace an earlier one's (a re-run failed job)
mkdir -p v/empty v/missing v/twice/a v/twice/b v/rerun/a1 v/rerun/a2
cp kernel/qmmcheck-results/qmmcheck-shard-2-of-2.* v/empty/
sed -i 's/-of-2/-of-1/; s/shard 2\/2/shard 1\/1/' v/empty/qmmcheck-shard-2-of-2.log
for f in v/empty/qmmcheck-shard-2-of-2.*; do mv "$f" "${f/2-of-2/1-of-1}"; done
# a log line after qmmcheck's own (a backend's output) does not make a shard judge something
echo "SUMMARY: total:1 passed:1 failed:0 mistrusted:0 skipped:0 unchecked:0 crashed:0 timeout:0 error:0 xfail:0 xpass:0 (0.001 s) shard 1/1" \
    >>v/empty/qmmcheck-shard-1-of-1.log
cp kernel/qmmcheck-results/qmmcheck-shard-1-of-2.* v/missing/
cp kernel/qmmcheck-results/qmmcheck-shard-*-of-2.* v/twice/a/
cp kernel/qmmcheck-results/qmmcheck-shard-1-of-2.* v/twice/b/
cp mutant-kernel/qmmcheck-results/qmmcheck-shard-*-of-2.* v/rerun/a1/
cp kernel/qmmcheck-results/qmmcheck-shard-1-of-2.* v/rerun/a2/
sed -i 's/attempt=1/attempt=2/' v/rerun/a2/qmmcheck-shard-1-of-2.exit
for want in "empty 3 ^VERDICT: EMPTY: no shard judged any case" \
    "missing 2 ^qmmcheck-gate: shard 2/2: no report" \
    "twice 2 ^qmmcheck-gate: shard 1/2: two reports of one attempt" \
    "rerun 0 ^VERDICT: pass: 1 case(s) judged"; do
    read -r dir code line <<<"$want"
    rc=0
    "$gate" verdict --out "v/$dir" $([ "$dir" = missing ] && echo --shards 2) >verdict.log 2>&1 || rc=$?
    [ "$rc" = "$code" ] || { cat verdict.log; fail "verdict over v/$dir exited $rc, want $code"; }
    grep -q "$line" verdict.log || fail "verdict over v/$dir: $(cat verdict.log)"
done

# 9. docs/ci.md's first sh block as written, in a copy of the example as the kernel repository:
#    QMM is the checkout, the build directory step 8's (built: the build step only checks
#    it), and deps (apt) left out; the
#    example fails the near-tie cases, so the verdict is 1, over the 4 shards' every case
awk '/^```sh$/ {on = 1; next} on && /^```$/ {exit} on' "$src/docs/ci.md" |
    grep -v 'qmmcheck-gate.sh deps' | sed "s|/tmp/qmm-gate|$tmp/gate-build|g" >doc.sh
grep -q 'verdict' doc.sh || fail "docs/ci.md's first sh block has no verdict: $(cat doc.sh)"
cp -r "$src/examples/vendor-plugin" doc-kernel
rc=0
(cd doc-kernel && QMM=$src bash -e ../doc.sh) >doc.log 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat doc.log; fail "docs/ci.md's commands: exit $rc, want 1 (the example's near ties)"; }
total=$("$qmmcheck" list --vectors "$src/vectors" 2>/dev/null | wc -l)
grep -q "^VERDICT: total:$total passed:[1-9][0-9]* failed:[1-9]" doc.log ||
    fail "docs/ci.md's verdict did not judge the $total cases: $(grep VERDICT doc.log)"
grep -q "^VERDICT: FAILED: .* shard(s) with a failing case" doc.log || fail "$(grep VERDICT doc.log)"

# 7. the CI files parse and call the script
python3 "$src/tests/ci/check_ci_files.py" "$src"
echo "gate_check: ok"
