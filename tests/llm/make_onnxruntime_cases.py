#!/usr/bin/env python3
"""Writes issue 27's edge cases with ONNX Runtime's answers as the stored output: MatMulNBits at
M in {1, 2, 127, 128, 129, 257}, K not a multiple of the block, blocks 16..1024, bits 2/4/8,
every zero-point form, bias or none, accuracy levels 0 and 4 (level 4 run with B, scales and
zero points as constant initializers, which is when ORT takes its int8 path; the case file
feeds them as inputs); DequantizeLinear blocked with a short last block; DynamicQuantizeMatMul
and MatMulIntegerToFloat with per-column b_scale.

    tests/llm/make_onnxruntime_cases.py OUT_DIR [--seed N]
    tests/llm/make_onnxruntime_cases.py OUT_DIR --sweep [--onnx-reference DIR]

tests/llm/onnxruntime/ is its output on a Zen 4 (AVX-512 VNNI); onnxruntime-x86-64-v3/ the
same run under qemu-x86_64 -cpu Haswell-noTSX,-pcid,-x2apic,-tsc-deadline,-invpcid
(docs/cpu.md's x86-64-v3 class), with .venv/bin/python as the program.

tests/test_accept.c judges every stored answer under tests/llm/ (every folder) with the
reference's accepted values (docs/semantics.md §8-§10).

--sweep writes issue 27's configuration sweep instead: each problem (MatMulNBits at M = 1 and
129, bits 2/4/8, blocks 16/32/128/512, every zero-point form, N = 3 and 16;
DequantizeLinear(block_size) -> MatMul with int4/uint4/int8/uint8 B, blocks 32/64/512;
DynamicQuantizeMatMul and MatMulIntegerToFloat with a 2-D and a batched B) run at every accuracy
level 0-4, with B (and its scales and zero points) as initializer and as graph input, at each
graph optimisation level (DISABLE_ALL, BASIC, EXTENDED, ALL), the DequantizeLinear -> MatMul
graph with ORT's default DQ -> MatMulNBits fusion, session.qdq_matmulnbits_accuracy_level 0 and
4, and the fusion off (optimization.disable_specified_optimizers=QDQSelectorActionTransformer,
or session.disable_quant_qdq=1). Each distinct answer is stored once, named after the first
configuration that gave it; OUT_DIR/sweep.txt lists every configuration, the graph ORT ran and
the case holding its answer. The DequantizeLinear -> MatMul answers are stored as the
MatMulNBits level-0 call with the same b-hat: the graph's exact value (docs/semantics.md §8.2).
tests/llm/onnxruntime-sweep/ is its output natively, onnxruntime-sweep-x86-64-v3/ under the
emulated CPU above; tests/llm/onnx-reference/ the onnx package's ReferenceEvaluator's answers
to the same DequantizeLinear -> MatMul graphs (--onnx-reference; it has no com.microsoft
operator). tests/llm/onnxruntime-minimal/ holds hand-reduced cases (qmm.meta says how)."""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.script(__doc__, "numpy", "onnx", "onnxruntime", main=__name__ == "__main__")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

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


def nbits_problem(rng, m, k, n, bits, bs, zp_form, bias):
    """A MatMulNBits problem (model, feeds) as matmulnbits() draws it."""
    kb = (k + bs - 1) // bs
    feeds = [("A", rng.standard_normal((m, k)).astype(f32)),
             ("B", rng.integers(0, 256, (n, kb, bs * bits // 8)).astype(np.uint8)),
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
        names += [""] * (5 - len(names)) + ["bias"]
        feeds.append(("bias", rng.standard_normal(n).astype(f32)))
    node = h.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                       block_size=bs, accuracy_level=0)
    return model_of(node, feeds, "Y", TP.FLOAT), feeds


def with_level(model, level):
    """A copy of the MatMulNBits `model` with accuracy_level `level`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for a in m.graph.node[0].attribute:
        if a.name == "accuracy_level":
            a.i = level
    return m


def matmulnbits(root, rng, m, k, n, bits, bs, level, zp_form, bias):
    model, feeds = nbits_problem(rng, m, k, n, bits, bs, zp_form, bias)
    model = with_level(model, level)
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


# ---- the sweep (--sweep): every way a user can run the same weights through ORT ----

OPT_LEVELS = (("o0", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
              ("o1", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
              ("o2", ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
              ("o99", ort.GraphOptimizationLevel.ORT_ENABLE_ALL))
# the session configurations of the DequantizeLinear(block_size) -> MatMul graph: ORT's default
# (fused into MatMulNBits at level EXTENDED and above, accuracy_level 4), the fused node's level
# forced to 0 or 4, and the fusion off (the QDQ transformer disabled by name; or every QDQ
# transformer off, when constant folding turns DequantizeLinear of an initializer into a float B)
DQ_CONFIGS = (("default", {}),
              ("qdqlevel0", {"session.qdq_matmulnbits_accuracy_level": "0"}),
              ("qdqlevel4", {"session.qdq_matmulnbits_accuracy_level": "4"}),
              ("nofusion", {"optimization.disable_specified_optimizers":
                            "QDQSelectorActionTransformer"}),
              ("noqdq", {"session.disable_quant_qdq": "1"}))


def run_config(model, feeds, consts, opt, config):
    """ORT's answer with `consts` as initializers, graph optimisation `opt` and the session
    `config` entries; the node types and accuracy levels of the graph ORT ran (after its
    optimisations), or (None, the error's tail) when ORT refuses."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [vi for vi in m.graph.input if vi.name not in consts]
    for n, v in feeds:
        if n in consts:
            m.graph.initializer.append(v if isinstance(v, onnx.TensorProto)
                                       else nh.from_array(v, n))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    so = ort.SessionOptions()
    so.graph_optimization_level = opt
    so.log_severity_level = 4
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    with tempfile.TemporaryDirectory() as tmp:
        so.optimized_model_filepath = os.path.join(tmp, "opt.onnx")
        try:
            s = ort.InferenceSession(m.SerializeToString(), so,
                                     providers=["CPUExecutionProvider"])
            y = s.run(None, {n: nh.to_array(v) if isinstance(v, onnx.TensorProto) else v
                             for n, v in feeds if n not in consts})[0]
        except Exception as e:  # noqa: BLE001 - ORT's own exception types
            return None, str(e).splitlines()[0][-160:]
        ran = onnx.load(so.optimized_model_filepath)
    nodes = []
    for node in ran.graph.node:
        lv = [a.i for a in node.attribute if a.name == "accuracy_level"]
        nodes.append(node.op_type + ("(level%d)" % lv[0] if lv else ""))
    return y, "+".join(nodes)


class Sweep:
    """Runs one problem in every configuration and stores each distinct answer once, as a case
    named after the first configuration that gave it (its call the stored model's, at the
    lowest accuracy level that gave it); sweep.txt lists every configuration, the graph ORT ran
    and the case holding its answer (or ORT's refusal)."""

    def __init__(self, root, ref_root=None):
        self.root = root
        self.ref_root = ref_root
        os.makedirs(root, exist_ok=True)
        self.lines = []

    def problem(self, name, runs):
        """runs: (config name, level or None, model ORT runs, its feeds, consts, opt, config)
        for each configuration; the stored case is made by store(level, y) with the answer."""
        seen = []  # [(bytes, case name)]
        for cname, level, model, feeds, consts, opt, config, store in runs:
            y, ran = run_config(model, feeds, consts, opt, config)
            if y is None:
                self.lines.append(f"{name}\t{cname}\tREFUSED\t{ran}")
                continue
            key = y.tobytes() + str(y.shape).encode()
            hit = [c for b, c in seen if b == key]
            if hit:
                case = hit[0]
            else:
                case = f"{name}--{cname}"
                seen.append((key, case))
                store(os.path.join(self.root, case), level, y)
            self.lines.append(f"{name}\t{cname}\t{case}\t{ran}")

    def close(self):
        with open(os.path.join(self.root, "sweep.txt"), "w") as f:
            f.write("# problem\tconfiguration (level, b=initializer|input, optimisation, "
                    "session config)\tcase holding its answer\tthe graph ORT ran\n")
            f.write("\n".join(self.lines) + "\n")


def store_as(model, feeds, out_name):
    def store(d, level, y):
        m = with_level(model, level) if level is not None else model
        write(os.path.dirname(d), os.path.basename(d), m, feeds, y, out_name)
    return store


def sweep_nbits(sw, rng, m, k, n, bits, bs, zp_form, bias):
    base, feeds = nbits_problem(rng, m, k, n, bits, bs, zp_form, bias)
    name = f"matmulnbits-m{m}-k{k}-n{n}-bits{bits}-bs{bs}-zp_{zp_form}" + ("-bias" if bias else "")
    runs = []
    for level in range(5):
        model = with_level(base, level)
        for bmode, consts in (("init", {"B", "scales", "zero_points"}), ("input", set())):
            for oname, opt in OPT_LEVELS:
                runs.append((f"level{level}-{bmode}-{oname}", level, model, feeds, consts, opt,
                             {}, store_as(base, feeds, "Y")))
    sw.problem(name, runs)


def pack_codes(codes, bits):
    """codes [N, kb, bs] (unsigned) -> uint8 [N, kb, bs*bits/8], low bits first."""
    per = 8 // bits
    c = codes.reshape(codes.shape[0], codes.shape[1], -1, per).astype(np.uint16)
    out = np.zeros(c.shape[:3], np.uint16)
    for j in range(per):
        out |= c[..., j] << (bits * j)
    return out.astype(np.uint8)


def sweep_dq_matmul(sw, rng, m, k, n, qtype, bs):
    """DequantizeLinear(B, scale, zero point; axis 0, block_size) -> MatMul, B [K, N] of qtype
    (int4, uint4, int8, uint8), its answers stored as the MatMulNBits level-0 call with the
    same b-hat (codes shifted to unsigned, zero points likewise, scales transposed): that is the
    graph's exact value (docs/semantics.md §8.2)."""
    bits = 4 if qtype in ("int4", "uint4") else 8
    signed = qtype in ("int4", "int8")
    lo = -(1 << (bits - 1)) if signed else 0
    kb = (k + bs - 1) // bs
    q = rng.integers(lo, lo + (1 << bits), (k, n))
    zp = rng.integers(lo, lo + (1 << bits), (kb, n))
    s = (rng.standard_normal((kb, n)) * 0.05).astype(f32)
    a = rng.standard_normal((m, k)).astype(f32)
    tp = {"int4": TP.INT4, "uint4": TP.UINT4, "int8": TP.INT8, "uint8": TP.UINT8}[qtype]
    b_t = h.make_tensor("B", tp, [k, n], q.flatten().tolist())
    zp_t = h.make_tensor("zp", tp, [kb, n], zp.flatten().tolist())
    dq = h.make_node("DequantizeLinear", ["B", "scale", "zp"], ["Bh"], axis=0, block_size=bs)
    mm = h.make_node("MatMul", ["A", "Bh"], ["Y"])
    ins = [h.make_tensor_value_info("A", TP.FLOAT, [m, k]),
           h.make_tensor_value_info("B", tp, [k, n]),
           h.make_tensor_value_info("scale", TP.FLOAT, [kb, n]),
           h.make_tensor_value_info("zp", tp, [kb, n])]
    g = h.make_graph([dq, mm], "g", ins, [h.make_tensor_value_info("Y", TP.FLOAT, None)])
    graph = h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10)
    dq_feeds = [("A", a), ("B", b_t), ("scale", s), ("zp", zp_t)]
    # the MatMulNBits call with the same b-hat
    shift = -lo
    codes = np.zeros((n, kb * bs), np.int64)
    codes[:, :k] = (q + shift).T
    zpu = (zp + shift).T  # [N, kb]
    if bits == 4:
        zpad = np.zeros((n, kb + (kb & 1)), np.int64)
        zpad[:, :kb] = zpu
        packed_zp = (zpad[:, 0::2] | (zpad[:, 1::2] << 4)).astype(np.uint8)
    else:
        packed_zp = zpu.astype(np.uint8)
    nb_feeds = [("A", a), ("B", pack_codes(codes.reshape(n, kb, bs), bits)),
                ("scales", np.ascontiguousarray(s.T)), ("zero_points", packed_zp)]
    node = h.make_node("MatMulNBits", ["A", "B", "scales", "zero_points"], ["Y"],
                       domain="com.microsoft", K=k, N=n, bits=bits, block_size=bs,
                       accuracy_level=0)
    nb_model = model_of(node, nb_feeds, "Y", TP.FLOAT)
    name = f"dq-matmul-m{m}-k{k}-n{n}-{qtype}-bs{bs}"
    runs = []
    # ORT's Python API feeds no int4/uint4 input (numpy has no such type): 4-bit B is an
    # initializer only, which is also the only form ORT fuses
    bmodes = (("init", {"B", "scale", "zp"}),) + ((("input", set()),) if bits == 8 else ())
    for bmode, consts in bmodes:
        for oname, opt in OPT_LEVELS:
            for cname, config in DQ_CONFIGS:
                runs.append((f"{bmode}-{oname}-{cname}", 0, graph, dq_feeds, consts, opt, config,
                             store_as(nb_model, nb_feeds, "Y")))
    sw.problem(name, runs)
    # the onnx package's ReferenceEvaluator runs the unfused graph (it has no com.microsoft
    # operators): its answer, judged the same way
    ref = ReferenceEvaluator(graph).run(None, {"A": a, "B": nh.to_array(b_t), "scale": s,
                                                "zp": nh.to_array(zp_t)})[0]
    if sw.ref_root:
        store_as(nb_model, nb_feeds, "Y")(os.path.join(sw.ref_root, name), 0, ref)


def sweep_integer_to_float(sw, rng, op, m, k, n, batch=None, b_zp=True):
    """DynamicQuantizeMatMul / MatMulIntegerToFloat with a per-column b_scale [N]; with `batch`
    B is [batch, K, N], a shape ORT's IsBQuantParamSupported refuses for a [N] b_scale, so ORT
    takes its fallback: the matmul with a_scale alone, then the output times b_scale."""
    bshape = (k, n) if batch is None else (batch, k, n)
    feeds_b = [("B", rng.integers(-128, 128, bshape).astype(np.int8))]
    b_scale = (np.abs(rng.standard_normal(n)) * 0.01 + 0.001).astype(f32)
    zp = [("b_zero_point", rng.integers(-3, 3, n).astype(np.int8))] if b_zp else []
    bias = [("bias", rng.standard_normal(n).astype(f32))]
    if op == "DynamicQuantizeMatMul":
        feeds = [("A", rng.standard_normal((m, k)).astype(f32))] + feeds_b + \
            [("b_scale", b_scale)] + zp + bias
        names = [nm for nm, _ in feeds[:3]] + ["b_zero_point" if zp else "", "bias"]
    else:
        feeds = [("A", rng.integers(0, 256, (m, k)).astype(np.uint8))] + feeds_b + \
            [("a_scale", np.array([0.02], f32)), ("b_scale", b_scale),
             ("a_zero_point", np.array([128], np.uint8))] + zp + bias
        names = [nm for nm, _ in feeds[:5]] + ["b_zero_point" if zp else "", "bias"]
    node = h.make_node(op, names, ["Y"], domain="com.microsoft")
    model = model_of(node, feeds, "Y", TP.FLOAT)
    name = f"{op.lower()}-m{m}-k{k}-n{n}" + (f"-batch{batch}" if batch else "") + "-per-column"
    runs = []
    for bmode, consts in (("init", {"B", "b_scale", "b_zero_point"}), ("input", set())):
        for oname, opt in OPT_LEVELS:
            runs.append((f"{bmode}-{oname}", None, model, feeds, consts, opt, {},
                         store_as(model, feeds, "Y")))
    sw.problem(name, runs)


def sweep(root, rng, ref_root):
    sw = Sweep(root, ref_root)
    # onnxruntime 29853: AVX2, M = 1, level 4, asymmetric 4-bit; M = 129 runs the M = 1 kernel
    # on its last row
    sweep_nbits(sw, rng, 1, 83, 3, 4, 32, "packed", True)
    sweep_nbits(sw, rng, 129, 83, 3, 4, 32, "packed", False)
    sweep_nbits(sw, rng, 2, 83, 3, 8, 32, "absent", True)
    sweep_nbits(sw, rng, 1, 83, 3, 2, 32, "packed", False)
    sweep_nbits(sw, rng, 1, 83, 3, 4, 16, "float", False)
    # onnxruntime 28551: block 512 (MLAS's kernels are for blocks 16..256)
    sweep_nbits(sw, rng, 1, 771, 3, 4, 512, "packed", True)
    sweep_nbits(sw, rng, 2, 771, 3, 8, 512, "absent", False)
    for qtype, bs, m in (("int4", 32, 1), ("uint4", 32, 2), ("uint4", 512, 1), ("int8", 32, 1),
                         ("uint8", 64, 2)):
        sweep_dq_matmul(sw, rng, m, bs + bs // 2 + 3, 3, qtype, bs)
    for op in ("DynamicQuantizeMatMul", "MatMulIntegerToFloat"):
        sweep_integer_to_float(sw, rng, op, 3, 45, 4)
        sweep_integer_to_float(sw, rng, op, 3, 45, 4, batch=2, b_zp=False)
    # the same at sizes where MLAS's main loops run, not only their remainders: N = 16 columns
    # (kernels take 4 or more at a time), K of 8 to 32 blocks
    sweep_nbits(sw, rng, 1, 1000, 16, 4, 32, "packed", True)
    sweep_nbits(sw, rng, 1, 1000, 16, 4, 128, "packed", False)
    sweep_nbits(sw, rng, 1, 1100, 16, 4, 512, "packed", True)
    sweep_nbits(sw, rng, 129, 300, 16, 4, 32, "packed", False)
    sw.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--sweep", action="store_true",
                    help="write the configuration sweep (README: --sweep) instead")
    ap.add_argument("--onnx-reference", metavar="DIR",
                    help="with --sweep: the onnx package's ReferenceEvaluator's answers to the "
                         "DequantizeLinear -> MatMul graphs, in DIR")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.sweep:
        sweep(args.out, rng, args.onnx_reference)
        return 0
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
