"""The curves of a training run: the task loss and the heads' scores as they form.

``HeadWatch`` is an ``on_log`` callback for ``grader.tinymodel.train.train``
that measures every head at each log; ``show_training`` draws what it saw
(the trained-heads notebook uses both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.tinymodel.roles import CHANCE_LOSS, pattern_scores, probe_batch
from grader.viz.trained import load_trained_texts
from grader.viz.trained_views import InlineFigures, shown_inline, trained_fonts


@dataclass
class HeadWatch:
    """Scores of the heads logged during training: ``on_log`` for ``grader.tinymodel.train.train``."""

    steps: list[int] = field(default_factory=list)
    task_losses: list[float] = field(default_factory=list)
    scores: list[dict[str, np.ndarray]] = field(default_factory=list)  # {role: (L, H)} at each log

    def __call__(self, step: int, loss: float, task_loss: float, model) -> None:
        probe = probe_batch(size=128)
        self.steps.append(step)
        self.task_losses.append(task_loss)
        self.scores.append(pattern_scores(model.forward(probe.ids).weights, probe.ids))

    def best(self, role: str, layer: int) -> np.ndarray:
        """The highest ``role`` score among layer ``layer``'s heads (from 0) at each log."""
        return np.array([scores[role][layer].max() for scores in self.scores])


def show_training(watch: HeadWatch, *, lang: str = "en") -> InlineFigures:
    """Notebook helper: the curves of ``training_figure``, shown inline."""
    return shown_inline(InlineFigures([training_figure(watch, lang=lang)]))


def training_figure(watch: HeadWatch, *, lang: str = "en"):
    """The task loss and the best previous-token (layer 0) and induction (layer 1) scores over training."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    from grader.viz.trained_figures import ROLE_COLOURS

    texts = load_trained_texts()
    fonts, _ = trained_fonts((), lang)
    lang = fonts.lang
    with rc_context({"font.family": list(fonts.families)}):
        figure = Figure(figsize=(9, 4), layout="constrained")
        loss_axis = figure.subplots()
        loss_axis.plot(watch.steps, watch.task_losses, color="#333333",
                       label=texts.text("trained.ablation.loss", lang))
        loss_axis.axhline(CHANCE_LOSS, color="#333333", linestyle=":", linewidth=1)
        loss_axis.set_ylim(0, CHANCE_LOSS * 1.08)
        loss_axis.set_xlabel(texts.text("trained.figure.step", lang))
        loss_axis.set_ylabel(texts.text("trained.ablation.loss", lang))
        score_axis = loss_axis.twinx()
        for role, layer in (("previous", 0), ("induction", 1)):
            score_axis.plot(watch.steps, watch.best(role, layer), color=ROLE_COLOURS[role],
                            label=texts.text("trained.figure.best_score", lang, layer=layer,
                                             role=texts.text(f"trained.role.{role}", lang)))
        score_axis.set_ylim(0, 1.02)
        score_axis.set_ylabel(texts.text("trained.figure.score", lang))
        lines = loss_axis.get_lines() + score_axis.get_lines()
        loss_axis.legend(lines, [line.get_label() for line in lines], loc="center right", fontsize=8)
    return figure
