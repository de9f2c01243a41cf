"""Public checks of biased_attention and alibi_attention: the bias joins the logits before the softmax."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(visibility="public")


@pytest.mark.mha(points=1, function="biased_attention")
def test_biased_attention_without_bias_or_mask_is_plain_attention(student, cases):
    expect_value(student, cases["attention/plain"])


@pytest.mark.mha(points=3, function="biased_attention", probes=("bias-after-softmax", "bias-scaled-with-scores"))
def test_biased_attention_adds_the_bias_to_the_logits(student, cases):
    expect_value(student, cases["attention/head-bias"])
    expect_value(student, cases["attention/batch-bias"])
    expect_unchanged(student, cases["attention/head-bias"])


@pytest.mark.mha(points=2, function="biased_attention", probes=("bias-after-softmax",))
def test_biased_attention_with_a_bias_and_a_mask(student, cases):
    expect_value(student, cases["attention/bias-and-mask"])


@pytest.mark.mha(points=1, function="biased_attention")
def test_biased_attention_with_large_logits(student, cases):
    expect_value(student, cases["attention/large-logits"])


@pytest.mark.mha(points=2, function="alibi_attention", probes=("bias-alibi-orientation",))
def test_alibi_attention_is_causal_with_a_bias_per_head(student, cases):
    expect_value(student, cases["alibi/prefill"])
    expect_value(student, cases["alibi/decode"])


@pytest.mark.mha(points=2, function="alibi_attention", probes=("bias-window-off-by-one",))
def test_alibi_attention_within_a_sliding_window(student, cases):
    expect_value(student, cases["alibi/window"])
