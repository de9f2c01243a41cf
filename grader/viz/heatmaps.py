"""Matplotlib figures of per-head attention: one heatmap per head, and head similarity.

Draws only what it is given (a ``HeadMaps``); all numbers come from
``grader.viz.maps``. Figures are plain ``matplotlib.figure.Figure``
objects (no pyplot state), so they save from a script and show in a notebook.
Colours: viridis for weights and cividis for similarity, both readable with
colour-vision deficiency, on a fixed [0, 1] scale so heads compare at a glance.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

from grader.content.linebreak import fill
from grader.render.fonts import CJK_FAMILIES, find_cjk_font  # noqa: F401  (public here too)
from grader.viz.embedding import contains_cjk
from grader.viz.maps import ALIKE_THRESHOLD, HeadMaps, alike_pairs, most_alike_pair
from grader.viz.texts import VizTexts, load_viz_texts

FLAG_COLOUR = "#d62728"
# Cell values are printed inside the map when it is this small and there are few heads.
ANNOTATE_MAX_TOKENS = 6
ANNOTATE_MAX_PANELS = 4


@dataclass(frozen=True)
class FontChoice:
    """Fonts for one figure: families to use, and whether tokens fall back to positions."""

    families: tuple[str, ...]
    lang: str  # the language the figure's texts can actually be shown in
    positions_only: bool

    def labels(self, tokens: tuple[str, ...]) -> list[str]:
        return [f"#{index}" for index in range(1, len(tokens) + 1)] if self.positions_only else list(tokens)


def choose_fonts(tokens: tuple[str, ...], lang: str, cjk_font: str | None) -> FontChoice:
    """DejaVu Sans for Latin text, falling back glyph by glyph to ``cjk_font`` when present.

    Without a CJK font, CJK tokens are labelled by position and Chinese texts
    are replaced by English ones, rather than drawn as empty boxes.
    """
    if cjk_font is not None:
        return FontChoice(("DejaVu Sans", cjk_font), lang, positions_only=False)
    return FontChoice(("DejaVu Sans",), "en", positions_only=contains_cjk(list(tokens)))


def draw_weights(
    maps: HeadMaps,
    *,
    sentence: str,
    fonts: FontChoice,
    subset: tuple[int, ...] | None = None,
    texts: VizTexts | None = None,
):
    """One heatmap per head (or per head in ``subset``, 0-based), on a [0, 1] viridis scale."""
    from matplotlib import rc_context

    with rc_context({"font.family": list(fonts.families)}):
        return _draw_weights(maps, sentence=sentence, fonts=fonts, subset=subset, texts=texts)


def draw_similarity(maps: HeadMaps, *, fonts: FontChoice, texts: VizTexts | None = None):
    """The head-by-head similarity matrix on a [0, 1] cividis scale, NaN (invalid heads) grey."""
    from matplotlib import rc_context

    with rc_context({"font.family": list(fonts.families)}):
        return _draw_similarity(maps, fonts=fonts, texts=texts)


def _draw_weights(maps: HeadMaps, *, sentence: str, fonts: FontChoice, subset, texts):
    from matplotlib.figure import Figure

    texts = texts or load_viz_texts()
    lang = fonts.lang
    heads = list(subset) if subset is not None else list(range(maps.num_heads))
    labels = fonts.labels(maps.tokens)
    length = len(labels)
    columns = min(4, len(heads))
    rows = -(-len(heads) // columns)
    panel = max(2.4, 0.34 * length + 1.3)  # inches: room for the token labels
    figure = Figure(figsize=(columns * panel + 1.2, rows * panel + 1.6), layout="constrained")
    size = _text_sizes(figure)
    figure.get_layout_engine().set(rect=(0, 0.07, 1, 0.93))
    axes = figure.subplots(rows, columns, squeeze=False)
    colour_map = _colour_map("viridis")
    annotate = length <= ANNOTATE_MAX_TOKENS and len(heads) <= ANNOTATE_MAX_PANELS
    entropies = maps.entropies
    image = None
    for slot, axis in enumerate(axes.flat):
        if slot >= len(heads):
            axis.set_visible(False)
            continue
        head = heads[slot]
        image = axis.imshow(maps.weights[head], cmap=colour_map, vmin=0.0, vmax=1.0, aspect="equal")
        axis.set_xticks(range(length), labels, rotation=60 if length > 4 else 0, fontsize=size(8),
                        ha="right" if length > 4 else "center", rotation_mode="anchor")
        axis.set_yticks(range(length), labels, fontsize=size(8))
        # Ticks may be rebuilt at draw time, outside rc_context: pin their font here.
        axis.tick_params(labelfontfamily=list(fonts.families))
        axis.set_xlabel(texts.text("figure.key", lang), fontsize=size(8))
        axis.set_ylabel(texts.text("figure.query", lang), fontsize=size(8))
        if annotate:
            _annotate(axis, maps.weights[head])  # inside its cell, whose size the text does not change
        title = texts.text("figure.head", lang, head=head)  # numbered from 0, as in the text
        problem = maps.problems[head]
        if problem is not None:
            detail = wrap(problem.describe(texts, lang), 30, lang)
            axis.set_title(f"[!] {title}\n{detail}", fontsize=size(8), color=FLAG_COLOUR)
            for spine in axis.spines.values():
                spine.set(color=FLAG_COLOUR, linewidth=3, linestyle="--")
        else:
            axis.set_title(f"{title}\n{_entropy_text(entropies[head], texts, lang)}", fontsize=size(9))
    bar = figure.colorbar(image, ax=axes, shrink=0.8)
    bar.set_label(texts.text("figure.colour_scale", lang), fontsize=size(10))
    bar.ax.tick_params(labelsize=size(9))
    source = _source_text(maps, texts, lang)
    figure.suptitle(texts.text("figure.weights_title", lang, heads=maps.num_heads, source=source,
                               sentence=" ".join(labels) if fonts.positions_only else sentence), fontsize=size(11))
    notes = [texts.text("figure.weights_note", lang, maximum=f"{np.log2(len(maps.tokens)):.2f}")]
    if any(problem is not None for problem in maps.problems):
        notes.append(texts.text("figure.flag_note", lang))
    if fonts.positions_only:
        notes.append(texts.text("figure.positions_note", lang))
    _footer(figure, notes, lang, scale=size(1.0))
    return figure


# Inches a notebook's output area shows a figure across (about 880 px at the 110 dpi figures are saved at): a
# wider figure is shrunk to fit, and its text with it.
NOTEBOOK_WIDTH = 8.0


def _text_sizes(figure):
    """Font sizes for ``figure`` that read as large as the narrower similarity figure's once a notebook has
    shrunk it to its output area."""
    scale = max(1.0, figure.get_figwidth() / NOTEBOOK_WIDTH)
    return lambda points: points * scale


def _draw_similarity(maps: HeadMaps, *, fonts: FontChoice, texts):
    from matplotlib.figure import Figure

    texts = texts or load_viz_texts()
    lang = fonts.lang
    similarity = maps.similarity
    count = maps.num_heads
    side = max(3.6, 0.45 * count + 2.4)
    figure = Figure(figsize=(side + 1.2, side + 1.4), layout="constrained")
    figure.get_layout_engine().set(rect=(0, 0.1, 1, 0.9))
    axis = figure.subplots()
    image = axis.imshow(np.ma.masked_invalid(similarity), cmap=_colour_map("cividis"), vmin=0.0, vmax=1.0)
    numbers = [str(head) for head in range(count)]
    axis.set_xticks(range(count), numbers, fontsize=8)
    axis.set_yticks(range(count), numbers, fontsize=8)
    axis.set_xlabel(texts.text("figure.head", lang, head="").strip(), fontsize=9)
    axis.set_ylabel(texts.text("figure.head", lang, head="").strip(), fontsize=9)
    if count <= 8:
        _annotate(axis, similarity)
    figure.colorbar(image, ax=axis, shrink=0.8, label=texts.text("figure.similarity_scale", lang))
    figure.suptitle(texts.text("figure.similarity_title", lang, source=_source_text(maps, texts, lang)), fontsize=11)
    notes = [texts.text("figure.similarity_note", lang)]
    pairs = alike_pairs(similarity)
    if pairs:
        listed = ", ".join(f"{first}–{second}" for first, second in pairs)
        notes.append(texts.text("figure.alike_pairs", lang, threshold=ALIKE_THRESHOLD, pairs=listed))
    pair = most_alike_pair(similarity)
    if pair is not None:
        axis.set_title(texts.text("figure.most_alike", lang, first=pair["first"], second=pair["second"],
                                  value=f"{pair['similarity']:.2f}"), fontsize=9)
    _footer(figure, notes, lang)
    return figure


def _colour_map(name: str):
    from matplotlib import colormaps

    # NaN cells (a submission's invalid head): a neutral grey outside the colour scale.
    return colormaps[name].with_extremes(bad="#bbbbbb")


def _annotate(axis, values: np.ndarray) -> None:
    for (row, column), value in np.ndenumerate(values):
        if np.isfinite(value):
            # Dark text on the bright end of viridis/cividis, light text on the dark end.
            axis.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                      color="black" if value > 0.55 else "white")


def _entropy_text(value: float, texts: VizTexts, lang: str) -> str:
    if not np.isfinite(value):
        return texts.text("figure.entropy_unknown", lang)
    return texts.text("figure.entropy", lang, value=f"{value:.2f}")


def _source_text(maps: HeadMaps, texts: VizTexts, lang: str) -> str:
    if maps.source == "reference":
        return texts.text("figure.source_reference", lang)
    return texts.text("figure.source_submission", lang, name=maps.source)


# Chinese text has no spaces to break at: a line may break between any two
# characters, but not inside a Latin word and never before closing punctuation.
def wrap(text: str, width: int, lang: str) -> str:
    """``text`` in lines of at most ``width`` columns, a Chinese character counting two, the Chinese way for ``zh``."""
    return textwrap.fill(text, width) if lang != "zh" else fill(text, width)


def _footer(figure, notes: list[str], lang: str, *, scale: float = 1.0) -> None:
    width = int(figure.get_figwidth() * 14 / scale)  # columns per line
    text = "\n".join(wrap(note, width, lang) for note in notes)
    figure.text(0.01, 0.005, text, ha="left", va="bottom", fontsize=7 * scale, color="#333333")
