"""Turn a submitted file into the code cells a worker runs.

Runs on the trusted side and never executes anything: it only reads text.
A ``.py`` file is one cell, imported as a module (an error there is a load
error). A notebook gives one cell per code cell, in order: lines starting with
``%`` or ``!`` and cells starting with ``%%`` are dropped (and noted), nbgrader
test cells are not run, and a cell that raises is reported and skipped.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from grader.content.messages import Message, cell_label

MAX_SOURCE_BYTES = 2 << 20
# Names a cell may call that belong to the grader, not to the student's code (``grader.notebook``'s helpers).
GRADER_CALLS = frozenset({"check", "autograde", "show_heads"})
MAX_NOTES = 20  # notes kept per submission (skipped lines, cells); the rest are counted in one more note


class SubmissionError(Exception):
    """The file cannot be turned into code; ``message`` says why, for the student, in either language."""

    def __init__(self, key: str, **params):
        self.message = Message(key, params)
        super().__init__(self.message.render("en"))


@dataclass(frozen=True)
class Cell:
    source: str
    filename: str
    label: str


@dataclass(frozen=True)
class SubmissionSource:
    cells: tuple[Cell, ...]
    mode: str  # "module": any error fails the load; "cells": errors skip the cell
    notes: tuple = ()  # Message objects (or plain text), rendered in the reader's language
    display_name: str = ""


def read_submission(path: Path) -> SubmissionSource:
    """Read a ``.py`` or ``.ipynb`` submission; raise SubmissionError with a clear reason."""
    path = Path(path)
    if path.is_symlink():
        raise SubmissionError("file_symlink", name=path.name)
    if not path.is_file():
        raise SubmissionError("file_missing", name=str(path))
    size = path.stat().st_size
    if size == 0:
        raise SubmissionError("file_empty", name=path.name)
    if size > MAX_SOURCE_BYTES:
        raise SubmissionError("file_too_large", name=path.name, size=f"{size:,}", limit=f"{MAX_SOURCE_BYTES:,}")
    data = path.read_bytes()
    if b"\x00" in data:
        raise SubmissionError("file_binary", name=path.name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        raise SubmissionError("file_not_utf8", name=path.name, position=bad.start) from None
    if path.suffix == ".ipynb":
        return notebook_source(text, name=path.name)
    if path.suffix != ".py":
        raise SubmissionError("file_wrong_kind", name=path.name)
    return SubmissionSource(cells=(Cell(text, path.name, path.name),), mode="module", display_name=path.name)


def notebook_source(text: str, *, name: str) -> SubmissionSource:
    """The runnable code cells of a notebook's JSON text."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as bad:
        raise SubmissionError("notebook_bad_json", name=name, line=bad.lineno, reason=bad.msg) from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise SubmissionError("notebook_no_cells", name=name)
    runnable, notes = [], []
    number = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        label = f"cell {number}"
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(part for part in source if isinstance(part, str))
        if not isinstance(source, str):
            notes.append(Message("note_malformed_cell", {"cell": cell_label(label)}))
            continue
        nbgrader = (cell.get("metadata") or {}).get("nbgrader") or {}
        if isinstance(nbgrader, dict) and nbgrader.get("grade") and not nbgrader.get("solution"):
            continue  # an nbgrader test cell: the grader runs its own checks
        if source.lstrip().startswith("%%"):
            notes.append(Message("note_cell_magic", {"cell": cell_label(label)}))
            continue
        kept = []
        for line in source.splitlines():
            if line.lstrip().startswith(("%", "!")):
                notes.append(Message("note_line_magic", {"cell": cell_label(label), "line": line.strip()[:60]}))
                kept.append("")  # keep line numbers true
            else:
                kept.append(line)
        runnable.append(Cell("\n".join(kept) + "\n", f"{name} [{label}]", label))
    if not runnable:
        raise SubmissionError("notebook_no_code", name=name)
    return SubmissionSource(cells=tuple(runnable), mode="cells", notes=capped(notes), display_name=name)


def capped(notes: list) -> tuple:
    """At most ``MAX_NOTES`` notes, then one that counts the rest: a notebook of many skipped lines cannot
    fill a student's feedback (500,000 magic lines are 20 notes and a count)."""
    if len(notes) <= MAX_NOTES:
        return tuple(notes)
    return (*notes[:MAX_NOTES], Message("note_more_notes", {"count": f"{len(notes) - MAX_NOTES:,}"}))


def calls_grader(code: str) -> bool:
    """True for a cell that imports the grader, or only calls its notebook helpers."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False  # the worker reports it, as for any cell
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "grader" for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grader":
            return True
    return bool(tree.body) and all(
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name) and statement.value.func.id in GRADER_CALLS
        for statement in tree.body)
