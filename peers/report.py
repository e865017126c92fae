#!/usr/bin/env python3
"""peers/report.py — regenerates docs/peer-report.md from the peers on this machine.

    python3 peers/report.py [--build build] [--out docs/peer-report.md]
                            [--classes "native x86-64-v3 x86-64-v2"]

For every peer that is available here (its plugin built, or .venv holding its Python package)
it runs `qmmcheck run` over vectors/onnx, vectors/edge and vectors/peers/<peer>, and
`qmmcheck fingerprint`, natively and under each emulated CPU class (`--cpu`, docs/cpu.md), and
writes one table row per peer, class and suite:
agree / differ (count, largest |got - expected| among the mismatches the harness prints) /
rejects valid / accepts invalid / crashed or hung / skipped (UNSUPPORTED), with the
fingerprint's verdict, the library version (the backend's own description) and the CPU flags
that pick the libraries' kernels. Standard library only; it builds nothing.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import qmm_requires  # noqa: E402 (the standard library only: outputs())
FLOAT8 = "vectors/edge/qlinearmatmul/float8"  # its own row: the float8 forms (issue 17)
PY = os.path.join(ROOT, ".venv", "bin", "python")



def peers(build):
    """(name, backend spec, the file that must exist for it to run), in report order."""
    so = lambda p: os.path.join(build, "peers", p, "libqmm_peer_%s.so" % p)
    return [(p, so(p), so(p)) for p in ("onednn", "xnnpack", "gemmlowp")] + [
        ("onnxruntime", "exec:.venv/bin/python peers/onnxruntime/backend.py", PY),
        ("onnx-reference", "exec:.venv/bin/python peers/onnx-reference/backend.py", PY),
    ]
FLAGS = ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8", "amx_tile")
# the CPU class the peers' expected-failure lists are keyed by: peers/check.sh's cpu_class()
# (harness/io/cpuclass.c), the first flag of this list that the CPU has; QMM_CPU_CLASS overrides
CLASSES = (("amx_int8", "amx"), ("avx512_vnni", "avx512-vnni"), ("avx_vnni", "avx-vnni"),
           ("avx2", "avx2"))
MISMATCH = re.compile(r"expected (-?\d+), got (-?\d+)")
# the classes a peer is judged under: this machine's, and the ones qmmcheck --cpu emulates
EMULATED = ("x86-64-v3", "x86-64-v2")


def cpu_args(cls):
    """qmmcheck's arguments that run a backend under `cls` (none for native)."""
    return [] if cls == "native" else ["--cpu", cls]


def cpu():
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    have = [x for x in FLAGS if x in flags]
    return model, have


def qmmcheck(exe, args):
    p = subprocess.run([exe] + args, cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace")
    return p.returncode, p.stdout


def description(exe, spec):
    # `bench` prints "backend NAME (DESCRIPTION)" before timing anything
    _, out = qmmcheck(exe, ["bench", "--backend", spec, "--shape", "1x1x1", "--reps", "1"])
    for line in out.splitlines():
        if line.startswith("backend "):
            return line[len("backend "):].strip()
    return "(no description)"


def suite_rows(exe, spec, suites, cls):
    """{suite: row} from one run over every suite (a case counts in each suite its path is
    under), or None when the run wrote no report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        args = ["run", "--backend", spec, "--quiet", "--allow-empty", "--report", "json:" + path]
        for suite in suites:  # a suite inside another (the float8 part of edge) is read once
            if not any(suite.startswith(o + "/") for o in suites):
                args += ["--vectors", suite]
        qmmcheck(exe, args + cpu_args(cls))
        try:
            with open(path) as f:
                cases = json.load(f).get("cases", [])
        except (OSError, ValueError):
            return None
    return {suite: suite_row([c for c in cases if c.get("path", "").startswith(suite + "/")])
            for suite in suites}


def suite_row(cases):
    row = dict(total=len(cases), agree=0, differ=0, maxd=0, rejects=0, accepts=0, dead=0,
               skipped=0, other=0)
    for c in cases:
        st, detail = c.get("status", ""), c.get("detail", "")
        if st in ("passed", "mistrusted"):
            row["agree"] += 1
        elif st == "unchecked":
            row["accepts"] += 1
        elif st in ("crashed", "timeout"):
            row["dead"] += 1
        elif st == "skipped":
            row["skipped"] += 1
        elif st in ("failed", "xfail", "xpass") and "for a valid call" in detail:
            row["rejects"] += 1
        elif st in ("failed", "xfail"):
            row["differ"] += 1
            for e, g in MISMATCH.findall(detail):
                row["maxd"] = max(row["maxd"], abs(int(g) - int(e)))
        else:
            row["other"] += 1
    return row


def md_text(text):
    """A backend's own words made one safe Markdown table/code fragment: control characters
    and the characters that would end a code span or a table cell replaced."""
    return "".join(c if c.isprintable() and c not in "`|" else "?" for c in text)


def verdict(exe, spec, cls):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fp.json")
        qmmcheck(exe, ["fingerprint", "--backend", spec, "--report", "json:" + path] +
                 cpu_args(cls))
        try:
            with open(path) as f:
                d = json.load(f)
        except (OSError, ValueError):
            return "(fingerprint failed)"
    v = d.get("verdict", "none")
    if v == "none":
        return "none (closest: %s; %d of %d cases skipped)" % (d.get("closest"), d.get("skipped", 0),
                                                            d.get("cases", 0))
    return "%s (%d of %d cases skipped)" % (v, d.get("skipped", 0), d.get("cases", 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the build directory holding qmmcheck and the peer plugins")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "peer-report.md"))
    ap.add_argument("--classes", default=" ".join(("native",) + EMULATED),
                    help="the CPU classes to judge each peer under (native: this machine's)")
    a = ap.parse_args()
    qmm_requires.outputs(ap, ("--out", a.out, None))  # before judging every peer, not after
    classes = a.classes.split()
    for c in classes:
        if c != "native" and c not in EMULATED:
            sys.exit("peers/report.py: --classes: %s is not native or one of %s" %
                     (md_text(c), ", ".join(EMULATED)))
    a.build = os.path.abspath(a.build)
    a.qmmcheck = os.path.join(a.build, "harness", "qmmcheck")
    if not os.access(a.qmmcheck, os.X_OK):
        sys.exit("peers/report.py: %s: not built (cmake --build build)" % a.qmmcheck)
    model, flags = cpu()
    cls = os.environ.get("QMM_CPU_CLASS") or next((c for f, c in CLASSES if f in flags),
                                                  "baseline")
    lines = [
        "# Peer report",
        "",
        "Generated by `python3 peers/report.py` (do not edit by hand): what each peer computes on the",
        "committed suites, judged against the spec. CPU: %s; flags that pick kernels: %s; CPU"
        " class %s (`peers/<peer>/xfail/%s.txt`)." %
        (model, ", ".join(flags) or "none of " + ", ".join(FLAGS), md_text(cls), md_text(cls)),
        "Each peer is also judged under the emulated CPU classes %s: `qmmcheck --cpu CLASS` runs"
        " it under qemu-user with that CPU's CPUID ([cpu.md](cpu.md)); their lists are"
        " `peers/<peer>/xfail/CLASS.txt`. Classes here: %s." %
        (", ".join(EMULATED), ", ".join("native (%s)" % md_text(cls) if c == "native" else c
                                        for c in classes)),
        "",
        "Columns: **agree** (PASSED or MISTRUSTED: same output as the reference), **differ** (a",
        "wrong output; max |Δ| is the largest |got − expected| among the mismatches the harness",
        "prints), **rejects valid** (an error for a call the spec accepts), **accepts invalid**",
        "(UNCHECKED: output for a call the spec rejects), **crashed/hung**, **skipped** (the peer",
        "answered UNSUPPORTED). Each divergence class has a minimal case under `vectors/peers/` and",
        "an entry in `peers/<peer>/xfail/` ([peers.md](peers.md)). The `%s` row is the" % FLOAT8,
        "float8 part of `vectors/edge` (QLinearMatMul-21 with float8 types), counted in both rows.",
        "",
    ]
    for name, spec, need in peers(a.build):
        if not os.path.exists(os.path.join(ROOT, need)):
            lines += ["## %s" % name, "",
                      "Not available here (%s missing)." % os.path.relpath(need, ROOT), ""]
            continue
        named = ["native (%s)" % md_text(cls) if c == "native" else c for c in classes]
        lines += ["## %s" % name, "",
                  "- backend: `%s`" % md_text(description(a.qmmcheck, spec))]
        lines += ["- fingerprint, %s: %s" % (n, md_text(verdict(a.qmmcheck, spec, c)))
                  for c, n in zip(classes, named)]
        lines += ["", "| CPU class | suite | cases | agree | differ (max \\|Δ\\|) | rejects valid "
                  "| accepts invalid | crashed/hung | skipped |",
                  "|---|---|---|---|---|---|---|---|---|"]
        suites = [s for s in ("vectors/onnx", "vectors/edge", FLOAT8, "vectors/peers/" + name)
                  if os.path.isdir(os.path.join(ROOT, s))]
        for c, n in zip(classes, named):
            sys.stderr.write("peer-report: %s, %s\n" % (name, c))
            rows = suite_rows(a.qmmcheck, spec, suites, c)
            for suite in suites:
                r = rows and rows[suite]
                if not r:
                    lines.append("| %s | `%s` | (run failed) | | | | | | |" % (n, suite))
                    continue
                lines.append("| %s | `%s` | %d | %d | %d (%d) | %d | %d | %d | %d |" %
                             (n, suite, r["total"], r["agree"], r["differ"], r["maxd"],
                              r["rejects"], r["accepts"], r["dead"], r["skipped"]))
        lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    sys.stderr.write("peer-report: wrote %s\n" % os.path.relpath(a.out, ROOT))


if __name__ == "__main__":
    main()
