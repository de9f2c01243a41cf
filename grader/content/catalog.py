"""The misconception catalog and generic outcomes, read from TOML data."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from grader.content.loader import load_toml
from grader.errors import ContentError
from grader.i18n import LANGUAGES, pick
from grader.paths import CONTENT_DIR

CATALOG_FILE = CONTENT_DIR / "misconceptions.toml"
TEXT_KEYS = ("title", "explanation", "hint")


@dataclass(frozen=True)
class Entry:
    id: str
    function: str | None
    texts: dict  # key -> {lang: text}

    def text(self, key: str, lang: str) -> str:
        return pick(self.texts[key], lang)


@functools.cache
def load_catalog(path: Path = CATALOG_FILE) -> dict[str, Entry]:
    """Every misconception and generic outcome by id."""
    data = load_toml(path)
    if data.get("schema_version") != 1:
        raise ContentError(f"{path}: schema_version must be 1, found {data.get('schema_version')!r}")
    entries = {}
    for table in ("misconception", "outcome"):
        for position, raw in enumerate(data.get(table, [])):
            where = f"{path}: [[{table}]] #{position + 1}"
            identifier = raw.get("id")
            if not isinstance(identifier, str):
                raise ContentError(f"{where}: missing key 'id'")
            texts = {}
            for key in TEXT_KEYS:
                value = raw.get(key)
                if not isinstance(value, dict) or any(not value.get(lang) for lang in LANGUAGES):
                    raise ContentError(f"{where} ({identifier}): key '{key}' needs non-empty en and zh texts")
                texts[key] = value
            entries[identifier] = Entry(identifier, raw.get("function") if table == "misconception" else None, texts)
    return entries


@functools.cache
def misconception_ids() -> frozenset[str]:
    return frozenset(entry.id for entry in load_catalog().values() if entry.function is not None)
