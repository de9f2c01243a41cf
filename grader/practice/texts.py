"""The texts of quizzes, drills, sheets and unlocking (``content/quiz.toml``)."""

from __future__ import annotations

import functools
from pathlib import Path

from grader.content.loader import bilingual_texts, load_toml
from grader.errors import ContentError
from grader.i18n import pick
from grader.paths import CONTENT_DIR

QUIZ_TEXTS = CONTENT_DIR / "quiz.toml"


@functools.cache
def load_texts(path: Path = QUIZ_TEXTS) -> dict[str, dict[str, str]]:
    """Every text by dotted key; ContentError names the file and key on any problem."""
    return bilingual_texts(load_toml(path).get("text", {}), path, within="text.")


def text(key: str, lang: str, **fields) -> str:
    """The text ``key`` in ``lang`` with its placeholders filled.

    A text with a ``count`` has its singular in ``<key>_one`` where English needs one
    ("1 question left"), used when the count is 1.
    """
    texts = load_texts()
    if fields.get("count") == 1 and f"{key}_one" in texts:
        key = f"{key}_one"
    if key not in texts:
        raise ContentError(f"{QUIZ_TEXTS}: no text {key!r}")
    return pick(texts[key], lang).format(**fields)


def duration(minutes: float, lang: str) -> str:
    """A time limit as a person says it: ``5 seconds`` rather than ``0.0833333 minutes``, ``1 minute``."""
    seconds = round(minutes * 60)
    if seconds < 60 or seconds % 60:
        return text("duration_seconds", lang, count=seconds) if seconds < 120 else text(
            "duration_minutes", lang, count=float(f"{minutes:.3g}"))
    return text("duration_minutes", lang, count=seconds // 60)


def clock(seconds: float) -> str:
    """``75.4`` -> ``1:15``; an hour or more -> ``1:02:03``."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
