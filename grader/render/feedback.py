"""A student's feedback page, as Markdown and as self-contained HTML, in English or Chinese.

Both read a ``SubmissionResult`` and compute nothing: the score, each
function's checks, and every misconception found with its explanation and
hint. Hidden checks appear by their title with the explanation of what went
wrong; their code and expected values never reach the page (the results do
not hold them). The seed of the hidden inputs is not shown either: knowing it
would let a student rebuild the inputs of a regrade.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from grader.content.catalog import Entry
from grader.content.loader import TextTable
from grader.content.messages import case_text, check_text, check_title, error_text, note_texts, render
from grader.paths import CONTENT_DIR
from grader.render.rules import mark, shown_mistakes
from grader.render.text_safety import clean_line, html_text, markdown_code_block, markdown_inline
from grader.results import SubmissionResult, TestResult

FEEDBACK_FILE = CONTENT_DIR / "feedback.toml"


FEEDBACK_TEXTS = TextTable(FEEDBACK_FILE, fallback=render)  # the page's own texts, else a check message
say = FEEDBACK_TEXTS.say


@dataclass(frozen=True)
class Mistake:
    id: str
    title: str
    explanation: str
    hint: str
    functions: tuple[str, ...]


def mistakes_of(result: SubmissionResult, lang: str) -> list[Mistake]:
    """Every catalogued mistake (or generic outcome) behind a failed check, in the order first met.

    Which are shown is ``grader.render.rules.shown_mistakes``; each is listed once, with every function
    where it was found (the root cause's, where a check names one).
    """
    entries: dict[str, Entry] = {}
    seen: dict[str, list[str]] = {}
    for test, shown in zip(result.tests, shown_mistakes(result)):
        for entry in shown:
            entries[entry.id] = entry
            where = seen.setdefault(entry.id, [])
            function = test.root_cause or test.function if entry.id == test.misconception else entry.function
            if function not in where:
                where.append(function)
    return [Mistake(key, entries[key].text("title", lang), entries[key].text("explanation", lang),
                    entries[key].text("hint", lang), tuple(functions)) for key, functions in seen.items()]


def by_function(tests) -> list[tuple[str, list[TestResult]]]:
    """Checks grouped by function, public and hidden together, functions in the order first met."""
    groups: dict[str, list[TestResult]] = {}
    for test in tests:
        groups.setdefault(test.function, []).append(test)
    return list(groups.items())


def _label(test: TestResult, lang: str) -> str:
    label = check_title(test.name, lang)
    return say("hidden_label", lang, label=label) if test.visibility == "hidden" else label


def _outcome(test: TestResult, lang: str) -> str:
    return f"{mark(test.outcome)} {say('outcome_' + test.outcome, lang)}"


# ---- Markdown --------------------------------------------------------------------------
def _md(text: str) -> str:
    """Student-controlled text made inert in Markdown: no HTML, link, image, emphasis or table break."""
    return markdown_inline(text)


def _ours(text: str) -> str:
    """The grader's own text (titles, catalog entries) on one line of Markdown, readable as it is written."""
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def adjustment_lines(result: SubmissionResult, lang: str) -> list[str]:
    """Each adjustment made after grading, as a sentence (the reason as the instructor wrote it, cleaned)."""
    lines = []
    for item in result.adjustments:
        kind = say(f"kind_{item.kind}", lang)
        reason = clean_line(item.reason)
        if item.waived:
            lines.append(say("adjustment_waived", lang, kind=kind, reason=reason))
            continue
        if item.kind == "extension":
            line = say("adjustment_note", lang, kind=kind, reason=reason)
        elif item.percent is None:
            line = say("adjustment_line", lang, kind=kind, change=item.change, reason=reason)
        else:
            line = say("adjustment_percent_line", lang, kind=kind, change=item.change, reason=reason,
                       percent=item.percent, max_score=result.max_score)
        lines.append(line)
    return lines


def graded_line(result: SubmissionResult, lang: str) -> str:
    """Which file was graded, and which of the student's other candidates were set aside."""
    line = say("graded_file", lang, file=result.file)
    if result.set_aside:
        line += " " + say("set_aside", lang, files=", ".join(result.set_aside))
    return line


def render_markdown(result: SubmissionResult, *, lang: str) -> str:
    lines = [f"# {say('title', lang, assignment=_ours(result.assignment), student=_md(result.student))}", "",
             f"**{say('score', lang, score=result.score, max_score=result.max_score)}**", ""]
    if result.file:
        lines += [_md(graded_line(result, lang)), ""]
    if result.adjustments:
        lines += [f"## {say('adjustments_heading', lang)}", ""] + [
            f"- {_md(line)}" for line in adjustment_lines(result, lang)] + [
            "", f"**{say('final_score', lang, score=result.final, max_score=result.max_score)}**", ""]
    if result.notes:
        lines += [f"## {say('report_notes', lang)}", ""] + [f"- {_md(note)}" for note in note_texts(result, lang)] + [""]
    if result.status != "graded":
        lines += [f"## {say('report_load_error', lang)}", "", "```text", markdown_code_block(error_text(result, lang)),
                  "```", "", say("what_to_do_load", lang), ""]
        return "\n".join(lines)
    lines += [f"## {say('checks', lang)}", ""]
    for function, group in by_function(result.tests):
        lines += [f"### `{function}`", "",
                  f"| {say('report_check', lang)} | {say('report_points', lang)} | {say('report_result', lang)} |",
                  "|---|---:|---|"]
        failures = []
        for test in group:
            lines.append(f"| {_ours(_label(test, lang))} | {test.score:g}/{test.max_score:g} | {_outcome(test, lang)} |")
            if test.outcome != "passed":
                failures.append(f"- **{_ours(check_title(test.name, lang))}**: {_md(check_text(test, lang))}")
                if case_text(test, lang):
                    failures += ["", "  ```text", *(f"  {line}" for line in
                                                    markdown_code_block(case_text(test, lang)).splitlines()), "  ```"]
        lines += [""] + failures + ([""] if failures else [])
    if any(test.visibility == "hidden" for test in result.tests):
        lines += [f"> {say('hidden_explained', lang)}", ""]
    lines += [f"## {say('mistakes', lang)}", ""]
    mistakes = mistakes_of(result, lang)
    for mistake in mistakes:
        lines += [f"### {_ours(mistake.title)}{say('id_in_brackets', lang, id=mistake.id)}", "",
                  f"{say('seen_in', lang)}: {', '.join(f'`{name}`' for name in mistake.functions)}", "",
                  f"**{say('report_why', lang)}**{say('colon', lang)}{_ours(mistake.explanation)}", "",
                  f"**{say('report_hint', lang)}**{say('colon', lang)}{_ours(mistake.hint)}", ""]
    if not mistakes:
        lines += [say("no_mistakes", lang), ""]
    lines += [say("all_good" if result.passed else "what_to_do", lang), ""]
    return "\n".join(lines)


# ---- HTML ------------------------------------------------------------------------------
def render_html(result: SubmissionResult, *, lang: str) -> str:
    e = html_text
    title = say("title", lang, assignment=result.assignment, student=result.student)
    share = result.score / result.max_score if result.max_score else 0.0
    body = [f"<h1>{e(title)}</h1>",
            f"<p class=score>{e(say('score', lang, score=result.score, max_score=result.max_score))}</p>",
            f"<div class=meter><span style='width:{100 * share:.1f}%'></span></div>"]
    if result.file:
        body.append(f"<p class=file>{e(graded_line(result, lang))}</p>")
    if result.adjustments:
        body.append(f"<h2>{e(say('adjustments_heading', lang))}</h2><ul>"
                    + "".join(f"<li>{e(line)}</li>" for line in adjustment_lines(result, lang)) + "</ul>"
                    f"<p class=score>{e(say('final_score', lang, score=result.final, max_score=result.max_score))}</p>")
    if result.notes:
        body.append(f"<h2>{e(say('report_notes', lang))}</h2><ul>"
                    + "".join(f"<li>{e(note)}</li>" for note in note_texts(result, lang)) + "</ul>")
    if result.status != "graded":
        body.append(f"<h2>{e(say('report_load_error', lang))}</h2><pre>{e(error_text(result, lang))}</pre>"
                    f"<p>{_with_code(say('what_to_do_load', lang))}</p>")
        return _page(title, lang, body)
    body.append(f"<h2>{e(say('checks', lang))}</h2>")
    for function, group in by_function(result.tests):
        rows = []
        for test in group:
            rows.append(f"<tr class={e(test.outcome)}><td>{e(_label(test, lang))}</td>"
                        f"<td class=n>{test.score:g}/{test.max_score:g}</td><td>{e(_outcome(test, lang))}</td></tr>")
            if test.outcome != "passed":
                case = f"<pre>{e(case_text(test, lang))}</pre>" if case_text(test, lang) else ""
                rows.append(f"<tr class=message><td colspan=3>{e(check_text(test, lang))}{case}</td></tr>")
        body.append(f"<h3><code>{e(function)}</code></h3><table><tr><th>{e(say('report_check', lang))}</th>"
                    f"<th>{e(say('report_points', lang))}</th><th>{e(say('report_result', lang))}</th></tr>"
                    + "".join(rows) + "</table>")
    if any(test.visibility == "hidden" for test in result.tests):
        body.append(f"<p class=note>{e(say('hidden_explained', lang))}</p>")
    body.append(f"<h2>{e(say('mistakes', lang))}</h2>")
    mistakes = mistakes_of(result, lang)
    for mistake in mistakes:
        functions = ", ".join(f"<code>{e(name)}</code>" for name in mistake.functions)
        body.append(f"<section class=mistake><h3>{e(mistake.title)} <code>{e(mistake.id)}</code></h3>"
                    f"<p>{e(say('seen_in', lang))}: {functions}</p>"
                    f"<p><b>{e(say('report_why', lang))}</b>{e(say('colon', lang))}{e(mistake.explanation)}</p>"
                    f"<p><b>{e(say('report_hint', lang))}</b>{e(say('colon', lang))}{e(mistake.hint)}</p></section>")
    if not mistakes:
        body.append(f"<p>{e(say('no_mistakes', lang))}</p>")
    body.append(f"<p>{_with_code(say('all_good' if result.passed else 'what_to_do', lang))}</p>")
    return _page(title, lang, body)


def _with_code(text: str) -> str:
    """One of the grader's own texts as HTML: escaped, its `backticked` commands set as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html_text(text))


def _page(title: str, lang: str, body: list[str]) -> str:
    language = "zh-Hans" if lang == "zh" else "en"
    return (f"<!DOCTYPE html><html lang='{language}'><head><meta charset='utf-8'>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><title>{html_text(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")


_STYLE = """
body{font-family:system-ui,"Noto Sans CJK SC","Microsoft YaHei",sans-serif;max-width:50rem;margin:2rem auto;
padding:0 1rem;color:#222;line-height:1.45}table{border-collapse:collapse;width:100%;margin-bottom:1rem}
td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}td.n{text-align:right}
tr.passed td:last-child{color:#1a7f37}tr.failed td:last-child,tr.error td:last-child{color:#c62828}
tr.timeout td:last-child{color:#b26a00}tr.message td{color:#555;font-size:.92rem;padding-left:1.5rem}
.score{font-size:1.3rem;font-weight:600}.meter{height:.6rem;background:#eee;border-radius:3px;overflow:hidden}
.meter span{display:block;height:100%;background:#4a7bb7}.mistake{border-left:4px solid #c62828;padding:.1rem 1rem;
margin:1rem 0;background:#fafafa}.note{color:#555;font-style:italic}pre{white-space:pre-wrap;background:#f6f6f6;
padding:.6rem}
"""
