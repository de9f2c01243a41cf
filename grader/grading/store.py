"""Save and load precomputed cases: one ``.npz`` holding a JSON index and every array packed in one buffer.

The public cases ship this way so that public checks run in a student
release, which has neither the reference solution nor the buggy twins.
``mha check`` loads them on every run: the arrays (about 1,100 small ones for
the first exercise) are packed end to end in one uncompressed member, so
loading costs one read and a view per array rather than a zip member each
(schema 2, one member per array, is still read).
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np

from grader.errors import ContentError
from grader.grading.case import Case, ErrorRule, Raised, link_companions

SCHEMA_VERSION = 3
READABLE_SCHEMAS = (2, 3)
ALIGNMENT = 64  # each array starts at a multiple of this many bytes in the packed buffer
# Case fields stored when set; the rest of a case is its inputs, expected value and twins.
OPTIONAL_FIELDS = ("class_name", "init", "calls", "call_text", "legend", "argument_names", "mutation_id",
                   "error_rules", "overflow_ids", "structure_mistake", "exercise", "signatures", "evidence", "companion",
                   "shows_values", "names_mistakes", "inline_ids", "output_names")


def save_cases(cases: dict[str, Case], path: Path) -> None:
    """Write ``cases`` to ``path`` (``.npz``); arrays by key, structure in ``__index__``."""
    arrays: dict[str, np.ndarray] = {}

    def tree(value):
        if isinstance(value, np.ndarray):
            key = f"a{len(arrays)}"
            arrays[key] = value
            return {"array": key}
        if isinstance(value, tuple):
            return {"tuple": [tree(item) for item in value]}
        if isinstance(value, Raised):
            return {"raised": [value.type, value.message]}
        if isinstance(value, ErrorRule):
            return {"rule": [value.misconception, list(value.message_any), list(value.line_any), list(value.types),
                             list(value.reached_any), list(value.unreached), value.own_body]}
        if isinstance(value, dict):
            return {"dict": {name: tree(item) for name, item in value.items()}}
        return {"plain": value}

    index = {
        "schema_version": SCHEMA_VERSION,
        "cases": {
            name: {
                "id": case.id, "function": case.function, "args": tree(case.args), "kwargs": tree(case.kwargs),
                "weights": tree(case.weights),
                "expected": tree(case.expected),
                "twins": [[misconception, label, tree(value)] for misconception, label, value in case.known_twins()],
                **{name: tree(getattr(case, name)) for name in OPTIONAL_FIELDS if getattr(case, name) is not None},
            }
            for name, case in cases.items()
        },
    }
    packed, index["arrays"] = _pack(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, __index__=np.frombuffer(json.dumps(index, sort_keys=True).encode(), dtype=np.uint8),
             __packed__=packed)
    path.write_bytes(buffer.getvalue())


def _pack(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, dict]:
    """Every array's bytes end to end (each aligned), and where each one lies: key -> [dtype, shape, order,
    offset]. An array that is Fortran-ordered stays so, as ``np.save`` keeps it; any other is stored C-ordered."""
    layout, chunks, offset = {}, [], 0
    for key, array in arrays.items():
        if array.dtype.hasobject:
            raise ContentError(f"case array {key} holds Python objects; only plain arrays are stored")
        order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
        data = array.tobytes(order=order)
        padding = -offset % ALIGNMENT
        chunks += [b"\0" * padding, data]
        offset += padding
        layout[key] = [array.dtype.str, list(array.shape), order, offset]
        offset += len(data)
    return np.frombuffer(b"".join(chunks), dtype=np.uint8), layout


def _unpack(packed: np.ndarray, layout: dict) -> dict[str, np.ndarray]:
    """The arrays of ``_pack``, as views of ``packed`` (writable when ``packed`` is)."""
    arrays = {}
    for key, (dtype, shape, order, offset) in layout.items():
        dtype = np.dtype(dtype)
        count = math.prod(shape)
        flat = np.frombuffer(packed, dtype=dtype, count=count, offset=offset) if count else np.empty(0, dtype)
        arrays[key] = flat.reshape(shape, order=order)
    return arrays


def load_cases(path: Path) -> dict[str, Case]:
    with np.load(path, allow_pickle=False) as data:
        index = json.loads(bytes(data["__index__"]).decode())
        if index.get("schema_version") not in READABLE_SCHEMAS:
            raise ContentError(f"{path}: unknown schema_version {index.get('schema_version')!r}")
        if "__packed__" in data.files:
            arrays = _unpack(data["__packed__"], index["arrays"])
        else:  # schema 2: one member per array
            arrays = {key: data[key] for key in data.files if key != "__index__"}

    def value(node):
        kind, content = next(iter(node.items()))
        if kind == "array":
            return arrays[content]
        if kind == "tuple":
            return tuple(value(item) for item in content)
        if kind == "raised":
            return Raised(*content)
        if kind == "rule":
            return ErrorRule(content[0], *(tuple(part) for part in content[1:6]), *content[6:7])
        if kind == "dict":
            return {name: value(item) for name, item in content.items()}
        return content

    return link_companions({
        name: Case(id=entry["id"], function=entry["function"], args=value(entry["args"]),
                   kwargs=value(entry["kwargs"]), weights=value(entry["weights"]), expected=value(entry["expected"]),
                   twins=[(m, label, value(v)) for m, label, v in entry["twins"]],
                   **{field: value(entry[field]) for field in OPTIONAL_FIELDS if field in entry})
        for name, entry in index["cases"].items()
    })
