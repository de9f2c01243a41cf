"""The class report: score distribution, item analysis, common mistakes, failures.

``ClassTally`` takes results one at a time (memory grows with the number of
checks, not of students, apart from one float per score) and keeps what the
report needs: for every check its pass rate and its discrimination (the
correlation between passing it and the score on all the other checks, the
classic item-analysis figure: near 0 or negative means the check does not
separate strong from weak submissions), the misconceptions with the share of
students who made each, and the submissions that errored or timed out.
``write_report`` renders ``report.html``, self-contained, the histogram
inlined as a PNG.
"""

from __future__ import annotations

import base64
import html
import io
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.content.catalog import load_catalog
from grader.files import atomic_write_text
from grader.content.messages import check_title


@dataclass
class CheckTally:
    name: str
    function: str
    visibility: str
    max_score: float
    attempts: int = 0
    passes: int = 0
    rest_sum: float = 0.0  # sums for the item-rest correlation
    rest_squares: float = 0.0
    pass_rest: float = 0.0

    @property
    def pass_rate(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0

    @property
    def discrimination(self) -> float | None:
        n, x, r = self.attempts, self.passes, self.rest_sum
        spread = (n * x - x * x) * (n * self.rest_squares - r * r)
        if n < 3 or spread <= 1e-12:
            return None
        return (n * self.pass_rest - x * r) / math.sqrt(spread)


@dataclass
class ClassTally:
    """Running figures of a class, fed one result dict at a time."""

    students: int = 0
    graded: int = 0
    max_score: float = 0.0
    scores: list[float] = field(default_factory=list)
    checks: dict[str, CheckTally] = field(default_factory=dict)
    misconceptions: Counter = field(default_factory=Counter)
    errored: list[tuple[str, str]] = field(default_factory=list)  # (student, reason)
    timed_out: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (student, functions)
    isolation: Counter = field(default_factory=Counter)

    def add(self, result: dict) -> None:
        self.students += 1
        self.max_score = max(self.max_score, float(result.get("max_score") or 0.0))
        if result.get("isolation"):
            self.isolation[result["isolation"]] += 1
        if result.get("status") != "graded":
            reason = str(result.get("error") or "")
            self.errored.append((result["student"], reason))
            if "Timeout" in reason or "too long" in reason:
                self.timed_out.append((result["student"], ("loading",)))
            return
        self.graded += 1
        score = float(result["score"])
        self.scores.append(score)
        self.misconceptions.update(set(result.get("misconceptions", ())))
        slow = tuple(dict.fromkeys(t["function"] for t in result["tests"] if t["outcome"] == "timeout"))
        if slow:
            self.timed_out.append((result["student"], slow))
        for test in result["tests"]:
            check = self.checks.get(test["name"])
            if check is None:
                check = self.checks[test["name"]] = CheckTally(test["name"], test["function"],
                                                               test.get("visibility", "public"), test["max_score"])
            passed = 1.0 if test["outcome"] == "passed" else 0.0
            rest = score - float(test["score"])
            check.attempts += 1
            check.passes += int(passed)
            check.rest_sum += rest
            check.rest_squares += rest * rest
            check.pass_rest += passed * rest

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.scores) if self.scores else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.scores) if self.scores else None

    def common_misconceptions(self, limit: int = 10) -> list[tuple[str, int, float]]:
        """(id, students, share of graded students), most common first."""
        return [(key, count, count / self.graded) for key, count in self.misconceptions.most_common(limit)]


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
    e = html.escape
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
             ("errors", str(len(tally.errored))), ("timed out", str(len(tally.timed_out))),
             ("mean", f"{figure(tally.mean)} / {tally.max_score:g}"),
             ("median", f"{figure(tally.median)} / {tally.max_score:g}")]
    return "<div class=cards>" + "".join(f"<div><b>{html.escape(value)}</b><br>{label}</div>"
                                         for label, value in cells) + "</div>"


def _problems(tally: ClassTally) -> str:
    e = html.escape
    parts = ["<h2>Submissions that errored</h2>"]
    if tally.errored:
        parts.append("<table><tr><th>student</th><th>reason</th></tr>" + "".join(
            f"<tr><td>{e(student)}</td><td><pre>{e(reason)}</pre></td></tr>" for student, reason in tally.errored)
            + "</table>")
    else:
        parts.append("<p>None.</p>")
    parts.append("<h2>Submissions that timed out</h2>")
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
