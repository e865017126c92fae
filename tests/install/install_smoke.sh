#!/usr/bin/env bash
# Installs the build tree into a temporary prefix (the docs a user reads included) and uses it
# as a vendor would: the example plugin built with find_package(qmm) and with pkg-config, a
# program linking the installed
# reference, and the installed qmmcheck running the plugin over the ONNX vectors and seeds.
# The headers-only target is also found on a simulated machine without GMP's development files.
# Then from the prefix alone, outside the source tree: the installed example copied, built and
# run with no --vectors over the installed suites; the prefix moved; a qmmcheck with no suites.
set -euo pipefail
build=$1 src=$2 cc=${3:-cc} sanitize=${4:-}
# A sanitizer build installs instrumented static libraries: consumers must link the same runtime.
flags=""
[ -n "$sanitize" ] && flags="-fsanitize=$sanitize"
export CC="$cc" CFLAGS="-O1 $flags" LDFLAGS="$flags"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# the contract the installed headers point at, and the pages a user of the command reads
grep -q "^## 1\. Shapes" "$tmp/prefix/share/doc/qmm/semantics.md"
for page in formats.md exec-protocol.md ci.md report.schema.json; do
    cmp "$src/docs/$page" "$tmp/prefix/share/doc/qmm/$page" || { echo "$page is not installed" >&2; exit 1; }
done
# every page-to-page link of an installed page resolves under the prefix (formats.md linked
# report.schema.json and edge-suites.md, semantics.md architecture.md, none installed)
for md in "$tmp/prefix/share/doc/qmm"/*.md; do
    { grep -oE '\]\([A-Za-z0-9_.-]+\.(md|json|png)(#[^)]*)?\)' "$md" || true; } | sed -E 's/^\]\(([^)#]*).*/\1/' |
    sort -u | while read -r ref; do
        test -f "$tmp/prefix/share/doc/qmm/$ref" ||
            { echo "installed ${md##*/} links $ref, which is not installed" >&2; exit 1; }
    done || exit 1
done
# Every file an installed header names (its own name on line 1 aside) is installed: a page as
# docs/X.md or share/doc/qmm/X.md, a header under include/ or one the compiler finds.
for h in "$tmp/prefix/include/qmm"/*.h; do
    tail -n +2 "$h" | grep -oE '[A-Za-z0-9_./-]+\.(md|c|h|txt|py|sh|cmake)\b' | sort -u |
    while read -r ref; do
        case "$ref" in
            docs/*.md | share/doc/qmm/*.md) test -f "$tmp/prefix/share/doc/qmm/${ref##*/}" ;;
            *.h) test -f "$tmp/prefix/include/$ref" ||
                 echo "#include <$ref>" | "$cc" -E -x c - >/dev/null 2>&1 ;;
            *) false ;;
        esac || { echo "${h##*/} names $ref, which is not installed" >&2; exit 1; }
    done
done
# every suite `run --vectors vectors` reads, case for case
diff <("$build/harness/qmmcheck" list --vectors "$src/vectors" | cut -f1) \
     <("$tmp/prefix/bin/qmmcheck" list --vectors "$tmp/prefix/share/qmm/vectors" | cut -f1)
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer_ref"
cmake -S "$src/examples/vendor-plugin" -B "$tmp/example" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/example" >/dev/null

# A machine without GMP's development files, simulated twice: gmp.pc out of pkg-config's sight
# (PKG_CONFIG_LIBDIR is its whole search path: an empty folder), and no pkg-config at all (an
# executable that does not exist). The headers-only target must be found and the example build;
# asking for the reference must fail, naming GMP.
mkdir "$tmp/nopc"
nogmp() {
    local how=$1; shift
    if [ "$how" = nopc ]; then
        PKG_CONFIG_LIBDIR="$tmp/nopc" PKG_CONFIG_PATH="" "$@"
    else
        "$@" -DPKG_CONFIG_EXECUTABLE="$tmp/no-such-pkg-config"
    fi
}
if PKG_CONFIG_LIBDIR="$tmp/nopc" PKG_CONFIG_PATH="" pkg-config --exists gmp; then
    echo "the simulation does not hide gmp.pc" >&2
    exit 1
fi
for how in nopc nopkgconfig; do
    nogmp $how cmake -S "$src/examples/vendor-plugin" -B "$tmp/nogmp-$how" \
        -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
    cmake --build "$tmp/nogmp-$how" >/dev/null
    test -f "$tmp/nogmp-$how/libmykernels.so"
    if nogmp $how cmake -S "$src/tests/install" -B "$tmp/nogmp-ref-$how" \
        -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/nogmp-ref.log" 2>&1; then
        echo "find_package(qmm COMPONENTS reference) succeeded without GMP ($how)" >&2
        exit 1
    fi
    grep -q "qmm::reference needs GMP" "$tmp/nogmp-ref.log"
done
cp -r "$src/examples/vendor-plugin" "$tmp/pc"
make -s -C "$tmp/pc" PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" CC="$cc" \
  CFLAGS="-O2 -Wall -Wextra -Werror $flags"
for plugin in "$tmp/example/libmykernels.so" "$tmp/pc/libmykernels.so"; do
  out=$("$tmp/prefix/bin/qmmcheck" run --quiet --backend "$plugin" \
        --vectors "$src/vectors/onnx" --vectors "$src/vectors/seeds")
  echo "$out"
  # 2-D float-scale cases pass (or are mistrusted vectors), the rest is skipped with a reason
  # (19 matmuls, and onnx 1.23.2's 14 DequantizeLinear tests, which the example does not do)
  grep -q "failed:0 " <<<"$out"
  grep -q "skipped:33 " <<<"$out"
done

# From the installed prefix alone, in a folder outside the source tree: the installed example
# copied, built with pkg-config, and run with no --vectors from there.
vendor_run() {
    local prefix=$1
    ( cd "$tmp/vendor" && set +e
      "$prefix/bin/qmmcheck" run --quiet --backend ./libmykernels.so \
          --report json:report.json --report junit:report.xml >stdout.txt 2>stderr.txt
      echo $? >rc.txt )
    cat "$tmp/vendor/stderr.txt"
    # the example's double-precision requantization fails the edge suites' near ties: exit 1
    [ "$(cat "$tmp/vendor/rc.txt")" = 1 ]
    grep -q "^qmmcheck: no --vectors given: running the installed suites in \
$(cd "$prefix/share/qmm/vectors" && pwd -P) (edge, onnx, peers, qordered, seeds)$" \
        "$tmp/vendor/stderr.txt"
    local total
    total=$("$prefix/bin/qmmcheck" list --vectors "$prefix/share/qmm/vectors" | wc -l)
    grep -q "^SUMMARY: total:$total .* failed:[1-9]" "$tmp/vendor/stdout.txt"
    grep -q "\"summary\": {\"total\": $total," "$tmp/vendor/report.json"
    "$src/tests/schema/check_report.sh" "$tmp/vendor/report.json"
    grep -q "<testsuite name=\"qmmcheck\" tests=\"$total\"" "$tmp/vendor/report.xml"
}
cp -r "$tmp/prefix/share/doc/qmm/examples/vendor-plugin" "$tmp/vendor"
make -s -C "$tmp/vendor" PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" CC="$cc" \
  CFLAGS="-O2 -Wall -Wextra -Werror $flags"
vendor_run "$tmp/prefix"
# a moved prefix still finds its suites, through the executable's own location
mv "$tmp/prefix" "$tmp/moved"
vendor_run "$tmp/moved"
# README's vendor quick start, as written but for the prefix (its first line), in an empty
# folder; the summaries README shows are those of real runs (times aside).
summary() { grep -o '^SUMMARY: .* xpass:[0-9]*' "$@"; }
mkdir "$tmp/qs"
awk '/<!-- vendor-quick-start/ {on = 1; next} on && /^```sh/ {copy = 1; next}
     copy && /^```/ {exit} copy' "$src/README.md" |
    sed "1s|^export QMM=[^ ]*|export QMM='$tmp/moved'|" >"$tmp/quickstart.sh"
grep -q "^qmmcheck run --backend ./build/libmykernels.so" "$tmp/quickstart.sh"
rc=0
(cd "$tmp/qs" && bash -e "$tmp/quickstart.sh") >"$tmp/qs.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$tmp/qs.out"; echo "quick start: exit $rc, want 1" >&2; exit 1; }
test -s "$tmp/qs/mykernels/mykernels.xml"
test -s "$tmp/qs/mykernels/mykernels.json"
"$tmp/moved/bin/qmmcheck" run --backend reference >"$tmp/reference.out" 2>/dev/null
for out in "$tmp/qs.out" "$tmp/reference.out"; do
    line=$(summary "$out")
    grep -qF "$line" "$src/README.md" || { echo "README lacks: $line" >&2; exit 1; }
done
# a qmmcheck with no suites next to it nor under its configured prefix says where it looked
installed=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")/share/qmm/vectors
if [ ! -d "$installed" ]; then
    mkdir "$tmp/lonely"
    cp "$tmp/moved/bin/qmmcheck" "$tmp/lonely/"
    rc=0
    "$tmp/lonely/qmmcheck" run --backend reference 2>"$tmp/lonely.txt" || rc=$?
    [ "$rc" = 2 ]
    grep -q "no --vectors given and no installed suites found (looked in .*$installed); give --vectors DIR" \
        "$tmp/lonely.txt"
fi
echo "install smoke: ok"
