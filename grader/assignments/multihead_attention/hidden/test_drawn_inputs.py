"""Hidden checks: every function again, on sizes and values drawn from the student's seed.

The inputs differ between students and between runs of different students,
and stay the same when one submission is graded again.
"""

from grader.grading.checks import expect_unchanged, expect_values
from grader.grading.marker import mha

pytestmark = mha(visibility="hidden")


def _all(student, cases, prefix):
    expect_values(student, [cases[name] for name in sorted(name for name in cases if name.startswith(prefix))])


@mha(points=3, function="softmax",
                 probes=("softmax-unstable", "softmax-global-max", "softmax-wrong-axis", "softmax-no-keepdims"))
def test_softmax_on_drawn_inputs(student, cases):
    _all(student, cases, "softmax/")
    expect_unchanged(student, cases["softmax/4d"])


@mha(points=4, function="scaled_dot_product_attention")
def test_attention_on_drawn_inputs(student, cases):
    _all(student, cases, "attention/")
    expect_unchanged(student, cases["attention/self"])


@mha(points=2, function="split_heads")
def test_split_heads_on_drawn_inputs(student, cases):
    _all(student, cases, "split/")


@mha(points=2, function="combine_heads")
def test_combine_heads_on_drawn_inputs(student, cases):
    _all(student, cases, "combine/")


@mha(points=5, function="forward")
def test_forward_on_drawn_inputs(student, cases):
    _all(student, cases, "forward/")
    expect_unchanged(student, cases["forward/cross-weights"])
