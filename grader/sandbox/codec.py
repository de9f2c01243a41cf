"""Values across the trust boundary, as the trusted side reads them.

Everything a worker sends is untrusted bytes, whatever the worker was meant to
do: replies are plain JSON trees of bounded depth; arrays are ``.npy`` bytes
whose header (version, dtype, shape, size) is checked before the data is
read, and then read as raw numbers (``numpy.frombuffer``, which has no way to
unpickle anything, where ``numpy.load`` would need ``allow_pickle=False``);
anything else the worker describes is a ``ForeignObject``. Every malformed
reply becomes ``BadReply``, never an exception of another kind.
"""

from __future__ import annotations

import functools

import numpy as np

from grader.sandbox.worker.arrays import NpyCodec

ALLOWED_KINDS = "biuf"  # bool, signed and unsigned integers, floats
SCALAR_DTYPES = {"float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"}
MAX_DEPTH = 8  # tuples of arrays nest one or two deep; anything deeper is not an answer
_NPY = NpyCodec(np)  # writes requests' arrays (headers built once per dtype and shape)


class BadReply(ValueError):
    """A reply that is not what the protocol allows."""


class ForeignObject:
    """Something the worker returned that is not plain numeric data."""

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"


def encode_request(value, blobs: list[bytes], sent: dict | None = None):
    """A JSON tree for trusted data sent to the worker; arrays are appended to ``blobs``.

    With ``sent`` (id of an array -> its blob index), an array that several
    requests of one exchange share (the weights of every forward case) is sent
    once. The arrays must stay alive while ``sent`` is in use.
    """
    if isinstance(value, np.ndarray):
        if sent is not None and id(value) in sent:
            return {"__array__": sent[id(value)]}
        if value.dtype.hasobject:
            raise TypeError("only plain numeric arrays are sent to a worker")
        blobs.append(_NPY.encode(value))
        if sent is not None:
            sent[id(value)] = len(blobs) - 1
        return {"__array__": len(blobs) - 1}
    if isinstance(value, tuple):
        return {"__tuple__": [encode_request(item, blobs, sent) for item in value]}
    if isinstance(value, list):
        return [encode_request(item, blobs, sent) for item in value]
    if isinstance(value, dict):
        return {key: encode_request(item, blobs, sent) for key, item in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode_reply(tree, blobs: list[bytes], max_bytes: int, depth: int = 0):
    """Rebuild a reply's value; raise BadReply for anything the protocol does not allow."""
    if depth > MAX_DEPTH:
        raise BadReply("reply nests deeper than any answer does")
    if isinstance(tree, dict):
        if "__array__" in tree:
            index = tree["__array__"]
            if type(index) is not int or not 0 <= index < len(blobs):
                raise BadReply("reply names an array that is not there")
            return load_checked_array(blobs[index], max_bytes)
        if "__tuple__" in tree:
            items = tree["__tuple__"]
            if not isinstance(items, list):
                raise BadReply("reply holds a malformed tuple")
            return tuple(decode_reply(item, blobs, max_bytes, depth + 1) for item in items)
        if "__scalar__" in tree:
            return _scalar(tree)
        if "__object__" in tree:
            return ForeignObject(str(tree["__object__"])[:200])
        raise BadReply("reply holds an unknown mapping")
    if isinstance(tree, list):
        return [decode_reply(item, blobs, max_bytes, depth + 1) for item in tree]
    if tree is None or type(tree) in (bool, int, float):
        return tree
    if type(tree) is str:
        return tree[:2000]
    raise BadReply("reply holds an unknown value")


def decode_arguments_after(items, blobs: list[bytes], max_bytes: int, sent: tuple) -> tuple:
    """A reply's positional arguments as the call left them. ``{"__unchanged__": true}`` at position ``i``
    is the worker saying that argument ``i``, an array, is byte for byte as this side sent it: a copy of
    ``sent[i]`` stands for it (the worker could as well have sent those bytes back; it saves their trip and
    their parsing). Anything else is read as any reply's value."""
    if not isinstance(items, list):
        raise BadReply("reply holds a malformed tuple")
    after = []
    for position, item in enumerate(items):
        if isinstance(item, dict) and "__unchanged__" in item:
            if (len(item) != 1 or item["__unchanged__"] is not True or position >= len(sent)
                    or not isinstance(sent[position], np.ndarray)):
                raise BadReply("reply says an argument that was no array is unchanged")
            after.append(np.array(sent[position], order="C"))  # a plain copy, as the bytes would have read
        else:
            after.append(decode_reply(item, blobs, max_bytes, 1))
    return tuple(after)


def _scalar(tree: dict):
    value, dtype = tree["__scalar__"], str(tree.get("dtype", ""))
    if dtype not in SCALAR_DTYPES or type(value) not in (bool, int, float):
        return ForeignObject("a numpy scalar")
    try:
        return np.dtype(dtype).type(value)
    except (ValueError, TypeError, OverflowError):
        raise BadReply(f"scalar {value!r:.40} does not fit {dtype}") from None


def _header_end(blob: bytes) -> int:
    """Where the data of a ``.npy`` blob starts (the header's own length field says)."""
    if len(blob) < 10 or blob[:6] != b"\x93NUMPY":
        raise BadReply("malformed array in reply: not .npy data")
    if blob[6] == 1:
        return 10 + int.from_bytes(blob[8:10], "little")
    if len(blob) < 12:
        raise BadReply("malformed array in reply: truncated header")
    return 12 + int.from_bytes(blob[8:12], "little")


@functools.lru_cache(maxsize=512)
def _checked_header(header: bytes):
    """Version, shape, order and dtype of a ``.npy`` header (cached: replies repeat few headers)."""
    if header[6:8] not in (b"\x01\x00", b"\x02\x00"):
        raise BadReply(f".npy version {tuple(header[6:8])} is not accepted")
    try:
        dtype, shape, fortran_order, _ = _NPY.header(header)  # a strict pattern first, then numpy's own reader
    except Exception as bad:  # noqa: BLE001 - any malformed header is a bad reply
        raise BadReply(f"malformed array in reply: {bad}") from None
    if not isinstance(shape, tuple) or not all(type(extent) is int and extent >= 0 for extent in shape):
        raise BadReply("malformed array in reply: shape")
    return shape, fortran_order, dtype, len(header)


def load_checked_array(blob: bytes, max_bytes: int) -> np.ndarray:
    """Load ``.npy`` bytes after checking version, dtype, shape and size in the header."""
    shape, fortran_order, dtype, data_start = _checked_header(bytes(blob[:_header_end(blob)]))
    if dtype.hasobject or dtype.kind not in ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise BadReply(f"array of dtype {dtype} is not plain numeric data")
    count = 1
    for extent in shape:
        count *= extent
    size = count * dtype.itemsize
    if size > max_bytes or size != len(blob) - data_start:
        raise BadReply(f"array of shape {shape} does not match its {len(blob)} bytes")
    try:
        flat = np.frombuffer(blob, dtype=dtype, count=count, offset=data_start)
        array = flat.reshape(shape, order="F" if fortran_order else "C").copy(order="K")  # its own, writable
    except Exception as bad:  # noqa: BLE001
        raise BadReply(f"unreadable array in reply: {bad}") from None
    if type(array) is not np.ndarray or array.shape != tuple(shape) or array.dtype != dtype:
        raise BadReply("array in reply differs from its header")
    return array
