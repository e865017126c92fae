#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and uses it as a vendor would: the example
# plugin built with find_package(qmm) and with pkg-config, a program linking the installed
# reference, and the installed qmmcheck running the plugin over the ONNX vectors and seeds.
# The headers-only target is also found on a simulated machine without GMP's development files.
set -euo pipefail
build=$1 src=$2 cc=${3:-cc} sanitize=${4:-}
# A sanitizer build installs instrumented static libraries: consumers must link the same runtime.
flags=""
[ -n "$sanitize" ] && flags="-fsanitize=$sanitize"
export CC="$cc" CFLAGS="-O1 $flags" LDFLAGS="$flags"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# the contract the installed headers point at
grep -q "^## 1\. Shapes" "$tmp/prefix/share/doc/qmm/semantics.md"
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
  grep -q "failed:0 " <<<"$out"
  grep -q "skipped:1[0-9] " <<<"$out"
done
echo "install smoke: ok"
