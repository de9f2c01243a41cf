"""Public checks of rotary_attention: queries and keys turned, values left alone, positions from the offset."""

import pytest

from grader.grading.checks import expect_unchanged, expect_value

pytestmark = pytest.mark.mha(function="rotary_attention", visibility="public")


@pytest.mark.mha(points=3, probes=("rope-rotates-values", "rope-rotates-in-place"))
def test_rotary_attention_turns_queries_and_keys_but_not_values(student, cases):
    expect_value(student, cases["attention/prefill"])
    expect_unchanged(student, cases["attention/prefill"])


@pytest.mark.mha(points=3, probes=("rope-offset-ignored",))
def test_decoding_from_an_offset_gives_the_rows_of_the_full_pass(student, cases):
    expect_value(student, cases["attention/decode"])
    expect_value(student, cases["attention/one-step"])


@pytest.mark.mha(points=1, probes=("rope-offset-ignored",))
def test_queries_from_the_middle_of_the_sequence(student, cases):
    expect_value(student, cases["attention/middle"])


@pytest.mark.mha(points=1)
def test_rotary_attention_with_large_logits(student, cases):
    expect_value(student, cases["attention/large-logits"])
