#!/usr/bin/env python3
"""Runs a tree of ONNX node-test directories through onnx.reference.ReferenceEvaluator and
onnxruntime (CPU execution provider) and writes a markdown table: per case and runtime, whether
the runtime agrees with the stored output_0.pb (for qmmcheck's edge suites: the exact spec
result from the reference backend), differs (how many elements, max |delta|), or rejects the
input (the error, shortened). Cases whose qmm.meta says `expect = INVALID_ARGUMENT` agree when
the runtime rejects them and diverge when it returns an output.

    pip install onnx onnxruntime numpy
    python3 vectors/crosscheck.py vectors/edge [--out docs/peer-report.md]

QLinearMatMul cases tagged overflow-permitted also accept the result computed from the
int32-wrapped accumulator (docs/semantics.md §2.4); this script recomputes it exactly (Python
integers and fractions) for the 2-D shapes those cases use.
"""
import argparse
import datetime
import os
import re
import sys
from collections import Counter, defaultdict
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx", "onnxruntime")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def read_meta(case_dir):
    meta = {"expect": "OK", "tags": []}
    p = os.path.join(case_dir, "qmm.meta")
    if os.path.exists(p):
        for line in open(p, encoding="utf-8"):
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, v = (s.strip() for s in line.split("=", 1))
            meta[k] = [t.strip() for t in v.split(",")] if k == "tags" else v
    return meta


def find_cases(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        if "model.onnx" in files:
            out.append(d)
            dirs[:] = []
    return sorted(out)


def load_case(case_dir):
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    ds = os.path.join(case_dir, "test_data_set_0")
    inputs, i = [], 0
    while os.path.exists(os.path.join(ds, f"input_{i}.pb")):
        t = onnx.load_tensor(os.path.join(ds, f"input_{i}.pb"))
        inputs.append(numpy_helper.to_array(t))
        i += 1
    names = [n for n in model.graph.node[0].input if n]
    feeds = dict(zip(names, inputs))
    out = os.path.join(ds, "output_0.pb")
    expected = numpy_helper.to_array(onnx.load_tensor(out)) if os.path.exists(out) else None
    return model, feeds, expected


def shorten(msg, n=120):
    msg = re.sub(r"\s+", " ", str(msg)).strip()
    msg = msg.replace("|", "/")
    return msg if len(msg) <= n else msg[: n - 1] + "…"


# ---- the int32-wrapped alternative for overflow-permitted QLinearMatMul cases -------------

def rne(q):
    f = q.numerator // q.denominator
    r = q - f
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2 == 1):
        f += 1
    return f


def wrapped_qlm(model, feeds):
    names = list(model.graph.node[0].input)
    a, sa, za, b, sb, zb, sy, zy = (feeds[n] for n in names)
    if a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]

    def at(p, i, j, role):
        p = np.asarray(p)
        if p.size == 1:
            return p.reshape(-1)[0]
        if role == "a":
            return p.reshape(-1)[i]
        if role == "b":
            return p.reshape(-1)[j]
        return np.broadcast_to(p, (m, n))[i, j]

    lo, hi = (0, 255) if zy.dtype == np.uint8 else (-128, 127)
    y = np.zeros((m, n), dtype=zy.dtype)
    A = a.astype(np.int64)
    B = b.astype(np.int64)
    for i in range(m):
        for j in range(n):
            acc = int(((A[i, :] - int(at(za, i, j, "a"))) * (B[:, j] - int(at(zb, i, j, "b")))).sum())
            acc = (acc + 2**31) % 2**32 - 2**31
            q = (Fraction(float(at(sa, i, j, "a"))) * Fraction(float(at(sb, i, j, "b"))) * acc
                 / Fraction(float(at(sy, i, j, "y"))))
            y[i, j] = min(hi, max(lo, rne(q) + int(at(zy, i, j, "y"))))
    return y


# ---- judging ---------------------------------------------------------------------------------

def judge(got, expected, meta, model, feeds):
    """('agrees'|'differs'|'rejects'|'accepts-invalid', text)"""
    if meta["expect"] != "OK":
        if isinstance(got, Exception):
            return "agrees", "rejects (as required)"
        return "accepts-invalid", "accepts invalid input (returns an output)"
    if isinstance(got, Exception):
        return "rejects", "rejects: " + shorten(got)
    if expected is None:
        return "agrees", "runs (no stored output)"
    got = np.asarray(got)
    if got.shape != expected.shape:
        return "differs", f"differs: shape {list(got.shape)}, spec {list(expected.shape)}"
    if got.dtype != expected.dtype:
        return "differs", f"differs: dtype {got.dtype}, spec {expected.dtype}"
    if np.array_equal(got, expected):
        return "agrees", "agrees"
    if "overflow-permitted" in meta["tags"] and model.graph.node[0].op_type == "QLinearMatMul":
        alt = wrapped_qlm(model, feeds)
        if alt is not None and np.all((got == expected) | (got == alt)):
            return "agrees", "agrees (int32-wrapped result, permitted)"
    delta = np.abs(got.astype(np.int64) - expected.astype(np.int64))
    bad = int((delta != 0).sum())
    return "differs", f"differs: {bad}/{got.size} elements, max \\|Δ\\| {int(delta.max())}"


def ort_error(e):
    """The informative part of an onnxruntime error: its code and the failed check."""
    s = re.sub(r"\s+", " ", str(e)).strip()
    m = re.match(r"\[ONNXRuntimeError\] : \d+ : (\w+) : (.*)", s)
    code, rest = (m.group(1), m.group(2)) if m else ("", s)
    if "was false." in rest:
        rest = rest.split("was false.", 1)[1]
    elif "However the types are incompatible" in rest:
        rest = "no kernel for these types (opset 21 kernel exists for other types)"
    rest = rest.replace(" node with name ''", "").replace(" in node ()", "")
    rest = rest.replace("This is an invalid model. ", "").replace("Node () Op ", "")
    return f"{code}: {rest.strip()}" if code else rest


def run_onnx_ref(model, feeds):
    from onnx.reference import ReferenceEvaluator
    try:
        with np.errstate(all="ignore"):
            return ReferenceEvaluator(model).run(None, feeds)[0]
    except Exception as e:  # the runtime's rejection is data here, not a failure
        return e


def run_ort(model, feeds):
    import onnxruntime as ort
    try:
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        s = ort.InferenceSession(model.SerializeToString(), opts,
                                 providers=["CPUExecutionProvider"])
        return s.run(None, feeds)[0]
    except Exception as e:
        msg = ort_error(e)
        if msg.startswith("NOT_IMPLEMENTED"):
            # ORT does not say which type combination it lacks: name it
            node = model.graph.node[0]
            ins = [n for n in node.input if n]
            types = ", ".join(f"{n} {feeds[n].dtype}" for n in ins
                              if n in ("a", "b", "y_zero_point", "A", "B", "a_scale"))
            opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
            msg = f"NOT_IMPLEMENTED: no {node.op_type}({opset}) CPU kernel for {types}"
        return RuntimeError(msg)


RUNTIMES = [("onnx.reference", run_onnx_ref), ("onnxruntime", run_ort)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="a vector tree (e.g. vectors/edge)")
    ap.add_argument("--out", help="write the markdown here (default: stdout)")
    args = ap.parse_args()
    import onnxruntime

    cases = find_cases(args.root)
    rows = []
    counts = {rt: Counter() for rt, _ in RUNTIMES}
    differs = {rt: defaultdict(list) for rt, _ in RUNTIMES}   # suite -> case names
    rejects = {rt: Counter() for rt, _ in RUNTIMES}           # error -> count
    accepts = {rt: [] for rt, _ in RUNTIMES}                  # case names
    kinds = {rt: Counter() for rt, _ in RUNTIMES}             # tag -> wrong cases
    for d in cases:
        name = os.path.relpath(d, args.root)
        meta = read_meta(d)
        model, feeds, expected = load_case(d)
        cells = []
        for rt, fn in RUNTIMES:
            # three runs: an output that changes between runs (uninitialised memory) is
            # reported as such rather than as whichever value came first
            results = [fn(model, feeds) for _ in range(3)]
            arrays = [np.asarray(r) for r in results if not isinstance(r, Exception)]
            if len(arrays) == 3 and not all(np.array_equal(arrays[0], x) for x in arrays[1:]):
                verdict, text = "differs", "differs: output changes from run to run"
            else:
                verdict, text = judge(results[0], expected, meta, model, feeds)
            if verdict in ("differs", "accepts-invalid"):
                for t in meta["tags"]:
                    generic = re.search(r"^(?:[us]8|int\d+[us]|float8|opset|qlinear|matmul)|int32$|-scales$|"
                                        r"^(?:positive|negative)$", t)
                    if not generic and t != meta["tags"][0]:
                        kinds[rt][t] += 1
            counts[rt][verdict] += 1
            parts = name.split("/")
            suite = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
            if verdict == "differs":
                differs[rt][suite].append(parts[-1])
            elif verdict == "rejects":
                rejects[rt][text[len("rejects: "):]] += 1
            elif verdict == "accepts-invalid":
                accepts[rt].append(name)
            cells.append(text)
        rows.append((name, cells))

    cmd = "python3 vectors/crosscheck.py " + " ".join(sys.argv[1:])
    lines = [
        "# Peer report: ONNX runtimes against the spec",
        "",
        f"- onnx {onnx.__version__} (`onnx.reference.ReferenceEvaluator`), onnxruntime "
        f"{onnxruntime.__version__} (CPUExecutionProvider), numpy {np.__version__}, "
        f"Python {sys.version.split()[0]}",
        f"- command: `{cmd}`",
        f"- date: {datetime.date.today().isoformat()}",
        f"- cases: {len(cases)} under `{args.root}`; the spec answer is each case's stored "
        "`output_0.pb` (for the edge suites: the exact reference, docs/semantics.md) or its "
        "`qmm.meta` `expect = INVALID_ARGUMENT`",
        "",
        "Verdicts: **agrees** — the output equals the spec's, bit for bit (an invalid case "
        "agrees when it is rejected); **differs** — how many elements differ and by how much at "
        "most; **rejects** — the runtime refused a valid case (its error, shortened); "
        "**accepts invalid** — the runtime returned an output for input the spec forbids.",
        "",
        "## Summary",
        "",
        "| runtime | agrees | differs | rejects valid | accepts invalid |",
        "|---|---|---|---|---|",
    ]
    for rt, _ in RUNTIMES:
        c = counts[rt]
        lines.append(f"| {rt} | {c['agrees']} | {c['differs']} | {c['rejects']} | "
                     f"{c['accepts-invalid']} |")
    lines.append("")
    for rt, _ in RUNTIMES:
        lines.append(f"### {rt}")
        lines.append("")
        lines.append("Kinds of case it gets wrong (differs or accepts invalid), by tag: "
                     + (", ".join(f"{t} {n}" for t, n in kinds[rt].most_common()) or "none"))
        lines.append("")
        lines.append(f"Differs from the spec ({counts[rt]['differs']}), by suite:")
        lines.append("")
        for suite in sorted(differs[rt]):
            items = differs[rt][suite]
            lines.append(f"- `{suite}` ({len(items)}): " + ", ".join(items))
        if not differs[rt]:
            lines.append("- none")
        lines.append("")
        lines.append(f"Rejects valid input ({counts[rt]['rejects']}), by error:")
        lines.append("")
        for err, n in sorted(rejects[rt].items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"- {n} × {err}")
        if not rejects[rt]:
            lines.append("- none")
        lines.append("")
        lines.append(f"Accepts invalid input ({counts[rt]['accepts-invalid']}): "
                     + (", ".join(f"`{n}`" for n in accepts[rt]) or "none"))
        lines.append("")
    lines += ["## Cases", "", "| case | " + " | ".join(rt for rt, _ in RUNTIMES) + " |",
              "|---|" + "---|" * len(RUNTIMES)]
    for name, cells in rows:
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
