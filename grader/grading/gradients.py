"""Check a student's gradients against numerical gradients, with ``rel_error``.

A case's expected value holds central-difference gradients (nested tuples
allowed, e.g. ``(out, (dQ, dK, dV), dW_Q, ...)``). Each array the student
returns must be within ``tolerance`` relative error of its counterpart; when
one is not, the whole value is first compared with every catalogued
mistake, then the first gradient that is off is named.
"""

from __future__ import annotations

import numpy as np

from grader.content.messages import Message
from grader.grading.case import Case
from grader.grading.checks import CheckFailure, failure_from_error, failure_from_value
from grader.grading.numerics import rel_error
from grader.grading.student import StudentCode
from grader.results import UNEXPLAINED_VALUE

TOLERANCE = 1e-5  # float32 arithmetic stays near 1e-7; a wrong step is off by far more


def leaves(value, names: tuple[str, ...] = ()) -> list[tuple[str, object]]:
    """(name, array) pairs of a value made of nested tuples, in order."""
    if not isinstance(value, tuple):
        return [(names[0] if names else "value", value)]
    pairs = []
    for position, item in enumerate(value):
        name = names[position] if position < len(names) else f"#{position + 1}"
        inner = tuple(part.strip(" ()") for part in name.split(",")) if isinstance(item, tuple) else (name,)
        pairs.extend(leaves(item, inner) if isinstance(item, tuple) else [(name, item)])
    return pairs


def expect_gradients(student: StudentCode, case: Case, names: tuple[str, ...],
                     tolerance: float = TOLERANCE):
    """The student's gradients for ``case``; raises CheckFailure unless each is close enough."""
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case)
    got = outcome.value
    expected_leaves, got_leaves = leaves(case.expected, names), leaves(got, names)
    shapes_match = len(got_leaves) == len(expected_leaves) and all(
        isinstance(value, np.ndarray) and value.shape == expected.shape
        for (_, value), (_, expected) in zip(got_leaves, expected_leaves))
    if shapes_match:
        errors = [(name, rel_error(value, expected))
                  for (name, value), (_, expected) in zip(got_leaves, expected_leaves)]
        worst = [(name, error) for name, error in errors if not error <= tolerance]
        if not worst:
            return got
    diagnosed = failure_from_value(case, got)
    if not shapes_match or diagnosed.misconception not in UNEXPLAINED_VALUE:
        raise diagnosed
    name, error = worst[0]
    raise CheckFailure(Message("gradient_error", {"what": case.call_text, "name": name, "error": f"{error:.3g}",
                                                  "tolerance": f"{tolerance:g}"}),
                       misconception="numeric-mismatch")
