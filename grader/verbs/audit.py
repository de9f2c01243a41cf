"""``mha audit``: run the mutant library against the current suites."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.errors import ChecksFailed
from grader.verbs.options import assignment_option, json_option


@click.command("audit")
@click.option("--library", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None)
@click.option("--public-only", is_flag=True)
@json_option
@assignment_option
def command(library: Path | None, public_only: bool, as_json: bool, assignment: str) -> None:
    """Report mutants that survive or are misdiagnosed, and correct variants that lose points."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from grader.authoring.audit import ACCEPTED, audit, summarize

    findings = audit(library=library, assignment=assignment,
                     visibility="public" if public_only else "all")
    problems = [finding for finding in findings if finding.verdict not in ACCEPTED]
    if as_json:
        click.echo(json.dumps([finding.to_dict() for finding in findings], indent=2))
    else:
        console = Console()
        table = Table(title=f"mha audit: {len(findings)} modules")
        for column in ("module", "expected", "score", "diagnosed", "verdict"):
            table.add_column(column, overflow="fold")
        for finding in findings:
            style = {"ok": "green", "known-miss": "yellow"}.get(finding.verdict, "red")
            table.add_row(escape(Path(finding.path).name), finding.expected, f"{finding.score:g}/{finding.max_score:g}",
                          ", ".join(finding.diagnosed) or "-", f"[{style}]{finding.verdict}[/]")
        console.print(table)
        for finding in [finding for finding in findings if finding.verdict != "ok"]:
            style = "yellow" if finding.verdict in ACCEPTED else "red"
            console.print(f"[{style}]{finding.verdict}[/] {escape(finding.path)}: {escape(finding.reason)}")
        summary = summarize(findings)
        figures = Table(title="named, per catalog id")
        for column in ("misconception", "named", "modules"):
            figures.add_column(column, overflow="fold")
        for row in summary.by_id:
            style = "green" if row.named == row.total else "red"
            figures.add_row(row.misconception, f"[{style}]{row.named}[/]", str(row.total))
        console.print(figures)
        console.print(
            f"named {summary.named}/{summary.total} catalogued mistakes; mutants detected "
            f"{summary.mutants_detected}/{summary.mutants}; correct at full marks "
            f"{summary.correct_full_marks}/{summary.correct}; modules with a spurious id: {summary.spurious}")
        console.print(f"{len(problems)} finding{'s' * (len(problems) != 1)} of {len(findings)} modules"
                      if problems else f"all {len(findings)} modules ok")
    if problems:
        raise ChecksFailed()
