"""Public checks of causal_mask and padding_mask."""

from grader.content.messages import Message
from grader.grading.checks import CheckFailure, expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


def _expect_boolean(student, case):
    value = expect_value(student, case)
    if value.dtype != bool:
        raise CheckFailure(Message("mask_not_boolean", {"what": case.call_text, "dtype": str(value.dtype)}),
                           misconception="wrong-type")


@mha(points=3, function="causal_mask", probes=("mask-causal-off-by-one",))
def test_causal_mask_lets_each_token_see_itself_and_the_past(student, cases):
    _expect_boolean(student, cases["causal/square"])


@mha(points=2, function="causal_mask", probes=("mask-causal-no-offset",))
def test_causal_mask_with_earlier_tokens_in_front(student, cases):
    expect_value(student, cases["causal/one-step"])
    expect_value(student, cases["causal/cached"])


@mha(points=2, function="padding_mask", probes=("mask-padding-broadcast",))
def test_padding_mask_marks_real_tokens_and_broadcasts(student, cases):
    _expect_boolean(student, cases["padding/lengths"])
