"""The two languages of every student-facing text, and which one to use."""

from __future__ import annotations

import os

LANGUAGES = ("en", "zh")


def resolve_language(requested: str | None = None) -> str:
    """``requested`` if given, else the locale: any ``zh*`` locale gives Chinese."""
    if requested:
        return requested
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = os.environ.get(variable, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def pick(texts: dict[str, str], lang: str) -> str:
    """The text in ``lang``, falling back to English."""
    return texts.get(lang) or texts["en"]
