"""Public checks of next_token_distribution and sample: the steps in order, one softmax at the end, inverse-CDF draws."""

from grader.grading.checks import expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


@mha(points=2, function="next_token_distribution",
                 probes=("decode-temperature-misapplied", "decode-not-renormalised"))
def test_distribution_applies_temperature_then_the_filters_then_one_softmax(student, cases):
    expect_value(student, cases["distribution/plain"])
    expect_value(student, cases["distribution/top-k"])
    expect_value(student, cases["distribution/top-p"])


@mha(points=2, function="next_token_distribution", probes=("decode-not-renormalised",))
def test_distribution_with_both_filters_sums_to_one(student, cases):
    expect_value(student, cases["distribution/both"])


@mha(points=1, function="next_token_distribution", probes=("decode-greedy-divides-by-zero",))
def test_greedy_distribution_is_one_hot(student, cases):
    expect_value(student, cases["distribution/greedy"])


@mha(points=1, function="next_token_distribution")
def test_distribution_with_large_logits(student, cases):
    expect_value(student, cases["distribution/large-logits"])


@mha(points=2, function="sample")
def test_sample_inverts_the_cumulative_distribution(student, cases):
    expect_value(student, cases["sample/drawn"])


@mha(points=1, function="sample", probes=("decode-sample-boundary",))
def test_sample_on_the_boundaries_never_draws_an_impossible_token(student, cases):
    expect_value(student, cases["sample/boundaries"])
