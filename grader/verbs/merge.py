"""``mha merge``: join the outputs of sharded ``mha grade`` runs."""

from __future__ import annotations

from pathlib import Path

import click

from grader.i18n import resolve_language
from grader.verbs.options import adjust_option, format_option, lang_option, overwrite_option


@click.command("merge")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path))
@format_option
@overwrite_option
@adjust_option
@lang_option
def command(folders: tuple[Path, ...], out: Path, formats: tuple[str, ...], overwrite: bool, adjustments: Path | None,
            lang: str | None) -> None:
    """Merge the --out FOLDERS of `mha grade --shard K/N` runs into one --out folder."""
    from grader.batch.merging import REFUSED, merge_runs
    from grader.render.summary import print_summary

    summary, warnings = merge_runs(sources=list(folders), out=out, lang=lang,
                                   formats=tuple(dict.fromkeys(formats)), overwrite=overwrite,
                                   adjustments=adjustments)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    print_summary(summary, formats=formats, merged=True, lang=resolve_language(lang))
    refused = sum(warning.startswith(REFUSED) for warning in warnings)
    if refused:
        from grader.errors import ShardsRefused

        raise ShardsRefused(f"{refused} of {len(folders)} folders refused (see the warnings above); the others are "
                            f"merged into {out}: grade the refused shards again, then merge once more")
