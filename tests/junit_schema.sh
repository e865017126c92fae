#!/usr/bin/env bash
# tests/junit_schema.sh BUILD_DIR — the JUnit reports the scripts write, validated against
# tests/schema/junit-10.xsd (the rules of Jenkins xUnit's junit-10.xsd) with xmllint: setup's
# conformance report (scripts/setup.sh's run, made here afresh into BUILD_DIR/junit/, and
# BUILD_DIR/conformance.xml where .ci/run left one) and peers/check.sh's
# (BUILD_DIR/junit/peers-*.xml, present once ctest's peers_check has run; this test runs after
# it). The Criterion tests validate the reports they write themselves (expect_junit_valid in
# tests/cli_support.h). Exit 1 naming each report that does not validate.
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
QMMCHECK=${QMMCHECK:-$BUILD/harness/qmmcheck}
if ! command -v xmllint >/dev/null; then
    echo "junit_schema: no xmllint (scripts/deps.sh installs libxml2-utils)" >&2
    exit 1
fi
mkdir -p "$BUILD/junit"
# scripts/setup.sh's conformance run, with the report .ci/run asks of it
"$QMMCHECK" run -q --backend reference --backend optimized --vectors vectors \
    --report "junit:$BUILD/junit/conformance.xml" >/dev/null
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "junit_schema: the conformance run exited $rc" >&2
    exit 1
fi
reports=("$BUILD/junit/conformance.xml")
[ -f "$BUILD/conformance.xml" ] && reports+=("$BUILD/conformance.xml")
for f in "$BUILD"/junit/peers-*.xml; do
    [ -f "$f" ] && reports+=("$f")
done
bad=0
for f in "${reports[@]}"; do
    if ! said=$(xmllint --noout --schema tests/schema/junit-10.xsd "$f" 2>&1); then
        echo "$said"
        bad=1
    fi
done
echo "junit_schema: ${#reports[@]} report(s) checked: ${reports[*]}"
exit $bad
