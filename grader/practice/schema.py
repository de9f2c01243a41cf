"""The schema of a question file, and the checks that name file and key on a problem.

A file ``grader/content/questions/<topic>.toml`` holds::

    schema_version = 1
    topic = "<topic>"                      # equals the file name
    title = { en = "...", zh = "..." }

    [[questions]]
    id = "scaling-why-sqrt"                # unique in the whole bank
    level = "basic"                        # basic | intermediate | advanced
    type = "single-choice"                 # see KINDS
    misconceptions = ["attention-no-scale"]
    prompt = { en = "...", zh = "..." }
    explanation = { en = "...", zh = "..." }
    nudge = { en = "...", zh = "..." }     # optional: the idea to look at again, not the answer
    choices = [ { en = "...", zh = "...", correct = true }, ... ]

Per type: choices (``single-choice`` with exactly one correct, ``multiple-choice``
with at least one); ``steps`` in the right order (``ordering``); ``answer`` as
a number (``numeric``, with optional ``relative_tolerance`` /
``absolute_tolerance``), a list of sizes (``shape``) or a bool
(``true-false``). A template adds ``variables`` (name -> values to draw
from), optional ``derived`` (name -> expression) and ``require``
(expressions that must hold); its ``answer`` is then an expression and its
texts may use ``{name}`` and ``{answer}`` placeholders. ``physical`` states
what the world a template describes must obey, as expressions over its
values and ``answer`` (a utilisation of at most 60 %, a parameter count that
fits the layer shapes): a draw is never restricted by them, but
tests/test_template_worlds.py checks them on every instance, so a draw
outside them is a content error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grader.errors import ContentError
from grader.grading.assignment import ASSIGNMENTS
from grader.i18n import LANGUAGES
from grader.practice import formulas as quiz_formulas

SCHEMA_VERSION = 1
KINDS = ("single-choice", "multiple-choice", "numeric", "shape", "ordering", "true-false")
LEVELS = ("basic", "intermediate", "advanced")
# Names a question may unlock (``mha check --unlock``): what the exercises' specs list as
# ``unlockable`` (``grader.grading.assignment``; the constructor is ``__init__``).
UNLOCKABLE = frozenset(name for exercise in ASSIGNMENTS.values() for name in exercise.unlockable)
FILE_KEYS = {"schema_version", "topic", "title", "questions"}
QUESTION_KEYS = {
    "id", "level", "type", "prompt", "explanation", "nudge", "code", "choices", "steps", "answer",
    "relative_tolerance", "absolute_tolerance", "variables", "derived", "require", "physical",
    "misconceptions", "unlocks",
}
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_PLACEHOLDER = re.compile(r"\{(\w+)(?::[^{}]*)?\}")


@dataclass(frozen=True, eq=False)
class Choice:
    """One option of a choice question."""

    text: Mapping[str, str]
    correct: bool


def question_fields(entry: Mapping[str, Any], *, where: str, misconceptions: frozenset[str]) -> dict[str, Any]:
    """Check one ``[[questions]]`` table; return the keyword arguments of a Question.

    ``misconceptions``: the catalog ids a question may link to.
    """
    no_unknown_keys(entry, QUESTION_KEYS, where)
    question_id = entry.get("id")
    if not isinstance(question_id, str) or not _ID.match(question_id):
        raise ContentError(f"{where}: 'id' must be lowercase words joined by '-'")
    fields: dict[str, Any] = {"id": question_id}
    fields["level"] = _one_of(entry, "level", LEVELS, where)
    kind = fields["kind"] = _one_of(entry, "type", KINDS, where)
    fields["prompt"] = texts(entry.get("prompt"), f"{where}: 'prompt'")
    fields["explanation"] = texts(entry.get("explanation"), f"{where}: 'explanation'")
    if "nudge" in entry:
        fields["nudge"] = texts(entry["nudge"], f"{where}: 'nudge'")
    code = entry.get("code", "")
    if not isinstance(code, str):
        raise ContentError(f"{where}: 'code' must be a string")
    fields["code"] = code.strip("\n")
    fields["misconceptions"] = _ids(entry, "misconceptions", misconceptions, where)
    fields["unlocks"] = _ids(entry, "unlocks", UNLOCKABLE, where)
    for key in ("relative_tolerance", "absolute_tolerance"):
        if key in entry:
            value = entry[key]
            if kind != "numeric" or not isinstance(value, (int, float)) or value < 0:
                raise ContentError(f"{where}: '{key}' must be a number >= 0, on numeric questions")
            fields[key] = float(value)
    known = _template_fields(entry, where, fields)
    _kind_fields(entry, kind, where, fields, is_template=bool(known))
    if known:
        for key in ("prompt", "explanation"):
            for lang, text in fields[key].items():
                unknown = placeholders(text) - known - {"answer"}
                if unknown:
                    raise ContentError(f"{where}: '{key}.{lang}' uses unknown {sorted(unknown)}")
    return fields


def _kind_fields(entry, kind: str, where: str, fields: dict, *, is_template: bool) -> None:
    needs = {"single-choice": "choices", "multiple-choice": "choices", "ordering": "steps"}
    for key in ("choices", "steps", "answer"):
        wanted = needs.get(kind, "answer") == key
        if wanted and key not in entry:
            raise ContentError(f"{where}: a {kind} question needs '{key}'")
        if not wanted and key in entry:
            raise ContentError(f"{where}: a {kind} question has no '{key}'")
    if kind in ("single-choice", "multiple-choice"):
        choices = _list(entry, "choices", where, minimum=2)
        fields["choices"] = tuple(_choice(choice, f"{where}: 'choices[{i}]'")
                                  for i, choice in enumerate(choices))
        correct = sum(choice.correct for choice in fields["choices"])
        if (kind == "single-choice" and correct != 1) or correct < 1:
            raise ContentError(f"{where}: {kind} has {correct} correct choices")
    elif kind == "ordering":
        steps = _list(entry, "steps", where, minimum=3)
        fields["steps"] = tuple(texts(step, f"{where}: 'steps[{i}]'") for i, step in enumerate(steps))
    else:
        answer = entry["answer"]
        if isinstance(answer, str):
            if not is_template:
                raise ContentError(f"{where}: 'answer' may be an expression only in a template")
            fields["answer"] = answer
        elif kind == "numeric" and isinstance(answer, (int, float)) and not isinstance(answer, bool):
            fields["answer"] = answer
        elif kind == "true-false" and isinstance(answer, bool):
            fields["answer"] = answer
        elif kind == "shape" and isinstance(answer, list) and answer and all(
                isinstance(size, int) and size > 0 for size in answer):
            fields["answer"] = tuple(answer)
        else:
            raise ContentError(f"{where}: 'answer' does not fit a {kind} question")


def _template_fields(entry, where: str, fields: dict) -> set[str]:
    """Check ``variables``, ``derived``, ``require``; return the names a template defines."""
    if not any(key in entry for key in ("variables", "derived", "require", "physical")):
        return set()
    variables = entry.get("variables")
    if not isinstance(variables, dict) or not variables:
        raise ContentError(f"{where}: a template needs a non-empty 'variables' table")
    for name, options in variables.items():
        if not isinstance(options, list) or not options or not all(
                isinstance(option, (int, float)) and not isinstance(option, bool)
                for option in options):
            raise ContentError(f"{where}: 'variables.{name}' must be a non-empty list of numbers")
    fields["variables"] = {name: tuple(options) for name, options in variables.items()}
    known = set(variables)
    derived = entry.get("derived", {})
    if not isinstance(derived, dict):
        raise ContentError(f"{where}: 'derived' must be a table of expressions")
    for name, expression in derived.items():
        _expression(expression, known, f"{where}: 'derived.{name}'")
        known.add(name)
    fields["derived"] = dict(derived)
    require = entry.get("require", [])
    require = [require] if isinstance(require, str) else require
    if not isinstance(require, list):
        raise ContentError(f"{where}: 'require' must be an expression or a list of them")
    for index, rule in enumerate(require):
        _expression(rule, known, f"{where}: 'require[{index}]'")
    fields["require"] = tuple(require)
    physical = entry.get("physical", [])
    physical = [physical] if isinstance(physical, str) else physical
    if not isinstance(physical, list):
        raise ContentError(f"{where}: 'physical' must be an expression or a list of them")
    for index, rule in enumerate(physical):
        _expression(rule, known | {"answer"}, f"{where}: 'physical[{index}]'")
    fields["physical"] = tuple(physical)
    if isinstance(entry.get("answer"), str):
        _expression(entry["answer"], known, f"{where}: 'answer'")
    return known


def _expression(expression: Any, known: set[str], where: str) -> None:
    if not isinstance(expression, str):
        raise ContentError(f"{where} must be an expression in a string")
    try:
        used = quiz_formulas.names(expression)
    except quiz_formulas.FormulaError as error:
        raise ContentError(f"{where}: {error}") from None
    if used - known:
        raise ContentError(f"{where} uses undefined {sorted(used - known)}")


def _choice(value: Any, where: str) -> Choice:
    if not isinstance(value, dict):
        raise ContentError(f"{where} must be a table")
    correct = value.get("correct", False)
    if not isinstance(correct, bool):
        raise ContentError(f"{where}.correct must be true or false")
    text = {key: item for key, item in value.items() if key != "correct"}
    return Choice(text=texts(text, where), correct=correct)


def _list(entry, key: str, where: str, *, minimum: int) -> list:
    value = entry[key]
    if not isinstance(value, list) or len(value) < minimum:
        raise ContentError(f"{where}: '{key}' must list at least {minimum} entries")
    return value


def _one_of(entry, key: str, allowed: tuple[str, ...], where: str) -> str:
    value = entry.get(key)
    if value not in allowed:
        raise ContentError(f"{where}: '{key}' is {value!r}; expected one of {list(allowed)}")
    return value


def _ids(entry, key: str, allowed: frozenset[str], where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ContentError(f"{where}: '{key}' must be a list of strings")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ContentError(f"{where}: '{key}' has unknown id {unknown[0]!r}")
    return tuple(value)


def texts(value: Any, where: str) -> dict[str, str]:
    """A bilingual text table: both languages present and non-empty, nothing else."""
    if not isinstance(value, dict):
        raise ContentError(f"{where} must be a table with 'en' and 'zh'")
    for lang in LANGUAGES:
        if not isinstance(value.get(lang), str) or not value[lang].strip():
            raise ContentError(f"{where}.{lang} is missing or empty")
    no_unknown_keys(value, set(LANGUAGES), where)
    return {lang: value[lang].strip() for lang in LANGUAGES}


def no_unknown_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ContentError(f"{where}: unknown key {unknown[0]!r} (allowed: {sorted(allowed)})")


def placeholders(text: str) -> set[str]:
    """The ``{name}`` placeholders of a template text."""
    return {match.group(1) for match in _PLACEHOLDER.finditer(text)}
