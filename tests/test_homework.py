"""Quiz answers files graded in the same `mha grade` batch as code."""

import json
import shutil
from datetime import datetime

import pytest
from click.testing import CliRunner

from conftest import PROJECT
from grader.cli import root
from grader.errors import UsageError
from grader.practice.answers import expected_text
from grader.practice.homework import parse_points, quiz_policy
from grader.practice.sheets import make_sheet, read_answers

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


def answered_file(tmp_path, student, *, right):
    """Write ``student``'s sheet and fill its answers file: the first ``right`` answers correct, then wrong."""
    out = tmp_path / "sheets" / f"{student}.md"
    assert CliRunner().invoke(root, ["quiz", "--sheet", student, "--out", str(out), "--count", "4"]).exit_code == 0
    answers_path = out.with_name(f"{student}.answers.toml")
    header = read_answers(answers_path)
    sheet = make_sheet(student=student, count=header["count"])
    lines = ["schema_version = 1", f'student = "{student}"', f"count = {header['count']}", "topics = []",
             "levels = []", "", "[answers]"]
    for index, posed in enumerate(sheet.questions):
        given = expected_text(posed, "en") if index < right else "definitely not this"
        lines.append(f'{json.dumps(posed.id)} = {json.dumps(given)}')
    answers_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return answers_path, len(sheet.questions)


def quiz_tests(result: dict) -> list[dict]:
    return [test for test in result["tests"] if test["function"] == "quiz"]


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
                                       "--quiz-points", "2", "--quiz-count", "4"])
    assert result.exit_code == 0, result.output
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    for student, right in (("alice", 3), ("bob", 1)):
        quiz = quiz_tests(results[student])
        code = [t for t in results[student]["tests"] if t["function"] != "quiz"]
        assert len(quiz) == count
        assert sum(t["outcome"] == "passed" for t in quiz) == right
        assert results[student]["score"] == pytest.approx(sum(t["score"] for t in code) + 2 * right)
        assert results[student]["max_score"] == pytest.approx(sum(t["max_score"] for t in code) + 2 * count)
    written = [path for path in (tmp_path / "out").rglob("*") if path.is_file()]
    assert written and not any(b"test-course-key" in path.read_bytes() for path in written)


def expected_answers(student: str, count: int) -> list[str]:
    return [expected_text(posed, "en") for posed in make_sheet(student=student, count=count).questions]


def test_expected_answers_are_shown_only_when_the_instructor_releases_them(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(REFERENCE, submissions / "alice.py")
    answers, count = answered_file(tmp_path, "alice", right=0)
    shutil.copy(answers, submissions / "alice.answers.toml")
    secret = [text for text in expected_answers("alice", count) if len(text) > 3]
    assert secret
    for options, shown in (([], False), (["--show-answers"], True), (["--quiz-due", "2000-01-01"], True),
                           (["--quiz-due", "2999-01-01"], False)):
        out = tmp_path / f"out{len(options)}{shown}"
        done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(out), "--jobs", "1",
                                         "--quiz-count", str(count), *options])
        assert done.exit_code == 0, done.output
        pages = (out / "feedback" / "alice.md").read_text(encoding="utf-8") + (out / "results.json").read_text()
        assert any(f"expected {text}" in pages for text in secret) is shown, options


def test_the_sheet_is_the_instructors_and_a_missing_answers_file_scores_zero_of_it(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    for student in ("alice", "carl", "dora"):
        shutil.copy(REFERENCE, submissions / f"{student}.py")
    easy = make_sheet(student="alice", count=1)
    (submissions / "alice.answers.toml").write_text(  # a forged header: fewer, easier questions
        "schema_version = 1\ncount = 0\nlevels = [\"basic\"]\n\n[answers]\n"
        + "".join(f"{json.dumps(posed.id)} = {json.dumps(expected_text(posed, 'en'))}\n" for posed in easy.questions),
        encoding="utf-8")
    (submissions / "dora.answers.toml").write_text("not toml at all [[[", encoding="utf-8")
    done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / "out"), "--jobs", "1",
                                     "--quiz-points", "1"])
    assert done.exit_code == 0, done.output
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert len({result["max_score"] for result in results.values()}) == 1  # the same sheet size for everyone
    code = sum(t["max_score"] for t in results["carl"]["tests"] if t["function"] != "quiz")
    assert results["carl"]["max_score"] == code + 10  # the default sheet of 10 questions
    assert len(quiz_tests(results["alice"])) == 10 and results["alice"]["score"] <= code + 1
    assert {t["outcome"] for t in quiz_tests(results["carl"])} == {"failed"}
    assert any("no quiz answers file" in note for note in results["carl"]["notes"])
    assert quiz_tests(results["dora"])[0]["outcome"] == "error" and quiz_tests(results["dora"])[0]["max_score"] == 10


def test_lanes_use_the_key_of_the_run_not_their_own_environment(tmp_path, monkeypatch):
    from grader.batch.lanes import grade_task
    from grader.batch.settings import GradingRun, Task
    from grader.seeding import student_seed

    task = Task(student="alice", path=REFERENCE, submission="alice.py", course_key="key-of-the-run",
                run=GradingRun(submissions=tmp_path, out=tmp_path / "out"))
    monkeypatch.setenv("MHA_COURSE_KEY", "some-older-key")
    assert grade_task(task).seed == student_seed("alice", key="key-of-the-run")


def test_points_per_level_and_bad_points():
    assert parse_points("basic=1, advanced=3") == {"basic": 1.0, "advanced": 3.0}
    assert parse_points(None) == 1.0
    for bad in ("expert=5", "-1", "basic=-2", "nan"):
        with pytest.raises(UsageError):
            parse_points(bad)


def _grade(tmp_path, submissions, *options, out="out"):
    done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / out), "--jobs", "1", *options])
    assert done.exit_code == 0, done.output
    return {r["student"]: r for r in json.loads((tmp_path / out / "results.json").read_text())}


def test_one_students_answers_file_changes_no_score_without_a_quiz_option(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    for student in ("alice", "bob", "carol"):
        shutil.copy(REFERENCE, submissions / f"{student}.py")
    answers, _ = answered_file(tmp_path, "carol", right=4)
    shutil.copy(answers, submissions / "carol.answers.toml")
    results = _grade(tmp_path, submissions)
    code = sum(t["max_score"] for t in results["alice"]["tests"])
    assert {result["max_score"] for result in results.values()} == {code}  # nobody's maximum moved
    assert not any(quiz_tests(result) for result in results.values())
    assert results["carol"]["score"] == results["alice"]["score"] == code
    assert any("grades no quiz" in note for note in results["carol"]["notes"])
    assert not any("quiz" in note for note in results["alice"]["notes"])
    assert "carol.answers.toml" in (tmp_path / "out" / "feedback" / "carol.md").read_text(encoding="utf-8")


def test_every_sheet_of_a_run_is_worth_the_same_with_points_per_level(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    students = [f"student{index}" for index in range(8)]
    for student in students:
        shutil.copy(REFERENCE, submissions / f"{student}.py")
    results = _grade(tmp_path, submissions, "--quiz-points", "basic=1,intermediate=2,advanced=3")
    worth = {sum(t["max_score"] for t in quiz_tests(results[student])) for student in students}
    assert len(worth) == 1, worth  # before: 71, 72 and 73 in one class
    assert len({results[student]["max_score"] for student in students}) == 1


def test_a_fifo_or_a_huge_sparse_answers_file_costs_the_quiz_never_the_code(tmp_path):
    import os

    submissions = tmp_path / "class"
    submissions.mkdir()
    for student in ("zoe", "yan", "xia"):
        shutil.copy(REFERENCE, submissions / f"{student}.py")
    os.mkfifo(submissions / "zoe.answers.toml")  # opened with a plain open(), it blocks until a writer comes
    with open(submissions / "yan.answers.toml", "wb") as sparse:
        sparse.truncate(512 << 20)  # 512 MiB, no byte on disk
    results = _grade(tmp_path, submissions, "--quiz-count", "3")
    code = sum(t["max_score"] for t in results["xia"]["tests"] if t["function"] != "quiz")
    for student in ("zoe", "yan"):
        result = results[student]
        assert result["status"] == "graded"
        assert sum(t["score"] for t in result["tests"] if t["function"] != "quiz") == code  # the code: full marks
        assert result["max_score"] == results["xia"]["max_score"]
        (quiz,) = quiz_tests(result)
        assert quiz["outcome"] == "error" and quiz["score"] == 0
    assert "regular file" in quiz_tests(results["zoe"])[0]["message"]
    assert "bytes" in quiz_tests(results["yan"])[0]["message"]
    results = _grade(tmp_path, submissions, out="no-quiz")  # no quiz assigned: only a note, and no wait
    assert {result["score"] for result in results.values()} == {code}


def test_the_quiz_policy_needs_a_sheet_once_any_setting_is_given_and_shows_answers_after_the_due_date():
    assert not quiz_policy().required and quiz_policy(count=3).required and quiz_policy(levels=("basic",)).required
    due = datetime(2026, 3, 1, 23, 59)
    assert not quiz_policy(points="2", due=due, now=datetime(2026, 3, 1, 12, 0)).show_answers
    after = quiz_policy(points="basic=1,advanced=3", due=due, now=datetime(2026, 3, 2))
    assert after.show_answers and after.points == {"basic": 1.0, "advanced": 3.0}
    with pytest.raises(UsageError, match="--quiz-topic 'no-such-topic' is not a topic"):
        quiz_policy(topics=("no-such-topic",))
