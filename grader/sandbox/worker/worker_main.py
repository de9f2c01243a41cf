"""The worker: the only process that runs student code.

Forked, already confined, by the fork server (``grader/sandbox/worker/forkserver.py``), which
calls ``serve``; it imports nothing but the standard library and NumPy, so it
can live behind a filesystem sandbox that hides the grader, the suites and the
solutions. It only evaluates calls; the trusted side checks everything it
sends back, and never trusts this side to have behaved.

Messages are framed by ``protocol``. Arrays travel as ``.npy`` bytes; in the
JSON tree an array is ``{"__array__": i}``, a tuple ``{"__tuple__": [...]}``,
anything that is not plain data ``{"__object__": "<description>"}``. A reply
gives back the call's positional arguments as the call left them; one left
byte for byte as it came is ``{"__unchanged__": true}``, not its bytes again.
"""

import builtins
import contextlib
import json
import linecache
import os
import sys
import time
import traceback
import tracemalloc
import types

from . import arrays, protocol, recording, standins

MESSAGE_LIMIT = protocol.MESSAGE_LIMIT

TEXT_LIMIT = 2000
NPY_HEADER = 256  # room for one array's .npy header beside its data, in a reply's bound
CELL_ERRORS = 20  # errors of notebook cells described in the load's reply; the rest are counted
clock = time.perf_counter  # bound before student code runs


def encode(value, blobs, codec, limit=MESSAGE_LIMIT):
    """Turn a value into a JSON tree, appending array bytes to ``blobs`` (at most ``limit`` bytes in all)."""
    if value is None or isinstance(value, (bool, int, float, str)) and type(value) in (bool, int, float, str):
        if isinstance(value, str):
            return value[:TEXT_LIMIT]
        return value
    if type(value) is codec.ndarray:
        if value.dtype.kind not in "biuf":
            return {"__object__": f"array of dtype {value.dtype}"}
        if value.nbytes + NPY_HEADER + sum(len(blob) for blob in blobs) > limit:
            return {"__object__": f"array of shape {value.shape}, {value.nbytes:,} bytes: more than a reply may hold"}
        blobs.append(codec.encode(value))
        return {"__array__": len(blobs) - 1}
    if isinstance(value, codec.generic) and type(value).__module__ == "numpy" and value.dtype.kind in "biuf":
        return {"__scalar__": value.item(), "dtype": str(value.dtype)}
    if type(value) is list and len(value) <= 16:
        return [encode(item, blobs, codec, limit) for item in value]
    if issubclass(type(value), tuple) and tuple.__len__(value) <= 16:
        # A named tuple is a tuple: its items are read through tuple's own methods, which a
        # subclass cannot override, so a hostile subclass gives back exactly what it holds.
        items = [encode(tuple.__getitem__(value, i), blobs, codec, limit) for i in range(tuple.__len__(value))]
        return {"__tuple__": items}
    return {"__object__": _describe(value, codec)}


UNCHANGED = {"__unchanged__": True}  # an argument the call left exactly as it came: not sent back


def _unchanged(value, sent, blobs, codec):
    """Whether ``value`` (an argument after the call) is still, byte for byte, the array ``sent`` named."""
    if type(value) is not codec.ndarray or type(sent) is not dict or len(sent) != 1:
        return False
    index = sent.get("__array__")
    if type(index) is not int or not 0 <= index < len(blobs):
        return False
    dtype, shape, fortran_order, start = codec.header(blobs[index])
    return (not fortran_order and value.dtype == dtype and value.shape == tuple(shape)
            and value.tobytes() == blobs[index][start:])


def _describe(value, codec):
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(value, codec.ndarray):
        return f"an ndarray subclass ({name})"
    return name


def decode(tree, blobs, codec, cache=None):
    """Inverse of ``encode`` for what the trusted side sends (plain data only).

    ``cache`` (blob index -> array) parses an array sent once for several
    calls only once; every use still gets its own copy, so a call that changes
    its inputs cannot reach the next one.
    """
    if isinstance(tree, dict):
        if "__array__" in tree:
            index = tree["__array__"]
            if cache is None:
                return codec.decode(blobs[index])
            if index not in cache:
                cache[index] = codec.decode(blobs[index])
            return cache[index].copy()
        if "__tuple__" in tree:
            return tuple(decode(item, blobs, codec, cache) for item in tree["__tuple__"])
        return {key: decode(item, blobs, codec, cache) for key, item in tree.items()}
    if isinstance(tree, list):
        return [decode(item, blobs, codec, cache) for item in tree]
    return tree


def describe_error(error, filenames):
    """A plain description of an exception, located in the student's file."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [frame for frame in frames if frame.filename in filenames]
    where = own[-1] if own else None
    if isinstance(error, SyntaxError) and error.filename in filenames:
        line, text, function = error.lineno, (error.text or "").strip(), None
    elif where is not None:
        line, text, function = where.lineno, (where.line or "").strip(), where.name
    else:
        line, text, function = None, "", None
    try:
        message = str(error)
    except Exception:  # a hostile __str__
        message = "<unprintable message>"
    where_file = where.filename if where is not None else getattr(error, "filename", None)
    return {  # each part bounded: a reply's header is capped, and every name here may be the student's
        "type": str(type(error).__name__)[:100],
        "message": message[:TEXT_LIMIT],
        "line": line if type(line) is int else None,
        "source_line": str(text)[:200],
        "function": str(function)[:100] if function is not None else None,
        "file": str(where_file)[:300] if where_file is not None else None,
    }


class BuiltinsGuard:
    """Student code may rebind builtins (``builtins.isinstance = ...``); the worker's own code never sees that.

    The student's version of the builtins is swapped in around student code
    and the original one back afterwards, so a submission that patches them
    is graded on what its functions return, not on a broken worker.
    """

    def __init__(self):
        self.original = dict(builtins.__dict__)
        self.student = None  # the student's builtins, once they differ from the original ones

    @contextlib.contextmanager
    def student_side(self):
        if self.student is not None:
            _swap(self.student)
        try:
            yield
        finally:
            if self.student is not None or _changed(self.original):
                self.student = _copy(builtins.__dict__)
                _swap(self.original)


def _swap(state, _namespace=builtins.__dict__, _list=list, _copy_state=dict.copy):
    """Make the builtins exactly ``state``, using only references bound before any student code ran."""
    for name in _list(_namespace):
        if name not in state:
            del _namespace[name]
    _namespace.update(_copy_state(state))


_copy = dict.copy


def _changed(original, _namespace=builtins.__dict__):
    """Whether student code rebound a builtin (dict equality: values that are the same object compare
    equal without being asked)."""
    try:
        return _namespace != original
    except BaseException:  # noqa: BLE001 - a hostile __eq__ on something put into builtins
        return True


class Worker:
    def __init__(self, numpy):
        self.numpy = numpy
        self.codec = arrays.NpyCodec(numpy)
        self.reply_limit = MESSAGE_LIMIT
        self.module = types.ModuleType("submission")
        self.filenames = set()
        self.builtins = BuiltinsGuard()
        self.recorder = recording.Recorder()  # which of the submission's functions each call enters
        self.stream = None  # where each newly entered name is announced during a single call
        self.outgoing = None  # the reply stream, for the items of a streamed batch
        self._announcements = {}

    def _notify(self, stream_names):
        """What tells the trusted side, during a single call, of each function it newly enters (or None)."""
        if not stream_names or self.stream is None:
            return None
        announce, fd, write = self._announcements, self.stream, os.write
        return lambda name: write(fd, announce[name])  # bound before student code runs

    def load(self, request, blobs=()):
        """Run the submission's cells. Their sources come as blobs (UTF-8), not in the header: the header
        is capped, the submission's documented size is not its to decide. Blob 0 lists each cell's
        ``[filename, label]``; blob ``i + 1`` is cell ``i``'s source."""
        namespace = self.module.__dict__
        self.reply_limit = min(int(request.get("reply_limit", MESSAGE_LIMIT)), MESSAGE_LIMIT)
        cell_errors, more_errors = [], 0
        cells = [{"filename": filename, "label": label, "source": blobs[index + 1].decode("utf-8", "surrogatepass")}
                 for index, (filename, label) in enumerate(json.loads(blobs[0].decode("utf-8")))]
        for cell in cells:
            self.filenames.add(cell["filename"])
            # tracebacks read lines from here: the submission's own file is out of the worker's reach
            linecache.cache[cell["filename"]] = (len(cell["source"]), None, cell["source"].splitlines(True),
                                                 cell["filename"])
            error = None
            with self.builtins.student_side():
                try:
                    exec(compile(cell["source"], cell["filename"], "exec"), namespace)
                except BaseException as raised:  # noqa: BLE001 - any failure is the student's to read
                    error = raised
            if isinstance(error, KeyboardInterrupt):
                raise error
            if error is not None:
                described = describe_error(error, self.filenames)
                described["cell"] = cell.get("label")
                if request.get("mode") == "module":
                    return {"ok": False, "error": described}
                if len(cell_errors) < CELL_ERRORS:
                    described["message"] = described["message"][:300]
                    cell_errors.append(described)
                else:
                    more_errors += 1
        self._instrument()
        names = sorted(name[:100] for name in namespace if not name.startswith("__"))[:500]
        return {"ok": True, "names": names, "cell_errors": cell_errors, "more_cell_errors": more_errors}

    def _instrument(self):
        """Wrap the submission's functions and methods as loading left them (a hostile class may refuse)."""
        try:
            names = self.recorder.instrument(self.module.__dict__, self.filenames)
        except BaseException:  # noqa: BLE001 - recording is a hint; a broken class only loses it
            names = []
        self._announcements = {name: protocol.frame({"op": "entered", "name": name}) for name in names}

    def call(self, request, blobs, cache=None, stream_names=False):
        """Run one call; return (reply, reply blobs). ``cache`` is shared by the calls of one batch.

        The reply's ``reached`` lists the submission's functions the call
        entered; with ``stream_names`` each is also announced as it is first
        entered (an ``entered`` message), so a call that never returns still
        tells the trusted side where it went.
        """
        codec = self.codec
        args = list(decode(request.get("args", []), blobs, codec, cache))
        kwargs = decode(request.get("kwargs", {}), blobs, codec, cache)
        target = request["target"]
        namespace = self.module.__dict__
        error = value = None
        measure = bool(request.get("measure_peak_memory"))  # optional: the peak the call allocates, in bytes
        if measure:
            tracemalloc.start()
        init = decode(target.get("init", []), blobs, codec, cache)  # here: student code may have patched builtins
        attributes = decode(target.get("attributes", {}), blobs, codec, cache)
        stand_ins = None
        if type(target.get("stand_ins")) is list:  # trusted answers for some of the submission's own functions
            stand_ins = standins.StandIns(self.numpy, decode(target["stand_ins"], blobs, codec, cache))
        steps = None
        if target.get("calls") is not None:
            steps = [(str(path).split("."), step_args, step_kwargs)
                     for path, step_args, step_kwargs in decode(target["calls"], blobs, codec, cache)]
        with self.builtins.student_side(), self.recorder.call(self._notify(stream_names)) as entered:
            try:
                value = self._run(target, namespace, args, kwargs, init, attributes, steps, stand_ins)
            except BaseException as raised:  # noqa: BLE001 - any failure is the student's to read
                error = raised
            finally:
                if stand_ins is not None:
                    stand_ins.restore(namespace)
        reached = list(entered)
        peak = tracemalloc.get_traced_memory()[1] if measure and tracemalloc.is_tracing() else None
        tracemalloc.stop()
        if isinstance(error, KeyboardInterrupt):
            raise error
        if stand_ins is not None and stand_ins.missing is not None:
            return self._missing(stand_ins, reached)
        if steps is not None and error is None:
            value = tuple(value)
        if error is not None:
            if isinstance(error, KeyError) and not error.__traceback__.tb_next.tb_next:
                missing = {"kind": "missing-name", "type": "MissingName", "message": str(error)[:200]}
                return {"ok": False, "error": missing, "reached": reached}, []
            failed = {"ok": False, "error": describe_error(error, self.filenames), "reached": reached}
            if stand_ins is not None:
                failed["stood_in"] = sorted(stand_ins.used)
            return failed, []
        out_blobs = []
        limit = self.reply_limit
        asked = request.get("reply_limit")
        if type(asked) is int and 0 <= asked < limit:  # the trusted side's bound for this call's reply
            limit = asked
        try:
            encoded = encode(value, out_blobs, codec, limit)
            sent = request.get("args")
            sent = sent if type(sent) is list else []
            after = [UNCHANGED if position < len(sent) and _unchanged(arg, sent[position], blobs, codec)
                     else encode(arg, out_blobs, codec, limit) for position, arg in enumerate(args)]
        except BaseException as error:  # noqa: BLE001 - a hostile object may fail to encode
            return {"ok": False, "error": {"kind": "unencodable", "type": "UnencodableResult",
                                                  "message": repr(type(error))},
                    "reached": reached}, []
        reply = {"ok": True, "value": encoded, "args_after": after, "reached": reached}
        if stand_ins is not None:
            reply["stood_in"] = sorted(stand_ins.used)
        if measure:
            reply["peak_memory"] = peak
        return reply, out_blobs

    def batch(self, request, blobs):
        """Run several independent calls in one exchange; each reply names its slice of the blobs.

        With ``stream`` each call's reply is sent the moment it is ready (an
        ``item`` message, with its ``index`` and its own blobs, after the
        ``entered`` announcements of that call unless ``names`` is false), so
        the trusted side can hold every call to its own deadline and keep the
        replies of the calls that finished before one hung; the final reply
        then only says how many.
        """
        if request.get("stream") and self.outgoing is not None:
            cache = {}
            calls = request.get("calls", [])[:1000]
            announce = bool(request.get("names", True))
            for index, call in enumerate(calls):
                reply, reply_blobs = self.call(call, blobs, cache, stream_names=announce)
                reply["op"], reply["index"] = "item", index
                sys.stdout.flush()
                protocol.write_message(self.outgoing, reply, reply_blobs)
            return {"ok": True, "count": len(calls)}, []
        replies, out_blobs, cache, size = [], [], {}, 0
        for call in request.get("calls", [])[:1000]:
            reply, reply_blobs = self.call(call, blobs, cache)
            reply["blob_offset"], reply["blob_count"] = len(out_blobs), len(reply_blobs)
            replies.append(reply)
            out_blobs.extend(reply_blobs)
            size += sum(len(blob) for blob in reply_blobs)
            if size > self.reply_limit:
                break  # the rest are asked for one by one
        return {"ok": True, "replies": replies}, out_blobs

    def _missing(self, stand_ins, reached):
        """The reply to a call a stand-in could not answer: its name and the arguments it was given."""
        name, args = stand_ins.missing
        out_blobs = []
        try:
            encoded = encode(tuple(args), out_blobs, self.codec, self.reply_limit) if args is not None else None
        except BaseException:  # noqa: BLE001 - a hostile object may fail to encode
            encoded, out_blobs = None, []
        return {"ok": True, "value": encoded, "args_after": [], "reached": reached, "stand_in_missing": name,
                "stood_in": sorted(stand_ins.used)}, out_blobs

    @staticmethod
    def _run(target, namespace, args, kwargs, init, attributes, steps, stand_ins=None, _setattr=setattr,
             _getattr=getattr):
        """The student's part of a call; the builtins it uses were bound before any student code ran."""
        if stand_ins is not None:
            stand_ins.install(namespace)
        if "class" not in target:
            return namespace[target["function"]](*args, **kwargs)
        instance = namespace[target["class"]](*init)
        for name, value in attributes.items():
            _setattr(instance, name, value)
        if stand_ins is not None:
            stand_ins.install_methods(instance)
        if steps is not None:
            results = []
            for names, step_args, step_kwargs in steps:  # a path "a.b"; no arguments: read the attribute
                value = instance
                for name in names:
                    value = _getattr(value, name)
                results.append(value if step_args is None else value(*step_args, **(step_kwargs or {})))
            return results
        function = _getattr(instance, target["method"]) if target.get("method") else None
        return function(*args, **kwargs) if function is not None else None


def warm_up(numpy):
    """Run once in the fork server, before any fork: NumPy loads parts of itself
    on first use (the .npy format, einsum, linalg, errstate), and every worker
    would otherwise pay for that again after its fork."""
    x = numpy.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)
    blobs, codec = [], arrays.NpyCodec(numpy)
    decode(encode((x, x.astype(numpy.float32)), blobs, codec), blobs, codec, {})
    with numpy.errstate(all="ignore"):
        y = numpy.exp(x - x.max(axis=-1, keepdims=True)) / numpy.sum(x, axis=-1, keepdims=True)
    numpy.einsum("bij,bkj->bik", x, x), numpy.tensordot(x, x, axes=([2], [2])), numpy.swapaxes(y, -1, -2) @ x
    numpy.linalg.norm(x), numpy.moveaxis(x, 1, 2).copy(), numpy.concatenate([x, x], axis=-1), numpy.stack([x, x])
    numpy.allclose(x, x), numpy.isfinite(x).all(), numpy.random.default_rng(0).normal(size=3)


REHEARSAL_FILE = "<rehearsal>"
# Trusted code in the shapes a submission's calls take (projections, heads split and joined, a stable softmax,
# a method on an instance), run once by each fresh worker before its request: see ``rehearse``.
REHEARSAL_SOURCE = """
import numpy as np


def normalise(x, axis=-1):
    peak = np.max(x, axis=axis, keepdims=True)
    weights = np.exp(x - peak)
    return weights / np.sum(weights, axis=axis, keepdims=True)


def heads(x, count):
    batch, length, width = x.shape
    return x.reshape(batch, length, count, width // count).transpose(0, 2, 1, 3)  # (B, H, T, d_k)


def attend(x, w, count=2):
    q = heads(x @ w, count)  # (B, H, T, d_k)
    scores = np.matmul(q, np.swapaxes(q, -1, -2)) / np.sqrt(q.shape[-1])  # (B, H, T, T)
    out = np.einsum("bhts,bhsd->bhtd", normalise(scores), q)  # (B, H, T, d_k)
    batch, count, length, width = out.shape
    return out.transpose(0, 2, 1, 3).reshape(batch, length, count * width), scores.astype(np.float32)


class Layer:
    def __init__(self, width):
        self.w = np.eye(width)

    def forward(self, x):
        return attend(x, self.w)[0]
"""


def rehearse(numpy):
    """Serve a few calls of trusted code through the whole path a request takes (framing, decoding, the
    recorder, NumPy's kernels, encoding), in this fresh worker, before its request exists.

    A forked worker's first touch of each page it shares with the fork
    server (every object whose reference count changes, every allocator
    arena) copies that page: about 420 such faults in the calls of one
    submission made a fresh worker's first calls up to twice as slow as the
    same calls a second time. Taken here,
    while the worker waits as a spare, they overlap the grading of the
    submission before it. Nothing of it is left for the submission: the
    worker that serves it (``serve``) is a new ``Worker``, and the rehearsal's
    source is dropped from the line cache.
    """
    import io

    worker = Worker(numpy)
    cells = [json.dumps([[REHEARSAL_FILE, "rehearsal"]]).encode(), REHEARSAL_SOURCE.encode()]
    framed = protocol.frame({"op": "load", "mode": "module"}, cells)
    header, blobs = protocol.read_message(io.BytesIO(framed))
    worker.load(header, blobs)
    x = numpy.linspace(-1.0, 1.0, 24).reshape(1, 3, 8)  # (B, T, D)
    sent, calls = [], []
    for function, args in (("normalise", (x,)), ("heads", (x, 2)), ("attend", (x, numpy.eye(8)))):
        calls.append({"target": {"function": function}, "args": encode(list(args), sent, worker.codec),
                      "kwargs": {}})
    calls.append({"target": {"class": "Layer", "init": [8], "calls": [["forward", [encode(x, sent, worker.codec)],
                                                                       {}]]}})
    framed = protocol.frame({"op": "batch", "calls": calls}, sent)
    header, blobs = protocol.read_message(io.BytesIO(framed))
    reply, reply_blobs = worker.batch(header, blobs)
    protocol.frame(reply, reply_blobs)
    linecache.cache.pop(REHEARSAL_FILE, None)
    return reply


def serve(read_fd, write_fd, numpy, hello=None):
    """Answer requests on ``read_fd`` until it closes; ``hello`` is sent first, before any request."""
    incoming = os.fdopen(read_fd, "rb", buffering=0)
    outgoing = os.fdopen(write_fd, "wb")
    if hello is not None:
        protocol.write_message(outgoing, hello)
    worker = Worker(numpy)
    worker.stream, worker.outgoing = write_fd, outgoing
    while True:
        message = protocol.read_message(incoming)
        if message is None:
            return
        header, blobs = message
        started = clock()
        operation = header.get("op")
        if operation == "load":
            reply, reply_blobs = worker.load(header, blobs), []
        elif operation == "call":
            reply, reply_blobs = worker.call(header, blobs, stream_names=True)
        elif operation == "batch":
            reply, reply_blobs = worker.batch(header, blobs)
        elif operation == "ping":
            reply, reply_blobs = {"ok": True}, []
        else:
            reply, reply_blobs = {"ok": False, "error": {"kind": "protocol", "type": "Protocol",
                                                              "message": str(operation)}}, []
        sys.stdout.flush()
        reply["worker_seconds"] = clock() - started  # how long the worker itself took: the rest was the trip
        protocol.write_message(outgoing, reply, reply_blobs)
