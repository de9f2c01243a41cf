"""Arrays as ``.npy`` bytes, fast: headers built and parsed once per dtype and shape (NumPy only).

``numpy.save`` and ``numpy.load`` write and parse the header of every array
anew (``ast.literal_eval`` of a dict literal): for the hundred small arrays of
one submission that costs more than the calls themselves. The bytes are the
same ``.npy`` format (version 1.0; 2.0 read too), so either side may still read
them with ``numpy.load``. NumPy's functions are bound when the codec is made,
in the fork server before any student code exists: a submission that patches
``numpy`` cannot change how its replies are written.
"""

from __future__ import annotations

import io
import re

# The header numpy itself writes for a plain array, parsed without ``ast.literal_eval`` (anything else goes
# through numpy's own reader): {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } then spaces, newline.
PLAIN_HEADER = re.compile(rb"\{'descr': '([<>|=]?[biuf]\d{1,2})', 'fortran_order': (False|True), "
                          rb"'shape': \(((?:\d{1,12}, ?)*\d{0,12})\), \} *\n")


class NpyCodec:
    """``encode`` an array to ``.npy`` bytes; ``decode`` such bytes to a fresh, writable array."""

    def __init__(self, numpy):
        form = numpy.lib.format
        self.ndarray, self.generic = numpy.ndarray, numpy.generic
        self._frombuffer, self._contiguous = numpy.frombuffer, numpy.ascontiguousarray
        self._descr, self._write_header = form.dtype_to_descr, form.write_array_header_1_0
        self._read_magic = form.read_magic
        self._read_header = {(1, 0): form.read_array_header_1_0, (2, 0): form.read_array_header_2_0}
        self._headers: dict = {}  # (descr, shape) -> header bytes
        self._parsed: dict = {}  # header bytes -> (dtype, shape, fortran order, data offset)
        self._dtype = numpy.dtype

    def encode(self, array) -> bytes:
        """The ``.npy`` bytes of a plain ndarray (C order)."""
        array = self._contiguous(array)
        key = (array.dtype.str, array.shape)
        header = self._headers.get(key)
        if header is None:
            buffer = io.BytesIO()
            self._write_header(buffer, {"descr": self._descr(array.dtype), "fortran_order": False,
                                        "shape": array.shape})
            header = buffer.getvalue()
            if len(self._headers) < 4096:
                self._headers[key] = header
        return header + array.tobytes()

    def header(self, blob: bytes) -> tuple:
        """(dtype, shape, fortran order, where the data starts) of ``.npy`` bytes; ValueError if malformed."""
        if len(blob) < 10 or blob[:6] != b"\x93NUMPY":
            raise ValueError("not .npy data")
        end = 10 + int.from_bytes(blob[8:10], "little") if blob[6] == 1 else 12 + int.from_bytes(blob[8:12], "little")
        key = bytes(blob[:end])
        parsed = self._parsed.get(key)
        if parsed is None:
            parsed = (*self._parse(key), end)
            if len(self._parsed) < 4096:
                self._parsed[key] = parsed
        return parsed

    def _parse(self, header: bytes) -> tuple:
        """(dtype, shape, fortran order) of a whole ``.npy`` header."""
        offset = 10 if header[6] == 1 else 12
        plain = PLAIN_HEADER.fullmatch(header, offset) if header[6] in (1, 2) and header[7] == 0 else None
        if plain is not None:
            descr, fortran, shape = plain.groups()
            extents = tuple(int(extent) for extent in shape.split(b",") if extent.strip())
            return self._dtype(descr.decode()), extents, fortran == b"True"
        stream = io.BytesIO(header)
        version = self._read_magic(stream)
        if version not in self._read_header:
            raise ValueError(f".npy version {version} is not read here")
        shape, fortran_order, dtype = self._read_header[version](stream)
        if stream.tell() != len(header):
            raise ValueError("malformed .npy header")
        return dtype, shape, fortran_order

    def decode(self, blob: bytes):
        """A fresh, writable array from ``.npy`` bytes of plain data (no object dtypes: nothing is unpickled)."""
        dtype, shape, fortran_order, start = self.header(blob)
        if dtype.hasobject:
            raise ValueError("object arrays are not plain data")
        count = 1
        for extent in shape:
            count *= extent
        flat = self._frombuffer(blob, dtype=dtype, count=count, offset=start)
        return flat.reshape(shape, order="F" if fortran_order else "C").copy(order="K")
