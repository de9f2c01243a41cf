"""Public checks of top_k_filter and top_p_filter: dropped tokens get -inf, the nucleus keeps the token crossing p."""

from grader.grading.checks import expect_unchanged, expect_value
from grader.grading.marker import mha

from .test_softmax_and_temperature import expect_refused

pytestmark = mha(visibility="public")


@mha(points=2, function="top_k_filter", probes=("decode-filter-zero",))
def test_top_k_keeps_the_k_largest_and_rules_out_the_rest(student, cases):
    expect_value(student, cases["top-k/few"])
    expect_value(student, cases["top-k/one"])


@mha(points=1, function="top_k_filter")
def test_top_k_keeps_every_token_tied_with_the_kth(student, cases):
    expect_value(student, cases["top-k/ties"])


@mha(points=1, function="top_k_filter")
def test_top_k_larger_than_the_vocabulary_keeps_everything(student, cases):
    expect_value(student, cases["top-k/all"])
    expect_unchanged(student, cases["top-k/all"])


@mha(points=3, function="top_p_filter",
                 probes=("decode-top-p-drops-crossing", "decode-top-p-unsorted", "decode-filter-zero"))
def test_nucleus_is_the_smallest_set_of_likeliest_tokens_reaching_p(student, cases):
    expect_value(student, cases["top-p/half"])
    expect_value(student, cases["top-p/most"])


@mha(points=1, function="top_p_filter")
def test_nucleus_always_keeps_one_token(student, cases):
    expect_value(student, cases["top-p/tiny"])


@mha(points=2, function="top_p_filter")
def test_nucleus_after_top_k_and_with_large_logits(student, cases):
    expect_value(student, cases["top-p/after-top-k"])
    expect_value(student, cases["top-p/large-logits"])
    expect_unchanged(student, cases["top-p/after-top-k"])


@mha(points=1, function="top_k_filter")
def test_a_k_below_one_is_refused(student, cases):
    expect_refused(student, cases["refused/k-zero"])


@mha(points=1, function="top_p_filter")
def test_a_p_outside_zero_to_one_is_refused(student, cases):
    expect_refused(student, cases["refused/p-zero"])
    expect_refused(student, cases["refused/p-above-one"])
