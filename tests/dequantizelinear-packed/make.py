"""tests/dequantizelinear-packed/make.py: DequantizeLinear node tests with packed sub-byte x and
x_zero_point (int4, uint4, int2, uint2, float4e2m1) per axis and blocked, odd element counts
(a padded last byte), the expected outputs from onnx.reference. onnx's own node tests are all
per tensor; these put a packed zero point at odd offsets. Deterministic (seed 1):

    .venv/bin/python tests/dequantizelinear-packed/make.py    # rewrites the case folders
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx")

import numpy as np  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RANGE = {T.INT4: (-8, 7), T.UINT4: (0, 15), T.INT2: (-2, 1), T.UINT2: (0, 3)}
FLOAT4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
rng = np.random.default_rng(1)


def case(name, xt, shape, sshape, axis, block, opset=21, zp=True, sdt=T.FLOAT):
    npt = helper.tensor_dtype_to_np_dtype(xt)
    if xt == T.FLOAT4E2M1:  # every code, -0 included; its zero point must be 0
        codes = rng.integers(0, 16, size=shape)
        x = np.array(FLOAT4, dtype=np.float32).astype(npt)[codes]
        z = np.zeros(sshape).astype(npt)
    else:
        lo, hi = RANGE[xt]
        x = rng.integers(lo, hi + 1, size=shape).astype(npt)
        z = rng.integers(lo, hi + 1, size=sshape).astype(npt)
    s = (rng.integers(1, 1000, size=sshape) / np.float32(37)).astype(
        helper.tensor_dtype_to_np_dtype(sdt))
    names = ["x", "s"] + (["z"] if zp else [])
    values = [x, s] + ([z] if zp else [])
    types = [xt, sdt, xt]
    attrs = {"axis": axis}
    if block:
        attrs["block_size"] = block
    node = helper.make_node("DequantizeLinear", names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, types[i], list(v.shape))
         for i, (n, v) in enumerate(zip(names, values))],
        [helper.make_tensor_value_info("y", sdt, list(shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    y = ReferenceEvaluator(node, opsets={"": opset}).run(None, dict(zip(names, values)))[0]
    d = os.path.join(HERE, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for i, (n, v) in enumerate(zip(names, values)):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


case("int4_axis0_odd", T.INT4, (5, 3), (5,), 0, 0)
case("uint4_axis1", T.UINT4, (3, 7), (7,), 1, 0)
case("int4_blocked_odd", T.INT4, (3, 7, 3), (3, 3, 3), 1, 3)
case("uint4_blocked_last", T.UINT4, (2, 9), (2, 5), 1, 2)
case("int4_tensor_scalar", T.INT4, (1, 3, 1), (), 1, 0)
case("int2_blocked", T.INT2, (4, 5), (2, 5), 0, 2, opset=25)
case("uint2_axis", T.UINT2, (3, 5), (5,), 1, 0, opset=25)
case("f4_blocked", T.FLOAT4E2M1, (3, 5), (3, 3), 1, 2, opset=23)
case("int4_f16", T.INT4, (3, 5), (5,), 1, 0, sdt=T.FLOAT16)
case("uint4_bf16_nozp", T.UINT4, (3, 5), (3,), 0, 0, zp=False, sdt=T.BFLOAT16)
