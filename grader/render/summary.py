"""What ``mha grade`` and ``mha merge`` print: progress while grading, a summary at the end."""

from __future__ import annotations

import time

import click
from rich.markup import escape

from grader.content.catalog import load_catalog
from grader.render.text_safety import clean_line


def _short(result: dict) -> str:
    if result.get("status") != "graded":
        reason = (result.get("error") or "").strip().splitlines()
        return f"error: {_cut(reason[0]) if reason else 'could not be graded'}"
    found = ", ".join(result.get("misconceptions", ())[:3])
    return f"{result['score']:g}/{result['max_score']:g}" + (f"  [{found}]" if found else "")


def _cut(text: str, width: int = 100) -> str:
    """One clean line of at most ``width`` characters, cut at a word when it is longer."""
    line = clean_line(text).strip()
    if len(line) <= width:
        return line
    cut = line[:width].rsplit(" ", 1)[0] if " " in line[: width] else line[:width]
    return cut + " ..."


def _count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


class LineProgress:
    """One plain line per finished submission (for logs and CI)."""

    def begin(self, total: int, done: int) -> None:
        self.total, self.count, self.started = total, done, time.monotonic()
        note = f" ({done} already graded)" if done else ""
        click.echo(f"grading {_count(total, 'submission')}{note}")

    def advance(self, result: dict) -> None:
        self.count += 1
        click.echo(f"[{self.count}/{self.total}] {clean_line(result['student'])}: {_short(result)}")

    def end(self) -> None:
        pass


class BarProgress:
    """A rich progress bar with counts, elapsed time and ETA, on stderr."""

    def begin(self, total: int, done: int) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.progress = Progress(TextColumn("[bold]grading"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 TextColumn("{task.description}"), console=Console(stderr=True), transient=False)
        self.progress.start()
        self.task = self.progress.add_task("", total=total, completed=done)

    def advance(self, result: dict) -> None:
        text = f"{clean_line(result['student'])}: {_short(result)}"[:60]
        self.progress.update(self.task, advance=1, description=escape(text))

    def end(self) -> None:
        self.progress.update(self.task, description="")
        self.progress.stop()


def print_summary(summary, *, formats=(), merged: bool = False) -> None:
    """The end-of-run summary: counts that add up, scores, common mistakes, failures, where the files are."""
    tally = summary.tally
    earlier = summary.students - summary.graded_now
    if merged:
        click.echo(f"\nMerged the results of {_count(summary.students, 'submission')} into {summary.out}.")
    else:
        rate = f"{summary.graded_now / summary.elapsed:.1f} per second" if summary.graded_now and summary.elapsed > 0 \
            else "nothing new to grade"
        click.echo(f"\nGraded {_count(summary.students, 'submission')} into {summary.out} in {summary.elapsed:.1f} s"
                   f" ({rate}{f'; {earlier} kept from the earlier run' if earlier else ''}).")
    if summary.previous is not None:
        click.echo(f"The earlier run in {summary.out} was moved to {summary.previous}.")
    if summary.ignored:
        shown = ", ".join(clean_line(name) for name in summary.ignored[:5])
        shown += " ..." if len(summary.ignored) > 5 else ""
        click.echo(f"Ignored {_count(len(summary.ignored), 'entry', 'entries')} that are not .py, .ipynb, "
                   f"folders or the answers file of a student: {shown}")
    timed = f" ({len(tally.timed_out)} of them with checks that timed out)" if tally.timed_out else ""
    click.echo(f"  {_count(tally.students, 'student')}: {tally.graded} graded{timed}, "
               f"{_count(len(tally.errored), 'error')}")
    if tally.scores:
        click.echo(f"  mean {tally.mean:.2f} / {tally.max_score:g}, median {tally.median:g}, "
                   f"full marks {sum(score >= tally.max_score for score in tally.scores)}")
    catalog = load_catalog()
    common = tally.common_misconceptions(5)
    if common:
        click.echo("  most common misconceptions:")
        for key, count, share in common:
            title = catalog[key].text("title", "en") if key in catalog else ""
            click.echo(f"    {key:<32} {_count(count, 'student'):>12} ({100 * share:.0f}%)  {title}")
    for student, reason in tally.errored[:10]:
        lines = reason.strip().splitlines()
        click.echo(f"  error   {clean_line(student)}: {_cut(lines[0]) if lines else ''}")
    for student, functions in tally.timed_out[:10]:
        click.echo(f"  timeout {clean_line(student)}: {', '.join(functions)} (graded; those checks scored 0)")
    if tally.isolation:
        click.echo(f"  isolation: {'; '.join(kind for kind, _ in tally.isolation.most_common())}")
    extra = "".join(f", {name}" for name in (("junit.xml" if "junit" in formats else ""),
                                             ("gradescope/" if "gradescope" in formats else "")) if name)
    click.echo(f"  files: grades.csv, results.json, feedback/, report.html{extra}")
