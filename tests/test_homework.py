"""Quiz answers files graded in the same `mha grade` batch as code."""

import json
import shutil

import pytest
from click.testing import CliRunner

from conftest import PROJECT
from grader.cli import root
from grader.practice.homework import parse_points
from grader.errors import UsageError
from grader.practice.answers import expected_text
from grader.practice.sheets import make_sheet, read_answers

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


def answered_file(tmp_path, student, *, right):
    """Write ``student``'s sheet and fill its answers file: the first ``right`` answers correct, then wrong."""
    out = tmp_path / "sheets" / f"{student}.md"
    assert CliRunner().invoke(root, ["quiz", "--sheet", student, "--out", str(out), "--count", "4"]).exit_code == 0
    answers_path = out.with_name(f"{student}.answers.toml")
    header = read_answers(answers_path)
    sheet = make_sheet(student=student, count=header["count"], topics=header["topics"], levels=header["levels"])
    lines = ["schema_version = 1", f'student = "{student}"', f"count = {header['count']}", "topics = []",
             "levels = []", "", "[answers]"]
    for index, posed in enumerate(sheet.questions):
        given = expected_text(posed, "en") if index < right else "definitely not this"
        lines.append(f'{json.dumps(posed.id)} = {json.dumps(given)}')
    answers_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return answers_path, len(sheet.questions)


def test_answers_beside_the_code_are_graded_with_it(tmp_path):
    submissions = tmp_path / "class"
    (submissions / "bob").mkdir(parents=True)
    shutil.copy(REFERENCE, submissions / "alice.py")
    shutil.copy(REFERENCE, submissions / "bob" / "multihead_attention.py")
    alice_answers, count = answered_file(tmp_path, "alice", right=3)
    shutil.copy(alice_answers, submissions / "alice.answers.toml")
    bob_answers, _ = answered_file(tmp_path, "bob", right=1)
    shutil.copy(bob_answers, submissions / "bob" / "answers.toml")
    result = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out"), "--jobs", "1",
                                       "--quiz-points", "2"])
    assert result.exit_code == 0, result.output
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    for student, right in (("alice", 3), ("bob", 1)):
        quiz = [t for t in results[student]["tests"] if t["function"] == "quiz"]
        code = [t for t in results[student]["tests"] if t["function"] != "quiz"]
        assert len(quiz) == count
        assert sum(t["outcome"] == "passed" for t in quiz) == right
        assert results[student]["score"] == pytest.approx(sum(t["score"] for t in code) + 2 * right)
        assert results[student]["max_score"] == pytest.approx(sum(t["max_score"] for t in code) + 2 * count)
    written = [path for path in (tmp_path / "out").rglob("*") if path.is_file()]
    assert written and not any(b"test-course-key" in path.read_bytes() for path in written)


def test_lanes_use_the_key_of_the_run_not_their_own_environment(tmp_path, monkeypatch):
    from grader.batch.lanes import grade_task
    from grader.batch.settings import GradingRun, Task
    from grader.seeding import student_seed

    task = Task(student="alice", path=REFERENCE, submission="alice.py", course_key="key-of-the-run",
                run=GradingRun(submissions=tmp_path, out=tmp_path / "out"))
    monkeypatch.setenv("MHA_COURSE_KEY", "some-older-key")
    assert grade_task(task)["seed"] == student_seed("alice", key="key-of-the-run")


def test_points_per_level_and_bad_points():
    assert parse_points("basic=1, advanced=3") == {"basic": 1.0, "advanced": 3.0}
    assert parse_points(None) == 1.0
    with pytest.raises(UsageError):
        parse_points("expert=5")
