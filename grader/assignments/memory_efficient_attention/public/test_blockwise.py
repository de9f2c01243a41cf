"""Public checks of memory_efficient_attention: equal to plain attention, block after block."""

from grader.content.messages import Message
from grader.grading.checks import CheckFailure, expect_value
from grader.grading.marker import mha
from grader.grading.numerics import rel_error

pytestmark = mha(function="memory_efficient_attention", visibility="public")
TOLERANCE = 1e-6


@mha(points=2, probes=("flash-no-final-rescale",))
def test_one_block_is_plain_attention(student, cases):
    expect_value(student, cases["flash/one-block"])


@mha(points=4, probes=("flash-no-rescale-sum", "flash-no-rescale-output", "flash-no-final-rescale"))
def test_many_blocks_and_a_ragged_last_block(student, cases):
    expect_value(student, cases["flash/blocks"])
    expect_value(student, cases["flash/block-of-one"])


@mha(points=1)
def test_relative_error_below_one_in_a_million(student, cases):
    case = cases["flash/blocks"]
    got = expect_value(student, case)
    error = rel_error(got, case.expected)
    if not error <= TOLERANCE:
        raise CheckFailure(Message("relative_error", {"what": case.call_text, "error": f"{error:.3g}",
                                                      "tolerance": f"{TOLERANCE:g}"}),
                           misconception="numeric-mismatch")


@mha(points=3)
def test_causal_blocks(student, cases):
    expect_value(student, cases["flash/causal"])
    expect_value(student, cases["flash/causal-cached"])


@mha(points=2)
def test_large_logits_stay_finite(student, cases):
    expect_value(student, cases["flash/large-logits"])
