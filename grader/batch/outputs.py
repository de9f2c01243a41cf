"""Write a run's class outputs from its journal, one student at a time.

    grades.csv, results.json           the whole class, written atomically
    feedback/<student>.md, .html       per student, in the run's language
    gradescope/<student>/results.json  with --format gradescope
    junit.xml                          with --format junit
    report.html                        the class report (grader.render.class_report)

Only one result is in memory at a time, so a class of thousands costs what a
class of ten does (plus one float per score for the histogram).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

from grader.batch.adjustments import apply_adjustments
from grader.batch.journal import Journal
from grader.files import atomic_write_text, atomic_writer, file_key
from grader.render.class_report import write_report
from grader.render.exports import GradesCsv, JUnitReport, ResultsJson, reading_order
from grader.render.feedback import render_html, render_markdown
from grader.render.gradescope import gradescope_results
from grader.render.text_safety import clean_line
from grader.results import SubmissionResult, load_failure
from grader.tally import ClassTally


def write_outputs(*, out: Path, journal: Journal, students: list[str], lang: str, formats: tuple[str, ...],
                  title: str, assignment: str, adjustments: dict | None = None) -> ClassTally:
    """Write every output of ``students`` (in reading order) from ``journal``; returns the class figures.

    ``adjustments`` (``grader.batch.adjustments.read_adjustments``) replaces each
    result's adjustments; None keeps those the results already carry (a merge).
    """
    out = Path(out)
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    tally = ClassTally()
    with contextlib.ExitStack() as stack:
        grades = GradesCsv(stack.enter_context(atomic_writer(out / "grades.csv")))
        results = ResultsJson(stack.enter_context(atomic_writer(out / "results.json")))
        junit = None
        if "junit" in formats:
            spool = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", dir=out))
            junit = JUnitReport(spool)
        for student in sorted(students, key=reading_order):  # grades.csv, results.json and the roster alike
            result = _student_outputs(journal, student, out=out, lang=lang, formats=formats, assignment=assignment,
                                      max_score=tally.max_score,
                                      adjustments=None if adjustments is None else adjustments.get(student, ()))
            if junit is not None:
                junit.add(result)
            grades.add(result)
            results.add(result)
            tally.add(result)
        results.finish()
        if junit is not None:
            with atomic_writer(out / "junit.xml") as handle:
                junit.finish(handle, spool, name=title)
    write_report(out / "report.html", tally, title=title, lang=lang)
    return tally


def _student_outputs(journal: Journal, student: str, *, out: Path, lang: str, formats: tuple[str, ...],
                     assignment: str, max_score: float, adjustments=None) -> SubmissionResult:
    """Write ``student``'s own files; returns the result the class files show.

    A defect of the grader on one result (a journal file it cannot read, a
    renderer that fails) makes that student's result an ``error`` saying so;
    the other students' outputs are written all the same.
    """
    try:
        result = journal.read(student)
        result = apply_adjustments(result, result.adjustments if adjustments is None else adjustments)
        _write_student_files(result, out=out, lang=lang, formats=formats)
        return result
    except Exception as failure:  # noqa: BLE001 - one student's defect must not stop the class's outputs
        reason = clean_line(f"{type(failure).__name__}: {failure}")[:300]
        result = load_failure(student=student, max_score=max_score, assignment=assignment,
                              error=f"the grader could not write this result ({reason}); report it, then "
                                    "grade this student again")
        _write_student_files(result, out=out, lang=lang, formats=formats)
        return result


def _write_student_files(result: SubmissionResult, *, out: Path, lang: str, formats: tuple[str, ...]) -> None:
    key = file_key(result.student)
    markdown = render_markdown(result, lang=lang)
    atomic_write_text(out / "feedback" / f"{key}.md", markdown)
    atomic_write_text(out / "feedback" / f"{key}.html", render_html(result, lang=lang))
    if "gradescope" in formats:
        atomic_write_text(out / "gradescope" / key / "results.json",
                          json.dumps(gradescope_results(result, lang=lang, summary=markdown), ensure_ascii=False, indent=1)
                          + "\n")
