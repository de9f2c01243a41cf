"""Hidden checks of the KV-cache exercise, on sizes and values drawn from the student's seed."""

from grader.grading.checks import expect_value
from grader.grading.marker import mha
from grader.grading.steps import expect_steps

pytestmark = mha(visibility="hidden")


@mha(points=2, function="update")
def test_update_on_drawn_inputs(student, cases):
    expect_steps(student, cases["update/first"])
    expect_steps(student, cases["update/three"])


@mha(points=4, function="forward")
def test_forward_and_decoding_on_drawn_inputs(student, cases):
    expect_value(student, cases["forward/full"])
    for name in ("forward/decode", "forward/after-cached", "forward/cache-contents"):
        expect_steps(student, cases[name])
