"""Public checks of masked_attention."""

from grader.grading.checks import expect_unchanged, expect_value
from grader.grading.marker import mha

pytestmark = mha(function="masked_attention", visibility="public")


@mha(points=3, probes=("mask-after-softmax", "mask-zero-fill", "mask-inverted"))
def test_causal_self_attention(student, cases):
    expect_value(student, cases["attention/causal"])


@mha(points=2)
def test_padded_cross_attention_with_earlier_tokens(student, cases):
    expect_value(student, cases["attention/padding"])
    expect_value(student, cases["attention/cached-causal-padding"])


@mha(points=1)
def test_no_mask_is_plain_attention(student, cases):
    expect_value(student, cases["attention/no-mask"])


@mha(points=1, probes=("mask-fully-masked-nan",))
def test_an_all_padding_sequence_gives_zero_output(student, cases):
    expect_value(student, cases["attention/empty-sequence"])


@mha(points=1, probes=("mask-mutates-input",))
def test_masked_attention_leaves_its_inputs_unchanged(student, cases):
    expect_unchanged(student, cases["attention/cached-causal-padding"])
