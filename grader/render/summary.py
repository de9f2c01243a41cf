"""What ``mha grade`` and ``mha merge`` print: progress while grading, a summary at the end."""

from __future__ import annotations

import functools
import time

import click
from rich.markup import escape

from grader.content.catalog import load_catalog
from grader.content.loader import TextTable
from grader.paths import CONTENT_DIR
from grader.render.text_safety import clean_line
from grader.results import SubmissionResult

SUMMARY_TEXTS = CONTENT_DIR / "summary.toml"


def _short(result: SubmissionResult, lang: str = "en") -> str:
    if result.status != "graded":
        reason = (result.error or "").strip().splitlines()
        return _say("progress_error", lang=lang, reason=_cut(reason[0]) if reason else _say("not_graded", lang=lang))
    found = ", ".join(result.misconceptions[:3])
    return f"{result.score:g}/{result.max_score:g}" + (f"  [{found}]" if found else "")


def _cut(text: str, width: int = 100) -> str:
    """One clean line of at most ``width`` characters, cut at a word when it is longer."""
    line = clean_line(text).strip()
    if len(line) <= width:
        return line
    cut = line[:width].rsplit(" ", 1)[0] if " " in line[: width] else line[:width]
    return cut + " ..."


class LineProgress:
    """One plain line per finished submission (for logs and CI), in ``lang``."""

    def __init__(self, lang: str = "en"):
        self.lang = lang

    def begin(self, total: int, done: int) -> None:
        self.total, self.count, self.started = total, done, time.monotonic()
        note = _say("progress_already", lang=self.lang, count=done) if done else ""
        click.echo(_say("progress_grading", lang=self.lang,
                        submissions=_counted("submission", total, lang=self.lang), already=note))

    def start(self, student: str) -> None:
        pass

    def advance(self, result: SubmissionResult) -> None:
        self.count += 1
        graded = f" ({clean_line(result.file)})" if result.file else ""
        click.echo(f"[{self.count}/{self.total}] {clean_line(result.student)}{graded}: {_short(result, self.lang)}")

    def end(self) -> None:
        pass


class BarProgress:
    """A rich progress bar with counts, elapsed time and ETA, on stderr.

    ``estimate(total, done)`` makes what the ETA is read from (``start``,
    ``finish``, ``remaining()``; ``grader.batch.eta.Estimate`` counts the
    submissions still in flight); without it, rich's own rate-based ETA.
    """

    def __init__(self, estimate=None, lang: str = "en"):
        self.make_estimate = estimate
        self.estimate = None
        self.lang = lang

    def begin(self, total: int, done: int) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.estimate = self.make_estimate(total, done) if self.make_estimate is not None else None
        remaining = _remaining_column(self.estimate) if self.estimate is not None else TimeRemainingColumn()
        self.progress = Progress(TextColumn(f"[bold]{escape(_say('bar_grading', lang=self.lang))}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn(escape(_say("bar_eta", lang=self.lang))), remaining,
                                 TextColumn("{task.description}"), console=Console(stderr=True), transient=False)
        self.progress.start()
        self.task = self.progress.add_task("", total=total, completed=done)

    def start(self, student: str) -> None:
        if self.estimate is not None:
            self.estimate.start(student)

    def advance(self, result: SubmissionResult) -> None:
        if self.estimate is not None:
            self.estimate.finish(result.student)
        text = f"{clean_line(result.student)}: {_short(result, self.lang)}"[:60]
        self.progress.update(self.task, advance=1, description=escape(text))

    def end(self) -> None:
        self.progress.update(self.task, description="")
        self.progress.stop()


def _remaining_column(estimate):
    """A rich column showing ``estimate.remaining()`` as h:mm:ss (-:--:-- until one submission finished)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Remaining(ProgressColumn):
        def render(self, task) -> Text:
            if task.finished:
                return Text("0:00:00", style="progress.remaining")
            seconds = estimate.remaining()
            if seconds is None:
                return Text("-:--:--", style="progress.remaining")
            minutes, second = divmod(int(round(seconds)), 60)
            hours, minute = divmod(minutes, 60)
            return Text(f"{hours}:{minute:02d}:{second:02d}", style="progress.remaining")

    return Remaining()


def print_summary(summary, *, formats=(), merged: bool = False, lang: str = "en") -> None:
    """The end-of-run summary in ``lang``: counts that add up, scores, common mistakes, failures, the files."""
    say = functools.partial(_say, lang=lang)
    count = functools.partial(_counted, lang=lang)
    tally = summary.tally
    earlier = summary.students - summary.graded_now
    if merged:
        click.echo("\n" + say("merged", submissions=count("submission", summary.students), out=summary.out))
    else:
        rate = say("rate", rate=f"{summary.graded_now / summary.elapsed:.1f}") \
            if summary.graded_now and summary.elapsed > 0 else say("nothing_new")
        click.echo("\n" + say("graded", submissions=count("submission", summary.students), out=summary.out,
                              seconds=f"{summary.elapsed:.1f}", rate=rate,
                              kept=say("kept", count=earlier) if earlier else ""))
    if summary.regraded:
        click.echo(say("changed", count=summary.regraded))
    if summary.previous is not None:
        click.echo(say("moved_aside", out=summary.out, previous=summary.previous))
    if summary.ignored:
        shown = ", ".join(clean_line(name) for name in summary.ignored[:5])
        shown += " ..." if len(summary.ignored) > 5 else ""
        click.echo(say("ignored", entries=count("entry", len(summary.ignored)), names=shown))
    timed = say("timed", count=len(tally.timed_out)) if tally.timed_out else ""
    click.echo(say("students", students=count("student", tally.students), graded=tally.graded, timed=timed,
                   errors=count("error", len(tally.errored))))
    if tally.scores:
        uncounted = say("uncounted", graded=len(tally.scores), errors=len(tally.errored)) if tally.errored else ""
        click.echo(say("scores", mean=f"{tally.mean:.2f}", max_score=f"{tally.max_score:g}",
                       median=f"{tally.median:g}", full=sum(score >= tally.max_score for score in tally.scores),
                       uncounted=uncounted))
    catalog = load_catalog()
    common = tally.common_misconceptions(5)
    if common:
        click.echo(say("common"))
        for key, number, share in common:
            title = catalog[key].text("title", lang) if key in catalog else ""
            click.echo(f"    {key:<32} {count('student', number):<13} ({100 * share:.0f}%)  {title}")
    for student, reason in tally.errored[:10]:
        lines = reason.strip().splitlines()
        click.echo(say("error_row", student=clean_line(student), reason=_cut(lines[0], 160) if lines else ""))
    for student, functions in tally.timed_out[:10]:
        click.echo(say("timeout_row", student=clean_line(student), functions=", ".join(functions)))
    if tally.set_aside:
        click.echo(say("set_aside", students=count("student", len(tally.set_aside))))
        for student, graded, others in tally.set_aside[:10]:
            click.echo(say("set_aside_row", student=clean_line(student), file=clean_line(graded),
                           others=", ".join(clean_line(name) for name in others)))
    if tally.adjusted:
        finals = [row.final for row in tally.roster if row.status == "graded"]
        mean = say("adjusted_mean", mean=f"{sum(finals) / len(finals):.2f}", max_score=f"{tally.max_score:g}") \
            if finals else ""
        click.echo(say("adjusted", students=count("student", tally.adjusted), mean=mean))
        above = [row for row in tally.roster if row.final > row.max_score > 0]
        if above:  # bonus points may be meant; a gradebook import may refuse them
            shown = ", ".join(f"{clean_line(row.student)} {row.final:g}" for row in above[:10])
            click.echo(say("adjust_above_max", students=shown + (" ..." if len(above) > 10 else ""),
                           max_score=f"{tally.max_score:g}"), err=True)
    if summary.unmatched_adjustments:
        shown = ", ".join(clean_line(name) for name in summary.unmatched_adjustments[:10])
        more = " ..." if len(summary.unmatched_adjustments) > 10 else ""
        click.echo(say("adjust_unmatched", students=shown + more), err=True)
    if tally.isolation:
        click.echo(say("isolation", layers="; ".join(kind for kind, _ in tally.isolation.most_common())))
    extra = [name for name in (("junit.xml" if "junit" in formats else ""),
                               ("gradescope/" if "gradescope" in formats else "")) if name]
    click.echo(say("files", files=", ".join(["grades.csv", "results.json", "feedback/", "report.html"] + extra)))


SUMMARY = TextTable(SUMMARY_TEXTS)


def _say(key: str, *, lang: str, **params) -> str:
    return SUMMARY.say(key, lang, **params)


say_summary = _say  # for the verbs: one of this file's texts in ``lang``


def counted(noun: str, number: int, *, lang: str) -> str:
    """``3 students`` / ``1 student`` / ``3 名学生``: a count with its noun, in ``lang``."""
    return _counted(noun, number, lang=lang)


def _counted(noun: str, number: int, *, lang: str) -> str:
    return _say(f"noun.{noun}.{'one' if number == 1 else 'other'}", lang=lang, count=number)
