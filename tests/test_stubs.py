"""Stubs are generated from the reference and never drift from it."""


import pytest

from conftest import PROJECT
from grader.stubs import MarkerError, generate_stub, strip_markers


@pytest.mark.parametrize("reference", sorted((PROJECT / "solutions").glob("*.py")), ids=lambda p: p.stem)
def test_generated_stubs_are_up_to_date(reference):
    stub = PROJECT / "exercises" / reference.name
    assert stub.read_text(encoding="utf-8") == generate_stub(reference.read_text(encoding="utf-8"),
                                                             origin=str(reference)), (
        f"{stub} is stale: run python -m grader.stubs")


def test_stub_keeps_signatures_and_docstrings_but_no_solution_lines():
    source = (PROJECT / "solutions" / "multihead_attention.py").read_text(encoding="utf-8")
    stub = generate_stub(source)
    for signature in ("def softmax(x):", "def scaled_dot_product_attention(Q, K, V):", "def split_heads(self, x):",
                      "def combine_heads(self, x):", "def forward(self, Q, K, V, return_weights=False):"):
        assert signature in stub
    assert stub.count("raise NotImplementedError") == 5
    assert "TODO：实现" in stub and "# Hint:" in stub and "# 提示：" in stub
    solution_lines = {line.strip() for line in strip_markers(source).splitlines()} - {
        line.strip() for line in stub.splitlines()}
    assert "weights = softmax(scores)  # (B, H, T, S), rows sum to 1 over S" in solution_lines


def test_unbalanced_markers_are_reported_with_the_line():
    with pytest.raises(MarkerError, match=":2:"):
        generate_stub("def f():\n    ### END SOLUTION\n", origin="f.py")
    with pytest.raises(MarkerError, match="never closed"):
        generate_stub("def f():\n    ### BEGIN SOLUTION\n    return 1\n")
