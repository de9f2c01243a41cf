"""Public checks of linear_attention_step: add the new token, then read, and return the new sums."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(function="linear_attention_step", visibility="public")


@pytest.mark.mha(points=2, probes=("linear-attention-step-reads-before-update",))
def test_step_from_an_empty_state(student, cases):
    expect_value(student, cases["step/first"])


@pytest.mark.mha(points=2, probes=("linear-attention-step-reads-before-update", "linear-attention-no-normaliser",
                                   "linear-attention-feature-map-missing"))
def test_step_after_earlier_tokens_gives_the_causal_row(student, cases):
    expect_value(student, cases["step/middle"])


@pytest.mark.mha(points=1, probes=("linear-attention-step-in-place",))
def test_step_leaves_the_callers_state_alone(student, cases):
    expect_unchanged(student, cases["step/middle"])
