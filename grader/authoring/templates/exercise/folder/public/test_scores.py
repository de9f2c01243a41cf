"""Public checks of attention_scores (they ship to students: import only grading and content)."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(function="attention_scores", visibility="public")


@pytest.mark.mha(points=2, probes=("@ID@-no-scale",))
def test_@NAME@_scores_for_cross_attention(student, cases):
    expect_value(student, cases["scores/cross"])


@pytest.mark.mha(points=1)
def test_@NAME@_scores_for_self_attention(student, cases):
    expect_value(student, cases["scores/self"])
