#!/usr/bin/env python3
"""Compare qmmcheck's optimized backend with ONNX Runtime's QLinearMatMul (CPU EP).

    pip install onnxruntime numpy onnx
    python3 bench/ort_compare.py --qmmcheck build/harness/qmmcheck [--threads 1 2]
        [--shapes 1x4096x4096 128x768x768 ...] [--rounds 3] [--json out.json]

For every shape, thread count and B mode (constant: B is an initializer for ORT and prepacked
for ours; input: B is a graph input for ORT and packed on every call by ours), it alternates
rounds of ORT and `qmmcheck bench` (so machine noise hits both alike), takes the median of
each side's per-round medians and prints ours / ORT throughput ratios. Types: u8 a, s8 b, u8 y.
%peak is against the highest peak any round's `qmmcheck bench` reported (each is the best of
short samples, raised to a timed call that beat it), so it never reads above 100. bound is ORT's:
the median over rounds of (that round's peak / ORT's rate in it): no kernel whose
multiply-accumulates run no faster than the peak loop's beats ORT by more in that run.
ORT runs with intra_op_num_threads = T, inter_op_num_threads = 1, sequential execution.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx", "onnxruntime")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SHAPES = ["1x4096x4096", "128x768x768", "512x1024x1024", "1024x1024x1024", "2048x2048x2048"]


def make_model(m, k, n, b_const, b):
    """One QLinearMatMul node, per-tensor parameters as initializers."""
    inits = [
        numpy_helper.from_array(np.array(0.0173, np.float32), "a_scale"),
        numpy_helper.from_array(np.array(131, np.uint8), "a_zero_point"),
        numpy_helper.from_array(np.array(0.0041, np.float32), "b_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "b_zero_point"),
        numpy_helper.from_array(np.array(0.93, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "y_zero_point"),
    ]
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k])]
    if b_const:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.INT8, [k, n]))
    node = helper.make_node(
        "QLinearMatMul",
        ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
         "y_zero_point"],
        ["y"])
    graph = helper.make_graph([node], "qlm", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [m, n])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    model.ir_version = 8
    return model.SerializeToString()


def ort_round(sess, feeds, min_time=1.0, max_reps=200):
    """Warm-up, then timed runs; returns the median seconds of this round."""
    t0 = time.perf_counter()
    for i in range(50):
        sess.run(None, feeds)
        if i >= 1 and time.perf_counter() - t0 > 0.2:
            break
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < min_time and len(times) < max_reps):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ours_round(qmmcheck, shape, threads, b_const):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    cmd = [qmmcheck, "bench", "--backend", "optimized", "--shape", shape, "--types", "u8s8u8",
           "--threads", str(threads), "--report", "json:" + path]
    if b_const:
        cmd.append("--const-b")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        rep = json.load(f)
    os.unlink(path)
    return rep["results"][0]["median_s"], rep["peak"]["gops"]


def compare(qmmcheck, shapes, threads_list, rounds):
    """Every shape x thread count x B mode, ORT and ours alternating; returns the rows."""
    rng = np.random.default_rng(12345)
    rows = []
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}; types u8 x s8 -> u8")
    print(f"{'shape':>16} {'T':>2} {'B':>6} {'ours s':>10} {'ORT s':>10} {'ours GOPS':>10} "
          f"{'ORT GOPS':>9} {'ratio':>6} {'%peak':>6} {'bound':>6}")
    for shape in shapes:
        m, k, n = (int(x) for x in shape.split("x"))
        a = rng.integers(0, 256, size=(m, k), dtype=np.uint8)
        b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
        ops = 2.0 * m * n * k
        for threads in threads_list:
            for b_const in (True, False):
                so = ort.SessionOptions()
                so.intra_op_num_threads = threads
                so.inter_op_num_threads = 1
                so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                sess = ort.InferenceSession(make_model(m, k, n, b_const, b), so,
                                            providers=["CPUExecutionProvider"])
                feeds = {"a": a} if b_const else {"a": a, "b": b}
                ours, theirs, peaks = [], [], []
                for _ in range(rounds):  # alternate: ORT, ours, ORT, ours, ...
                    theirs.append(ort_round(sess, feeds))
                    s, p = ours_round(qmmcheck, shape, threads, b_const)
                    ours.append(s)
                    peaks.append(p)
                o, t = statistics.median(ours), statistics.median(theirs)
                peak = max(peaks)
                row = {"shape": shape, "threads": threads,
                       "b": "const" if b_const else "input", "ours_s": o, "ort_s": t,
                       "ours_gops": ops / o / 1e9, "ort_gops": ops / t / 1e9,
                       # the median of the per-round ratios, as qmmcheck bench's (and the
                       # table's header) say: not the ratio of the median times
                       "ratio": statistics.median(x / y for x, y in zip(theirs, ours)),
                       "peak_gops": peak, "pct_peak": 100.0 * ops / o / 1e9 / peak,
                       "bound": statistics.median(p * 1e9 * x / ops
                                                  for p, x in zip(peaks, theirs)),
                       "round_ratio": [x / y for x, y in zip(theirs, ours)]}
                rows.append(row)
                print(f"{shape:>16} {threads:>2} {row['b']:>6} {o:>10.6f} {t:>10.6f} "
                      f"{row['ours_gops']:>10.1f} {row['ort_gops']:>9.1f} {row['ratio']:>6.2f} "
                      f"{row['pct_peak']:>6.1f} {row['bound']:>6.2f}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--qmmcheck", default="build/harness/qmmcheck")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shapes", nargs="+", default=SHAPES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write all rows here")
    args = ap.parse_args()
    qmm_requires.outputs(ap, ("--json", args.json, None))  # before measuring, not after

    rows = compare(args.qmmcheck, args.shapes, args.threads, args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"onnxruntime": ort.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
