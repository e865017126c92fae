#!/usr/bin/env bash
# tests/cli_progress.sh QMMCHECK SRC FAKE_PLUGIN — the progress line of `run` and `diff`:
# on a terminal (a pseudo-terminal from script(1)) stderr shows done/total, failures so far,
# elapsed and remaining, drawn with \r and erased at the end; nothing with --quiet or when
# stderr is a pipe. Exit 77 (skipped) without script(1).
set -euo pipefail
qmmcheck=$1 src=$2 fake=$3
command -v script >/dev/null || { echo "script(1) missing (bsdutils): skipped"; exit 77; }
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# What a terminal sees when the command's stdout goes to a file: only stderr, i.e. the progress.
on_tty() { script -qfec "$1 >$tmp/stdout.txt" /dev/null >"$tmp/tty.txt" </dev/null || true; }

line='[0-9]+/[0-9]+ cases, [0-9]+ failed, [0-9:]+ elapsed, [0-9:?]+ left'
on_tty "'$qmmcheck' run --backend reference --vectors vectors"
grep -q $'\r' "$tmp/tty.txt" || fail "run on a terminal drew no progress"
tr '\r' '\n' <"$tmp/tty.txt" | grep -Eq "^$line" || fail "no '$line' in: $(cat -v "$tmp/tty.txt")"
# erased at the end: what follows the last \r is blank
last=$(tr '\r' '\n' <"$tmp/tty.txt" | tail -n 1)
[ -z "${last// /}" ] || fail "the progress line was left on the screen: '$last'"
grep -q '^SUMMARY: ' "$tmp/stdout.txt" || fail "stdout lost the summary"

# failures so far: the fake plugin fails every case, the first drawing comes after the first
on_tty "'$qmmcheck' run --backend '$fake:mode=zeros' --vectors vectors/seeds"
tr '\r' '\n' <"$tmp/tty.txt" | grep -Eq '^1/3 cases, 1 failed, ' ||
  fail "failures not counted: $(cat -v "$tmp/tty.txt")"

# --quiet: nothing on the terminal
on_tty "'$qmmcheck' run --quiet --backend reference --vectors vectors"
[ ! -s "$tmp/tty.txt" ] || fail "--quiet drew: $(cat -v "$tmp/tty.txt")"

# diff --seconds: problems done, differences, the time left from the budget
on_tty "'$qmmcheck' diff --backend reference --backend optimized --seed 7 --seconds 0.5"
tr '\r' '\n' <"$tmp/tty.txt" | grep -Eq '^[0-9]+ problems, [0-9]+ differences, [0-9:]+ elapsed, 0:0[01] left' ||
  fail "diff drew no progress: $(cat -v "$tmp/tty.txt")"
on_tty "'$qmmcheck' diff --quiet --backend reference --backend optimized --seed 7 --seconds 0.3"
[ ! -s "$tmp/tty.txt" ] || fail "diff --quiet drew: $(cat -v "$tmp/tty.txt")"

# stderr a pipe: nothing but what a log should hold
"$qmmcheck" run --backend reference --vectors vectors 2>&1 >/dev/null | cat >"$tmp/pipe.txt"
[ ! -s "$tmp/pipe.txt" ] || fail "run drew on a pipe: $(cat -v "$tmp/pipe.txt")"
"$qmmcheck" diff --backend reference --backend optimized --seed 7 --seconds 0.5 2>&1 >/dev/null |
  cat >"$tmp/pipe.txt"
[ ! -s "$tmp/pipe.txt" ] || fail "diff drew on a pipe: $(cat -v "$tmp/pipe.txt")"
echo "progress: ok"
