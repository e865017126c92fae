#!/usr/bin/env bash
# peers/check.sh — every available peer over vectors/onnx, vectors/edge and its own
# vectors/peers/<peer>, against the expected-failure list for this machine's CPU class
# (peers/<peer>/xfail/<class>.txt, or any.txt for a peer whose behaviour does not depend on the
# CPU), with --xfail-strict: fails when a peer's behaviour changes in either direction (a new
# failure, or a listed one that now passes or answers otherwise). Builds nothing.
#
#   peers/check.sh [BUILD_DIR]        (default build/; QMMCHECK and QMM_PYTHON override)
#
# A peer whose library was not built, whose Python package is missing, or whose CPU class has
# no list is SKIPPED with the reason. Each run's JUnit report goes to
# BUILD_DIR/junit/peers-LABEL.xml. Exit 0 when every peer that ran kept its behaviour, 1 when
# one changed, 77 when no peer could run (ctest's SKIP_RETURN_CODE).
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-${QMM_BUILD_DIR:-build}}
QMMCHECK=${QMMCHECK:-$BUILD/harness/qmmcheck}
PY=${QMM_PYTHON:-.venv/bin/python}

# The CPU class the lists are keyed by: the u8·s8 kernels of oneDNN and ONNX Runtime (MLAS)
# take another path with VNNI or AMX, so a list measured on one class says nothing of another.
# The same rule as harness/io/cpuclass.c (tests/test_meta.c checks they agree); the argument,
# when given, stands for /proc/cpuinfo's flags. QMM_CPU_CLASS names the class instead.
cpu_class() {
    local flags
    flags=" ${1-$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2)} "
    case "$flags" in
        *" amx_int8 "*) echo amx ;;
        *" avx512_vnni "*) echo avx512-vnni ;;
        *" avx_vnni "*) echo avx-vnni ;;
        *" avx2 "*) echo avx2 ;;
        *) echo baseline ;;
    esac
}
CLASS=${QMM_CPU_CLASS:-$(cpu_class)}
case "$CLASS" in
    amx | avx512-vnni | avx-vnni | avx2 | baseline | x86-64-v2 | x86-64-v3) ;;
    *)
        echo "peers/check: QMM_CPU_CLASS='${CLASS//[^A-Za-z0-9_.-]/?}': not a CPU class" \
            "(amx, avx512-vnni, avx-vnni, avx2, baseline, x86-64-v2, x86-64-v3)" >&2
        exit 2
        ;;
esac

if [ ! -x "$QMMCHECK" ]; then
    echo "peers/check: $QMMCHECK not built" >&2
    exit 2
fi
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
# Each run's JUnit report, for a CI server and for ctest junit_schema (which validates them).
JUNIT=$BUILD/junit
mkdir -p "$JUNIT"
ran=0
failed=0

# check PEER LABEL SPEC: one peer (under one option set) over its suites with its list.
check() {
    local peer=$1 label=$2 spec=$3 list
    list=peers/$peer/xfail/$CLASS.txt
    [ -f "$list" ] || list=peers/$peer/xfail/any.txt
    if [ ! -f "$list" ]; then
        echo "SKIPPED $label: no expected-failure list for CPU class $CLASS (peers/$peer/xfail/)"
        return
    fi
    local log=$LOGS/$label.txt rc
    "$QMMCHECK" run -q --backend "$spec" --vectors vectors --filter "^(onnx|edge|peers/$peer)/" \
        --allow-empty --timeout 60 --xfail "$list" --xfail-strict \
        --report "junit:$JUNIT/peers-${label//[^A-Za-z0-9_.-]/-}.xml" >"$log" 2>&1
    rc=$?
    ran=$((ran + 1))
    local summary
    summary=$(grep '^SUMMARY:' "$log" | tail -1)
    if [ "$rc" -eq 0 ]; then
        echo "PASSED  $label ($list): ${summary#SUMMARY: }"
    else
        failed=$((failed + 1))
        echo "FAILED  $label ($list, exit $rc): behaviour changed: ${summary#SUMMARY: }"
        # the rows that are neither expected nor passing, and why
        grep -E '^[0-9]+:(FAILED|CRASHED|TIMEOUT|ERROR|XPASS|UNCHECKED) |^FAILED:|qmmcheck: (error|warning)' \
            "$log" | sed 's/^/    /'
    fi
}

for peer in onednn xnnpack gemmlowp; do
    so=$BUILD/peers/$peer/libqmm_peer_$peer.so
    if [ -f "$so" ]; then
        check "$peer" "$peer" "$so"
    else
        echo "SKIPPED $peer: $so not built (its library was not found at configure time)"
    fi
done

py_peer() {
    local peer=$1 module=$2
    shift 2
    if [ ! -x "$PY" ]; then
        echo "SKIPPED $peer: no $PY (bash scripts/pydeps.sh makes it)"
    elif ! "$PY" -c "import $module" 2>/dev/null; then
        echo "SKIPPED $peer: $PY cannot import $module"
    else
        for variant in "$@"; do
            check "$peer" "${variant%%|*}" "${variant#*|}"
        done
    fi
}
py_peer onnxruntime onnxruntime \
    "onnxruntime[b=initializer]|exec,b=initializer:$PY peers/onnxruntime/backend.py" \
    "onnxruntime[b=input]|exec,b=input:$PY peers/onnxruntime/backend.py"
py_peer onnx-reference onnx.reference \
    "onnx-reference|exec:$PY peers/onnx-reference/backend.py"

echo "peers/check: CPU class $CLASS; $ran run(s), $failed changed"
if [ "$failed" -gt 0 ]; then
    exit 1
fi
[ "$ran" -gt 0 ] || exit 77
exit 0
