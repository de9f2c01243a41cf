"""Quizzes as graded homework: a question sheet per student and its answers file.

A student's questions and numbers come from the instructor's choice of sheet
(how many questions, which topics and levels: ``SheetSpec``, the options of
``mha quiz --sheet``) and from a seed derived from the course key and the
student id (``grader.seeding.student_seed`` with purpose ``quiz-sheet``), so
neighbours get different numbers and grading re-creates exactly the sheet
that was handed out. The answers file is TOML::

    schema_version = 1
    student = "alice"
    count = 10          # how the sheet was chosen, for the student's information
    topics = []
    levels = []

    [answers]
    q01 = "(2, 4, 7, 16)"

Questions are keyed by their number on the sheet (``q01``, ``q02``...), never
by their bank id: an id such as ``bug-softmax-no-keepdims`` would name the
answer. The ids stay with the instructor, in each outcome of ``results.json``.
An answers file keyed by ids (sheets written before numbering) is still read.

Grading reads only the ``[answers]`` table: the student, the count, the
topics and the levels written in the file are ignored (the grader's own
student id and the instructor's ``SheetSpec`` decide), so no header can pick
easier questions, fewer of them (``count = 0``), or a neighbour's numbers.
The expected answers are shown only when the instructor asks
(``show_answers``): the same student always gets the same sheet back, so
answers shown before the deadline would be full marks on resubmission.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.i18n import pick
from grader.practice import answers as quiz_answers
from grader.practice.answers import LETTERS
from grader.practice.bank import PosedQuestion, choose_questions, default_bank
from grader.practice.texts import text
from grader.results import TestResult
from grader.seeding import student_seed

SHEET_PURPOSE = "quiz-sheet"
ANSWERS_SCHEMA_VERSION = 1
OUTCOMES = ("correct", "wrong", "blank", "unreadable")


DEFAULT_COUNT = 10  # questions on a sheet, as `mha quiz --sheet` makes it


def points_of(points: float | dict[str, float], level: str) -> float:
    """What one question of ``level`` is worth."""
    return float(points if isinstance(points, (int, float)) else points.get(level, 1.0))


@dataclass(frozen=True)
class SheetSpec:
    """How the instructor chose the sheets: the options given to ``mha quiz --sheet``."""

    count: int = DEFAULT_COUNT
    topics: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Sheet:
    """The questions one student gets, posed with that student's numbers."""

    student: str
    seed: int
    count: int
    topics: tuple[str, ...]
    levels: tuple[str, ...]
    questions: tuple[PosedQuestion, ...]


def answer_key(number: int) -> str:
    """The key of question ``number`` (from 1) on a sheet and in its answers file."""
    return f"q{number:02d}"


@dataclass(frozen=True)
class QuestionOutcome:
    question: str  # the bank id, for the instructor; the student sees only ``key``
    topic: str
    kind: str
    outcome: str  # one of OUTCOMES
    given: str
    expected: str
    score: float
    max_score: float
    key: str = ""  # q01, q02...: the question's number on the sheet


@dataclass(frozen=True)
class SheetResult:
    student: str
    score: float
    max_score: float
    outcomes: tuple[QuestionOutcome, ...]

    def to_dict(self) -> dict:
        return {"student": self.student, "score": self.score, "max_score": self.max_score,
                "questions": [asdict(outcome) for outcome in self.outcomes]}

    def tests(self, *, show_answers: bool = False) -> tuple[TestResult, ...]:
        """The outcomes as result-contract tests (function ``quiz``), for ``mha grade``.

        A missed question's message names the expected answer only with
        ``show_answers`` (the instructor's choice, e.g. once the due date has passed).
        """
        return tuple(
            TestResult(name=f"quiz:{o.key or o.question}", function="quiz",
                       outcome="passed" if o.outcome == "correct" else "failed",
                       score=o.score, max_score=o.max_score, misconception=None,
                       message="" if o.outcome == "correct" else _missed(o, show_answers))
            for o in self.outcomes)


def _missed(outcome: QuestionOutcome, show_answers: bool) -> str:
    given = outcome.given or "nothing"
    if show_answers:
        return f"{outcome.outcome}: expected {outcome.expected}, got {given}"
    return f"{outcome.outcome}: got {given} (the expected answers are shown once the instructor releases them)"


def make_sheet(*, student: str, count: int = 10, topics: Sequence[str] = (),
               levels: Sequence[str] = (), key: str | None = None) -> Sheet:
    """The sheet of ``student``; the same arguments always give the same sheet."""
    if not student.strip():
        raise UsageError("a sheet needs a student id, e.g. `mha quiz --sheet alice --out alice.md`")
    seed = student_seed(student, key=key, purpose=SHEET_PURPOSE)
    questions = choose_questions(bank=default_bank(), count=count, seed=seed, topics=topics, levels=levels,
                                 balanced=True)  # every sheet of a run worth the same points
    if not questions:
        raise UsageError(f"no question matches topics {list(topics)} and levels {list(levels)}")
    return Sheet(student, seed, count, tuple(topics), tuple(levels), tuple(questions))


def grade_answers(*, sheet: Sheet, answers: Mapping[str, str],
                  points: float | Mapping[str, float] = 1.0) -> SheetResult:
    """Grade ``answers`` (question id -> typed text) against ``sheet``.

    ``points`` is the same for every question, or a mapping from level
    (basic, intermediate, advanced) to points. Missing answers are ``blank``;
    text that cannot be read as the asked type is ``unreadable``; both score 0.
    """
    outcomes = []
    for number, posed in enumerate(sheet.questions, start=1):
        worth = points_of(points, posed.question.level)
        key = answer_key(number)
        given = str(answers.get(key, answers.get(posed.id, ""))).strip()
        verdict = quiz_answers.check(posed, given) if given else None
        if verdict is None:
            outcome = "blank"
        elif not verdict.valid:
            outcome = "unreadable"
        else:
            outcome = "correct" if verdict.correct else "wrong"
        outcomes.append(QuestionOutcome(
            question=posed.id, topic=posed.topic, kind=posed.kind, outcome=outcome, given=given,
            expected=quiz_answers.expected_text(posed, "en"),
            score=worth if outcome == "correct" else 0.0, max_score=worth, key=key))
    return SheetResult(student=sheet.student, score=sum(o.score for o in outcomes),
                       max_score=sum(o.max_score for o in outcomes), outcomes=tuple(outcomes))


def grade_answers_file(*, path: Path, student: str, spec: SheetSpec = SheetSpec(),
                       points: float | Mapping[str, float] = 1.0, key: str | None = None) -> SheetResult:
    """Grade the answers file at ``path`` against ``student``'s sheet, chosen by the instructor's ``spec``.

    Nothing but the answers is taken from the file (see the module's docstring).
    """
    answers = read_answers(path)["answers"]
    sheet = make_sheet(student=student, count=spec.count, topics=spec.topics, levels=spec.levels, key=key)
    return grade_answers(sheet=sheet, answers=answers, points=points)


def read_answers(path: Path) -> dict:
    """The header and answers of an answers file; UsageError names the file and problem.

    The header (``student``, ``count``, ``topics``, ``levels``) is informative
    and may be missing; grading uses only ``answers``.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the answers ({error}); keep each answer in quotes") from None
    return parse_answers(text, name=str(path))


def parse_answers(text: str, *, name: str) -> dict:
    """``read_answers`` of an answers file's text, already read (``name`` is how errors call the file)."""
    path = name
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        raise UsageError(f"{path}: cannot read the answers ({error}); keep each answer in quotes") from None
    if data.get("schema_version") != ANSWERS_SCHEMA_VERSION:
        raise UsageError(f"{path}: schema_version must be {ANSWERS_SCHEMA_VERSION}")
    answers = data.get("answers", {})
    if not isinstance(answers, dict):
        raise UsageError(f"{path}: needs an [answers] table")
    return {"student": data.get("student"), "count": data.get("count"), "topics": data.get("topics"),
            "levels": data.get("levels"), "answers": {str(key): str(value) for key, value in answers.items()}}


def answers_template(sheet: Sheet, *, lang: str = "en") -> str:
    """The answers file to hand out with the sheet, every answer blank, its comments in ``lang``."""
    lines = [
        *(f"# {line}" for line in text("sheet_answers_header", lang, student=sheet.student).split("\n")),
        f"schema_version = {ANSWERS_SCHEMA_VERSION}",
        f"student = {_quoted(sheet.student)}",
        f"count = {sheet.count}",
        f"topics = [{', '.join(_quoted(topic) for topic in sheet.topics)}]",
        f"levels = [{', '.join(_quoted(level) for level in sheet.levels)}]",
        "",
        "[answers]",
    ]
    for number, posed in enumerate(sheet.questions, start=1):
        lines.append(f"# {answer_key(number)}: {text(f'kind.{posed.kind}', lang)}")
        lines.append(f'{answer_key(number)} = ""')
    return "\n".join(lines) + "\n"


def sheet_markdown(sheet: Sheet, *, lang: str, answers_name: str) -> str:
    """The question sheet as Markdown, in ``lang``."""
    titles = default_bank().titles
    lines = [f"# {text('sheet_title', lang, student=sheet.student)}", "",
             text("sheet_instructions", lang, answers=f"`{answers_name}`"), ""]
    for number, posed in enumerate(sheet.questions, start=1):
        lines += [f"## {answer_key(number)} · {pick(titles[posed.topic], lang)} · "
                  f"{text(f'level.{posed.question.level}', lang)}", "", pick(posed.prompt, lang), ""]
        if posed.question.code:
            lines += ["```python", posed.question.code, "```", ""]
        if posed.kind in ("single-choice", "multiple-choice"):
            lines += [f"- **{LETTERS[i]}.** {pick(option, lang)}" for i, option in enumerate(posed.options)]
            lines.append("")
        elif posed.kind == "ordering":
            lines += [f"{i}. {pick(step, lang)}" for i, step in enumerate(posed.options, start=1)]
            lines.append("")
        lines += [f"*{text('answer_prompt', lang, how=text(f'how.{posed.kind}', lang))}*", ""]
    return "\n".join(lines)


def write_sheet(*, student: str, out: Path, lang: str, count: int = 10, topics: Sequence[str] = (),
                levels: Sequence[str] = ()) -> tuple[Path, Path]:
    """Write the sheet to ``out`` and ``<student>.answers.toml`` beside it; return both paths.

    The answers file is named for the student, as ``mha grade`` looks for it.
    """
    if "/" in student or student in (".", ".."):
        raise UsageError(f"{student!r} cannot name a file; give the student id as `mha grade` sees it")
    sheet = make_sheet(student=student, count=count, topics=topics, levels=levels)
    answers_path = out.with_name(f"{student}.answers.toml")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(sheet_markdown(sheet, lang=lang, answers_name=answers_path.name), encoding="utf-8")
    answers_path.write_text(answers_template(sheet, lang=lang), encoding="utf-8")
    return out, answers_path


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
