"""The texts of the attention pictures, read from ``grader/content/viz.toml``.

Every text is a table with an ``en`` and a ``zh`` string, addressed by its
dotted key (``figure.query``, ``stage.weights.about``). Placeholders such as
``{head}`` must appear in both languages, so a translation cannot drop one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from grader.content.loader import bilingual_texts, load_toml
from grader.errors import ContentError
from grader.i18n import pick
from grader.paths import CONTENT_DIR

VIZ_CONTENT = CONTENT_DIR / "viz.toml"


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
    data = load_toml(path)
    data.pop("schema_version")
    presets = data.pop("preset", [])
    sentences = []
    for index, entry in enumerate(presets):
        sentence = entry.get("sentence") if isinstance(entry, dict) else None
        if not isinstance(sentence, str) or not sentence.strip():
            raise ContentError(f"{path}: preset[{index}].sentence must be a non-empty string")
        sentences.append(sentence)
    return VizTexts(texts=bilingual_texts(data, path), presets=tuple(sentences))
