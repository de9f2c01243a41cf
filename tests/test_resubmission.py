"""A resubmission is regraded: `mha grade --resume` grades again every submission whose content changed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.paths import solution_path

BUGGY = ("/ np.sqrt(d_k)", "")  # attention without its scale


def reference() -> str:
    return solution_path("multihead_attention").read_text(encoding="utf-8")


def grade(folder: Path, out: Path, *extra: str):
    done = CliRunner().invoke(root, ["grade", str(folder), "--out", str(out), "--jobs", "2", *extra])
    assert done.exit_code == 0, done.output
    return done


def scores(out: Path) -> dict[str, float]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len({row["student"] for row in rows}), "one row per student"
    return {row["student"]: float(row["score"]) for row in rows}


@pytest.fixture
def graded_class(tmp_path) -> tuple[Path, Path, dict[str, float]]:
    folder = tmp_path / "class"
    folder.mkdir()
    buggy = reference().replace(*BUGGY)
    for student in ("ann", "bo", "cy"):
        (folder / f"{student}.py").write_text(buggy, encoding="utf-8")
    (folder / "dee").mkdir()
    (folder / "dee" / "multihead_attention.py").write_text(reference(), encoding="utf-8")
    out = tmp_path / "out"
    grade(folder, out)
    first = scores(out)
    assert first["dee"] > first["ann"] == first["bo"] == first["cy"]
    return folder, out, first


def test_resume_regrades_the_changed_submissions_and_keeps_the_rest(graded_class):
    folder, out, first = graded_class
    kept = (out / "journal" / "done").glob("*.json")
    unchanged = {path.name: path.read_bytes() for path in kept if "dee" in path.name}
    (folder / "ann.py").write_text(reference(), encoding="utf-8")  # fixed
    (folder / "bo.py").write_text(reference() + "\n# tidied\n", encoding="utf-8")  # fixed, one line more
    (folder / "cy.py").write_text(reference().replace(*BUGGY) + "\n", encoding="utf-8")  # still buggy, changed
    done = grade(folder, out, "--resume")
    assert "3 changed since the last run: regraded." in done.output
    assert "1 kept from the earlier run" in done.output
    second = scores(out)
    assert set(second) == {"ann", "bo", "cy", "dee"}
    assert second["ann"] == second["bo"] == second["dee"] == first["dee"]
    assert second["cy"] == first["cy"]
    for name, data in unchanged.items():  # the unchanged result was kept as it was, not graded again
        assert (out / "journal" / "done" / name).read_bytes() == data
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert sorted(result["student"] for result in results) == ["ann", "bo", "cy", "dee"]

    again = grade(folder, out, "--resume")  # nothing changed since: nothing is graded
    assert "changed since the last run" not in again.output and "nothing new to grade" in again.output
    assert scores(out) == second


def test_a_changed_quiz_answers_file_or_a_fixed_refusal_counts_as_a_change(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ann.py").write_text(reference(), encoding="utf-8")
    (folder / "bo.py").write_bytes(b"")  # refused: an empty file
    out = tmp_path / "out"
    grade(folder, out)
    assert scores(out)["bo"] == 0
    (folder / "bo.py").write_text(reference(), encoding="utf-8")
    done = grade(folder, out, "--resume")
    assert "1 changed since the last run: regraded." in done.output
    assert scores(out)["bo"] == scores(out)["ann"] > 0


def test_the_summary_says_it_in_chinese_and_overwrite_still_grades_everything_afresh(graded_class, tmp_path):
    folder, _, _ = graded_class
    out = tmp_path / "zh"
    grade(folder, out, "--lang", "zh")
    (folder / "ann.py").write_text(reference(), encoding="utf-8")
    done = grade(folder, out, "--resume", "--lang", "zh")
    assert "1 份自上次评分后有改动：已重新评分。" in done.output
    fresh = grade(folder, out, "--overwrite", "--lang", "zh")
    assert "有改动" not in fresh.output  # --overwrite moves the run aside and grades all four afresh
    assert len(list((out / "previous").iterdir())) == 1 and len(scores(out)) == 4
