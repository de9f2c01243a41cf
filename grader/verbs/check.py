"""``mha check``: a student's instant check of their exercise file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from grader.grading.assignment import get_assignment
from grader.errors import ChecksFailed, UsageError
from grader.i18n import resolve_language
from grader.verbs.options import assignment_option, json_option, lang_option, timeout_scale_option, verbose_option
from grader.paths import DEFAULT_ASSIGNMENT, exercise_path, student_file


@click.command("check")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--function", "functions", multiple=True, metavar="NAME",
              help="Check only this function (repeatable), e.g. --function split_heads.")
@click.option("--all", "run_all", is_flag=True, help="Also run the hidden checks, where they are installed.")
@click.option("--unlock", is_flag=True,
              help="Before a function's checks run for the first time, answer a question about what it must return.")
@click.option("--failed", "failed_only", is_flag=True, help="Show only the checks that fail.")
@click.option("--hints/--no-hints", default=True, show_default=True,
              help="Show the hint under each mistake found; --no-hints keeps the explanation and leaves the fix "
                   "to you.")
@click.option("--first", "first_only", is_flag=True,
              help="Explain only the first failing check of each function (the table still lists them all): "
                   "one mistake often fails many checks.")
@click.option("--isolation", type=click.Choice(("auto", "linux", "portable")), default=None,
              help="How your code is run: the Linux sandbox, a portable child process (Windows, macOS, containers), "
                   "or auto, the Linux sandbox where it runs (default: auto, or $MHA_ISOLATION).")
@verbose_option
@timeout_scale_option
@json_option
@lang_option
@assignment_option
def command(file: Path | None, functions: tuple[str, ...], run_all: bool, unlock: bool, failed_only: bool,
            hints: bool, first_only: bool, isolation: str | None, verbose: bool, timeout_scale: float, as_json: bool, lang: str | None,
            assignment: str) -> None:
    """Check FILE (default: exercises/<assignment>.py) and explain every failure.

    FILE may be a folder (a clone of the hand-out, an upload): the file checked is the one you worked on,
    as `mha grade` chooses it (changed from the hand-out, more functions implemented, then saved last).
    Without --assignment, the exercise is the one FILE is named after, or else the one whose functions
    and classes FILE defines.

    Exit status: 0 when every check passes, 1 when one fails, 2 for a usage error.
    """
    from grader.content.messages import render
    from grader.sandbox.servers import chosen_isolation

    lang = resolve_language(lang)
    try:
        isolation = chosen_isolation(isolation)
    except ValueError as bad:
        raise UsageError(str(bad)) from None
    given = click.get_current_context().get_parameter_source("assignment") != click.core.ParameterSource.DEFAULT
    if file is not None and file.is_file() and not given:
        assignment = assignment_of(file)
    exercise = get_assignment(assignment)
    file = file or student_file(assignment)
    if not file.exists():
        raise UsageError(render("check_no_file", {"file": file, "assignment": assignment}, lang))
    entry = _entry_of(file, assignment, lang)
    unknown = [name for name in functions if name not in exercise.functions]
    if unknown:
        raise UsageError(render("check_unknown_function", {"function": unknown[0],
                                                           "functions": ", ".join(exercise.functions)}, lang))
    locked: tuple[str, ...] = ()
    if unlock:
        wanted = functions or exercise.functions
        functions = _unlocked(wanted, lang, quiet_stdout=as_json)
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

        max_score = plan_checks(assignment=assignment, visibility=visibility, functions=functions or None,
                                student=entry.path.stem)[2]
        result = load_failure(student=entry.path.stem, error=source.render(lang), max_score=max_score,
                              assignment=assignment, error_messages=(source.to_data(),))
    else:
        result = _graded(source, student=entry.path.stem, shown=shown, assignment=assignment,
                         visibility=visibility, functions=functions or None, lang=lang,
                         timeout_scale=timeout_scale, isolation=isolation)
    result = with_entry(result, entry, file=shown, lang=lang)
    if as_json:
        from grader.render.text_safety import clean_strings

        click.echo(json.dumps(clean_strings(result.to_dict()), ensure_ascii=False, indent=2))
    else:
        from grader.practice.linked import linked_question
        from grader.render.terminal import print_result

        if notice:
            click.echo(notice)
        print_result(result, file=shown, lang=lang, linked_question=linked_question, failed_only=failed_only,
                     first_only=first_only, hints=hints)
        if locked:  # the total above counts the checked functions only: say which were left out
            click.echo(render("report_locked", {"functions": ", ".join(locked)}, lang))
        if verbose:
            click.echo(render("report_isolation", {"isolation": result.isolation}, lang))
    if not result.passed:
        raise ChecksFailed()


def _graded(source, *, student: str, shown: str, assignment: str, visibility: str,
            functions: tuple[str, ...] | None, lang: str, timeout_scale: float, isolation: str):
    """Grade ``source`` (the file ``shown``, read as found). Where the Linux sandbox runs, in a fork server of its own launched before the grader's
    own imports: the server's start (it imports NumPy) and the grader's (NumPy too, and the cases) overlap.
    The portable worker (asked for, or where the Linux sandbox cannot run) is started by ``grade_submission``."""
    import threading

    from grader.sandbox.isolation import quiet_sandbox
    from grader.sandbox.link import ForkServerError
    from grader.sandbox.servers import launch_server, linux_missing

    # no spares: one submission, so no worker is made ahead for a next one
    launch = launch_server(spares=0) if isolation == "linux" or (isolation == "auto" and not linux_missing()) \
        else None
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


_DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


def defined_names(path: Path) -> set[str]:
    """The top-level functions and classes a file (or a notebook's code cells) defines, read without running
    it; a syntax error elsewhere in the file does not hide them."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(text).get("cells", [])
            text = "\n".join("".join(cell.get("source", "")) for cell in cells if cell.get("cell_type") == "code")
        except (ValueError, AttributeError, TypeError, RecursionError):
            return set()
    return set(_DEFINITION.findall(text))


def assignment_of(file: Path) -> str:
    """The exercise ``file`` belongs to: the one it is named after, else the one whose stub's functions and
    classes it defines all of (the most specific when several do), else the one it shares the most names
    with. A file that defines none of any exercise's names, or fits the default exercise as well as others,
    is checked as the default exercise; UsageError when other exercises fit equally well."""
    from grader.grading.assignment import ASSIGNMENTS

    if file.stem in ASSIGNMENTS:
        return file.stem
    defined = defined_names(file)
    scores = []
    for name in ASSIGNMENTS:
        stub = exercise_path(name)
        wanted = defined_names(stub) if stub.is_file() else set()
        if wanted:
            shared = len(wanted & defined)
            # a full fit: the most specific stub wins; else the stub the file covers the largest part of
            scores.append((wanted <= defined, len(wanted) if wanted <= defined else shared / len(wanted), shared,
                           name))
    scores.sort(reverse=True)
    if not scores or scores[0][2] == 0:
        return DEFAULT_ASSIGNMENT
    best = scores[0]
    if len(scores) == 1 or best[:3] != scores[1][:3]:
        return best[3]
    tied = [name for *score, name in scores if tuple(score) == best[:3]]
    if DEFAULT_ASSIGNMENT in tied:
        return DEFAULT_ASSIGNMENT  # what a check without --assignment has always meant
    raise UsageError(f"cannot tell which exercise {file} is: it fits {' and '.join(sorted(tied))} equally well; "
                     f"pass --assignment NAME (one of: {', '.join(sorted(ASSIGNMENTS))})")


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


def _unlocked(functions: tuple[str, ...], lang: str, *, quiet_stdout: bool) -> tuple[str, ...]:
    """Ask the unlock questions of each locked function; keep the functions now unlocked.

    With ``quiet_stdout`` (``--json``) the questions go to stderr, so stdout
    holds only the result object.
    """
    import sys

    from grader.content.messages import render

    import numpy as np

    from grader.practice.prompts import ArrowKeyPrompter, PlainPrompter
    from grader.practice.texts import text
    from grader.practice.unlocking import UnlockBudget, unlock_interactively

    if quiet_stdout:
        def write(text: str) -> None:
            click.echo(text, err=True)

        def read(prompt: str) -> str:
            click.echo(prompt, err=True, nl=False)
            return input()

        prompter = ArrowKeyPrompter(write=write) if sys.stdin.isatty() else PlainPrompter(read=read, write=write)
    else:
        prompter = ArrowKeyPrompter() if sys.stdin.isatty() else PlainPrompter()
    rng = np.random.default_rng()
    budget = UnlockBudget()  # at most a few questions before the first check
    opened = tuple(name for name in functions
                   if unlock_interactively(name, lang=lang, prompter=prompter, rng=rng, budget=budget))
    if budget.later:
        prompter.show(text("unlock_later", lang, functions=", ".join(budget.later)))
    if not opened:
        raise UsageError(render("check_none_unlocked", {}, lang))
    return opened
