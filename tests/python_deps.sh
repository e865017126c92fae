#!/usr/bin/env bash
# tests/python_deps.sh [PYTHON] — every Python script of the tree (find . -name '*.py', outside
# .venv and build trees) run by a Python that has none of requirements.txt's packages: PYTHON
# (default python3) with -I -S, so neither site-packages (where pip and Debian put numpy, onnx)
# nor PYTHONPATH nor the user's site is on the path, only the standard library. Each script must
# either run (`--help`, exit 0) or print exactly one line on stderr that names the missing
# module and how to install it (scripts/pydeps.sh, requirements.txt), and exit 2: never a
# traceback. Checks first that such a Python really lacks numpy and onnx.
set -u
cd "$(dirname "$0")/.."
PY=${1:-python3}
bare=("$PY" -I -S)
for m in numpy onnx; do
    if "${bare[@]}" -c "import $m" 2>/dev/null; then
        echo "python_deps: $PY -I -S imports $m: it cannot stand for a Python without it" >&2
        exit 1
    fi
done
bad=0
n=0
while IFS= read -r f; do
    n=$((n + 1))
    out=$(mktemp)
    err=$(mktemp)
    timeout 30 "${bare[@]}" "$f" --help </dev/null >"$out" 2>"$err"
    rc=$?
    lines=$(wc -l <"$err")
    if [ "$rc" -eq 0 ] && ! grep -q Traceback "$err"; then
        echo "ok   $f: runs with the standard library alone"
    elif [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] &&
         grep -Eq "needs the Python module '[A-Za-z0-9_.]+'" "$err" &&
         grep -q "scripts/pydeps.sh" "$err" && grep -q "pip install -r requirements.txt" "$err"; then
        mod=$(sed -E "s/.*needs the Python module '([^']+)'.*/\1/" "$err")
        if "${bare[@]}" -c "import $mod" 2>/dev/null; then
            echo "FAIL $f: names '$mod', which this Python imports"
            bad=1
        else
            echo "ok   $f: $(cat "$err")"
        fi
    else
        echo "FAIL $f: exit $rc, stderr:"
        sed 's/^/    /' "$err"
        bad=1
    fi
    rm -f "$out" "$err"
done < <(find . -name '*.py' -not -path './.venv/*' -not -path './build*' -not -path './.git/*' | sort)
# extract_onnx.py's --help and --manifest-only need only the standard library; an extraction
# needs onnx
err=$("${bare[@]}" vectors/extract_onnx.py --out /nonexistent/x 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "needs the Python module 'numpy'" <<<"$err"; then
    echo "FAIL vectors/extract_onnx.py (an extraction): exit $rc: $err"
    bad=1
else
    echo "ok   vectors/extract_onnx.py (an extraction): $err"
fi
echo "python_deps: $n scripts"
[ "$n" -gt 0 ] || bad=1
exit $bad
