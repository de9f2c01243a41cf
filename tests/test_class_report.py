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
    assert page.index("id=roster") < page.index("<svg class=histogram") < page.index("Item analysis")
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
        bars = browser.evaluate("[...document.querySelectorAll('svg.histogram rect.bin')].map(r => {"
                                " const b = r.getBoundingClientRect(); return [b.width, b.height]; })")
        assert len(bars) == 20 and all(width > 10 for width, _ in bars)  # scores out of 60: twenty bins, drawn
        heights = sorted(height for _, height in bars)
        assert heights[-1] > 2 * heights[-2] > 0 and heights[-3] == 0  # three at 60, one lower, the rest empty
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


def test_the_histogram_bins_every_score_as_numpy_does_the_last_bin_closed():
    from grader.render.histogram import score_bins

    bins = score_bins(scores=[0.0, 2.9, 3.0, 59.9, 60.0, 60.0], max_score=60.0)
    assert len(bins.counts) == 20 and bins.edges[0] == 0 and bins.edges[-1] == 60
    assert bins.counts[0] == 2 and bins.counts[1] == 1 and bins.counts[-1] == 3 and sum(bins.counts) == 6
    bonus = score_bins(scores=[50.0, 63.0], max_score=60.0)  # a score past the maximum widens the axis
    assert bonus.top == 63.0 and sum(bonus.counts) == 2
    assert len(score_bins(scores=[1.0, 2.0], max_score=3.0).counts) == 5  # at least five bins


def test_the_histogram_is_labelled_in_the_runs_language_and_escapes_its_text():
    from grader.render.histogram import histogram_svg, score_bins

    tally = ClassTally()
    page = render_report(tally, title="t", lang="zh")
    assert "<svg" not in page  # nothing graded: no figure
    bins = score_bins(scores=[10.0, 20.0], max_score=20.0)
    figure = histogram_svg(bins=bins, title="<b>&", x_label="得分", y_label="学生人数", alt="得分分布直方图")
    assert "<b>" not in figure and "&lt;b&gt;&amp;" in figure and ">得分<" in figure
    assert "aria-label='得分分布直方图'" in figure and figure.count("<rect class=bin") == 20
    ticks = [float(t) for t in re.findall(r"text-anchor=middle>([0-9.]+)</text>", figure)]
    assert ticks[0] == 0 and ticks[-1] == 20 and len(ticks) <= 9  # round ticks along the scores
