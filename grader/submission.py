"""Turn a submitted file into the code cells a worker runs.

Runs on the trusted side and never executes anything: it only reads text.
A ``.py`` file is one cell, imported as a module (an error there is a load
error). A notebook gives one cell per code cell, in order: lines starting with
``%`` or ``!`` and cells starting with ``%%`` are dropped (and noted), nbgrader
test cells are not run, and a cell that raises is reported and skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MAX_SOURCE_BYTES = 2 << 20


class SubmissionError(Exception):
    """The file cannot be turned into code; the message says why, for the student."""


@dataclass(frozen=True)
class Cell:
    source: str
    filename: str
    label: str


@dataclass(frozen=True)
class SubmissionSource:
    cells: tuple[Cell, ...]
    mode: str  # "module": any error fails the load; "cells": errors skip the cell
    notes: tuple[str, ...] = ()
    display_name: str = ""


def read_submission(path: Path) -> SubmissionSource:
    """Read a ``.py`` or ``.ipynb`` submission; raise SubmissionError with a clear reason."""
    path = Path(path)
    if path.is_symlink():
        raise SubmissionError(f"{path.name} is a symbolic link; submit the file itself")
    if not path.is_file():
        raise SubmissionError(f"{path} is not a file")
    size = path.stat().st_size
    if size == 0:
        raise SubmissionError(f"{path.name} is empty")
    if size > MAX_SOURCE_BYTES:
        raise SubmissionError(f"{path.name} is {size:,} bytes; a submission may be at most {MAX_SOURCE_BYTES:,}")
    data = path.read_bytes()
    if b"\x00" in data:
        raise SubmissionError(f"{path.name} is a binary file, not Python source or a notebook")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        raise SubmissionError(f"{path.name} is not UTF-8 text (byte {bad.start}); save it as UTF-8") from None
    if path.suffix == ".ipynb":
        return notebook_source(text, name=path.name)
    if path.suffix != ".py":
        raise SubmissionError(f"{path.name}: expected a .py file or an .ipynb notebook")
    return SubmissionSource(cells=(Cell(text, path.name, path.name),), mode="module", display_name=path.name)


def notebook_source(text: str, *, name: str) -> SubmissionSource:
    """The runnable code cells of a notebook's JSON text."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as bad:
        raise SubmissionError(f"{name} is not a valid notebook (JSON error at line {bad.lineno}: {bad.msg})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise SubmissionError(f"{name} is not a valid notebook: it has no list of cells")
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
            notes.append(f"{label}: malformed source, skipped")
            continue
        nbgrader = (cell.get("metadata") or {}).get("nbgrader") or {}
        if isinstance(nbgrader, dict) and nbgrader.get("grade") and not nbgrader.get("solution"):
            continue  # an nbgrader test cell: the grader runs its own checks
        if source.lstrip().startswith("%%"):
            notes.append(f"{label}: cell magic skipped (it is never run by the grader)")
            continue
        kept = []
        for line in source.splitlines():
            if line.lstrip().startswith(("%", "!")):
                notes.append(f"{label}: skipped `{line.strip()[:60]}` (magics and shell commands are not run)")
                kept.append("")  # keep line numbers true
            else:
                kept.append(line)
        runnable.append(Cell("\n".join(kept) + "\n", f"{name} [{label}]", label))
    if not runnable:
        raise SubmissionError(f"{name} has no code cells")
    return SubmissionSource(cells=tuple(runnable), mode="cells", notes=tuple(notes), display_name=name)
