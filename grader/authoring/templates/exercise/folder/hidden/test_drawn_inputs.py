"""Hidden checks of attention_scores, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(function="attention_scores", visibility="hidden")


@pytest.mark.mha(points=2)
def test_@NAME@_scores_on_drawn_inputs(student, cases):
    for name in sorted(cases):
        expect_value(student, cases[name])
