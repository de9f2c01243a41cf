"""Public checks of split_heads and combine_heads, the inverse pair."""

import numpy as np

from grader.content.messages import Message
from grader.grading.case import same_value
from grader.grading.checks import (CheckFailure, describe, did_not_return, expect_unchanged, expect_value,
                                   expect_values, failure_from_error, failure_from_value, is_missing)
from grader.grading.marker import mha

pytestmark = mha(visibility="public")


def _expect_shape(student, case):
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case, student=student)
    if not isinstance(outcome.value, np.ndarray) or outcome.value.shape != case.expected.shape:
        raise failure_from_value(case, outcome.value, student=student, reached=outcome.reached)


@mha(points=1, function="split_heads")
def test_split_heads_shape(student, cases):
    _expect_shape(student, cases["split/cross"])


@mha(points=3, function="split_heads",
                 probes=("split-heads-no-transpose", "split-heads-interleaved", "split-heads-wrong-axes"))
def test_split_heads_gives_each_head_a_contiguous_block(student, cases):
    expect_value(student, cases["split/cross"])


@mha(points=1, function="split_heads", probes=("split-heads-hardcoded-shape",))
def test_split_heads_works_for_any_batch_and_length(student, cases):
    # Beside the usual input: one position, a longer batch, one layer on two lengths in turn, a layer of
    # another head count and one sentence of several positions. A failure on one of them where the split
    # is right on the usual input, or on the single sentence (right there and wrong on a batch: the batch
    # size is a constant), is a size written into the code.
    for name in ("split/one", "split/long", "layer/split-twice", "split/other-heads", "split/one-batch"):
        case = cases[name]
        try:
            expect_value(student, case)
        except CheckFailure as failure:
            if failure.misconception not in ("wrong-shape", "error", "numeric-mismatch",
                                             "split-heads-hardcoded-shape"):
                raise
            witness = next((cases[other] for other in ("split/cross", "split/one-batch")
                            if other != name and _right_on(student, cases[other])), None)
            if witness is None:
                raise
            if name == "split/other-heads":
                heads = case.init[1]
                message = Message("hardcoded_heads", {"heads": heads, "width": case.init[0] // heads})
            else:
                message = Message("hardcoded_shape", {"shape": (case.args or case.calls[-1][1])[0].shape})
            raise CheckFailure(message, *failure.messages, misconception="split-heads-hardcoded-shape") from None


def _right_on(student, case) -> bool:
    if student.invoke(case).error is not None:
        return False
    try:
        expect_value(student, case)
    except CheckFailure:
        return False
    return True


@mha(points=1, function="combine_heads")
def test_combine_heads_shape(student, cases):
    _expect_shape(student, cases["combine/cross"])


@mha(points=3, function="combine_heads",
                 probes=("combine-heads-no-transpose", "combine-heads-wrong-order"))
def test_combine_heads_concatenates_heads_in_order(student, cases):
    expect_values(student, [cases["combine/cross"], cases["combine/long"]])


@mha(points=1, function="combine_heads")
def test_combine_heads_undoes_split_heads(student, cases):
    case = cases["split/cross"]
    split = student.invoke(case)
    if split.error is not None or not same_value(split.value, case.expected):
        # split_heads hangs, crashes, raises or is wrong (its own checks say so): combine_heads is judged alone,
        # on the heads it is given anyway (combine/cross), whose right split is that case's expected value, so
        # a broken split costs combine_heads nothing. No expected value is ever sent in.
        case = cases["combine/cross"]
        outcome, x = student.invoke(case), case.expected
    else:
        outcome, x = student.call("combine_heads", split.value, like=case), case.args[0]
    if outcome.error is not None:
        raise failure_from_error("combine_heads", outcome)
    back = outcome.value
    if not isinstance(back, np.ndarray):  # e.g. a value too large for a reply, or not an array at all
        raise CheckFailure(Message("wrong_type", {"what": "combine_heads(x)", "got": describe(back)}),
                           misconception="wrong-type")
    difference = np.abs(back - x).max() if back.shape == x.shape else np.inf
    if not difference < 1e-6:
        raise CheckFailure(Message("not_inverse", {"difference": f"{difference:.3g}"}),
                           misconception="numeric-mismatch")


@mha(points=1, function="split_heads", probes=("mha-mutates-input",))
def test_split_and_combine_leave_their_input_unchanged(student, cases):
    expect_unchanged(student, cases["split/cross"])
    if not did_not_return(student.invoke(cases["combine/cross"])):  # a hang or crash is combine_heads' own checks' to report
        expect_unchanged(student, cases["combine/cross"])

