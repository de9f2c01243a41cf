"""Quiz answers graded in the same batch as code (``mha grade``).

A student's quiz answers file (made with ``mha quiz --sheet``) sits beside
their code: ``SUBMISSIONS/<student>.answers.toml``, or ``answers.toml`` /
``*.answers.toml`` inside ``SUBMISSIONS/<student>/``. It is TOML, read as data
in the trusted process and never executed, and it gives nothing but the
answers: the questions are the instructor's (``QuizPolicy``: the options the
sheets were made with) for the grader's student id. Each question becomes one
test of the result (function ``quiz``), so results.json lists every
question's outcome and the score adds both parts. Once one student has an
answers file (or the instructor gives a ``--quiz-*`` option) every student
has a sheet, so nobody raises a percentage by leaving the answers out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from grader.errors import MhaError, UsageError
from grader.practice import ANSWERS_SUFFIX
from grader.practice.schema import LEVELS
from grader.practice.sheets import DEFAULT_COUNT, points_of
from grader.results import SubmissionResult, TestResult


@dataclass(frozen=True)
class QuizPolicy:
    """How a batch grades quiz answers files; every part is the instructor's, none the student's."""

    points: float | dict[str, float] = 1.0  # per question: a number, or per level
    count: int | None = None  # the sheets as made with `mha quiz --sheet`: how many questions (None: its default),
    topics: tuple[str, ...] = ()  # which topics (all when empty)
    levels: tuple[str, ...] = ()  # and which levels
    show_answers: bool = False  # feedback names the expected answers (e.g. once the due date has passed)
    required: bool = False  # every student has a sheet: one without an answers file scores 0 of it


def parse_points(text: str | None) -> float | dict[str, float]:
    """``"1"`` -> 1.0 for every question; ``"basic=1,intermediate=2,advanced=3"`` -> per level."""
    if not text:
        return 1.0
    try:
        if "=" not in text:
            return _not_negative(float(text))
        points = {}
        for part in text.split(","):
            level, value = (item.strip() for item in part.split("="))
            if level not in LEVELS:
                raise ValueError(f"unknown level {level!r}")
            points[level] = _not_negative(float(value))
        return points
    except ValueError as bad:
        raise UsageError(f"--quiz-points expects a number or level=points pairs "
                         f"(e.g. basic=1,intermediate=2,advanced=3): {bad}") from None


def _not_negative(value: float) -> float:
    if not value >= 0:  # also refuses nan
        raise ValueError(f"points cannot be {value}")
    return value


def with_quiz(result: SubmissionResult, *, answers: Path | None, policy: QuizPolicy,
              key: str | None = None) -> SubmissionResult:
    """``result`` with the questions of the student's sheet added as tests and to the score.

    The sheet is the instructor's (``policy``) for ``result.student``; the file
    gives only the answers. The maximum is the whole sheet, whatever the file
    holds, also when there is no file (``answers`` None: every question blank),
    when it cannot be read (0 of the sheet), and when the code could not be
    graded (the result stays an error, its maximum the code's and the sheet's).
    """
    from grader.practice.sheets import grade_answers, grade_answers_file, make_sheet

    spec = sheet_spec(policy)
    if result.status != "graded":
        return replace(result, max_score=result.max_score + quiz_worth(result.student, policy, key=key))
    try:
        if answers is None:
            sheet = make_sheet(student=result.student, count=spec.count, topics=spec.topics, levels=spec.levels,
                               key=key)
            graded = grade_answers(sheet=sheet, answers={}, points=policy.points)
            note = (f"no quiz answers file was handed in ({result.student}{ANSWERS_SUFFIX}): "
                    "every question of the sheet counts as blank")
            note_messages = result.note_messages if len(result.note_messages) == len(result.notes) else \
                tuple(({"plain": text},) for text in result.notes)
            result = replace(result, notes=result.notes + (note,), note_messages=note_messages + (({"plain": note},),))
        else:
            if answers.is_symlink() or answers.lstat().st_nlink > 1:
                raise UsageError(f"{answers.name} is a link to another file; hand in the answers file itself")
            graded = grade_answers_file(path=answers, student=result.student, spec=spec, points=policy.points,
                                        key=key)
        tests = graded.tests(show_answers=policy.show_answers)
    except (MhaError, OSError, ValueError, KeyError, TypeError) as bad:
        name = answers.name if answers is not None else "?"
        tests = (TestResult(name="quiz:answers-file", function="quiz", outcome="error", score=0.0,
                            max_score=quiz_worth(result.student, policy, key=key), misconception="error",
                            message=f"the answers file {name} could not be read: {bad}"),)
    return replace(result, tests=result.tests + tuple(tests),
                   score=round(result.score + sum(t.score for t in tests), 6),
                   max_score=result.max_score + sum(t.max_score for t in tests))


def sheet_spec(policy: QuizPolicy):
    from grader.practice.sheets import SheetSpec

    return SheetSpec(count=policy.count or DEFAULT_COUNT, topics=policy.topics, levels=policy.levels)


def quiz_worth(student: str, policy: QuizPolicy, *, key: str | None = None) -> float:
    """The points of ``student``'s whole sheet (levels, and so points, differ between sheets)."""
    from grader.practice.sheets import make_sheet

    spec = sheet_spec(policy)
    try:
        questions = make_sheet(student=student, count=spec.count, topics=spec.topics, levels=spec.levels,
                               key=key).questions
    except MhaError:
        return 0.0
    return float(sum(points_of(policy.points, posed.question.level) for posed in questions))
