"""Matplotlib figures of the trained model: heads by layer, head similarity, and the ablation.

Draws only what it is given (``TrainedMaps``, ``AblationReport``); the numbers
come from ``grader.viz.trained``. Same scales and colours as ``grader.viz.heatmaps``:
viridis on [0, 1] for weights, cividis on [0, 1] for similarity.
"""

from __future__ import annotations

import numpy as np

from grader.tinymodel.roles import CHANCE_LOSS, PROBE_LENGTH, PROBE_SIZE, ROLE_THRESHOLD
from grader.viz.heatmaps import FontChoice, _annotate, _colour_map, _footer
from grader.viz.texts import VizTexts
from grader.viz.trained import AblationReport, TrainedMaps, role_text

# Role colours (Okabe-Ito), so a head's job reads at a glance on a projector.
ROLE_COLOURS = {"previous": "#0072b2", "induction": "#d55e00", "first": "#009e73", "self": "#cc79a7",
                "diffuse": "#777777"}


def draw_trained_weights(maps: TrainedMaps, *, sentence: str, fonts: FontChoice, texts: VizTexts, lang: str):
    """One row per layer, one heatmap per head, each titled with its role and the measure behind it."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context({"font.family": list(fonts.families)}):
        labels = list(maps.tokens)
        length = len(labels)
        panel = max(2.6, 0.26 * length + 1.3)  # inches: room for the token labels
        figure = Figure(figsize=(maps.num_heads * panel + 1.4, maps.num_layers * (panel + 0.5) + 1.8),
                        layout="constrained")
        figure.get_layout_engine().set(rect=(0, 0.08, 1, 0.92))
        axes = figure.subplots(maps.num_layers, maps.num_heads, squeeze=False)
        colour_map = _colour_map("viridis")
        image = None
        for (layer, head), axis in np.ndenumerate(axes):
            role = maps.role(layer, head)
            image = axis.imshow(maps.weights[layer, head], cmap=colour_map, vmin=0.0, vmax=1.0, aspect="equal")
            axis.set_xticks(range(length), labels, rotation=60, fontsize=8, ha="right", rotation_mode="anchor")
            axis.set_yticks(range(length), labels, fontsize=8)
            axis.tick_params(labelfontfamily=list(fonts.families))
            axis.set_xlabel(texts.text("figure.key", lang), fontsize=8)
            if head == 0:
                axis.set_ylabel(f"{texts.text('trained.figure.layer', lang, layer=layer)}", fontsize=11,
                                fontweight="bold")
            here = maps.here_score(layer, head)
            title = "\n".join([texts.text("trained.figure.head", lang, name=role.name), role_text(role, texts, lang),
                               texts.text("trained.figure.here", lang,
                                          value=f"{here:.2f}" if np.isfinite(here) else "-")])
            axis.set_title(title, fontsize=9, color=ROLE_COLOURS[role.role])
            for spine in axis.spines.values():
                spine.set(color=ROLE_COLOURS[role.role], linewidth=2.5)
        figure.colorbar(image, ax=axes, shrink=0.6, label=texts.text("figure.colour_scale", lang))
        figure.suptitle(texts.text("trained.figure.title", lang, sentence=" ".join(labels)), fontsize=12)
        notes = [texts.text("trained.figure.roles_note", lang, threshold=ROLE_THRESHOLD, count=PROBE_SIZE,
                            length=PROBE_LENGTH),
                 texts.text("trained.figure.causal_note", lang)]
        notes += [texts.text(f"trained.measure.{name}", lang, threshold=ROLE_THRESHOLD) for name in ROLE_COLOURS]
        notes.append(texts.text("trained.ablation.limits", lang))
        _footer(figure, notes, lang)
    return figure


def draw_head_similarity(similarity: np.ndarray, names: list[str], *, title: str, fonts: FontChoice,
                         texts: VizTexts, lang: str, note: str | None = None):
    """A head-by-head similarity matrix on [0, 1], heads named ``layer.head``."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context({"font.family": list(fonts.families)}):
        count = len(names)
        side = max(3.6, 0.5 * count + 2.4)
        figure = Figure(figsize=(side + 1.2, side + 1.4), layout="constrained")
        figure.get_layout_engine().set(rect=(0, 0.1, 1, 0.9))
        axis = figure.subplots()
        _similarity_axis(axis, figure, similarity, names, texts, lang)
        figure.suptitle(title, fontsize=11)
        _footer(figure, [note or texts.text("figure.similarity_note", lang)], lang)
    return figure


def _similarity_axis(axis, figure, similarity, names, texts, lang) -> None:
    image = axis.imshow(np.ma.masked_invalid(similarity), cmap=_colour_map("cividis"), vmin=0.0, vmax=1.0)
    axis.set_xticks(range(len(names)), names, fontsize=8)
    axis.set_yticks(range(len(names)), names, fontsize=8)
    head = texts.text("figure.head", lang, head="").strip()
    axis.set_xlabel(head, fontsize=9)
    axis.set_ylabel(head, fontsize=9)
    _annotate(axis, similarity)
    figure.colorbar(image, ax=axis, shrink=0.8, label=texts.text("figure.similarity_scale", lang))


def draw_ablation(report: AblationReport, *, fonts: FontChoice, texts: VizTexts, lang: str):
    """The task loss with each head zeroed (bars, with the intact and chance levels), beside the similarity."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context({"font.family": list(fonts.families)}):
        figure = Figure(figsize=(13, 6.2), layout="constrained")
        figure.get_layout_engine().set(rect=(0, 0.1, 1, 0.9))
        bars, matrix = figure.subplots(1, 2, width_ratios=(1.25, 1))
        names = [role.name for role in report.roles]
        losses = report.ablation.losses.reshape(-1)
        colours = [ROLE_COLOURS[role.role] for role in report.roles]
        positions = np.arange(len(names))[::-1]  # head 0.0 on top
        bars.barh(positions, losses, color=colours)
        bars.set_yticks(positions, [f"{role.name}  {role_text(role, texts, lang)}" for role in report.roles],
                        fontsize=9)
        intact = report.ablation.intact.loss
        bars.axvline(intact, color="#333333", linestyle="--", linewidth=1)
        bars.axvline(CHANCE_LOSS, color="#333333", linestyle=":", linewidth=1)
        top = len(names) - 0.4
        bars.text(intact, top, " " + texts.text("trained.figure.intact_line", lang, loss=f"{intact:.2f}"),
                  fontsize=8, va="bottom")
        bars.text(CHANCE_LOSS, top, " " + texts.text("trained.figure.chance_line", lang, loss=f"{CHANCE_LOSS:.2f}"),
                  fontsize=8, va="bottom", ha="right")
        for position, loss in zip(positions, losses):
            bars.text(loss, position, f" {loss:.2f}", va="center", fontsize=8)
        bars.set_xlim(0, CHANCE_LOSS * 1.15)
        bars.set_ylim(-0.6, len(names) + 0.4)
        bars.set_xlabel(texts.text("trained.figure.ablation_axis", lang), fontsize=9)
        bars.set_title(texts.text("trained.figure.ablation_title", lang, count=PROBE_SIZE), fontsize=10)
        _similarity_axis(matrix, figure, report.similarity, names, texts, lang)
        matrix.set_title(texts.text("trained.figure.probe_similarity_title", lang), fontsize=10)
        notes = [texts.text("trained.ablation.task", lang, chance=f"{CHANCE_LOSS:.2f}"),
                 texts.text("trained.ablation.advice", lang), texts.text("trained.ablation.limits", lang)]
        _footer(figure, notes, lang)
    return figure
