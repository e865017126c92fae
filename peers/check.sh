#!/usr/bin/env bash
# peers/check.sh — every available peer over vectors/onnx, vectors/edge and its own
# vectors/peers/<peer>, against the expected-failure list for this machine's CPU class
# (peers/<peer>/xfail/<class>.txt, or any.txt for a peer whose behaviour does not depend on the
# CPU), with --xfail-strict: fails when a peer's behaviour changes in either direction (a new
# failure, or a listed one that now passes or answers otherwise). Builds nothing.
# Each peer runs natively and again under every emulated CPU class (qmmcheck --cpu x86-64-v3,
# x86-64-v2: qemu-user gives it that CPU's CPUID, docs/cpu.md), each class with its own list.
#
#   peers/check.sh [BUILD_DIR]        (default build/; QMMCHECK and QMM_PYTHON override)
#
# QMM_PEERS_CLASSES picks the classes to run (default "native x86-64-v3 x86-64-v2"; native is
# this machine's class below). A peer whose library was not built, whose Python package is
# missing, or whose CPU class has no list is SKIPPED with the reason, and so is an emulated
# class without qemu-x86_64 (scripts/deps.sh installs qemu-user), or a plugin under one in a
# build that cannot be emulated (AddressSanitizer). Each run's JUnit report goes to
# BUILD_DIR/junit/peers-LABEL.xml (LABEL-CLASS under an emulated class). Exit 0 when every peer
# that ran kept its behaviour, 1 when one changed, 77 when no peer could run (ctest's
# SKIP_RETURN_CODE).
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
# The class being run (for_class sets them): LIST_CLASS names the lists; CPU_ARGS is --cpu
# CLASS under an emulated class; PLUGINS_SKIPPED says why plugins cannot run under it.
LIST_CLASS=$CLASS
CPU_ARGS=()
PLUGINS_SKIPPED=
SUFFIX=

# check PEER LABEL SPEC [FILTER LISTS]: one peer (under one option set) over its suites (FILTER,
# default ^(onnx|edge|peers/PEER)/) with its list (from the folder LISTS, default peers/PEER/xfail).
check() {
    local peer=$1 label=$2$SUFFIX spec=$3 filter=${4:-^(onnx|edge|peers/$1)/}
    local lists=${5:-peers/$1/xfail} list
    list=$lists/$LIST_CLASS.txt
    [ -f "$list" ] || list=$lists/any.txt
    if [ ! -f "$list" ]; then
        echo "SKIPPED $label: no expected-failure list for CPU class $LIST_CLASS ($lists/)"
        return
    fi
    local log=$LOGS/$label.txt rc
    "$QMMCHECK" run -q ${CPU_ARGS[@]+"${CPU_ARGS[@]}"} --backend "$spec" --vectors vectors \
        --filter "$filter" \
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

plugin_peers() {
    for peer in onednn xnnpack gemmlowp; do
        so=$BUILD/peers/$peer/libqmm_peer_$peer.so
        if [ ! -f "$so" ]; then
            echo "SKIPPED $peer$SUFFIX: $so not built (its library was not found at configure time)"
        elif [ -n "$PLUGINS_SKIPPED" ]; then
            echo "SKIPPED $peer$SUFFIX: $PLUGINS_SKIPPED"
        else
            check "$peer" "$peer" "$so"
        fi
    done
}

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
        return 0
    fi
    return 1
}
all_peers() {
    plugin_peers
    py_peer onnxruntime onnxruntime \
        "onnxruntime[b=initializer]|exec,b=initializer:$PY peers/onnxruntime/backend.py" \
        "onnxruntime[b=input]|exec,b=input:$PY peers/onnxruntime/backend.py" &&
        for graph in dq-matmul dq-matmul-unfused; do
            # MatMulNBits calls run as DequantizeLinear -> MatMul graphs: their suites, their lists
            check onnxruntime "onnxruntime[graph=$graph]" \
                "exec,graph=$graph:$PY peers/onnxruntime/backend.py" \
                "^(edge/matmulnbits|peers/onnxruntime)/" "peers/onnxruntime/xfail/$graph"
        done
    py_peer onnx-reference onnx.reference \
        "onnx-reference|exec:$PY peers/onnx-reference/backend.py"
}

# for_class CLASS: every peer under CLASS (native: this machine's, as it is).
for_class() {
    local cls=$1
    if [ "$cls" = native ]; then
        LIST_CLASS=$CLASS CPU_ARGS=() PLUGINS_SKIPPED= SUFFIX=
        all_peers
        return
    fi
    LIST_CLASS=$cls CPU_ARGS=(--cpu "$cls") PLUGINS_SKIPPED= SUFFIX="@$cls"
    # qmmcheck says whether it can give that CPU here: qemu-x86_64 there and its model right
    local why
    if ! why=$("$QMMCHECK" list --backends --cpu "$cls" 2>&1 >/dev/null); then
        why=$(printf '%s' "$why" | head -n 1)
        if [[ $why == *AddressSanitizer* ]]; then
            PLUGINS_SKIPPED="not under $cls in this build: ${why#qmmcheck: }"
        else
            echo "SKIPPED every peer under $cls: ${why#qmmcheck: }"
            return
        fi
    fi
    all_peers
}

for cls in ${QMM_PEERS_CLASSES-native x86-64-v3 x86-64-v2}; do
    case "$cls" in
        native | x86-64-v2 | x86-64-v3) for_class "$cls" ;;
        *)
            echo "peers/check: QMM_PEERS_CLASSES: '${cls//[^A-Za-z0-9_.-]/?}' is not native," \
                "x86-64-v2 or x86-64-v3" >&2
            exit 2
            ;;
    esac
done

echo "peers/check: CPU class $CLASS; classes ${QMM_PEERS_CLASSES-native x86-64-v3 x86-64-v2}; $ran run(s), $failed changed"
if [ "$failed" -gt 0 ]; then
    exit 1
fi
[ "$ran" -gt 0 ] || exit 77
exit 0
