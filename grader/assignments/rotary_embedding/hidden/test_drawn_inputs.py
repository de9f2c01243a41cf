"""Hidden checks of the rotary-embedding exercise, on sizes and values drawn from the student's seed."""

import pytest

from grader.grading.checks import expect_unchanged, expect_values

pytestmark = pytest.mark.mha(visibility="hidden")


def _starting(cases, prefixes):
    return [cases[name] for name in sorted(cases) if name.startswith(prefixes)]


@pytest.mark.mha(points=1, function="rope_frequencies")
def test_frequencies_for_drawn_widths(student, cases):
    expect_values(student, _starting(cases, ("frequencies/",)))


@pytest.mark.mha(points=1, function="sinusoidal_positions")
def test_sinusoidal_table_for_drawn_sizes(student, cases):
    expect_values(student, _starting(cases, ("sinusoid/",)))


@pytest.mark.mha(points=2, function="apply_rotary")
def test_rotary_on_drawn_inputs_and_positions(student, cases):
    expect_values(student, _starting(cases, ("rotary/", "relative/")))
    expect_unchanged(student, cases["rotary/far"])


@pytest.mark.mha(points=3, function="rotary_attention")
def test_rotary_attention_and_decoding_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, ("attention/",)))
    expect_unchanged(student, cases["attention/decode"])
