"""``mha grade --similarity``: the similarity check of a class just graded, with the run's own results."""

from __future__ import annotations

import json

import click

from grader.similarity.compare import compare_class
from grader.similarity.mistakes import read_results
from grader.similarity.outputs import JSON_NAME, StageBar, summary_lines, write_similarity


def similarity_after_grading(*, run, tally) -> None:
    """Compare the class of ``run`` (a ``GradingRun`` that finished), write its files and report.html's section.

    The shared mistakes come from the run's own results.json; grades.csv,
    results.json and the students' feedback are not touched.
    """
    from grader.render.class_report import write_report

    out = run.out
    report = compare_class(submissions=run.submissions, assignment=run.assignment,
                           results=read_results(out / "results.json"), progress=StageBar(), lang=run.lang,
                           out=out)
    write_similarity(report, out=out, lang=run.lang)
    data = json.loads((out / JSON_NAME).read_text(encoding="utf-8"))
    write_report(out / "report.html", tally, title=run.title, lang=run.lang, similarity=data)
    for line in summary_lines(report):
        click.echo(line)
    click.echo(f"Wrote {out / JSON_NAME} and {out / 'similarity.html'}")
