"""Hidden checks of the paged KV-cache exercise, on sizes and values drawn from the student's seed."""

from grader.grading.checks import expect_values
from grader.grading.marker import mha

pytestmark = mha(visibility="hidden")


def _starting(cases, prefixes):
    return [cases[name] for name in sorted(cases) if name.startswith(prefixes)]


@mha(points=1, function="slot_mapping")
def test_paged_slots_on_drawn_tables(student, cases):
    expect_values(student, _starting(cases, ("slots/",)))


@mha(points=1, function="gather")
def test_paged_gather_on_drawn_blocks(student, cases):
    expect_values(student, _starting(cases, ("gather/",)))


@mha(points=1, function="decode_attention")
def test_paged_decode_attention_on_drawn_inputs(student, cases):
    expect_values(student, _starting(cases, ("attention/",)))


@mha(points=2, function="append")
def test_paged_append_on_drawn_sizes(student, cases):
    expect_values(student, [cases["cache/in-turns"], cases["cache/exact-fill"], cases["cache/one-by-one"]])


@mha(points=1, function="free")
def test_paged_free_and_reuse_on_drawn_sizes(student, cases):
    expect_values(student, [cases["cache/reuse"]])


@mha(points=2, function="attend")
def test_paged_attend_on_drawn_sizes(student, cases):
    expect_values(student, _starting(cases, ("attend/",)))
