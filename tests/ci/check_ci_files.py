#!/usr/bin/env python3
"""tests/ci/check_ci_files.py — the CI integration files parse and hold what docs/ci.md says:
action.yml (a composite action whose steps call ci/qmmcheck-gate.sh and upload the reports),
the reusable workflow (workflow_call, a shard matrix), the GitLab template (parallel:, a JUnit
report) and the Dockerfile (Debian, qmmcheck as ENTRYPOINT). The action's steps that write
GITHUB_ENV or GITHUB_OUTPUT are run with hostile inputs (check_env_files). With PyYAML the YAML is parsed;
without it (a bare system) each file is checked for its keys as text, and the script says so.

    check_ci_files.py SOURCE_DIR
"""
import os
import re
import sys

try:
    import yaml
except ImportError:  # the fallback below is weaker; the line printed says which one ran
    yaml = None

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print("usage: check_ci_files.py SOURCE_DIR  (checks SOURCE_DIR's CI files)")
    sys.exit(0 if len(sys.argv) == 2 else 2)
src = sys.argv[1]
errors = []


def check(cond, what):
    if not cond:
        errors.append(what)


def read(rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


def load(rel):
    text = read(rel)
    if yaml is None:
        return text, None
    try:
        return text, yaml.safe_load(text)
    except yaml.YAMLError as e:
        errors.append(f"{rel}: does not parse: {e}")
        return text, None


def inputs_in_run_lines(steps):
    # `${{ inputs.X }}` spliced into a shell line would let an input's quotes run as code
    return [s.get("name", "?") for s in steps if "${{" in str(s.get("run", ""))]


def check_env_files(steps):
    """Runs each bash step of the action that writes GITHUB_ENV or GITHUB_OUTPUT as the runner
    would, every `${{ inputs.X }}` in its env replaced by a value with a line break and a
    variable after it: GitHub reads those files line by line, so an input written there raw
    would set any variable of the later steps (LD_PRELOAD, BASH_ENV, QMM_GATE_*)."""
    import subprocess
    import tempfile
    hostile = "1\nQMM_INJECTED=1"
    for step in steps:
        script = str(step.get("run", ""))
        if step.get("shell") != "bash" or not re.search(r"GITHUB_(ENV|OUTPUT)", script):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            files = {k: os.path.join(tmp, k) for k in ("GITHUB_ENV", "GITHUB_OUTPUT")}
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUNNER_TEMP": tmp,
                   "GITHUB_ACTION_PATH": tmp, "GITHUB_WORKSPACE": tmp, **files}
            for key, value in (step.get("env") or {}).items():
                env[key] = re.sub(r"\$\{\{\s*inputs\.[\w-]+\s*\}\}", hostile, str(value))
            subprocess.run(["bash", "-c", script], env=env, cwd=tmp, capture_output=True,
                           timeout=60)
            for name, path in files.items():
                lines = open(path).read().splitlines() if os.path.exists(path) else []
                check(not any(l.startswith("QMM_INJECTED") for l in lines),
                      f"action.yml: step '{step.get('name', '?')}': an input with a line break "
                      f"sets a variable through {name}: {lines}")


text, action = load("action.yml")
if action is not None:
    runs = action.get("runs", {})
    check(runs.get("using") == "composite", "action.yml: not a composite action")
    for key in ("backend", "build-plugin", "shard-index", "shard-count", "qmmcheck",
                "extra-args", "xfail", "xfail-strict"):
        check(key in action.get("inputs", {}), f"action.yml: no input {key}")
    for key in ("junit", "json", "exit-code"):
        check(key in action.get("outputs", {}), f"action.yml: no output {key}")
    steps = runs.get("steps", [])
    check(any("upload-artifact" in str(s.get("uses", "")) for s in steps),
          "action.yml: no actions/upload-artifact step")
    gate_steps = [s for s in steps if str(s.get("run", "")).startswith('"$QMM_GATE_GATE" ')]
    check(len(gate_steps) == 3, "action.yml: deps, build and run do not all call the gate")
    check(not inputs_in_run_lines(steps),
          f"action.yml: an expression in a run line: {inputs_in_run_lines(steps)}")
    check(all("shell" in s for s in steps if "run" in s), "action.yml: a run step has no shell")
    check_env_files(steps)
check("ci/qmmcheck-gate.sh" in text, "action.yml does not name ci/qmmcheck-gate.sh")

rel = ".github/workflows/qmmcheck-reusable.yml"
text, flow = load(rel)
if flow is not None:
    on = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` key as true
    check(isinstance(on, dict) and "workflow_call" in on, f"{rel}: not on workflow_call")
    gate = flow.get("jobs", {}).get("gate", {})
    check("shard" in gate.get("strategy", {}).get("matrix", {}), f"{rel}: no shard matrix")
    check(any(s.get("uses") == "./.qmmcheck" for s in gate.get("steps", [])),
          f"{rel}: the gate job does not use the action")
    for name, job in flow.get("jobs", {}).items():
        check(not inputs_in_run_lines(job.get("steps", [])),
              f"{rel}: job {name}: an expression in a run line")
check(re.search(r"^\s+workflow_call:", text, re.M), f"{rel}: no workflow_call")

rel = "ci/gitlab/qmmcheck.gitlab-ci.yml"
text, lab = load(rel)
if lab is not None:
    job = lab.get(".qmmcheck", {})
    check(isinstance(job.get("parallel"), int), f"{rel}: .qmmcheck has no parallel:")
    check(job.get("artifacts", {}).get("reports", {}).get("junit"),
          f"{rel}: no artifacts: reports: junit:")
    check(job.get("artifacts", {}).get("when") == "always",
          f"{rel}: a failing shard would keep no reports")
    check("qmmcheck-gate" in "\n".join(job.get("script", [])), f"{rel}: the script is not the gate")
check(re.search(r"^\s+parallel:", text, re.M) and re.search(r"^\s+junit:", text, re.M),
      f"{rel}: no parallel: or junit:")

rel = "ci/docker/Dockerfile"
text = read(rel)
check(re.search(r"^FROM debian:", text, re.M), f"{rel}: not from a Debian image")
check(re.search(r'^ENTRYPOINT \["qmmcheck"\]', text, re.M), f"{rel}: ENTRYPOINT is not qmmcheck")
for path in re.findall(r"/opt/qmmcheck/([\w./-]+\.sh)", text):
    check(os.path.exists(os.path.join(src, path)), f"{rel}: names {path}, which does not exist")

for e in errors:
    print(f"check_ci_files: {e}", file=sys.stderr)
print(f"check_ci_files: {'parsed with PyYAML ' + yaml.__version__ if yaml else 'no PyYAML: text checks only'}"
      f"; {len(errors)} problem(s)")
sys.exit(1 if errors else 0)
