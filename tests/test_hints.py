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

    return [(f"{entry.id} {key} ({lang})", entry.texts[key][lang]) for entry in load_catalog().values()
            for key in ("hint", "hint_more") if key in entry.texts for lang in ("en", "zh")]


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


def test_a_near_solution_hint_waits_in_the_second_tier():
    """The hint that names the exact rescaling factor is the closer hint, shown only with --more-hints."""
    from grader.content.catalog import load_catalog

    entry = load_catalog()["flash-no-rescale-sum"]
    for lang in ("en", "zh"):
        assert "exp(m_old - m_new)" not in entry.text("hint", lang)
        assert "exp(m_old - m_new)" in entry.text("hint_more", lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_mha_check_shows_the_closer_hint_only_when_asked(lang, tmp_path):
    import shutil

    from click.testing import CliRunner

    from grader.cli import root
    from grader.content.catalog import load_catalog

    mistake = tmp_path / "memory_efficient_attention.py"
    shutil.copy(PROJECT / "grader" / "assignments" / "memory_efficient_attention" / "mutants" / "mistakes"
                / "flash_no_rescale_sum.py", mistake)
    closer = load_catalog()["flash-no-rescale-sum"].text("hint_more", lang)
    said = {}
    for extra in ((), ("--more-hints",)):
        done = CliRunner().invoke(root, ["check", str(mistake), "--lang", lang, *extra], terminal_width=400)
        assert done.exit_code == 1, done.output
        said[extra] = re.sub(r"\s+", "", done.output)  # the terminal wraps lines: compare without spaces
    first = re.sub(r"\s+", "", load_catalog()["flash-no-rescale-sum"].text("hint", lang))
    closer = re.sub(r"\s+", "", closer)
    assert first in said[()] and first in said[("--more-hints",)]
    assert closer not in said[()] and closer in said[("--more-hints",)]
