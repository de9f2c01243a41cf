"""Public checks of repeat_kv: each key/value head serves a contiguous group of query heads."""

import numpy as np

from grader.grading.checks import expect_value, failure_from_error, failure_from_value
from grader.grading.marker import mha

pytestmark = mha(function="repeat_kv", visibility="public")


@mha(points=1)
def test_repeat_kv_shape(student, cases):
    case = cases["repeat/grouped"]
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case)
    if not isinstance(outcome.value, np.ndarray) or outcome.value.shape != case.expected.shape:
        raise failure_from_value(case, outcome.value)


@mha(points=3, probes=("gqa-tile-not-repeat",))
def test_repeat_kv_keeps_the_copies_of_each_head_together(student, cases):
    for name in ("repeat/grouped", "repeat/identity", "repeat/one-kv-head"):
        expect_value(student, cases[name])
