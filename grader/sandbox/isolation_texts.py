"""The texts of the isolation line (``content/isolation.toml``), for the Linux sandbox and the portable worker."""

from __future__ import annotations

import functools


@functools.cache
def _texts() -> dict[str, dict[str, str]]:
    from grader.content.loader import load_bilingual
    from grader.paths import CONTENT_DIR

    return load_bilingual(CONTENT_DIR / "isolation.toml", "text")


def say(key: str, *, lang: str, **params) -> str:
    """Text ``key`` in ``lang`` (English for a language it does not have), its placeholders filled."""
    return _texts()[key][lang if lang in ("en", "zh") else "en"].format(**params)
