"""Public checks of pre_norm_block: the sublayer sees the normalised input, the raw input is added back."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(function="pre_norm_block", visibility="public")


@pytest.mark.mha(points=3, probes=("norm-post-norm", "norm-branch-output", "norm-residual-source"))
def test_pre_norm_block_adds_the_sublayer_of_the_normalised_input_to_x(student, cases):
    expect_value(student, cases["block/tokens"])


@pytest.mark.mha(points=1)
def test_pre_norm_block_with_another_number_of_heads(student, cases):
    expect_value(student, cases["block/other-heads"])


@pytest.mark.mha(points=1, probes=("norm-in-place",))
def test_pre_norm_block_leaves_the_residual_stream_alone(student, cases):
    expect_unchanged(student, cases["block/tokens"])


@pytest.mark.mha(points=1)
def test_pre_norm_block_with_large_logits(student, cases):
    expect_value(student, cases["block/large-logits"])
