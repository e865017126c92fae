#!/usr/bin/env bash
# tests/script_args.sh — the helper scripts refuse an argument they cannot use (exit 2, naming
# it) rather than run something else: scripts/test.sh with a misspelt --sanitize ran the plain
# build and passed; fuzz/smoke.sh 0 (or a non-number) gave libFuzzer -max_total_time=0, no
# limit; fuzz/throughput.sh RUNS -1 gave -runs=-1, for ever. The scripts run in a copy of the
# tree with a fake cmake and ctest on PATH and fake fuzz targets that log their arguments:
# nothing is built.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fake=$tmp/tree
mkdir -p "$fake/scripts" "$fake/fuzz/dict" "$fake/fuzz/corpus" "$fake/build-fuzz/fuzz" "$tmp/bin"
cp "$src/scripts/test.sh" "$fake/scripts/"
cp "$src/fuzz/smoke.sh" "$src/fuzz/throughput.sh" "$fake/fuzz/"
echo '#include "fuzz/differential.h"' >"$fake/fuzz/fuzz_meta.c"
export CALLS=$tmp/calls
for tool in cmake ctest; do
    printf '#!/bin/sh\necho "%s $*" >>"$CALLS"\n' "$tool" >"$tmp/bin/$tool"
done
# The fake configure writes the cache its -D options make (FAKE_DROP=1: the options lost, as
# CMake does when it discards a cache it thinks changed) and a qmmcheck that nm reads.
cat >>"$tmp/bin/cmake" <<'EOF'
[ "$1" = -S ] || exit 0
dir=$4
mkdir -p "$dir/harness"
: >"$dir/harness/qmmcheck"
: >"$dir/CMakeCache.txt"
for a in "$@"; do
    case "$a" in
        -D*=*) [ -n "${FAKE_DROP:-}" ] || echo "${a#-D}" | sed 's/=/:STRING=/' >>"$dir/CMakeCache.txt" ;;
    esac
done
EOF
printf '#!/bin/sh\n[ -n "${FAKE_DROP:-}" ] || echo "U __asan_init"\n' >"$tmp/bin/nm"
cat >"$fake/build-fuzz/fuzz/fuzz_meta" <<'EOF'
#!/bin/sh
echo "fuzz_meta $*" >>"$CALLS"
echo "stat::number_of_executed_units: 5"
echo "stat::average_exec_per_sec: 5"
EOF
chmod +x "$tmp/bin/"* "$fake/build-fuzz/fuzz/fuzz_meta"
export PATH=$tmp/bin:$PATH
bad=0

# run WANT_EXIT WANT_CALL_REGEX|- SCRIPT ARGS...: exit status, and whether a call was made
run() {
    local want=$1 call=$2 rc
    shift 2
    : >"$CALLS"
    (cd "$fake" && timeout 60 "$@") >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL $*: exit $rc, want $want: $(head -c 300 "$tmp/out")"
        bad=1
    elif [ "$call" = - ] && [ -s "$CALLS" ]; then
        echo "FAIL $*: exit $rc but it ran: $(head -3 "$CALLS")"
        bad=1
    elif [ "$call" != - ] && ! grep -qE -- "$call" "$CALLS"; then
        echo "FAIL $*: no call matching '$call': $(cat "$CALLS")"
        bad=1
    else
        echo "ok   $* -> exit $rc$( [ "$call" = - ] && echo ": $(head -1 "$tmp/out")")"
    fi
}

run 2 - scripts/test.sh --sanitise
run 2 - scripts/test.sh --sanitize extra
run 2 - scripts/test.sh build-asan
run 0 'QMM_SANITIZE=address,undefined' scripts/test.sh --sanitize
# a sanitizer configure that lost its options is refused before a plain suite runs under the
# name (the C++ compiler check made CMake do that, silently, for every --sanitize run)
FAKE_DROP=1 run 1 'QMM_SANITIZE=address,undefined' scripts/test.sh --sanitize
run 0 '^cmake -S \. -B build$' scripts/test.sh
for secs in 0 abc -5 1.5 1000000; do
    run 2 - fuzz/smoke.sh "$secs"
done
run 0 '^fuzz_meta -max_total_time=2 ' fuzz/smoke.sh 2
for args in "-1 1" "0 1" "abc 1" "5 0" "5 abc" "5 100"; do
    # shellcheck disable=SC2086 # two words on purpose
    run 2 - fuzz/throughput.sh build-fuzz $args
done
run 0 '^fuzz_meta -runs=5 ' fuzz/throughput.sh build-fuzz 5 1
# bench/table.py, the two ORT comparisons and peers/report.py refuse an output path they
# could not write before they measure (table.py measured for six minutes, then stopped on a
# traceback)
refused() { # PATTERN COMMAND...: exit 2 and a line matching PATTERN, nothing measured
    local pat=$1 rc=0
    shift
    "$@" >"$tmp/out" 2>&1 || rc=$?
    if [ "$rc" != 2 ] || ! grep -Eq -- "$pat" "$tmp/out"; then
        echo "FAIL: ${*#"$src/"}: exit $rc (expected 2), output:"
        cat "$tmp/out"
        bad=1
    fi
}
# the qmmcheck table.py is given does not exist, so reaching the measurement fails otherwise
table=(python3 "$src/bench/table.py" --qmmcheck "$tmp/none/qmmcheck")
refused "--update $tmp/missing.md: no such readable file" "${table[@]}" --update "$tmp/missing.md"
refused "--json $tmp/nodir/t.json: cannot write in $tmp/nodir" "${table[@]}" --json "$tmp/nodir/t.json"
: >"$tmp/doc.md"
refused "--json $tmp/nodir/t.json: cannot write" "${table[@]}" --update "$tmp/doc.md" \
    --json "$tmp/nodir/t.json"
mkdir "$tmp/adir"
refused "--json $tmp/adir: a folder, not a file" "${table[@]}" --json "$tmp/adir"
refused "--update $tmp/adir: a folder, not a file" "${table[@]}" --update "$tmp/adir"
if [ "$(id -u)" != 0 ]; then # root may write where the permission bits say no
    : >"$tmp/ro.json"
    chmod 444 "$tmp/ro.json"
    refused "--json $tmp/ro.json: not writable" "${table[@]}" --json "$tmp/ro.json"
fi
# ... and so does peers/report.py (it judges every peer, then writes --out)
refused "--out $tmp/adir: a folder, not a file" python3 "$src/peers/report.py" \
    --build "$tmp/none" --out "$tmp/adir"
refused "--out $tmp/nodir/r.md: cannot write in $tmp/nodir" python3 "$src/peers/report.py" \
    --build "$tmp/none" --out "$tmp/nodir/r.md"
# the ORT comparisons import onnxruntime first: scripts/setup.sh's venv
py=$src/.venv/bin/python
for script in ort_compare.py ort_nbits.py; do
    if ! "$py" -c 'import onnxruntime' 2>/dev/null; then
        echo "skip bench/$script: no onnxruntime in $py"
        continue
    fi
    refused "--json $tmp/nodir/t.json: cannot write in $tmp/nodir" "$py" "$src/bench/$script" \
        --json "$tmp/nodir/t.json"
done
exit $bad
