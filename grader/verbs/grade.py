"""``mha grade``: grade a whole class into an output folder."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from grader.content.usage import text, usage_error
from grader.practice.schema import LEVELS as QUIZ_LEVELS
from grader.verbs.options import (adjust_option, assignment_option, format_option, lang_option, overwrite_option,
                                  timeout_scale_option)


@click.command("grade")
@click.argument("submissions", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--jobs", type=click.IntRange(min=1), default=None)
@click.option("--timeout", type=click.FloatRange(min=0.5), default=None)
@click.option("--resume", is_flag=True)
@overwrite_option
@format_option
@click.option("--shard", default=None, metavar="K/N")
@click.option("--visibility", type=click.Choice(("public", "hidden", "all")), default="all", show_default=True)
@click.option("--nbgrader-db", "nbgrader_db", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None)
@click.option("--add-students", is_flag=True)
@click.option("--quiz-points", default=None, metavar="POINTS")
@click.option("--quiz-count", type=click.IntRange(min=1), default=None, metavar="N")
@click.option("--quiz-topic", "quiz_topics", multiple=True, metavar="TOPIC")
@click.option("--quiz-level", "quiz_levels", multiple=True, type=click.Choice(QUIZ_LEVELS))
@click.option("--show-answers", is_flag=True)
@click.option("--quiz-due", type=click.DateTime(), default=None, metavar="WHEN")
@click.option("--isolation", type=click.Choice(("linux", "portable")), default="linux", show_default=True)
@click.option("--similarity", is_flag=True)
@adjust_option
@timeout_scale_option
@lang_option
@assignment_option
def command(submissions: Path, out: Path, jobs: int | None, timeout: float | None, resume: bool, overwrite: bool,
            formats: tuple[str, ...], shard: str | None, visibility: str, nbgrader_db: Path | None,
            add_students: bool, quiz_points: str | None, quiz_count: int | None, quiz_topics: tuple[str, ...],
            quiz_levels: tuple[str, ...], show_answers: bool, quiz_due: datetime | None,
            adjustments: Path | None, isolation: str, timeout_scale: float, lang: str | None, assignment: str,
            similarity: bool = False) -> None:
    """Grade every submission in SUBMISSIONS, in parallel and sandboxed, into --out."""
    from grader.i18n import resolve_language

    refuse_unconfined(isolation, lang=resolve_language(lang))  # before the batch's imports, which need POSIX
    from grader.batch.discovery import parse_shard
    from grader.batch.run import grade_class
    from grader.batch.settings import GradingRun
    from grader.practice.homework import quiz_policy
    from grader.sandbox.client import Limits

    if add_students and nbgrader_db is None:
        raise usage_error("add_students_needs_db")
    if resume and overwrite:
        raise usage_error("resume_or_overwrite")
    if nbgrader_db is not None and visibility != "all":
        raise usage_error("nbgrader_db_needs_all")
    if similarity and shard is not None:
        raise usage_error("similarity_needs_whole_class")
    shard_range = parse_shard(shard)
    limits = Limits() if timeout is None else Limits(submission_timeout=timeout,
                                                     call_timeout=min(Limits().call_timeout, timeout))
    run = GradingRun(submissions=submissions, out=out, assignment=assignment, visibility=visibility,
                     lang=resolve_language(lang), limits=limits, jobs=jobs, shard=shard_range,
                     formats=tuple(dict.fromkeys(formats)), resume=resume, overwrite=overwrite,
                     quiz=quiz_policy(points=quiz_points, count=quiz_count, topics=quiz_topics, levels=quiz_levels,
                                      show_answers=show_answers, due=quiz_due),
                     adjustments=adjustments, timeout_scale=timeout_scale, isolation=isolation)
    try:
        summary = grade_class(run=run, progress=make_progress(run.lang))
    except KeyboardInterrupt:
        from grader.render.summary import say_summary

        click.echo("\n" + say_summary("interrupted", lang=run.lang, out=out), err=True)
        raise click.Abort() from None
    from grader.render.summary import counted, print_summary, say_summary
    from grader.render.text_safety import clean_line

    print_summary(summary, formats=formats, lang=run.lang)
    if similarity and not submissions.is_dir():
        click.echo(say_summary("similarity_one_file", lang=run.lang), err=True)
    elif similarity:
        from grader.similarity.run import similarity_after_grading

        similarity_after_grading(run=run, tally=summary.tally)
    if nbgrader_db is not None:
        from grader.authoring.nbgrader_bridge import write_to_gradebook
        from grader.render.exports import read_results_json

        written = write_to_gradebook(db=nbgrader_db, assignment=assignment,
                                     results=read_results_json(out / "results.json"), add_students=add_students)
        added = len(written.added)
        click.echo(say_summary("gradebook_written", lang=run.lang, db=nbgrader_db,
                               scores=counted("score", len(written.students), lang=run.lang))
                   + (say_summary("gradebook_added", lang=run.lang, students=counted("student", added, lang=run.lang))
                      if added else ""))
        if written.skipped:
            shown = ", ".join(clean_line(student) for student in written.skipped[:10])
            click.echo(say_summary("gradebook_skipped", lang=run.lang, names=shown + (" ..." if len(written.skipped) > 10 else ""),
                                   students=counted("student", len(written.skipped), lang=run.lang)), err=True)


def make_progress(lang: str = "en"):
    """A rich bar on a terminal, its ETA counting the submissions still in flight; one plain line per
    submission otherwise; in ``lang``."""
    from grader.batch.eta import Estimate
    from grader.render.summary import BarProgress, LineProgress

    return BarProgress(estimate=Estimate, lang=lang) if sys.stderr.isatty() else LineProgress(lang)


def refuse_unconfined(isolation: str, *, lang: str = "en") -> None:
    """Grading runs student code in the Linux sandbox, or says why it cannot and what grades anyway."""
    from grader.sandbox.servers import linux_missing

    if isolation == "portable":
        import multiprocessing

        if "forkserver" not in multiprocessing.get_all_start_methods():  # the lanes are forked from one
            raise usage_error("grade_needs_fork")
        click.echo(text("message", "portable_unconfined", lang), err=True)
        return
    missing = linux_missing()
    if missing:
        raise usage_error("grade_needs_sandbox", missing=missing)
