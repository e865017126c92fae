#!/usr/bin/env bash
# Installs the Debian packages qmmcheck needs to build and test. Idempotent; uses sudo when
# not root. --minimal: only what building qmmcheck itself needs (no tests, fuzzers or peers),
# for CI gates and the qmmcheck image (docs/ci.md).
set -euo pipefail
# afl++: AFL++ fuzz campaigns (fuzz/campaign --engine afl); libFuzzer comes with clang.
# libdnnl-dev, libxnnpack-dev (+ libpthreadpool-dev, which its header includes), libgemmlowp-dev:
# the libraries the peers in peers/ run. bsdutils (script: the progress test's terminal),
# groff-base (renders the man page in its test), libxml2-utils (xmllint: checks the JUnit reports
# against tests/schema/junit-10.xsd), llvm (llvm-profdata, llvm-cov: fuzz/coverage.sh), gnuplot-nox
# (fuzz/campaign-plot), qemu-user (qemu-x86_64: `--cpu CLASS` runs a backend as an older x86-64
# CPU runs it, docs/cpu.md; its tests and peers/check.sh's emulated classes need it),
# python3-jsonschema (checks every JSON report the tests write against docs/report.schema.json),
# chromium-headless-shell (renders the HTML report in tests/report/html.sh, skipped without it).
pkgs=(build-essential cmake pkg-config libgmp-dev libcriterion-dev clang python3-venv afl++
      libdnnl-dev libxnnpack-dev libpthreadpool-dev libgemmlowp-dev bsdutils groff-base libxml2-utils
      llvm gnuplot-nox qemu-user python3-jsonschema chromium-headless-shell)
case "${1:-}" in
  "") ;;
  --minimal) pkgs=(build-essential cmake pkg-config libgmp-dev) ;;
  *) echo "usage: $0 [--minimal]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present (${pkgs[*]})"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
