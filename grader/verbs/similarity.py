"""``mha similarity``: which submissions of a class were not written independently (a signal, never a grade)."""

from __future__ import annotations

from pathlib import Path

import click

from grader.verbs.options import assignment_option, lang_option


@click.command("similarity")
@click.argument("submissions", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--results", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--no-fixtures", "fixtures", flag_value=False, default=True)
@click.option("--top", type=click.IntRange(min=1), default=None)
@lang_option
@assignment_option
def command(submissions: Path, out: Path, results: Path | None, fixtures: bool, top: int | None,
            lang: str | None, assignment: str) -> None:
    """Compare every pair of submissions in SUBMISSIONS, and each with the answer key, into --out."""
    from grader.content.usage import usage_error
    from grader.i18n import resolve_language
    from grader.render.exports import read_results_json
    from grader.similarity.compare import TOP_PAIRS
    from grader.similarity.outputs import StageBar, summary_lines, write_similarity
    from grader.similarity.run import check_class

    lang = resolve_language(lang)
    if out.resolve().is_relative_to(submissions.resolve()):
        raise usage_error("out_inside_submissions", out=out, submissions=submissions)
    out.mkdir(parents=True, exist_ok=True)
    graded = read_results_json(results) if results is not None else None
    report = check_class(submissions=submissions, assignment=assignment, results=graded, fixtures=fixtures, out=out,
                         progress=StageBar(lang=lang), top=top or TOP_PAIRS, lang=lang)
    write_similarity(report, out=out, lang=lang)
    for line in summary_lines(report, out=out, lang=lang):
        click.echo(line)
