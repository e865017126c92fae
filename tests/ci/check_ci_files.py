#!/usr/bin/env python3
"""tests/ci/check_ci_files.py — the CI integration files parse and hold what docs/ci.md says:
action.yml (a composite action whose steps call ci/qmmcheck-gate.sh from its own files, upload
the prefix once and the reports under names unique per use, and read them in a verdict step),
the reusable workflow (build once, a shard matrix, a verdict job), the GitLab template (a build
job, parallel: shards whose exit 3 is allowed, a JUnit report, a verdict job) and the
Dockerfile (Debian, qmmcheck as ENTRYPOINT). The action's steps that write
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


def config_artifacts(steps):
    """Runs the action's Configure step as the runner would, twice in one job (one
    RUNNER_TEMP) with the same inputs: the artifact names must differ (two uses of the action
    in a job upload under two names), and the gate must come from the action's own files."""
    import subprocess
    import tempfile
    step = next((s for s in steps if s.get("id") == "config"), None)
    check(step is not None, "action.yml: no step with id config")
    if step is None:
        return
    inputs = {"step": "run", "name": "qmmcheck", "shard-index": "2", "shard-count": "4",
              "qmmcheck": "checkout", "qmmcheck-repository": ""}
    names = []
    with tempfile.TemporaryDirectory() as tmp:
        for use in (1, 2):
            files = {k: os.path.join(tmp, f"{k}.{use}") for k in ("GITHUB_ENV", "GITHUB_OUTPUT")}
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUNNER_TEMP": tmp,
                   "GITHUB_ACTION_PATH": "/action", "GITHUB_WORKSPACE": tmp,
                   "GITHUB_JOB": "gate", "GITHUB_RUN_ATTEMPT": "3", **files}
            for key, value in (step.get("env") or {}).items():
                env[key] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}",
                                  lambda m: inputs[m.group(1)], str(value))
            r = subprocess.run(["bash", "-c", str(step["run"])], env=env, cwd=tmp,
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, f"action.yml: Configure failed: {r.stdout}{r.stderr}")
            out = open(files["GITHUB_OUTPUT"]).read() if os.path.exists(files["GITHUB_OUTPUT"]) else ""
            names += re.findall(r"^artifact=(.*)$", out, re.M)
            genv = open(files["GITHUB_ENV"]).read() if os.path.exists(files["GITHUB_ENV"]) else ""
            check("QMM_GATE_GATE=/action/ci/qmmcheck-gate.sh" in genv,
                  f"action.yml: the gate is not the action's own: {genv}")
    check(len(names) == 2 and names[0] != names[1] and
          all(n.startswith("qmmcheck-shard-2-of-4-") and "attempt-3" in n for n in names),
          f"action.yml: two uses in one job: artifact names {names}")


text, action = load("action.yml")
check("action_repository" not in text,
      "action.yml relies on github.action_repository (composite actions do not set it reliably)")
if action is not None:
    runs = action.get("runs", {})
    check(runs.get("using") == "composite", "action.yml: not a composite action")
    for key in ("backend", "build-plugin", "shard-index", "shard-count", "qmmcheck",
                "extra-args", "xfail", "xfail-strict"):
        check(key in action.get("inputs", {}), f"action.yml: no input {key}")
    for key in ("junit", "json", "exit-code"):
        check(key in action.get("outputs", {}), f"action.yml: no output {key}")
    steps = runs.get("steps", [])
    uploads = [s for s in steps if "upload-artifact" in str(s.get("uses", ""))]
    check(len(uploads) == 2, "action.yml: not two actions/upload-artifact steps (prefix, reports)")
    check(all(s.get("with", {}).get("name") == "${{ steps.config.outputs.artifact }}"
              for s in uploads), "action.yml: an upload not named by the Configure step")
    check(any("download-artifact" in str(s.get("uses", "")) and
              "pattern" in s.get("with", {}) for s in steps),
          "action.yml: the verdict does not download the shards' reports")
    gate_steps = [s for s in steps if str(s.get("run", "")).startswith('"$QMM_GATE_GATE" ')]
    check(len(gate_steps) == 3, "action.yml: deps, build and run do not all call the gate")
    check(any('"$QMM_GATE_GATE" verdict' in str(s.get("run", "")) for s in steps),
          "action.yml: no verdict step")
    config_artifacts(steps)
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
    jobs = flow.get("jobs", {})
    gate = jobs.get("gate", {})
    check("shard" in gate.get("strategy", {}).get("matrix", {}), f"{rel}: no shard matrix")

    def action_step(job):
        return next((s.get("with", {}) for s in jobs.get(job, {}).get("steps", [])
                     if s.get("uses") == "./.qmmcheck"), {})
    check(action_step("build").get("step") == "build", f"{rel}: no build job building once")
    check(action_step("gate").get("step") == "run", f"{rel}: the gate job does not run a shard")
    check(action_step("verdict").get("step") == "verdict", f"{rel}: no verdict job")
    check("gate" in jobs.get("verdict", {}).get("needs", []) and
          jobs.get("verdict", {}).get("if") == "always()",
          f"{rel}: the verdict does not run after the shards, failed or not")
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
    check('"$gate" run' in "\n".join(job.get("script", [])), f"{rel}: the shard is not the gate's run")
    check(job.get("allow_failure", {}).get("exit_codes") == [3],
          f"{rel}: a shard that judged nothing (exit 3) fails the pipeline")
    check(job.get("needs") == ["qmmcheck-build"], f"{rel}: the shards do not need the build")
    base = "\n".join(lab.get(".qmmcheck-base", {}).get("before_script", []))
    check("qmmcheck-gate" in base, f"{rel}: the jobs do not find the gate")
    build = lab.get(".qmmcheck-build", {})
    check('"$gate" build' in "\n".join(build.get("script", [])) and
          build.get("artifacts", {}).get("paths") == [".qmmcheck-prefix/"],
          f"{rel}: .qmmcheck-build does not hand its prefix on")
    verdict = lab.get(".qmmcheck-verdict", {})
    check('"$gate" verdict' in "\n".join(verdict.get("script", [])) and
          verdict.get("when") == "always", f"{rel}: no .qmmcheck-verdict after every shard")
check(re.search(r"^\s+parallel:", text, re.M) and re.search(r"^\s+junit:", text, re.M),
      f"{rel}: no parallel: or junit:")

rel = "ci/docker/Dockerfile"
text = read(rel)
check(re.search(r"^FROM debian:", text, re.M), f"{rel}: not from a Debian image")
check(re.search(r'^ENTRYPOINT \["qmmcheck"\]', text, re.M), f"{rel}: ENTRYPOINT is not qmmcheck")
for path in re.findall(r"/opt/qmmcheck/([\w./-]+\.sh)", text):
    check(os.path.exists(os.path.join(src, path)), f"{rel}: names {path}, which does not exist")

# Versions the CI files and docs/ci.md name exist as tags of the repository, and every
# placeholder in their examples is explained in ci.md's prose ("Pinning qmmcheck").
import subprocess
try:
    tags = set(subprocess.run(["git", "-C", src, "tag"], capture_output=True, text=True,
                              timeout=30).stdout.split())
except OSError:
    tags = set()
ci_md = read("docs/ci.md")
for rel in ("docs/ci.md", "action.yml", ".github/workflows/qmmcheck-reusable.yml",
            "ci/gitlab/qmmcheck.gitlab-ci.yml", "ci/docker/Dockerfile"):
    body = read(rel)
    for ver in re.findall(r"(?:qmmcheck[\w./-]*@|/raw/|-ref: |_REF: )(v\d+(?:\.\d+)*)\b", body):
        check(ver in tags, f"{rel}: names the version {ver}, which is no tag of the repository")
    for word in ("OWNER", "HOST", "YOUR.HOST"):
        check(not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", body) or
              re.search(rf"`{re.escape(word)}[/`]", ci_md.split("## GitHub")[0]),
              f"{rel}: the placeholder {word} is not explained before docs/ci.md's GitHub section")
prose = ci_md.split("## GitHub")[0]
for word in re.findall(r"\b(OWNER|COMMIT|YOUR-GITLAB|YOUR-GROUP)\b", ci_md):
    check(word in prose, f"docs/ci.md: the placeholder {word} is not explained in its prose")

for e in errors:
    print(f"check_ci_files: {e}", file=sys.stderr)
print(f"check_ci_files: {'parsed with PyYAML ' + yaml.__version__ if yaml else 'no PyYAML: text checks only'}"
      f"; {len(errors)} problem(s)")
sys.exit(1 if errors else 0)
