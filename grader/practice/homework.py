"""Quiz answers graded in the same batch as code (``mha grade``).

A student's quiz answers file (made with ``mha quiz --sheet``) sits beside
their code: ``SUBMISSIONS/<student>.answers.toml``, or ``answers.toml`` /
``*.answers.toml`` inside ``SUBMISSIONS/<student>/``. It is TOML, read as data
in the trusted process and never executed. Each question becomes one test of
the result (function ``quiz``), so results.json lists every question's
outcome and the score adds both parts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from grader.errors import MhaError, UsageError
from grader.results import SubmissionResult, TestResult

ANSWERS_SUFFIX = ".answers.toml"
LEVELS = ("basic", "intermediate", "advanced")


@dataclass(frozen=True)
class QuizPolicy:
    """How a batch grades quiz answers files: points per question (a number, or per level)."""

    points: float | dict[str, float] = 1.0


def is_answers_file(name: str) -> bool:
    return name == "answers.toml" or name.endswith(ANSWERS_SUFFIX)


def parse_points(text: str | None) -> float | dict[str, float]:
    """``"1"`` -> 1.0 for every question; ``"basic=1,intermediate=2,advanced=3"`` -> per level."""
    if not text:
        return 1.0
    try:
        if "=" not in text:
            return float(text)
        points = {}
        for part in text.split(","):
            level, value = (item.strip() for item in part.split("="))
            if level not in LEVELS:
                raise ValueError(f"unknown level {level!r}")
            points[level] = float(value)
        return points
    except ValueError as bad:
        raise UsageError(f"--quiz-points expects a number or level=points pairs "
                         f"(e.g. basic=1,intermediate=2,advanced=3): {bad}") from None


def with_quiz(result: SubmissionResult, *, answers: Path, points: float | dict[str, float] = 1.0,
              key: str | None = None) -> SubmissionResult:
    """``result`` with the quiz questions of ``answers`` added as tests and to the score."""
    from grader.practice.sheets import grade_answers_file

    try:
        sheet = grade_answers_file(path=answers, student=result.student, points=points, key=key)
        tests = sheet.tests()
    except (MhaError, OSError, ValueError, KeyError, TypeError) as bad:
        tests = (TestResult(name="quiz:answers-file", function="quiz", outcome="error", score=0.0, max_score=0.0,
                            misconception="error", message=f"the answers file {answers.name} could not be read: {bad}"),)
    return replace(result, tests=result.tests + tuple(tests),
                   score=round(result.score + sum(t.score for t in tests), 6),
                   max_score=result.max_score + sum(t.max_score for t in tests))
