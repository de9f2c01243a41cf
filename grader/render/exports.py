"""Results in the formats other tools read: CSV, results.json (written, and read back), JUnit XML (Gradescope's:
``gradescope.py``).

Renderers only: each reads ``SubmissionResult`` values (``results.json`` is
their JSON, DESIGN.md's contract) and computes no score. The class-wide files are written while the results stream
past, one student at a time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO

from grader.errors import UsageError
from grader.render.text_safety import clean_text, csv_cell, needs_quotes
from grader.results import SubmissionResult

# ``score`` is the final score (after adjustments), what a gradebook imports; ``raw_score`` the checks' own
CSV_COLUMNS = ("student", "score", "max_score", "status", "misconceptions", "raw_score", "adjustments")
FORMATS = ("gradescope", "junit")  # the extra exports of a class run
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# ---- grades.csv ----------------------------------------------------------------------
class GradesCsv:
    """``grades.csv``: one row per student, misconceptions joined by ``;``.

    Text cells go through ``csv_cell``: one line, and a cell that a
    spreadsheet would run as a formula starts with ``'``. Such a cell, or
    one with a ``;`` (a separator where spreadsheets use it), is quoted.
    """

    def __init__(self, handle: IO[str]):
        self.handle = handle
        self.handle.write(_csv_row(CSV_COLUMNS))

    def add(self, result: SubmissionResult) -> None:
        row = [csv_cell(result.student), f"{result.final:g}", f"{result.max_score:g}", csv_cell(result.status),
               csv_cell(";".join(result.misconceptions)), f"{result.score:g}", csv_cell(adjustments_text(result))]
        self.handle.write(_csv_row(row))


def _csv_row(cells) -> str:
    """One CSV line, each cell quoted only where it needs it (a comma, a quote, a ``;``, a neutralized formula):
    csv's writers quote by row or by dialect, never one cell because of a ``;``, so the rows of a class
    would look alike only when none of them held one."""
    return ",".join('"' + cell.replace('"', '""') + '"' if needs_quotes(cell) or any(c in cell for c in ',"\r\n')
                    else cell for cell in map(str, cells)) + "\n"


def reading_order(student: str) -> tuple[str, str]:
    """The order a person reads a roster in: by letters, case and accents aside (``alice`` before ``Zoë``)."""
    import unicodedata

    letters = "".join(c for c in unicodedata.normalize("NFKD", student) if not unicodedata.combining(c))
    return letters.casefold(), student


def adjustments_text(result: SubmissionResult) -> str:
    """The adjustments of a result in one cell: ``late -6: late by 1 day; late waived: ...``."""
    parts = []
    for item in result.adjustments:
        change = "waived" if item.waived else f"{item.change:+g}"
        parts.append(f"{item.kind} {change}: {item.reason}".strip())
    return "; ".join(parts)


# ---- results.json ----------------------------------------------------------------------
class ResultsJson:
    """``results.json``: the list of result objects, written one object at a time."""

    def __init__(self, handle: IO[str]):
        self.handle = handle
        self.count = 0
        handle.write("[")

    def add(self, result: SubmissionResult) -> None:
        self.handle.write(",\n" if self.count else "\n")
        self.handle.write(json.dumps(result.to_dict(), ensure_ascii=False))
        self.count += 1

    def finish(self) -> None:
        self.handle.write("\n]\n" if self.count else "]\n")


def read_results_json(path: Path) -> list[SubmissionResult]:
    """The results of a ``results.json`` that ``ResultsJson`` wrote; a UsageError naming the file and what is wrong
    when it cannot be read or holds anything else."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as bad:
        raise UsageError(f"cannot read the results {path} ({bad}); pass the results.json of `mha grade`") from None
    if not isinstance(data, list) or not all(isinstance(item, dict) and "student" in item for item in data):
        raise UsageError(f"{path} is not a results.json of `mha grade` (a list of results, each with a student)")
    try:
        return [SubmissionResult.from_dict(item) for item in data]
    except (TypeError, ValueError, AttributeError) as bad:
        raise UsageError(f"{path} is not a results.json of `mha grade`: a result does not have the fields "
                         f"grading writes ({bad})") from None


# ---- JUnit XML ----------------------------------------------------------------------------
def _clean(text: str) -> str:
    """Student text fit for XML: cleaned, and (belt and braces) nothing XML 1.0 forbids."""
    return _NOT_XML.sub("\ufffd", clean_text(text))


class JUnitReport:
    """A JUnit XML report: one ``<testsuite>`` per student, one ``<testcase>`` per check.

    Suites are spooled to ``body`` as they come; ``finish`` writes the
    ``<testsuites>`` element with the totals around them.
    """

    def __init__(self, body: IO[str]):
        self.body = body
        self.totals = {"tests": 0, "failures": 0, "errors": 0}

    def add(self, result: SubmissionResult) -> None:
        from xml.sax.saxutils import escape, quoteattr  # here: it imports urllib, which `mha check` never needs

        student = _clean(result.student)
        cases = []
        failures = errors = 0
        if result.status != "graded":
            errors = 1
            cases.append(f'<testcase classname={quoteattr(student)} name="load" time="0">'
                         f'<error type="load-error" message={quoteattr(_clean(result.error or "")[:500])}>'
                         f'{escape(_clean(result.error or ""))}</error></testcase>')
        for test in result.tests:
            classname = quoteattr(f"{student}.{test.function}")
            head = f'<testcase classname={classname} name={quoteattr(_clean(test.name))} time="0">'
            if test.outcome == "passed":
                cases.append(head + "</testcase>")
                continue
            kind = "failure" if test.outcome == "failed" else "error"
            failures += kind == "failure"
            errors += kind == "error"
            message = _clean(test.message or "")
            cases.append(f'{head}<{kind} type={quoteattr(test.misconception or test.outcome)} '
                         f'message={quoteattr(message[:500])}>{escape(message)}</{kind}></testcase>')
        count = len(cases)
        self.body.write(
            f'  <testsuite name={quoteattr(student)} tests="{count}" failures="{failures}" errors="{errors}" '
            f'skipped="0" time="{float(result.duration or 0.0):.3f}">\n'
            f'    <properties><property name="score" value="{result.score:g}"/>'
            f'<property name="max_score" value="{result.max_score:g}"/>'
            f'<property name="final_score" value="{result.final:g}"/>'
            + "".join(f'<property name="adjustment" value={quoteattr(_clean(text))}/>'
                      for text in adjustments_text(result).split("; ") if text)
            + '</properties>\n'
            + "".join(f"    {case}\n" for case in cases) + "  </testsuite>\n")
        self.totals["tests"] += count
        self.totals["failures"] += failures
        self.totals["errors"] += errors

    def finish(self, handle: IO[str], body_text: IO[str], *, name: str) -> None:
        from xml.sax.saxutils import quoteattr

        totals = " ".join(f'{key}="{value}"' for key, value in self.totals.items())
        handle.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name={quoteattr(name)} {totals}>\n')
        body_text.seek(0)
        for line in body_text:
            handle.write(line)
        handle.write("</testsuites>\n")
