"""What a suite's checks assert, and how a failure is explained.

A failing check raises ``CheckFailure`` carrying bilingual messages, the
misconception it matched (a catalog id or a generic outcome) and the
function where the mistake really is. Diagnosis first compares the student's
value with what every catalogued mistake produces on the same input; only when
none matches does it fall back to a generic outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from grader.grading.case import Case, Raised, same_value
from grader.content.catalog import load_catalog
from grader.content.messages import Message
from grader.sandbox.codec import ForeignObject

if TYPE_CHECKING:  # annotations only: diagnosis needs the sandbox's data, never the sandbox
    from grader.grading.student import StudentCode
    from grader.sandbox.client import CallError, CallOutcome

class CheckFailure(AssertionError):
    """A check that did not pass, with its explanation."""

    def __init__(self, *messages: Message, misconception: str | None = None,
                 root_cause: str | None = None, outcome: str = "failed", alternatives: tuple = ()):
        super().__init__(messages[0].key if messages else "failed")
        self.messages = messages
        self.misconception = misconception
        self.root_cause = root_cause
        self.outcome = outcome
        # other mistakes that explain the same value: [(misconception, root function, failure)]
        self.alternatives = alternatives


def expect_value(student: StudentCode, case: Case):
    """The student's value for ``case``; raises CheckFailure unless it is right."""
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case)
    if same_value(outcome.value, case.expected):
        return outcome.value
    raise failure_from_value(case, outcome.value)


def expect_unchanged(student: StudentCode, case: Case) -> None:
    """The call of ``case`` must leave its inputs as they were.

    Only a call that did its work counts: the value must have the expected
    structure and shapes, so an empty body that returns None earns nothing here.
    """
    outcome = student.invoke(case)
    if outcome.error is not None:
        raise failure_from_error(case.function, outcome, case)
    if not _same_structure(outcome.value, case.expected):
        raise failure_from_value(case, outcome.value)
    names = case.argument_names or ()
    for position, (before, after) in enumerate(zip(case.args, outcome.args_after)):
        if not isinstance(after, np.ndarray) or before.shape != after.shape or not np.array_equal(
                before, after, equal_nan=True):
            name = names[position] if position < len(names) else f"#{position + 1}"
            raise CheckFailure(Message("mutated", {"function": case.function, "argument": name}),
                               misconception=case.mutation_id)


def _same_structure(got, expected) -> bool:
    if isinstance(expected, tuple):
        return isinstance(got, tuple) and len(got) == len(expected) and all(
            _same_structure(g, e) for g, e in zip(got, expected))
    if isinstance(expected, np.ndarray):
        return isinstance(got, np.ndarray) and got.shape == expected.shape
    return True


def failure_from_error(function: str, outcome: CallOutcome, case: Case | None = None) -> CheckFailure:
    """Explain an exception raised by (or instead of) the student's call."""
    error: CallError = outcome.error
    if error.type == "Timeout":
        return CheckFailure(Message("timeout", {"function": function, "limit": _limit(error)}),
                            misconception="timeout", outcome="timeout")
    if error.type in ("WorkerGone", "LoadError", "BadReply", "UnencodableResult", "Protocol"):
        return CheckFailure(Message("worker_gone", {"function": function, "reason": error.message}),
                            misconception="error", outcome="error")
    if error.type == "MissingName":
        return CheckFailure(Message("missing_name", {"name": error.message.strip("'\"")}),
                            misconception="not-implemented", outcome="error")
    if error.type == "NotImplementedError":
        return CheckFailure(Message("not_implemented", {"function": function}), misconception="not-implemented")
    raised = Message("raised", {"function": function, "type": error.type, "message": error.message,
                                "location": _location(error)})
    matches = [(misconception, label) for misconception, label, value in (case.known_twins() if case else ())
               if isinstance(value, Raised) and value.type == error.type and value.message == error.message]
    if matches:
        return _best([_diagnosed(case, misconception, label, raised) for misconception, label in matches], case)
    return CheckFailure(raised, misconception=_by_rules(case, error), outcome="error")


def failure_from_value(case: Case, got) -> CheckFailure:
    """Explain a value that differs from the expected one."""
    what = _what(case)
    matches = [_diagnosed(case, misconception, label, Message("matches_mistake", {"what": what, "label": label}))
               for misconception, label, value in case.known_twins()
               if not isinstance(value, Raised) and same_value(got, value)]
    return _best(matches, case) if matches else generic_failure(case, got)


def _best(matches: list[CheckFailure], case: Case) -> CheckFailure:
    """A mistake in the function itself comes first; the runner may prefer an
    upstream one once it knows that the upstream function fails its own checks."""
    matches.sort(key=lambda failure: failure.root_cause != case.function)
    first = matches[0]
    first.alternatives = tuple(matches)
    return first


def generic_failure(case: Case, got) -> CheckFailure:
    """A failure with no catalogued explanation: type, shape, NaN or numbers."""
    expected, what = case.expected, _what(case)
    legends = case.legend if case.legend is not None else "?"
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            return CheckFailure(Message("wrong_tuple", {"what": what, "count": len(expected), "got": _describe(got)}),
                                misconception=case.structure_mistake or "wrong-type")
        for position, (got_item, expected_item) in enumerate(zip(got, expected)):
            if not same_value(got_item, expected_item):
                part_what = f"{what}[{position}]"
                legend = legends[position] if isinstance(legends, tuple) else legends
                failure = _compare_array(case, got_item, expected_item, part_what, legend)
                if case.structure_mistake and position > 0 and failure.misconception in ("wrong-shape", "wrong-type"):
                    failure.misconception = case.structure_mistake
                return failure
    return _compare_array(case, got, expected, what, legends if isinstance(legends, str) else legends[0])


def _compare_array(case: Case, got, expected: np.ndarray, what: str, legend: str) -> CheckFailure:
    if not isinstance(got, np.ndarray):
        return CheckFailure(Message("wrong_type", {"what": what, "got": _describe(got)}), misconception="wrong-type")
    if got.shape != expected.shape:
        return CheckFailure(Message("wrong_shape", {"what": what, "got": got.shape, "expected": expected.shape,
                                                    "legend": legend}), misconception="wrong-shape")
    got64 = got.astype(np.float64)
    if not np.isfinite(got64).all() and np.isfinite(expected).all():
        misconception = _overflow_kind(case.args[0], got64, case.overflow_ids) if case.overflow_ids \
            else "numeric-mismatch"
        return CheckFailure(Message("non_finite", {"what": what}), misconception=misconception)
    difference = np.abs(np.nan_to_num(got64 - expected, nan=np.inf))
    index = np.unravel_index(int(np.argmax(difference)), difference.shape) if difference.size else ()
    return CheckFailure(Message("mismatch", {"what": what, "difference": f"{float(difference.max(initial=0)):.3g}",
                                             "index": tuple(int(i) for i in index)}),
                        misconception="numeric-mismatch")


def _overflow_kind(x: np.ndarray, got: np.ndarray, ids: tuple[str, str]) -> str:
    """Tell an unstable softmax from a global-max one by which rows broke.

    ``ids`` names the two mistakes (no shift, one global shift) for this case.

    Used when no twin matches exactly (float32 arithmetic over- and underflows
    at other thresholds than the float64 twins). With one global shift the row
    holding the largest logit is fine and every row far below it underflows
    to 0/0; without a shift, or with a shift by the row mean, some row
    overflows while the rows far below the top stay finite or break anyway.
    """
    rows_in, rows_out = x.reshape(-1, x.shape[-1]), got.reshape(-1, x.shape[-1])
    finite_max = np.where(np.isfinite(rows_in), rows_in, -np.inf).max(axis=-1)
    if not np.isfinite(finite_max).any() or np.abs(finite_max[np.isfinite(finite_max)]).max() <= 80:
        return "numeric-mismatch"
    broken = ~np.isfinite(rows_out).all(axis=-1)
    top = finite_max.max()
    certain = finite_max < top - 750  # exp underflows to 0 here in float64 and float32 alike
    possible = finite_max < top - 87  # ... and here in float32
    if not broken[int(np.argmax(finite_max))] and certain.any() and broken[certain].all() \
            and not (broken & ~possible).any():
        return ids[1]
    return ids[0]


def _diagnosed(case: Case, misconception: str, label: str, first: Message) -> CheckFailure:
    entry = load_catalog().get(misconception)
    root = entry.function if entry is not None and entry.function not in (None, "__init__") else case.function
    messages = [first]
    if root != case.function:
        messages.append(Message("root_cause", {"root": root, "function": case.function}))
    return CheckFailure(*messages, misconception=misconception, root_cause=root)


def _by_rules(case: Case | None, error: CallError) -> str:
    """The first of the case's error rules that the exception matches, else the generic ``error``."""
    for rule in case.error_rules if case is not None else ():
        if rule.matches(error.message, error.source_line):
            return rule.misconception
    return "error"


def _what(case: Case) -> str:
    return case.call_text or f"{case.function}(...)"


def _describe(value) -> str:
    if isinstance(value, ForeignObject):
        return value.description
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return type(value).__name__ if value is not None else "None"


def _location(error: CallError) -> str:
    place = error.location()
    return f" ({place})" if place else ""


def _limit(error: CallError) -> str:
    return error.message
