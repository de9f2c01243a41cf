"""similarity.html: the class's most similar pairs, each readable side by side with its matching passages.

Self-contained (no script or font fetched), every word in the run's
language (``content/similarity.toml``). Student code is only ever put on the
page as text: the files travel in a JSON block (``<`` escaped, so no file can
close the script) and the viewer writes them with ``textContent``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from grader.content.loader import TextTable
from grader.files import atomic_write_text
from grader.paths import CONTENT_DIR
from grader.render.text_safety import html_text
from grader.similarity.weights import REFERENCE_FLAG

if TYPE_CHECKING:
    from grader.similarity.compare import SimilarityReport
    from grader.similarity.sources import Document

TEXTS = CONTENT_DIR / "similarity.toml"


SIMILARITY_TEXTS = TextTable(TEXTS)
say = SIMILARITY_TEXTS.say


def mistake_text(mistake: dict, lang: str) -> str:
    """One shared mistake of a pair's evidence (``SharedMistake.to_dict``), in words."""
    key = {"mistake": "mistake_catalog", "failure": "mistake_failure"}.get(mistake["kind"], "mistake_values")
    return say(key, lang, id=mistake["id"], outcome=mistake["outcome"], holders=mistake["students_with_it"])


def write_page(path, report: SimilarityReport, *, lang: str = "en") -> None:
    atomic_write_text(path, render_page(report, lang=lang))


def render_page(report: SimilarityReport, *, lang: str = "en") -> str:
    e = html_text
    data = report.to_dict()
    title = say("title", lang, assignment=report.assignment)
    parts = [f"<h1>{e(title)}</h1>", f"<p class=signal role=note>{e(say('signal', lang))}</p>",
             f"<p>{e(say('summary', lang, students=len(report.documents), compared=f'{report.compared:,}', listed=len(report.pairs)))} "
             f"{e(say('mistakes_used' if report.mistakes_read else 'mistakes_unused', lang))}</p>",
             _pairs_table(data, lang), _reference_table(data, lang)]
    if report.skipped:
        parts.append(f"<h2>{e(say('skipped_heading', lang))}</h2><ul>"
                     + "".join(f"<li>{e(item.student)}: {e(item.reason)}</li>" for item in report.skipped) + "</ul>")
    parts.append(f"<section id=viewer hidden aria-live=polite><h2 id=viewer-title></h2>"
                 f"<button id=close type=button>{e(say('close', lang))}</button><ol id=passages></ol>"
                 "<ul id=mistakes></ul><div class=sides><div class=side><h3 id=left-name></h3><pre id=left></pre></div>"
                 "<div class=side><h3 id=right-name></h3><pre id=right></pre></div></div></section>")
    payload = {"docs": {document.student: _doc(document) for document in _shown(report)},
               "key": _doc(report.reference) if report.reference else None,
               "pairs": [{"students": pair["students"], "passages": pair["evidence"]["passages"],
                          "mistakes": [mistake_text(m, lang) for m in pair["evidence"]["shared_mistakes"]]}
                         for pair in data["pairs"]],
               "refs": [{"student": match["student"], "passages": match["evidence"]["passages"]}
                        for match in data["reference_matches"]],
               "words": {"answer_key": say("answer_key", lang), "passage": SIMILARITY_TEXTS.template("passage", lang)}}
    blob = json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c").replace("\u2028", "\\u2028") \
        .replace("\u2029", "\\u2029")
    language = "zh-Hans" if lang == "zh" else "en"
    return (f"<!DOCTYPE html><html lang='{language}'><head><meta charset='utf-8'>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><title>{e(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}"
            f"<script type='application/json' id=data>{blob}</script><script>{SCRIPT}</script></body></html>\n")


def _shown(report: SimilarityReport) -> list[Document]:
    wanted = {student for pair in report.pairs for student in pair.students}
    wanted |= {match.student for match in report.reference_matches if match.passages}
    return [document for document in report.documents if document.student in wanted]


def _doc(document: Document) -> dict:
    return {"path": document.path, "cells": [{"label": label, "text": text}
                                             for label, text in zip(document.labels, document.cells)]}


def _header(keys_kinds, lang: str) -> str:
    return "".join(f"<th data-kind={kind} tabindex=0 role=button aria-sort=none>{html_text(say(key, lang))}</th>"
                   if kind else f"<th>{html_text(say(key, lang))}</th>" for key, kind in keys_kinds)


def _pairs_table(data: dict, lang: str) -> str:
    e = html_text
    heading = f"<h2>{e(say('pairs_heading', lang))}</h2>"
    if not data["pairs"]:
        return heading + f"<p>{e(say('no_pairs', lang))}</p>"
    header = _header([("column_rank", "number"), ("column_first", "text"), ("column_second", "text"),
                      ("column_score", "number"), ("column_code", "number"), ("column_shares", "text"),
                      ("column_passages", "number"), ("column_mistakes", "text"), ("column_view", "")], lang)
    rows = []
    for rank, pair in enumerate(data["pairs"], start=1):
        first, second = pair["students"]
        evidence = pair["evidence"]
        shares = " / ".join(f"{100 * share:.0f}%" for share in evidence["shares"])
        mistakes = "; ".join(mistake_text(mistake, lang) for mistake in evidence["shared_mistakes"])
        level = "high" if pair["score"] >= 0.5 else "mid" if pair["score"] >= 0.25 else "low"
        rows.append(f"<tr class={level}><td class=n>{rank}</td><td>{e(first)}</td><td>{e(second)}</td>"
                    f"<td class=n data-value='{pair['score']}'>{pair['score']:.2f}</td>"
                    f"<td class=n data-value='{evidence['code_score']}'>{evidence['code_score']:.2f}</td>"
                    f"<td>{shares}</td><td class=n>{len(evidence['passages'])}</td><td>{e(mistakes)}</td>"
                    f"<td><button type=button class=open data-pair={rank - 1}>{e(say('open', lang))}</button></td></tr>")
    count = say("shown_count", lang, shown=f"<span class=shown>{len(rows)}</span>", total=len(rows))
    return (heading + f"<p>{e(say('pairs_intro', lang))}</p><p class=tools><input id=search type=search "
            f"placeholder='{e(say('search', lang))}' aria-label='{e(say('search', lang))}' data-table=pairs> "
            f"<span class=small>{count}</span></p>"
            f"<table id=pairs class=sortable><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _reference_table(data: dict, lang: str) -> str:
    e = html_text
    heading = (f"<h2>{e(say('reference_heading', lang))}</h2>"
               f"<p>{e(say('reference_intro', lang, flag=f'{REFERENCE_FLAG:.2f}'))}</p>")
    matches = [match for match in data["reference_matches"] if match["evidence"]["passages"]]
    if not matches:
        return heading + f"<p>{e(say('no_reference', lang))}</p>"
    header = _header([("column_first", "text"), ("column_score", "number"), ("column_flag", "text"),
                      ("column_passages", "number"), ("column_view", "")], lang)
    rows = []
    for index, match in enumerate(data["reference_matches"]):
        if not match["evidence"]["passages"]:
            continue
        flag = say("matches_key" if match["matches_answer_key"] else "below_flag", lang)
        rows.append(f"<tr class={'high' if match['matches_answer_key'] else 'low'}><td>{e(match['student'])}</td>"
                    f"<td class=n data-value='{match['score']}'>{match['score']:.2f}</td><td>{e(flag)}</td>"
                    f"<td class=n>{len(match['evidence']['passages'])}</td>"
                    f"<td><button type=button class=open data-ref={index}>{e(say('open', lang))}</button></td></tr>")
    return heading + (f"<table id=reference class=sortable><thead><tr>{header}</tr></thead>"
                      f"<tbody>{''.join(rows)}</tbody></table>")


# Sorting, searching and the side-by-side viewer: no library, nothing fetched; code written as text only.
SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('data').textContent);
  function cellValue(row, index, kind) {
    var cell = row.cells[index]; var text = cell.getAttribute('data-value') || cell.textContent;
    return kind === 'number' ? parseFloat(text) : text.toLowerCase();
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    var body = table.tBodies[0], headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (header, index) {
      var kind = header.getAttribute('data-kind'); if (!kind) return;
      function sort() {
        var up = header.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(headers, function (h) { if (h.hasAttribute('aria-sort')) h.setAttribute('aria-sort', 'none'); });
        header.setAttribute('aria-sort', up ? 'ascending' : 'descending');
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, index, kind), y = cellValue(b, index, kind);
          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      header.addEventListener('click', sort);
      header.addEventListener('keydown', function (event) { if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); sort(); } });
    });
  });
  var search = document.getElementById('search');
  if (search) search.addEventListener('input', function () {
    var table = document.getElementById(search.getAttribute('data-table'));
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean), count = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var text = (row.cells[1].textContent + ' ' + row.cells[2].textContent).toLowerCase();
      var keep = words.every(function (word) { return text.indexOf(word) >= 0; });
      row.hidden = !keep; count += keep ? 1 : 0;
    });
    document.querySelector('.shown').textContent = count;
  });
  function fill(pre, doc, sides) {
    pre.textContent = '';
    doc.cells.forEach(function (cell) {
      if (cell.label) { var head = document.createElement('span'); head.className = 'cell'; head.textContent = '# ' + cell.label + '\\n'; pre.appendChild(head); }
      cell.text.replace(/\\n$/, '').split('\\n').forEach(function (text, index) {
        var number = index + 1, line = document.createElement('span');
        line.className = 'line'; line.setAttribute('data-line', number);
        var mark = document.createElement('span'); mark.className = 'no'; mark.textContent = String(number).padStart(4, ' ') + '  ';
        line.appendChild(mark); line.appendChild(document.createTextNode(text + '\\n'));
        sides.forEach(function (side, which) {
          if ((side.cell || '') === cell.label && number >= side.start_line && number <= side.end_line) {
            line.classList.add('hit', 'p' + (which % 6)); line.setAttribute('data-passage', which);
          }
        });
        pre.appendChild(line);
      });
    });
  }
  function range(side) { return (side.cell ? side.cell + ' ' : '') + side.start_line + '-' + side.end_line; }
  function show(left, leftName, right, rightName, found, mistakes) {
    document.getElementById('viewer-title').textContent = leftName + ' \\u2194 ' + rightName;
    document.getElementById('left-name').textContent = leftName + ' (' + left.path + ')';
    document.getElementById('right-name').textContent = rightName + ' (' + right.path + ')';
    fill(document.getElementById('left'), left, found.map(function (p) { return p.first; }));
    fill(document.getElementById('right'), right, found.map(function (p) { return p.second; }));
    var list = document.getElementById('passages'); list.textContent = '';
    found.forEach(function (p, index) {
      var item = document.createElement('li'), link = document.createElement('a');
      link.href = '#'; link.className = 'p' + (index % 6);
      link.textContent = data.words.passage.replace('{number}', index + 1).replace('{first}', range(p.first))
        .replace('{left}', leftName).replace('{second}', range(p.second)).replace('{right}', rightName);
      link.addEventListener('click', function (event) {
        event.preventDefault();
        ['left', 'right'].forEach(function (id) {
          var hit = document.querySelector('#' + id + ' [data-passage="' + index + '"]');
          if (hit) hit.scrollIntoView({block: 'center'});
        });
      });
      item.appendChild(link); list.appendChild(item);
    });
    var listed = document.getElementById('mistakes'); listed.textContent = '';
    (mistakes || []).forEach(function (text) { var item = document.createElement('li'); item.textContent = text; listed.appendChild(item); });
    var viewer = document.getElementById('viewer'); viewer.hidden = false; viewer.scrollIntoView();
  }
  function openPair(index) {
    var pair = data.pairs[index]; if (!pair) return;
    var a = pair.students[0], b = pair.students[1];
    show(data.docs[a], a, data.docs[b], b, pair.passages, pair.mistakes);
    history.replaceState(null, '', '#pair-' + (index + 1));
  }
  function openKey(index) {
    var match = data.refs[index]; if (!match || !data.docs[match.student]) return;
    show(data.docs[match.student], match.student, data.key, data.words.answer_key, match.passages, []);
    history.replaceState(null, '', '#key-' + (index + 1));
  }
  document.addEventListener('click', function (event) {
    var button = event.target.closest('button.open'); if (!button) return;
    if (button.hasAttribute('data-pair')) openPair(+button.getAttribute('data-pair'));
    else openKey(+button.getAttribute('data-ref'));
  });
  var linked = /^#(pair|key)-(\\d+)$/.exec(location.hash);  // a link to one pair: similarity.html#pair-3
  if (linked) (linked[1] === 'pair' ? openPair : openKey)(+linked[2] - 1);
  document.getElementById('close').addEventListener('click', function () {
    document.getElementById('viewer').hidden = true; history.replaceState(null, '', location.pathname);
  });
})();
"""

STYLE = """
body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;max-width:90rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;display:block;max-width:100%;overflow-x:auto}
td,th{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:left;vertical-align:top}td.n{text-align:right}
th[data-kind]{cursor:pointer;user-select:none}th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}tr.high td{background:#fdecea}tr.mid td{background:#fff8e1}
.signal{border-left:4px solid #4a7bb7;background:#eef3fa;padding:.5rem 1rem}.small{color:#666;font-size:.9rem}
.tools{display:flex;gap:1rem;align-items:center}#search{padding:.3rem .5rem;min-width:18rem}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:1rem}.side pre{overflow:auto;max-height:70vh;border:1px solid #ddd;
padding:.5rem;font-size:.8rem;line-height:1.3}.line{display:block;white-space:pre}.no{color:#999}.cell{color:#4a7bb7;display:block}
.p0{background:#ffe0b2}.p1{background:#c8e6c9}.p2{background:#bbdefb}.p3{background:#f8bbd0}.p4{background:#d1c4e9}
.p5{background:#fff59d}#passages a{color:#222}
"""
