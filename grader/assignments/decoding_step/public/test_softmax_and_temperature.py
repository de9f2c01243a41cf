"""Public checks of softmax and apply_temperature: rows of tokens, scaled before any softmax."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(visibility="public")


@pytest.mark.mha(points=2, function="softmax", probes=("decode-softmax-wrong-axis",))
def test_softmax_normalises_each_row_over_the_vocabulary(student, cases):
    expect_value(student, cases["softmax/small"])
    expect_value(student, cases["softmax/filtered"])


@pytest.mark.mha(points=1, function="softmax")
def test_softmax_with_logits_near_a_thousand(student, cases):
    expect_value(student, cases["softmax/large-logits"])


@pytest.mark.mha(points=2, function="apply_temperature", probes=("decode-temperature-misapplied",))
def test_temperature_divides_the_logits(student, cases):
    expect_value(student, cases["temperature/sharpen"])
    expect_value(student, cases["temperature/flatten"])
    expect_value(student, cases["temperature/large-logits"])


@pytest.mark.mha(points=2, function="apply_temperature", probes=("decode-greedy-divides-by-zero",))
def test_temperature_zero_keeps_only_the_first_largest_logit(student, cases):
    expect_value(student, cases["temperature/greedy"])
    expect_unchanged(student, cases["temperature/greedy"])
