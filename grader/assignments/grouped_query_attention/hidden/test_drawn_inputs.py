"""Hidden checks of the grouped-query exercise, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(visibility="hidden")


@pytest.mark.mha(points=2, function="repeat_kv")
def test_repeat_kv_on_drawn_sizes(student, cases):
    for name in ("repeat/grouped", "repeat/identity", "repeat/one-kv-head"):
        expect_value(student, cases[name])


@pytest.mark.mha(points=4, function="forward")
def test_forward_on_drawn_sizes(student, cases):
    for name in ("forward/grouped", "forward/grouped-weights", "forward/multi-query", "forward/multi-head"):
        expect_value(student, cases[name])
