"""``mha release``: the student release (folder and zip) and a ready nbgrader course."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.errors import UsageError
from grader.i18n import resolve_language
from grader.verbs.options import assignment_option, json_option, lang_option


@click.command("release")
@click.option("--student", "student_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the student release to this folder, and DIR.zip next to it.")
@click.option("--nbgrader", "course_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write an nbgrader course here: nbgrader_config.py and source/<assignment>/.")
@click.option("--zip/--no-zip", "archive", default=True, show_default=True,
              help="Also zip the student release.")
@click.option("--force", is_flag=True, help="Replace an existing release folder or course notebook.")
@lang_option
@json_option
@assignment_option
def command(student_dir: Path | None, course_dir: Path | None, archive: bool, force: bool, lang: str | None,
            as_json: bool, assignment: str) -> None:
    """Hand out the exercise: a student release, an nbgrader course, or both.

    The student release holds the stub, the notebooks, the public checks and
    the `mha` command (`pip install .` in it); never the solutions, the hidden
    checks or your course key. The nbgrader course's test cells run the same
    checks as `mha grade`, so both give the same scores. --lang picks the
    language of the READMEs and of the course notebook.
    """
    from grader.authoring.release import build_nbgrader_course, build_student_release

    if student_dir is None and course_dir is None:
        raise UsageError("say what to release: --student DIR, --nbgrader COURSE_DIR, or both")
    lang = resolve_language(lang)
    report = {}
    if student_dir is not None:
        release = build_student_release(target=student_dir, assignment=assignment, lang=lang, archive=archive,
                                        force=force)
        report["student"] = release.to_dict()
    if course_dir is not None:
        course = build_nbgrader_course(course_dir=course_dir, assignment=assignment, lang=lang, force=force)
        report["nbgrader"] = course.to_dict()
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    if "student" in report:
        click.echo(f"Student release: {release.folder} ({len(release.files)} files)")
        if release.archive:
            click.echo(f"  zip: {release.archive}")
        click.echo(f"  next: cd {release.folder} && pip install . && mha check")
    if "nbgrader" in report:
        click.echo(f"nbgrader course: {course.folder}")
        click.echo(f"  notebook: {course.notebook}")
        click.echo("  points per test cell: " + ", ".join(f"{name} {value:g}" for name, value in course.points.items()))
        click.echo(f"  next: cd {course.folder} && nbgrader generate_assignment {assignment}")
