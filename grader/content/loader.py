"""One reader for the content files: TOML with a ``schema_version``, texts in English and Chinese.

A text is a table with non-empty ``en`` and ``zh`` strings that use the same
``{placeholders}``, so a translation can neither drop nor invent a field.
Nested tables give dotted keys (``figure.query``). Every problem is a
ContentError that names the file and the key.
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader.content.parsed_cache import parsed_toml
from grader.errors import ContentError
from grader.i18n import LANGUAGES, pick

SCHEMA_VERSION = 1


def load_toml(path: Path, *, schema_version: int | None = SCHEMA_VERSION) -> dict:
    """Read a content file (and check its ``schema_version`` unless None is asked)."""
    try:
        data = parsed_toml(path)  # parsed once per version of the file, kept in the user's cache
    except (OSError, ValueError) as bad:  # tomllib.TOMLDecodeError and a file not in UTF-8 are ValueErrors
        raise ContentError(f"{path}: {bad}") from None
    if schema_version is not None and data.get("schema_version") != schema_version:
        raise ContentError(f"{path}: schema_version must be {schema_version}, found {data.get('schema_version')!r}")
    return data


def bilingual_texts(table: dict, path: Path, *, within: str = "", prefix: str = "") -> dict[str, dict[str, str]]:
    """Every text under ``table`` by dotted key (relative to it), checked.

    ``within`` is the table's own dotted name in the file, for error messages.
    """
    texts: dict[str, dict[str, str]] = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if not isinstance(value, dict):
            raise ContentError(f"{path}: {within}{key} must be a table with en and zh texts, "
                               f"got {type(value).__name__}")
        if set(value) & set(LANGUAGES):
            texts[key] = checked_pair(value, within + key, path)
        else:
            texts.update(bilingual_texts(value, path, within=within, prefix=key + "."))
    return texts


def checked_pair(value: dict, key: str, path: Path) -> dict[str, str]:
    """One text's ``{en, zh}`` table: both present, non-empty, with the same placeholders."""
    languages = ", ".join(LANGUAGES)
    for lang in LANGUAGES:
        if not isinstance(value.get(lang), str) or not value[lang].strip():
            raise ContentError(f"{path}: {key} lacks the {lang} text: {key} must have exactly the languages {languages}")
    if set(value) - set(LANGUAGES):
        raise ContentError(f"{path}: {key} must have exactly the languages {languages}; found {sorted(value)}")
    fields = {lang: sorted(placeholders(value[lang])) for lang in LANGUAGES}
    if len({tuple(names) for names in fields.values()}) != 1:
        raise ContentError(f"{path}: {key} has different placeholders in {' and '.join(LANGUAGES)}: {fields}")
    return {lang: value[lang] for lang in LANGUAGES}


def load_bilingual(path: Path, table: str) -> dict[str, dict[str, str]]:
    """The texts of the ``[table.*]`` entries of a content file, by key."""
    data = load_toml(path)
    entries = data.get(table)
    if not isinstance(entries, dict):
        raise ContentError(f"{path}: missing the [{table}.*] tables")
    return bilingual_texts(entries, path, within=f"{table}.")


def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


@functools.cache
def _table_texts(path: Path, table: str) -> dict[str, dict[str, str]]:
    return load_bilingual(path, table)


@dataclass(frozen=True)
class TextTable:
    """The ``[table.*]`` texts of one content file, looked up by key: the one page-text lookup.

    ``fallback(key, params, lang)`` answers a key the file does not have (a page
    that may also show a check message passes ``grader.content.messages.render``);
    without one, a missing key is a ContentError naming the file and the key.
    The file is read and checked once per process, on the first lookup.
    """

    path: Path
    table: str = "text"
    fallback: Callable[[str, dict, str], str] | None = None

    def texts(self) -> dict[str, dict[str, str]]:
        """Every text of the table by dotted key, both languages."""
        return _table_texts(self.path, self.table)

    def template(self, key: str, lang: str) -> str:
        """Text ``key`` in ``lang`` with its placeholders left in, for a page's script to fill."""
        texts = self.texts()
        if key not in texts:
            raise ContentError(f"{self.path}: no text {self.table}.{key}")
        return pick(texts[key], lang)

    def say(self, key: str, lang: str, **params) -> str:
        """Text ``key`` in ``lang`` (English where ``lang`` has none) with its placeholders filled."""
        if key not in self.texts() and self.fallback is not None:
            return self.fallback(key, params, lang)
        return self.template(key, lang).format(**params)
