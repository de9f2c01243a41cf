"""The class report: the roster first, then score distribution, item analysis, common mistakes, failures.

The figures come from ``grader.tally.ClassTally``, fed one result at a time;
``write_report`` renders ``report.html``, self-contained (the histogram
an inline SVG, a few lines of script for sorting and searching the
roster, nothing fetched), every word in the run's language
(``content/report.toml``). The roster links each student to their
``feedback/<student>.html`` and the page to ``grades.csv``, both beside it.
"""

from __future__ import annotations

from pathlib import Path

from grader.content.catalog import load_catalog
from grader.content.loader import TextTable
from grader.content.messages import check_title
from grader.files import atomic_write_text, file_key
from grader.paths import CONTENT_DIR
from grader.render.histogram import STYLE as HISTOGRAM_STYLE
from grader.render.histogram import histogram_svg, score_bins
from grader.render.text_safety import html_text
from grader.tally import ClassTally, RosterRow

REPORT_TEXTS = CONTENT_DIR / "report.toml"


REPORT = TextTable(REPORT_TEXTS)
say = REPORT.say


def write_report(path: Path, tally: ClassTally, *, title: str, lang: str = "en", similarity: dict | None = None) -> None:
    """Write ``report.html`` for ``tally`` (with ``similarity``, a similarity.json's data: a section on it)."""
    atomic_write_text(path, render_report(tally, title=title, lang=lang, similarity=similarity))


def score_histogram(tally: ClassTally, lang: str) -> str:
    """The graded scores' histogram, an inline SVG labelled in ``lang``."""
    bins = score_bins(scores=tally.scores, max_score=tally.max_score)
    return histogram_svg(bins=bins, title=say("histogram_title", lang, graded=len(tally.scores), top=f"{bins.top:g}"),
                         x_label=say("histogram_x", lang), y_label=say("histogram_y", lang),
                         alt=say("histogram_alt", lang))


def render_report(tally: ClassTally, *, title: str, lang: str = "en", similarity: dict | None = None) -> str:
    e = html_text
    catalog = load_catalog()
    parts = [f"<h1>{e(title)}</h1>", _overview(tally, lang), _roster(tally, lang)]
    if tally.scores:
        parts.append(score_histogram(tally, lang))
    rows = []
    for check in tally.checks.values():
        index = check.discrimination
        visibility = say(f"visibility_{check.visibility}", lang) if check.visibility in ("public", "hidden") \
            else check.visibility
        rows.append(
            f"<tr><td>{e(check.function)}</td><td title='{e(check.name)}'>{e(check_title(check.name, lang))}</td>"
            f"<td>{e(visibility)}</td>"
            f"<td class=n>{check.max_score:g}</td><td class=n>{check.passes}/{check.attempts}</td>"
            f"<td class=rate><span class=bar style='width:{60 * check.pass_rate:.0f}px'></span> {100 * check.pass_rate:.0f}%</td>"
            f"<td class=n>{'—' if index is None else f'{index:+.2f}'}</td></tr>")
    headers = "".join(f"<th>{e(say(key, lang))}</th>" for key in (
        "column_function", "column_check", "column_visibility", "column_points", "column_passed", "column_pass_rate",
        "column_discrimination"))
    parts.append(f"<h2>{e(say('items_heading', lang))}</h2><p>{e(say('items_intro', lang))}</p>"
                 f"<table><tr>{headers}</tr>" + "".join(rows) + "</table>")
    mistakes = [f"<tr><td><code>{e(key)}</code></td><td>{e(catalog[key].text('title', lang)) if key in catalog else ''}"
                f"</td><td class=n>{count}</td><td class=n>{100 * share:.0f}%</td></tr>"
                for key, count, share in tally.common_misconceptions()]
    headers = "".join(f"<th>{e(say(key, lang))}</th>" for key in ("column_id", "column_mistake", "column_students",
                                                                    "column_share"))
    parts.append(f"<h2>{e(say('mistakes_heading', lang))}</h2>" + (
        f"<table><tr>{headers}</tr>" + "".join(mistakes) + "</table>" if mistakes
        else f"<p>{e(say('none_found', lang))}</p>"))
    parts.append(_problems(tally, lang))
    if similarity is not None:
        parts.append(similarity_section(similarity, lang))
    isolation = "; ".join(f"{e(kind)} ({count})" for kind, count in tally.isolation.most_common())
    parts.append(f"<p class=small>{say('isolation', lang, isolation=isolation or e(say('none_recorded', lang)))}</p>")
    language = "zh-Hans" if lang == "zh" else "en"
    return (f"<!DOCTYPE html><html lang='{language}'><head><meta charset='utf-8'>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><title>{e(title)}</title>"
            f"<style>{_STYLE}{HISTOGRAM_STYLE}</style></head><body>{''.join(parts)}<script>{ROSTER_SCRIPT}</script></body></html>\n")


SIMILARITY_TEXTS = CONTENT_DIR / "similarity.toml"
SIMILARITY_SHOWN = 10  # pairs shown in the report; similarity.html lists them all


def similarity_section(data: dict, lang: str) -> str:
    """The class's most similar pairs and answer-key matches, from similarity.json's data; a link to the page."""
    e = html_text
    words = TextTable(SIMILARITY_TEXTS)

    def word(key: str, **params) -> str:
        return words.say(key, lang, **params)

    rows = "".join(f"<tr><td>{e(pair['students'][0])}</td><td>{e(pair['students'][1])}</td>"
                   f"<td class=n>{pair['score']:.2f}</td><td class=n>{len(pair['evidence']['passages'])}</td>"
                   f"<td><a href='similarity.html#pair-{rank}'>{e(word('open'))}</a></td></tr>"
                   for rank, pair in enumerate(data["pairs"][:SIMILARITY_SHOWN], start=1))
    header = "".join(f"<th>{e(word(key))}</th>" for key in ("column_first", "column_second", "column_score",
                                                             "column_passages", "column_view"))
    flagged = [match["student"] for match in data["reference_matches"] if match["matches_answer_key"]]
    return (f"<h2 id=similarity>{e(word('report_heading'))}</h2><p>{e(word('report_intro'))}</p>"
            f"<p class=signal>{e(word('signal'))}</p>"
            + (f"<table><tr>{header}</tr>{rows}</table>" if rows else f"<p>{e(word('no_pairs'))}</p>")
            + f"<p>{e(word('reference_heading'))}: {e(', '.join(flagged)) if flagged else e(word('no_reference'))}</p>"
            f"<p><a href='similarity.html'>{e(word('report_link'))}</a></p>")


def _overview(tally: ClassTally, lang: str) -> str:
    def figure(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    cells = [("card_students", str(tally.students)), ("card_graded", str(tally.graded)),
             ("card_errors", str(len(tally.errored))), ("card_timeouts", str(len(tally.timed_out))),
             ("card_mean", f"{figure(tally.mean)} / {tally.max_score:g}"),
             ("card_median", f"{figure(tally.median)} / {tally.max_score:g}")]
    if tally.adjusted:
        cells.append(("card_adjusted", str(tally.adjusted)))
    return "<div class=cards>" + "".join(f"<div><b>{html_text(value)}</b><br>{html_text(say(label, lang))}</div>"
                                         for label, value in cells) + "</div>"


def _status(row: RosterRow, lang: str) -> str:
    if row.status != "graded":
        return say("status_error", lang)
    return say("status_timeout" if row.timed_out else "status_graded", lang)


def _roster(tally: ClassTally, lang: str) -> str:
    """Every student: a sortable, searchable table, each name a link to the feedback page."""
    e = html_text
    columns = ["column_student", "column_score", "column_raw", "column_status", "column_misconceptions"]
    adjusted = any(row.adjustments for row in tally.roster)
    if adjusted:
        columns.append("column_adjustments")
    kinds = ["text", "number", "number", "text", "text", "text"]
    headers = "".join(f"<th data-kind={kind} tabindex=0 role=button aria-sort=none>{e(say(key, lang))}</th>"
                      for key, kind in zip(columns, kinds))
    rows = []
    for row in tally.roster:
        link = f"feedback/{file_key(row.student)}.html"
        cells = [f"<td data-value='{e(row.student)}'><a href='{e(link)}'>{e(row.student)}</a></td>",
                 f"<td class=n data-value='{row.final:g}'>{row.final:g} / {row.max_score:g}</td>",
                 f"<td class=n data-value='{row.score:g}'>{row.score:g}</td>",
                 f"<td class=status-{e(row.status)}>{e(_status(row, lang))}</td>",
                 f"<td>{e(', '.join(row.misconceptions))}</td>"]
        if adjusted:
            cells.append(f"<td>{e('; '.join(row.adjustments))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    count = say("shown_count", lang, shown="<span id=shown>" + str(len(rows)) + "</span>", total=len(rows))
    return (f"<h2 id=roster>{e(say('roster_heading', lang))}</h2><p>{e(say('roster_intro', lang))}</p>"
            f"<p class=tools><input id=search type=search placeholder='{e(say('search', lang))}' "
            f"aria-label='{e(say('search', lang))}'> <span class=small>{count}</span> "
            f"<a class=download href='grades.csv' download>{e(say('download_grades', lang))}</a></p>"
            f"<table id=students><thead><tr>{headers}</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _problems(tally: ClassTally, lang: str) -> str:
    e = html_text
    parts = [f"<h2>{e(say('errored_heading', lang))}</h2>"]
    if tally.errored:
        parts.append(f"<table><tr><th>{e(say('column_student', lang))}</th><th>{e(say('column_reason', lang))}</th></tr>"
                     + "".join(f"<tr><td>{e(student)}</td><td><pre>{e(reason)}</pre></td></tr>"
                               for student, reason in tally.errored) + "</table>")
    else:
        parts.append(f"<p>{e(say('none', lang))}</p>")
    parts.append(f"<h2>{e(say('timeouts_heading', lang))}</h2>")
    if tally.timed_out:
        parts.append(f"<table><tr><th>{e(say('column_student', lang))}</th><th>{e(say('column_functions', lang))}</th>"
                     "</tr>" + "".join(f"<tr><td>{e(student)}</td><td>{e(', '.join(functions))}</td></tr>"
                                      for student, functions in tally.timed_out) + "</table>")
    else:
        parts.append(f"<p>{e(say('none', lang))}</p>")
    return "".join(parts)


# Sorting and searching the roster: no library, nothing fetched.
ROSTER_SCRIPT = """
(function () {
  var table = document.getElementById('students');
  if (!table) return;
  var body = table.tBodies[0], search = document.getElementById('search'), shown = document.getElementById('shown');
  var rows = Array.prototype.slice.call(body.rows);
  function value(row, index, kind) {
    var cell = row.cells[index]; var text = cell.getAttribute('data-value') || cell.textContent;
    return kind === 'number' ? parseFloat(text) : text;
  }
  // letters as a reader sees them: "zoe" finds "Zoë", case and accents aside
  function plain(text) { return text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase(); }
  var collator = new Intl.Collator(undefined, {sensitivity: 'base', numeric: true});
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
    function sort() {
      var kind = header.getAttribute('data-kind');
      var up = header.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.setAttribute('aria-sort', 'none'); });
      header.setAttribute('aria-sort', up ? 'ascending' : 'descending');
      rows.sort(function (a, b) {
        var x = value(a, index, kind), y = value(b, index, kind);
        var order = kind === 'number' ? (x < y ? -1 : x > y ? 1 : 0) : collator.compare(x, y);
        return order * (up ? 1 : -1);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    }
    header.addEventListener('click', sort);
    header.addEventListener('keydown', function (event) { if (event.key === 'Enter' || event.key === ' ') sort(); });
  });
  search.addEventListener('input', function () {
    var words = plain(search.value).split(/\\s+/).filter(Boolean), count = 0;
    rows.forEach(function (row) {
      var text = plain(row.textContent);
      var keep = words.every(function (word) { return text.indexOf(word) >= 0; });
      row.hidden = !keep; count += keep ? 1 : 0;
    });
    shown.textContent = count;
  });
})();
"""

_STYLE = """
body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;display:block;max-width:100%;overflow-x:auto}td,th{border-bottom:1px solid #ddd;padding:.25rem .6rem;
text-align:left;vertical-align:top}td.n{text-align:right}td.rate{white-space:nowrap}.bar{display:inline-block;height:.7rem;background:#4a7bb7}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.cards div{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem}
pre{white-space:pre-wrap;margin:0}.small{color:#666;font-size:.9rem}img{max-width:100%}
#students th{cursor:pointer;user-select:none}#students th[aria-sort=ascending]::after{content:" \\25B2"}
#students th[aria-sort=descending]::after{content:" \\25BC"}.status-error{color:#c62828}
.tools{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}#search{padding:.3rem .5rem;min-width:18rem}
.download{margin-left:auto}
"""
