"""peers/onnx-reference/backend.py: onnx.reference.ReferenceEvaluator as a qmmcheck peer.

Each call is one ONNX node (the call's operator, domain, opset, attributes and input names)
evaluated by onnx's Python reference implementation with the call's inputs; its output is the
answer, as the evaluator returns it. Run it through the exec: backend (docs/exec-protocol.md):

    qmmcheck run --backend "exec:.venv/bin/python peers/onnx-reference/backend.py" --vectors vectors

onnx.reference implements ai.onnx only: com.microsoft QOrderedMatMul is UNSUPPORTED. Whatever
the evaluator raises for a call ("Invalid integer data type" for float8, numpy's broadcast
errors) is its rejection: INVALID_ARGUMENT with the exception's type and message, which the
harness counts as FAILED for a call the spec says is valid. It is numpy through and through, so
its results do not depend on the CPU; threads=N (from --determinism) is accepted and changes
nothing.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx")

import onnx  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import qmm_exec  # noqa: E402


def start(options):
    for key, value in options.items():
        if not (key == "threads" and value.isdigit()):
            raise qmm_exec.Invalid("unknown option %s=%s (threads=N, which changes nothing)"
                                   % (key, value))


def query(op, attrs):
    if op.domain not in ("", "ai.onnx"):
        raise qmm_exec.Unsupported("onnx.reference %s implements the ai.onnx operators only, "
                                   "not %s.%s" % (onnx.__version__, op.domain, op.op_type))


def compute(op, attrs, inputs):
    query(op, attrs)
    node = helper.make_node(op.op_type, op.input_names, [op.output_name], **attrs)
    try:
        evaluator = ReferenceEvaluator(node, opsets={"": op.opset})
        return evaluator.run(None, inputs)[0]
    except Exception as exc:  # noqa: whatever it raises is its rejection of the call
        raise qmm_exec.Invalid("onnx.reference %s: %s: %s"
                               % (onnx.__version__, type(exc).__name__, exc))


if __name__ == "__main__":
    qmm_exec.serve(compute, name="onnx-reference-%s" % onnx.__version__, query=query, start=start,
                   description="onnx %s onnx.reference.ReferenceEvaluator (numpy; CPU-independent)"
                               % onnx.__version__)
