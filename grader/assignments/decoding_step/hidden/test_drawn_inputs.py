"""Hidden checks of the decoding-step exercise, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_values

pytestmark = pytest.mark.mha(visibility="hidden")


def _starting(cases, prefixes):
    return [cases[name] for name in sorted(cases) if name.startswith(prefixes)]


@pytest.mark.mha(points=1, function="softmax")
def test_softmax_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("softmax/",)))


@pytest.mark.mha(points=1, function="apply_temperature")
def test_temperature_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("temperature/",)))


@pytest.mark.mha(points=1, function="top_k_filter")
def test_top_k_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("top-k/",)))


@pytest.mark.mha(points=2, function="top_p_filter")
def test_top_p_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("top-p/",)))


@pytest.mark.mha(points=2, function="next_token_distribution")
def test_distribution_on_drawn_logits(student, cases):
    expect_values(student, _starting(cases, ("distribution/",)))


@pytest.mark.mha(points=1, function="sample")
def test_sample_on_drawn_probabilities(student, cases):
    expect_values(student, _starting(cases, ("sample/",)))
