"""``mha check``: a student's instant check of their exercise file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.grading.assignment import get_assignment
from grader.errors import ChecksFailed, UsageError
from grader.i18n import resolve_language
from grader.verbs.options import assignment_option, json_option, lang_option
from grader.paths import exercise_path


@click.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--function", "functions", multiple=True, metavar="NAME",
              help="Check only this function (repeatable), e.g. --function split_heads.")
@click.option("--all", "run_all", is_flag=True, help="Also run the hidden checks, where they are installed.")
@click.option("--unlock", is_flag=True,
              help="Before a function's checks run for the first time, answer a question about what it must return.")
@json_option
@lang_option
@assignment_option
def command(file: Path | None, functions: tuple[str, ...], run_all: bool, unlock: bool, as_json: bool,
            lang: str | None, assignment: str) -> None:
    """Check FILE (default: exercises/<assignment>.py) and explain every failure.

    Exit status: 0 when every check passes, 1 when one fails, 2 for a usage error.
    """
    from grader.grading.grade import grade_submission
    from grader.content.messages import render

    exercise = get_assignment(assignment)
    lang = resolve_language(lang)
    file = file or _default_file(assignment)
    if not file.exists():
        raise UsageError(f"{file} does not exist; run `mha check path/to/{assignment}.py`")
    unknown = [name for name in functions if name not in exercise.functions]
    if unknown:
        raise UsageError(f"unknown function {unknown[0]!r}; choose from: {', '.join(exercise.functions)}")
    if unlock:
        functions = _unlocked(functions or exercise.functions, lang, quiet_stdout=as_json)
    visibility = "public"
    notice = None
    if run_all:
        if (exercise.suites_dir / "hidden").is_dir():
            visibility = "all"
        else:
            notice = render("report_no_hidden", {}, lang)
    result = grade_submission(path=file, assignment=assignment, visibility=visibility,
                              functions=functions or None, lang=lang)
    if as_json:
        from grader.render.text_safety import clean_strings

        click.echo(json.dumps(clean_strings(result.to_dict()), ensure_ascii=False, indent=2))
    else:
        from grader.practice.bank import linked_question
        from grader.render.terminal import print_result

        if notice:
            click.echo(notice)
        print_result(result, file=str(file), lang=lang, linked_question=linked_question)
    if not result.passed:
        raise ChecksFailed()


def _default_file(assignment: str) -> Path:
    local = Path("exercises") / f"{assignment}.py"
    return local if local.exists() else exercise_path(assignment)


def _unlocked(functions: tuple[str, ...], lang: str, *, quiet_stdout: bool) -> tuple[str, ...]:
    """Ask the unlock questions of each locked function; keep the functions now unlocked.

    With ``quiet_stdout`` (``--json``) the questions go to stderr, so stdout
    holds only the result object.
    """
    import sys

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
        raise UsageError("no function is unlocked yet; run `mha check --unlock` again and answer its questions")
    return opened
