"""Which installed font can draw Chinese, for the figures (the attention heatmaps, the trained-model views)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

# Families tried first for CJK text, most widespread on Linux, macOS and Windows first.
CJK_FAMILIES = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
    "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Microsoft YaHei", "SimHei",
    "PingFang SC", "Heiti SC", "Noto Sans CJK JP", "Noto Serif CJK SC", "AR PL UMing CN",
)


def find_cjk_font() -> str | None:
    """The name of an installed font family with CJK glyphs, or None."""
    from matplotlib import font_manager

    found = _cjk_family(font_manager.fontManager)
    if found is None:
        # matplotlib keeps its font list in a cache written on first use: a font installed after that
        # (apt install fonts-noto-cjk on a machine that already drew a figure) is missing from it, so the
        # system's font files are looked at once more and the CJK ones added to this process's list
        for path in font_manager.findSystemFonts():
            if _CJK_FILE.search(Path(path).name):
                with contextlib.suppress(Exception):  # a font file matplotlib cannot read is only skipped
                    font_manager.fontManager.addfont(path)
        found = _cjk_family(font_manager.fontManager)
    return found


# File names of the common CJK font packages (Noto/Source Han, WenQuanYi, AR PL, Microsoft's and Apple's).
_CJK_FILE = re.compile(r"CJK|SourceHan|wqy|uming|ukai|msyh|simhei|PingFang|STHeiti", re.IGNORECASE)


def _cjk_family(manager) -> str | None:
    installed = {entry.name for entry in manager.ttflist}
    for family in CJK_FAMILIES:
        if family in installed:
            return family
    return next((name for name in sorted(installed) if "CJK" in name or "Han Sans" in name), None)
