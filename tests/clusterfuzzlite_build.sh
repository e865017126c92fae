#!/usr/bin/env bash
# tests/clusterfuzzlite_build.sh — .clusterfuzzlite/build.sh in an OSS-Fuzz-like environment,
# the variables its builder image sets made by hand (CC=clang CXX=clang++, CFLAGS/CXXFLAGS with
# ASan and -fsanitize=fuzzer-no-link, LIB_FUZZING_ENGINE=-fsanitize=fuzzer, SRC, WORK and OUT
# temporary directories, the tree at $SRC/qmmcheck as the Dockerfile puts it). Checks that for
# every fuzz/fuzz_*.c the target, its .options (max_len, timeout, dict), its dictionary and its
# seed corpus zip land in $OUT, that the target was linked by $CXX, and that each runs a few
# inputs with its options' limits. Exit 77 (skipped) without clang, clang++ or zip.
set -u
cd "$(dirname "$0")/.."
root=$PWD
for tool in clang clang++ zip unzip; do
    if ! command -v "$tool" >/dev/null; then
        echo "clusterfuzzlite_build: no $tool: skipped"
        exit 77
    fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CC=clang CXX=clang++
export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
export CXXFLAGS="$CFLAGS"
export LIB_FUZZING_ENGINE="-fsanitize=fuzzer"
export SRC=$tmp/src WORK=$tmp/work OUT=$tmp/out
mkdir -p "$SRC" "$WORK" "$OUT"
ln -s "$root" "$SRC/qmmcheck"
cp .clusterfuzzlite/build.sh "$SRC/build.sh"
if ! (cd "$SRC/qmmcheck" && nice -n 10 bash -eu "$SRC/build.sh") >"$tmp/build.log" 2>&1; then
    tail -40 "$tmp/build.log"
    echo "clusterfuzzlite_build: build.sh failed"
    exit 1
fi
bad=0
fail() { echo "FAIL $*"; bad=1; }
n=0
for f in fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    n=$((n + 1))
    [ -x "$OUT/$t" ] || { fail "$t: no executable \$OUT/$t"; continue; }
    link=$WORK/qmm-build/fuzz/CMakeFiles/$t.dir/link.txt
    [ -f "$link" ] && read -r linker _ <"$link" && [ "$(basename "$linker")" = clang++ ] ||
        fail "$t: not linked by \$CXX ($(head -c 80 "$link" 2>/dev/null))"
    [ -f "$OUT/$t.dict" ] || fail "$t: no \$OUT/$t.dict"
    opts=$OUT/$t.options
    if [ ! -f "$opts" ]; then
        fail "$t: no \$OUT/$t.options"
        continue
    fi
    max_len=$(sed -n 's/^max_len *= *//p' "$opts")
    timeout=$(sed -n 's/^timeout *= *//p' "$opts")
    dict=$(sed -n 's/^dict *= *//p' "$opts")
    head -1 "$opts" | grep -qx '\[libfuzzer\]' || fail "$t: $opts has no [libfuzzer] section"
    [ -n "$max_len" ] && [ -n "$timeout" ] && [ "$dict" = "$t.dict" ] ||
        fail "$t: $opts lacks max_len, timeout or dict = $t.dict: $(tr '\n' ' ' <"$opts")"
    zip=$OUT/${t}_seed_corpus.zip
    if [ -d "fuzz/corpus/$t" ]; then
        want=$(find "fuzz/corpus/$t" -type f | wc -l)
        got=$(unzip -Z1 "$zip" 2>/dev/null | grep -vc '/$')
        [ "$got" = "$want" ] || fail "$t: $zip holds $got files, fuzz/corpus/$t $want"
    fi
    # a few inputs: five seeds, then 50 mutations, under the options' limits
    seeds=$tmp/seeds/$t
    mkdir -p "$seeds"
    unzip -Z1 "$zip" 2>/dev/null | grep -v '/$' | head -5 | while read -r s; do
        unzip -q -j -o "$zip" "$s" -d "$seeds"; done
    if ! (cd "$tmp" && "$OUT/$t" -runs=50 -seed=1 -max_len="$max_len" -timeout="$timeout" \
            -dict="$OUT/$dict" "$seeds") >"$tmp/$t.log" 2>&1; then
        tail -20 "$tmp/$t.log"
        fail "$t: did not run its inputs"
    else
        echo "ok   $t: $(grep -o 'Done [0-9]* runs.*' "$tmp/$t.log")"
    fi
done
echo "clusterfuzzlite_build: $n targets in \$OUT: $(cd "$OUT" && echo *)"
[ "$n" -gt 0 ] || bad=1
exit $bad
