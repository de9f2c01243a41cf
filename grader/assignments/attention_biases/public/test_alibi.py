"""Public checks of alibi_slopes and alibi_bias: one geometric ladder of slopes, one penalty table per head."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(visibility="public")


@pytest.mark.mha(points=2, function="alibi_slopes", probes=("bias-alibi-slope-base",))
def test_alibi_slopes_for_a_power_of_two_heads(student, cases):
    expect_value(student, cases["slopes/eight"])
    expect_value(student, cases["slopes/power-of-two"])


@pytest.mark.mha(points=2, function="alibi_slopes", probes=("bias-alibi-non-power-of-two",))
def test_alibi_slopes_for_a_head_count_that_is_no_power_of_two(student, cases):
    expect_value(student, cases["slopes/heads"])
    expect_value(student, cases["slopes/other"])


@pytest.mark.mha(points=2, function="alibi_bias", probes=("bias-alibi-sign", "bias-alibi-orientation",
                                                          "bias-alibi-per-head"))
def test_alibi_bias_penalises_distance_in_every_head(student, cases):
    expect_value(student, cases["bias/self"])


@pytest.mark.mha(points=2, function="alibi_bias", probes=("bias-alibi-orientation",))
def test_alibi_bias_places_the_queries_after_the_cache(student, cases):
    expect_value(student, cases["bias/decode"])
    expect_value(student, cases["bias/one-step"])
