"""The texts of the attention pictures, read from ``grader/content/viz.toml``.

Every text is a table with an ``en`` and a ``zh`` string, addressed by its
dotted key (``figure.query``, ``stage.weights.about``). Placeholders such as
``{head}`` must appear in both languages, so a translation cannot drop one.
"""

from __future__ import annotations

import functools
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ContentError
from grader.i18n import LANGUAGES, pick
from grader.paths import CONTENT_DIR

VIZ_CONTENT = CONTENT_DIR / "viz.toml"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class VizTexts:
    """All texts by dotted key, and the explainer's preset sentences."""

    texts: dict[str, dict[str, str]]
    presets: tuple[str, ...]

    def text(self, key: str, lang: str, **fields) -> str:
        """The text ``key`` in ``lang``, with its placeholders filled from ``fields``."""
        if key not in self.texts:
            raise ContentError(f"{VIZ_CONTENT.name}: no text {key!r}")
        return pick(self.texts[key], lang).format(**fields)

    def section(self, prefix: str) -> dict[str, dict[str, str]]:
        """Every text under ``prefix.`` (both languages), keyed by its dotted key."""
        return {key: value for key, value in self.texts.items() if key.startswith(prefix + ".")}


@functools.cache
def load_viz_texts(path: Path = VIZ_CONTENT) -> VizTexts:
    """Read and check ``viz.toml``; raise ContentError naming the file and key on any problem."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ContentError(f"{path}: cannot read: {error}") from error
    if data.pop("schema_version", None) != SCHEMA_VERSION:
        raise ContentError(f"{path}: schema_version must be {SCHEMA_VERSION}")
    presets = data.pop("preset", [])
    sentences = []
    for index, entry in enumerate(presets):
        sentence = entry.get("sentence") if isinstance(entry, dict) else None
        if not isinstance(sentence, str) or not sentence.strip():
            raise ContentError(f"{path}: preset[{index}].sentence must be a non-empty string")
        sentences.append(sentence)
    texts: dict[str, dict[str, str]] = {}
    _collect(data, "", texts, path)
    return VizTexts(texts=texts, presets=tuple(sentences))


def _collect(table: dict, prefix: str, texts: dict, path: Path) -> None:
    for name, value in table.items():
        key = f"{prefix}{name}"
        if not isinstance(value, dict):
            raise ContentError(f"{path}: {key} must be a table of texts, got {type(value).__name__}")
        if set(value) & set(LANGUAGES):
            texts[key] = _checked_pair(value, key, path)
        else:
            _collect(value, key + ".", texts, path)


def _checked_pair(value: dict, key: str, path: Path) -> dict[str, str]:
    if set(value) != set(LANGUAGES):
        raise ContentError(f"{path}: {key} must have exactly the languages {', '.join(LANGUAGES)}")
    for lang in LANGUAGES:
        if not isinstance(value[lang], str) or not value[lang].strip():
            raise ContentError(f"{path}: {key}.{lang} must be a non-empty string")
    fields = {lang: _placeholders(value[lang]) for lang in LANGUAGES}
    if fields["en"] != fields["zh"]:
        raise ContentError(f"{path}: {key}: placeholders differ between languages: {fields}")
    return dict(value)


def _placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}
