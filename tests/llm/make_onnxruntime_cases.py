#!/usr/bin/env python3
"""Writes issue 27's edge cases with ONNX Runtime's answers as the stored output: MatMulNBits at
M in {1, 2, 127, 128, 129, 257}, K not a multiple of the block, blocks 16..1024, bits 2/4/8,
every zero-point form, bias or none, accuracy levels 0 and 4 (level 4 run with B, scales and
zero points as constant initializers, which is when ORT takes its int8 path; the case file
feeds them as inputs); DequantizeLinear blocked with a short last block; DynamicQuantizeMatMul
and MatMulIntegerToFloat with per-column b_scale.

    tests/llm/make_onnxruntime_cases.py OUT_DIR [--seed N]

tests/llm/onnxruntime/ is its output on a Zen 4 (AVX-512 VNNI); onnxruntime-x86-64-v3/ the
same run under qemu-x86_64 -cpu Haswell-noTSX,-pcid,-x2apic,-tsc-deadline,-invpcid
(docs/cpu.md's x86-64-v3 class), with .venv/bin/python as the program.

tests/test_accept.c judges every stored answer under tests/llm/onnxruntime/ with the
reference's accepted values (docs/semantics.md §8-§10)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import qmm_requires  # noqa: E402

if __name__ == "__main__" and ("-h" in sys.argv or "--help" in sys.argv):
    print(__doc__)
    sys.exit(0)

qmm_requires.modules("numpy", "onnx", "onnxruntime")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

f32 = np.float32
NP_TYPE = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.uint8): TP.UINT8,
           np.dtype(np.int8): TP.INT8, np.dtype(np.float16): TP.FLOAT16}


def model_of(node, feeds, out_name, out_type, ms_domain=True):
    ins = [h.make_tensor_value_info(n, NP_TYPE[v.dtype], list(v.shape)) for n, v in feeds]
    g = h.make_graph([node], "g", ins, [h.make_tensor_value_info(out_name, out_type, None)])
    ops = [h.make_opsetid("", 21)] + ([h.make_opsetid("com.microsoft", 1)] if ms_domain else [])
    m = h.make_model(g, opset_imports=ops)
    m.ir_version = 10
    return m


def run(model, feeds, as_initializers=()):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [vi for vi in m.graph.input if vi.name not in as_initializers]
    for n, v in feeds:
        if n in as_initializers:
            m.graph.initializer.append(nh.from_array(v, n))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {n: v for n, v in feeds if n not in as_initializers})[0]


def write(root, name, model, feeds, out, out_name):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, v) in enumerate(feeds):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(nh.from_array(v, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(nh.from_array(out, out_name).SerializeToString())


def matmulnbits(root, rng, m, k, n, bits, bs, level, zp_form, bias):
    kb = (k + bs - 1) // bs
    blob = bs * bits // 8
    feeds = [("A", rng.standard_normal((m, k)).astype(f32)),
             ("B", rng.integers(0, 256, (n, kb, blob)).astype(np.uint8)),
             ("scales", (rng.standard_normal((n, kb)) * 0.05).astype(f32))]
    names = ["A", "B", "scales"]
    if zp_form == "packed":
        feeds.append(("zero_points", rng.integers(0, 256, (n, (kb * bits + 7) // 8))
                      .astype(np.uint8)))
        names.append("zero_points")
    elif zp_form == "float":
        feeds.append(("zero_points", (rng.integers(0, 2 ** bits, (n, kb)) + 0.5).astype(f32)))
        names.append("zero_points")
    if bias:
        while len(names) < 5:
            names.append("")
        names.append("bias")
        feeds.append(("bias", rng.standard_normal(n).astype(f32)))
    node = h.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                       block_size=bs, accuracy_level=level)
    model = model_of(node, feeds, "Y", TP.FLOAT)
    consts = {"B", "scales", "zero_points"} if level == 4 else set()
    try:
        y = run(model, feeds, consts)
    except Exception as e:  # noqa: BLE001 - ORT's own exception types
        print(f"skip m{m} k{k} n{n} bits{bits} bs{bs} l{level} {zp_form}: {str(e)[-90:]}")
        return
    name = f"matmulnbits-m{m}-k{k}-n{n}-bits{bits}-bs{bs}-level{level}-zp_{zp_form}" + \
        ("-bias" if bias else "")
    write(root, name, model, feeds, y, "Y")


def dequantizelinear(root, rng):
    x = rng.integers(-128, 128, (5, 37)).astype(np.int8)
    feeds = [("x", x), ("x_scale", rng.standard_normal((5, 3)).astype(f32)),
             ("x_zero_point", rng.integers(-8, 8, (5, 3)).astype(np.int8))]
    node = h.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["y"], axis=1,
                       block_size=16)
    model = model_of(node, feeds, "y", TP.FLOAT, ms_domain=False)
    write(root, "dequantizelinear-blocked-5x37-bs16", model, feeds, run(model, feeds), "y")


def integer_to_float(root, rng, op, m, k, n):
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    b_scale = (np.abs(rng.standard_normal(n)) * 0.01).astype(f32)
    b_zp = rng.integers(-3, 3, n).astype(np.int8)
    bias = rng.standard_normal(n).astype(f32)
    if op == "DynamicQuantizeMatMul":
        feeds = [("A", rng.standard_normal((m, k)).astype(f32)), ("B", b),
                 ("b_scale", b_scale), ("b_zero_point", b_zp), ("bias", bias)]
    else:
        feeds = [("A", rng.integers(0, 256, (m, k)).astype(np.uint8)), ("B", b),
                 ("a_scale", np.array([0.02], f32)), ("b_scale", b_scale),
                 ("a_zero_point", np.array([128], np.uint8)), ("b_zero_point", b_zp),
                 ("bias", bias)]
    node = h.make_node(op, [nm for nm, _ in feeds], ["Y"], domain="com.microsoft")
    model = model_of(node, feeds, "Y", TP.FLOAT)
    write(root, f"{op.lower()}-m{m}-k{k}-n{n}-per-column", model, feeds, run(model, feeds), "Y")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    for m in (1, 2, 127, 128, 129, 257):
        matmulnbits(args.out, rng, m, 83, 3, 4, 32, 4, "packed", m == 129)
    for bits in (2, 4, 8):
        for bs in (16, 32, 64, 128, 256, 512, 1024):
            for level in (0, 4):
                k = bs + bs // 2 + 3  # K % block != 0: a short last block
                zp = ("packed", "absent", "float")[(bits + bs + level) % 3]
                matmulnbits(args.out, rng, 1 if level == 4 else 2, k, 3, bits, bs, level, zp,
                            bs % 64 == 0)
    dequantizelinear(args.out, rng)
    for op in ("DynamicQuantizeMatMul", "MatMulIntegerToFloat"):
        integer_to_float(args.out, rng, op, 3, 45, 4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
