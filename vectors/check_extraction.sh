#!/usr/bin/env bash
# Verifies the committed ONNX node-test extractions:
#   1. every vectors/onnx/onnx-*/MANIFEST.json matches the files beside it (sha256);
#   2. re-extracting from the pinned onnx release (installed from PyPI into a throw-away venv)
#      reproduces vectors/onnx/onnx-$ONNX_VERSION byte for byte.
# Needs python3 with venv (Debian: python3-venv) and network access to PyPI for step 2.
#   vectors/check_extraction.sh [--offline]   (--offline: step 1 only)
set -euo pipefail
ONNX_VERSION=1.23.2   # the pinned release; bump together with a fresh extraction
cd "$(dirname "$0")/.."

python3 - <<'PY'
import glob, hashlib, json, os, sys
bad = 0
for m in sorted(glob.glob("vectors/onnx/onnx-*/MANIFEST.json")):
    folder = os.path.dirname(m)
    man = json.load(open(m))
    listed = set(man["files"])
    present = set()
    for root, _, names in os.walk(folder):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), folder)
            if rel != "MANIFEST.json":
                present.add(rel)
    for rel in sorted(listed | present):
        if rel not in present or rel not in listed:
            print(f"{folder}: {rel} {'missing' if rel not in present else 'not in the manifest'}")
            bad = 1
            continue
        h = hashlib.sha256(open(os.path.join(folder, rel), "rb").read()).hexdigest()
        if h != man["files"][rel]:
            print(f"{folder}: {rel}: sha256 {h} differs from the manifest")
            bad = 1
    print(f"{folder}: {len(listed)} files, onnx {man['onnx_version']}: {'BAD' if bad else 'ok'}")
sys.exit(bad)
PY

[ "${1:-}" = "--offline" ] && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check "onnx==$ONNX_VERSION"
"$tmp/venv/bin/python" vectors/extract_onnx.py --out "$tmp/onnx-$ONNX_VERSION"
if diff -r "vectors/onnx/onnx-$ONNX_VERSION" "$tmp/onnx-$ONNX_VERSION"; then
  echo "vectors/onnx/onnx-$ONNX_VERSION: matches a fresh extraction from onnx $ONNX_VERSION"
else
  echo "vectors/onnx/onnx-$ONNX_VERSION differs from a fresh extraction from onnx $ONNX_VERSION" >&2
  exit 1
fi
