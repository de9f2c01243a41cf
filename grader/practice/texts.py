"""The texts of quizzes, drills, sheets and unlocking (``content/quiz.toml``)."""

from __future__ import annotations

import functools
import string
import tomllib
from pathlib import Path

from grader.errors import ContentError
from grader.i18n import LANGUAGES, pick
from grader.paths import CONTENT_DIR

QUIZ_TEXTS = CONTENT_DIR / "quiz.toml"
SCHEMA_VERSION = 1


@functools.cache
def load_texts(path: Path = QUIZ_TEXTS) -> dict[str, dict[str, str]]:
    """Every text by dotted key; ContentError names the file and key on any problem."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ContentError(f"{path}: cannot read: {error}") from None
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ContentError(f"{path}: schema_version must be {SCHEMA_VERSION}")
    texts: dict[str, dict[str, str]] = {}
    _collect(data.get("text", {}), "text", texts, path)
    return texts


def _collect(table: dict, prefix: str, texts: dict, path: Path) -> None:
    if set(table) & set(LANGUAGES):
        key = prefix.removeprefix("text.")
        for lang in LANGUAGES:
            if not isinstance(table.get(lang), str) or not table[lang]:
                raise ContentError(f"{path}: {prefix}.{lang} is missing or empty")
        fields = [_fields(table[lang]) for lang in LANGUAGES]
        if any(other != fields[0] for other in fields):
            raise ContentError(f"{path}: {prefix} has different placeholders in en and zh")
        texts[key] = {lang: table[lang] for lang in LANGUAGES}
        return
    for name, value in table.items():
        if not isinstance(value, dict):
            raise ContentError(f"{path}: {prefix}.{name} must be a table with en and zh")
        _collect(value, f"{prefix}.{name}", texts, path)


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def text(key: str, lang: str, **fields) -> str:
    """The text ``key`` in ``lang`` with its placeholders filled."""
    texts = load_texts()
    if key not in texts:
        raise ContentError(f"{QUIZ_TEXTS}: no text {key!r}")
    return pick(texts[key], lang).format(**fields)


def clock(seconds: float) -> str:
    """``75.4`` -> ``1:15``; an hour or more -> ``1:02:03``."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
