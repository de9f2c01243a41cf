"""Public checks of KVCache.update: the cache grows along the sequence axis."""

from grader.grading.marker import mha
from grader.grading.steps import expect_steps

pytestmark = mha(function="update", visibility="public")


@mha(points=1)
def test_first_update_returns_the_new_keys_and_values(student, cases):
    expect_steps(student, cases["update/first"])


@mha(points=3, probes=("kv-cache-not-appended",))
def test_each_update_appends_after_the_earlier_tokens(student, cases):
    expect_steps(student, cases["update/three"])
