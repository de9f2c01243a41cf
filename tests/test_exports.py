"""Renderers of a class run: grades.csv, results.json, Gradescope, JUnit, feedback pages, class report."""

from __future__ import annotations

import csv
import io
import json
import re
import string
import xml.etree.ElementTree as ElementTree
from dataclasses import replace

import numpy as np
import pytest

from grader.content.catalog import load_catalog
from grader.content.messages import check_title
from grader.errors import ContentError
from grader.render.class_report import render_report
from grader.render.exports import GradesCsv, JUnitReport, ResultsJson
from grader.render.feedback import FEEDBACK_FILE, FEEDBACK_TEXTS, render_html, render_markdown
from grader.render.gradescope import gradescope_results
from grader.results import SubmissionResult, TestResult
from grader.tally import ClassTally

SCALE = "attention-no-scale"


def graded(student="ann", *, failing=(), hidden_failing=False, message="values differ") -> SubmissionResult:
    """A hand-made result: four public checks and one hidden one."""
    tests = []
    for name, function, points in (("test_softmax_values", "softmax", 3.0),
                                   ("test_attention_values", "scaled_dot_product_attention", 4.0),
                                   ("test_split_heads_shape", "split_heads", 1.0),
                                   ("test_forward_values", "forward", 4.0)):
        if function in failing:
            tests.append(TestResult(name, function, "failed", 0.0, points, misconception=SCALE, message=message))
        else:
            tests.append(TestResult(name, function, "passed", points, points))
    hidden = TestResult("test_attention_on_drawn_inputs", "scaled_dot_product_attention",
                        "failed" if hidden_failing else "passed", 0.0 if hidden_failing else 5.0, 5.0,
                        misconception=SCALE if hidden_failing else None,
                        message="scaled_dot_product_attention(Q, K, V) is exactly what this mistake produces"
                        if hidden_failing else "", visibility="hidden")
    tests.append(hidden)
    score = sum(test.score for test in tests)
    found = (SCALE,) if failing or hidden_failing else ()
    return SubmissionResult(assignment="multihead_attention", student=student, status="graded", error=None, score=score, max_score=17.0,
                            misconceptions=found, tests=tuple(tests), seed=123456789, duration=0.25,
                            isolation="process")


def errored(student="bob", error="Your file could not be loaded: SyntaxError at line 3") -> SubmissionResult:
    return SubmissionResult(assignment="multihead_attention", student=student, status="error", error=error, score=0.0, max_score=17.0)


# ---- grades.csv and results.json -----------------------------------------------------------
def test_grades_csv_has_the_contract_columns_and_one_row_per_student():
    buffer = io.StringIO()
    grades = GradesCsv(buffer)
    grades.add(graded("ann", failing=("scaled_dot_product_attention",)))
    grades.add(errored("bob"))
    rows = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    # the contract's columns first; then the checks' own score and the adjustments (grader.batch.adjustments)
    assert list(rows[0]) == ["student", "score", "max_score", "status", "misconceptions", "raw_score", "adjustments"]
    assert rows[0] == {"student": "ann", "score": "13", "max_score": "17", "status": "graded",
                       "misconceptions": SCALE, "raw_score": "13", "adjustments": ""}
    assert rows[1]["status"] == "error" and rows[1]["score"] == "0"


def test_results_json_is_a_list_of_contract_objects_that_read_back():
    buffer = io.StringIO()
    writer = ResultsJson(buffer)
    originals = [graded("ann", failing=("softmax",)), errored("bob")]
    for result in originals:
        writer.add(result)
    writer.finish()
    data = json.loads(buffer.getvalue())
    assert [SubmissionResult.from_dict(item) for item in data] == originals
    for item in data:
        assert {"student", "status", "error", "score", "max_score", "misconceptions", "tests"} <= set(item)
    empty = io.StringIO()
    ResultsJson(empty).finish()
    assert json.loads(empty.getvalue()) == []


# ---- Gradescope ----------------------------------------------------------------------------
def test_gradescope_results_carry_score_and_per_test_fields_with_hidden_checks_held_back():
    result = graded("ann", failing=("forward",), hidden_failing=True)
    data = gradescope_results(result, summary="# feedback")
    assert data["score"] == result.score == sum(test["score"] for test in data["tests"])
    assert data["output"] == "# feedback"
    for test in data["tests"]:
        assert {"name", "number", "score", "max_score", "output", "visibility", "status"} <= set(test)
    visibility = {test["name"]: test["visibility"] for test in data["tests"]}
    assert visibility[f"scaled_dot_product_attention: {check_title('test_attention_on_drawn_inputs')}"] \
        == "after_published"
    assert visibility[f"softmax: {check_title('test_softmax_values')}"] == "visible"
    failed = [test for test in data["tests"] if test["status"] == "failed"]
    assert len(failed) == 2 and all(SCALE in test["output"] for test in failed)
    assert "seed" not in json.dumps(data)


def test_gradescope_results_of_an_unloadable_submission_explain_why():
    data = gradescope_results(errored("bob"))
    assert data["score"] == 0.0
    assert data["tests"][0]["status"] == "failed" and "SyntaxError" in data["tests"][0]["output"]


# ---- JUnit ---------------------------------------------------------------------------------
def test_junit_report_parses_and_counts_failures_and_errors_per_student():
    spool, out = io.StringIO(), io.StringIO()
    report = JUnitReport(spool)
    report.add(graded("ann", failing=("softmax", "forward"), message="bad \x00\x1b[31m <value> & more"))
    report.add(errored("bob", error="could not load \x07 <script>"))
    report.finish(out, spool, name="mha grade")
    root = ElementTree.fromstring(out.getvalue().encode("utf-8"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "2", "1")
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert suites["ann"].get("failures") == "2" and suites["ann"].get("tests") == "5"
    failure = suites["ann"].find("testcase/failure")
    assert failure.get("type") == SCALE and "<value> & more" in failure.text
    assert suites["bob"].find("testcase/error").get("type") == "load-error"


# ---- feedback pages ----------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_feedback_pages_show_score_checks_and_the_mistake_in_the_chosen_language(lang):
    result = graded("ann", failing=("scaled_dot_product_attention", "forward"))
    entry = load_catalog()[SCALE]
    for page in (render_markdown(result, lang=lang), render_html(result, lang=lang)):
        assert "9 / 17" in page
        assert entry.text("title", lang) in page
        assert entry.text("hint", lang)[:20] in page.replace("&#x27;", "'")
        assert "scaled_dot_product_attention" in page and "split_heads" in page
    other = "zh" if lang == "en" else "en"
    assert entry.text("title", other) not in render_markdown(result, lang=lang)


def test_html_feedback_is_self_contained_and_escapes_what_the_student_controls():
    result = errored("eve", error="<script>alert(1)</script> raised")
    page = render_html(result, lang="en")
    assert "<script>" not in page and "&lt;script&gt;" in page
    page = render_html(graded("ann", failing=("softmax",), message="<img src=x onerror=alert(1)>"), lang="en")
    assert "<img" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page and "<script src" not in page  # self-contained: the roster's script is inline
    markdown = render_markdown(graded("ann", failing=("softmax",), message="<b>bold</b> | pipe"), lang="en")
    assert "<b>" not in markdown and "\\|" in markdown


def test_feedback_never_shows_the_hidden_seed():
    result = graded("ann", hidden_failing=True)
    for page in (render_markdown(result, lang="en"), render_html(result, lang="en")):
        assert str(result.seed) not in page
        assert "hidden check" in page


def test_hidden_check_feedback_explains_without_the_test_code_or_expected_values(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_COURSE_KEY", "test-exports-key")
    from grader.assignments.multihead_attention.cases import hidden_cases
    from grader.assignments.multihead_attention.hidden import test_drawn_inputs
    from grader.grading.grade import grade_submission
    from grader.paths import solution_path
    from grader.seeding import student_seed

    source = solution_path("multihead_attention").read_text(encoding="utf-8")
    buggy = tmp_path / "noscale.py"
    buggy.write_text(source.replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    result = grade_submission(path=buggy, visibility="hidden", student="noscale")
    assert result.status == "graded" and SCALE in result.misconceptions
    expected_numbers = set()
    for case in hidden_cases(student_seed("noscale")).values():
        values = case.expected if isinstance(case.expected, tuple) else (case.expected,)
        for array in values:
            if isinstance(array, np.ndarray):
                expected_numbers.update(f"{value:.4f}" for value in np.ravel(array)[:50] if abs(value) > 1e-3)
    hidden_code = [line.strip() for line in open(test_drawn_inputs.__file__, encoding="utf-8")
                   if line.strip().startswith(("_all(", "expect_", "for name in"))]
    assert expected_numbers and hidden_code
    for page in (render_markdown(result, lang="en"), render_html(result, lang="en")):
        assert load_catalog()[SCALE].text("explanation", "en")[:40] in page.replace("&#x27;", "'")
        assert not [number for number in expected_numbers if number in page]
        assert not [line for line in hidden_code if line in page]


def test_feedback_texts_exist_in_both_languages_with_the_same_placeholders():
    texts = FEEDBACK_TEXTS.texts()
    assert {"title", "score", "hidden_explained", "mistakes"} <= set(texts)
    for key, pair in texts.items():
        fields = [{name for _, name, _, _ in string.Formatter().parse(pair[lang]) if name} for lang in ("en", "zh")]
        assert fields[0] == fields[1], key
    assert FEEDBACK_FILE.name == "feedback.toml"


def test_a_malformed_feedback_file_names_the_file_and_key(tmp_path):
    broken = tmp_path / "feedback.toml"
    broken.write_text('schema_version = 1\n[text.title]\nen = "Hello"\n', encoding="utf-8")
    with pytest.raises(ContentError, match=r"feedback.toml: text.title lacks the zh text"):
        replace(FEEDBACK_TEXTS, path=broken).say("title", "en")


def test_a_page_text_falls_back_to_a_check_message_and_a_missing_one_names_its_file(tmp_path):
    from grader.content.loader import TextTable
    from grader.content.messages import render

    texts = tmp_path / "page.toml"
    texts.write_text('schema_version = 1\n[text.greeting]\nen = "Hello {name}"\nzh = "你好 {name}"\n',
                     encoding="utf-8")
    page = TextTable(texts, fallback=render)
    assert page.say("greeting", "zh", name="Ana") == "你好 Ana"
    assert page.say("greeting", "fr", name="Ana") == "Hello Ana"  # a language without its text reads English
    assert page.say("report_points", "en") == render("report_points", {}, "en")  # not the page's: a message
    assert page.template("greeting", "en") == "Hello {name}"
    with pytest.raises(ContentError, match=r"page.toml: no text text.nowhere"):
        TextTable(texts).say("nowhere", "en")


# ---- class report ---------------------------------------------------------------------------
def class_tally() -> ClassTally:
    tally = ClassTally()
    for index in range(6):
        tally.add(graded(f"ok{index}"))
    for index in range(3):
        tally.add(graded(f"weak{index}", failing=("scaled_dot_product_attention", "forward")))
    tally.add(errored("bob"))
    slow = graded("sam")
    timed_out = replace(slow.tests[0], outcome="timeout", score=0.0, misconception="timeout")
    tally.add(replace(slow, tests=(timed_out, *slow.tests[1:]), score=slow.score - 3.0))
    return tally


def test_class_tally_gives_pass_rates_shares_and_discrimination():
    tally = class_tally()
    assert (tally.students, tally.graded, len(tally.errored)) == (11, 10, 1)
    assert tally.timed_out == [("sam", ("softmax",))]
    attention = tally.checks["test_attention_values"]
    assert (attention.passes, attention.attempts) == (7, 10)
    assert attention.discrimination > 0.5  # the weak students fail it and score low elsewhere
    assert tally.checks["test_split_heads_shape"].discrimination is None  # everybody passed: no information
    assert tally.common_misconceptions() == [(SCALE, 3, 0.3)]


def test_report_html_has_an_inline_histogram_item_analysis_and_the_problem_submissions():
    page = render_report(class_tally(), title="demo", lang="en")
    figure = page[page.index("<svg class=histogram"):page.index("</svg>") + 6]
    assert "<img" not in page and "data:image" not in page  # drawn by the page, nothing encoded
    counts = [int(n) for n in re.findall(r"<title>\[[^<]*: (\d+)</title>", figure)]
    assert len(counts) == 17 and counts[-1] == 6 and counts[9] == 3 and counts[14] == 1  # one bin per point
    assert "Score distribution (10 graded, max 17)" in figure and ">students<" in figure and ">score<" in figure
    assert "test_attention_values" in page and "70%" in page
    assert load_catalog()[SCALE].text("title", "en") in page and "30%" in page
    assert "bob" in page and "SyntaxError" in page and "sam" in page
    assert "<link" not in page and "<script src" not in page  # self-contained: the roster's script is inline
