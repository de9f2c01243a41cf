"""An interactive quiz: ask posed questions (``grader.practice.plan`` chooses them), keep time, sum up by topic.

``run_session`` asks already posed questions through a prompter (see
``grader.practice.prompts``), shows right or wrong with the explanation at once,
records every answer in the user's Leitner boxes, and returns a summary. A
time limit covers the whole session: an answer given after it does not count
and ends the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import click

from grader.i18n import pick
from grader.practice import answers as quiz_answers
from grader.practice.bank import PosedQuestion
from grader.practice.review import Progress
from grader.practice.texts import clock, text

_ATTEMPTS_TO_PARSE = 3


class Prompter(Protocol):
    show: Callable[[str], None]

    def ask(self, posed: PosedQuestion, lang: str, message: str) -> str | None: ...


@dataclass(frozen=True)
class AnswerRecord:
    """One question as answered in a session."""

    question: str
    topic: str
    kind: str
    given: str
    expected: str
    correct: bool
    seconds: float
    late: bool = False  # given after the time limit: shown as asked and not right, never as unanswered


@dataclass(frozen=True)
class SessionSummary:
    """What a session produced: its answers in order, time, and how it ended."""

    records: tuple[AnswerRecord, ...]
    asked: int
    seconds: float
    timed_out: bool = False
    stopped: bool = False
    by_topic: dict[str, tuple[int, int]] = field(default_factory=dict)  # topic -> (correct, answered)

    @property
    def correct(self) -> int:
        return sum(record.correct for record in self.records)


def run_session(*, questions: Sequence[PosedQuestion], lang: str, prompter: Prompter,
                titles: dict[str, dict[str, str]], time_limit: float | None = None,
                progress: Progress | None = None,
                clock_seconds: Callable[[], float] = time.monotonic) -> SessionSummary:
    """Ask ``questions`` in order; record answers in ``progress`` when given."""
    show = prompter.show
    started = clock_seconds()
    records: list[AnswerRecord] = []
    timed_out = stopped = False
    for number, posed in enumerate(questions, start=1):
        if time_limit is not None and clock_seconds() - started >= time_limit:
            show(click.style(text("time_up_before", lang, limit=clock(time_limit)), fg="yellow"))
            timed_out = True
            break
        show("")
        header = text("question_header", lang, number=number, count=len(questions),
                      topic=pick(titles[posed.topic], lang),
                      level=text(f"level.{posed.question.level}", lang))
        if time_limit is not None:
            header += "  ·  " + text("time_left", lang, time=clock(time_limit - (clock_seconds() - started)))
        show(click.style(header, bold=True))
        _show_body(posed, lang, show)
        asked_at = clock_seconds()
        given, verdict = _read_answer(posed, lang, prompter)
        second_try = given is not None and not verdict.correct and bool(posed.question.nudge)
        if second_try:  # a question with a nudge gets a second try on the same numbers; only a first try scores
            show(text("not_quite", lang, nudge=pick(posed.question.nudge, lang)))
            given, verdict = _read_answer(posed, lang, prompter)
        if given is None:
            stopped = True
            break
        expected = quiz_answers.expected_text(posed, lang)
        if time_limit is not None and clock_seconds() - started > time_limit:
            show(click.style(text("time_up", lang, limit=clock(time_limit)), fg="yellow"))
            records.append(AnswerRecord(posed.id, posed.topic, posed.kind, given, expected, False,
                                        round(clock_seconds() - asked_at, 2), late=True))
            timed_out = True
            break
        scored = verdict.correct and not second_try
        if scored:
            show(click.style(text("right", lang), fg="green", bold=True))
        elif verdict.correct:
            show(click.style(text("right_second_try", lang), fg="yellow", bold=True))
        else:
            show(click.style(text("wrong", lang, expected=expected), fg="red", bold=True))
        show(text("why", lang, explanation=pick(posed.explanation, lang)))
        records.append(AnswerRecord(posed.id, posed.topic, posed.kind, given, expected,
                                    scored, round(clock_seconds() - asked_at, 2)))
        if progress is not None:
            progress.record(question=posed.id, topic=posed.topic, correct=scored)
    seconds = clock_seconds() - started
    if (stopped or timed_out) and len(records) < len(questions):
        show(text("stopped", lang, count=len(questions) - len(records)))
    by_topic: dict[str, tuple[int, int]] = {}
    for record in records:
        right, answered = by_topic.get(record.topic, (0, 0))
        by_topic[record.topic] = (right + record.correct, answered + 1)
    summary = SessionSummary(tuple(records), len(questions), round(seconds, 2), timed_out, stopped, by_topic)
    if progress is not None and records:
        progress.finish_session(asked=len(records), correct=summary.correct, seconds=seconds)
    return summary


def summary_lines(summary: SessionSummary, *, lang: str, titles: dict[str, dict[str, str]]) -> list[str]:
    """The end-of-session report: one line per topic, then the total."""
    lines = ["", text("summary_title", lang)]
    for topic, (right, answered) in sorted(summary.by_topic.items()):
        lines.append("  " + text("summary_line", lang, topic=pick(titles[topic], lang),
                                 correct=right, asked=answered))
    lines.append(text("summary_total", lang, correct=summary.correct, asked=len(summary.records),
                      time=clock(summary.seconds)))
    if summary.correct < len(summary.records):
        lines.append(text("summary_retry", lang))
    return lines


def _show_body(posed: PosedQuestion, lang: str, show: Callable[[str], None]) -> None:
    show(pick(posed.prompt, lang))
    if posed.question.code:
        show(text("code", lang))
        for line in posed.question.code.splitlines():
            show("    " + line)
    if posed.kind == "ordering":
        for index, step in enumerate(posed.options, start=1):
            show(f"  {index}. {pick(step, lang)}")


def _read_answer(posed: PosedQuestion, lang: str, prompter: Prompter):
    how = text(f"how.{posed.kind}", lang)
    message = text("answer_prompt", lang, how=how)
    for _ in range(_ATTEMPTS_TO_PARSE):
        given = prompter.ask(posed, lang, message)
        if given is None:
            return None, None
        verdict = quiz_answers.check(posed, given)
        if verdict.valid:
            return given.strip(), verdict
        prompter.show(text("invalid", lang, how=how))
    return given.strip(), verdict  # still unreadable: counts as a wrong answer
