"""Which of a student's candidate files is graded: the one the student worked on.

A student may hand in the script and the notebook of an exercise side by side
(``alice.py`` and ``alice.ipynb``; a clone of the release holding
``exercises/<a>.py`` and ``exercises/notebooks/<a>.ipynb``), and anyone who can
write to a shared hand-in folder can drop a file beside a classmate's. The
rule, the same in ``mha grade``, ``mha check`` on a folder, the Gradescope
bundle and the Classroom workflow (docs/grading-rules.md):

1. a file that can be graded (a regular file under the size limit, not empty,
   UTF-8, a notebook that parses) comes before one that cannot;
2. a file changed from the released stub (the stub's text for a script, the
   stub notebook's code cells for a notebook; blank lines and trailing spaces
   do not count) comes before an untouched one;
3. then the one implementing more of the exercise's functions (a function
   whose body is more than ``raise NotImplementedError`` or ``pass``);
4. then the one saved last (modification time);
5. then the order the candidates were given in (the layout's own preference).

The others are set aside, and every output says which file was graded and why.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from grader.files import MAX_SOURCE_BYTES, EntryError, read_capped


@dataclass(frozen=True)
class Choice:
    """The file to grade among a student's candidates, those set aside, and the rule that decided."""

    chosen: Path
    set_aside: tuple[Path, ...] = ()
    reason: str = ""  # a message key (choice_*) when something was set aside


@dataclass(frozen=True)
class _Standing:
    usable: bool
    changed: bool
    modified: int
    cells: tuple[str, ...] = ()
    implemented: int = 0


def choose_graded(*, candidates: Sequence[Path], assignment: str, functions: Sequence[str]) -> Choice:
    """The file to grade among ``candidates`` (in the layout's order of preference), by the rule above.

    ``functions``: the exercise's (``Assignment.functions``), the ones rule 3 counts."""
    candidates = list(dict.fromkeys(Path(path) for path in candidates))
    if len(candidates) == 1:
        return Choice(candidates[0])
    standings = [_standing(path, assignment) for path in candidates]
    best = max((standing.usable, standing.changed) for standing in standings)
    contenders = [index for index, standing in enumerate(standings) if (standing.usable, standing.changed) == best]
    if len(contenders) > 1 and best[1]:  # only then does counting functions decide anything: parse just those
        for index in contenders:
            standings[index] = replace(standings[index], implemented=implemented(standings[index].cells, functions))
    order = sorted(range(len(candidates)), key=lambda index: (
        not standings[index].usable, not standings[index].changed, -standings[index].implemented,
        -standings[index].modified, index))
    first, second = standings[order[0]], standings[order[1]]
    reason = ("choice_unreadable" if first.usable != second.usable
              else "choice_worked" if first.changed != second.changed
              else "choice_more_functions" if first.implemented != second.implemented
              else "choice_newer" if first.modified != second.modified
              else "choice_same")
    return Choice(candidates[order[0]], tuple(candidates[index] for index in order[1:]), reason)


def _standing(path: Path, assignment: str) -> _Standing:
    try:
        modified = os.lstat(path).st_mtime_ns
        cells = code_cells(read_capped(path, limit=MAX_SOURCE_BYTES), suffix=path.suffix)
    except (EntryError, OSError, ValueError, RecursionError):
        return _Standing(usable=False, changed=False, modified=0)
    if not any(cell.strip() for cell in cells):
        return _Standing(usable=False, changed=False, modified=modified)
    changed = _normalized(cells) not in _stub_codes(assignment, path.suffix)
    return _Standing(usable=True, changed=changed, modified=modified, cells=tuple(cells))


def code_cells(data: bytes, *, suffix: str) -> list[str]:
    """The code of a script (one cell) or of a notebook's code cells; ValueError when it is neither."""
    text = data.decode("utf-8-sig")  # UnicodeDecodeError is a ValueError
    if suffix != ".ipynb":
        return [text]
    notebook = json.loads(text)
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a notebook")
    code = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            code.append("".join(part for part in source if isinstance(part, str)) if isinstance(source, list)
                        else source if isinstance(source, str) else "")
    return code


def implemented(cells: Sequence[str], functions: Sequence[str]) -> int:
    """How many of ``functions`` the cells define with a body of their own (not the stub's raise)."""
    wanted = set(functions)
    done = set()
    for cell in cells:
        try:
            tree = ast.parse(cell)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # a cell that does not parse implements nothing
        for node in _definitions(tree):
            if node.name in wanted and _has_body(node):
                done.add(node.name)
    return len(done)


def _definitions(tree: ast.Module):
    """The module's functions, and the methods of its classes (where the exercise's functions live)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _has_body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for statement in body:
        if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr)
                                               and isinstance(statement.value, ast.Constant)):
            continue
        if isinstance(statement, ast.Raise) and statement.exc is not None and "NotImplementedError" in ast.dump(
                statement.exc):
            continue
        return True
    return False


def _normalized(cells: list[str]) -> str:
    return "\n".join(line.rstrip() for cell in cells for line in cell.splitlines() if line.strip())


@lru_cache(maxsize=16)
def _stub_codes(assignment: str, suffix: str) -> frozenset[str]:
    """The released stubs' code, normalized: the script, or the notebooks in every language."""
    from grader.paths import exercise_path, exercises_dir

    if suffix == ".ipynb":
        paths = sorted((exercises_dir() / "notebooks").glob(f"{assignment}*.ipynb"))
    else:
        paths = [exercise_path(assignment)]
    codes = set()
    for path in paths:
        try:
            codes.add(_normalized(code_cells(path.read_bytes(), suffix=suffix)))
        except (OSError, ValueError):
            continue  # where the stubs are not installed, "changed" falls back to the functions implemented
    return frozenset(codes)
