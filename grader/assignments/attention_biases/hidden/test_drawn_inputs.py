"""Hidden checks of the attention-biases exercise, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_unchanged, expect_values

pytestmark = pytest.mark.mha(visibility="hidden")


def _starting(cases, prefixes):
    return [cases[name] for name in sorted(cases) if name.startswith(prefixes)]


@pytest.mark.mha(points=1, function="alibi_slopes")
def test_alibi_slopes_for_drawn_head_counts(student, cases):
    expect_values(student, _starting(cases, ("slopes/",)))


@pytest.mark.mha(points=1, function="alibi_bias")
def test_alibi_bias_for_drawn_sizes(student, cases):
    expect_values(student, _starting(cases, ("bias/",)))


@pytest.mark.mha(points=1, function="sliding_window_mask")
def test_sliding_window_for_drawn_sizes_and_window(student, cases):
    expect_values(student, _starting(cases, ("window/",)))


@pytest.mark.mha(points=2, function="biased_attention")
def test_biased_attention_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, ("attention/",)))
    expect_unchanged(student, cases["attention/bias-and-mask"])


@pytest.mark.mha(points=2, function="alibi_attention")
def test_alibi_attention_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, ("alibi/",)))
