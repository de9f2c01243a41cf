"""``mha viz [FILE]``: per-head attention heatmaps and a head-similarity figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from grader.errors import UsageError
from grader.i18n import resolve_language
from grader.verbs.options import json_option, lang_option, seed_option
from grader.viz.draw import DEFAULT_SENTENCE, draw_attention
from grader.viz.texts import load_viz_texts
from grader.viz.trained import DEFAULT_TRAINED_SENTENCE, load_trained_texts


@click.command(name="viz")
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--sentence", default=None)
@click.option("--heads", "num_heads", type=int, default=4, show_default=True)
@click.option("--d-model", type=int, default=16, show_default=True)
@click.option("--heads-subset", default=None, metavar="LIST")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=Path("heads.png"),
              show_default=True)
@click.option("--export", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--trained", is_flag=True)
@click.option("--ablate", is_flag=True)
@seed_option
@lang_option
@json_option
def command(file, sentence, num_heads, d_model, heads_subset, out, export, trained, ablate, seed, lang, as_json):
    """Draw one attention heatmap per head for a sentence."""
    lang = resolve_language(lang)
    if trained or ablate:
        _trained_command(file, sentence, heads_subset, out, export, ablate, lang, as_json)
        return
    sentence = DEFAULT_SENTENCE if sentence is None else sentence
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


def _trained_command(file, sentence, heads_subset, out, export, ablate, lang, as_json) -> None:
    from click.core import ParameterSource

    from grader.tinymodel.blocks import core_blocks
    from grader.viz.trained_views import draw_trained_attention, print_ablation, role_lines

    context = click.get_current_context()
    texts = load_trained_texts()
    if not context.params["trained"]:
        raise UsageError(texts.text("trained.message.ablate_needs_trained", lang))
    chosen = [name for name in ("num_heads", "d_model") if context.get_parameter_source(name) != ParameterSource.DEFAULT]
    if file is not None or heads_subset is not None or chosen:
        raise UsageError(texts.text("trained.message.trained_alone", lang))
    result = draw_trained_attention(sentence=DEFAULT_TRAINED_SENTENCE if sentence is None else sentence,
                                    out=out, export=export, ablate=ablate, lang=lang)
    if as_json:
        click.echo(json.dumps(result.to_dict(lang), ensure_ascii=False))
        return
    for warning in result.warnings:
        click.echo(f"mha: {warning}", err=True)
    blocks = core_blocks()
    if not blocks.from_reference:
        click.echo(f"mha: {texts.text('trained.message.computed_with_own', lang, file=blocks.origin)}", err=True)
    for line in role_lines(result.maps, lang):
        click.echo(line)
    if result.report is not None:
        click.echo()
        print_ablation(result.report, lang=lang)
        click.echo()
    for path in result.files:
        click.echo(texts.text("message.wrote", lang, path=path))
