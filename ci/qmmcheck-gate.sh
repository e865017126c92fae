#!/usr/bin/env bash
# ci/qmmcheck-gate.sh — gates a kernel repository on qmmcheck: the one script the GitHub action
# (action.yml), the reusable workflow, the GitLab template and the qmmcheck image all call, so
# that a gate runs the same on a laptop as in any CI (docs/ci.md).
#
#   ci/qmmcheck-gate.sh STEP [OPTIONS] [-- EXTRA qmmcheck run ARGUMENTS]
#
# STEP: deps (the Debian packages: scripts/deps.sh --minimal), build (qmmcheck from a checkout,
# installed into a prefix), run (build the plugin, run the backend over the suites in one
# shard, write JUnit, JSON and the log), or all (the three in order).
#
# Every option has an environment variable, so a CI passes its inputs without quoting them
# into a command line; an option given overrides its variable. QMM_GATE_VECTORS and
# QMM_GATE_EXTRA_ARGS are lists of words (split_words below, docs/ci.md "Lists in variables"):
# every word is used, and a value the gate cannot read whole is a usage error (exit 2), never a
# smaller run.
set -eEuo pipefail
# Exit 1 is "a case failed": any other command of the gate that fails (a results directory that
# cannot be made, a build, an install) is exit 2 with a line, never a 1 that reads as a verdict.
trap 'rc=$?; echo "qmmcheck-gate: line $LINENO: $BASH_COMMAND: exit $rc" >&2; exit 2' ERR

usage() {
    cat <<'EOF'
usage: qmmcheck-gate.sh deps|build|run|all [OPTIONS] [-- EXTRA qmmcheck run ARGUMENTS]
  --backend SPEC       the backend to gate: a plugin (./libx.so[:opts]), a built-in, exec:CMD
                       (QMM_GATE_BACKEND); required for run
  --build-plugin CMD   a shell command run in the working directory before the run, e.g.
                       'make libx.so' (QMM_GATE_BUILD_PLUGIN)
  --shard I/N          the I-th of N slices of the cases, 1 <= I <= N (QMM_GATE_SHARD; 1/1)
  --source DIR         the qmmcheck checkout to build (QMM_GATE_SOURCE; default: the checkout
                       holding this script, if it is one)
  --qmmcheck PATH      use this qmmcheck instead of building one, e.g. 'qmmcheck' from PATH
                       (QMM_GATE_QMMCHECK; default: PREFIX/bin/qmmcheck after build, else PATH)
  --build-dir DIR      where build builds (QMM_GATE_BUILD_DIR; default SOURCE/build-gate)
  --prefix DIR         where build installs (QMM_GATE_PREFIX; default BUILD_DIR/prefix)
  --vectors DIR        a suite to run, repeatable (QMM_GATE_VECTORS: a list of words;
                       default SOURCE/vectors, else qmmcheck's installed suites)
  --xfail FILE         expected failures (QMM_GATE_XFAIL); --xfail-strict (QMM_GATE_XFAIL_STRICT=1
                       or true; 0, false or empty: not strict) makes stale entries and XPASS
                       fail the gate
  --out DIR            where the reports go (QMM_GATE_OUT; default qmmcheck-results)
  --jobs N             build parallelism (QMM_GATE_JOBS; default: the CPUs)
Extra run arguments: after --, or QMM_GATE_EXTRA_ARGS (a list of words; not --shard, which
is the gate's).
A list of words in a variable: words are separated by spaces, tabs or newlines (a YAML block
with one suite a line is a list); '...' or "..." (where \" and \\ escape) or a backslash keep
white space or quotes in a word; nothing is expanded. An unmatched quote is a usage error.
run writes OUT/qmmcheck-shard-I-of-N.{xml,json,log} and exits as qmmcheck run does: 0 pass,
1 a case failed, 2 a usage error (or a step of the gate failed), 3 nothing judged. With
GITHUB_OUTPUT set it also writes junit=, json=, log= and exit-code= there.
EOF
}

die() {
    echo "qmmcheck-gate: $*" >&2
    exit 2
}

# A word as a shell would read it back: control characters and quotes escaped, so that a
# path or argument cannot forge a line of the log, and the printed command can be pasted.
shown() {
    local w out=""
    for w in "$@"; do out+=" $(printf '%q' "$w")"; done
    echo "${out# }"
}

# split_words WHAT VALUE: VALUE's words into the array `words`, read as a shell reads words
# without expanding anything: spaces, tabs, CRs and newlines separate; '...' keeps everything
# but ', "..." everything but " (\" and \\ escape there), a backslash the next character (a
# backslash-newline is a line continuation). An unmatched quote or a last lone backslash is a
# usage error naming WHAT: a value the gate cannot read whole never becomes a smaller run.
# Bytes, in the C locale (the specials are ASCII; a UTF-8 character's bytes go through as they
# are), and at most 16 KiB: a step indexes the whole value, so the time grows with its square
# (16 KiB of one-letter words: about 2 s).
split_words() {
    local LC_ALL=C what=$1 s=$2 word="" have=0 quote="" c i
    words=()
    [ ${#s} -le 16384 ] || die "$what is ${#s} bytes: at most 16384"
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        if [ "$quote" = "'" ]; then
            if [ "$c" = "'" ]; then quote=""; else word+=$c; fi
        elif [ "$quote" = '"' ]; then
            if [ "$c" = '"' ]; then
                quote=""
            elif [ "$c" = '\' ] && [[ "${s:i+1:1}" == [\"\\] ]]; then
                i=$((i + 1))
                word+=${s:i:1}
            else
                word+=$c
            fi
        else
            case "$c" in
                ' ' | $'\t' | $'\n' | $'\r')
                    [ "$have" = 0 ] || words+=("$word")
                    word="" have=0 ;;
                "'" | '"') quote=$c have=1 ;;
                '\')
                    [ $((i + 1)) -lt ${#s} ] || die "$what: the value ends in a lone backslash"
                    i=$((i + 1))
                    if [ "${s:i:1}" != $'\n' ]; then word+=${s:i:1}; have=1; fi ;;
                *) word+=$c have=1 ;;
            esac
        fi
    done
    [ -z "$quote" ] || die "$what: a $quote quote is not closed: $(shown "$s")"
    [ "$have" = 0 ] || words+=("$word")
}

step=${1:-}
case "$step" in
    deps | build | run | all) shift ;;
    -h | --help | help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
default_source=""
[ -f "$here/../CMakeLists.txt" ] && [ -d "$here/../harness" ] && default_source=$(cd "$here/.." && pwd)

backend=${QMM_GATE_BACKEND:-}
build_plugin=${QMM_GATE_BUILD_PLUGIN:-}
shard=${QMM_GATE_SHARD:-1/1}
source_dir=${QMM_GATE_SOURCE:-$default_source}
qmmcheck=${QMM_GATE_QMMCHECK:-}
build_dir=${QMM_GATE_BUILD_DIR:-}
prefix=${QMM_GATE_PREFIX:-}
xfail=${QMM_GATE_XFAIL:-}
xfail_strict=${QMM_GATE_XFAIL_STRICT:-}
out=${QMM_GATE_OUT:-qmmcheck-results}
jobs=${QMM_GATE_JOBS:-$(nproc 2>/dev/null || echo 2)}
split_words QMM_GATE_VECTORS "${QMM_GATE_VECTORS:-}"
vectors=("${words[@]}")
split_words QMM_GATE_EXTRA_ARGS "${QMM_GATE_EXTRA_ARGS:-}"
extra=("${words[@]}")
vectors_given=0

while [ $# -gt 0 ]; do
    opt=$1
    case "$opt" in
        --) shift; extra+=("$@"); break ;;
        --xfail-strict) xfail_strict=1; shift; continue ;;
        -h | --help) usage; exit 0 ;;
        --backend | --build-plugin | --shard | --source | --qmmcheck | --build-dir | --prefix | \
            --vectors | --xfail | --out | --jobs)
            [ $# -ge 2 ] || die "$opt needs a value"
            val=$2
            shift 2 ;;
        *) die "unknown option $(shown "$opt") (see --help)" ;;
    esac
    case "$opt" in
        --backend) backend=$val ;;
        --build-plugin) build_plugin=$val ;;
        --shard) shard=$val ;;
        --source) source_dir=$val ;;
        --qmmcheck) qmmcheck=$val ;;
        --build-dir) build_dir=$val ;;
        --prefix) prefix=$val ;;
        --vectors)
            # an option replaces the variable's list rather than adding to it
            [ "$vectors_given" = 1 ] || vectors=()
            vectors_given=1
            vectors+=("$val") ;;
        --xfail) xfail=$val ;;
        --out) out=$val ;;
        --jobs) jobs=$val ;;
    esac
done

# The shard's form is checked here too, for the file names; qmmcheck checks it again.
if ! [[ "$shard" =~ ^([1-9][0-9]{0,8})/([1-9][0-9]{0,8})$ ]] ||
    [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
    die "--shard $(shown "$shard"): expected I/N with 1 <= I <= N (e.g. 1/4)"
fi
shard_i=${BASH_REMATCH[1]} shard_n=${BASH_REMATCH[2]}
[[ "$jobs" =~ ^[1-9][0-9]{0,3}$ ]] || die "--jobs $(shown "$jobs"): expected a number >= 1"
case "$xfail_strict" in
    1 | true) xfail_strict=1 ;;
    0 | false | "") xfail_strict=0 ;;
    *) die "QMM_GATE_XFAIL_STRICT=$(shown "$xfail_strict"): expected 1 or true, 0 or false" ;;
esac
for v in ${vectors[@]+"${vectors[@]}"}; do
    [ -n "$v" ] || die "--vectors: an empty suite path (QMM_GATE_VECTORS holds '' or \"\")"
done
# The shard is the gate's: one in the extra arguments would run another slice than the one the
# reports are named after (qmmcheck takes the last --shard).
for a in ${extra[@]+"${extra[@]}"}; do
    case "$a" in
        --shard | --shard=*) die "the extra run arguments hold $(shown "$a"): give the shard with --shard or QMM_GATE_SHARD" ;;
    esac
done
# GITHUB_OUTPUT is read line by line: a report path with a line break would add outputs.
[[ "$out" != *[$'\n\r']* ]] || die "--out $(shown "$out"): a line break in the results directory"
[ -z "$build_dir" ] && [ -n "$source_dir" ] && build_dir=$source_dir/build-gate
[ -z "$prefix" ] && [ -n "$build_dir" ] && prefix=$build_dir/prefix

do_deps() {
    local deps=""
    [ -n "$source_dir" ] && deps=$source_dir/scripts/deps.sh
    [ -x "$deps" ] || die "deps: no scripts/deps.sh (give --source, the qmmcheck checkout)"
    "$deps" --minimal
}

# A release build of qmmcheck alone (no tests, peers, fuzzers or CUDA), installed into PREFIX.
do_build() {
    if [ -z "$source_dir" ] || [ ! -f "$source_dir/CMakeLists.txt" ]; then
        die "build: $(shown "$source_dir") is not a qmmcheck checkout (give --source DIR)"
    fi
    echo "qmmcheck-gate: building qmmcheck from $(shown "$source_dir") in $(shown "$build_dir")"
    mkdir -p -- "$build_dir"
    cmake -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DQMM_BUILD_TESTS=OFF \
        -DQMM_PEERS=OFF -DQMM_CUDA=OFF -DQMM_FUZZ=OFF >"$build_dir/gate-cmake.log" 2>&1 ||
        { cat "$build_dir/gate-cmake.log" >&2; die "build: cmake failed"; }
    cmake --build "$build_dir" -j "$jobs" >/dev/null
    cmake --install "$build_dir" --prefix "$prefix" >/dev/null
    "$prefix/bin/qmmcheck" --version
}

# The qmmcheck to run: the option, else the one build installed, else the one on PATH.
find_qmmcheck() {
    if [ -n "$qmmcheck" ]; then
        command -v "$qmmcheck" >/dev/null || die "--qmmcheck $(shown "$qmmcheck"): not found"
        command -v "$qmmcheck"
    elif [ -n "$prefix" ] && [ -x "$prefix/bin/qmmcheck" ]; then
        echo "$prefix/bin/qmmcheck"
    elif command -v qmmcheck >/dev/null; then
        command -v qmmcheck
    else
        die "run: no qmmcheck (run the build step first, or give --qmmcheck PATH)"
    fi
}

# A plugin given as a relative path becomes absolute, so that the loader finds it (a bare
# name would be searched on the library path) and the repro lines work from anywhere.
absolute_backend() {
    local file=${backend%%:*} rest=""
    [ "$file" != "$backend" ] && rest=:${backend#*:}
    if [[ "$backend" != exec:* && "$file" != /* && -f "$file" ]]; then
        echo "$PWD/${file#./}$rest"
    else
        echo "$backend"
    fi
}

# GitHub's step outputs, when run there.
github_output() {
    [ -n "${GITHUB_OUTPUT:-}" ] && echo "$1=$2" >>"$GITHUB_OUTPUT"
    return 0
}

do_run() {
    [ -n "$backend" ] || die "run: give --backend SPEC (or QMM_GATE_BACKEND)"
    if [ -n "$build_plugin" ]; then
        echo "qmmcheck-gate: building the plugin: $(shown "$build_plugin")"
        bash -c "$build_plugin" || die "run: the plugin's build command failed: $(shown "$build_plugin")"
    fi
    local bin
    bin=$(find_qmmcheck)
    if [ ${#vectors[@]} -eq 0 ] && [ -n "$source_dir" ] && [ -d "$source_dir/vectors" ]; then
        vectors=("$source_dir/vectors")
    fi
    # which suites run, each on its line, so that a log shows a list that came out shorter
    local v
    if [ ${#vectors[@]} -eq 0 ]; then
        echo "qmmcheck-gate: suites: qmmcheck's installed suites"
    else
        echo "qmmcheck-gate: suites (${#vectors[@]}):"
        for v in "${vectors[@]}"; do
            [ -d "$v" ] || die "run: the suite $(shown "$v") is not a directory"
            echo "qmmcheck-gate:   $(shown "$v")"
        done
    fi
    [ ${#extra[@]} -eq 0 ] ||
        echo "qmmcheck-gate: extra run arguments (${#extra[@]}): $(shown "${extra[@]}")"
    mkdir -p -- "$out"
    local base="$out/qmmcheck-shard-$shard_i-of-$shard_n"
    local args=(run --quiet --backend "$(absolute_backend)" --shard "$shard_i/$shard_n"
                --report "junit:$base.xml" --report "json:$base.json")
    for v in ${vectors[@]+"${vectors[@]}"}; do
        args+=(--vectors "$v")
    done
    [ -n "$xfail" ] && args+=(--xfail "$xfail")
    [ "$xfail_strict" = 1 ] && args+=(--xfail-strict)
    args+=(${extra[@]+"${extra[@]}"})
    echo "qmmcheck-gate: $(shown "$bin" "${args[@]}")"
    local rc=0
    "$bin" "${args[@]}" >"$base.log" 2>&1 || rc=$?
    # the log in CI's console too: the failures and the SUMMARY (--quiet leaves out passes)
    cat -- "$base.log"
    github_output junit "$base.xml"
    github_output json "$base.json"
    github_output log "$base.log"
    github_output exit-code "$rc"
    echo "qmmcheck-gate: shard $shard_i/$shard_n exit $rc; reports: $(shown "$base.xml" "$base.json")"
    exit "$rc"
}

case "$step" in
    deps) do_deps ;;
    build) do_build ;;
    run) do_run ;;
    # one per line: set -e does not reach into a function called from an && list
    all)
        do_deps
        do_build
        do_run ;;
esac
