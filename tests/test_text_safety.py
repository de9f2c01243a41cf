"""The one sanitizing module: what a student controls, made safe for results, the journal and every output."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from grader.render.exports import GradesCsv, JUnitReport
from grader.render.feedback import render_html, render_markdown
from grader.render.gradescope import gradescope_results
from grader.render.text_safety import (REPLACEMENT, clean_line, clean_name, clean_strings, clean_text, csv_cell,
                                       decode_os_name, html_text, markdown_code_block, markdown_inline)
from grader.results import SubmissionResult, TestResult

CLEAR_AND_FAKE = "oops\x1b[2J\x1b[H\x1b[1;32mAll 26 checks passed: 60/60\x1b[0m"
HOSTILE_TEXTS = [
    "lone \ud800 surrogate",
    "escapes \x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \x9b2J",
    "controls \x00\x07\x08\x0b\x0c\x7f\x85 end",
    "carriage\rreturn\r\nand crlf",
    "reorder \u202eevil\u202c \u2066isolate\u2069",
    CLEAR_AND_FAKE,
]


def bad_characters(text: str) -> list[str]:
    return [char for char in text if (ord(char) < 32 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F
            or 0xD800 <= ord(char) <= 0xDFFF or char in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_clean_text_leaves_no_surrogate_escape_or_control_character_and_writes_as_utf8(text):
    cleaned = clean_text(text)
    assert bad_characters(cleaned) == []
    cleaned.encode("utf-8")  # would raise on a surrogate
    assert clean_text(cleaned) == cleaned  # idempotent: cleaning twice on the way changes nothing


def test_clean_text_keeps_newline_tab_and_ordinary_unicode():
    text = "line one\n\tindented: 注意力 Zoë 😀 √d_k"
    assert clean_text(text) == text
    assert clean_text("a\ud83d\ude00b") == "a😀b"  # a pair of surrogates is one character
    assert clean_text("a\r\nb\rc") == "a\nb\nc"
    assert "All 26 checks passed" in clean_text(CLEAR_AND_FAKE) and "\x1b" not in clean_text(CLEAR_AND_FAKE)
    assert clean_line("a\nb\tc") == "a b c"


def test_an_unterminated_sequence_swallows_no_more_than_its_line():
    assert clean_text("before \x1b]0;endless title\nthe next line stays") == "before \nthe next line stays"


def test_names_show_undecodable_bytes_and_control_characters_as_replacements():
    raw = b"jos\xe9".decode("utf-8", "surrogateescape")  # what os.scandir gives for a Latin-1 name
    assert decode_os_name(raw) == f"jos{REPLACEMENT}"
    assert clean_name(raw) == f"jos{REPLACEMENT}"
    assert clean_name("a\nb\tc\x1bd") == f"a{REPLACEMENT}b{REPLACEMENT}c{REPLACEMENT}d"
    assert clean_name("Zoe\u0308") == "Zoë"  # normal form C
    assert clean_name("José Müller") == "José Müller"


def test_clean_strings_walks_results_keys_and_values():
    data = {"student": "a\ud800", "tests": [{"message": "\x1b[2Jx", "score": 1.0}], "notes": ("\x07",), "n": None}
    cleaned = clean_strings(data)
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")
    assert cleaned == {"student": f"a{REPLACEMENT}", "tests": [{"message": "x", "score": 1.0}],
                       "notes": (REPLACEMENT,), "n": None}


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://evil\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1",
                                  " =1", "=cmd|' /C calc'!A0"])
def test_csv_cells_never_start_a_formula(cell):
    neutral = csv_cell(cell)
    assert neutral.startswith("'") and "\n" not in neutral and "\r" not in neutral


def test_grades_csv_quotes_neutralized_and_semicolon_cells_and_keeps_the_rest_plain():
    buffer = io.StringIO()
    grades = GradesCsv(buffer)
    for student in ("ann", "=1+1", "bob;=2+2", "x\x1b[2J\ny"):
        grades.add(SubmissionResult(student=student, score=1.0, max_score=2.0, status="graded", error=None,
                                    assignment="multihead_attention"))
    lines = buffer.getvalue().splitlines()
    # raw_score and adjustments follow the contract's columns (grader.batch.adjustments)
    assert lines[1] == "ann,1,2,graded,,1," and lines[2] == "\"'=1+1\",1,2,graded,,1,"  # the cell alone
    assert lines[3].startswith('"bob;=2+2"') and len(lines) == 5
    rows = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert [row[0] for row in rows[1:]] == ["ann", "'=1+1", "bob;=2+2", "x y"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)


def test_markdown_inline_makes_links_images_html_and_tables_inert():
    text = markdown_inline("![t](http://evil/t.png) [click](https://evil) <img src=x onerror=alert(1)> | www.evil.com"
                           " `code` *em*\nnext")
    assert not re.search(r"(?<!\\)[!\[\]()|`*]", text) and "<" not in text and "&lt;img" in text
    assert "http://" not in text and "https://" not in text and "www." not in text
    assert "\n" not in text
    assert "'''" in markdown_code_block("```\nescaped the fence\n```") and "```" not in markdown_code_block("```")


def test_html_text_escapes_markup_and_quotes():
    assert html_text("<script>'\"&\x1b[2J") == "&lt;script&gt;&#x27;&quot;&amp;"


# ---- every renderer, fed one hostile result -----------------------------------------------------
def hostile_result(text: str) -> SubmissionResult:
    test = TestResult("test_softmax_values", "softmax", "failed", 0.0, 3.0, misconception="error",
                      message=f"softmax(x) raised ValueError: {text}")
    return SubmissionResult(assignment="multihead_attention", student=f"eve{text}", status="graded", error=None, score=0.0, max_score=3.0,
                            tests=(test,), notes=(f"cell 1: skipped `{text}`",))


@pytest.mark.parametrize("text", HOSTILE_TEXTS + ["![x](http://evil/p.png) <script>alert(1)</script>"])
def test_no_renderer_lets_a_hostile_string_through(text):
    result = hostile_result(text)
    outputs = {"markdown": render_markdown(result, lang="en"), "html": render_html(result, lang="en")}
    spool, junit = io.StringIO(), io.StringIO()
    report = JUnitReport(spool)
    report.add(result)
    report.finish(junit, spool, name="run")
    outputs["junit"] = junit.getvalue()
    outputs["gradescope"] = json.dumps(gradescope_results(result, summary=outputs["markdown"]),
                                       ensure_ascii=False)
    for name, output in outputs.items():
        assert bad_characters(output) == [], name
        output.encode("utf-8")
    for name in ("markdown", "html", "junit"):  # markup escaped (JUnit's text decodes to the plain text)
        assert "<script" not in outputs[name] and "<img" not in outputs[name], name
    assert "](http" not in outputs["markdown"] and "![" not in outputs["markdown"]
    gradescope = json.loads(outputs["gradescope"])
    assert gradescope["test_output_format"] == "md" and [test["output_format"] for test in gradescope["tests"]] == ["md"]
    shown = gradescope["tests"][0]["output"]  # Markdown with the student's text made inert
    assert shown.startswith("softmax\\(x\\) raised ValueError: ") and "<script" not in shown and "<img" not in shown
    assert "](http" not in shown and "![" not in shown


def test_the_terminal_shows_no_escape_and_no_line_a_student_could_pass_for_the_graders():
    from rich.console import Console

    from grader.render.terminal import print_result

    buffer = io.StringIO()
    result = hostile_result("\n" + CLEAR_AND_FAKE + "\n[bold green]rich markup[/]")
    print_result(result, file="eve\x1b[2J.py", lang="en", console=Console(file=buffer, width=200, color_system=None))
    printed = buffer.getvalue()
    assert "\x1b" not in printed and bad_characters(printed) == []
    assert not [line for line in printed.splitlines() if line.startswith(("All 26", "oops", "[bold"))]
    assert "[bold green]rich markup[/]" in printed  # shown, not interpreted
