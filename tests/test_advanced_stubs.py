"""Every advanced exercise's stub is exactly what the generator makes from its reference."""

import ast

import pytest

from advanced_track import reference, stub
from grader.grading.assignment import ASSIGNMENTS
from grader.stubs import BEGIN, END, generate_stub

ADVANCED = [name for name in ASSIGNMENTS if name != "multihead_attention"]


@pytest.mark.parametrize("assignment", ADVANCED)
def test_stub_is_regenerated_from_the_reference(assignment):
    expected = generate_stub(reference(assignment).read_text(encoding="utf-8"), origin=str(reference(assignment)))
    assert stub(assignment).read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("assignment", ADVANCED)
def test_reference_is_pure_numpy_with_hints_in_every_block(assignment):
    source = reference(assignment).read_text(encoding="utf-8")
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert imported <= {"numpy", "math"}
    blocks = source.split(BEGIN)[1:]
    assert blocks
    for block in blocks:
        body = block.split(END)[0]
        assert "# HINT(en):" in body and "# HINT(zh):" in body


@pytest.mark.parametrize("assignment", ADVANCED)
def test_stub_keeps_every_graded_name_and_implements_none(assignment):
    text = stub(assignment).read_text(encoding="utf-8")
    assert BEGIN not in text and "NotImplementedError" in text
    for function in ASSIGNMENTS[assignment].functions:
        assert f"def {function}(" in text
