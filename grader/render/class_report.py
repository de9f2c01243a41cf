"""The class report: score distribution, item analysis, common mistakes, failures.

The figures come from ``grader.tally.ClassTally``, fed one result at a time;
``write_report`` renders ``report.html``, self-contained, the histogram
inlined as a PNG.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

from grader.content.catalog import load_catalog
from grader.files import atomic_write_text
from grader.content.messages import check_title
from grader.tally import ClassTally
from grader.render.text_safety import html_text


def histogram_png(scores: list[float], max_score: float) -> bytes:
    """A histogram of the scores, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 3.2), dpi=100)
    axis = figure.add_subplot()
    top = max(max_score, max(scores, default=0.0), 1.0)
    bins = min(20, max(5, int(top)))
    axis.hist(scores, bins=bins, range=(0, top), color="#4a7bb7", edgecolor="white")
    axis.set_xlabel("score")
    axis.set_ylabel("students")
    axis.set_title(f"Score distribution ({len(scores)} graded, max {top:g})")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def write_report(path: Path, tally: ClassTally, *, title: str, lang: str = "en") -> None:
    """Write ``report.html`` for ``tally``."""
    atomic_write_text(path, render_report(tally, title=title, lang=lang))


def render_report(tally: ClassTally, *, title: str, lang: str = "en") -> str:
    e = html_text
    catalog = load_catalog()
    parts = [f"<h1>{e(title)}</h1>", _overview(tally)]
    if tally.scores:
        image = base64.b64encode(histogram_png(tally.scores, tally.max_score)).decode("ascii")
        parts.append(f'<img alt="histogram of the scores" src="data:image/png;base64,{image}">')
    rows = []
    for check in tally.checks.values():
        index = check.discrimination
        rows.append(
            f"<tr><td>{e(check.function)}</td><td title='{e(check.name)}'>{e(check_title(check.name, lang))}</td>"
            f"<td>{e(check.visibility)}</td>"
            f"<td class=n>{check.max_score:g}</td><td class=n>{check.passes}/{check.attempts}</td>"
            f"<td class=rate><span class=bar style='width:{60 * check.pass_rate:.0f}px'></span> {100 * check.pass_rate:.0f}%</td>"
            f"<td class=n>{'—' if index is None else f'{index:+.2f}'}</td></tr>")
    parts.append("<h2>Item analysis: every check</h2><p>Pass rate among graded submissions; discrimination is the "
                 "correlation between passing the check and the score on all other checks (near 0 or below: the "
                 "check does not separate strong from weak work).</p>"
                 "<table><tr><th>function</th><th>check</th><th>visibility</th><th>points</th><th>passed</th>"
                 "<th>pass rate</th><th>discrimination</th></tr>" + "".join(rows) + "</table>")
    mistakes = [f"<tr><td><code>{e(key)}</code></td><td>{e(catalog[key].text('title', lang)) if key in catalog else ''}"
                f"</td><td class=n>{count}</td><td class=n>{100 * share:.0f}%</td></tr>"
                for key, count, share in tally.common_misconceptions()]
    parts.append("<h2>Most common misconceptions</h2>" + (
        "<table><tr><th>id</th><th>mistake</th><th>students</th><th>share of graded</th></tr>" + "".join(mistakes)
        + "</table>" if mistakes else "<p>None found.</p>"))
    parts.append(_problems(tally))
    isolation = "; ".join(f"{e(kind)} ({count})" for kind, count in tally.isolation.most_common())
    parts.append(f"<p class=small>Isolation: {isolation or 'none recorded'}</p>")
    return (f"<!DOCTYPE html><html lang='{e(lang)}'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def _overview(tally: ClassTally) -> str:
    def figure(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    cells = [("students", str(tally.students)), ("graded", str(tally.graded)),
             ("errors", str(len(tally.errored))), ("graded with a timeout", str(len(tally.timed_out))),
             ("mean", f"{figure(tally.mean)} / {tally.max_score:g}"),
             ("median", f"{figure(tally.median)} / {tally.max_score:g}")]
    return "<div class=cards>" + "".join(f"<div><b>{html_text(value)}</b><br>{label}</div>"
                                         for label, value in cells) + "</div>"


def _problems(tally: ClassTally) -> str:
    e = html_text
    parts = ["<h2>Submissions that errored</h2>"]
    if tally.errored:
        parts.append("<table><tr><th>student</th><th>reason</th></tr>" + "".join(
            f"<tr><td>{e(student)}</td><td><pre>{e(reason)}</pre></td></tr>" for student, reason in tally.errored)
            + "</table>")
    else:
        parts.append("<p>None.</p>")
    parts.append("<h2>Graded submissions with checks that timed out</h2>")
    if tally.timed_out:
        parts.append("<table><tr><th>student</th><th>functions</th></tr>" + "".join(
            f"<tr><td>{e(student)}</td><td>{e(', '.join(functions))}</td></tr>"
            for student, functions in tally.timed_out) + "</table>")
    else:
        parts.append("<p>None.</p>")
    return "".join(parts)


_STYLE = """
body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;display:block;max-width:100%;overflow-x:auto}td,th{border-bottom:1px solid #ddd;padding:.25rem .6rem;
text-align:left;vertical-align:top}td.n{text-align:right}td.rate{white-space:nowrap}.bar{display:inline-block;height:.7rem;background:#4a7bb7}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.cards div{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem}
pre{white-space:pre-wrap;margin:0}.small{color:#666;font-size:.9rem}img{max-width:100%}
"""
