"""Public checks of linear_attention: every query over every key, through the summed state."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(function="linear_attention", visibility="public")


@pytest.mark.mha(points=3, probes=("linear-attention-feature-map-missing", "linear-attention-no-normaliser"))
def test_linear_attention_with_more_keys_than_queries(student, cases):
    expect_value(student, cases["full/cross"])
    expect_unchanged(student, cases["full/cross"])


@pytest.mark.mha(points=1)
def test_linear_attention_for_self_attention(student, cases):
    expect_value(student, cases["full/self"])


@pytest.mark.mha(points=1, probes=("linear-attention-no-normaliser",))
def test_linear_attention_averages_equal_values_to_that_value(student, cases):
    expect_value(student, cases["full/one-value"])


@pytest.mark.mha(points=1, probes=("linear-attention-feature-map-missing",))
def test_linear_attention_with_wide_queries_and_keys(student, cases):
    expect_value(student, cases["full/wide-inputs"])
