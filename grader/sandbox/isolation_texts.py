"""The texts of the isolation line (``content/isolation.toml``), for the Linux sandbox and the portable worker."""

from __future__ import annotations

from grader.content.loader import TextTable
from grader.paths import CONTENT_DIR

ISOLATION_TEXTS = TextTable(CONTENT_DIR / "isolation.toml")


def say(key: str, *, lang: str, **params) -> str:
    """Text ``key`` in ``lang`` (English for a language it does not have), its placeholders filled."""
    return ISOLATION_TEXTS.say(key, lang, **params)
