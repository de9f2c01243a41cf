"""Public checks of sliding_window_mask: window keys, the query's own among them, none after it."""

import pytest

from grader.grading.checks import expect_value

pytestmark = pytest.mark.mha(function="sliding_window_mask", visibility="public")


@pytest.mark.mha(points=2, probes=("bias-window-off-by-one", "bias-window-not-causal"))
def test_sliding_window_sees_itself_and_the_keys_just_before(student, cases):
    expect_value(student, cases["window/self"])


@pytest.mark.mha(points=2, probes=("bias-window-not-causal",))
def test_sliding_window_when_decoding_after_a_cache(student, cases):
    expect_value(student, cases["window/decode"])


@pytest.mark.mha(points=1, probes=("bias-window-off-by-one",))
def test_sliding_window_of_one_and_wider_than_the_keys(student, cases):
    expect_value(student, cases["window/one"])
    expect_value(student, cases["window/wide"])
