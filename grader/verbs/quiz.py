"""``mha quiz``: concept questions in the terminal, spaced review, sheets, the bank's list."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import click

from grader.content.usage import usage_error
from grader.i18n import resolve_language
from grader.practice.bank import LEVELS, default_bank
from grader.practice.sheets import DEFAULT_COUNT
from grader.verbs.options import json_option, lang_option, seed_option, time_limit_option


@click.command("quiz")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC")
@click.option("--level", "levels", multiple=True, type=click.Choice(LEVELS))
@click.option("--count", type=click.IntRange(min=1), default=DEFAULT_COUNT, show_default=True)
@time_limit_option
@lang_option
@seed_option
@click.option("--review", is_flag=True)
@click.option("--stats", is_flag=True)
@click.option("--list", "list_bank", is_flag=True)
@click.option("--from-feedback", "feedback", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              metavar="FILE")
@click.option("--misconception", "misconceptions", multiple=True, metavar="ID")
@click.option("--sheet", "sheet_student", metavar="STUDENT")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plain", is_flag=True)
@json_option
def command(topics, levels, count, time_limit, lang, seed, review, stats, list_bank, feedback,
            misconceptions, sheet_student, out, plain, as_json) -> None:
    """Drill concept questions: attention, heads, shapes, masks, KV cache and more."""
    lang = resolve_language(lang)
    bank = default_bank()
    unknown = sorted(set(topics) - set(bank.titles))
    if unknown:
        raise usage_error("unknown_topic", topic=repr(unknown[0]), topics=", ".join(sorted(bank.titles)))
    modes = [name for name, on in (("--list", list_bank), ("--stats", stats), ("--sheet", sheet_student),
                                   ("--review", review), ("--from-feedback", feedback),
                                   ("--misconception", misconceptions)) if on]
    if len(modes) > 1:
        raise usage_error("modes_exclusive", modes=", ".join(modes))
    if misconceptions:
        from grader.content.catalog import misconception_ids

        strange = sorted(set(misconceptions) - misconception_ids())
        if strange:
            raise usage_error("unknown_misconception", id=repr(strange[0]))
    if list_bank:
        return _list(bank, topics, levels, as_json, lang)
    if stats:
        return _stats(lang, as_json)
    if sheet_student is not None:
        return _sheet(sheet_student, out, lang, count, topics, levels)
    _session(bank, topics=topics, levels=levels, count=count, time_limit=time_limit, lang=lang, seed=seed,
             review=review, feedback=feedback, misconceptions=misconceptions, plain=plain)


def _session(bank, *, topics, levels, count, time_limit, lang, seed, review, feedback, misconceptions,
             plain) -> None:
    from grader.practice.plan import misconceptions_in_feedback, plan_quiz
    from grader.practice.prompts import make_prompter
    from grader.practice.review import load_progress, save_progress
    from grader.practice.session import run_session, summary_lines
    from grader.practice.texts import text

    progress = load_progress()
    linked = list(misconceptions) if misconceptions else None
    if feedback is not None:
        linked = misconceptions_in_feedback(feedback, lang=lang)
        if not linked:
            click.echo(text("feedback_none", lang, source=feedback))
            return
        click.echo(text("feedback_found", lang, misconceptions=", ".join(linked)))
    seed = seed if seed is not None else secrets.randbelow(2**31)
    questions = plan_quiz(bank=bank, count=count, seed=seed, topics=topics, levels=levels,
                          review=progress if review else None, misconceptions=linked)
    if not questions:
        filters = " ".join([*(f"--topic {t}" for t in topics), *(f"--level {lv}" for lv in levels)])
        click.echo(text("nothing_due", lang) if review else
                   text("nothing_selected", lang, filters=filters or "--misconception"))
        return
    prompter = make_prompter(plain=plain)
    prompter.show(text("quiz_start", lang, count=len(questions), seed=seed))
    try:
        summary = run_session(questions=questions, lang=lang, prompter=prompter, titles=bank.titles,
                              time_limit=None if time_limit is None else time_limit * 60,
                              progress=progress)
    finally:
        save_progress(progress)  # answers given before an interruption still count
    for line in summary_lines(summary, lang=lang, titles=bank.titles):
        prompter.show(line)


def _list(bank, topics, levels, as_json, lang) -> None:
    from rich.cells import cell_len  # a Chinese level or kind is two columns a character wide

    from grader.practice.texts import text

    rows = [{"id": q.id, "topic": q.topic, "level": q.level, "type": q.kind, "template": q.is_template,
             "misconceptions": list(q.misconceptions), "unlocks": list(q.unlocks),
             "languages": list(q.languages)}
            for q in bank.select(topics=topics, levels=levels)]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return

    def column(value: str, width: int) -> str:
        return value + " " * max(width - cell_len(value), 0)

    for row in rows:
        linked = ",".join(row["misconceptions"]) or "-"
        level, kind = text(f"level.{row['level']}", lang), text(f"kind.{row['type']}", lang)
        click.echo(f"{row['id']:<34} {row['topic']:<22} {column(level, 12)} {column(kind, 16)} "
                   f"{'+'.join(row['languages']):<6} {linked}")
    click.echo(text("list_total", lang, count=len(rows), templates=sum(row["template"] for row in rows)))


def _stats(lang, as_json) -> None:
    from grader.practice.review import PROGRESS_FILE, load_progress
    from grader.practice.texts import text
    from grader.practice.user_data import data_dir

    summary = load_progress().stats()
    if as_json:
        click.echo(json.dumps(summary.to_dict(), ensure_ascii=False, indent=1))
        return
    click.echo(text("stats_title", lang, path=data_dir() / PROGRESS_FILE))
    if not summary.answers:
        click.echo(text("stats_empty", lang))
        return
    click.echo(text("stats_overview", lang, seen=summary.questions_seen, answers=summary.answers,
                    accuracy=f"{summary.accuracy:.0%}", sessions=summary.sessions, due=summary.due_now))
    click.echo(text("stats_boxes", lang, boxes="  ".join(str(n) for n in summary.boxes)))
    titles = default_bank().titles
    for topic in summary.topics:
        name = titles.get(topic.topic, {}).get(lang, topic.topic)
        click.echo(text("stats_topic", lang, topic=name, correct=topic.correct, answers=topic.answers,
                        questions=topic.questions))


def _sheet(student, out, lang, count, topics, levels) -> None:
    from grader.practice.sheets import write_sheet

    if out is None:
        raise usage_error("sheet_needs_out", student=student)
    sheet_path, answers_path = write_sheet(student=student, out=out, lang=lang, count=count,
                                           topics=topics, levels=levels)
    click.echo(f"{sheet_path}\n{answers_path}")
