"""Which installed font can draw Chinese, for the figures (heatmaps, the class report's histogram)."""

from __future__ import annotations

# Families tried first for CJK text, most widespread on Linux, macOS and Windows first.
CJK_FAMILIES = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
    "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Microsoft YaHei", "SimHei",
    "PingFang SC", "Heiti SC", "Noto Sans CJK JP", "Noto Serif CJK SC", "AR PL UMing CN",
)


def find_cjk_font() -> str | None:
    """The name of an installed font family with CJK glyphs, or None."""
    from matplotlib import font_manager

    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    for family in CJK_FAMILIES:
        if family in installed:
            return family
    return next((name for name in sorted(installed) if "CJK" in name or "Han Sans" in name), None)
