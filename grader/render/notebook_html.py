"""A check's result as an HTML fragment, for a notebook cell's output.

The same diagnosis as ``mha check`` in a terminal (``grader.render.terminal``):
each function's checks with points and outcome, every failure's message, the
catalogued mistake it matches with its explanation and hint (once per
mistake), and where the root cause is. It reads a ``SubmissionResult`` and
computes nothing. Everything student-controlled is escaped; styles are scoped
to the fragment's class so they cannot leak into the notebook. The outcome of
each check is also in ``data-`` attributes, for tools and tests.
"""

from __future__ import annotations

from itertools import groupby

from grader.content.catalog import load_catalog
from grader.content.loader import TextTable
from grader.content.messages import case_text, check_text, check_title, error_text, note_texts, render
from grader.paths import CONTENT_DIR
from grader.render.feedback import mistakes_of
from grader.render.rules import mark
from grader.render.text_safety import html_text
from grader.results import SubmissionResult

NOTEBOOK_TEXTS_FILE = CONTENT_DIR / "notebook.toml"


NOTEBOOK_TEXTS = TextTable(NOTEBOOK_TEXTS_FILE, fallback=render)  # the notebook checks' texts, else a message
say = NOTEBOOK_TEXTS.say


def result_to_html(result: SubmissionResult, lang: str, *, title: str | None = None,
                   footer: str | None = None) -> str:
    """The HTML fragment of one check; ``title`` and ``footer`` are plain text."""
    e = html_text
    failed = sum(test.outcome != "passed" for test in result.tests)
    passed = result.status == "graded" and failed == 0
    parts = [f"<div class='mha-check' lang='{'zh-Hans' if lang == 'zh' else 'en'}' "
             f"data-status='{e(result.status)}' data-passed='{str(passed).lower()}' "
             f"data-score='{result.score:g}' data-max-score='{result.max_score:g}'>", f"<style>{_STYLE}</style>"]
    if title:
        parts.append(f"<div class='mha-title'>{e(title)}</div>")
    if result.notes:
        items = "".join(f"<li>{e(note)}</li>" for note in note_texts(result, lang))
        parts.append(f"<details class='mha-notes'><summary>{e(say('report_notes', lang))} "
                     f"({len(result.notes)})</summary><ul>{items}</ul></details>")
    if result.status != "graded":
        parts.append(f"<p class='mha-bad'>{e(say('report_load_error', lang))}</p>"
                     f"<pre class='mha-error'>{e(error_text(result, lang))}</pre></div>")
        return "".join(parts)
    for function, group in groupby(result.tests, key=lambda test: test.function):
        parts.append(_function_table(function, list(group), lang))
    parts.append(_mistakes(result, lang))
    key = "report_all_passed" if passed else "report_total"
    total = say(key, lang, score=result.score, max_score=result.max_score, failed=failed, checks=len(result.tests))
    parts.append(f"<p class='mha-total {'mha-good' if passed else 'mha-bad'}'>{e(total)}</p>")
    if footer:
        parts.append(f"<p class='mha-footer'>{e(footer)}</p>")
    parts.append("</div>")
    return "".join(parts)


def _function_table(function: str, tests: list, lang: str) -> str:
    e = html_text
    rows = []
    for test in tests:
        label = check_title(test.name, lang)
        rows.append(f"<tr class='mha-{e(test.outcome)}' data-test='{e(test.name)}' data-outcome='{e(test.outcome)}' "
                    f"data-misconception='{e(test.misconception or '')}'><td{_LEFT}>{e(label)}</td>"
                    f"<td class='mha-points' style='text-align:right'>{test.score:g}/{test.max_score:g}</td>"
                    f"<td{_LEFT}>{mark(test.outcome)} {e(say('outcome_' + test.outcome, lang))}</td></tr>")
        if test.outcome != "passed":
            cause = ""
            if test.root_cause:
                cause = f" <b>{e(say('root_cause', lang, function=test.root_cause))}</b>."
            case = f"<pre>{e(case_text(test, lang))}</pre>" if case_text(test, lang) else ""
            rows.append(f"<tr class='mha-message'><td colspan='3'{_LEFT}>{e(check_text(test, lang))}{cause}{case}</td></tr>")
    header = "".join(f"<th{_LEFT}>{e(say(key, lang))}</th>" for key in ("report_check", "report_points", "report_result"))
    return (f"<table class='mha-table'><caption><code>{e(function)}</code></caption>"
            f"<tr>{header}</tr>{''.join(rows)}</table>")


def _mistakes(result: SubmissionResult, lang: str) -> str:
    """One box per catalogued mistake (or generic outcome): title, where, why, hint."""
    e = html_text
    catalog = load_catalog()
    boxes = []
    for mistake in mistakes_of(result, lang):
        specific = catalog[mistake.id].function is not None
        where = ", ".join(f"<code>{e(name)}</code>" for name in mistake.functions)
        boxes.append(f"<div class='mha-mistake{'' if specific else ' mha-generic'}' data-misconception='{e(mistake.id)}'>"
                     f"<b>{e(mistake.title)}</b> <code>{e(mistake.id)}</code> ({where})"
                     f"<p><b>{e(say('report_why', lang))}</b>{e(say('colon', lang))}{e(mistake.explanation)}</p>"
                     f"<p><b>{e(say('report_hint', lang))}</b>{e(say('colon', lang))}{e(mistake.hint)}</p></div>")
    return "".join(boxes)


# JupyterLab's own table style right-aligns every cell and outranks a stylesheet in the output: the
# alignment is set on each cell too. The size has a floor: nbgrader's feedback page (Bootstrap 3) sets the
# root font to 10px, where .92rem alone is smaller than the page's 14px text and code blocks.
_LEFT = " style='text-align:left;vertical-align:top'"

_STYLE = """
.mha-check{font-family:system-ui,"Noto Sans CJK SC","Microsoft YaHei",sans-serif;font-size:max(.92rem,14px);line-height:1.4;
border-left:4px solid #888;padding:.2rem .8rem;margin:.3rem 0}
.mha-check[data-passed=true]{border-left-color:#1a7f37}.mha-check[data-passed=false]{border-left-color:#c62828}
.mha-check .mha-title{font-weight:600;margin:.2rem 0}
.mha-check table.mha-table{border-collapse:collapse;margin:.4rem 0}
.mha-check caption{text-align:left;font-weight:600;padding:.2rem 0}
.mha-check td,.mha-check th{border-bottom:1px solid #ddd;padding:.15rem .5rem;text-align:left;vertical-align:top}
.mha-check td.mha-points{text-align:right}
.mha-check tr.mha-passed td:last-child{color:#1a7f37}
.mha-check tr.mha-failed td:last-child,.mha-check tr.mha-error td:last-child{color:#c62828}
.mha-check tr.mha-timeout td:last-child{color:#b26a00}
.mha-check tr.mha-message td{color:#444;padding-left:1.4rem}
.mha-check .mha-mistake{background:rgba(198,40,40,.06);border-left:3px solid #c62828;padding:.2rem .6rem;margin:.4rem 0}
.mha-check .mha-generic{background:rgba(128,128,128,.08);border-left-color:#888}
.mha-check .mha-mistake p{margin:.2rem 0}
.mha-check .mha-good{color:#1a7f37;font-weight:600}.mha-check .mha-bad{color:#c62828;font-weight:600}
.mha-check pre.mha-error{white-space:pre-wrap;background:rgba(128,128,128,.1);padding:.4rem}
.mha-check .mha-footer{color:#555}
"""
