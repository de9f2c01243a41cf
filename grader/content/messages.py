"""Bilingual message templates of the checks (``content/messages.toml``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from grader.content.catalog import load_bilingual
from grader.errors import ContentError
from grader.paths import CONTENT_DIR

MESSAGES_FILE = CONTENT_DIR / "messages.toml"
CHECKS_FILE = CONTENT_DIR / "checks.toml"


@dataclass(frozen=True)
class Message:
    """A message key and its parameters, rendered late in the reader's language."""

    key: str
    params: dict = field(default_factory=dict)

    def render(self, lang: str) -> str:
        return render(self.key, self.params, lang)


@functools.cache
def templates() -> dict[str, dict[str, str]]:
    return load_bilingual(MESSAGES_FILE, "message")

def render(key: str, params: dict, lang: str) -> str:
    try:
        texts = templates()[key]
    except KeyError:
        raise ContentError(f"{MESSAGES_FILE}: no message.{key}") from None
    try:
        return texts.get(lang, texts["en"]).format(**params)
    except (KeyError, IndexError) as bad:
        raise ContentError(f"{MESSAGES_FILE}: message.{key} ({lang}) uses an unknown field {bad}") from None


@functools.cache
def check_titles() -> dict[str, dict[str, str]]:
    """The student-facing title of every check by test name (``content/checks.toml``)."""
    return load_bilingual(CHECKS_FILE, "check") if CHECKS_FILE.exists() else {}

def check_title(name: str, lang: str = "en") -> str:
    """``test_split_heads_shape`` -> its title in ``lang``, or ``split heads shape`` when it has none."""
    texts = check_titles().get(name)
    if texts:
        return texts.get(lang) or texts["en"]
    return name.removeprefix("test_").replace("_", " ")
