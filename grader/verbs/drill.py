"""``mha drill``: implement one function against the clock, then get the feedback."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import click

from grader.errors import UsageError
from grader.i18n import resolve_language
from grader.practice.drill import DRILLS
from grader.verbs.options import assignment_option, json_option, lang_option, seed_option, time_limit_option


@click.command("drill")
@click.argument("function", required=False, metavar="[FUNCTION]")
@assignment_option
@time_limit_option
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path), default=Path("mha-drill"),
              show_default=True)
@click.option("--hint", "hints", is_flag=True)
@click.option("--submit", is_flag=True)
@click.option("--status", is_flag=True)
@click.option("--history", is_flag=True)
@seed_option
@lang_option
@json_option
def command(function, assignment, time_limit, workspace, hints, submit, status, history, seed, lang,
            as_json) -> None:
    """Start a timed drill of FUNCTION (default: one drawn at random; `all` for the whole module)."""
    lang = resolve_language(lang)
    modes = [name for name, on in (("--submit", submit), ("--status", status), ("--history", history)) if on]
    if len(modes) > 1 or (modes and (function or hints)):
        raise UsageError("give FUNCTION (and --hint) to start a drill, or one of --submit, --status, --history")
    if submit:
        return _submit(lang, as_json)
    if status:
        return _status(lang, as_json)
    if history:
        return _history(lang, as_json)
    _start(function, assignment, workspace, time_limit, hints, seed, lang, as_json)


def _start(function, assignment, workspace, time_limit, hints, seed, lang, as_json) -> None:
    from grader.practice.drill import start_drill
    from grader.practice.texts import duration, text

    drill = start_drill(function=function, workspace=workspace, time_limit_minutes=time_limit, seed=seed,
                        hints=hints, assignment=assignment)
    if as_json:
        click.echo(json.dumps({"function": drill.function, "path": drill.path, "started": drill.started,
                               "time_limit_minutes": drill.time_limit_minutes, "hints": drill.hints}))
        return
    limit = text("drill_limit", lang, duration=duration(time_limit, lang)) if time_limit else ""
    started = datetime.fromtimestamp(drill.started).strftime("%H:%M:%S")
    if drill.replaced:
        click.echo(text("drill_replaced", lang, function=drill.replaced,
                        kept=text("drill_kept", lang, path=drill.kept) if drill.kept else ""))
    click.echo(text("drill_started", lang, function=drill.function, path=drill.path, started=started, limit=limit))
    click.echo(text("drill_next", lang))


def _submit(lang, as_json) -> None:
    from grader.practice.drill import current_drill, submit_drill
    from grader.practice.texts import clock, duration, text

    drill = current_drill()
    record, result = submit_drill(lang=lang)
    if as_json:
        click.echo(json.dumps({"drill": record.to_dict(), "result": result.to_dict()}, ensure_ascii=False))
        return
    from grader.practice.linked import linked_question
    from grader.render.terminal import print_result

    print_result(result, file=drill.path, lang=lang, linked_question=linked_question, drill=True)
    overtime = text("drill_overtime", lang, duration=duration(record.time_limit_minutes, lang)) if record.overtime else ""
    click.echo(text("drill_result", lang, function=record.function, score=f"{record.score:g}",
                    max_score=f"{record.max_score:g}", time=clock(record.seconds), overtime=overtime))
    for misconception in record.misconceptions:
        click.echo(f"  mha quiz --misconception {misconception}")
    if not record.ended:
        left = ""
        if record.time_limit_minutes:
            left = text("drill_left", lang, time=clock(record.time_limit_minutes * 60 - record.seconds))
        click.echo(text("drill_again", lang, attempt=record.attempt, left=left))


def _status(lang, as_json) -> None:
    from grader.practice.drill import current_drill
    from grader.practice.texts import clock, text

    drill = current_drill()
    if drill is None:
        click.echo(json.dumps(None) if as_json else text("drill_none_running", lang))
        return
    elapsed = time.time() - drill.started
    if as_json:
        click.echo(json.dumps({"function": drill.function, "path": drill.path, "elapsed": round(elapsed, 1)}))
        return
    left = ""
    if drill.time_limit_minutes:
        left = text("drill_left", lang, time=clock(drill.time_limit_minutes * 60 - elapsed))
    click.echo(text("drill_status", lang, function=drill.function, path=drill.path, elapsed=clock(elapsed),
                    left=left))


def _history(lang, as_json) -> None:
    from grader.practice.drill import best_times, load_history
    from grader.practice.texts import clock, text

    history = load_history()
    if as_json:
        click.echo(json.dumps([record.to_dict() for record in history], ensure_ascii=False))
        return
    if not history:
        click.echo(text("drill_history_empty", lang))
        return
    for record in history:
        when = datetime.fromtimestamp(record.started).strftime("%Y-%m-%d %H:%M")
        late = " overtime" if record.overtime else ""
        click.echo(f"{when}  {record.function:<30} #{record.attempt:<3} {record.score:g}/{record.max_score:g}  "
                   f"{clock(record.seconds)}{late}")
    for function, seconds in sorted(best_times(history).items()):
        click.echo(f"best {function}: {clock(seconds)}")


command.help = (command.help or "").replace("DRILL_LIST", ", ".join(DRILLS))  # the list from the exercise's spec
