"""``mha check``: a student's instant check of their exercise file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.errors import ChecksFailed, UsageError
from grader.grading.assignment import assignment_of, get_assignment
from grader.i18n import resolve_language
from grader.paths import student_file, student_folders
from grader.verbs.options import assignment_option, json_option, lang_option, timeout_scale_option, verbose_option


@click.command("check")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--function", "functions", multiple=True, metavar="NAME")
@click.option("--all", "run_all", is_flag=True)
@click.option("--unlock", is_flag=True)
@click.option("--failed", "failed_only", is_flag=True)
@click.option("--hints/--no-hints", default=True, show_default=True)
@click.option("--more-hints", "closer_hints", is_flag=True)
@click.option("--first", "first_only", is_flag=True)
@click.option("--isolation", type=click.Choice(("auto", "linux", "portable")), default=None)
@verbose_option
@timeout_scale_option
@json_option
@lang_option
@assignment_option
def command(file: Path | None, functions: tuple[str, ...], run_all: bool, unlock: bool, failed_only: bool,
            hints: bool, closer_hints: bool, first_only: bool,
            isolation: str | None, verbose: bool, timeout_scale: float, as_json: bool, lang: str | None,
            assignment: str) -> None:
    """Check FILE (default: exercises/<assignment>.py) and explain every failure."""
    from grader.sandbox.servers import chosen_isolation

    try:
        isolation = chosen_isolation(isolation)
    except ValueError as bad:
        raise UsageError(str(bad)) from None
    # the fork server's start (NumPy imported in a second interpreter) overlaps all of what follows: finding
    # the file and the exercise, the grader's own imports, reading the cases
    launch = _launched(isolation)
    try:
        result, shown, locked, notice = _checked(file, functions=functions, run_all=run_all, unlock=unlock,
                                          isolation=isolation, timeout_scale=timeout_scale, as_json=as_json,
                                          lang=lang, assignment=assignment, launch=launch)
    except BaseException:
        if launch is not None:
            launch.stop()
        raise
    lang = resolve_language(lang)
    if as_json:
        from grader.render.text_safety import clean_strings

        click.echo(json.dumps(clean_strings(result.to_dict()), ensure_ascii=False, indent=2))
    else:
        from grader.content.messages import render
        from grader.practice.linked import linked_question
        from grader.render.terminal import print_result

        if notice:
            click.echo(notice)
        print_result(result, file=shown, lang=lang, linked_question=linked_question, failed_only=failed_only,
                     first_only=first_only, hints=hints, closer_hints=closer_hints)
        if locked:  # the total above counts the checked functions only: say which were left out
            click.echo(render("report_locked", {"functions": ", ".join(locked)}, lang))
        if verbose:
            from grader.sandbox.servers import kept_launch

            click.echo(render("report_isolation", {"isolation": result.isolation}, lang))
            if kept_launch() is not None:  # a warm server's fork (Linux) or standby (Windows, macOS) ran it
                click.echo(render("report_served", {}, lang))
    if not result.passed:
        raise ChecksFailed()


def _launched(isolation: str):
    """The Linux fork server of this check, launched, not waited for (None: the portable worker, started by
    ``grade_submission``). No spares: one submission, so no worker is made ahead for a next one."""
    from grader.sandbox.servers import KeptPortable, kept_launch, launch_server, linux_missing

    kept = kept_launch()  # the warm check server's own, where it runs this check
    if isolation == "linux" or (isolation == "auto" and not linux_missing()):
        return kept if kept is not None and not isinstance(kept, KeptPortable) else launch_server(spares=0)
    if isolation == "auto" and isinstance(kept, KeptPortable):
        return kept  # a relayed warm server's portable worker, started ahead
    return None


def _checked(file: Path | None, *, functions: tuple[str, ...], run_all: bool, unlock: bool, isolation: str,
             timeout_scale: float, as_json: bool, lang: str | None, assignment: str, launch):
    """``(result, the file shown, functions left locked, notice)`` of checking ``file``; ``launch`` (the fork server) is
    handed to the grading, which stops it, or stopped here when nothing is graded."""
    from grader.content.messages import render

    lang = resolve_language(lang)
    given = click.get_current_context().get_parameter_source("assignment") != click.core.ParameterSource.DEFAULT
    if file is not None and file.is_file() and not given:
        assignment = assignment_of(file)  # the exercise the file is named after, or whose names it defines
    exercise = get_assignment(assignment)
    if file is None and not student_file(assignment).exists():
        raise UsageError(render("check_no_student_file", {"folders": ", ".join(map(str, student_folders())),
                                                          "assignment": assignment}, lang))
    file = file or student_file(assignment)
    if not file.exists():
        raise UsageError(render("check_no_file", {"file": file, "assignment": assignment}, lang))
    entry = _entry_of(file, assignment, lang)
    unknown = [name for name in functions if name not in exercise.functions]
    if unknown:
        raise UsageError(render("check_unknown_function", {"function": unknown[0],
                                                           "functions": ", ".join(exercise.functions)}, lang))
    locked: tuple[str, ...] = ()
    if unlock:  # questions first; with --json on stderr, so stdout holds only the result
        from grader.practice.prompts import make_prompter
        from grader.practice.unlocking import unlock_before_checks

        wanted = functions or exercise.functions
        functions = unlock_before_checks(wanted, lang=lang, prompter=make_prompter(stderr=as_json))
        locked = tuple(name for name in wanted if name not in functions)
    visibility = "public"
    notice = None
    if run_all:
        if (exercise.folder / "hidden").is_dir():
            visibility = "all"
        else:
            notice = render("report_no_hidden", {}, lang)
    from grader.content.messages import Message
    from grader.entries.entry import with_entry
    from grader.grading.submitted import entry_source
    from grader.render.text_safety import clean_name

    shown = str(entry.path)
    source = entry_source(path=entry.path, found=entry.found, name=clean_name(entry.path.name))
    if isinstance(source, Message):
        from grader.grading.grade import plan_checks
        from grader.results import load_failure

        max_score = plan_checks(assignment=assignment, visibility=visibility, functions=functions or None).max_score
        result = load_failure(student=entry.path.stem, error=source.render(lang), max_score=max_score,
                              assignment=assignment, error_messages=(source.to_data(),))
        if launch is not None:
            launch.stop()
    else:
        result = _graded(source, student=entry.path.stem, shown=shown, assignment=assignment,
                         visibility=visibility, functions=functions or None, lang=lang,
                         timeout_scale=timeout_scale, isolation=isolation, launch=launch)
    return with_entry(result, entry, file=shown, lang=lang), shown, locked, notice


def _graded(source, *, student: str, shown: str, assignment: str, visibility: str,
            functions: tuple[str, ...] | None, lang: str, timeout_scale: float, isolation: str, launch):
    """Grade ``source`` (the file ``shown``, read as found). Where the Linux sandbox runs, in the fork server
    ``launch`` (``_launched``), started before the grader's own imports: the server's start (it imports NumPy)
    and the grader's (NumPy too, and the cases) overlap. The portable worker (asked for, or where the Linux
    sandbox cannot run) is started by ``grade_submission``."""
    import threading

    from grader.sandbox.isolation import quiet_sandbox
    from grader.sandbox.link import ForkServerError

    try:
        from grader.grading.grade import grade_submission
        from grader.render.terminal import CheckSpinner

        with CheckSpinner(file=shown, lang=lang) as spinner, quiet_sandbox():  # never a blank screen
            try:
                server = launch.ready() if launch is not None else None
            except ForkServerError:
                server = None  # grade_submission tries again (auto: the portable worker), or says why
            result = grade_submission(source=source, student=student, assignment=assignment,
                                      visibility=visibility, functions=functions,
                                      lang=lang, timeout_scale=timeout_scale, on_function=spinner.update,
                                      server=server, isolation=isolation, keep_calibration=True)
    except BaseException:
        if launch is not None:
            launch.stop()
        raise
    if launch is not None:  # the server ends while the result is printed; the process waits for it at exit
        threading.Thread(target=launch.stop, name="mha-check-server-stop").start()
    return result


def _entry_of(file: Path, assignment: str, lang: str):
    """What ``mha check FILE`` checks: the file, or the student's work in a folder (``grader.entries.entry``)."""
    from grader.entries.entry import file_entry, submission_in_folder

    if file.is_dir():
        entry = submission_in_folder(file.name or "student", file, assignment=assignment)
    else:
        entry = file_entry(file)
    if entry.refusal is not None:
        raise UsageError(entry.refusal.render(lang))
    return entry
