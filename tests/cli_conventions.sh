#!/usr/bin/env bash
# tests/cli_conventions.sh QMMCHECK SRC BUILD — the command line's conventions: every command
# answers --help and -h (exit 0) like `qmmcheck help CMD`, and every option its --help lists is
# accepted and described in the man page's section for that command; an unknown option exits 2
# naming it; --opt=value is --opt value; --version, -V; the man page renders without warnings;
# the bash completion parses and completes `qmmcheck run --b` to --backend; both are installed.
set -euo pipefail
qmmcheck=$1 src=$2 build=$3
man_page=$src/docs/qmmcheck.1 completion=$src/scripts/completion/qmmcheck.bash
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# every command main.c dispatches, and help lists no other
commands=(run list repro fingerprint export diff bench reduce help version)
"$qmmcheck" help >"$tmp/help.txt"
listed=$(sed -n 's/^  \([a-z][a-z]*\).*/\1/p' "$tmp/help.txt" | tr '\n' ' ')
[ "$listed" = "${commands[*]} " ] || fail "help lists '$listed', want '${commands[*]}'"
cmp -s <("$qmmcheck" --help) "$tmp/help.txt" || fail "--help differs from help"

# The man page's section for a command: from its .SS line to the next .SS or .SH.
section() { awk -v c="$1" '/^\.S[SH] /{on = ($0 ~ "^\\.SS \"" c "( |\")")} on' "$man_page"; }

for cmd in "${commands[@]}"; do
    rc=0
    "$qmmcheck" "$cmd" --help >"$tmp/h.txt" 2>"$tmp/err.txt" || rc=$?
    [ "$rc" -eq 0 ] || fail "$cmd --help exited $rc: $(cat "$tmp/err.txt")"
    head -n 1 "$tmp/h.txt" | grep -q "^usage: qmmcheck $cmd" || fail "$cmd --help: $(head -n 1 "$tmp/h.txt")"
    cmp -s "$tmp/h.txt" <("$qmmcheck" "$cmd" -h) || fail "$cmd -h differs from --help"
    cmp -s "$tmp/h.txt" <("$qmmcheck" help "$cmd") || fail "help $cmd differs from $cmd --help"
    section "$cmd" >"$tmp/section.txt"
    [ -s "$tmp/section.txt" ] || fail "the man page has no section for $cmd"
    # each option line: "  -b, --backend SPEC   help" or "      --isolate   help"
    while read -r opt value; do
        [ "$opt" = --help ] && continue
        grep -qF -- "${opt//-/\\-}" "$tmp/section.txt" ||
            fail "$cmd $opt is not in the man page's section for $cmd"
        # accepted: whatever it says, not that the option is unknown (the trailing unknown
        # option stops every command before it does any work)
        args=("$opt")
        [ -n "$value" ] && args+=(1)
        rc=0
        "$qmmcheck" "$cmd" "${args[@]}" --no-such-option >"$tmp/out.txt" 2>&1 || rc=$?
        [ "$rc" -eq 2 ] || fail "$cmd ${args[*]} --no-such-option exited $rc"
        ! grep -q "unknown option $opt\b" "$tmp/out.txt" || fail "$cmd refuses its own $opt"
    done < <(sed -nE 's/^ +(-[A-Za-z], )?(--[a-z0-9-]+)( [^ ]+)?  .*/\2\3/p' "$tmp/h.txt")
    # unknown options: exit 2, naming the option and where the usage is
    rc=0
    "$qmmcheck" "$cmd" --frobnicate >"$tmp/out.txt" 2>&1 || rc=$?
    [ "$rc" -eq 2 ] || fail "$cmd --frobnicate exited $rc"
    grep -q "unknown option --frobnicate" "$tmp/out.txt" || fail "$cmd --frobnicate: $(cat "$tmp/out.txt")"
done

# --opt=value is --opt value
a=$("$qmmcheck" list --vectors=vectors/seeds --filter=orion --shard=1/1 2>&1) || fail "list --opt=value: $a"
b=$("$qmmcheck" list --vectors vectors/seeds --filter orion --shard 1/1 2>&1)
[ "$a" = "$b" ] && [ -n "$a" ] || fail "list --opt=value gave '$a', --opt value '$b'"
strip() { sed 's/ ([0-9.]* s)$//'; }
a=$("$qmmcheck" run --backend=reference --vectors=vectors/seeds --profile=spec --timeout=5 2>&1 |
    strip) || fail "run --opt=value: $a"
b=$("$qmmcheck" run --backend reference --vectors vectors/seeds --profile spec --timeout 5 | strip)
[ "$a" = "$b" ] || fail "run --opt=value and --opt value differ:\n$a\n---\n$b"
a=$("$qmmcheck" diff -b reference --backend=optimized --seed=3 --count=20 2>&1 | strip) ||
    fail "diff --opt=value: $a"
b=$("$qmmcheck" diff -b reference --backend optimized --seed 3 --count 20 | strip)
[ "${a%(*}" = "${b%(*}" ] || fail "diff --opt=value and --opt value differ:\n$a\n---\n$b"
rc=0
"$qmmcheck" run --quiet=yes >"$tmp/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--quiet takes no value" "$tmp/out.txt" || fail "run --quiet=yes: $rc $(cat "$tmp/out.txt")"
rc=0
"$qmmcheck" run --backend >"$tmp/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--backend needs a value" "$tmp/out.txt" || fail "run --backend: $rc"

# the version, three ways
v=$("$qmmcheck" --version)
[[ $v == "qmmcheck "* ]] || fail "--version: $v"
[ "$("$qmmcheck" -V)" = "$v" ] && [ "$("$qmmcheck" version)" = "$v" ] || fail "-V or version differ"

# the man page renders without a warning
if command -v man >/dev/null; then
    MANWIDTH=80 man --warnings -l "$man_page" >/dev/null 2>"$tmp/warn.txt"
else
    groff -man -Tutf8 -ww -z "$man_page" 2>"$tmp/warn.txt"
fi
[ ! -s "$tmp/warn.txt" ] || fail "the man page warns: $(cat "$tmp/warn.txt")"

# the completion parses, and completes from the program's own tables
bash -n "$completion"
got=$(bash -c 'source "$1"; COMP_WORDS=("$2" run --b); COMP_CWORD=2; _qmmcheck; echo "${COMPREPLY[*]}"' \
      _ "$completion" "$qmmcheck")
[ "$got" = "--backend" ] || fail "completing 'qmmcheck run --b' gave '$got'"
got=$(bash -c 'source "$1"; COMP_WORDS=("$2" di); COMP_CWORD=1; _qmmcheck; echo "${COMPREPLY[*]}"' \
      _ "$completion" "$qmmcheck")
[ "$got" = "diff" ] || fail "completing 'qmmcheck di' gave '$got'"

# both are installed where man and bash-completion look
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
[ -f "$tmp/prefix/share/man/man1/qmmcheck.1" ] || fail "the man page is not installed"
[ -f "$tmp/prefix/share/bash-completion/completions/qmmcheck" ] || fail "the completion is not installed"
echo "cli conventions: ok"
