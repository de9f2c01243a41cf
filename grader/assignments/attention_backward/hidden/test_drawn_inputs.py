"""Hidden checks of the backward pass, on sizes and values drawn from the student's seed."""

from grader.assignments.attention_backward import GRADIENT_NAMES
from grader.grading.gradients import expect_gradients
from grader.grading.marker import mha

pytestmark = mha(visibility="hidden")


@mha(points=2, function="softmax_backward")
def test_softmax_backward_on_drawn_inputs(student, cases):
    for name in ("softmax/rows", "softmax/4d"):
        expect_gradients(student, cases[name], GRADIENT_NAMES["softmax_backward"])


@mha(points=3, function="attention_backward")
def test_attention_backward_on_drawn_inputs(student, cases):
    for name in ("attention/cross", "attention/self"):
        expect_gradients(student, cases[name], GRADIENT_NAMES["attention_backward"])


@mha(points=3, function="backward")
def test_layer_backward_on_drawn_inputs(student, cases):
    for name in ("layer/cross", "layer/self"):
        expect_gradients(student, cases[name], GRADIENT_NAMES["backward"])
