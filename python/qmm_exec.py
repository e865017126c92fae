"""qmm_exec: write a qmmcheck `exec:` backend in a few lines (docs/exec-protocol.md).

    import qmm_exec

    def compute(op, attrs, inputs):
        # op.op_type, op.domain, op.opset, op.output_dtype, op.output_shape, op.options
        # attrs: {"order_A": 1, ...}; inputs: {"A": ndarray, ...} in node order
        if op.op_type != "MatMulInteger":
            raise qmm_exec.Unsupported("only MatMulInteger")
        return ...  # an ndarray: judged as it is (type and shape included)

    qmm_exec.serve(compute, name="my-backend")

and run `qmmcheck run --backend 'exec:python3 my_backend.py' --vectors vectors`.

Install it with pip from qmmcheck's repository (`pip install ./python`) or from its installed
prefix (`pip install PREFIX/share/qmm/python`); it needs numpy and onnx (its declared
requirements). python/README.md documents the whole API: Op's fields, query, start, the
exceptions and what each answer means to the verdict.

The module does the framing, the envelope and the TensorProto conversion (through `onnx`,
imported on first use: the envelope itself needs only the standard library). While it serves,
the process's stdout is the protocol channel, so `print` is sent to stderr instead, where
qmmcheck captures it and shows it cleaned beside a case that did not pass.
"""

import os
import sys
import traceback

__version__ = "0.1.0"  # qmmcheck's version (CMakeLists.txt's project()): tests/python_package.sh
PROTOCOL_VERSION = 2  # 2: every request has an id (field 11) its reply repeats (field 8)
HELLO, QUERY, CALL, CLOSE = 1, 2, 3, 4
OK, UNSUPPORTED, INVALID_ARGUMENT, OUT_OF_MEMORY, INTERNAL = 0, 1, 2, 3, 4
KIND_NAMES = {HELLO: "hello", QUERY: "query", CALL: "call", CLOSE: "close"}


class Unsupported(Exception):
    """The backend does not compute this call (a reason, not a failure)."""


class Invalid(Exception):
    """The inputs break the operator's definition: answered INVALID_ARGUMENT."""


class ProtocolError(Exception):
    """qmmcheck sent something this module cannot read."""


# ---- protobuf wire format, the little the envelope needs --------------------------------

def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ProtocolError("bad varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def _fields(buf):
    """(field number, value) pairs: ints for varints, bytes for length-delimited."""
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise ProtocolError("field %d runs past the end" % num)
            value, pos = bytes(buf[pos:pos + n]), pos + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            value, pos = int.from_bytes(buf[pos:pos + n], "little"), pos + n
        else:
            raise ProtocolError("field %d: wire type %d" % (num, wire))
        yield num, value


def _put_varint(out, value):
    value &= (1 << 64) - 1
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def _put_int(out, num, value):
    _put_varint(out, num << 3)
    _put_varint(out, value)


def _put_bytes(out, num, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    _put_varint(out, (num << 3) | 2)
    _put_varint(out, len(data))
    out += data


# ---- the request, as the user's function sees it -----------------------------------------

class Op:
    """The operator of a query or call: everything but the tensors' data."""

    def __init__(self, options):
        self.domain = ""
        self.op_type = ""
        self.opset = 0
        self.input_names = []   # node order, "" where an optional input is absent
        self.input_specs = {}   # name -> (numpy dtype, shape): the present inputs
        self.output_name = ""
        self.output_dtype = None
        self.output_shape = ()
        self.options = options  # {"threads": "2"}: from exec,OPTIONS:COMMAND

    def __repr__(self):
        return "Op(%s%s opset %d)" % (self.domain + "." if self.domain else "", self.op_type,
                                      self.opset)


def _onnx():
    import onnx  # noqa: deferred, so that the framing works without it
    from onnx import numpy_helper
    return onnx, numpy_helper


def _tensor_spec(data):
    onnx, _ = _onnx()
    t = onnx.TensorProto.FromString(data)
    np_type = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
    return t.name, np_type, tuple(t.dims)


def _parse_request(buf, options):
    kind, version, request_id, op, attrs, inputs = 0, 0, 0, Op(options), {}, {}
    raw_inputs = []
    for num, value in _fields(buf):
        if num == 1:
            kind = value
        elif num == 2:
            version = value
        elif num == 3:
            op.options = _parse_options(value.decode("utf-8"))
        elif num == 4:
            op.domain = value.decode("utf-8")
        elif num == 5:
            op.op_type = value.decode("utf-8")
        elif num == 6:
            op.opset = value
        elif num == 7:
            onnx, _ = _onnx()
            a = onnx.AttributeProto.FromString(value)
            attrs[a.name] = a.i
        elif num == 8:
            raw_inputs.append(value)
        elif num == 9:
            op.output_name, op.output_dtype, op.output_shape = _tensor_spec(value)
        elif num == 10:
            op.input_names.append(value.decode("utf-8"))
        elif num == 11:
            request_id = value
    for data in raw_inputs:
        name, np_type, shape = _tensor_spec(data)
        op.input_specs[name] = (np_type, shape)
        if kind == CALL:
            onnx, numpy_helper = _onnx()
            try:
                inputs[name] = numpy_helper.to_array(onnx.TensorProto.FromString(data))
            except (ValueError, MemoryError) as exc:
                # numpy holds no array of more than its address space's bytes, even an empty
                # one ([0, 65535, 65535, 65535, 65535] float16): the call cannot be handed to
                # compute, which is this backend's limit, not a crash (_answer_call says so).
                inputs[name] = _Undecodable("input %s (shape %s): numpy cannot hold it: %s"
                                            % (name, list(shape), exc))
    return kind, version, request_id, op, attrs, inputs


def _parse_options(text):
    options = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        options[key] = value
    return options


# ---- serving -------------------------------------------------------------------------------

def _read_exact(f, n):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _status_of(exc):
    if isinstance(exc, Unsupported):
        return UNSUPPORTED, str(exc)
    if isinstance(exc, Invalid):
        return INVALID_ARGUMENT, str(exc)
    if isinstance(exc, MemoryError):
        return OUT_OF_MEMORY, "out of memory"
    # the traceback from the backend's own code: this module's frames that called it say nothing
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_globals.get("__name__") == __name__:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__, file=sys.stderr)
    return INTERNAL, "%s: %s" % (type(exc).__name__, exc)


class _Undecodable:
    """An input numpy cannot represent; the call is answered UNSUPPORTED with why."""

    def __init__(self, why):
        self.why = why


def _answer_call(compute, op, attrs, inputs, out):
    import numpy as np
    bad = [v.why for v in inputs.values() if isinstance(v, _Undecodable)]
    if bad:
        _put_int(out, 5, UNSUPPORTED)
        _put_bytes(out, 6, bad[0])
        return
    try:
        y = np.asarray(compute(op, attrs, inputs))
    except Exception as exc:  # noqa: every failure is an answer
        status, message = _status_of(exc)
        _put_int(out, 5, status)
        _put_bytes(out, 6, message)
        return
    _, numpy_helper = _onnx()
    _put_int(out, 5, OK)
    _put_bytes(out, 7, numpy_helper.from_array(y, op.output_name).SerializeToString())


def _answer(request, compute, query, start, name, description, state):
    kind, version, request_id, op, attrs, inputs = _parse_request(request, state["options"])
    out = bytearray()
    _put_int(out, 1, kind)
    _put_int(out, 8, request_id)  # the reply answers this request and no other
    if kind == HELLO:
        _put_int(out, 2, PROTOCOL_VERSION)
        _put_bytes(out, 3, name)
        _put_bytes(out, 4, description)
        state["options"] = op.options
        try:
            if version != PROTOCOL_VERSION:
                raise Unsupported("this backend speaks exec protocol version %d, qmmcheck %d"
                                  % (PROTOCOL_VERSION, version))
            if start:
                start(op.options)
            elif op.options:
                raise Invalid("no options are known: %s" % ",".join(sorted(op.options)))
        except Exception as exc:  # noqa
            status, message = _status_of(exc)
            _put_int(out, 5, status)
            _put_bytes(out, 6, message)
    elif kind == QUERY:
        try:
            if query:
                query(op, attrs)
        except Exception as exc:  # noqa
            status, message = _status_of(exc)
            _put_int(out, 5, status)
            _put_bytes(out, 6, message)
    elif kind == CALL:
        _answer_call(compute, op, attrs, inputs, out)
    return kind, bytes(out)


def serve(compute, name, description="", query=None, start=None):
    """Answers qmmcheck until it closes the channel.

    compute(op, attrs, inputs) -> ndarray, or raises Unsupported / Invalid (any other
        exception answers INTERNAL, its traceback on stderr).
    query(op, attrs) -> None, or raises Unsupported: types and shapes only
        (op.input_specs), no data. Without it every call is run.
    start(options) -> None, or raises Invalid for options it does not know. Without it any
        option is refused.
    """
    # every call's tensors go through onnx and numpy: a backend without them says so in one
    # line on stderr (qmmcheck shows it) and exits 2, before the first request
    import qmm_requires
    qmm_requires.modules("numpy", "onnx", how="pip install numpy onnx (qmm_exec's requirements; "
                         "qmmcheck's requirements.txt pins the versions it is tested with)")
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # print() now reaches stderr, never the protocol channel
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    state = {"options": {}}
    while True:
        head = _read_exact(proto_in, 4)
        if head is None:
            return  # qmmcheck went away
        request = _read_exact(proto_in, int.from_bytes(head, "little"))
        if request is None:
            return
        kind, reply = _answer(request, compute, query, start, name, description, state)
        proto_out.write(len(reply).to_bytes(4, "little") + reply)
        if kind == CLOSE:
            return
