"""Public checks of softmax: shapes, values, stability, -inf, purity."""

import numpy as np

from grader.content.messages import Message
from grader.grading.checks import (CheckFailure, expect_unchanged, expect_value, expect_values, failure_from_error,
                                   failure_from_value)
from grader.grading.marker import mha

pytestmark = mha(function="softmax", visibility="public")


@mha(points=2)
def test_softmax_keeps_the_shape(student, cases):
    for name in ("softmax/1d", "softmax/2d", "softmax/4d"):
        case = cases[name]
        outcome = student.invoke(case)
        if outcome.error is not None:
            raise failure_from_error("softmax", outcome, case, student=student)
        if not isinstance(outcome.value, np.ndarray) or outcome.value.shape != case.expected.shape:
            raise failure_from_value(case, outcome.value, student=student, reached=outcome.reached)


@mha(points=3)
def test_softmax_values(student, cases):
    expect_values(student, [cases[name] for name in ("softmax/1d", "softmax/2d", "softmax/4d", "softmax/square")])


@mha(points=1)
def test_softmax_rows_sum_to_one(student, cases):
    case = cases["softmax/4d"]
    value = student.invoke(case).value
    if not isinstance(value, np.ndarray) or value.shape != case.expected.shape:
        expect_value(student, case)
    sums = value.astype(np.float64).sum(axis=-1)
    worst = sums.flat[int(np.argmax(np.abs(sums - 1)))] if sums.size else 1.0
    if not np.allclose(sums, 1.0, atol=1e-5):
        failure = failure_from_value(case, value, student=student)
        failure.messages = (Message("rows_not_normalized", {"what": "softmax(x)", "value": f"{worst:.4g}"}),
                            *failure.messages)
        raise failure


@mha(points=1)
def test_softmax_ignores_a_constant_added_to_a_row(student, cases):
    case = cases["softmax/2d"]
    base = expect_value(student, case)
    shift = np.linspace(-5.0, 7.0, case.args[0].shape[0])[:, None]  # one constant per row
    outcome = student.call("softmax", case.args[0] + shift)
    if outcome.error is not None:
        raise failure_from_error("softmax", outcome)
    shifted = outcome.value
    difference = np.abs(shifted - base).max() if isinstance(shifted, np.ndarray) and shifted.shape == base.shape \
        else np.inf
    if not difference < 1e-5:
        raise CheckFailure(Message("not_shift_invariant", {"difference": f"{difference:.3g}"}),
                           misconception="numeric-mismatch")


@mha(points=3, probes=("softmax-unstable", "softmax-global-max"))
def test_softmax_is_stable_for_large_logits(student, cases):
    expect_values(student, [cases["softmax/stability"], cases["softmax/stability-row"]])


@mha(points=1)
def test_softmax_gives_zero_weight_to_minus_infinity(student, cases):
    expect_value(student, cases["softmax/neg-inf"])


@mha(points=1, probes=("softmax-mutates-input",))
def test_softmax_leaves_its_input_unchanged(student, cases):
    expect_unchanged(student, cases["softmax/2d"])
    expect_unchanged(student, cases["softmax/stability"])
    expect_unchanged(student, cases["softmax/neg-inf"])  # rewriting -inf in place changes nothing else
