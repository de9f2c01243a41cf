"""Check inputs, the values they should give, and what each mistake would give.

A ``Case`` is one call of one student function: its inputs, the expected
value and the outputs of every buggy twin that differs from it. Public cases
use fixed sizes and a fixed seed and are shipped precomputed (so public
checks need neither ``solutions/`` nor the twins); hidden cases are drawn
from each student's seed with fresh sizes.

Sizes are distinct and non-square (B=2, H=3, T=5, S=7, d_k=4 in public) and
inputs are small random floats, so a swapped axis or a missing scale cannot
hide behind a coincidence of sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Sizes:
    B: int
    H: int
    T: int
    S: int
    d_k: int

    @property
    def D(self) -> int:
        return self.H * self.d_k


PUBLIC_SIZES = Sizes(B=2, H=3, T=5, S=7, d_k=4)


@dataclass(frozen=True)
class Raised:
    """A call that raises: the exception's type and message (an expected refusal with no message takes any
    message of its type: what a student's ValueError says is theirs to word)."""

    type: str
    message: str


@dataclass(frozen=True)
class ErrorRule:
    """An exception no twin reproduces exactly, named by what it says and where it came from.

    Matches when every condition given holds: the message contains one of
    ``message_any``, the source line one of ``line_any``, the type is one of
    ``types``; the call entered one of ``reached_any`` and none of
    ``unreached`` (which functions a call entered is known only when the
    worker recorded it: without a record those two conditions fail); with
    ``own_body`` the exception was raised in the checked function's own code,
    not in a function it called. An empty condition matches anything.
    """

    misconception: str
    message_any: tuple = ()
    line_any: tuple = ()
    types: tuple = ()
    reached_any: tuple = ()
    unreached: tuple = ()
    own_body: bool = False

    def matches(self, message: str, source_line: str, *, type: str = "", reached: tuple = (),
                raised_in: str | None = None, function: str | None = None) -> bool:
        if self.message_any and not any(word in message for word in self.message_any):
            return False
        if self.line_any and not any(word in source_line for word in self.line_any):
            return False
        if self.types and type not in self.types:
            return False
        if (self.reached_any or self.unreached) and not reached:
            return False
        if self.reached_any and not set(self.reached_any) & set(reached):
            return False
        if set(self.unreached) & set(reached):
            return False
        return not self.own_body or (raised_in is not None and raised_in == _short(function))


def _short(function: str | None) -> str | None:
    """``Class.method`` -> ``method``: how a traceback names a method."""
    return function.rpartition(".")[2] if function else function


@dataclass(frozen=True)
class Case:
    """One call of one graded function, with its expected value and what each mistake gives.

    ``function`` is a module function, or a method of ``class_name(*init)``
    whose ``weights`` attributes are set before the call; ``calls`` makes
    several calls on one instance (stateful checks).

    A case never changes once built: its expected value and evidence are
    computed before (``grader.assignments.twinning.with_expectations`` returns a
    new case), and the twins a ``twin_builder`` defers are kept, once computed,
    in a memo beside the fields, not in them.
    """

    id: str
    function: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    weights: dict | None = None  # attributes set on the instance before the call
    expected: object = None
    # [(misconception id, label, value)]; None: made by ``twin_builder`` when first needed (see known_twins)
    twins: list | None = field(default_factory=list)
    class_name: str | None = None  # call ``function`` as a method of ``class_name(*init)``
    init: tuple | None = None
    calls: tuple | None = None  # ((path, args, kwargs), ...) on one instance; args None reads an attribute
    call_text: str | None = None  # how feedback names the call, e.g. "masked_softmax(scores, mask)"
    legend: object = None  # shape legend(s) of the value, e.g. "(B, H, T, S)" or a tuple of them
    argument_names: tuple | None = None  # names of ``args`` in feedback
    mutation_id: str | None = None  # the misconception of changing an input in place
    error_rules: tuple = ()  # ErrorRule, tried in order on an exception no twin explains
    overflow_ids: tuple | None = None  # (unshifted, globally shifted): for a row-wise normalizer that breaks
    structure_mistake: str | None = None  # the misconception of a wrong tuple or a wrong item after the first
    # the exercise the case belongs to: its folder's signature rules (grader.grading.findings) are asked
    exercise: str | None = None
    # names of the exercise's signature rules that may explain a wrong value of this case
    signatures: tuple = ()
    # the reference's intermediate values for those rules (e.g. the projected heads of forward), by name
    evidence: dict | None = None
    # the case of the same call with as many keys as queries (S = T): right there and wrong here is a
    # mistake that uses the query's length for the keys
    companion: str | None = None
    shows_values: bool = False  # feedback may quote the inputs and expected values (shipped public fixtures)
    # False for inputs with a size of one (T = 1, S = 1, B = 1): there many mistakes give the same values,
    # so a failure says what broke and shows the case, but names no mistake
    names_mistakes: bool = True
    # a mistake of another function found in this function's own code (the call never entered that
    # function): the id it has here, e.g. softmax-wrong-axis written inline in attention
    inline_ids: dict | None = None
    output_names: tuple | None = None  # how feedback names the value's items, e.g. ("out", "weights")
    companion_case: "Case | None" = field(default=None, repr=False, compare=False)
    twin_builder: Callable | None = field(default=None, repr=False, compare=False)
    # what known_twins computed (a memo: the case's fields stay as built)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def known_twins(self) -> list:
        """The twins that differ from the expected value, computed on first use.

        Hidden cases defer them: most checks pass, and a passing check never
        needs to know what the mistakes would have returned.
        """
        if self.twins is not None:
            return self.twins
        if "twins" not in self._memo:
            self._memo["twins"] = self.twin_builder(self) if self.twin_builder is not None else []
        return self._memo["twins"]

    @property
    def twins_ready(self) -> bool:
        """Whether the twins are known without running any."""
        return self.twins is not None or self.twin_builder is None or "twins" in self._memo

    def twins_among(self, keys) -> list:
        """Of the twins named by ``keys`` (``(misconception, label)`` pairs), those that differ from the
        expected value; only those are run (and nothing is kept: ``known_twins`` still runs them all)."""
        if self.twins_ready:
            return [twin for twin in self.known_twins() if twin[:2] in keys]
        return self.twin_builder(self, only=keys)


_CASE_FIELDS = frozenset(item.name for item in fields(Case))
# what ``evolved`` relies on: every field is the constructor's to set, and the constructor does nothing else
assert all(item.init for item in fields(Case)) and not hasattr(Case, "__post_init__")


def evolved(case: "Case", **changes) -> "Case":
    """``dataclasses.replace(case, **changes)``, made without running ``Case.__init__``: a case has some thirty
    fields, all set by its constructor and none checked or derived there, so the copy of its fields with
    ``changes`` over them is the object ``replace`` makes (``_memo`` the same dict in both, as ``replace``
    passes it on), at a tenth of the cost. A grading makes about 150 (every case drawn for the student)."""
    unknown = changes.keys() - _CASE_FIELDS
    if unknown:
        raise TypeError(f"Case has no field {sorted(unknown)[0]!r}")
    copy = object.__new__(Case)
    copy.__dict__.update(case.__dict__)
    copy.__dict__.update(changes)
    return copy


def link_companions(cases: dict[str, "Case"]) -> dict[str, "Case"]:
    """The same cases, each with a ``companion`` given the companion case itself (a companion has none)."""
    for case in cases.values():
        if case.companion and cases[case.companion].companion:
            raise ValueError(f"{case.id}: its companion {case.companion} has a companion of its own")
    return {name: evolved(case, companion_case=cases[case.companion]) if case.companion else case
            for name, case in cases.items()}


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """Distinct sizes, none equal to another, d_k >= 2 so every scale differs."""
    while True:
        B, H = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        T, S, d_k = int(rng.integers(3, 8)), int(rng.integers(3, 9)), int(rng.integers(2, 6))
        values = [B, H, T, S, d_k, H * d_k]
        if len(set(values)) == len(values):
            return Sizes(B, H, T, S, d_k)


def stability_logits(rng: np.random.Generator) -> np.ndarray:
    """Rows with +-1000 inside a row, maxima 1000+ apart, and spans over 1500: (5, 6), never square.

    An unstable softmax overflows, a global-max one underflows to 0/0 in the
    rows far below the top, and a mean-centred one overflows in the row whose
    maximum lies far above its mean. With as many rows as columns a row max
    taken without keepdims would broadcast silently against the wrong axis
    and overflow there; with 5 rows of 6 it raises instead, and says so.
    """
    rows = np.array([
        [1000.0, 999.0, -1000.0, 0.5, 998.0, -999.0],
        [-1200.0, -1201.5, -1199.0, -1300.0, -1250.0, -1198.0],
        [800.0, -750.0, 10.0, 799.5, -1.0, -700.0],
        [900.0, -700.0, -650.0, -720.0, -690.0, -710.0],  # far above its mean: a mean-centred softmax overflows
        [0.3, -0.2, 0.1, 0.0, -0.4, 0.2],
    ])
    return rows + rng.uniform(-0.5, 0.5, rows.shape)


RTOL, ATOL = 1e-4, 1e-6  # float32-friendly: relative to each entry, and the least absolute tolerance
SCALE_ATOL = 1e-5  # the absolute tolerance follows the array's largest entry (float32 errs with what it sums)


def same_value(a, b, *, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Equal structure and values within float32-friendly tolerances (NaN equals NaN)."""
    if isinstance(a, Raised) or isinstance(b, Raised):
        return isinstance(a, Raised) and isinstance(b, Raised) and a.type == b.type \
            and (a.message == b.message or not a.message or not b.message)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y, rtol=rtol, atol=atol) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape:
            return False
        a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        magnitude = np.abs(b64)
        scale = float(magnitude.max()) if magnitude.size else 0.0
        if math.isfinite(scale):
            # b is finite (a NaN or an infinity would be its maximum): np.allclose's own test without its set-up
            # (most comparisons, and each costs it ~50 us), for on finite values isclose is |a - b| <= atol +
            # rtol * |b| exactly, the same scale and tolerances as below; where a is not finite the inequality
            # fails, as the test below does, so a need not be tested first
            return bool((np.abs(a64 - b64) <= max(atol, SCALE_ATOL * scale) + rtol * magnitude).all())
        if not np.array_equal(np.isnan(a64), np.isnan(b64)):
            return False
        # float32 arithmetic errs in proportion to the values summed, not to each entry: a near-zero entry
        # of an O(1) output may be off by a few 1e-6, so the absolute tolerance follows the array's scale
        finite = np.abs(b64[np.isfinite(b64)])
        scale = float(finite.max()) if finite.size else 0.0
        return bool(np.allclose(a64, b64, rtol=rtol, atol=max(atol, SCALE_ATOL * scale), equal_nan=True))
    if isinstance(a, (np.ndarray, tuple)) or isinstance(b, (np.ndarray, tuple)):
        return False
    return a is None and b is None or type(a) is type(b) and isinstance(a, (bool, int, float, str)) and a == b


def same_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``same_value`` of each row of ``a`` (rows, width) with the same row of ``b``, the rows of a finite b
    all at once under its own inequality (each row's largest entry sets that row's absolute tolerance)."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    magnitude = np.abs(b64)
    scale = magnitude.max(axis=1, initial=0.0)
    finite = np.isfinite(scale)
    with np.errstate(invalid="ignore"):
        same = (np.abs(a64 - b64) <= np.maximum(ATOL, SCALE_ATOL * scale)[:, None] + RTOL * magnitude).all(axis=1)
    for row in np.flatnonzero(~finite):
        same[row] = same_value(a[row], b[row])
    return same


def same_as_each(a, values: list) -> list[bool]:
    """``[same_value(a, value) for value in values]``: ``a`` against each of many values (a submission's output
    against every twin's), the real arrays of a's shape (or the items of tuples like it) all at once under
    same_value's own inequality, each value's largest entry setting its tolerance; anything else one by one."""
    if isinstance(a, tuple):
        parts = [position for position, value in enumerate(values) if isinstance(value, tuple) and len(value) == len(a)]
        found = [position in parts or same_value(a, value) for position, value in enumerate(values)]
        for item, part in enumerate(a):
            for position, same in zip(parts, same_as_each(part, [values[position][item] for position in parts])):
                found[position] = found[position] and same
        return found
    alike = [position for position, value in enumerate(values) if isinstance(value, np.ndarray)
             and value.shape == getattr(a, "shape", None) and value.dtype.kind in "biuf"]
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf" or len(alike) < 2:
        return [same_value(a, value) for value in values]
    stacked = np.stack([np.asarray(values[position], dtype=np.float64) for position in alike])
    magnitude = np.abs(stacked)
    scale = magnitude.reshape(len(alike), -1).max(axis=1, initial=0.0)
    tolerance = np.maximum(ATOL, SCALE_ATOL * scale).reshape((-1,) + (1,) * a.ndim) + RTOL * magnitude
    with np.errstate(invalid="ignore"):
        equal = (np.abs(np.asarray(a, dtype=np.float64) - stacked) <= tolerance).reshape(len(alike), -1).all(axis=1)
    found = {position: bool(same) for position, same, finite in zip(alike, equal, np.isfinite(scale)) if finite}
    return [found[position] if position in found else same_value(a, value) for position, value in enumerate(values)]


def same_values(values: list, b) -> list[bool]:
    """``[same_value(value, b) for value in values]``, with the real arrays among them of b's shape (or the
    items of tuples shaped like b) compared with a finite b all at once: the same inequality on the same
    numbers, for a twin's dozens of outcomes on one case cost as much to compare one by one as to make."""
    if isinstance(b, tuple):
        parts = [(position, value) for position, value in enumerate(values)
                 if isinstance(value, tuple) and len(value) == len(b)]
        found = [same_value(value, b) if not (isinstance(value, tuple) and len(value) == len(b)) else True
                 for value in values]
        for item, expected in enumerate(b):
            for (position, _), same in zip(parts, same_values([value[item] for _, value in parts], expected)):
                found[position] = found[position] and same
        return found
    if not isinstance(b, np.ndarray) or b.dtype.kind not in "biuf":
        return [same_value(value, b) for value in values]
    alike = [position for position, value in enumerate(values)
             if isinstance(value, np.ndarray) and value.shape == b.shape and value.dtype.kind in "biuf"]
    b64 = np.asarray(b, dtype=np.float64)
    magnitude = np.abs(b64)
    scale = float(magnitude.max()) if magnitude.size else 0.0
    if len(alike) < 2 or not math.isfinite(scale):
        return [same_value(value, b) for value in values]
    stacked = np.stack([np.asarray(values[position], dtype=np.float64) for position in alike])
    within = np.abs(stacked - b64) <= max(ATOL, SCALE_ATOL * scale) + RTOL * magnitude  # same_value's test
    equal = within.reshape(len(alike), -1).all(axis=1)
    found = {position: bool(same) for position, same in zip(alike, equal)}
    return [found[position] if position in found else same_value(value, b) for position, value in enumerate(values)]
