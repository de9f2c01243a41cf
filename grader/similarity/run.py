"""A class's similarity check as the verbs run it: ``mha similarity``, and ``mha grade --similarity`` after grading.

With grading results, the students whose failures no catalog id explains
are run once more on the shipped public fixtures (``grader.similarity.values``)
so that the same wrong values count; then every pair is compared
(``grader.similarity.compare``).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.render.exports import read_results_json
from grader.results import SubmissionResult
from grader.similarity.compare import TOP_PAIRS, SimilarityReport, compare_documents, unexplained
from grader.similarity.outputs import JSON_NAME, StageBar, summary_lines, write_similarity
from grader.similarity.sources import read_class
from grader.similarity.values import wrong_values


def check_class(*, submissions: Path, assignment: str, results: list[SubmissionResult] | None = None,
                fixtures: bool = True, out: Path | None = None, progress=None, top: int = TOP_PAIRS,
                lang: str = "en") -> SimilarityReport:
    """Compare the class in ``submissions``; ``fixtures``: run the unexplained failures on the public fixtures,
    ``submissions`` and ``out`` hidden from the workers."""
    progress = progress or StageBar(enabled=False)
    documents, skipped = read_class(submissions, assignment=assignment, lang=lang)
    values = None
    if results is not None and fixtures:
        suspects = unexplained(documents, results)
        hidden = tuple(Path(folder) for folder in (submissions, out) if folder is not None)
        values = wrong_values(files=suspects, assignment=assignment, hidden=hidden, progress=progress) \
            if suspects else {}
    return compare_documents(documents=documents, assignment=assignment, results=results, progress=progress,
                             top=top, skipped=tuple(skipped), values=values)


def similarity_after_grading(*, run, tally) -> None:
    """Compare the class of ``run`` (a ``GradingRun`` that finished), write its files and report.html's section.

    The shared mistakes come from the run's own results.json; grades.csv,
    results.json and the students' feedback are not touched.
    """
    from grader.render.class_report import write_report

    out = Path(run.out)
    report = check_class(submissions=run.submissions, assignment=run.assignment,
                         results=read_results_json(out / "results.json"), out=out, progress=StageBar(lang=run.lang),
                         lang=run.lang)
    write_similarity(report, out=out, lang=run.lang)
    data = json.loads((out / JSON_NAME).read_text(encoding="utf-8"))
    write_report(out / "report.html", tally, title=run.title, lang=run.lang, similarity=data)
    for line in summary_lines(report, out=out, lang=run.lang):
        click.echo(line)
