#!/usr/bin/env python3
"""Compare the optimized backend's MatMulNBits with ONNX Runtime's (com.microsoft, CPU EP).

    python3 bench/ort_nbits.py --driver build/optimized/qmm_nbits_bench [--threads 2]
        [--rounds 3] [--levels 0 4] [--blocks 32 128] [--json out.json]

Shapes: M in {1, 128} times (K, N) in {(4096, 4096), (4096, 11008), (11008, 4096)}, 4-bit,
packed uint8 zero points, float A, no bias. ORT gets B, scales and zero points as constant
initializers (so it prepacks them once, at session creation, and level 4 takes its int8
path); ours gets them on every call (no prepacking: unpacking is inside every timed call).
Rounds alternate ORT and ours (machine noise hits both alike); each round's figure is the
median of its timed calls; the table gives the median of the rounds and ours / ORT speed.
ORT runs with intra_op_num_threads = T, inter_op_num_threads = 1, sequential execution.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx", "onnxruntime")

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

KN = [(4096, 4096), (4096, 11008), (11008, 4096)]


def make_model(m, k, n, bs, level):
    kb = (k + bs - 1) // bs
    rng = np.random.default_rng(1)
    b = rng.integers(0, 256, size=(n, kb, bs // 2), dtype=np.uint8)
    scales = (0.01 + 0.001 * (np.arange(n * kb) % 7)).astype(np.float32)
    zp = rng.integers(0, 256, size=(n, (kb * 4 + 7) // 8), dtype=np.uint8)
    inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "scales"),
             numpy_helper.from_array(zp, "zp")]
    node = helper.make_node("MatMulNBits", ["A", "B", "scales", "zp"], ["Y"],
                            domain="com.microsoft", K=k, N=n, bits=4, block_size=bs,
                            accuracy_level=level)
    g = helper.make_graph([node], "nb",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21),
                                                helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    return model.SerializeToString()


def ort_round(sess, a, calls):
    sess.run(None, {"A": a})
    sess.run(None, {"A": a})
    t = []
    for _ in range(calls):
        t0 = time.perf_counter()
        sess.run(None, {"A": a})
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def ours_round(driver, m, k, n, bs, level, threads, calls):
    out = subprocess.run([driver, str(m), str(k), str(n), str(bs), "4", str(level),
                          str(threads), str(calls)], check=True, capture_output=True, text=True)
    return float(out.stdout.split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", default="build/optimized/qmm_nbits_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 4])
    ap.add_argument("--blocks", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 128])
    ap.add_argument("--json")
    args = ap.parse_args()
    qmm_requires.outputs(ap, ("--json", args.json, None))  # before measuring, not after
    rows = []
    print("| M | K | N | block | level | ORT ms | ours ms | ours/ORT speed |")
    print("|---|---|---|---|---|---|---|---|")
    for m in args.ms:
        for k, n in KN:
            for bs in args.blocks:
                for level in args.levels:
                    so = ort.SessionOptions()
                    so.intra_op_num_threads = args.threads
                    so.inter_op_num_threads = 1
                    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    sess = ort.InferenceSession(make_model(m, k, n, bs, level), so,
                                                providers=["CPUExecutionProvider"])
                    a = np.random.default_rng(2).uniform(-0.5, 0.5, (m, k)).astype(np.float32)
                    calls = 20 if m == 1 else 5
                    o, q = [], []
                    for _ in range(args.rounds):
                        o.append(ort_round(sess, a, calls))
                        q.append(ours_round(args.driver, m, k, n, bs, level, args.threads,
                                            calls))
                    om, qm = statistics.median(o), statistics.median(q)
                    rows.append(dict(m=m, k=k, n=n, block=bs, level=level, ort_ms=om,
                                     ours_ms=qm, ort_rounds=o, ours_rounds=q))
                    print(f"| {m} | {k} | {n} | {bs} | {level} | {om:.3f} | {qm:.3f} | "
                          f"{om / qm:.2f}x |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
