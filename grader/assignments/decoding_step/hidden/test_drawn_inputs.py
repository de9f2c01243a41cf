"""Hidden checks of the decoding-step exercise, on sizes and values drawn from the student's seed."""

from grader.grading.checks import expect_values
from grader.grading.marker import mha

pytestmark = mha(visibility="hidden")


def _starting(cases, prefixes):
    return [cases[name] for name in sorted(cases) if name.startswith(prefixes)]


@mha(points=1, function="softmax")
def test_softmax_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("softmax/",)))


@mha(points=1, function="apply_temperature")
def test_temperature_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("temperature/",)))


@mha(points=1, function="top_k_filter")
def test_top_k_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("top-k/",)))


@mha(points=2, function="top_p_filter")
def test_top_p_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("top-p/",)))


@mha(points=2, function="next_token_distribution")
def test_distribution_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("distribution/",)))


@mha(points=1, function="sample")
def test_sample_on_drawn_probabilities(student, cases):
    expect_values(student, _starting(cases, ("sample/",)))
