"""Hidden checks of the grouped-query exercise, on sizes and values drawn from the student's seed."""

from grader.grading.checks import expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="hidden")


@mha(points=2, function="repeat_kv")
def test_repeat_kv_on_drawn_sizes(student, cases):
    for name in ("repeat/grouped", "repeat/identity", "repeat/one-kv-head"):
        expect_value(student, cases[name])


@mha(points=4, function="forward")
def test_forward_on_drawn_sizes(student, cases):
    for name in ("forward/grouped", "forward/grouped-weights", "forward/multi-query", "forward/multi-head"):
        expect_value(student, cases[name])
