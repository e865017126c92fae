"""peers/onnxruntime/backend.py: ONNX Runtime's CPU execution provider as a qmmcheck peer.

Each call becomes a one-node ONNX model (the call's operator, domain, opset, attributes and
input names), run by an InferenceSession on CPUExecutionProvider; its output is the answer, as
ORT returns it. Run it through the exec: backend (docs/exec-protocol.md):

    qmmcheck run --backend "exec:.venv/bin/python peers/onnxruntime/backend.py" --vectors vectors
    qmmcheck run --backend "exec,b=input:.venv/bin/python peers/onnxruntime/backend.py" ...

Options (from exec,OPTIONS:..., README.md): b=initializer (default: B is a constant, which ORT
prepacks, as in a deployed model) or b=input (B is fed at run time: the unpacked path);
threads=N (intra-op threads, default 1, so that a run is reproducible; --determinism asks for 2).

ORT's own errors are answers, never a crash of this process: NOT_IMPLEMENTED (no CPU kernel for
these types, or for the operator) is UNSUPPORTED with ORT's message, so the case is SKIPPED
with it; every other ORT error is a rejection, INVALID_ARGUMENT with ORT's message, which the
harness counts as FAILED ("answered INVALID_ARGUMENT for a valid call") when the spec says the
call is valid, and as agreeing when the spec rejects it too.
"""
import collections
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import qmm_requires  # noqa: E402

qmm_requires.modules("numpy", "onnx", "onnxruntime")

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import helper  # noqa: E402

import qmm_exec  # noqa: E402

# The flags MLAS dispatches its integer GEMM kernels on (x86): which one ran decides what a
# u8·s8 product accumulates through (AVX2's int16 pair sums, or VNNI / AMX dot products).
MLAS_FLAGS = ("avx2", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")
SESSION_CACHE_SIZE = 32
IR_VERSION = 10  # opset 21 needs IR 10; ORT 1.32 reads it

# ORT's exception classes that mean "no kernel": a reason, not a rejection.
_NOT_IMPLEMENTED = ort.capi.onnxruntime_pybind11_state.NotImplemented
_ORT_ERRORS = (ort.capi.onnxruntime_pybind11_state.Fail,
               ort.capi.onnxruntime_pybind11_state.InvalidArgument,
               ort.capi.onnxruntime_pybind11_state.InvalidGraph,
               ort.capi.onnxruntime_pybind11_state.RuntimeException,
               ort.capi.onnxruntime_pybind11_state.EPFail,
               _NOT_IMPLEMENTED)

settings = {"b": "initializer", "threads": 1}
sessions = collections.OrderedDict()  # signature -> InferenceSession, least recently used first


def cpu_flags():
    """The MLAS-relevant flags of the first CPU in /proc/cpuinfo (none elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in MLAS_FLAGS if flag in present]
    except OSError:
        pass
    return []


def start(options):
    for key, value in options.items():
        if key == "b" and value in ("initializer", "input"):
            settings["b"] = value
        elif key == "threads" and value.isdigit() and int(value) >= 1:
            settings["threads"] = int(value)
        else:
            raise qmm_exec.Invalid("unknown option %s=%s (b=initializer|input, threads=N)"
                                   % (key, value))


def b_constant(op):
    """The name of the input held as an initializer: B of a QLinearMatMul or MatMulInteger when
    b=initializer; None otherwise."""
    if settings["b"] != "initializer":
        return None
    name = {"QLinearMatMul": "b", "MatMulInteger": "B"}.get(op.op_type)
    return name if name in op.input_specs else None


def build_model(op, attrs, constant=None):
    """One node, its inputs graph inputs of exactly the call's types and shapes (or `constant`,
    an initializer), its output untyped so that ORT's inference decides its type and shape.
    DequantizeLinear's output_dtype 0 means unset and is left out: opsets 21 and 22 do not
    define it, and ORT rejects the model that names it."""
    attrs = {k: v for k, v in attrs.items() if not (k == "output_dtype" and v == 0)}
    node = helper.make_node(op.op_type, op.input_names, [op.output_name], domain=op.domain,
                            **attrs)
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dtype), shape)
              for name, (dtype, shape) in op.input_specs.items()
              if constant is None or name != constant.name]
    graph = helper.make_graph([node], "qmmcheck", inputs, [onnx.ValueInfoProto(name=op.output_name)],
                              initializer=[constant] if constant is not None else [])
    opsets = [helper.make_opsetid(op.domain, op.opset)]
    if op.domain not in ("", "ai.onnx"):
        opsets.append(helper.make_opsetid("", 21))
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def session_for(op, attrs, inputs):
    """A session for this call, from the cache when the signature (and a constant B's bytes)
    was seen before."""
    b_name = b_constant(op)
    constant = None
    key = (op.domain, op.op_type, op.opset, tuple(sorted(attrs.items())), tuple(op.input_names),
           tuple((n, str(d), s) for n, (d, s) in op.input_specs.items()), settings["b"])
    if b_name and inputs:
        constant = onnx.numpy_helper.from_array(inputs[b_name], b_name)
        key += (hashlib.sha256(constant.raw_data).hexdigest(),)
    if key in sessions:
        sessions.move_to_end(key)
        return sessions[key], b_name
    so = ort.SessionOptions()
    so.intra_op_num_threads = settings["threads"]
    so.inter_op_num_threads = 1
    so.log_severity_level = 4  # fatal only: errors are answered with their message
    model = build_model(op, attrs, constant)
    session = ort.InferenceSession(model.SerializeToString(), so,
                                   providers=["CPUExecutionProvider"])
    sessions[key] = session
    if len(sessions) > SESSION_CACHE_SIZE:
        sessions.popitem(last=False)
    return session, b_name


def answer_error(exc):
    """An ORT error as the protocol's answer: no kernel is UNSUPPORTED, anything else a
    rejection."""
    if isinstance(exc, _NOT_IMPLEMENTED):
        raise qmm_exec.Unsupported("onnxruntime %s CPU: %s" % (ort.__version__, exc))
    raise qmm_exec.Invalid("onnxruntime %s CPU: %s" % (ort.__version__, exc))


def query(op, attrs):
    """Operators outside ai.onnx (QOrderedMatMul, a com.microsoft contrib operator that ORT
    implements for CUDA only) are tried once per signature with B as an input: ORT's own
    refusal is the reason."""
    if op.domain in ("", "ai.onnx"):
        return
    try:
        session_for(op, attrs, None)
    except _ORT_ERRORS as exc:
        answer_error(exc)


_UNFED_PACKED = ("int4", "uint4", "int2", "uint2")


def compute(op, attrs, inputs):
    try:
        session, b_name = session_for(op, attrs, inputs)
        feeds = {n: v for n, v in inputs.items() if n != b_name}
        # ORT's Python API takes no float8 and no packed int4/uint4/int2/uint2 numpy array
        # (ml_dtypes; "Numpy_type 260/272 ... can't be converted to MLDataType")
        unfed = [n for n, v in feeds.items()
                 if v.dtype.name.startswith("float8") or v.dtype.name in _UNFED_PACKED]
        if unfed:
            raise qmm_exec.Unsupported("onnxruntime %s CPU: its Python API cannot feed the "
                                       "%s input %s" % (ort.__version__,
                                                        feeds[unfed[0]].dtype.name, unfed[0]))
        return session.run(None, feeds)[0]
    except _ORT_ERRORS as exc:
        answer_error(exc)


if __name__ == "__main__":
    # the hello's description is sent before its options are read: the mode (b=, threads=) is
    # in the backend's spec, the version and the CPU here
    flags = cpu_flags()
    qmm_exec.serve(
        compute, name="onnxruntime-%s-cpu" % ort.__version__, query=query, start=start,
        description="onnxruntime %s CPUExecutionProvider; CPU flags (MLAS): %s"
                    % (ort.__version__, " ".join(flags) or "none of " + " ".join(MLAS_FLAGS)))
