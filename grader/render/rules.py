"""The presentation rules every renderer shares: an outcome's mark and colour, and which mistakes to show.

One set for the terminal (``grader.render.terminal``), the feedback pages
(``grader.render.feedback``) and the notebook fragment
(``grader.render.notebook_html``), so the three never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.content.catalog import Entry, load_catalog

if TYPE_CHECKING:
    from grader.results import SubmissionResult

MARKS = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "◷"}  # in DejaVu Sans, so no empty box
COLOURS = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow"}  # rich colour names


def mark(outcome: str) -> str:
    """The plain mark of ``outcome`` (``?`` for one this version does not know)."""
    return MARKS.get(outcome, "?")


def terminal_mark(outcome: str) -> str:
    """The mark of ``outcome`` in rich markup, coloured."""
    colour = COLOURS.get(outcome)
    return f"[{colour}]{mark(outcome)}[/]" if colour else mark(outcome)


def shown_mistakes(result: SubmissionResult) -> tuple[tuple[Entry, ...], ...]:
    """For each check of ``result.tests`` in order, the catalogued mistakes to show beside it (none if it passed).

    A check's own mistake comes first, then the further ones it found. A generic
    outcome (an entry of no function: wrong values, an error, not written yet) is
    left out where a specific mistake explains it: the check names a root cause
    elsewhere, or a failed check of the same function found a catalogued mistake.
    An id the catalog does not know (from a newer version) is left out too.
    """
    catalog = load_catalog()
    found = [tuple(catalog[key] for key in (test.misconception, *test.additional_misconceptions) if key in catalog)
             if test.outcome != "passed" else () for test in result.tests]
    specific = {test.function for test, entries in zip(result.tests, found)
                if any(entry.function is not None for entry in entries)}
    return tuple(tuple(entry for entry in entries
                       if entry.function is not None or not (test.root_cause or test.function in specific))
                 for test, entries in zip(result.tests, found))
