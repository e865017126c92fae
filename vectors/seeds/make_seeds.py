#!/usr/bin/env python3
"""Writes the worked examples from the operator documents as ONNX node-test directories.

Run from anywhere: `python3 vectors/seeds/make_seeds.py` (needs `pip install onnx numpy`).
The output is committed; qmmcheck itself never needs Python. Every expected output below is
the one the cited document states, not one computed here.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def write_case(name, op_type, opset, inputs, outputs, meta):
    d = os.path.join(HERE, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    in_names = [n for n, _ in inputs]
    out_names = [n for n, _ in outputs]
    node = helper.make_node(op_type, in_names, out_names)
    def vi(n, a):
        return helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
    graph = helper.make_graph([node], name, [vi(n, a) for n, a in inputs],
                              [vi(n, a) for n, a in outputs])
    model = helper.make_model(graph, producer_name="qmmcheck-seeds",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 5
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (n, a) in enumerate(outputs):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "qmm.meta"), "w") as f:
        for k, v in meta.items():
            f.write(f"{k} = {v}\n")


def f32(x):
    return np.array(x, dtype=np.float32)


def main():
    # ONNX operator documentation, QLinearMatMul example (docs/Operators.md, "qlinearmatmul").
    write_case(
        "onnx-doc-qlinearmatmul-2d", "QLinearMatMul", 10,
        [("a", np.array([[208, 236, 0, 238], [3, 214, 255, 29]], np.uint8)),
         ("a_scale", f32([0.0066])), ("a_zero_point", np.array([113], np.uint8)),
         ("b", np.array([[152, 51, 244], [60, 26, 255], [0, 127, 246], [127, 254, 247]], np.uint8)),
         ("b_scale", f32([0.00705])), ("b_zero_point", np.array([114], np.uint8)),
         ("y_scale", f32([0.0107])), ("y_zero_point", np.array([118], np.uint8))],
        [("y", np.array([[168, 115, 255], [1, 66, 151]], np.uint8))],
        {"tags": "seed, onnx-doc, u8u8u8, per-tensor",
         "provenance": "ONNX operator documentation, QLinearMatMul example",
         "description": "the worked 2-D example of the ONNX QLinearMatMul page"})

    # ONNX operator documentation, MatMulInteger example.
    write_case(
        "onnx-doc-matmulinteger", "MatMulInteger", 10,
        [("A", np.array([[11, 7, 3], [10, 6, 2], [9, 5, 1], [8, 4, 0]], np.uint8)),
         ("B", np.array([[1, 4], [2, 5], [3, 6]], np.uint8)),
         ("a_zero_point", np.array([12], np.uint8)), ("b_zero_point", np.array([0], np.uint8))],
        [("Y", np.array([[-38, -83], [-44, -98], [-50, -113], [-56, -128]], np.int32))],
        {"tags": "seed, onnx-doc, u8u8, per-tensor",
         "provenance": "ONNX operator documentation, MatMulInteger example",
         "description": "the worked example of the ONNX MatMulInteger page"})

    # Orion (Cairo ML framework) documentation, qlinear_matmul example: int8 throughout.
    write_case(
        "orion-doc-qlinear-matmul", "QLinearMatMul", 21,
        [("a", np.array([[3, 4, 5], [2, 4, 3]], np.int8)),
         ("a_scale", f32([2.0])), ("a_zero_point", np.array([1], np.int8)),
         ("b", np.array([[4], [8], [4]], np.int8)),
         ("b_scale", f32([0.25])), ("b_zero_point", np.array([0], np.int8)),
         ("y_scale", f32([6.0])), ("y_zero_point", np.array([10], np.int8))],
        [("y", np.array([[14], [13]], np.int8))],
        {"tags": "seed, orion-doc, s8s8s8, per-tensor",
         "provenance": "Orion documentation, operators/neural-network/nn.qlinear_matmul example",
         "description": "acc = [48, 36], scale 2*0.25/6 = 1/12, so [4, 3] + 10"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
