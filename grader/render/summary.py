"""What ``mha grade`` and ``mha merge`` print: progress while grading, a summary at the end."""

from __future__ import annotations

import time

import click

from grader.content.catalog import load_catalog


def _short(result: dict) -> str:
    if result.get("status") != "graded":
        reason = (result.get("error") or "").strip().splitlines()
        return f"error: {reason[0][:100] if reason else 'could not be graded'}"
    found = ", ".join(result.get("misconceptions", ())[:3])
    return f"{result['score']:g}/{result['max_score']:g}" + (f"  [{found}]" if found else "")


class LineProgress:
    """One plain line per finished submission (for logs and CI)."""

    def begin(self, total: int, done: int) -> None:
        self.total, self.count, self.started = total, done, time.monotonic()
        note = f" ({done} already graded)" if done else ""
        click.echo(f"grading {total} submissions{note}")

    def advance(self, result: dict) -> None:
        self.count += 1
        click.echo(f"[{self.count}/{self.total}] {result['student']}: {_short(result)}")

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
        self.progress.update(self.task, advance=1, description=f"{result['student']}: {_short(result)}"[:60])

    def end(self) -> None:
        self.progress.update(self.task, description="")
        self.progress.stop()


def print_summary(summary, *, formats=(), merged: bool = False) -> None:
    """The end-of-run summary: counts, scores, common mistakes, failures, where the files are."""
    tally = summary.tally
    rate = summary.graded_now / summary.elapsed if summary.elapsed > 0 else 0.0
    earlier = summary.students - summary.graded_now
    if merged:
        click.echo(f"\nMerged the results of {summary.students} submissions into {summary.out}.")
    else:
        click.echo(f"\nGraded {summary.students} submissions into {summary.out} in {summary.elapsed:.1f} s"
                   f" ({rate:.1f} per second{f'; {earlier} kept from the earlier run' if earlier else ''}).")
    if summary.ignored:
        shown = ", ".join(summary.ignored[:5]) + (" ..." if len(summary.ignored) > 5 else "")
        click.echo(f"Ignored {len(summary.ignored)} entries that are not .py, .ipynb or folders: {shown}")
    click.echo(f"  graded {tally.graded}, errors {len(tally.errored)}, timed out {len(tally.timed_out)}")
    if tally.scores:
        click.echo(f"  mean {tally.mean:.2f} / {tally.max_score:g}, median {tally.median:g}, "
                   f"full marks {sum(score >= tally.max_score for score in tally.scores)}")
    catalog = load_catalog()
    common = tally.common_misconceptions(5)
    if common:
        click.echo("  most common misconceptions:")
        for key, count, share in common:
            title = catalog[key].text("title", "en") if key in catalog else ""
            click.echo(f"    {key:<32} {count:>4} students ({100 * share:.0f}%)  {title}")
    for student, reason in tally.errored[:10]:
        click.echo(f"  error   {student}: {reason.strip().splitlines()[0][:100] if reason.strip() else ''}")
    for student, functions in tally.timed_out[:10]:
        click.echo(f"  timeout {student}: {', '.join(functions)}")
    if tally.isolation:
        click.echo(f"  isolation: {'; '.join(kind for kind, _ in tally.isolation.most_common())}")
    extra = "".join(f", {name}" for name in (("junit.xml" if "junit" in formats else ""),
                                             ("gradescope/" if "gradescope" in formats else "")) if name)
    click.echo(f"  files: grades.csv, results.json, feedback/, report.html{extra}")
