#!/usr/bin/env bash
# tests/python_package.sh BUILD SRC [PYTHON] — qmm_exec installed as a Python user installs it
# (python/README.md): with pip, into a fresh virtual environment, offline (--no-index), from
# the repository (python/), from an installed prefix (cmake --install: share/qmm/python), from
# the sdist its build backend writes, and editable. Each time `import qmm_exec` finds the
# installed module (no sys.path), its version is qmmcheck's, and the backend python/README.md
# shows, copied out of the README into a folder outside the tree and run by the environment's
# python, passes vectors/edge/matmulinteger/random with --determinism (its start accepts
# threads=2) and judges the whole MatMulInteger suite as the README says: no failure, eight
# SKIPPED with its query's reasons.
#
# PYTHON (default: $QMM_PYTHON, else the repository's .venv) must import numpy and onnx: the
# new environment sees them through a .pth file (--no-index fetches nothing), so pip checks
# that they satisfy the package's declared requirements. Exit 77 (skipped) without one.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
py=${3:-${QMM_PYTHON:-$src/.venv/bin/python}}
qmmcheck=$build/harness/qmmcheck
if ! "$py" -c 'import numpy, onnx' 2>/dev/null; then
    echo "python_package: skipped: $py cannot import numpy and onnx (run scripts/pydeps.sh)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "python_package: $*" >&2
    exit 1
}

"$py" -m venv "$tmp/venv" # pip comes from ensurepip's own wheel: no network
venv=$tmp/venv/bin/python
site=$("$venv" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$py" -c 'import os, numpy, onnx
for m in (numpy, onnx):
    print(os.path.dirname(os.path.dirname(m.__file__)))' | sort -u >"$site/qmm-test-deps.pth"
pip() { "$venv" -m pip --disable-pip-version-check --no-input --no-cache-dir "$@"; }

want=$("$qmmcheck" --version | awk '{print $2}')
mkdir "$tmp/work"
awk '/<!-- tests\/python_package.sh runs this block/ {on = 1; next}
     on && /^```python/ {copy = 1; next} copy && /^```/ {exit} copy' \
    "$src/python/README.md" >"$tmp/work/my_backend.py"
grep -q "^import qmm_exec$" "$tmp/work/my_backend.py" || fail "no backend in python/README.md"
grep -q "sys.path" "$tmp/work/my_backend.py" && fail "README's backend changes sys.path"

# installed WHERE: qmm_exec is imported from there, at qmmcheck's version, and README's backend
# runs as README says
installed() {
    local where=$1 how=$2 got
    got=$(cd "$tmp/work" && "$venv" -c 'import qmm_exec, qmm_requires
print(qmm_exec.__file__, qmm_requires.__file__, qmm_exec.__version__)')
    read -r mod req version <<<"$got"
    for f in "$mod" "$req"; do
        [ "${f#"$where"/}" != "$f" ] || fail "$how: imported $f, not from $where"
    done
    [ "$version" = "$want" ] || fail "$how: qmm_exec.__version__ $version, qmmcheck $want"
    [ "$(pip show qmm-exec | sed -n 's/^Version: //p')" = "$want" ] ||
        fail "$how: pip show qmm-exec: $(pip show qmm-exec)"
    local rc=0
    (cd "$tmp/work" && "$qmmcheck" run --determinism --backend "exec:$venv my_backend.py" \
        --vectors "$src/vectors/edge/matmulinteger/random") >"$tmp/random.out" 2>&1 || rc=$?
    [ "$rc" = 0 ] && [ "$(grep -c ':PASSED ' "$tmp/random.out")" = 4 ] &&
        ! grep -q "left out" "$tmp/random.out" ||
        { cat "$tmp/random.out"; fail "$how: the random cases: exit $rc"; }
    # not --quiet: it counts the skips per suite, and each skip's own reason is checked here
    (cd "$tmp/work" && "$qmmcheck" run --backend "exec:$venv my_backend.py" \
        --vectors "$src/vectors/edge/matmulinteger") >"$tmp/suite.out" 2>&1 || rc=$?
    [ "$rc" = 0 ] && grep -q "^SUMMARY: total:100 passed:92 failed:0 .*skipped:8 unchecked:0 " \
        "$tmp/suite.out" &&
        [ "$(grep -c ':SKIPPED overflow/.* (unsupported: K = 3302[56]: K up to 4096 only)' \
            "$tmp/suite.out")" = 7 ] &&
        grep -q ':SKIPPED invalid/type-int16 (unsupported: A is int16: uint8 and int8 only)' \
            "$tmp/suite.out" ||
        { cat "$tmp/suite.out"; fail "$how: the MatMulInteger suite: exit $rc"; }
    pip uninstall -y qmm-exec >/dev/null
    echo "ok   $how: $mod"
}

# from the repository; pip checks numpy and onnx against the declared requirements
pip install --no-index "$src/python" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip"; }
pip check >/dev/null || fail "pip check: $(pip check)"
installed "$site" "pip install $src/python"
# from an installed prefix
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
share=$tmp/prefix/share/qmm/python
pip install --no-index "$share" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip"; }
installed "$site" "pip install PREFIX/share/qmm/python"
# the sdist its backend writes, which pip builds a wheel from
mkdir "$tmp/dist"
sdist=$(cd "$tmp/work" && "$venv" -c 'import sys
sys.path.insert(0, sys.argv[1])
import qmm_build_backend
print(qmm_build_backend.build_sdist(sys.argv[2]))' "$share" "$tmp/dist")
[ "$sdist" = "qmm_exec-$want.tar.gz" ] || fail "sdist named $sdist"
pip install --no-index "$tmp/dist/$sdist" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip"; }
installed "$site" "pip install $sdist"
# editable: the files stay where they are
pip install --no-index -e "$share" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip"; }
installed "$share" "pip install -e PREFIX/share/qmm/python"
# installed without its requirements (--no-deps, no numpy): serve says so in one line, naming
# how to install them, and qmmcheck shows it in the usage error
mv "$site/qmm-test-deps.pth" "$tmp/"
pip install --no-index --no-deps "$share" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip"; }
printf 'import qmm_exec\nqmm_exec.serve(lambda op, attrs, inputs: None, name="bare")\n' \
    >"$tmp/work/bare.py"
rc=0
(cd "$tmp/work" && "$qmmcheck" run --backend "exec:$venv bare.py" \
    --vectors "$src/vectors/edge/matmulinteger/random") >"$tmp/bare.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "ends: bare.py: needs the Python module 'numpy', .*: pip install \
numpy onnx (qmm_exec's requirements; qmmcheck's requirements.txt pins the versions it is tested \
with)$" "$tmp/bare.out" || { cat "$tmp/bare.out"; fail "without numpy: exit $rc"; }
echo "ok   without numpy: $(cat "$tmp/bare.out")"
echo "python_package: ok"
