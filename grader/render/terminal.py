"""Render a submission's result for a terminal (rich), in English or Chinese."""

from __future__ import annotations

from itertools import groupby
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader.content.catalog import load_catalog
from grader.content.messages import check_text, check_title, error_text, note_texts, render
from grader.render.marks import terminal_mark
from grader.results import SubmissionResult
from grader.render.text_safety import clean_text


def shown(text: str) -> str:
    """Text a student controls, safe to print: no escape sequence or control character, no rich markup."""
    return escape(clean_text(text))


def hanging(console: Console, prefix: str, body: str) -> None:
    """Print ``body`` (markup) after ``prefix`` (markup), every wrapped or further line indented under it.

    Student text never starts a line at the left margin, so it cannot pass
    for one of the grader's own lines (a fake "all checks passed").
    """
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(prefix, body)
    console.print(grid)


def print_result(result: SubmissionResult, *, file: str, lang: str, console: Console | None = None,
                 linked_question: Callable[[str], str | None] | None = None) -> None:
    """Print ``result``; ``linked_question(misconception)`` names a question to drill each mistake, if any."""
    console = console or Console(highlight=False, emoji=False)
    say = lambda key, **params: render(key, params, lang)  # noqa: E731 - a local shorthand
    title = say("report_title", file=file, assignment=result.assignment, checks=len(result.tests))
    console.print(f"[bold]{shown(title)}[/]")
    if result.notes:
        console.print(f"[dim]{say('report_notes')}:[/]")
        for note in note_texts(result, lang):
            hanging(console, "  [dim]-[/] ", f"[dim]{shown(note)}[/]")
    if result.status == "error":
        console.print(f"[red]{escape(say('report_load_error'))}[/]")
        hanging(console, "  ", shown(error_text(result, lang)))
        return
    catalog = load_catalog()
    explained: set[str] = set()
    for function, group in groupby(result.tests, key=lambda test: test.function):
        tests = list(group)
        table = Table(title=f"{escape(function)}", title_justify="left", show_edge=False, pad_edge=False,
                      expand=False)
        table.add_column(say("report_check"))
        table.add_column(say("report_points"), justify="right")
        table.add_column(say("report_result"))
        for test in tests:
            label = escape(check_title(test.name, lang)) + (f" [dim]{escape(say('report_hidden'))}[/]"
                                                           if test.visibility == "hidden" else "")
            table.add_row(label, f"{test.score:g}/{test.max_score:g}",
                          f"{terminal_mark(test.outcome)} {say('outcome_' + test.outcome)}")
        console.print(table)
        for test in tests:
            if test.outcome == "passed":
                continue
            hanging(console, "  [red]✗[/] ",
                    f"[red]{escape(check_title(test.name, lang))}[/]: {shown(check_text(test, lang))}")
            entry = catalog.get(test.misconception or "")
            if entry is not None:
                hanging(console, "    ", f"[bold]{escape(entry.text('title', lang))}[/] [dim]({entry.id})[/]")
                if test.root_cause:
                    hanging(console, "    ", f"{say('report_root')}{say('colon')}[bold]{escape(test.root_cause)}[/]")
                if entry.id in explained:
                    continue  # one explanation per mistake is enough
                explained.add(entry.id)
                hanging(console, f"    {say('report_why')}{say('colon')}", escape(entry.text("explanation", lang)))
                hanging(console, f"    {say('report_hint')}{say('colon')}", escape(entry.text("hint", lang)))
                question = linked_question(entry.id) if linked_question else None
                if question:
                    hanging(console, "    ", f"[cyan]{escape(say('report_question', question=question, misconception=entry.id))}[/]")
    failed = sum(test.outcome != "passed" for test in result.tests)
    key = "report_all_passed" if failed == 0 else "report_total"
    style = "green" if failed == 0 else "red"
    total = say(key, score=result.score, max_score=result.max_score, failed=failed, checks=len(result.tests))
    console.print(f"[bold {style}]{escape(total)}[/]")
