"""Public checks of decode_attention and PagedKVCache.attend: one query over exactly the sequence's tokens."""

from grader.grading.checks import expect_unchanged, expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


@mha(points=2, function="decode_attention")
def test_paged_decode_attention_weights_every_cached_token(student, cases):
    expect_value(student, cases["attention/small"])
    expect_value(student, cases["attention/one-key"])
    expect_unchanged(student, cases["attention/small"])


@mha(points=1, function="decode_attention", probes=("paged-softmax-unstable",))
def test_paged_decode_attention_with_scores_near_a_thousand(student, cases):
    expect_value(student, cases["attention/large-scores"])


@mha(points=3, function="attend", probes=("paged-stale-slots", "paged-pool-order"))
def test_paged_attend_reads_only_the_sequences_own_tokens(student, cases):
    expect_value(student, cases["attend/in-turns"])


@mha(points=1, function="attend", probes=("paged-softmax-unstable",))
def test_paged_attend_with_scores_near_a_thousand(student, cases):
    expect_value(student, cases["attend/large-scores"])
