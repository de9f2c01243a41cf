"""Save and load precomputed cases: one ``.npz`` of arrays plus a JSON index.

The public cases ship this way so that public checks run in a student
release, which has neither the reference solution nor the buggy twins.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from grader.errors import ContentError
from grader.grading.case import Case, ErrorRule, Raised, link_companions

SCHEMA_VERSION = 2
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
    buffer = io.BytesIO()
    np.savez_compressed(buffer, __index__=np.frombuffer(json.dumps(index, sort_keys=True).encode(), dtype=np.uint8),
                        **arrays)
    path.write_bytes(buffer.getvalue())


def load_cases(path: Path) -> dict[str, Case]:
    with np.load(path, allow_pickle=False) as data:
        index = json.loads(bytes(data["__index__"]).decode())
        arrays = {key: data[key] for key in data.files if key != "__index__"}
    if index.get("schema_version") != SCHEMA_VERSION:
        raise ContentError(f"{path}: unknown schema_version {index.get('schema_version')!r}")

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
