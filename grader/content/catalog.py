"""The misconception catalog and generic outcomes, read from TOML data.

The generic outcomes are ``content/outcomes.toml``; each exercise's mistakes are
its folder's ``misconceptions.toml`` (``grader/assignments/<name>/``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from grader.content.loader import load_toml
from grader.errors import ContentError
from grader.i18n import LANGUAGES, pick
from grader.paths import ASSIGNMENTS_DIR, CONTENT_DIR

OUTCOMES_FILE = CONTENT_DIR / "outcomes.toml"
CATALOG_NAME = "misconceptions.toml"  # in each exercise's folder
TEXT_KEYS = ("title", "explanation", "hint")
CLOSER_HINT = "hint_more"  # optional: a second, closer hint, for when the first did not help (mha check --more-hints)


@dataclass(frozen=True)
class Entry:
    id: str
    function: str | None
    texts: dict  # key -> {lang: text}

    def text(self, key: str, lang: str) -> str:
        return pick(self.texts[key], lang)

    def has(self, key: str) -> bool:
        return key in self.texts


def catalog_files(root: Path = ASSIGNMENTS_DIR) -> tuple[Path, ...]:
    """The generic outcomes' file, then every exercise folder's catalog (by folder name)."""
    return (OUTCOMES_FILE, *sorted(root.glob(f"[!_]*/{CATALOG_NAME}")))


@functools.cache
def load_catalog(paths: tuple[Path, ...] | None = None) -> dict[str, Entry]:
    """Every misconception and generic outcome by id, from ``paths`` (by default ``catalog_files()``)."""
    entries: dict[str, Entry] = {}
    for path in paths if paths is not None else catalog_files():
        for identifier, entry in _entries(path).items():
            if identifier in entries:
                raise ContentError(f"{path}: id {identifier!r} is already in the catalog")
            entries[identifier] = entry
    return entries


def _entries(path: Path) -> dict[str, Entry]:
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
            for key in (*TEXT_KEYS, *([CLOSER_HINT] if CLOSER_HINT in raw else [])):
                value = raw.get(key)
                if not isinstance(value, dict) or any(not value.get(lang) for lang in LANGUAGES):
                    raise ContentError(f"{where} ({identifier}): key '{key}' needs non-empty en and zh texts")
                texts[key] = value
            entries[identifier] = Entry(identifier, raw.get("function") if table == "misconception" else None, texts)
    return entries


@functools.cache
def misconception_ids() -> frozenset[str]:
    return frozenset(entry.id for entry in load_catalog().values() if entry.function is not None)
