"""Public checks of rope_frequencies and sinusoidal_positions: one ladder of frequencies, two uses."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(visibility="public")


@pytest.mark.mha(points=2, function="rope_frequencies", probes=("rope-frequency-exponent",))
def test_frequencies_start_at_one_radian_and_slow_down(student, cases):
    expect_value(student, cases["frequencies/head"])
    expect_value(student, cases["frequencies/model"])


@pytest.mark.mha(points=1, function="rope_frequencies", probes=("rope-frequency-exponent",))
def test_a_larger_base_slows_the_last_pairs(student, cases):
    expect_value(student, cases["frequencies/base"])


@pytest.mark.mha(points=2, function="sinusoidal_positions", probes=("rope-sinusoid-layout",))
def test_sinusoidal_table_puts_sine_and_cosine_side_by_side(student, cases):
    expect_value(student, cases["sinusoid/table"])


@pytest.mark.mha(points=1, function="sinusoidal_positions", probes=("rope-frequency-exponent",))
def test_sinusoidal_table_over_many_positions(student, cases):
    expect_value(student, cases["sinusoid/long"])
