"""Click options shared by several verbs, each defined once (their help texts: help.toml, [shared.*])."""

from __future__ import annotations

from pathlib import Path

import click

from grader.content.usage import LocalizedBadParameter
from grader.i18n import LANGUAGES
from grader.paths import default_assignment
from grader.render.exports import FORMATS

lang_option = click.option(
    "--lang",
    type=click.Choice(LANGUAGES),
    default=None,
)

json_option = click.option(
    "--json", "as_json", is_flag=True
)

assignment_option = click.option(
    "--assignment",
    default=default_assignment,
)

seed_option = click.option(
    "--seed", type=int, default=None
)

overwrite_option = click.option(
    "--overwrite", is_flag=True)
format_option = click.option(
    "--format", "formats", multiple=True, type=click.Choice(FORMATS))

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
)

adjust_option = click.option(
    "--adjust", "adjustments", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
    metavar="FILE.csv",
)

timeout_scale_option = click.option(
    "--timeout-scale", type=click.FloatRange(min=0.1, max=100.0), default=1.0, show_default=True,
)


verbose_option = click.option(
    "--verbose", "-v", is_flag=True)
