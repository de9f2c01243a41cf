"""Public checks of masked_softmax."""

import numpy as np

from grader.content.messages import Message
from grader.grading.checks import CheckFailure, expect_unchanged, expect_value, failure_from_value
from grader.grading.marker import mha

pytestmark = mha(function="masked_softmax", visibility="public")


@mha(points=4, probes=("mask-after-softmax", "mask-zero-fill", "mask-inverted"))
def test_masked_softmax_values(student, cases):
    expect_value(student, cases["softmax/causal"])
    expect_value(student, cases["softmax/padding"])


@mha(points=1)
def test_masked_entries_get_exactly_zero_weight(student, cases):
    case = cases["softmax/padding"]
    value = student.invoke(case).value
    if not isinstance(value, np.ndarray) or value.shape != case.expected.shape:
        expect_value(student, case)
    leaked = np.abs(np.where(np.broadcast_to(case.args[1], value.shape), 0.0, value.astype(np.float64))).max()
    if not leaked == 0.0:
        failure = failure_from_value(case, value)
        failure.messages = (Message("masked_weight", {"value": f"{leaked:.3g}"}), *failure.messages)
        raise failure


@mha(points=2, probes=("mask-fully-masked-nan",))
def test_a_fully_masked_row_is_all_zeros(student, cases):
    case = cases["softmax/fully-masked"]
    try:
        expect_value(student, case)
    except CheckFailure as failure:
        value = student.invoke(case).value
        if isinstance(value, np.ndarray) and value.shape == case.expected.shape and \
                not np.isfinite(value.astype(np.float64)).all():
            failure.messages = (Message("fully_masked_nan", {}), *failure.messages)
        raise


@mha(points=2)
def test_masked_softmax_is_stable_for_large_logits(student, cases):
    expect_value(student, cases["softmax/stability"])


@mha(points=1, probes=("mask-mutates-input",))
def test_masked_softmax_leaves_scores_and_mask_unchanged(student, cases):
    expect_unchanged(student, cases["softmax/padding"])
    expect_unchanged(student, cases["softmax/stability"])
