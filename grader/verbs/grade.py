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
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for grades.csv, results.json, feedback/ and report.html.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Submissions graded at once (default: every core).")
@click.option("--timeout", type=click.FloatRange(min=0.5), default=None,
              help="Seconds of wall clock one submission may use in all (default: 60); each call has its own, "
                   "calibrated limit (see --timeout-scale).")
@click.option("--resume", is_flag=True,
              help="Continue the run in --out (interrupted, or to add late students), keeping its results.")
@overwrite_option
@format_option
@click.option("--shard", default=None, metavar="K/N",
              help="Grade only every N-th submission, starting at the K-th (1/4, 2/4...); join with `mha merge`.")
@click.option("--visibility", type=click.Choice(("public", "hidden", "all")), default="all", show_default=True,
              help="Which checks to run: the public ones students see, the hidden ones, or both.")
@click.option("--nbgrader-db", "nbgrader_db", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Also write the scores into this nbgrader gradebook (the course's gradebook.db), for formgrader; "
                   "only students on its roster, unless --add-students.")
@click.option("--add-students", is_flag=True,
              help="With --nbgrader-db, add the students who are not on the gradebook's roster yet.")
@click.option("--quiz-points", default=None, metavar="POINTS",
              help="Points per quiz question in answers files beside the code (<student>.answers.toml): "
                   "a number, or per level such as basic=1,intermediate=2,advanced=3 (default 1).")
@click.option("--quiz-count", type=click.IntRange(min=1), default=None, metavar="N",
              help="Questions per quiz sheet, as given to `mha quiz --sheet --count` (default 10). "
                   "Any --quiz-* option assigns the quiz: every student has a sheet, worth the same, and one "
                   "without an answers file scores 0 of it. Without one, answers files change no score.")
@click.option("--quiz-topic", "quiz_topics", multiple=True, metavar="TOPIC",
              help="A topic of the sheets, as given to `mha quiz --sheet --topic` (repeatable).")
@click.option("--quiz-level", "quiz_levels", multiple=True, type=click.Choice(QUIZ_LEVELS),
              help="A level of the sheets, as given to `mha quiz --sheet --level` (repeatable).")
@click.option("--show-answers", is_flag=True,
              help="Show the expected quiz answers in the feedback (by default only after --quiz-due).")
@click.option("--quiz-due", type=click.DateTime(), default=None, metavar="WHEN",
              help="Due date of the quiz (e.g. 2025-03-01 or '2025-03-01 23:59', local time); "
                   "after it the feedback shows the expected answers.")
@click.option("--isolation", type=click.Choice(("linux", "portable")), default="linux", show_default=True,
              help="linux: each submission in the Linux sandbox (Landlock, namespaces, cgroups, rlimits). portable: "
                   "in a plain child process, where the Linux sandbox cannot run (Windows, macOS, containers); "
                   "it does NOT protect this machine from hostile code: only for code you trust.")
@click.option("--similarity", is_flag=True,
              help="Also compare every pair of submissions (and each with the answer key) into similarity.json and "
                   "similarity.html, with a section in report.html; never changes a grade.")
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
    """Grade every submission in SUBMISSIONS, in parallel and sandboxed, into --out.

    SUBMISSIONS holds one entry per student: <student>.py, <student>.ipynb, or
    a folder <student>/ with the file anywhere inside (nbgrader's
    submitted/<student>/<assignment>/ works). SUBMISSIONS may also be one
    file, graded as a class of one (mha grade alice.py --out DIR). Each result is saved as it
    finishes, so --resume continues after an interruption, even kill -9.
    Exit status 0 when the batch finished, whatever the students scored.
    """
    from grader.i18n import resolve_language

    refuse_unconfined(isolation, lang=resolve_language(lang))  # before the batch's imports, which need POSIX
    from grader.batch.discovery import parse_shard
    from grader.batch.run import grade_class
    from grader.batch.settings import GradingRun
    from grader.errors import UsageError
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
    try:
        shard_range = parse_shard(shard)
    except ValueError as bad:
        raise UsageError(str(bad)) from None
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
