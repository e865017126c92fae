#!/usr/bin/env bash
# ci/qmmcheck-gate.sh — gates a kernel repository on qmmcheck: the one script the GitHub action
# (action.yml), the reusable workflow, the GitLab template and the qmmcheck image all call, so
# that a gate runs the same on a laptop as in any CI (docs/ci.md).
#
#   ci/qmmcheck-gate.sh STEP [OPTIONS] [-- EXTRA qmmcheck run ARGUMENTS]
#
# STEP: deps (the Debian packages: scripts/deps.sh --minimal), build (qmmcheck from a checkout,
# installed into a prefix, once: every shard's run uses that prefix), run (build the plugin
# against that prefix, run the backend over the suites in one shard, write JUnit, JSON, the log
# and the exit status), all (the three in order), or verdict (the shards' reports read
# together: one status for the whole run).
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
usage: qmmcheck-gate.sh deps|build|run|all|verdict [OPTIONS] [-- EXTRA qmmcheck run ARGUMENTS]
  --backend SPEC       the backend to gate: a plugin (./libx.so[:opts]), a built-in, exec:CMD
                       (QMM_GATE_BACKEND); required for run
  --build-plugin CMD   a shell command run in the working directory before the run, e.g.
                       'cmake -S . -B build && cmake --build build' (QMM_GATE_BUILD_PLUGIN); it
                       finds the qmmcheck the gate runs: CMAKE_PREFIX_PATH, qmm_DIR,
                       PKG_CONFIG_PATH and PATH lead to its prefix
  --shard I/N          the I-th of N slices of the cases, 1 <= I <= N (QMM_GATE_SHARD; 1/1)
  --shards N           for verdict: how many shards ran (QMM_GATE_SHARDS; default: the N the
                       reports' names hold, when they all hold one)
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
  --out DIR            where the reports go (QMM_GATE_OUT; default qmmcheck-results); verdict
                       reads every shard's reports under it
  --jobs N             build parallelism (QMM_GATE_JOBS; default: the CPUs)
Extra run arguments: after --, or QMM_GATE_EXTRA_ARGS (a list of words; not --shard, which
is the gate's).
A list of words in a variable: words are separated by spaces, tabs or newlines (a YAML block
with one suite a line is a list); '...' or "..." (where \" and \\ escape) or a backslash keep
white space or quotes in a word; nothing is expanded. An unmatched quote is a usage error.
run writes OUT/qmmcheck-shard-I-of-N.{xml,json,log,exit} and exits as qmmcheck run does: 0
pass, 1 a case failed, 2 a usage error (or a step of the gate failed), 3 nothing judged. With
GITHUB_OUTPUT set it also writes junit=, json=, log= and exit-code= there.
verdict reads the .exit and .log of shards 1..N (N from --shard) under OUT, at any depth (one
folder per downloaded artifact), prints each shard's counts and the failures with their
__REPRO: lines, and exits 0 (nothing failed and some shard judged a case: a shard that judged
nothing is not a failure), 1 (a case failed), 2 (a shard missing, twice, or not run through)
or 3 (no shard judged anything).
On GitHub (GITHUB_STEP_SUMMARY, GITHUB_ACTIONS) run and verdict write the counts and the
failures to the step summary, and run an ::error annotation per failing case with its
__REPRO: line.
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
    deps | build | run | all | verdict) shift ;;
    -h | --help | help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
default_source=""
[ -f "$here/../CMakeLists.txt" ] && [ -d "$here/../harness" ] && default_source=$(cd "$here/.." && pwd)

backend=${QMM_GATE_BACKEND:-}
build_plugin=${QMM_GATE_BUILD_PLUGIN:-}
shard=${QMM_GATE_SHARD:-1/1}
shards_given=0
[ -z "${QMM_GATE_SHARDS:-}" ] || { shard=1/$QMM_GATE_SHARDS; shards_given=1; }
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
        --backend | --build-plugin | --shard | --shards | --source | --qmmcheck | --build-dir | --prefix | \
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
        --shards) shard=1/$val shards_given=1 ;;
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
[ "$shards_given" = 0 ] || [[ "$shard" =~ ^1/[1-9][0-9]{0,8}$ ]] ||
    die "--shards $(shown "${shard#1/}") (or QMM_GATE_SHARDS): expected a number >= 1"
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
# (Called in $(...): the die of a subshell exits only it, so callers check its status.)
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

# The first of PREFIX's library directories (lib, lib64, lib/<multiarch>) holding REL; nothing
# when none does. The prefix itself is never a pattern: only the tails are globbed.
prefix_libdir() {
    local d
    for d in "$1"/lib*/ "$1"/lib/*/; do
        [ -f "$d$2" ] && { echo "${d%/}"; return 0; }
    done
    return 0
}

# The prefix holding the qmmcheck BIN (PREFIX/bin/qmmcheck), printed when it holds qmmcheck's
# CMake package; nothing otherwise (a qmmcheck on PATH without it).
prefix_of() {
    local p
    p=$(cd "$(dirname "$1")/.." && pwd) || return 0
    [ -z "$(prefix_libdir "$p" cmake/qmm/qmmConfig.cmake)" ] || echo "$p"
    return 0
}

# The plugin's build sees the qmmcheck the gate runs: its prefix first on CMAKE_PREFIX_PATH,
# qmm_DIR (find_package(qmm)), PKG_CONFIG_PATH (pkg-config qmm) and PATH.
export_prefix() {
    local p=$1 dir pc
    dir=$(prefix_libdir "$p" cmake/qmm/qmmConfig.cmake)/cmake/qmm
    pc=$(prefix_libdir "$p" pkgconfig/qmm.pc)
    pc=${pc:-$p/lib}/pkgconfig
    export CMAKE_PREFIX_PATH="$p${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export qmm_DIR=$dir
    export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export PATH="$p/bin:$PATH"
    echo "qmmcheck-gate: the plugin's build finds qmmcheck in $(shown "$p"):" \
        "CMAKE_PREFIX_PATH, qmm_DIR=$(shown "$dir"), PKG_CONFIG_PATH, PATH"
}

# GitHub's step outputs, when run there.
github_output() {
    [ -n "${GITHUB_OUTPUT:-}" ] && echo "$1=$2" >>"$GITHUB_OUTPUT"
    return 0
}

do_run() {
    [ -n "$backend" ] || die "run: give --backend SPEC (or QMM_GATE_BACKEND)"
    local bin qprefix
    bin=$(find_qmmcheck) || exit 2
    qprefix=$(prefix_of "$bin")
    if [ -n "$build_plugin" ]; then
        [ -z "$qprefix" ] || export_prefix "$qprefix"
        echo "qmmcheck-gate: building the plugin: $(shown "$build_plugin")"
        bash -c "$build_plugin" || die "run: the plugin's build command failed: $(shown "$build_plugin")"
    fi
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
    # what verdict reads beside the log: the status, and the attempt (a re-run job's reports
    # replace an earlier attempt's)
    echo "exit=$rc attempt=${GITHUB_RUN_ATTEMPT:-${CI_JOB_ID:-1}}" >"$base.exit"
    # the log in CI's console too: the failures and the SUMMARY (--quiet leaves out passes)
    console_log "$base.log"
    shard_report "$base" "$shard_i/$shard_n"
    github_output junit "$base.xml"
    github_output json "$base.json"
    github_output log "$base.log"
    github_output exit-code "$rc"
    echo "qmmcheck-gate: shard $shard_i/$shard_n exit $rc; reports: $(shown "$base.xml" "$base.json")"
    [ "$rc" != 3 ] || [ "$shard_n" = 1 ] ||
        echo "qmmcheck-gate: shard $shard_i/$shard_n judged nothing (exit 3): not a failure when other shards judged cases; the verdict step reads them all"
    exit "$rc"
}

# A log on the console. On GitHub, a line of it that starts with :: would be a workflow
# command (a backend's output forging ::error or ::add-mask): commands are stopped around it.
console_log() {
    if [ "${GITHUB_ACTIONS:-}" = true ]; then
        local token
        token=qmmcheck-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
        echo "::stop-commands::$token"
        cat -- "$1"
        echo "::$token::"
    else
        cat -- "$1"
    fi
}

# The counts of the SUMMARY line of LOG as "total passed failed ... xpass" (11 numbers), or
# nothing when it has none (a run that did not get that far).
summary_counts() {
    local line
    line=$(grep -a '^SUMMARY: total:' -- "$1" | tail -n 1) || return 0
    [[ "$line" =~ total:([0-9]+)\ passed:([0-9]+)\ failed:([0-9]+)\ mistrusted:([0-9]+)\ skipped:([0-9]+)\ unchecked:([0-9]+)\ crashed:([0-9]+)\ timeout:([0-9]+)\ error:([0-9]+)\ xfail:([0-9]+)\ xpass:([0-9]+) ]] ||
        return 0
    echo "${BASH_REMATCH[*]:1}"
}
count_names=(total passed failed mistrusted skipped unchecked crashed timeout error xfail xpass)

# The lines of LOG that make a run fail: a case FAILED, CRASHED, TIMEOUT, ERROR or XPASS, each
# with its __REPRO: command, and qmmcheck's own FAILED: lines (--xfail-strict, --max-skipped).
failure_lines() {
    grep -aE '^[0-9]+:(FAILED|CRASHED|TIMEOUT|ERROR|XPASS) |^FAILED: ' -- "$1" || true
}

# Text for a workflow command's message (%, CR, LF escaped as GitHub reads them back).
annotation_text() {
    local t=${1//%/%25}
    t=${t//$'\r'/%0D}
    echo "${t//$'\n'/%0A}"
}

# Text for the step summary's HTML: <, >, & escaped (the lines are qmmcheck's, already clean).
html_text() {
    local t=${1//&/&amp;}
    t=${t//</&lt;}
    echo "${t//>/&gt;}"
}

# One shard's log in GitHub's terms: an ::error annotation per failing case (at most 20: the
# rest are in the summary) and its counts and failures in the step summary.
shard_report() {
    local base=$1 shard=$2 line n=0
    local -a c
    if [ "${GITHUB_ACTIONS:-}" = true ]; then
        while IFS= read -r line; do
            n=$((n + 1))
            [ "$n" -le 20 ] || { echo "::error title=qmmcheck shard $shard::more failures: see the step summary and $base.log"; break; }
            echo "::error title=qmmcheck shard $shard::$(annotation_text "$line")"
        done < <(failure_lines "$base.log")
    fi
    [ -n "${GITHUB_STEP_SUMMARY:-}" ] || return 0
    read -r -a c <<<"$(summary_counts "$base.log")"
    {
        echo "### qmmcheck shard $shard"
        echo
        if [ ${#c[@]} -eq 11 ]; then
            summary_table_head
            summary_table_row "$shard" "$(exit_of "$base.exit")" "${c[@]}"
        else
            echo "No SUMMARY line: qmmcheck did not finish (see $(html_text "$base.log"))."
        fi
        failures_html "$base.log"
    } >>"$GITHUB_STEP_SUMMARY"
}

# The step summary's table: a row per shard, its exit status and counts.
summary_table_head() {
    local n head="| shard | exit |" rule="|---|---:|"
    for n in "${count_names[@]}"; do head+=" $n |" rule+="---:|"; done
    printf '%s\n%s\n' "$head" "$rule"
}
summary_table_row() {
    local v row="| $1 | $2 |"
    shift 2
    for v in "$@"; do row+=" $v |"; done
    echo "$row"
}

# The failure lines of the logs (and the mismatch lines under them), for the step summary.
failures_html() {
    local lines
    lines=$(grep -ahE -A3 '^[0-9]+:(FAILED|CRASHED|TIMEOUT|ERROR|XPASS) |^FAILED: ' -- "$@" |
        grep -av '^--$' | head -n 200) || true
    [ -n "$lines" ] || return 0
    echo
    echo "<details open><summary>failures (rerun one with its __REPRO: command)</summary>"
    echo
    echo "<pre>"
    html_text "$lines"
    echo "</pre></details>"
}

exit_of() {
    local e
    e=$(sed -n 's/^exit=\([0-9]*\) .*/\1/p' -- "$1" 2>/dev/null | head -n 1)
    echo "${e:-?}"
}
attempt_of() {
    local a
    a=$(sed -n 's/.* attempt=\([0-9]*\)$/\1/p' -- "$1" 2>/dev/null | head -n 1)
    echo "${a:-0}"
}

# The shards' reports read together (see usage): which shards ran, what each judged, and one
# exit status for the whole run.
do_verdict() {
    [ -d "$out" ] || die "verdict: no results directory $(shown "$out") (download the shards' reports there)"
    local i f rc worst=0 judged=0 judging=0 empty=0 failed=0 broken=0
    local -a files sums c logs=() shard_logs=()
    local -A best_attempt=() best_file=() dup=()
    if [ "$shards_given" = 0 ]; then
        # N from the reports' names: one N, or the count must be given
        local ns
        ns=$(find "$out" -name 'qmmcheck-shard-*-of-*.exit' | sed -n 's/.*-of-\([0-9]*\)\.exit$/\1/p' | sort -u)
        [ -n "$ns" ] || die "verdict: no shard's reports (qmmcheck-shard-I-of-N.exit) under $(shown "$out")"
        [ "$(wc -l <<<"$ns")" = 1 ] ||
            die "verdict: reports of several shard counts under $(shown "$out") ($(echo $ns)): give --shards N"
        shard_n=$ns
    fi
    # each shard's newest attempt; two reports of one shard and attempt are two gates sharing
    # a name (or a results directory): an error, never a silent overwrite
    while IFS= read -r -d '' f; do
        [[ "$f" =~ qmmcheck-shard-([0-9]+)-of-([0-9]+)\.exit$ ]] || continue
        [ "${BASH_REMATCH[2]}" = "$shard_n" ] || continue
        i=${BASH_REMATCH[1]}
        local a
        a=$(attempt_of "$f")
        if [ -z "${best_attempt[$i]:-}" ] || [ "$a" -gt "${best_attempt[$i]}" ]; then
            best_attempt[$i]=$a best_file[$i]=$f
            unset "dup[$i]"
        elif [ "$a" = "${best_attempt[$i]}" ]; then
            dup[$i]="${best_file[$i]} and $f"
        fi
    done < <(find "$out" -name 'qmmcheck-shard-*-of-*.exit' -print0 | sort -z)
    sums=(0 0 0 0 0 0 0 0 0 0 0)
    echo "qmmcheck-gate: verdict over $shard_n shard(s) in $(shown "$out")"
    local table
    table=$(summary_table_head)
    for ((i = 1; i <= shard_n; i++)); do
        f=${best_file[$i]:-}
        if [ -n "${dup[$i]:-}" ]; then
            echo "qmmcheck-gate: shard $i/$shard_n: two reports of one attempt ($(shown "${dup[$i]}")): give each gate its own name or results directory"
            broken=$((broken + 1))
            continue
        fi
        if [ -z "$f" ]; then
            echo "qmmcheck-gate: shard $i/$shard_n: no report (the shard did not run, or its reports were not downloaded)"
            broken=$((broken + 1))
            continue
        fi
        rc=$(exit_of "$f")
        read -r -a c <<<"$(summary_counts "${f%.exit}.log")"
        if [ ${#c[@]} -ne 11 ] || ! [[ "$rc" =~ ^[013]$ ]]; then
            echo "qmmcheck-gate: shard $i/$shard_n: exit $rc$([ ${#c[@]} -eq 11 ] || echo ', no SUMMARY line'): see $(shown "${f%.exit}.log")"
            broken=$((broken + 1))
            continue
        fi
        local k
        for k in "${!c[@]}"; do sums[k]=$((sums[k] + c[k])); done
        logs+=("${f%.exit}.log")
        shard_logs+=("$i/$shard_n" "${f%.exit}.log")
        table+=$'\n'$(summary_table_row "$i/$shard_n" "$rc" "${c[@]}")
        echo "qmmcheck-gate: shard $i/$shard_n: exit $rc, total:${c[0]} judged:$((c[0] - c[4])) skipped:${c[4]}"
        # what decides is qmmcheck's exit status, never the log's text (a backend writing to
        # the log could add lines): 3 judged nothing, 0 and 1 judged something
        case "$rc" in
            1) failed=$((failed + 1)) judging=$((judging + 1)) ;;
            0) judging=$((judging + 1)) ;;
            3) empty=$((empty + 1)) ;;
        esac
        [ "$rc" = 3 ] || judged=$((judged + c[0] - c[4]))
    done
    if [ "$broken" -gt 0 ]; then
        worst=2
    elif [ "$failed" -gt 0 ]; then
        worst=1
    elif [ "$judging" -eq 0 ]; then
        worst=3
    fi
    local what
    case "$worst" in
        0) what="pass: $judged case(s) judged, none failed" ;;
        1) what="FAILED: $failed shard(s) with a failing case" ;;
        2) what="ERROR: $broken shard(s) missing or not run through" ;;
        3) what="EMPTY: no shard judged any case (every case SKIPPED)" ;;
    esac
    [ "$empty" -eq 0 ] || [ "$worst" = 3 ] ||
        what+="; $empty shard(s) judged nothing (every case SKIPPED), not a failure: the run judged $judged"
    local total_line="total:${sums[0]}" k
    for k in 1 2 3 4 5 6 7 8 9 10; do total_line+=" ${count_names[k]}:${sums[k]}"; done
    if [ ${#logs[@]} -gt 0 ]; then
        failure_lines_of "${shard_logs[@]}"
    fi
    echo "VERDICT: $what"
    echo "VERDICT: $total_line"
    if [ "${GITHUB_ACTIONS:-}" = true ] && [ "$worst" != 0 ]; then
        echo "::error title=qmmcheck verdict::$(annotation_text "$what ($total_line)")"
    elif [ "${GITHUB_ACTIONS:-}" = true ] && [ "$empty" -gt 0 ]; then
        echo "::notice title=qmmcheck verdict::$(annotation_text "$what")"
    fi
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        {
            echo "## qmmcheck verdict: $(html_text "$what")"
            echo
            echo "$table"
            summary_table_row "all" "$worst" "${sums[@]}"
            [ ${#logs[@]} -eq 0 ] || failures_html "${logs[@]}"
        } >>"$GITHUB_STEP_SUMMARY"
    fi
    exit "$worst"
}

# The failing cases of every log, with their __REPRO: lines, on the console.
# SHARD LOG SHARD LOG ...: under a line naming each shard, since the case numbers of its lines
# are the shard's own (two shards both have a case 34).
failure_lines_of() {
    local lines said=0
    while [ $# -ge 2 ]; do
        lines=$(failure_lines "$2")
        if [ -n "$lines" ]; then
            [ "$said" = 1 ] || echo "qmmcheck-gate: failures:"
            said=1
            echo "qmmcheck-gate: shard $1:"
            printf '%s\n' "$lines"
        fi
        shift 2
    done
}

case "$step" in
    deps) do_deps ;;
    build) do_build ;;
    run) do_run ;;
    verdict) do_verdict ;;
    # one per line: set -e does not reach into a function called from an && list
    all)
        do_deps
        do_build
        do_run ;;
esac
