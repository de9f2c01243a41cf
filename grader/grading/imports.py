"""Imports a submission makes inside its functions, made once more while it loads.

A function that imports a heavy package on its first call (``from scipy.special
import softmax`` inside ``softmax``) spends about a second on it, twice the
calibrated call limit: the grader would take a correct function for one that
hangs. So the modules imported inside functions are imported once at the end
of loading, under the load limit, and the call finds them done. The added cell
binds no name, cannot raise, and changes nothing a function computes; the
source is only parsed here, never run.
"""

from __future__ import annotations

import ast
import re

from grader.sandbox.source import Cell, SubmissionSource

LABEL = "imports made early by the grader"


# A whole import statement from a line's first column: a module's own import (a continued line could start
# with ``from`` too, as in ``(yield\nfrom g()); import x``, but never with such a statement)
TOP_LEVEL_IMPORT = re.compile(r"import\s|from\s+[\w.]+\s+import\b")


def nested_imports(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(module, names)`` of each absolute import inside a function or method of ``text``."""
    if _only_top_level_imports(text):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: dict[tuple[str, tuple[str, ...]], None] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[(alias.name, ())] = None
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found[(node.module, tuple(alias.name for alias in node.names if alias.name != "*"))] = None
    return list(found)


def _only_top_level_imports(text: str) -> bool:
    """Whether every ``import`` in ``text`` is on a line that is a statement starting at its first column (a
    module's own imports), with no line continued by a backslash: then no function holds one, and nothing
    needs parsing (most submissions; a parse costs a few milliseconds per submission)."""
    if "\\\n" in text or "\\\r" in text:
        return False
    position = text.find("import")
    while position >= 0:
        if not TOP_LEVEL_IMPORT.match(text, text.rfind("\n", 0, position) + 1):
            return False  # an import elsewhere, or only the word: the parse decides
        end = text.find("\n", position)
        if end < 0:
            return True
        position = text.find("import", end)
    return True


def with_early_imports(source: SubmissionSource) -> SubmissionSource:
    """``source`` with a last cell importing what its functions import inside them (if they do)."""
    wanted = [item for cell in source.cells for item in nested_imports(cell.source)]
    if not wanted:
        return source
    lines = []
    for module, names in dict.fromkeys(wanted):
        lines += ["try:", f"    __import__({module!r}, fromlist={list(names)!r})", "except BaseException:", "    pass"]
    cell = Cell("\n".join(lines) + "\n", f"<{LABEL}>", LABEL)
    return SubmissionSource(cells=(*source.cells, cell), mode=source.mode, notes=source.notes,
                            display_name=source.display_name)
