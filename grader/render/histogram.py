"""The class report's score histogram, drawn as inline SVG by the project.

matplotlib drew it as a PNG before: importing it and rendering one small
figure cost the grading run's main process more than all its other output
together, for twenty rectangles and a few labels. The SVG is a few kilobytes
of text, scales with the page, and its labels are set in the page's own fonts
(so Chinese needs no font lookup). The bins are ``numpy.histogram``'s, as
``Axes.hist`` drew them: ``bins`` equal bins over ``[0, top]``, the last one
closed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grader.render.text_safety import html_text

WIDTH, HEIGHT = 640, 320  # the figure's size in CSS pixels (the PNG was 6.4 x 3.2 in at 100 dpi)
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 36, 48  # room for the axis labels and the title
BAR_COLOUR = "#4a7bb7"


@dataclass(frozen=True)
class Bins:
    """Equal bins over ``[0, top]``: ``counts[i]`` scores in ``[edges[i], edges[i + 1])`` (the last closed)."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    top: float


def score_bins(*, scores: list[float], max_score: float) -> Bins:
    """The histogram's bins: 5 to 20 of them over ``[0, top]``, ``top`` at least the maximum and every score."""
    import numpy as np

    top = max(max_score, max(scores, default=0.0), 1.0)
    count = min(20, max(5, int(top)))
    counts, edges = np.histogram(np.asarray(scores, dtype=float), bins=count, range=(0, top))
    return Bins(edges=tuple(float(edge) for edge in edges), counts=tuple(int(n) for n in counts), top=float(top))


def _step(span: float, most: int, *, whole: bool) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving at most ``most`` intervals over ``span``."""
    if span <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(span / most))
    for factor in (1, 2, 2.5, 5, 10):
        step = factor * power
        if span / step <= most and (not whole or step == int(step)):
            return max(step, 1.0) if whole else step
    return 10 * power


def _ticks(top: float, most: int, *, whole: bool = False) -> list[float]:
    step = _step(top, most, whole=whole)
    return [index * step for index in range(int(top / step + 1e-9) + 1)]


def histogram_svg(*, bins: Bins, title: str, x_label: str, y_label: str, alt: str) -> str:
    """The bins as an SVG element: bars, both axes with round ticks, the labels and the title; each bar's
    range and count as its tooltip."""
    e = html_text
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    y_ticks = _ticks(max(max(bins.counts, default=0), 1), 5, whole=True)
    y_top = y_ticks[-1] if y_ticks[-1] >= max(bins.counts, default=0) else max(bins.counts)

    def x(value: float) -> float:
        return LEFT + plot_width * value / bins.top

    def y(count: float) -> float:
        return TOP + plot_height * (1 - count / y_top)

    parts = [f"<svg class=histogram role=img aria-label='{e(alt)}' viewBox='0 0 {WIDTH} {HEIGHT}' "
             f"width={WIDTH} height={HEIGHT} xmlns='http://www.w3.org/2000/svg'><title>{e(alt)}</title>",
             f"<text class=title x={LEFT + plot_width / 2:.1f} y=22 text-anchor=middle>{e(title)}</text>"]
    for tick in y_ticks:
        parts.append(f"<line class=grid x1={LEFT} x2={LEFT + plot_width} y1={y(tick):.1f} y2={y(tick):.1f} />"
                     f"<text x={LEFT - 6} y={y(tick) + 4:.1f} text-anchor=end>{tick:g}</text>")
    for index, count in enumerate(bins.counts):
        low, high = bins.edges[index], bins.edges[index + 1]
        closing = "]" if index == len(bins.counts) - 1 else ")"
        parts.append(f"<rect class=bin x={x(low):.1f} y={y(count):.1f} width={x(high) - x(low):.1f} "
                     f"height={y(0) - y(count):.1f}><title>[{low:g}, {high:g}{closing}: {count}</title></rect>")
    for tick in _ticks(bins.top, 8):
        parts.append(f"<line class=axis x1={x(tick):.1f} x2={x(tick):.1f} y1={y(0):.1f} y2={y(0) + 5:.1f} />"
                     f"<text x={x(tick):.1f} y={y(0) + 19:.1f} text-anchor=middle>{tick:g}</text>")
    parts.append(f"<line class=axis x1={LEFT} x2={LEFT + plot_width} y1={y(0):.1f} y2={y(0):.1f} />"
                 f"<line class=axis x1={LEFT} x2={LEFT} y1={TOP} y2={y(0):.1f} />"
                 f"<text x={LEFT + plot_width / 2:.1f} y={HEIGHT - 8} text-anchor=middle>{e(x_label)}</text>"
                 f"<text x=14 y={TOP + plot_height / 2:.1f} text-anchor=middle "
                 f"transform='rotate(-90 14 {TOP + plot_height / 2:.1f})'>{e(y_label)}</text></svg>")
    return "".join(parts)


# the figure's look, for the page's stylesheet
STYLE = (f".histogram{{max-width:100%;height:auto;font-size:12px;fill:#222}}.histogram .title{{font-size:14px}}"
         f".histogram .bin{{fill:{BAR_COLOUR};stroke:#fff;stroke-width:1}}.histogram .grid{{stroke:#eee}}"
         f".histogram .axis{{stroke:#444}}")
