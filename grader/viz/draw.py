"""Per-head attention pictures of one sentence, from the reference or a submission.

``draw_attention`` is the core of ``mha viz``; ``show_heads`` draws the same
figures inline in a notebook. A submission runs only in the sandboxed worker
(``grader.sandbox.client``), exactly as in grading: the grader sends it the sentence's
embedding and the weights, receives plain arrays and checks them itself.

Shape legend: ``B`` batch (1 here), ``H`` heads, ``T`` = ``S`` tokens, ``D`` width.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.errors import ChecksFailed, ConfigError, UsageError
from grader.paths import DEFAULT_ASSIGNMENT, exercise_path
from grader.viz.embedding import embed, init_weights, tokenize
from grader.viz.maps import HeadMaps, HeadProblem, find_head_problems, parse_head_subset
from grader.viz.texts import load_viz_texts
from grader.viz.trace import Trace, check_heads, trace_sentence

DEFAULT_SENTENCE = "the cat chases the mouse"
# Beyond this many tokens the labels of a heatmap overlap and the cells are specks.
MAX_TOKENS = 20
# Beyond this many panels one figure is no longer readable on a projector.
MAX_PANELS = 16
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


@dataclass(frozen=True)
class VizResult:
    """What ``draw_attention`` made: the maps, the files written and any warnings."""

    maps: HeadMaps
    files: tuple[Path, ...]
    warnings: tuple[str, ...]
    trace: Trace | None  # the reference trace, when the reference is installed

    def to_dict(self) -> dict:
        return {**self.maps.to_dict(), "files": [str(path) for path in self.files],
                "warnings": list(self.warnings)}


def compute_head_maps(
    *, sentence: str, d_model: int = 16, num_heads: int = 4, seed: int = 0,
    file: Path | None = None, lang: str = "en",
) -> tuple[HeadMaps, Trace | None]:
    """The sentence's per-head weights: the reference's, or the submission's in ``file``."""
    texts = load_viz_texts()
    tokens = tokenize(sentence)
    if not tokens:
        raise UsageError('the sentence is empty; pass some words, e.g. --sentence "the cat sat"')
    if len(tokens) > MAX_TOKENS:
        raise UsageError(texts.text("message.too_long", lang, count=len(tokens), limit=MAX_TOKENS))
    check_heads(d_model, num_heads)
    try:
        trace = trace_sentence(sentence=sentence, d_model=d_model, num_heads=num_heads, seed=seed)
    except ConfigError:
        trace = None  # a student release: the student's code is drawn, without comparison
    if file is None and trace is not None:
        weights = trace.head_weights()  # (H, T, S)
        return HeadMaps(tuple(tokens), weights, "reference", (None,) * num_heads, weights), trace
    if file is None:
        file = own_file()  # no reference to draw: draw the student's own exercise instead
        if not file.is_file():
            raise ConfigError(texts.text("message.no_reference", lang, file=file.as_posix(), stub=f"exercises/{file.name}"))
    reference = trace.head_weights() if trace is not None else None
    weights, problems = _submission_weights(Path(file), tokens, d_model, num_heads, seed, reference, lang)
    return HeadMaps(tuple(tokens), weights, Path(file).name, problems, reference), trace


def own_file() -> Path:
    """The core exercise's file the student works on: the script or its notebook, by ``mha grade``'s rule."""
    from grader.entries.entry import own_work

    return own_work(DEFAULT_ASSIGNMENT).chosen


def _submission_weights(file, tokens, d_model, num_heads, seed, reference, lang):
    """Run the submission's forward in the worker; return ``(H, T, S)`` weights and problems."""
    from grader.sandbox.client import Limits, Sandbox
    from grader.sandbox.isolation import quiet_sandbox
    from grader.sandbox.servers import chosen_isolation
    from grader.sandbox.source import SubmissionError

    texts = load_viz_texts()
    if not file.is_file():
        example = exercise_path().relative_to(exercise_path().parents[1])
        raise UsageError(texts.text("message.not_a_file", lang, file=file, example=example))
    inputs = embed(tokens, d_model)[None]  # (B=1, T, D)
    weights = init_weights(d_model, seed=seed)
    try:
        with quiet_sandbox(), Sandbox.open(path=file, limits=Limits(), isolation=chosen_isolation()) as box:
            if not box.load_report.ok:
                raise ChecksFailed(texts.text("message.call_failed", lang, error=_error_text(box.load_report.error)))
            outcome = box.call_method(
                "MultiHeadAttention", init=(d_model, num_heads), attributes=weights,
                method="forward", args=(inputs, inputs, inputs), kwargs={"return_weights": True},
            )
    except SubmissionError as refused:
        raise UsageError(f"{file}: {refused}") from refused
    if not outcome.ok and getattr(outcome.error, "type", None) == "NotImplementedError":
        raise ChecksFailed(texts.text("message.not_written", lang, file=file.name))
    if not outcome.ok:
        raise ChecksFailed(texts.text("message.call_failed", lang, error=_error_text(outcome.error)))
    value = outcome.value
    expected = (1, num_heads, len(tokens), len(tokens))
    if not (isinstance(value, tuple) and len(value) == 2):
        got = np.shape(value) if isinstance(value, np.ndarray) else type(value).__name__
        problem = HeadProblem("wrong_shape", {"got": got, "expected": expected})
        return np.full(expected[1:], np.nan), (problem,) * num_heads
    problems, maps = find_head_problems(value[1], expected_shape=expected, reference=reference)
    return maps, problems


def _error_text(error) -> str:
    if error is None:
        return "unknown error"
    place = error.location() if hasattr(error, "location") else ""
    detail = f"{error.type}: {error.message}"
    return f"{detail} ({place})" if place and place not in detail else detail


def head_subset(text: str | None, num_heads: int, lang: str = "en") -> tuple[int, ...] | None:
    """The 0-based heads to draw from ``--heads-subset``; refuse too many heads without one."""
    texts = load_viz_texts()
    if text is None:
        if num_heads > MAX_PANELS:
            raise UsageError(texts.text("message.too_many_heads", lang, count=num_heads, limit=MAX_PANELS,
                                        last=MAX_PANELS - 1))
        return None
    subset = parse_head_subset(text, num_heads)
    if subset is None:
        raise UsageError(texts.text("message.bad_subset", lang, text=text, last=num_heads - 1))
    if len(subset) > MAX_PANELS:
        raise UsageError(texts.text("message.too_many_heads", lang, count=len(subset), limit=MAX_PANELS,
                                    last=MAX_PANELS - 1))
    return subset


def make_figures(maps: HeadMaps, *, sentence: str, subset: tuple[int, ...] | None, lang: str):
    """The weights figure, the similarity figure, and warnings (e.g. no CJK font)."""
    from grader.viz.heatmaps import choose_fonts, draw_similarity, draw_weights, find_cjk_font

    texts = load_viz_texts()
    needs_cjk = lang == "zh" or any(not token.isascii() for token in maps.tokens)
    fonts = choose_fonts(maps.tokens, lang, find_cjk_font() if needs_cjk else None)
    warnings = []
    if needs_cjk and (fonts.positions_only or fonts.lang != lang):
        warnings.append(texts.text("message.no_cjk_font", lang))
    weights_figure = draw_weights(maps, sentence=sentence, fonts=fonts, subset=subset, texts=texts)
    similarity_figure = draw_similarity(maps, fonts=fonts, texts=texts)
    return weights_figure, similarity_figure, tuple(warnings)


def similarity_path(out: Path) -> Path:
    """Where the similarity figure goes: ``heads.png`` -> ``heads-similarity.png``."""
    return out.with_name(f"{out.stem}-similarity{out.suffix}")


def draw_attention(
    *, sentence: str = DEFAULT_SENTENCE, d_model: int = 16, num_heads: int = 4, seed: int = 0,
    file: Path | None = None, out: Path = Path("heads.png"), heads_subset: str | None = None,
    export: Path | None = None, lang: str = "en",
) -> VizResult:
    """Draw the per-head weights and head similarity of ``sentence`` to ``out`` (PNG, SVG or PDF)."""
    out = Path(out)
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise UsageError(f"--out {out.name!r}: use a .png, .svg or .pdf file name")
    if export is not None and Path(export).suffix not in (".json", ".npz"):
        raise UsageError(f"--export {Path(export).name!r}: use a .json or .npz file name")
    subset = head_subset(heads_subset, num_heads, lang)
    maps, trace = compute_head_maps(sentence=sentence, d_model=d_model, num_heads=num_heads,
                                    seed=seed, file=file, lang=lang)
    weights_figure, similarity_figure, warnings = make_figures(maps, sentence=sentence, subset=subset, lang=lang)
    if file is None and trace is None:
        own = load_viz_texts().text("message.drawn_own", lang, file=own_file().as_posix())
        warnings = (own, *warnings)
    out.parent.mkdir(parents=True, exist_ok=True)
    weights_figure.savefig(out, dpi=150)
    similarity_figure.savefig(similarity_path(out), dpi=150)
    files = [out, similarity_path(out)]
    if export is not None:
        files.append(_export(Path(export), maps, trace))
    return VizResult(maps=maps, files=tuple(files), warnings=warnings, trace=trace)


def _export(path: Path, maps: HeadMaps, trace: Trace | None) -> Path:
    """The numbers behind the figures: the reference trace, and the drawn maps for a submission."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        arrays = {"weights": maps.weights, "entropy_bits": maps.entropies, "similarity": maps.similarity}
        if trace is not None:
            arrays.update({f"stage.{name}": array for name, array in trace.stages.items()})
        np.savez(path, tokens=np.array(maps.tokens), source=np.array(maps.source), **arrays)
    else:
        data = {"maps": maps.to_dict(), "trace": trace.to_dict() if trace is not None else None}
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


class HeadFigures:
    """The two figures of ``show_heads``; shown inline once, whether returned or not."""

    def __init__(self, weights, similarity, maps: HeadMaps):
        self.weights, self.similarity, self.maps = weights, similarity, maps
        self._shown = False

    def __iter__(self):
        return iter((self.weights, self.similarity))

    def __repr__(self) -> str:
        return f"<HeadFigures: {self.maps.num_heads} heads of {' '.join(self.maps.tokens)!r}>"

    def show(self) -> None:
        """Display both figures as PNG images in the running notebook."""
        import io

        from IPython.display import Image, display

        for figure in (self.weights, self.similarity):
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=110)
            display(Image(data=buffer.getvalue(), format="png"))
        self._shown = True

    def _ipython_display_(self) -> None:
        # The last value of a cell: show it, unless show_heads has shown it already.
        if not self._shown:
            self.show()


def show_heads(
    sentence: str = DEFAULT_SENTENCE, *, heads: int = 4, d_model: int = 16, seed: int = 0,
    file: str | Path | None = None, heads_subset: str | None = None, lang: str = "en",
) -> HeadFigures:
    """Notebook helper: draw the per-head weights and head similarity inline.

    In Jupyter: ``from grader.viz.draw import show_heads; show_heads("猫 追 老鼠", heads=2)``.
    Pass ``file="my_solution.py"`` to draw a submission's heads (it runs in the
    sandboxed worker). Outside a notebook nothing is shown; the figures are in
    the result (``weights_figure, similarity_figure = show_heads(...)``).
    """
    subset = head_subset(heads_subset, heads, lang)
    maps, _ = compute_head_maps(sentence=sentence, d_model=d_model, num_heads=heads, seed=seed,
                                file=Path(file) if file is not None else None, lang=lang)
    weights_figure, similarity_figure, warnings = make_figures(maps, sentence=sentence, subset=subset, lang=lang)
    for warning in warnings:
        print(warning)
    figures = HeadFigures(weights_figure, similarity_figure, maps)
    try:
        from IPython import get_ipython
    except ImportError:
        return figures
    if get_ipython() is not None:
        figures.show()
    return figures
