"""Click options shared by several verbs, each defined once with one help string."""

from __future__ import annotations

import click

from grader.i18n import LANGUAGES
from grader.render.exports import FORMATS
from grader.paths import DEFAULT_ASSIGNMENT

lang_option = click.option(
    "--lang",
    type=click.Choice(LANGUAGES),
    default=None,
    help="Language of the feedback: en or zh (default: from the locale; zh_* gives Chinese).",
)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table."
)

assignment_option = click.option(
    "--assignment",
    default=DEFAULT_ASSIGNMENT,
    show_default=True,
    help="Which exercise: the stem of its module, e.g. multihead_attention or kv_cache.",
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
