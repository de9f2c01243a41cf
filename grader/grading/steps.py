"""Checks of a case that makes several calls on one instance (``Case.calls``).

The value of such a case is the tuple of every call's result. When it is
wrong, the whole tuple is first compared with what each catalogued mistake
produces; otherwise the first call whose result differs is explained alone,
so the feedback names the step rather than the whole sequence.
"""

from __future__ import annotations

import dataclasses

from grader.content.messages import Message
from grader.grading.case import Case, same_value
from grader.grading.checks import CheckFailure, failure_from_error, failure_from_value, generic_failure
from grader.grading.student import StudentCode
from grader.results import UNEXPLAINED_VALUE


def step_text(case: Case, position: int) -> str:
    path, args, _ = case.calls[position]
    names = ", ".join(f"#{i + 1}" for i in range(len(args))) if args is not None else None
    return f"{path}({names})" if names is not None else path


def expect_steps(student: StudentCode, case: Case) -> tuple:
    """Every result of ``case``'s calls; raises CheckFailure at the first that is wrong."""
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case)
    got = outcome.value
    if same_value(got, case.expected):
        return got
    diagnosed = failure_from_value(dataclasses.replace(case, twins=list(case.known_twins())), got)
    if diagnosed.misconception not in UNEXPLAINED_VALUE:
        raise diagnosed
    if not isinstance(got, tuple) or len(got) != len(case.expected):
        raise diagnosed
    for position, (got_step, expected_step) in enumerate(zip(got, case.expected)):
        if not same_value(got_step, expected_step):
            step = dataclasses.replace(case, expected=expected_step, twins=[],
                                       call_text=f"{case.call_text or case.function}, {step_text(case, position)}")
            failure = generic_failure(step, got_step)
            raise CheckFailure(Message("step_differs", {"step": position + 1, "count": len(got)}),
                               *failure.messages, misconception=failure.misconception)
    raise diagnosed
