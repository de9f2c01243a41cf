"""report.html: the roster first (links, sorting, searching, grades.csv), every word in the run's language."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.paths import solution_path
from grader.render.class_report import REPORT, render_report
from grader.results import Adjustment
from grader.tally import ClassTally


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("report")
    folder = base / "class"
    folder.mkdir()
    reference = solution_path("multihead_attention").read_text(encoding="utf-8")
    (folder / "ann.py").write_text(reference, encoding="utf-8")
    (folder / "ben.py").write_text(reference.replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    (folder / "cat.py").write_text("def softmax(x)\n", encoding="utf-8")
    (folder / "dan dan.py").write_text(reference, encoding="utf-8")
    (folder / "Zoë Müller.py").write_text(reference, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MHA_COURSE_KEY", "test-report-key")
        for lang in ("en", "zh"):
            done = CliRunner().invoke(root, ["grade", str(folder), "--out", str(base / lang), "--lang", lang])
            assert done.exit_code == 0, done.output
    return base


def test_roster_comes_first_with_every_student_linked_to_their_feedback(graded):
    page = (graded / "en" / "report.html").read_text(encoding="utf-8")
    assert page.index("id=roster") < page.index("data:image/png") < page.index("Item analysis")
    links = re.findall(r"<a href='(feedback/[^']+)'>([^<]+)</a>", page)
    assert [name for _, name in links] == ["ann", "ben", "cat", "dan dan", "Zoë Müller"]  # as a reader sorts
    assert all((graded / "en" / link).is_file() for link, _ in links)
    assert "href='grades.csv' download" in page and (graded / "en" / "grades.csv").is_file()
    roster = page[page.index("id=students"):page.index("</table>", page.index("id=students"))]
    assert "attention-no-scale" in roster and ">error<" in roster and "60 / 60" in roster


def test_the_whole_report_follows_the_language(graded):
    page = (graded / "zh" / "report.html").read_text(encoding="utf-8")
    for key in ("roster_heading", "items_heading", "mistakes_heading", "errored_heading", "download_grades"):
        assert REPORT.texts()[key]["zh"] in page and REPORT.texts()[key]["en"] not in page
    assert "<html lang='zh-Hans'>" in page


def test_report_of_an_empty_tally_renders():
    assert "id=students" in render_report(ClassTally(), title="t", lang="en")


@pytest.mark.slow
def test_roster_sorts_and_searches_in_a_browser(graded, tmp_path):
    from chromium_driver import Chromium, find_chromium

    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is required in CI (Debian: apt install chromium fonts-noto-cjk)")
        pytest.skip("Chromium not found (Debian: apt install chromium; or set MHA_CHROMIUM); CI runs this test")
    browser = Chromium(binary, tmp_path / "profile")
    try:
        url = (graded / "en" / "report.html").resolve().as_uri()
        browser.open(url)
        names = "[...document.querySelectorAll('#students tbody tr:not([hidden]) td:first-child')].map(c => c.textContent)"
        browser.click("#students th:nth-child(2)")  # score, ascending
        assert browser.evaluate(names)[0] == "cat"
        browser.click("#students th:nth-child(2)")  # descending
        assert browser.evaluate(names)[-1] == "cat"
        browser.evaluate("(() => { const s = document.getElementById('search'); s.value = 'no-scale';"
                         " s.dispatchEvent(new Event('input')); })()")
        assert browser.evaluate(names) == ["ben"] and browser.evaluate("document.getElementById('shown').textContent") == "1"
        browser.evaluate("(() => { const s = document.getElementById('search'); s.value = 'zoe muller';"
                         " s.dispatchEvent(new Event('input')); })()")
        assert browser.evaluate(names) == ["Zoë Müller"]  # accents aside, as a reader types
        browser.evaluate("(() => { const s = document.getElementById('search'); s.value = '';"
                         " s.dispatchEvent(new Event('input')); })()")
        browser.click("#students th:nth-child(1)")  # by name: letters first, case and accents aside
        assert browser.evaluate(names) == ["ann", "ben", "cat", "dan dan", "Zoë Müller"]
        assert browser.console_errors() == []
        assert [u for u in browser.requested_urls() if u != url and not u.startswith("data:")] == []
    finally:
        browser.close()


def test_grades_csv_follows_the_reading_order_and_quotes_only_the_cells_that_need_it(graded):
    import csv

    text = (graded / "en" / "grades.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines()))
    assert [row[0] for row in rows[1:]] == ["ann", "ben", "cat", "dan dan", "Zoë Müller"]


def test_a_cell_with_a_separator_is_quoted_alone():
    import csv
    import io

    from grader.render.exports import GradesCsv
    from grader.results import SubmissionResult

    handle = io.StringIO()
    grades = GradesCsv(handle)
    base = dict(score=60.0, max_score=60.0, status="graded", error=None, assignment="multihead_attention")
    grades.add(SubmissionResult(student="alice", final_score=60.0, adjustments=(
        Adjustment(kind="late", change=-6, reason="a day"), Adjustment(kind="late", waived=True, reason="ill")), **base))
    grades.add(SubmissionResult(student="bob", **base))
    alice, bob = handle.getvalue().splitlines()[1:]
    assert alice.startswith("alice,60,60,graded,,60,\"late -6: a day; late waived: ill\"")
    assert bob == "bob,60,60,graded,,60,"
    assert list(csv.reader([alice]))[0][6] == "late -6: a day; late waived: ill"
