"""Render a submission's result for a terminal (rich), in English or Chinese."""

from __future__ import annotations

import threading
from itertools import groupby
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader.content.catalog import CLOSER_HINT
from grader.content.messages import Message, case_text, check_text, check_title, error_text, note_texts, render
from grader.render.rules import shown_mistakes, terminal_mark
from grader.render.text_safety import clean_text
from grader.results import SubmissionResult


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
                 linked_question: Callable[[str], str | None] | None = None, failed_only: bool = False,
                 first_only: bool = False, hints: bool = True, closer_hints: bool = False,
                 drill: bool = False) -> None:
    """Print ``result``; ``linked_question(misconception)`` names a question to drill each mistake, if any.

    A function whose every check says it is not written yet takes one line; ``failed_only`` leaves out
    the checks that passed (and functions with nothing failing); ``first_only`` explains only the first
    failure of each function and counts the rest; ``hints`` False leaves out each mistake's hint, and
    ``closer_hints`` adds the second, closer hint of a mistake that has one. Each
    failure shows its explanation, what the student's code printed during it, and one card per mistake
    found; a generic outcome gets
    no card where a specific mistake explains it. The report ends with the next step.
    """
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
    explained: set[str] = set()
    cards = dict(zip(map(id, result.tests), shown_mistakes(result)))  # by check: the mistakes shown beside it
    for function, group in groupby(result.tests, key=lambda test: test.function):
        tests = list(group)
        failing = [test for test in tests if test.outcome != "passed"]
        if failed_only and not failing:
            continue
        if _not_written(tests):
            points = sum(test.max_score for test in tests)
            hanging(console, f"[red]✗ {escape(function)}[/] (0/{points:g}){say('colon')}", shown(check_text(tests[0], lang)))
            continue
        table = Table(title=f"{escape(function)}", title_justify="left", show_edge=False, pad_edge=False,
                      expand=False)
        table.add_column(say("report_check"))
        table.add_column(say("report_points"), justify="right")
        table.add_column(say("report_result"))
        for test in failing if failed_only else tests:
            label = escape(check_title(test.name, lang)) + (f" [dim]{escape(say('report_hidden'))}[/]"
                                                           if test.visibility == "hidden" else "")
            table.add_row(label, f"{test.score:g}/{test.max_score:g}",
                          f"{terminal_mark(test.outcome)} {say('outcome_' + test.outcome)}")
        console.print(table)
        for test in failing[:1] if first_only else failing:
            hanging(console, "  [red]✗[/] ", f"[red]{escape(check_title(test.name, lang))}[/]")
            hanging(console, "    ", shown(check_text(test, lang)))
            if test.case:
                hanging(console, "      ", shown(case_text(test, lang)))
            if test.output:
                hanging(console, "    ", f"[dim]{escape(say('report_printed'))}[/]")
                hanging(console, "      ", f"[dim]{shown(test.output.rstrip())}[/]")
            for entry in cards[id(test)]:
                _card(console, entry, test, explained, say, lang, linked_question, hints=hints,
                      closer_hints=closer_hints)
        if first_only and len(failing) > 1:
            hanging(console, "  ", f"[dim]{escape(say('report_more_failed', function=function, count=len(failing) - 1))}[/]")
    failed = sum(test.outcome != "passed" for test in result.tests)
    key = "report_all_passed" if failed == 0 else "report_total"
    style = "green" if failed == 0 else "red"
    total = say(key, score=result.score, max_score=result.max_score, failed=failed, checks=len(result.tests))
    console.print(f"[bold {style}]{escape(total)}[/]")
    step = next_step(result, lang, drill=drill)
    if step:
        console.print(escape(step))  # the grader's own text, with the function's and the check's names


def _card(console: Console, entry, test, explained: set, say, lang: str, linked_question, *,
          hints: bool = True, closer_hints: bool = False) -> None:
    hanging(console, "    ", f"[bold]{escape(entry.text('title', lang))}[/][dim]{escape(say('id_in_brackets', id=entry.id))}[/]")
    if test.root_cause and entry.function is not None and entry.id == test.misconception:
        hanging(console, "    ", f"{say('report_root')}{say('colon')}[bold]{escape(test.root_cause)}[/]")
    if entry.id in explained:
        return  # one explanation per mistake is enough
    explained.add(entry.id)
    hanging(console, f"    {say('report_why')}{say('colon')}", escape(entry.text("explanation", lang)))
    if hints:
        hanging(console, f"    {say('report_hint')}{say('colon')}", escape(entry.text("hint", lang)))
    if hints and closer_hints and entry.has(CLOSER_HINT):
        hanging(console, f"    {say('report_closer_hint')}{say('colon')}", escape(entry.text(CLOSER_HINT, lang)))
    question = linked_question(entry.id) if linked_question else None
    if question:
        hanging(console, "    ", f"[cyan]{escape(say('report_question', question=question, misconception=entry.id))}[/]")


def _not_written(tests) -> bool:
    """Every check of the function says it (or what it calls) is not written yet."""
    return bool(tests) and all(test.outcome != "passed" and test.misconception == "not-implemented" for test in tests)



def next_step(result: SubmissionResult, lang: str, *, drill: bool = False) -> str | None:
    """What to do next: write the first function not written yet, else fix the first that fails.

    The functions that fail because of it are named only when the results say so (their checks' root
    cause is that function); ``drill``: the command to run again is ``mha drill --submit``.
    """
    for function, group in groupby(result.tests, key=lambda test: test.function):
        tests = list(group)
        failing = [test for test in tests if test.outcome != "passed"]
        if not failing:
            continue
        again = Message("report_again_drill") if drill else Message("report_again_check", {"function": function})
        if _not_written(tests):
            return render("report_next_write", {"function": function, "again": again}, lang)
        # the functions come in the order the computation uses them: the first that fails comes first
        users = list(dict.fromkeys(test.function for test in result.tests if test.outcome != "passed"
                                   and test.root_cause == function and test.function != function))
        params = {"function": function, "check": check_title(failing[0].name, lang), "again": again,
                  "users": render("list_separator", {}, lang).join(users)}
        return render("report_next_fix_users" if users else "report_next_fix", params, lang)
    return None


class CheckSpinner:
    """A spinner on stderr naming the function being checked, shown once checking has taken ``delay`` seconds.

    A quick check prints nothing extra; a slow or hanging one is never a
    blank screen. Use as a context manager and pass ``update`` as the
    grader's ``on_function``. Drawn only on a terminal.
    """

    def __init__(self, *, file: str, lang: str, delay: float = 0.5, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False)
        self.lang, self.delay = lang, delay
        self.text = render("spinner_loading", {"file": file}, lang)
        self.status = None
        self._lock = threading.Lock()
        self._done = False
        self._timer = threading.Timer(delay, self.show)
        self._timer.daemon = True

    def __enter__(self) -> CheckSpinner:
        if self.console.is_terminal:
            self._timer.start()
        return self

    def update(self, function: str) -> None:
        """The grader has moved on to ``function``."""
        with self._lock:
            self.text = render("spinner_checking", {"function": function}, self.lang)
            if self.status is not None:
                self.status.update(escape(self.text))

    def show(self) -> None:
        with self._lock:
            if not self._done and self.status is None:
                # braille dots where the terminal is UTF-8, else - \ | / (an old console, an ASCII locale)
                spinner = "dots" if self.console.encoding.lower().startswith("utf") else "line"
                self.status = self.console.status(escape(self.text), spinner=spinner)
                self.status.start()

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._done = True
            self._timer.cancel()
            if self.status is not None:
                self.status.stop()
