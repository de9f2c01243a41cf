"""Public checks of PagedKVCache.append and free: blocks taken exactly when needed, never shared, reused after free."""

from grader.content.messages import Message
from grader.grading.checks import expect_raised, expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


@mha(points=3, function="append", probes=("paged-shared-block", "paged-allocate-off-by-one"))
def test_paged_sequences_appended_in_turns_keep_their_own_blocks(student, cases):
    expect_value(student, cases["cache/in-turns"])


@mha(points=2, function="append", probes=("paged-allocate-off-by-one",))
def test_paged_a_block_is_taken_exactly_when_the_last_one_is_full(student, cases):
    expect_value(student, cases["cache/exact-fill"])
    expect_value(student, cases["cache/one-by-one"])


@mha(points=2, function="free", probes=("paged-stale-slots",))
def test_paged_freed_blocks_are_reused_and_their_old_slots_never_read(student, cases):
    expect_value(student, cases["cache/reuse"])


@mha(points=1, function="append")
def test_paged_a_full_pool_is_refused(student, cases):
    case = cases["refused/pool-full"]
    call = f"PagedKVCache({', '.join(map(str, case.init))}); {case.call_text}"
    expect_raised(student, case, "RuntimeError", lambda got: Message(
        "refusal_expected", {"function": case.function, "expected": "RuntimeError", "call": call, "got": got}))
