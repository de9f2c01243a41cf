"""Findings: a catalogued mistake shown by what it does to the values, and the exercises' rules that find them.

The twins recognize a mistake written the way its author wrote it; an
exercise may also hold *signature rules*, which look at the student's own
output and ask what it is. They live in the exercise's folder, in
``grader/assignments/<name>/signatures.py``:

- ``RULES``: ``{name: rule}``, each ``rule(case, got) -> list[Finding]``; a
  case lists the rules that may explain it by name (``Case.signatures``) and
  says which exercise it belongs to (``Case.exercise``).
- ``COMPANION`` (optional): a ``CompanionRule``, for cases with a companion
  (the same call with as many keys as queries): right there and wrong here
  is the mistake it names.

Rules return findings only for what the values show; nothing here affects a
score. They do plain algebra on arrays and need no reference code, so they
ship with the exercise's public checks and run in a student release too.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:  # annotations only
    from grader.grading.case import Case


def message_data(key: str, params: dict) -> tuple[str, dict]:
    """A message as data, ``(key, params)``: ``grader.grading.checks`` makes it a Message."""
    return key, params


@dataclass(frozen=True)
class Finding:
    """One mistake the values show: its id, the function whose code has it, and the evidence."""

    misconception: str
    function: str
    evidence: tuple  # (message key, params): what in the values shows it
    # the same evidence explained by a mistake in another function: ((misconception, function), ...)
    alternatives: tuple = ()


@dataclass(frozen=True)
class CompanionRule:
    """What a case right on its companion (S = T) and wrong on itself shows: the keys' length taken from Q."""

    misconception: str
    # what the two calls show, in the exercise's words: ``evidence(case, companion)`` -> (message key, params)
    evidence: Callable[[Case, Case], tuple]
    # mistakes that could themselves come from confusing the two lengths: a companion value showing one
    # of them does not separate "raises only when S != T" from this mistake
    length_like: frozenset = frozenset()
    # function -> the function whose code may hold the same mistake (named as an alternative)
    upstream: dict = field(default_factory=dict)
    # fragments of the messages of one kind of error (operands of a product that do not line up, however the
    # product is written): a twin raising such an error where the student raises one too explains the raise
    alike_errors: tuple = ()
    # function -> ((misconception, function), ...): mistakes of a function the call enters that explain the same
    # evidence (named instead when that function fails its own checks with them)
    stand_ins: dict = field(default_factory=dict)


def rules_module(exercise: str | None) -> ModuleType | None:
    """The exercise's ``signatures.py``, or None when it has none."""
    if exercise is None:
        return None
    try:
        return importlib.import_module(f"grader.assignments.{exercise}.signatures")
    except ModuleNotFoundError as missing:
        if missing.name != f"grader.assignments.{exercise}.signatures":
            raise
        return None


def explain(case: Case, got) -> list[Finding]:
    """The findings of the first of the case's signature rules that explains ``got``."""
    module = rules_module(case.exercise) if case.signatures else None
    for name in case.signatures:
        findings = module.RULES[name](case, got)
        if findings:
            return findings
    return []


def companion_rule(case: Case) -> CompanionRule | None:
    module = rules_module(case.exercise)
    return getattr(module, "COMPANION", None) if module is not None else None


@dataclass(frozen=True)
class AloneRule:
    """Each function judged apart from the ones it calls: ``callees`` maps a checked function to the
    submission's functions to stand in for, ``(name, "function" | "method")``, when its values name none of
    its own mistakes and a callee it entered fails its own checks (a softmax that raises hides a scale
    put after it; heads cut wrongly hide an output projection left out). The call is made again with
    right callees (the reference's values, ``grader.sandbox.worker.standins``); a mistake of its own that
    call shows is named beside the callee's."""

    callees: dict


def alone_rule(case: Case) -> tuple:
    """The callees to stand in for when ``case``'s function is judged alone (empty: it is not)."""
    module = rules_module(case.exercise)
    rule = getattr(module, "ALONE", None) if module is not None else None
    return tuple(rule.callees.get(case.function, ())) if rule is not None else ()


def overflow_kind(x: np.ndarray, got: np.ndarray, ids: tuple[str, str], expected: np.ndarray | None = None, *,
                  broken: np.ndarray | None = None) -> str:
    """Tell an unstable softmax from a global-max one by which rows broke.

    ``x`` holds the logits (rows along its last axis); ``got`` a value whose
    rows are those rows (a softmax, attention's weights or output), or merge
    them over one axis (forward's output merges the heads' rows of one
    position): such a merged row is broken when any of its rows is. ``ids``
    names the two mistakes (no shift, one global shift) for this case.

    Used when no twin matches exactly (float32 arithmetic over- and underflows
    at other thresholds than the float64 twins). With one global shift the row
    holding the largest logit is fine and every row far below it underflows
    to 0/0; without a shift, or with a shift by the row mean, some row
    overflows while the rows far below the top stay finite or break anyway.
    Either mistake leaves the rows it cannot break right: when ``expected``
    is given, a row with moderate logits (or near the top) that comes back
    finite but wrong shows another mistake, and neither is named. ``broken``
    (one flag per row of ``got``) replaces "holds NaN or inf" as what broke.
    """
    if broken is None:
        broken = ~np.isfinite(got).all(axis=-1) if got.ndim else np.array(not np.isfinite(got))
    finite_max = _row_maxima(x, broken.shape)
    if finite_max is None:
        return "numeric-mismatch"
    rows_shape = broken.shape
    finite_max, broken = finite_max.reshape(-1), broken.reshape(-1)
    if not np.isfinite(finite_max).any() or np.abs(finite_max[np.isfinite(finite_max)]).max() <= 80:
        return "numeric-mismatch"
    top = finite_max.max()
    certain = finite_max < top - 750  # exp underflows to 0 here in float64 and float32 alike
    possible = finite_max < top - 87  # ... and here in float32
    shifted_once = not broken[int(np.argmax(finite_max))] and certain.any() and broken[certain].all() \
        and not (broken & ~possible).any()
    safe = ~possible if shifted_once else np.abs(finite_max) <= 80  # rows the mistake leaves alone
    if expected is not None and not _right_rows(got, expected, rows_shape, safe & ~broken):
        return "numeric-mismatch"
    return ids[1] if shifted_once else ids[0]


def _row_maxima(x: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The largest finite logit of each row of ``x``, over the rows of a value of row shape ``shape`` (a
    merged row's: the largest of its rows'); None when the value's rows are no rows of ``x``."""
    finite_max = np.where(np.isfinite(x), x, -np.inf).max(axis=-1)  # one per row of logits
    if finite_max.shape == shape:
        return finite_max
    merged = [axis for axis in range(finite_max.ndim) if finite_max.shape[:axis] + finite_max.shape[axis + 1:] == shape]
    return finite_max.max(axis=merged[0]) if merged else None


def quiet_overflow_kind(x: np.ndarray, got: np.ndarray, ids: tuple[str, str], expected: np.ndarray) -> str:
    """A finite value that large logits broke all the same: an overflow patched over (``nan_to_num`` leaves
    0 for 0/0 and inf/inf, so a row's weights vanish) or avoided wrongly (logits clipped or capped).

    The rows that are wrong must all be rows with large logits (beyond +-80, where exp leaves float32's
    range) or rows far below the top that vanished (one global shift underflows those, whatever their
    size), and either every one of them vanished (all 0 where the expected row is not) or rows with
    moderate logits exist and are right: a mistake of another kind shows on those too. Then which rows
    broke tells the two mistakes apart, as for NaN (``overflow_kind``).
    """
    if got.ndim == 0 or got.shape != expected.shape:
        return "numeric-mismatch"
    from grader.grading.case import same_rows  # the case module's tolerance; imported late (it has no rules)

    width = got.shape[-1]
    rows_got, rows_expected = got.reshape(-1, width), np.asarray(expected, dtype=np.float64).reshape(-1, width)
    wrong = ~same_rows(rows_got, rows_expected).reshape(got.shape[:-1])
    finite_max = _row_maxima(x, wrong.shape)
    if finite_max is None or not wrong.any():
        return "numeric-mismatch"
    large = np.abs(finite_max) > 80
    vanished = (got == 0).all(axis=-1) & ~(np.asarray(expected) == 0).all(axis=-1)
    # one global shift underflows every row far below the top, moderate ones too, and leaves the rest right:
    # when every row that far below vanished and every wrong row vanished below the top (float32 underflows
    # 87 below it), a moderate one among them is broken by that mistake, not by another one
    top = np.max(finite_max[np.isfinite(finite_max)], initial=-np.inf)
    far_below, below = finite_max < top - 750, finite_max < top - 87
    shifted_once = vanished[far_below].all() and (vanished & below)[wrong].all()
    explained = large | (below & vanished) if shifted_once else large
    if (wrong & ~explained).any() or not (vanished[wrong].all() or (~large).any()):
        return "numeric-mismatch"
    return overflow_kind(x, got, ids, expected, broken=wrong)


def _right_rows(got: np.ndarray, expected: np.ndarray, rows_shape: tuple, chosen: np.ndarray) -> bool:
    """The rows of ``got`` picked by ``chosen`` (a flat mask over ``rows_shape``) equal ``expected``'s."""
    if not chosen.any() or got.shape != expected.shape:
        return True
    width = got.shape[-1] if got.ndim else 1
    rows_got, rows_expected = got.reshape(-1, width)[chosen], np.asarray(expected).reshape(-1, width)[chosen]
    from grader.grading.case import same_value  # the case module's tolerance; imported late (it has no rules)

    return same_value(rows_got.astype(np.float64), rows_expected.astype(np.float64))
