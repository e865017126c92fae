"""peers/onnxruntime/backend.py: ONNX Runtime's CPU execution provider as a qmmcheck peer.

Each call becomes a one-node ONNX model (the call's operator, domain, opset, attributes and
input names), run by an InferenceSession on CPUExecutionProvider; its output is the answer, as
ORT returns it. Run it through the exec: backend (docs/exec-protocol.md):

    qmmcheck run --backend "exec:.venv/bin/python peers/onnxruntime/backend.py" --vectors vectors
    qmmcheck run --backend "exec,b=input:.venv/bin/python peers/onnxruntime/backend.py" ...

Options (from exec,OPTIONS:..., README.md): b=initializer (default: B is a constant, which ORT
prepacks, as in a deployed model) or b=input (B is fed at run time: the unpacked path);
threads=N (intra-op threads, default 1, so that a run is reproducible; --determinism asks for 2);
graph=node (default: the call's own operator), graph=dq-matmul or graph=dq-matmul-unfused: a
MatMulNBits accuracy_level 0 call runs as the ai.onnx graph of the same weights,
DequantizeLinear(B [K, N] uint4/uint8, its scales and zero points: initializers; axis 0,
block_size) -> MatMul(A, .) (-> Add(bias)), whose exact value is the call's (docs/semantics.md
section 8.2); dq-matmul at ORT's default session options (ORT fuses it into MatMulNBits at
accuracy_level 4), dq-matmul-unfused with session.disable_quant_qdq=1 (no fusion). What that
graph cannot express (another operator, bits 2, g_idx, float zero points, a float16 A, a level
other than 0) is UNSUPPORTED, saying why.

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

import numpy as np  # noqa: E402
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

settings = {"b": "initializer", "threads": 1, "graph": "node"}
GRAPHS = ("node", "dq-matmul", "dq-matmul-unfused")
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
        elif key == "graph" and value in GRAPHS:
            settings["graph"] = value
        else:
            raise qmm_exec.Invalid("unknown option %s=%s (b=initializer|input, threads=N, "
                                   "graph=%s)" % (key, value, "|".join(GRAPHS)))


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


def dq_matmul_refusal(op, attrs):
    """Why the graph= mode cannot run this call as DequantizeLinear -> MatMul, or None."""
    mode = settings["graph"]
    if (op.domain, op.op_type) != ("com.microsoft", "MatMulNBits"):
        return "graph=%s runs MatMulNBits calls only (got %s)" % (mode, op.op_type)
    names = op.input_names + [""] * (6 - len(op.input_names))
    level, bits = attrs.get("accuracy_level", 0), attrs.get("bits", 4)
    if level != 0:
        return ("graph=%s: the DequantizeLinear -> MatMul graph's value is the accuracy_level 0 "
                "call's (got accuracy_level %d)" % (mode, level))
    if bits not in (4, 8):
        return ("graph=%s: no DequantizeLinear of %d-bit codes at opset 21 (bits 4 and 8 only)"
                % (mode, bits))
    if names[4]:
        return "graph=%s: DequantizeLinear has no g_idx (the call has one)" % mode
    if names[0] and op.input_specs[names[0]][0] != "float32":
        return ("graph=%s: A is %s; the graph is run for a float32 A only"
                % (mode, op.input_specs[names[0]][0]))
    if names[3] and op.input_specs[names[3]][0] != "uint8":
        return ("graph=%s: DequantizeLinear takes integer zero points only (the call's are %s)"
                % (mode, op.input_specs[names[3]][0]))
    return None


def unpack(data, bits, rows, count):
    """uint8 bytes, `rows` rows of codes packed low bits first -> int64 [rows, count]."""
    per = 8 // bits
    b = data.reshape(rows, -1).astype(np.int64)
    codes = np.stack([(b >> (bits * j)) & ((1 << bits) - 1) for j in range(per)], axis=-1)
    return codes.reshape(rows, -1)[:, :count]


def dq_matmul_model(op, attrs, inputs):
    """The ai.onnx graph DequantizeLinear(B [K, N], scales [kb, N], zero points [kb, N]; axis 0,
    block_size; all three initializers of uint4/uint8) -> MatMul(A, .) (-> Add(bias)): the
    call's weights, each b-hat the call's (docs/semantics.md section 8.2); A and bias stay graph
    inputs under the call's names."""
    names = op.input_names + [""] * (6 - len(op.input_names))
    k, n, bits, bs = attrs["K"], attrs["N"], attrs.get("bits", 4), attrs["block_size"]
    kb = (k + bs - 1) // bs
    b, scales = inputs[names[1]], inputs[names[2]]
    zp = inputs[names[3]] if names[3] else None
    if (b.shape != (n, kb, bs * bits // 8) or scales.size != n * kb
            or (zp is not None and zp.size != n * ((kb * bits + 7) // 8))
            or inputs[names[0]].shape[-1:] != (k,)):
        raise qmm_exec.Invalid("graph=%s: shapes do not fit K=%d N=%d block_size=%d bits=%d"
                               % (settings["graph"], k, n, bs, bits))
    q = unpack(b, bits, n, kb * bs)[:, :k].T  # [K, N]
    z = (unpack(zp, bits, n, kb) if zp is not None else np.full((n, kb), 1 << (bits - 1))).T
    tp = onnx.TensorProto.UINT4 if bits == 4 else onnx.TensorProto.UINT8
    consts = [helper.make_tensor("qmm_b", tp, [k, n], q.flatten().tolist()),
              onnx.numpy_helper.from_array(np.ascontiguousarray(scales.reshape(n, kb).T),
                                           "qmm_scale"),
              helper.make_tensor("qmm_zp", tp, [kb, n], z.flatten().tolist())]
    nodes = [helper.make_node("DequantizeLinear", ["qmm_b", "qmm_scale", "qmm_zp"], ["qmm_bhat"],
                              axis=0, block_size=bs),
             helper.make_node("MatMul", [names[0], "qmm_bhat"],
                              ["qmm_ab" if names[5] else op.output_name])]
    if names[5]:
        nodes.append(helper.make_node("Add", ["qmm_ab", names[5]], [op.output_name]))
    fed = [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, op.input_specs[name][1])
           for name in (names[0], names[5]) if name]
    graph = helper.make_graph(nodes, "qmmcheck", fed, [onnx.ValueInfoProto(name=op.output_name)],
                              initializer=consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)],
                             ir_version=IR_VERSION)


def dq_matmul_session(op, attrs, inputs):
    """A session for the graph= mode: ORT's default session options but the threads (and,
    for dq-matmul-unfused, session.disable_quant_qdq=1), cached per signature and weights."""
    names = op.input_names + [""] * (6 - len(op.input_names))
    digest = hashlib.sha256()
    for name in names[1:4]:
        if name:
            digest.update(inputs[name].tobytes())
    key = ("graph", settings["graph"], tuple(sorted(attrs.items())), tuple(op.input_names),
           tuple((nm, str(d), s) for nm, (d, s) in op.input_specs.items()), digest.hexdigest())
    if key in sessions:
        sessions.move_to_end(key)
        return sessions[key]
    so = ort.SessionOptions()
    so.intra_op_num_threads = settings["threads"]
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    if settings["graph"] == "dq-matmul-unfused":
        so.add_session_config_entry("session.disable_quant_qdq", "1")
    session = ort.InferenceSession(dq_matmul_model(op, attrs, inputs).SerializeToString(), so,
                                   providers=["CPUExecutionProvider"])
    sessions[key] = session
    if len(sessions) > SESSION_CACHE_SIZE:
        sessions.popitem(last=False)
    return session


def answer_error(exc):
    """An ORT error as the protocol's answer: no kernel is UNSUPPORTED, anything else a
    rejection."""
    if isinstance(exc, _NOT_IMPLEMENTED):
        raise qmm_exec.Unsupported("onnxruntime %s CPU: %s" % (ort.__version__, exc))
    raise qmm_exec.Invalid("onnxruntime %s CPU: %s" % (ort.__version__, exc))


def query(op, attrs):
    """Operators outside ai.onnx (QOrderedMatMul, a com.microsoft contrib operator that ORT
    implements for CUDA only) are tried once per signature with B as an input: ORT's own
    refusal is the reason. Under graph=dq-matmul*, what the graph cannot express is refused."""
    if settings["graph"] != "node":
        why = dq_matmul_refusal(op, attrs)
        if why:
            raise qmm_exec.Unsupported("onnxruntime %s CPU: %s" % (ort.__version__, why))
        return
    if op.domain in ("", "ai.onnx"):
        return
    try:
        session_for(op, attrs, None)
    except _ORT_ERRORS as exc:
        answer_error(exc)


_UNFED_PACKED = ("int4", "uint4", "int2", "uint2")


def compute(op, attrs, inputs):
    try:
        if settings["graph"] != "node":
            query(op, attrs)
            names = op.input_names + [""] * (6 - len(op.input_names))
            return dq_matmul_session(op, attrs, inputs).run(
                None, {name: inputs[name] for name in (names[0], names[5]) if name})[0]
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
