"""Given code that is another exercise's answer, withheld from a student release.

The advanced exercises' references hand out building blocks marked ``(given)``
in their docstrings (``softmax``, ``split_heads``, ``combine_heads``, a whole
forward): in a checkout they are working code, but each of them is the answer
to another exercise, so a release of an advanced exercise would hand that
answer out. By default a release keeps such a function's signature and
docstring and what is the exercise's own (a cache for the backward pass),
and asks for the student's own code in place of the answer's lines (the
student brings it from the exercise they already did); ``--give-building-blocks``
keeps the code, and the release's README says what it gives away.

A statement counts as another exercise's answer when a non-trivial line of it
(code only, whitespace and comments aside) is a line of another exercise's
solution blocks.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from grader.stubs import BEGIN, END

# Shorter lines (``return out``, ``else:``) say nothing of an answer.
TELLING_LENGTH = 16


@dataclass(frozen=True)
class Withheld:
    """The stub with given answers withheld, and which functions were (``Class.method`` or ``function``)."""

    source: str
    functions: tuple[str, ...]


def normalized(line: str) -> str:
    """A line's code without indentation, trailing comment or repeated spaces ('' for a comment)."""
    line = line.strip()
    if line.startswith("#"):
        return ""
    return re.sub(r"\s+", " ", re.sub(r"\s+#.*$", "", line))


def solution_lines(source: str) -> set[str]:
    """The telling lines of a reference's solution blocks."""
    found, inside = set(), False
    for line in source.splitlines():
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif inside and len(normalized(line)) >= TELLING_LENGTH:
            found.add(normalized(line))
    return found


def other_answers(assignment: str, solutions: Path) -> set[str]:
    """The telling solution lines of every exercise but ``assignment``, from ``solutions/*.py``."""
    lines: set[str] = set()
    for path in sorted(Path(solutions).glob("*.py")):
        if path.stem != assignment:
            lines |= solution_lines(path.read_text(encoding="utf-8"))
    return lines


def withhold_given_answers(stub: str, *, answers: set[str]) -> Withheld:
    """``stub`` without the given code that holds a line of ``answers``.

    Each run of consecutive statements of a function body that holds such a line
    becomes a comment asking for the student's own code; a body left with no
    statement (``softmax``, ``split_heads``) raises NotImplementedError saying so.
    What the function keeps (a cache for the backward pass, the exercise's own
    attributes) stays, so the student sees what their code must provide.
    """
    tree = ast.parse(stub)
    lines = stub.splitlines(keepends=True)
    replaced: list[tuple[int, int, str, str, bool]] = []  # (first line, last line, indent, name, whole body)
    for node, owner in _functions(tree):
        name = f"{owner}.{node.name}" if owner else node.name
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        held = [_holds(lines, statement.lineno, statement.end_lineno, answers) for statement in body]
        if not any(held):
            continue
        indent = _indent(lines, body[0].lineno)
        if all(held):
            replaced.append((body[0].lineno, body[-1].end_lineno, indent, name, True))
            continue
        run: list[ast.stmt] = []
        for statement, holds in [*zip(body, held), (None, False)]:
            if holds:
                run.append(statement)
            elif run:
                replaced.append((run[0].lineno, run[-1].end_lineno, indent, name, False))
                run = []
    for first, last, indent, name, whole in sorted(replaced, reverse=True):
        lines[first - 1:last] = _request(indent, name.split(".")[-1], whole)
    names = tuple(dict.fromkeys(name for _, _, _, name, _ in sorted(replaced)))
    return Withheld("".join(lines), names)


def _holds(lines: list[str], first: int, last: int, answers: set[str]) -> bool:
    return bool({normalized(line) for line in lines[first - 1:last]} & answers)


def _indent(lines: list[str], number: int) -> str:
    return re.match(r"\s*", lines[number - 1]).group(0)


def _request(indent: str, short: str, whole: bool) -> list[str]:
    if not whole:  # one statement of a given function: the rest of the function still works
        return [f"{indent}# Withheld from this release, because it is another exercise's answer: write here what\n",
                f"{indent}# your own {short} of that exercise does at this point (the docstring says what).\n",
                f"{indent}# 这个发布版本没有提供这段代码，因为它是另一个练习的答案：请在这里写上你在那个练习中的 {short} 在此处所做的事。\n"]
    return [f"{indent}# Given in a full checkout; this release does not hand it out, because it is another\n",
            f"{indent}# exercise's answer. Paste your own {short} here, from the exercise where you wrote it.\n",
            f"{indent}# 完整版本会给出这段代码；这个发布版本不提供，因为它是另一个练习的答案。请把你自己写的 {short} 粘贴到这里。\n",
            f'{indent}raise NotImplementedError("{short}: paste your own from the exercise where you wrote it / '
            f'请粘贴你自己写的版本")\n']


def _functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node, None
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield item, node.name
