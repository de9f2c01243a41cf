"""Public checks of slot_mapping and gather: a token's slot follows the block table; a gather stops at the length."""

from grader.grading.checks import expect_unchanged, expect_value
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


@mha(points=2, function="slot_mapping", probes=("paged-slot-swapped", "paged-pool-order"))
def test_paged_slots_follow_the_block_table(student, cases):
    expect_value(student, cases["slots/table"])
    expect_value(student, cases["slots/shuffled"])


@mha(points=1, function="slot_mapping", probes=("paged-slot-swapped",))
def test_paged_slots_within_one_block(student, cases):
    expect_value(student, cases["slots/one-block"])


@mha(points=2, function="gather", probes=("paged-pool-order", "paged-stale-slots"))
def test_paged_gather_reads_the_table_in_order_and_stops_at_the_length(student, cases):
    expect_value(student, cases["gather/partial"])
    expect_unchanged(student, cases["gather/partial"])


@mha(points=1, function="gather", probes=("paged-stale-slots",))
def test_paged_gather_of_whole_blocks_and_of_one_token(student, cases):
    expect_value(student, cases["gather/whole-blocks"])
    expect_value(student, cases["gather/one-token"])
