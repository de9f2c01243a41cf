"""Public checks of apply_rotary: adjacent pairs turned by position times frequency."""

import numpy as np
import pytest

from grader.content.messages import Message
from grader.grading.case import same_value
from grader.grading.checks import CheckFailure, expect_unchanged, expect_value

pytestmark = pytest.mark.mha(function="apply_rotary", visibility="public")


@pytest.mark.mha(points=3, probes=("rope-pairs-halves", "rope-rotation-matrix", "rope-frequency-exponent"))
def test_rotary_turns_adjacent_pairs_by_position_times_frequency(student, cases):
    expect_value(student, cases["rotary/scattered"])
    expect_value(student, cases["rotary/far"])


@pytest.mark.mha(points=1)
def test_rotary_with_another_base_and_no_leading_axes(student, cases):
    expect_value(student, cases["rotary/base-no-batch"])


@pytest.mark.mha(points=1, probes=("rope-rotates-in-place",))
def test_rotary_returns_a_new_array_and_leaves_x_alone(student, cases):
    expect_unchanged(student, cases["rotary/scattered"])


def _scores(turned: np.ndarray) -> np.ndarray:
    """(2, 1, T, d_k), queries then keys at the same positions -> the (T, T) scores q . k."""
    return turned[0, 0] @ turned[1, 0].T


@pytest.mark.mha(points=2, probes=("rope-pairs-halves",))
def test_scores_depend_only_on_how_far_apart_tokens_are(student, cases):
    near, shifted = cases["relative/near"], cases["relative/shifted"]
    outcomes = [student.invoke(case) for case in (near, shifted)]
    if any(outcome.error is not None or not isinstance(outcome.value, np.ndarray)
           or outcome.value.shape != near.expected.shape for outcome in outcomes):
        expect_value(student, near)  # an error or a wrong shape, explained as for any call
        expect_value(student, shifted)
    before, after = (_scores(outcome.value.astype(np.float64)) for outcome in outcomes)
    if same_value(before, after):
        return
    shift = int(shifted.args[1][0] - near.args[1][0])
    moved = Message("rope_not_relative", {"shift": shift, "difference": f"{np.abs(before - after).max():.3g}"})
    try:
        expect_value(student, near)
        expect_value(student, shifted)
    except CheckFailure as failure:
        failure.messages = (moved, *failure.messages)
        raise
    raise CheckFailure(moved, function="apply_rotary")
