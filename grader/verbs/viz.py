"""``mha viz [FILE]``: per-head attention heatmaps and a head-similarity figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from grader.i18n import resolve_language
from grader.verbs.options import json_option, lang_option, seed_option
from grader.viz.draw import DEFAULT_SENTENCE, draw_attention
from grader.viz.texts import load_viz_texts


@click.command(name="viz")
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--sentence", default=DEFAULT_SENTENCE, show_default=True,
              help="Tokens separated by spaces; a Chinese sentence without spaces is split into characters.")
@click.option("--heads", "num_heads", type=int, default=4, show_default=True,
              help="Number of heads H; must divide --d-model.")
@click.option("--d-model", type=int, default=16, show_default=True, help="Model width D.")
@click.option("--heads-subset", default=None, metavar="LIST",
              help="Draw only these heads, numbered from 0, e.g. 0,2 or 1-4 (for large head counts).")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=Path("heads.png"),
              show_default=True, help="Figure file (.png, .svg or .pdf); the similarity figure goes "
              "next to it as NAME-similarity.EXT.")
@click.option("--export", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the numbers behind the figures (.json or .npz).")
@seed_option
@lang_option
@json_option
def command(file, sentence, num_heads, d_model, heads_subset, out, export, seed, lang, as_json):
    """Draw one attention heatmap per head for a sentence.

    Without FILE the reference implementation is drawn; with FILE (a .py or
    .ipynb submission) the student's forward runs in the sandboxed worker and
    heads whose weights are wrong are flagged in the figure. Token vectors and
    weights are deterministic (see grader/embedding.py), so pictures repeat.
    """
    lang = resolve_language(lang)
    seed = 0 if seed is None else seed
    result = draw_attention(sentence=sentence, d_model=d_model, num_heads=num_heads, seed=seed, file=file,
                            out=out, heads_subset=heads_subset, export=export, lang=lang)
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "seed": seed}, ensure_ascii=False))
        return
    texts = load_viz_texts()
    for warning in result.warnings:
        click.echo(f"mha: {warning}", err=True)
    maps = result.maps
    for head, problem in enumerate(maps.problems):
        if problem is not None:
            click.echo(texts.text("message.flagged", lang, head=head, problem=problem.describe(texts, lang)))
    entropies = ", ".join("-" if math.isnan(value) else f"{value:.2f}" for value in maps.entropies)
    click.echo(texts.text("figure.entropies", lang, seed=seed, values=entropies))
    for path in result.files:
        click.echo(texts.text("message.wrote", lang, path=path))
