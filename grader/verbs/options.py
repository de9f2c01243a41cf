"""Click options shared by several verbs, each defined once with one help string."""

from __future__ import annotations

from pathlib import Path

import click

from grader.content.usage import LocalizedBadParameter
from grader.i18n import LANGUAGES
from grader.paths import DEFAULT_ASSIGNMENT, default_assignment
from grader.render.exports import FORMATS

lang_option = click.option(
    "--lang",
    type=click.Choice(LANGUAGES),
    default=None,
    help="Language of what this command prints and writes: en or zh (default: from the locale; zh_* gives Chinese).",
)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of the usual text."
)

assignment_option = click.option(
    "--assignment",
    default=default_assignment,
    show_default=f"{DEFAULT_ASSIGNMENT}; in a student release, its exercise",
    help="Which exercise: the name of its folder in grader/assignments/ (the stem of its module in exercises/).",
)

seed_option = click.option(
    "--seed", type=int, default=None, help="Seed for drawn numbers, printed so a run can be repeated."
)

overwrite_option = click.option(
    "--overwrite", is_flag=True,
    help="When --out holds an earlier run, move it to --out/previous/<time>/ and start afresh (never deleted).")
format_option = click.option(
    "--format", "formats", multiple=True, type=click.Choice(FORMATS),
    help="Also write gradescope/<student>/results.json or junit.xml (repeatable).")

class Minutes(click.ParamType):
    """A duration in minutes: ``10``, ``1.5``, or with a unit, ``90s``, ``10m``, ``1h``."""

    name = "minutes"
    _UNITS = {"s": 1 / 60, "m": 1.0, "min": 1.0, "h": 60.0}

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, (int, float)):
            minutes = float(value)
        else:
            text = str(value).strip().lower()
            unit = next((unit for unit in sorted(self._UNITS, key=len, reverse=True) if text.endswith(unit)), "m")
            number = text[: len(text) - len(unit)] if text.endswith(unit) else text
            try:
                minutes = float(number) * self._UNITS[unit]
            except ValueError:
                raise LocalizedBadParameter("minutes_not_a_duration", value=repr(value), param=param, ctx=ctx) from None
        if minutes <= 0:
            raise LocalizedBadParameter("minutes_not_positive", value=repr(value), param=param, ctx=ctx)
        return minutes


time_limit_option = click.option(
    "--time-limit", type=Minutes(), default=None, metavar="MIN",
    help="Minutes you give yourself (also 90s, 1.5m, 1h); in a quiz a late answer does not count, "
         "in a drill a late submit is marked overtime and ends the drill.",
)

adjust_option = click.option(
    "--adjust", "adjustments", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
    metavar="FILE.csv",
    help="Apply late penalties, manual points and extensions after grading: a CSV of student,points,reason[,kind] "
         "(points such as -2 or -10%; kind late, manual or extension). grades.csv keeps the raw and the final score.",
)

timeout_scale_option = click.option(
    "--timeout-scale", type=click.FloatRange(min=0.1, max=100.0), default=1.0, show_default=True,
    help="Multiply the call limits by this factor. Each call may take 50x the reference's own time for it "
         "on this machine (measured once per run), at least 0.5 s; loading at least 2 s.",
)


verbose_option = click.option(
    "--verbose", "-v", is_flag=True, help="Also say how the code was run: the worker's isolation and limits.")
