"""Hidden checks of the masked-attention exercise, on sizes and values drawn from the student's seed."""

from grader.grading.checks import expect_unchanged, expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="hidden")


def _all(student, cases, prefix):
    for name in sorted(name for name in cases if name.startswith(prefix)):
        expect_value(student, cases[name])


@mha(points=2, function="causal_mask")
def test_causal_mask_on_drawn_sizes(student, cases):
    _all(student, cases, "causal/")


@mha(points=1, function="padding_mask")
def test_padding_mask_on_drawn_lengths(student, cases):
    _all(student, cases, "padding/")


@mha(points=3, function="masked_softmax")
def test_masked_softmax_on_drawn_inputs(student, cases):
    _all(student, cases, "softmax/")
    expect_unchanged(student, cases["softmax/causal"])


@mha(points=3, function="masked_attention")
def test_masked_attention_on_drawn_inputs(student, cases):
    _all(student, cases, "attention/")
    expect_unchanged(student, cases["attention/padding"])
