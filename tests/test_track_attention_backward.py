"""The backward-pass exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

import numpy as np

ASSIGNMENT = "attention_backward"


def test_reference_gradients_agree_with_central_differences():
    from grader.assignments.attention_backward import cases as backward
    from grader.assignments.twinning import run_case
    from grader.grading.gradients import leaves
    from grader.grading.numerics import rel_error
    from grader.grading.reference import load_reference

    reference = load_reference(ASSIGNMENT)
    for name, case in backward.public_cases().items():
        analytic, numerical = leaves(run_case(reference, case)), leaves(case.expected)
        assert len(analytic) == len(numerical) > 0
        assert max(rel_error(a, n) for (_, a), (_, n) in zip(analytic, numerical)) < 1e-8, name


def test_a_gradient_off_by_a_small_factor_fails_with_its_name():
    from grader.grading.gradients import TOLERANCE, leaves
    from grader.grading.numerics import rel_error

    gradient = np.linspace(-1.0, 1.0, 12)
    assert rel_error(gradient * (1 + 4 * TOLERANCE), gradient) > TOLERANCE
    assert [name for name, _ in leaves((1, (2, 3), 4), ("out", "(dQ, dK)", "dW"))] == ["out", "dQ", "dK", "dW"]
