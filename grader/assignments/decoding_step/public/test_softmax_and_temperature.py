"""Public checks of softmax and apply_temperature: rows of tokens, scaled before any softmax."""

from grader.content.messages import Message
from grader.grading.checks import expect_raised, expect_unchanged, expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


@mha(points=2, function="softmax", probes=("decode-softmax-wrong-axis",))
def test_softmax_normalises_each_row_over_the_vocabulary(student, cases):
    expect_value(student, cases["softmax/small"])
    expect_value(student, cases["softmax/filtered"])


@mha(points=1, function="softmax")
def test_softmax_with_logits_near_a_thousand(student, cases):
    expect_value(student, cases["softmax/large-logits"])


@mha(points=2, function="apply_temperature", probes=("decode-temperature-misapplied",))
def test_temperature_divides_the_logits(student, cases):
    expect_value(student, cases["temperature/sharpen"])
    expect_value(student, cases["temperature/flatten"])
    expect_value(student, cases["temperature/large-logits"])


@mha(points=2, function="apply_temperature", probes=("decode-greedy-divides-by-zero",))
def test_temperature_zero_keeps_only_the_first_largest_logit(student, cases):
    expect_value(student, cases["temperature/greedy"])
    expect_unchanged(student, cases["temperature/greedy"])


def expect_refused(student, case):
    """The call of ``case`` must raise ValueError: a setting out of its range is refused, not used."""
    setting = ", ".join(repr(argument) for argument in case.args[1:])
    expect_raised(student, case, "ValueError", lambda got: Message(
        "setting_not_refused", {"function": case.function, "setting": setting, "got": got}))


@mha(points=1, function="apply_temperature")
def test_a_negative_temperature_is_refused(student, cases):
    expect_refused(student, cases["refused/negative-temperature"])
