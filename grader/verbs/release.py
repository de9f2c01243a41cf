"""``mha release``: the student release (folder and zip), an nbgrader course, a Gradescope autograder,
a GitHub Classroom starter repository."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.content.usage import usage_error
from grader.i18n import resolve_language
from grader.render.gradescope import HIDDEN_VISIBILITIES, OUTPUT_FORMATS
from grader.verbs.options import assignment_option, json_option, lang_option


@click.command("release")
@click.option("--student", "student_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--nbgrader", "course_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--gradescope", "gradescope_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--gradescope-hidden", "hidden_visibility", default="after_published", show_default=True,
              type=click.Choice(HIDDEN_VISIBILITIES))
@click.option("--gradescope-format", "output_format", default="md", show_default=True,
              type=click.Choice(OUTPUT_FORMATS))
@click.option("--github-classroom", "classroom_dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--zip/--no-zip", "archive", default=True, show_default=True)
@click.option("--force", is_flag=True)
@click.option("--give-building-blocks", is_flag=True)
@lang_option
@json_option
@assignment_option
def command(student_dir: Path | None, course_dir: Path | None, gradescope_dir: Path | None, hidden_visibility: str,
            output_format: str, classroom_dir: Path | None, archive: bool, force: bool, give_building_blocks: bool,
            lang: str | None, as_json: bool, assignment: str) -> None:
    """Hand out the exercise: a student release, an nbgrader course, a Gradescope autograder, a Classroom starter."""
    from grader.authoring.release import build_nbgrader_course, build_student_release

    if student_dir is None and course_dir is None and gradescope_dir is None and classroom_dir is None:
        raise usage_error("release_what")
    lang = resolve_language(lang)
    report = {}
    if student_dir is not None:
        release = build_student_release(target=student_dir, assignment=assignment, lang=lang, archive=archive,
                                        force=force, give_building_blocks=give_building_blocks)
        report["student"] = release.to_dict()
    if course_dir is not None:
        course = build_nbgrader_course(course_dir=course_dir, assignment=assignment, lang=lang, force=force)
        report["nbgrader"] = course.to_dict()
    if gradescope_dir is not None:
        from grader.authoring.gradescope import build_gradescope_bundle

        bundle = build_gradescope_bundle(target=gradescope_dir, assignment=assignment, lang=lang,
                                         hidden_visibility=hidden_visibility, output_format=output_format, force=force)
        report["gradescope"] = bundle.to_dict()
    if classroom_dir is not None:
        from grader.authoring.classroom import add_classroom_autograding

        repository = build_student_release(target=classroom_dir, assignment=assignment, lang=lang, archive=False,
                                           force=force, give_building_blocks=give_building_blocks)
        starter = add_classroom_autograding(folder=repository.folder, assignment=assignment, lang=lang)
        report["github_classroom"] = starter.to_dict()
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    from grader.authoring.release import RELEASE_TEXTS

    def say(key: str, **params) -> None:
        click.echo(RELEASE_TEXTS.say(f"said.{key}", lang, **params))

    if "student" in report:
        say("student", folder=release.folder, files=len(release.files))
        if release.archive:
            say("zip", archive=release.archive)
        if release.withheld:
            say("withheld", names=", ".join(release.withheld))
        if release.given_away:
            say("given_away", names=", ".join(release.given_away))
        say("student_next", folder=release.folder)
    if "nbgrader" in report:
        say("course", folder=course.folder)
        say("notebook", notebook=course.notebook)
        say("points", points=", ".join(f"{name} {value:g}" for name, value in course.points.items()))
        say("course_next", folder=course.folder, assignment=assignment)
    if "gradescope" in report:
        say("gradescope", archive=bundle.archive, fingerprint=bundle.key_fingerprint)
        say("gradescope_next")
    if "github_classroom" in report:
        say("classroom", folder=starter.folder, steps=len(starter.tests),
            points=f"{sum(test.points for test in starter.tests):g}")
        say("classroom_next", folder=starter.folder)
