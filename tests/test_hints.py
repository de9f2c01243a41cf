"""Hints point at the idea and the shape, never at the finished line.

A student who reads every hint (the catalog's, shown with a failed check,
and the stub's, written above each TODO) still has to write the code: no
hint shares a run of LONGEST_SHARED characters or more (spaces ignored) with
a line of the reference solutions.
"""

from __future__ import annotations

import difflib
import re
import tomllib

import pytest

from conftest import PROJECT
from grader.stubs import BEGIN, END, HINT

LONGEST_SHARED = 16


def solution_lines() -> list[tuple[str, str]]:
    """(file, code) for every line inside a solution block, comments dropped, spaces removed."""
    found = []
    for path in sorted((PROJECT / "solutions").glob("*.py")):
        inside = False
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped in (BEGIN, END):
                inside = stripped == BEGIN
                continue
            code = re.sub(r"\s+", "", line.split("#")[0])
            if inside and len(code) >= LONGEST_SHARED:
                found.append((path.name, code))
    return found


def catalog_hints() -> list[tuple[str, str]]:
    from grader.content.catalog import load_catalog

    return [(f"{entry.id} ({lang})", entry.texts["hint"][lang]) for entry in load_catalog().values() for lang in ("en", "zh")]


def stub_hints() -> list[tuple[str, str]]:
    return [(f"{path.name}:{number} ({match.group(1)})", match.group(2))
            for path in sorted((PROJECT / "solutions").glob("*.py"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if (match := HINT.search(line))]


def api_names() -> set[str]:
    """Names of the functions and classes the exercises define: saying them gives nothing away."""
    return {name for path in (PROJECT / "solutions").glob("*.py")
            for name in re.findall(r"^\s*(?:def|class)\s+(\w+)", path.read_text(encoding="utf-8"), re.M)}


NAMES = re.compile(r"\b(" + "|".join(sorted(api_names(), key=len, reverse=True)) + r")\b")


def longest_shared(hint: str, code: str) -> str:
    text, code = NAMES.sub("§", re.sub(r"\s+", "", hint)), NAMES.sub("§", code)
    match = difflib.SequenceMatcher(None, text, code, autojunk=False).find_longest_match(0, len(text), 0, len(code))
    return text[match.a:match.a + match.size]


@pytest.mark.parametrize("where,hint", catalog_hints() + stub_hints(), ids=lambda value: str(value)[:40])
def test_no_hint_gives_a_line_of_the_solution(where, hint):
    for file, code in solution_lines():
        shared = longest_shared(hint, code)
        assert len(shared) < LONGEST_SHARED, f"{where} gives {shared!r} of a line of {file}"


def test_the_check_catches_a_hint_that_gives_the_line():
    given = "Subtract the max first: x - np.max(x, axis=-1, keepdims=True)."
    assert any(len(longest_shared(given, code)) >= LONGEST_SHARED for _, code in solution_lines())
    assert len(stub_hints()) >= 18 and len(catalog_hints()) >= 100
