#!/usr/bin/env bash
# tests/ci/gate_check.sh — runs ci/qmmcheck-gate.sh, the script every CI integration calls
# (docs/ci.md), as a CI would: two shards of a built-in and of a plugin built by
# --build-plugin, whose cases together must be a full run's, each once; a mutant plugin
# (docs/mutants.md) and a stale entry under --xfail-strict must fail the gate; a bad shard is a
# usage error; the GitHub step outputs name the reports. Then checks that action.yml, the
# reusable workflow and the GitLab template parse and call the script as documented.
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

# 7. the CI files parse and call the script
python3 "$src/tests/ci/check_ci_files.py" "$src"
echo "gate_check: ok"
