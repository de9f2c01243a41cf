"""``mha demo --out explainer.html``: the self-contained four-view explainer page."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.i18n import resolve_language
from grader.verbs.options import json_option, lang_option, seed_option
from grader.viz.explainer import write_explainer
from grader.viz.texts import load_viz_texts


@click.command(name="demo")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=Path("explainer.html"),
              show_default=True)
@click.option("--sentence", "sentences", multiple=True, metavar="TEXT")
@click.option("--heads", type=int, default=4, show_default=True)
@click.option("--d-model", type=int, default=16, show_default=True)
@seed_option
@lang_option
@json_option
def command(out, sentences, heads, d_model, seed, lang, as_json):
    """Write one HTML page that explains multi-head attention step by step."""
    lang = resolve_language(lang)
    seed = 0 if seed is None else seed
    page = write_explainer(out=out, sentences=list(sentences), d_model=d_model, heads=heads, seed=seed, lang=lang)
    if as_json:
        click.echo(json.dumps({**page.to_dict(), "seed": seed}, ensure_ascii=False))
        return
    if page.shipped:
        click.echo(f"mha: {load_viz_texts().text('message.demo_shipped', lang)}", err=True)
    click.echo(load_viz_texts().text("message.demo_summary", lang, sentences=len(page.sentences),
                                     heads=("、" if lang == "zh" else ", ").join(map(str, page.head_options)), seed=seed,
                                     size=f"{page.size_bytes / 1024:.0f}"))
    click.echo(load_viz_texts().text("message.wrote", lang, path=page.path))
