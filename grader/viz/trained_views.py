"""The trained model's pictures as files, as terminal text and inline in a notebook.

``draw_trained_attention`` is the core of ``mha viz --trained``;
``show_trained`` and ``show_ablation`` show the same figures and table in
Jupyter (``grader.viz.training_curves`` draws a training run's curves).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.errors import UsageError
from grader.tinymodel.roles import CHANCE_LOSS, PROBE_LENGTH, PROBE_SIZE
from grader.viz.draw import FIGURE_SUFFIXES, MAX_TOKENS, similarity_path
from grader.viz.texts import VizTexts
from grader.viz.trained import (DEFAULT_TRAINED_SENTENCE, AblationReport, TrainedMaps, ablation_report,
                                load_trained_texts, percent, role_text, trained_maps)


@dataclass(frozen=True)
class TrainedVizResult:
    """What ``draw_trained_attention`` made: the maps, the ablation (if asked), files and warnings."""

    maps: TrainedMaps
    report: AblationReport | None
    files: tuple[Path, ...]
    warnings: tuple[str, ...]

    def to_dict(self, lang: str = "en") -> dict:
        return {"maps": self.maps.to_dict(), "ablation": self.report.to_dict(lang) if self.report else None,
                "files": [str(path) for path in self.files], "warnings": list(self.warnings)}


def ablation_path(out: Path) -> Path:
    """Where the ablation figure goes: ``heads.png`` -> ``heads-ablation.png``."""
    return out.with_name(f"{out.stem}-ablation{out.suffix}")


def trained_fonts(tokens: tuple[str, ...], lang: str):
    from grader.viz.heatmaps import choose_fonts, find_cjk_font

    fonts = choose_fonts(tokens, lang, find_cjk_font() if lang == "zh" else None)
    warnings = (load_trained_texts().text("message.no_cjk_font", lang),) if fonts.lang != lang else ()
    return fonts, warnings


def make_trained_figures(maps: TrainedMaps, report: AblationReport | None, *, lang: str):
    """The figures (weights, similarity, and the ablation when ``report`` is given) and warnings."""
    from grader.viz.trained_figures import draw_ablation, draw_head_similarity, draw_trained_weights

    texts = load_trained_texts()
    fonts, warnings = trained_fonts(maps.tokens, lang)
    shown = fonts.lang  # Chinese texts fall back to English without a CJK font
    figures = [draw_trained_weights(maps, sentence=" ".join(maps.tokens), fonts=fonts, texts=texts, lang=shown),
               draw_head_similarity(maps.similarity, [role.name for role in maps.roles],
                                    title=texts.text("trained.figure.similarity_title", shown), fonts=fonts,
                                    texts=texts, lang=shown)]
    if report is not None:
        figures.append(draw_ablation(report, fonts=fonts, texts=texts, lang=shown))
    return figures, warnings


def draw_trained_attention(*, sentence: str = DEFAULT_TRAINED_SENTENCE, out: Path = Path("heads.png"),
                           export: Path | None = None, ablate: bool = False, lang: str = "en") -> TrainedVizResult:
    """Draw the trained model's heads on ``sentence`` to ``out`` (and the ablation, with ``ablate``)."""
    out = Path(out)
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise UsageError(f"--out {out.name!r}: use a .png, .svg or .pdf file name")
    if export is not None and Path(export).suffix not in (".json", ".npz"):
        raise UsageError(f"--export {Path(export).name!r}: use a .json or .npz file name")
    maps = trained_maps(sentence, lang=lang, limit=MAX_TOKENS)
    report = ablation_report() if ablate else None
    figures, warnings = make_trained_figures(maps, report, lang=lang)
    paths = [out, similarity_path(out)] + ([ablation_path(out)] if report is not None else [])
    out.parent.mkdir(parents=True, exist_ok=True)
    for figure, path in zip(figures, paths):
        figure.savefig(path, dpi=150)
    if export is not None:
        paths.append(_export(Path(export), maps, report, lang))
    return TrainedVizResult(maps=maps, report=report, files=tuple(paths), warnings=warnings)


def _export(path: Path, maps: TrainedMaps, report: AblationReport | None, lang: str) -> Path:
    """The numbers behind the figures: ``maps.tokens`` and ``maps.layers[i].weights`` (H, T, T)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"maps": maps.to_dict(), "ablation": report.to_dict(lang) if report is not None else None}
    if path.suffix == ".npz":
        arrays = {f"maps.layers.{layer}.weights": maps.weights[layer] for layer in range(maps.num_layers)}
        layers = [{key: value for key, value in entry.items() if key != "weights"} for entry in data["maps"]["layers"]]
        metadata = {**data, "maps": {**data["maps"], "layers": layers}}
        np.savez(path, **{"maps.tokens": np.array(maps.tokens), "maps.similarity": maps.similarity,
                          "metadata": np.array(json.dumps(metadata, ensure_ascii=False))}, **arrays)
    else:
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# ---- text -------------------------------------------------------------------------------------
def role_lines(maps: TrainedMaps, lang: str) -> list[str]:
    """One line per head: its role, the measure on the probe set and on this sentence."""
    texts = load_trained_texts()
    lines = []
    for role in maps.roles:
        here = maps.here_score(role.layer, role.head)
        lines.append(texts.text("trained.message.roles", lang, layer=role.layer, head=role.head,
                                role=role_text(role, texts, lang), here=f"{here:.2f}" if np.isfinite(here) else "-"))
    return lines


def ablation_rows(report: AblationReport, texts: VizTexts, lang: str) -> tuple[list[str], list[list[str]]]:
    """The ablation table's header and rows, as text."""
    header = [texts.text(f"trained.ablation.{key}", lang)
              for key in ("head", "role", "loss", "accuracy", "damage", "overall", "verdict")]
    intact = report.ablation.intact
    rows = [[texts.text("trained.ablation.intact", lang), "", f"{intact.loss:.3f}", percent(intact.accuracy),
             "0%", f"{intact.overall_loss:.3f}", ""]]
    for index, role in enumerate(report.roles):
        score = report.ablation.zeroed[role.layer][role.head]
        rows.append([role.name, role_text(role, texts, lang), f"{score.loss:.3f}", percent(score.accuracy),
                     percent(report.damage_of(score)), f"{score.overall_loss:.3f}",
                     texts.text(f"trained.ablation.verdict_{report.verdict(index, texts, lang).kind}", lang)])
    return header, rows


def says_lines(report: AblationReport, lang: str) -> list[str]:
    """What the ablation says, one sentence per head, then the heads zeroed together."""
    texts = load_trained_texts()
    lines = [report.verdict(index, texts, lang).describe(texts, lang) for index in range(len(report.roles))]
    for names, score in report.together:
        lines.append(texts.text("trained.ablation.together", lang, names=", ".join(names),
                                loss=f"{score.loss:.3f}", accuracy=percent(score.accuracy),
                                damage=percent(report.damage_of(score))))
    return lines


def print_ablation(report: AblationReport, *, lang: str, console=None) -> None:
    """The ablation table, the similarity matrix and what they say, on the terminal."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(highlight=False)
    texts = load_trained_texts()
    header, rows = ablation_rows(report, texts, lang)
    table = Table(title=texts.text("trained.ablation.title", lang, count=PROBE_SIZE, length=PROBE_LENGTH),
                  title_justify="left")
    for position, name in enumerate(header):
        table.add_column(name, justify="right" if 2 <= position <= 5 else "left")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print(texts.text("trained.ablation.task", lang, chance=f"{CHANCE_LOSS:.2f}"))
    console.print(texts.text("trained.ablation.columns_note", lang))
    console.print()
    console.print(texts.text("trained.ablation.similarity", lang))
    names = [role.name for role in report.roles]
    similarity = Table(show_header=True, box=None, pad_edge=False)
    similarity.add_column("")
    for name in names:
        similarity.add_column(name, justify="right")
    for name, values in zip(names, report.similarity):
        similarity.add_row(name, *(f"{value:.2f}" for value in values))
    console.print(similarity)
    console.print()
    console.print(texts.text("trained.ablation.says", lang))
    for line in says_lines(report, lang):
        console.print(f"- {line}")
    console.print()
    console.print(texts.text("trained.ablation.advice", lang))
    console.print(texts.text("trained.ablation.limits", lang))


def ablation_html(report: AblationReport, lang: str) -> str:
    """The ablation table and what it says as HTML, for a notebook."""
    from html import escape

    texts = load_trained_texts()
    header, rows = ablation_rows(report, texts, lang)
    cells = "".join(f"<th>{escape(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(value)}</td>" for value in row) + "</tr>" for row in rows)
    says = "".join(f"<li>{escape(line)}</li>" for line in says_lines(report, lang))
    notes = [texts.text("trained.ablation.task", lang, chance=f"{CHANCE_LOSS:.2f}"),
             texts.text("trained.ablation.columns_note", lang)]
    title = texts.text("trained.ablation.title", lang, count=PROBE_SIZE, length=PROBE_LENGTH)
    return (f"<div class='mha-ablation'><h4>{escape(title)}</h4><table><thead><tr>{cells}</tr></thead>"
            f"<tbody>{body}</tbody></table>" + "".join(f"<p>{escape(note)}</p>" for note in notes)
            + f"<p><b>{escape(texts.text('trained.ablation.says', lang))}</b></p><ul>{says}</ul>"
            + f"<p>{escape(texts.text('trained.ablation.advice', lang))}</p>"
            + f"<p>{escape(texts.text('trained.ablation.limits', lang))}</p></div>")


# ---- notebooks ----------------------------------------------------------------------------------
class InlineFigures:
    """Figures (and optional HTML) shown once in a notebook, whether returned or not."""

    def __init__(self, figures: list, html: str | None = None):
        self.figures, self.html = figures, html
        self.shown_inline = False

    def __iter__(self):
        return iter(self.figures)

    def show(self) -> None:
        import io

        from IPython.display import HTML, Image, display

        if self.html is not None:
            display(HTML(self.html))
        for figure in self.figures:
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=100)
            display(Image(data=buffer.getvalue(), format="png"))
        self.shown_inline = True

    def _ipython_display_(self) -> None:
        if not self.shown_inline:
            self.show()


def shown_inline(figures: InlineFigures, warnings=()) -> InlineFigures:
    for warning in warnings:
        print(warning)
    try:
        from IPython import get_ipython
    except ImportError:
        return figures
    if get_ipython() is not None:
        figures.show()
    return figures


def show_trained(sentence: str = DEFAULT_TRAINED_SENTENCE, *, model=None, lang: str = "en") -> InlineFigures:
    """Notebook helper: ``model``'s heads (default: the shipped model's) on ``sentence``, with their roles."""
    maps = trained_maps(sentence, lang=lang, model=model, limit=MAX_TOKENS)
    figures, warnings = make_trained_figures(maps, None, lang=lang)
    return shown_inline(InlineFigures(figures[:1]), warnings)


def show_ablation(*, model=None, lang: str = "en") -> InlineFigures:
    """Notebook helper: ``model``'s ablation table (default: the shipped model's), what it says, and its figure."""
    from grader.viz.trained_figures import draw_ablation

    report = ablation_report(model)
    fonts, warnings = trained_fonts((), lang)
    figure = draw_ablation(report, fonts=fonts, texts=load_trained_texts(), lang=fonts.lang)
    return shown_inline(InlineFigures([figure], ablation_html(report, lang)), warnings)
