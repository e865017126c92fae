#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and uses it as a vendor would: a plugin built
# with find_package(qmm), the same plugin built with pkg-config, a program linking the installed
# reference, and the installed qmmcheck running the plugin.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DPLUGIN_SOURCE="$src/tests/plugins/fake_backend.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer_ref"
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" cc -shared -fPIC -std=c11 \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags qmm) \
  "$src/tests/plugins/fake_backend.c" -o "$tmp/pc_plugin.so"
for plugin in "$tmp/consumer/libconsumer_plugin.so" "$tmp/pc_plugin.so"; do
  out=$("$tmp/prefix/bin/qmmcheck" run --quiet --backend "$plugin:mode=unsupported" \
        --vectors "$src/vectors/seeds")
  echo "$out"
  grep -q "total:3 passed:0 failed:0 mistrusted:0 skipped:3" <<<"$out"
done
echo "install smoke: ok"
