"""Public checks of causal_linear_attention: inclusive running sums along the positions."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(function="causal_linear_attention", visibility="public")


@pytest.mark.mha(points=3, probes=("linear-attention-exclusive-prefix", "linear-attention-cumsum-axis",
                                   "linear-attention-feature-map-missing", "linear-attention-no-normaliser"))
def test_causal_rows_see_themselves_and_earlier_tokens(student, cases):
    expect_value(student, cases["causal/self"])
    expect_value(student, cases["causal/long"])


@pytest.mark.mha(points=2, probes=("linear-attention-future-leak",))
def test_causal_rows_ignore_later_tokens(student, cases):
    expect_value(student, cases["causal/later-changed"])
