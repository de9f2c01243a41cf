"""The wire format between the trusted side and a worker, standard library only.

Both ways, a message is a 4-byte big-endian length, a UTF-8 JSON header, then
the binary blobs the header lists (``"blobs": [n1, n2, ...]``). The trusted
side reads a worker's messages through this same code, with its own limits.
"""

from __future__ import annotations

import json
import struct

HEADER_LIMIT = 1 << 20
MESSAGE_LIMIT = 1 << 30


def read_message(stream, limit=MESSAGE_LIMIT):
    """Read one framed message; return (header, blobs) or None at end of stream."""
    prefix = _read_exactly(stream, 4)
    if prefix is None:
        return None
    (size,) = struct.unpack(">I", prefix)
    if size > HEADER_LIMIT:
        raise ValueError(f"message header of {size} bytes exceeds {HEADER_LIMIT}")
    header = json.loads(_read_exactly(stream, size, strict=True).decode("utf-8"))
    lengths = header.get("blobs", []) if isinstance(header, dict) else None
    if not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths) or sum(lengths) > limit:
        raise ValueError("message header or blobs are malformed or too large")
    blobs = [_read_exactly(stream, n, strict=True) for n in lengths]
    return header, blobs


def frame(header, blobs=()):
    """The bytes of one message."""
    data = json.dumps(dict(header, blobs=[len(b) for b in blobs])).encode("utf-8")
    return b"".join([struct.pack(">I", len(data)), data, *blobs])


def write_message(stream, header, blobs=()):
    stream.write(frame(header, blobs))
    stream.flush()


def _read_exactly(stream, size, strict=False):
    chunks, remaining = [], size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            if strict or chunks:
                raise EOFError("stream ended inside a message")
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
