"""Quiz answers graded in the same batch as code (``mha grade``).

A student's quiz answers file (made with ``mha quiz --sheet``) sits beside
their code: ``SUBMISSIONS/<student>.answers.toml``, or ``answers.toml`` /
``*.answers.toml`` inside ``SUBMISSIONS/<student>/``. It is TOML, read as data
in the trusted process and never executed, and it gives nothing but the
answers: the questions are the instructor's (``QuizPolicy``: the options the
sheets were made with) for the grader's student id. Each question becomes one
test of the result (function ``quiz``), so results.json lists every
question's outcome and the score adds both parts.

The quiz is the instructor's: only a ``--quiz-*`` option of ``mha grade``
turns it on, and then every student has a sheet (one without an answers file
scores 0 of it) and every sheet is worth the same (``make_sheet`` draws as
many questions of each level for everyone). Without one, an answers file
changes nothing but a note in its own student's feedback. A bad, missing,
oversized or non-regular answers file costs the quiz, never the code.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from grader.content.messages import Message, parts_of
from grader.content.usage import usage_error
from grader.errors import MhaError
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


def quiz_policy(*, points: str | None = None, count: int | None = None, topics: tuple[str, ...] = (),
                levels: tuple[str, ...] = (), show_answers: bool = False, due: datetime | None = None,
                now: datetime | None = None) -> QuizPolicy:
    """The instructor's quiz settings (``mha grade --quiz-*``); any of them means every student has a sheet.
    After ``due`` (local time; ``now`` by default the clock's) the feedback shows the expected answers."""
    if topics:  # the bank (about 0.4 s to load) only when there are topic names to check against it
        from grader.practice.bank import default_bank

        known = default_bank().titles
        unknown = sorted(set(topics) - set(known))
        if unknown:
            raise usage_error("unknown_quiz_topic", topic=repr(unknown[0]), topics=", ".join(sorted(known)))
    required = points is not None or count is not None or bool(topics or levels)
    past_due = due is not None and (now or datetime.now()) >= due
    return QuizPolicy(points=parse_points(points), count=count, topics=tuple(topics), levels=tuple(levels),
                      required=required, show_answers=show_answers or past_due)


def parse_points(text: str | None) -> float | dict[str, float]:
    """``"1"`` -> 1.0 for every question; ``"basic=1,intermediate=2,advanced=3"`` -> per level."""
    if not text:
        return 1.0
    if "=" not in text:
        return _not_negative(text)
    points = {}
    for part in text.split(","):
        if part.count("=") != 1:
            raise usage_error("quiz_points_not_a_pair", value=repr(text), part=repr(part))
        level, value = (item.strip() for item in part.split("="))
        if level not in LEVELS:
            raise usage_error("quiz_points_unknown_level", level=repr(level), levels=", ".join(LEVELS))
        points[level] = _not_negative(value)
    return points


def _not_negative(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise usage_error("quiz_points_not_a_number", value=repr(value)) from None
    if not number >= 0:  # also refuses nan
        raise usage_error("quiz_points_negative", value=value)
    return number


@dataclass(frozen=True)
class HandedAnswers:
    """A quiz answers file as the batch read it (``grader.batch.lanes``): its text, or why it could not be read."""

    name: str
    text: str | None = None
    problem: Message | None = None


def with_quiz(result: SubmissionResult, *, answers: HandedAnswers | None, policy: QuizPolicy,
              key: str | None = None) -> SubmissionResult:
    """``result`` with the questions of the student's sheet added as tests and to the score.

    The sheet is the instructor's (``policy``) for ``result.student``; the file
    gives only the answers. The maximum is the whole sheet, whatever the file
    holds, also when there is no file (``answers`` None: every question blank),
    when it cannot be read (0 of the sheet), and when the code could not be
    graded (the result stays an error, its maximum the code's and the sheet's).
    """
    from grader.practice.sheets import grade_answers, make_sheet, parse_answers

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
        elif answers.problem is not None:
            raise _Unreadable(answers.problem)
        else:
            sheet = make_sheet(student=result.student, count=spec.count, topics=spec.topics, levels=spec.levels,
                               key=key)
            given = parse_answers(answers.text or "", name=answers.name)["answers"]
            graded = grade_answers(sheet=sheet, answers=given, points=policy.points)
        tests = graded.tests(show_answers=policy.show_answers)
    except (_Unreadable, MhaError, ValueError, KeyError, TypeError) as bad:
        reason = bad.message if isinstance(bad, _Unreadable) else str(bad)
        message = Message("answers_unreadable", {"name": answers.name if answers is not None else "?",
                                                 "reason": reason})
        tests = (TestResult(name="quiz:answers-file", function="quiz", outcome="error", score=0.0,
                            max_score=quiz_worth(result.student, policy, key=key), misconception="error",
                            message=message.render("en"), messages=parts_of(message)),)
    return replace(result, tests=result.tests + tuple(tests),
                   score=round(result.score + sum(t.score for t in tests), 6),
                   max_score=result.max_score + sum(t.max_score for t in tests))


class _Unreadable(Exception):
    def __init__(self, message: Message):
        self.message = message
        super().__init__(message.render("en"))


def unassigned_note(name: str) -> Message:
    """The note of an answers file handed in to a run that grades no quiz."""
    return Message("note_answers_unassigned", {"name": name})


def sheet_spec(policy: QuizPolicy):
    from grader.practice.sheets import SheetSpec

    return SheetSpec(count=policy.count or DEFAULT_COUNT, topics=policy.topics, levels=policy.levels)


def quiz_worth(student: str, policy: QuizPolicy, *, key: str | None = None) -> float:
    """The points of ``student``'s whole sheet: the same for every student of a run (balanced levels)."""
    from grader.practice.sheets import make_sheet

    spec = sheet_spec(policy)
    try:
        questions = make_sheet(student=student, count=spec.count, topics=spec.topics, levels=spec.levels,
                               key=key).questions
    except MhaError:
        return 0.0
    return float(sum(points_of(policy.points, posed.question.level) for posed in questions))
