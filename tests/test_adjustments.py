"""`mha grade --adjust`: the adjustments file, what it does to a result, and where it shows (CSV, feedback, merge)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.batch.adjustments import apply_adjustments, read_adjustments
from grader.cli import root
from grader.errors import UsageError
from grader.paths import solution_path
from grader.results import Adjustment, SubmissionResult


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def result(score: float = 50.0, max_score: float = 60.0) -> SubmissionResult:
    return SubmissionResult(student="alice", status="graded", error=None, score=score, max_score=max_score,
                            assignment="multihead_attention")


def test_rows_are_read_in_order_per_student_with_kind_points_and_percentages(tmp_path):
    table = read_adjustments(write(tmp_path / "a.csv", "student,points,reason,kind\n"
                                   "alice,-10%,late by 1 day,late\nbob,+2.5,good notebook,\nalice,-1,typo,manual\n"))
    assert [(item.kind, item.points, item.percent) for item in table["alice"]] == [("late", 0.0, -10.0),
                                                                                    ("manual", -1.0, None)]
    assert table["bob"][0].kind == "manual" and table["bob"][0].points == 2.5


@pytest.mark.parametrize("text, says", [
    ("student,score\nalice,1\n", "student,points"),
    ("student,points,reason,colour\nalice,1,x,red\n", "unknown column"),
    ("student,points\nalice,lots\n", "line 2"),
    ("student,points,reason,kind\nalice,1,x,bonus\n", "kind"),
    ("student,points,reason,kind\nalice,5,x,extension\n", "extension"),
    ("student,points\n,1\n", "no student"),
])
def test_a_bad_file_is_a_usage_error_that_names_the_problem(tmp_path, text, says):
    with pytest.raises(UsageError, match=says):
        read_adjustments(write(tmp_path / "a.csv", text))


def test_percentages_are_of_the_maximum_an_extension_waives_late_penalties_and_the_score_stays_above_zero(tmp_path):
    table = read_adjustments(write(tmp_path / "a.csv", "student,points,reason,kind\n"
                                   "alice,-10%,late,late\nalice,+2,bonus,manual\n"))
    applied = apply_adjustments(result(), table["alice"])
    assert applied.score == 50 and applied.final_score == applied.final == 50 - 6 + 2
    assert [item.change for item in applied.adjustments] == [-6.0, 2.0]
    extended = read_adjustments(write(tmp_path / "b.csv", "student,points,reason,kind\n"
                                      "alice,-10%,late,late\nalice,0,doctor's note,extension\n"))
    waived = apply_adjustments(result(), extended["alice"])
    assert waived.final_score == 50 and waived.adjustments[0].waived
    assert apply_adjustments(result(score=3), [Adjustment(kind="manual", points=-10)]).final_score == 0
    again = apply_adjustments(applied, applied.adjustments)  # applying what a result carries is stable
    assert again == applied
    assert SubmissionResult.from_dict(json.loads(json.dumps(applied.to_dict()))) == applied  # JSON at the file only
    assert applied.to_dict()["adjustments"][0] == {"kind": "late", "reason": "late", "points": 0.0, "percent": -10.0,
                                                   "change": -6.0, "waived": False}


@pytest.fixture
def graded_class(tmp_path) -> dict:
    folder = tmp_path / "class"
    folder.mkdir()
    reference = solution_path("multihead_attention").read_text(encoding="utf-8")
    (folder / "ann.py").write_text(reference, encoding="utf-8")
    (folder / "ben.py").write_text(reference.replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    adjust = write(tmp_path / "adjust.csv", "student,points,reason,kind\nann,-10%,late by 2 days,late\n"
                                            "ben,+1,clear comments,manual\nzoe,+5,not in this class,manual\n")
    return {"class": folder, "adjust": adjust, "tmp": tmp_path}


def rows(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_grade_with_adjust_keeps_raw_and_final_scores_and_explains_them(graded_class):
    out = graded_class["tmp"] / "out"
    done = CliRunner().invoke(root, ["grade", str(graded_class["class"]), "--out", str(out),
                                     "--adjust", str(graded_class["adjust"]), "--format", "gradescope"])
    assert done.exit_code == 0, done.output
    assert "zoe" in done.output and "not in the class" in done.output
    grades = rows(out)
    assert (grades["ann"]["score"], grades["ann"]["raw_score"]) == ("54", "60")
    assert "late -6: late by 2 days" in grades["ann"]["adjustments"]
    assert float(grades["ben"]["score"]) == float(grades["ben"]["raw_score"]) + 1
    results = {r["student"]: r for r in json.loads((out / "results.json").read_text(encoding="utf-8"))}
    assert results["ann"]["score"] == 60 and results["ann"]["final_score"] == 54
    assert sum(test["score"] for test in results["ann"]["tests"]) == results["ann"]["score"]
    feedback = (out / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert "late by 2 days" in feedback and "Final score: 54 / 60" in feedback
    assert "late by 2 days" in (out / "feedback" / "ann.html").read_text(encoding="utf-8")
    assert json.loads((out / "gradescope" / "ann" / "results.json").read_text(encoding="utf-8"))["score"] == 54

    resumed = CliRunner().invoke(root, ["grade", str(graded_class["class"]), "--out", str(out), "--resume"])
    assert resumed.exit_code == 0 and rows(out)["ann"]["score"] == "54", "--resume keeps the run's adjustments"

    merged = graded_class["tmp"] / "merged"
    assert CliRunner().invoke(root, ["merge", str(out), "--out", str(merged)]).exit_code == 0
    assert rows(merged)["ann"]["score"] == "54", "a merge carries the adjustments of its runs"
    replaced = graded_class["tmp"] / "replaced"
    other = write(graded_class["tmp"] / "other.csv", "student,points,reason\nben,-2,late\n")
    assert CliRunner().invoke(root, ["merge", str(out), "--out", str(replaced), "--adjust", str(other)]).exit_code == 0
    assert rows(replaced)["ann"]["score"] == "60" and float(rows(replaced)["ben"]["score"]) == \
        float(rows(replaced)["ben"]["raw_score"]) - 2


def test_feedback_shows_adjustments_in_chinese(graded_class):
    out = graded_class["tmp"] / "zh"
    done = CliRunner().invoke(root, ["grade", str(graded_class["class"]), "--out", str(out), "--lang", "zh",
                                     "--adjust", str(graded_class["adjust"])])
    assert done.exit_code == 0, done.output
    page = (out / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert "评分后的调整" in page and "迟交扣分" in page and "最终得分：54 / 60" in page
