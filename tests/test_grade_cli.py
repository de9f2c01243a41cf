"""`mha grade` and `mha merge` through the CLI: a mixed class, shards, languages, errors."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import require
from grader.cli import root
from grader.paths import PROJECT_DIR, solution_path
from grader.verbs.grade import make_progress

DEMO = PROJECT_DIR / "examples" / "demo_class"
KEY = "test-grade-cli-key"


@pytest.fixture(autouse=True)
def course_key(monkeypatch):
    monkeypatch.setenv("MHA_COURSE_KEY", KEY)


def reference_text() -> str:
    return solution_path("multihead_attention").read_text(encoding="utf-8")


@pytest.fixture
def small_class(tmp_path) -> Path:
    """Three students: right, no scale (a catalogued mistake), and one that does not parse."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ann.py").write_text(reference_text(), encoding="utf-8")
    (folder / "ben.py").write_text(reference_text().replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    (folder / "cat.py").write_text("def softmax(x)\n    return x\n", encoding="utf-8")
    return folder


def read_results(out: Path) -> dict[str, dict]:
    return {result["student"]: result for result in json.loads((out / "results.json").read_text(encoding="utf-8"))}


def scores(out: Path) -> dict[str, tuple]:
    return {student: (r["score"], r["status"], tuple(r["misconceptions"])) for student, r in read_results(out).items()}


def grade(*args: str) -> object:
    return CliRunner().invoke(root, ["grade", *map(str, args)])


# ---- help ----------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", ["grade", "merge"])
def test_help_of_each_verb_names_its_options(verb):
    result = CliRunner().invoke(root, [verb, "--help"])
    assert result.exit_code == 0
    assert "--out" in result.output and "--format" in result.output
    if verb == "grade":
        for option in ("--jobs", "--timeout", "--resume", "--shard", "--lang", "--visibility", "--assignment"):
            assert option in result.output


# ---- a small class through CliRunner -----------------------------------------------------------
def test_grade_writes_every_output_and_exits_0_whatever_the_scores(small_class, tmp_path):
    out = tmp_path / "out"
    result = grade(small_class, "--out", out, "--jobs", "2", "--format", "junit", "--format", "gradescope")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert [row["student"] for row in rows] == ["ann", "ben", "cat"]
    by_student = {row["student"]: row for row in rows}
    assert by_student["ann"]["score"] == by_student["ann"]["max_score"]
    assert by_student["ben"]["misconceptions"] == "attention-no-scale"
    assert by_student["cat"]["status"] == "error" and by_student["cat"]["score"] == "0"
    for student in ("ann", "ben", "cat"):
        assert (out / "feedback" / f"{student}.md").is_file() and (out / "feedback" / f"{student}.html").is_file()
        assert json.loads((out / "gradescope" / student / "results.json").read_text())["score"] == \
            float(by_student[student]["score"])
    assert (out / "junit.xml").read_text().startswith("<?xml") and (out / "report.html").is_file()
    assert "[3/3]" in result.output and "most common misconceptions" in result.output
    assert "attention-no-scale" in result.output and "error   cat" in result.output


def test_feedback_pages_and_gradescope_show_the_public_fixtures_rows_as_the_terminal_does(small_class, tmp_path):
    """A failing public check of a graded run shows the expected-against-returned rows of the shipped fixture
    (what `mha check` shows the student); a hidden check shows none of its values."""
    out = tmp_path / "out"
    assert grade(small_class, "--out", out, "--format", "gradescope").exit_code == 0
    check = CliRunner().invoke(root, ["check", str(small_class / "ben.py"), "--function",
                                      "scaled_dot_product_attention"])
    terminal_rows = [line.strip() for line in check.output.splitlines() if line.strip().startswith(("expected ", "yours "))]
    assert terminal_rows, check.output
    page = (out / "feedback" / "ben.md").read_text(encoding="utf-8")
    html = (out / "feedback" / "ben.html").read_text(encoding="utf-8")
    tests = json.loads((out / "gradescope" / "ben" / "results.json").read_text(encoding="utf-8"))["tests"]
    from grader.content.messages import check_title

    public = next(test["output"] for test in tests if test["name"].endswith(check_title("test_attention_values")))
    for row in terminal_rows[:2]:
        assert row in page and row in public, row
        assert row.replace(">", "&gt;").split(" = ")[0] in html
    hidden = [test["output"] for test in tests if test["visibility"] == "after_published" and test["status"] == "failed"]
    assert hidden and not any("expected " in text or "yours " in text for text in hidden)


def test_grading_again_gives_the_same_scores_and_hidden_inputs(small_class, tmp_path):
    assert grade(small_class, "--out", tmp_path / "first").exit_code == 0
    assert grade(small_class, "--out", tmp_path / "second", "--jobs", "1").exit_code == 0
    first, second = read_results(tmp_path / "first"), read_results(tmp_path / "second")
    assert scores(tmp_path / "first") == scores(tmp_path / "second")
    assert first["ann"]["seed"] == second["ann"]["seed"] != first["ben"]["seed"]


def test_shards_merged_equal_one_full_run(small_class, tmp_path):
    assert grade(small_class, "--out", tmp_path / "full").exit_code == 0
    for index in (1, 2):
        assert grade(small_class, "--out", tmp_path / f"part{index}", "--shard", f"{index}/2").exit_code == 0
    assert len(read_results(tmp_path / "part1")) == 2 and len(read_results(tmp_path / "part2")) == 1
    merged = CliRunner().invoke(root, ["merge", str(tmp_path / "part1"), str(tmp_path / "part2"),
                                       "--out", str(tmp_path / "merged"), "--format", "junit"])
    assert merged.exit_code == 0, merged.output
    assert scores(tmp_path / "merged") == scores(tmp_path / "full")
    assert (tmp_path / "merged" / "grades.csv").read_text() == (tmp_path / "full" / "grades.csv").read_text()
    assert (tmp_path / "merged" / "feedback" / "ben.html").is_file() and (tmp_path / "merged" / "junit.xml").is_file()
    partial = CliRunner().invoke(root, ["merge", str(tmp_path / "part1"), "--out", str(tmp_path / "partial")])
    assert partial.exit_code == 0 and "missing shards: 2/2" in partial.output
    twice = CliRunner().invoke(root, ["merge", str(tmp_path / "part1"), str(tmp_path / "full"),
                                      "--out", str(tmp_path / "twice")])
    assert twice.exit_code == 2 and "graded in both" in twice.output


def test_feedback_in_chinese_with_lang_zh(small_class, tmp_path):
    assert grade(small_class, "--out", tmp_path / "out", "--lang", "zh").exit_code == 0
    page = (tmp_path / "out" / "feedback" / "ben.md").read_text(encoding="utf-8")
    from grader.content.catalog import load_catalog

    assert "得分" in page and load_catalog()["attention-no-scale"].text("title", "zh") in page
    assert "Score:" not in page
    assert '<html lang=\'zh-Hans\'>' in (tmp_path / "out" / "feedback" / "ben.html").read_text(encoding="utf-8")


def test_usage_errors_exit_2_with_a_message(small_class, tmp_path):
    bad_shard = grade(small_class, "--out", tmp_path / "out", "--shard", "3/2")
    assert bad_shard.exit_code == 2 and "K must be between 1 and N" in bad_shard.output
    inside = grade(small_class, "--out", small_class / "out")
    assert inside.exit_code == 2 and "inside" in inside.output
    assert grade(small_class, "--out", tmp_path / "out", "--visibility", "public").exit_code == 0
    other_run = grade(small_class, "--out", tmp_path / "out", "--resume")
    assert other_run.exit_code == 2 and "visibility" in other_run.output
    missing = CliRunner().invoke(root, ["merge", str(small_class), "--out", str(tmp_path / "merged")])
    assert missing.exit_code == 2 and "results.json" in missing.output


def test_progress_is_plain_lines_when_not_on_a_terminal():
    assert type(make_progress()).__name__ == "LineProgress"


# ---- the demo class through the installed command ------------------------------------------------
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    require(shutil.which("mha") is not None, "the mha command is not installed (pip install -e .)")
    out = tmp_path_factory.mktemp("demo") / "out"
    environment = dict(os.environ, MHA_COURSE_KEY=KEY)
    completed = subprocess.run(["mha", "grade", str(DEMO), "--out", str(out), "--timeout", "3", "--jobs", "2",
                                "--format", "gradescope", "--format", "junit"],
                               capture_output=True, text=True, timeout=300, env=environment)
    return completed, out


@pytest.mark.slow
def test_mixed_class_through_the_installed_command(demo_run):
    completed, out = demo_run
    assert completed.returncode == 0, completed.stderr
    results = read_results(out)
    assert len(results) == 13
    full = results["amara_einsum"]["max_score"]
    for correct in ("amara_einsum", "bilal_loops", "chen_float32", "dmitri_swapaxes", "esi_tensordot"):
        assert results[correct]["score"] == full, (correct, results[correct]["misconceptions"])
    expected = {
        "fatima_unstable": "softmax-unstable",
        "gabriel": "split-heads-no-transpose",
        "hiro_no_scale": "attention-no-scale",
        "ines": "softmax-global-max",
        "lucia_wrong_axis": "softmax-wrong-axis",
        "mateo_in_place": "softmax-mutates-input",
    }
    for student, misconception in expected.items():
        assert misconception in results[student]["misconceptions"], (student, results[student]["misconceptions"])
        assert 0 < results[student]["score"] < full
    assert results["jonas_syntax_error"]["status"] == "error" and "SyntaxError" in results["jonas_syntax_error"]["error"]
    loop = results["kemal_infinite_loop"]
    assert loop["status"] == "graded" and loop["score"] < full
    assert any(test["outcome"] == "timeout" and test["function"] == "forward" for test in loop["tests"])
    assert any("%matplotlib" in note for note in results["ines"]["notes"])
    assert results["ines"]["submission"] == "ines/multihead_attention/multihead_attention.ipynb"


@pytest.mark.slow
def test_mixed_class_outputs_and_summary(demo_run):
    completed, out = demo_run
    for student in ("amara_einsum", "ines", "jonas_syntax_error"):
        assert (out / "feedback" / f"{student}.html").is_file()
        assert (out / "gradescope" / student / "results.json").is_file()
    assert "skipped \\`%matplotlib inline\\`" in (out / "feedback" / "ines.md").read_text(encoding="utf-8")
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<svg class=histogram" in report and "jonas_syntax_error" in report and "kemal_infinite_loop" in report
    assert "Graded 13 submissions" in completed.stdout
    assert "timeout kemal_infinite_loop" in completed.stdout and "error   jonas_syntax_error" in completed.stdout
    assert "isolation:" in completed.stdout


def test_the_progress_bar_counts_every_result(capsys):
    from grader.render.summary import BarProgress
    from grader.results import SubmissionResult

    bar = BarProgress()
    bar.begin(3, 1)
    bar.advance(SubmissionResult(student="ann", status="graded", error=None, score=60.0, max_score=60.0,
                                 assignment="multihead_attention"))
    task = bar.progress.tasks[0]
    assert (task.completed, task.total) == (2, 3) and "ann: 60/60" in task.description
    bar.end()


# ---- one file alone; who may read the outputs ------------------------------------------------
def test_one_file_alone_is_graded_as_a_class_of_one(small_class, tmp_path):
    done = grade(small_class / "ben.py", "--out", tmp_path / "one")
    assert done.exit_code == 0, done.output
    results = read_results(tmp_path / "one")
    assert list(results) == ["ben"] and results["ben"]["submission"] == "ben.py"
    assert results["ben"]["score"] == scores_of_class(small_class, tmp_path)["ben"][0]
    assert (tmp_path / "one" / "feedback" / "ben.html").is_file()
    inside = grade(small_class / "ann.py", "--out", small_class / "out-beside")  # beside the file is fine
    assert inside.exit_code == 0, inside.output
    not_code = small_class / "notes.txt"
    not_code.write_text("hello", encoding="utf-8")
    refused = grade(not_code, "--out", tmp_path / "txt")
    assert refused.exit_code == 2 and ".py or .ipynb" in refused.output


def scores_of_class(folder: Path, tmp_path: Path) -> dict[str, tuple]:
    assert grade(folder, "--out", tmp_path / "whole").exit_code == 0
    return scores(tmp_path / "whole")


@pytest.mark.parametrize("umask, mode", [(0o022, 0o640), (0o002, 0o640), (0o077, 0o600)])
def test_outputs_are_readable_by_the_group_as_far_as_the_umask_allows(small_class, tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        assert grade(small_class / "ann.py", "--out", tmp_path / "out").exit_code == 0
    finally:
        os.umask(previous)
    out = tmp_path / "out"
    for path in (out / "grades.csv", out / "results.json", out / "report.html", out / "feedback" / "ann.html"):
        assert path.stat().st_mode & 0o777 == mode, path
