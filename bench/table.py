#!/usr/bin/env python3
"""BENCHMARKS.md's table for this machine's CPU class, in one command (issue 29 items 3, 4).

    .venv/bin/python bench/table.py --qmmcheck build/harness/qmmcheck --update BENCHMARKS.md

Rows: QLinearMatMul u8 a, s8 b, u8 y at 1x4096x4096, 128x768x768, 512x1024x1024, 1024^3 and
2048^3; 1 and 2 threads; B as input and B constant. Two comparisons per row:

- oneDNN (the peers/onednn plugin, if built): `qmmcheck bench --backend optimized --backend
  onednn --b-both --rounds R --threads T`, alternating rounds in one process; both answers are
  judged against the reference first (oneDNN under its profile for this CPU class, its
  requantization being float32), a backend that fails gets no ratio.
- ONNX Runtime (if importable): bench/ort_compare.py's alternating rounds (ORT in this
  process, ours through `qmmcheck bench`).

Ratios are peer time / our time (> 1: ours is faster), the median of the per-round ratios.
With --update FILE the section for this CPU class and model (between its markers, e.g.
"avx512-vnni, AMD EPYC (family 26 model 2)") is replaced, or added before the first "## "
section; the sections of other classes and models are left as they are. --json keeps
every row; --from-json makes the section again from it without measuring.

--isa avx2 | avxvnni: a lower class's code on this machine, ours (QMM_ISA) against oneDNN's
(ONEDNN_MAX_CPU_ISA), with the bound against that ISA's own loop; ONNX Runtime has no such
switch, so no ORT rows. A section of its own ("avx2 code on avx512-vnni, CPU"): it shows both
libraries' code for that class on this machine's pipes, not a machine of that class.

Time, default size (3 rounds each) on the 2-core Zen 4: 18 minutes measured at load average
10-18 (2026-11-27); on an idle machine about 7 (the reference's checks of 2048^3, about 45 s per
profile and thread count, are 3 of them; ORT's rows about 3). --shapes and --threads narrow it.
"""
import argparse
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import qmm_requires  # noqa: E402 (the standard library only: outputs())
SHAPES = ["1x4096x4096", "128x768x768", "512x1024x1024", "1024x1024x1024", "2048x2048x2048"]
# oneDNN 2.6's arithmetic per CPU class (docs/profiles.md, "oneDNN"); classes not measured
# there are judged under spec's accumulation with oneDNN's requantization
ONEDNN_PROFILE = {"avx2": "onednn-fp32+onednn-avx2",
                  "avx512-vnni": "onednn-fp32+onednn-avx512-vnni"}
# --isa: a lower class's code on this machine. Ours through QMM_ISA, oneDNN through its
# ONEDNN_MAX_CPU_ISA (its dispatch then takes that ISA's kernels: ONEDNN_VERBOSE names it),
# judged under the profile of that code's arithmetic (vpdpbusd on ymm sums as on zmm). ORT
# has no such switch: its rows are left out.
CAPPED = {"avx2": ("AVX2", "onednn-fp32+onednn-avx2"),
          "avxvnni": ("AVX2_VNNI", "onednn-fp32+onednn-avx512-vnni")}


def capped_env(isa):
    """The environment that runs ISA's code on this machine (--isa), or None."""
    if not isa:
        return None
    env = dict(os.environ)
    env["QMM_ISA"] = isa
    env["ONEDNN_MAX_CPU_ISA"] = CAPPED[isa][0]
    return env


def isa_peaks(qmmcheck, threads):
    """`qmmcheck bench --peak --threads T`'s rate of each ISA's loop, GOPS by ISA name."""
    out = subprocess.run([qmmcheck, "bench", "--peak", "--threads", str(threads)],
                         capture_output=True, text=True, check=True).stdout
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^peak isa=(\S+) threads=\d+ ([0-9.]+) GOPS", out, re.M)}


def run_onednn(qmmcheck, shapes, threads, rounds, profile, isa=None):
    """One `qmmcheck bench` of ours and oneDNN; returns its JSON report (with --isa the peak
    rate of that ISA's loop beside it, as `isa_peak_gops`)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        cmd = [qmmcheck, "bench", "--backend", "optimized", "--backend", "onednn",
               "--profile", "onednn=" + profile, "--types", "u8s8u8", "--threads", str(threads),
               "--rounds", str(rounds), "--b-both", "--report", "json:" + path]
        for s in shapes:
            cmd += ["--shape", s]
        print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
        env = capped_env(isa)
        if env:
            print(f"  (QMM_ISA={env['QMM_ISA']} ONEDNN_MAX_CPU_ISA={env['ONEDNN_MAX_CPU_ISA']})",
                  file=sys.stderr, flush=True)
        rc = subprocess.run(cmd, stdout=sys.stderr, env=env).returncode
        if rc not in (0, 1):  # 1: a backend FAILED, which the rows show
            sys.exit(f"table.py: qmmcheck bench exited {rc}")
        with open(path) as f:
            rep = json.load(f)
        if isa:
            rep["isa_peak_gops"] = isa_peaks(qmmcheck, threads).get(isa)
        return rep


def machine(qmmcheck):
    """The machine line of `qmmcheck bench` (one tiny checked round) and its JSON."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.json")
        out = subprocess.run([qmmcheck, "bench", "--shape", "1x1x1", "--rounds", "1",
                              "--report", "json:" + path], capture_output=True, text=True,
                             check=True).stdout
        with open(path) as f:
            # the probe's own thread count is not the table's: cut it
            return out.splitlines()[0].split("; threads=")[0], json.load(f)["machine"]


def build_type(qmmcheck):
    cache = os.path.join(os.path.dirname(os.path.abspath(qmmcheck)), "..", "CMakeCache.txt")
    try:
        with open(cache) as f:
            m = re.search(r"^CMAKE_BUILD_TYPE:STRING=(.*)$", f.read(), re.M)
            return m.group(1) if m and m.group(1) else "default"
    except OSError:
        return "unknown"


def git_commit():
    r = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    return r.stdout.strip() or "unknown"


def one_line(text, limit=120):
    """A value from a run's --json (or from a report) as one line of the section's text:
    control characters (newlines included) as spaces, no backquote or "--" (a code span, or a
    marker comment, "<!-- ... end -->", cannot be opened or closed by it), at most `limit`
    characters. Every text the section takes from a run goes through it (section, section_key);
    a table cell also loses "|" (table_cell)."""
    t = "".join(c if c.isprintable() else " " for c in str(text))
    t = " ".join(t.replace("`", "'").split())
    while "--" in t:
        t = t.replace("--", "-")
    return t[:limit]


def table_cell(text):
    """A status from a run as one table cell: one_line, and no "|" to add a column."""
    return one_line(text, 40).replace("|", "/")


def fmt_ms(s):
    return "—" if s is None else f"{1e3 * s:.3f}"


def section(cls, mline, onednn, ort_rows, ort_version, args, began, load_end, build, commit):
    mline, load_end = one_line(mline, 300), one_line(load_end, 60)
    ort_version = one_line(ort_version, 60)
    build, commit, profile = one_line(build), one_line(commit), one_line(args.onednn_profile)
    mark = f"<!-- bench/table.py: {cls} -->"
    cmd = (f".venv/bin/python bench/table.py --qmmcheck build/harness/qmmcheck --rounds "
           f"{args.rounds} --ort-rounds {args.ort_rounds} --update BENCHMARKS.md")
    title = f"class {cls}"
    if args.isa:
        cmd = (f".venv/bin/python bench/table.py --qmmcheck build/harness/qmmcheck --isa "
               f"{args.isa} --rounds {args.rounds} --update BENCHMARKS.md")
        title = cls
    lines = [mark, f"## Issue 29 table: {title} (bench/table.py, {began:%Y-%m-%d %H:%M} UTC)",
             "",
             f"`{mline}` (at the start; load average at the end {load_end}). "
             f"{build} build, commit {commit}."]
    if args.isa:
        env, _ = CAPPED[args.isa]
        lines += ["", f"**{args.isa} code on a machine of a higher class**: ours with "
                  f"`QMM_ISA={args.isa}`, oneDNN with `ONEDNN_MAX_CPU_ISA={env}`. It shows the "
                  "two libraries' code for that class side by side, on this machine's "
                  "pipes and caches, not a machine of that class (whose pipes differ: a Zen 3 "
                  "runs vpmaddwd on fewer of them). ONNX Runtime has no such switch: no ORT "
                  f"rows. bound and % of peak are against the {args.isa} loop of `qmmcheck "
                  "bench --peak --threads T` (run once per thread count, after the rounds).",
                  ""]
    peers = []
    if onednn:
        desc = one_line(next((b["description"] for b in onednn[0]["backends"]
                              if b["name"] == "onednn"), "oneDNN"), 200)
        peers.append(f"oneDNN: {desc}, judged under profile `{profile}`, "
                     f"{args.rounds} rounds alternating with ours in one `qmmcheck bench` "
                     "(its B is passed on every call: it has no prepack, so its `constant` rows "
                     "time the same call as `input`)")
    if ort_rows:
        peers.append(f"ONNX Runtime {ort_version} (CPU EP, `bench/ort_compare.py`, "
                     f"{args.ort_rounds} rounds alternating with `qmmcheck bench`; constant B "
                     "an initializer, prepacked by ORT)")
    busy = [x for x in (mline.split("load average ")[-1].split()[:1] + load_end.split()[:1])]
    cpus = re.search(r"(\d+) CPU\(s\) online", mline)
    if cpus and any(float(x) > int(cpus.group(1)) for x in busy):
        lines += ["**The load average was above the CPU count**: other work shared the cores, "
                  "so rows move between rounds and runs, and a T = 2 row times waiting as much "
                  "as computing (an OpenMP library's barriers, oneDNN's, suffer most when a "
                  "thread has no core)."]
    lines += ["Peers: " + "; ".join(peers) + "." if peers else "Peers: none found.", "",
              "ratio = peer time / our time (> 1: ours is faster), median of the per-round "
              "ratios; times are medians of per-round medians, ms. Each answer was checked "
              "against the reference before timing (FAILED: no ratio).", "",
              "```sh", cmd, "```", "",
              "oneDNN/ours cpu: the same ratio of CPU seconds per call (the process, all "
              "threads; `qmmcheck bench`'s `cpu-ratio`), which leaves out the time a call "
              "waited for a core: on a shared machine it moves far less than the wall ratio.",
              "",
              "bound: the most oneDNN/ours could read on this machine, `qmmcheck bench`'s "
              "`bound` for oneDNN: per round, the int8 peak loop's rate (sampled just before "
              "and after the round) over oneDNN's rate, median. No kernel whose "
              "multiply-accumulates run no faster than the loop's beats oneDNN by more (a kernel "
              "on other units, AMX beside a vector loop, is not bound by it); ours % of peak "
              "is our rate over the same peak; ORT bound the same for ORT (`bench/ort_compare.py`: "
              "the peak of the `qmmcheck bench` run in the same round). —: no bound (a round "
              "ran above the loop, or a report from before bounds).",
              "",
              "| shape | T | B | ours ms | oneDNN ms | oneDNN/ours (per round) | oneDNN/ours cpu "
              "| bound | ours % of peak | ours ms (ORT run) | ORT ms | ORT/ours (per round) "
              "| ORT bound |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by, isa_peak = {}, {}
    for rep in onednn:
        isa_peak[rep["threads"]] = rep.get("isa_peak_gops")
        for r in rep["results"]:
            by.setdefault((r["shape"], rep["threads"], r["b"]), {})[r["backend"].split(":")[0]] = r
    if args.isa:  # the bound and % of peak against that ISA's loop, not this CPU's best
        for (shape, t, b), cell in by.items():
            ops = 2 * math.prod(int(d) for d in shape.split("x"))
            for r in cell.values():
                ok = r.get("status") == "PASSED" and r.get("median_s") and isa_peak.get(t)
                r["bound"] = isa_peak[t] * 1e9 * r["median_s"] / ops if ok else None
    ort_by = {(r["shape"], r["threads"], "constant" if r["b"] == "const" else "input"): r
              for r in ort_rows}
    reach = {"oneDNN": [], "ORT": []}  # rows out of reach, per peer

    def bound_cell(peer, r, where):
        """A peer's bound for the table; a row where 1.05x is out of reach is noted."""
        if not r.get("bound"):
            return "—"
        if r["bound"] < 1.05:
            reach[peer].append(f"{where} ({r['bound']:.4f})")  # the report's digits
        return f"{r['bound']:.2f}"

    for shape in args.shapes:
        for t in args.threads:
            for b in ("input", "constant"):
                cell = by.get((shape, t, b), {})
                ours, dn = cell.get("optimized"), cell.get("onednn")
                o = ort_by.get((shape, t, b))
                row = [shape, str(t), b]
                row.append(fmt_ms(ours["median_s"]) if ours and ours["status"] == "PASSED"
                           else (table_cell(ours["status"]) if ours else "—"))
                if dn and dn["status"] == "PASSED":
                    row.append(fmt_ms(dn["median_s"]))
                    rr = ", ".join(f"{x:.2f}" for x in dn["round_ratio"])
                    row.append(f"**{dn['ratio']:.2f}** ({rr})" if dn["ratio"] else "—")
                    row.append(f"{dn['cpu_ratio']:.2f}" if dn.get("cpu_ratio") else "—")
                    row.append(bound_cell("oneDNN", dn, f"{shape} T={t} B {b}"))
                else:
                    row += [table_cell(dn["status"]) if dn else "—", "—", "—", "—"]
                row.append(f"{100 / ours['bound']:.0f}%" if ours and ours.get("bound") else "—")
                if o:
                    rr = ", ".join(f"{x:.2f}" for x in o["round_ratio"])
                    # the median of the per-round ratios (ort_compare.py's `ratio` was the
                    # ratio of the median times before 2026-11-29: a JSON of then reads right)
                    med = statistics.median(o["round_ratio"]) if o.get("round_ratio") else o["ratio"]
                    row += [fmt_ms(o["ours_s"]), fmt_ms(o["ort_s"]), f"**{med:.2f}** ({rr})",
                            bound_cell("ORT", o, f"{shape} T={t} B {b}")]
                else:
                    row += ["—", "—", "—", "—"]
                lines.append("| " + " | ".join(row) + " |")
    for peer, ran, col in (("oneDNN", onednn, "bound"), ("ORT", ort_rows, "ORT bound")):
        if ran:
            lines += ["", f"Rows where 1.05× against {peer} was out of reach in this run ({col} "
                      "below 1.05): " + (", ".join(reach[peer]) or "none") + "."]
    lines += ["", mark.replace(" -->", " end -->")]
    return "\n".join(lines) + "\n"


def section_key(mach, isa=None):
    """The section a machine's table goes to: its CPU class and model where the report names
    the model. Machines of one class differ: an AMD Zen 4 and a Zen 5 are both avx512-vnni, the
    Zen 5 at twice the int8 rate per cycle, and one must not overwrite the other's table. With
    --isa: that ISA's code on this class and model, a section of its own."""
    key = f"{mach['class']}, {mach['cpu']}" if mach.get("cpu") else mach["class"]
    if isa:
        key = f"{isa} code on {key}"
    return one_line(key, 200)  # one line, no "-->" to end the marker's comment


def update(path, cls, text):
    with open(path) as f:
        doc = f.read()
    begin, end = f"<!-- bench/table.py: {cls} -->", f"<!-- bench/table.py: {cls} end -->"
    if begin in doc and end in doc:
        i, j = doc.index(begin), doc.index(end) + len(end) + 1
        doc = doc[:i] + text + doc[j:]
    else:
        # before the first section: a "## " heading, or another table's marker above its own
        first = re.search(r"^(## |<!-- bench/table\.py: )", doc, re.M)
        i = first.start() if first else len(doc)
        if i > 0 and doc[i - 1] != "\n":  # a file that does not end with a newline
            doc, i = doc[:i] + "\n" + doc[i:], i + 1
        doc = doc[:i] + text + "\n" + doc[i:]
    with open(path + ".tmp", "w") as f:
        f.write(doc)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--qmmcheck", default="build/harness/qmmcheck")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shapes", nargs="+", default=SHAPES)
    ap.add_argument("--rounds", type=int, default=3, help="oneDNN rounds (default 3)")
    ap.add_argument("--ort-rounds", type=int, default=3, help="ORT rounds (default 3)")
    ap.add_argument("--onednn-profile", help="the profile oneDNN is judged under "
                    "(default: the one docs/profiles.md gives for this CPU class)")
    ap.add_argument("--no-onednn", action="store_true")
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--isa", choices=sorted(CAPPED),
                    help="a lower class's code on this machine: ours (QMM_ISA) against oneDNN "
                    "(ONEDNN_MAX_CPU_ISA), no ORT rows; a section of its own")
    ap.add_argument("--update", metavar="FILE", help="replace this class's section of FILE")
    ap.add_argument("--json", help="also write every row here")
    ap.add_argument("--from-json", metavar="FILE",
                    help="make the table from an earlier run's --json (measures nothing)")
    args = ap.parse_args()
    # unusable output paths refused before measuring for minutes, not after
    qmm_requires.outputs(ap, ("--update", args.update,
                              "it replaces a section of an existing file, BENCHMARKS.md"),
                         ("--json", args.json, None))

    if args.from_json:  # a table again from a run's --json, measuring nothing
        with open(args.from_json) as f:
            d = json.load(f)
        args.onednn_profile = d.get("onednn_profile")
        args.isa = d.get("isa")
        # what the run recorded, not this command's defaults: its rounds (a --json from
        # before they were recorded: counted from its per-round ratios), build and commit
        def counted(rows):
            return max((len(r.get("round_ratio") or []) for r in rows), default=0)
        args.rounds = d.get("rounds") or counted(
            [r for rep in d["onednn"] for r in rep.get("results", [])]) or args.rounds
        args.ort_rounds = d.get("ort_rounds") or counted(d["ort"]) or args.ort_rounds
        key = section_key(d["machine"], args.isa)
        text = section(key, d["machine_line"], d["onednn"], d["ort"], d.get("onnxruntime"),
                       args, datetime.datetime.fromisoformat(d["began"]), d["load_end"],
                       d.get("build", "an unrecorded"),
                       d.get("commit", f"not recorded in {os.path.basename(args.from_json)}"))
        print(text)
        if args.update:
            update(args.update, key, text)
        return 0
    began = datetime.datetime.now(datetime.timezone.utc)
    mline, mach = machine(args.qmmcheck)
    cls = mach["class"]
    print(mline, file=sys.stderr)
    onednn = []
    peer = os.path.join(os.path.dirname(os.path.abspath(args.qmmcheck)), "..", "peers",
                        "onednn", "libqmm_peer_onednn.so")
    if not args.no_onednn and os.path.exists(peer):
        args.onednn_profile = (args.onednn_profile or (CAPPED[args.isa][1] if args.isa else
                               ONEDNN_PROFILE.get(cls, "onednn-fp32")))
        for t in args.threads:
            onednn.append(run_onednn(args.qmmcheck, args.shapes, t, args.rounds,
                                     args.onednn_profile, args.isa))
    elif not args.no_onednn:
        print(f"table.py: no oneDNN peer at {peer}: its columns stay empty", file=sys.stderr)
    ort_rows, ort_version = [], None
    if not args.no_ort and not args.isa:
        try:
            sys.path.insert(0, HERE)
            import ort_compare  # noqa: E402 (exits naming what is missing)
            ort_version = ort_compare.ort.__version__
            ort_rows = ort_compare.compare(args.qmmcheck, args.shapes, args.threads,
                                           args.ort_rounds)
        except SystemExit as e:
            print(f"table.py: no ONNX Runtime comparison: {e}", file=sys.stderr)
    with open("/proc/loadavg") as f:
        load_end = " ".join(f.read().split()[:3])
    build, commit = build_type(args.qmmcheck), git_commit()
    text = section(section_key(mach, args.isa), mline, onednn, ort_rows, ort_version, args, began,
                   load_end, build, commit)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": mach, "machine_line": mline, "began": began.isoformat(),
                       "load_end": load_end, "onednn_profile": args.onednn_profile,
                       "isa": args.isa, "rounds": args.rounds, "ort_rounds": args.ort_rounds,
                       "build": build, "commit": commit,
                       "onnxruntime": ort_version, "onednn": onednn, "ort": ort_rows}, f,
                      indent=1)
    if args.update:
        update(args.update, section_key(mach, args.isa), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
