"""Hidden checks of memory_efficient_attention on sizes and values drawn from the student's seed."""

from grader.grading.checks import expect_value
from grader.grading.marker import mha

pytestmark = mha(function="memory_efficient_attention", visibility="hidden")


@mha(points=4)
def test_memory_efficient_attention_on_drawn_inputs(student, cases):
    for name in sorted(cases):
        expect_value(student, cases[name])
