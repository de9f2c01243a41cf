"""What grading produces: plain frozen dataclasses, the result JSON contract.

Renderers read these and never compute scores. A result stays a
``SubmissionResult`` from grading to every renderer; ``to_dict``/``from_dict``
happen only where it is written or read as JSON (results.json, the journal,
``mha merge``) and give exactly the JSON of DESIGN.md; the extra fields
(``visibility``, ``notes``...) are optional additions that readers may ignore.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

OUTCOMES = ("passed", "failed", "error", "timeout")
GENERIC_OUTCOMES = (
    "not-implemented",
    "wrong-type",
    "wrong-shape",
    "numeric-mismatch",
    "error",
    "timeout",
    "load-error",
)
# Outcomes that say something is wrong but not which mistake: a wrong value, or an exception, no twin explains.
UNEXPLAINED_VALUE = frozenset({"numeric-mismatch", "wrong-shape", "wrong-type"})
UNEXPLAINED = UNEXPLAINED_VALUE | {"error"}


@dataclass(frozen=True)
class TestResult:
    """One check of one function."""

    __test__ = False  # not a pytest test class

    name: str
    function: str
    outcome: str
    score: float
    max_score: float
    misconception: str | None = None
    message: str = ""
    visibility: str = "public"
    root_cause: str | None = None  # the function where the mistake really is
    # ``message`` as data, for renderers in any language: parts {"key", "params"} or {"plain"}
    messages: tuple = ()
    # further mistakes the same check shows, each by its own evidence (``misconception`` is the first)
    additional_misconceptions: tuple = ()
    output: str = ""  # what the student's code printed during this check's calls (truncated)
    # the concrete case of a failure, apart from its explanation: the input sizes, where the value first
    # differs and (for shipped public fixtures) a slice of expected against got; lines of text, and as data
    case: str = ""
    case_messages: tuple = ()

    def to_dict(self) -> dict:
        return _json_ready(self)

    @classmethod
    def from_dict(cls, data: dict) -> TestResult:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["messages"] = tuple(values.get("messages", ()))
        values["additional_misconceptions"] = tuple(values.get("additional_misconceptions", ()))
        values["case_messages"] = tuple(values.get("case_messages", ()))
        return cls(**values)


@dataclass(frozen=True)
class Adjustment:
    """A change made after grading (``grader.batch.adjustments``): a row of the adjustments file, and what it did
    once applied. In results.json each is an object with these fields, in this order."""

    kind: str = "manual"  # late, manual or extension
    reason: str = ""  # as the instructor wrote it
    points: float = 0.0  # as given, when given in points
    percent: float | None = None  # as given, when given as a percentage of the maximum
    change: float = 0.0  # points it added to the score (negative: removed); 0 when waived
    waived: bool = False  # a late penalty cancelled by an extension

    def to_dict(self) -> dict:
        return _json_ready(self)

    @classmethod
    def from_dict(cls, data: dict) -> Adjustment:
        """Read one back from results.json (fields it does not know, from a newer version, are left out)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


@dataclass(frozen=True)
class SubmissionResult:
    """The result of grading one submission."""

    student: str
    status: str  # "graded" or "error"
    error: str | None
    score: float
    max_score: float
    assignment: str  # the exercise graded
    misconceptions: tuple[str, ...] = ()
    tests: tuple[TestResult, ...] = ()
    notes: tuple[str, ...] = ()  # loading notes: skipped magics, cells that raised
    isolation: str = ""
    seed: int | None = None
    duration: float = 0.0
    submission: str | None = None  # the graded file's path inside SUBMISSIONS (set by a batch)
    file: str | None = None  # the file graded, as outputs name it (None: none could be)
    set_aside: tuple[str, ...] = ()  # the student's other candidate files, not graded (grader.entries.choosing)
    # ``error`` and ``notes`` as data (see ``TestResult.messages``), for renderers in any language
    error_messages: tuple = ()
    note_messages: tuple = ()  # one tuple of parts per note
    # made after grading (grader.batch.adjustments); ``score`` stays the checks' sum, ``final_score`` is it plus
    # the changes (None: never adjusted)
    adjustments: tuple[Adjustment, ...] = ()
    final_score: float | None = None

    @property
    def final(self) -> float:
        """The score after adjustments (the checks' score where there were none)."""
        return self.score if self.final_score is None else self.final_score

    def to_dict(self) -> dict:
        return _json_ready(self)

    @classmethod
    def from_dict(cls, data: dict) -> SubmissionResult:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["misconceptions"] = tuple(values.get("misconceptions", ()))
        values["tests"] = tuple(TestResult.from_dict(t) for t in values.get("tests", ()))
        values["notes"] = tuple(values.get("notes", ()))
        values["set_aside"] = tuple(str(item) for item in values.get("set_aside") or ())
        values["error_messages"] = tuple(values.get("error_messages", ()))
        values["note_messages"] = tuple(tuple(parts) for parts in values.get("note_messages", ()))
        values["adjustments"] = tuple(Adjustment.from_dict(item) for item in values.get("adjustments") or ())
        return cls(**values)

    @property
    def passed(self) -> bool:
        return self.status == "graded" and all(t.outcome == "passed" for t in self.tests)


def _json_ready(value):
    """``value`` as the JSON of DESIGN.md holds it: results and their parts as dicts of their fields in order,
    tuples as lists, dicts copied, all the way down.

    Not ``dataclasses.asdict``: it deep-copies every leaf and keeps tuples, and a batch writes each result
    twice (the journal, results.json), where asdict alone cost about 9 ms a result of 35 checks.
    """
    if isinstance(value, (TestResult, Adjustment, SubmissionResult)):
        return {field.name: _json_ready(getattr(value, field.name)) for field in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_json_ready(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    return value


def summarize(
    *,
    student: str,
    tests: list[TestResult],
    max_score: float,
    assignment: str,
    catalog_ids: frozenset[str],
    **extra,
) -> SubmissionResult:
    """Build a graded result: scores add up, misconceptions sorted and unique."""
    named = {t.misconception for t in tests} | {extra for t in tests for extra in t.additional_misconceptions}
    found = sorted(named & catalog_ids)
    return SubmissionResult(
        student=student,
        status="graded",
        error=None,
        score=round(sum(t.score for t in tests), 6),
        max_score=max_score,
        misconceptions=tuple(found),
        tests=tuple(tests),
        assignment=assignment,
        **extra,
    )


def load_failure(*, student: str, error: str, max_score: float, assignment: str, **extra) -> SubmissionResult:
    """The result of a submission that could not be loaded at all."""
    return SubmissionResult(
        student=student,
        status="error",
        error=error,
        score=0.0,
        max_score=max_score,
        assignment=assignment,
        **extra,
    )

