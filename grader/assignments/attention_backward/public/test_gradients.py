"""Public checks of the backward pass, against central-difference numerical gradients."""

from grader.assignments.attention_backward import GRADIENT_NAMES
from grader.grading.gradients import expect_gradients
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


@mha(points=3, function="softmax_backward", probes=("backward-elementwise-softmax",))
def test_softmax_backward_applies_the_whole_jacobian(student, cases):
    for name in ("softmax/rows", "softmax/4d"):
        expect_gradients(student, cases[name], GRADIENT_NAMES["softmax_backward"])


@mha(points=4, function="attention_backward", probes=("backward-no-scale", "backward-transpose-mixup"))
def test_attention_backward_for_cross_attention(student, cases):
    expect_gradients(student, cases["attention/cross"], GRADIENT_NAMES["attention_backward"])


@mha(points=2, function="attention_backward", probes=("backward-transpose-mixup",))
def test_attention_backward_for_self_attention(student, cases):
    expect_gradients(student, cases["attention/self"], GRADIENT_NAMES["attention_backward"])


@mha(points=4, function="backward", probes=("backward-projection-transpose",))
def test_layer_backward_gives_input_and_weight_gradients(student, cases):
    expect_gradients(student, cases["layer/cross"], GRADIENT_NAMES["backward"])


@mha(points=2, function="backward", probes=("backward-projection-transpose",))
def test_layer_backward_for_self_attention(student, cases):
    expect_gradients(student, cases["layer/self"], GRADIENT_NAMES["backward"])
