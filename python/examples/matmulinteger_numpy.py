"""An exec: backend in a few lines: MatMulInteger computed exactly with numpy (int64, then
wrapped to int32 as the operator defines). Everything else is UNSUPPORTED.

    qmmcheck run --backend 'exec:.venv/bin/python python/examples/matmulinteger_numpy.py' \
        --vectors vectors/edge/matmulinteger/random
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx")

import numpy as np  # noqa: E402

import qmm_exec  # noqa: E402


def zero_point(inputs, name, axis):
    """A scalar, or one value per row of A (axis -2) or per column of B (axis -1)."""
    zp = inputs.get(name)
    if zp is None:
        return np.int64(0)
    zp = zp.astype(np.int64)
    if zp.ndim == 1 and axis == -2:
        return zp[:, None]
    return zp


def compute(op, attrs, inputs):
    if op.op_type != "MatMulInteger" or op.domain not in ("", "ai.onnx"):
        raise qmm_exec.Unsupported("only MatMulInteger")
    a = inputs["A"].astype(np.int64) - zero_point(inputs, "a_zero_point", -2)
    b = inputs["B"].astype(np.int64) - zero_point(inputs, "b_zero_point", -1)
    try:
        y = np.matmul(a, b)
    except ValueError as exc:
        raise qmm_exec.Invalid(str(exc))
    return y.astype(np.int32)  # wraps modulo 2^32


qmm_exec.serve(compute, name="numpy-matmulinteger",
               description="MatMulInteger with numpy int64, wrapped to int32")
