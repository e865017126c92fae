#!/usr/bin/env bash
# tests/schema/check_report.sh FILE... — validates qmmcheck JSON reports against
# docs/report.schema.json with the python jsonschema package (Debian: python3-jsonschema,
# scripts/deps.sh). Exit 0: every file valid; 1: one is not (the errors on stdout); 127: no
# python3 with jsonschema.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
schema="$here/../../docs/report.schema.json"
for py in /usr/bin/python3 python3; do
  if "$py" -c 'import jsonschema' 2>/dev/null; then
    exec "$py" - "$schema" "$@" <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1], encoding="utf-8"))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    for e in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))[:20]:
        print(f"{path}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}")
        bad = 1
sys.exit(bad)
PY
  fi
done
echo "check_report.sh: no python3 with the jsonschema package (scripts/deps.sh installs python3-jsonschema)"
exit 127
