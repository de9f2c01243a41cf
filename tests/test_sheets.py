"""Per-student question sheets, answers files and their grading."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.errors import UsageError
from grader.practice import answers as quiz_answers
from grader.practice.sheets import (SheetSpec, answer_key, answers_template, grade_answers, grade_answers_file,
                                    make_sheet, read_answers)

KEY = "course-key-for-tests"


@pytest.fixture(autouse=True)
def course_key(monkeypatch, tmp_path):
    monkeypatch.setenv("MHA_COURSE_KEY", KEY)
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))


def right_answers(sheet):
    return {answer_key(number): quiz_answers.expected_text(posed, "en")
            for number, posed in enumerate(sheet.questions, start=1)}


def test_a_student_always_gets_the_same_sheet():
    first, again = make_sheet(student="alice", count=8), make_sheet(student="alice", count=8)
    assert first.seed == again.seed
    assert [p.prompt for p in first.questions] == [p.prompt for p in again.questions]


def test_neighbours_get_different_numbers():
    prompts = {}
    for student in ("alice", "bob", "carol"):
        sheet = make_sheet(student=student, count=6, topics=["parameters"])
        prompts[student] = [p.prompt["en"] for p in sheet.questions]
    assert len({tuple(p) for p in prompts.values()}) == 3


def test_the_seed_depends_on_the_course_key():
    assert make_sheet(student="alice", key="one").seed != make_sheet(student="alice", key="two").seed


def test_right_answers_get_full_marks():
    sheet = make_sheet(student="alice", count=10)
    result = grade_answers(sheet=sheet, answers=right_answers(sheet))
    assert result.score == result.max_score == 10.0
    assert {o.outcome for o in result.outcomes} == {"correct"}


def test_outcomes_blank_wrong_unreadable_and_points_by_level():
    sheet = make_sheet(student="dave", count=6, topics=["heads", "split-combine"])
    answers = right_answers(sheet)
    first, second, third = "q01", "q02", "q03"
    del answers[first]
    answers[second] = "?!"
    answers[third] = "1" if sheet.questions[2].kind == "ordering" else "(1, 2, 3, 4, 5)"
    points = {"basic": 1.0, "intermediate": 2.0, "advanced": 3.0}
    result = grade_answers(sheet=sheet, answers=answers, points=points)
    outcomes = {o.key: o.outcome for o in result.outcomes}
    assert [o.question for o in result.outcomes] == [posed.id for posed in sheet.questions]
    assert outcomes[first] == "blank" and outcomes[second] == "unreadable"
    assert outcomes[third] in ("wrong", "unreadable")
    worth = [points[posed.question.level] for posed in sheet.questions]
    assert result.max_score == sum(worth)
    assert result.score == sum(worth[3:])
    tests = result.tests()
    assert [t.outcome for t in tests[:4]] == ["failed", "failed", "failed", "passed"]
    assert sum(t.score for t in tests) == result.score
    assert all(t.function == "quiz" and t.misconception is None for t in tests)
    hidden = [test.message for test in tests if test.outcome != "passed"]
    assert hidden and not [message for message in hidden if "expected " + message.split()[0] in message]
    assert all(result.outcomes[index].expected not in tests[index].message for index in range(3))
    shown = result.tests(show_answers=True)
    assert f"expected {result.outcomes[1].expected}" in shown[1].message
    assert result.to_dict()["questions"][0]["outcome"] == "blank"


def test_answers_file_round_trip_and_the_student_decides_the_sheet(tmp_path):
    sheet = make_sheet(student="erin", count=5, levels=["basic"])
    template = answers_template(sheet)
    path = tmp_path / "erin.answers.toml"
    path.write_text(template, encoding="utf-8")
    header = read_answers(path)
    assert header["student"] == "erin" and header["levels"] == ["basic"] and header["count"] == 5
    assert set(header["answers"]) == {answer_key(n) for n in range(1, 6)}
    assert not any(posed.id in template for posed in sheet.questions)  # an id may name its answer
    spec = SheetSpec(count=5, levels=("basic",))
    assert grade_answers_file(path=path, student="erin", spec=spec).score == 0.0
    filled = template
    for question_id, answer in right_answers(sheet).items():
        filled = filled.replace(f'{question_id} = ""', f'{question_id} = "{answer}"')
    path.write_text(filled, encoding="utf-8")
    assert grade_answers_file(path=path, student="erin", spec=spec).score == 5.0
    # The same file handed in under another id is graded against that student's own numbers.
    copied = grade_answers_file(path=path, student="frank", spec=spec)
    assert copied.student == "frank" and copied.max_score == 5.0


def test_the_header_of_an_answers_file_decides_nothing(tmp_path):
    spec = SheetSpec(count=6)
    sheet = make_sheet(student="gus", count=6)
    easy = make_sheet(student="gus", count=1, levels=["basic"])
    path = tmp_path / "gus.answers.toml"
    lines = ["schema_version = 1", 'student = "someone-else"', "count = 0", 'levels = ["basic"]', "", "[answers]"]
    lines += [f'{posed.id} = "{quiz_answers.expected_text(posed, "en")}"' for posed in easy.questions]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = grade_answers_file(path=path, student="gus", spec=spec)
    assert [outcome.question for outcome in result.outcomes] == [posed.id for posed in sheet.questions]
    assert result.max_score == 6.0  # the instructor's sheet, not count = 0 (which once gave 100%)
    assert result.score <= 1.0


def test_an_answers_file_keyed_by_question_ids_is_still_read():
    sheet = make_sheet(student="hana", count=4)
    by_id = {posed.id: quiz_answers.expected_text(posed, "en") for posed in sheet.questions}
    result = grade_answers(sheet=sheet, answers=by_id)
    assert result.score == 4.0
    assert [test.name for test in result.tests()] == ["quiz:q01", "quiz:q02", "quiz:q03", "quiz:q04"]


def test_an_unreadable_answers_file_names_itself(tmp_path):
    path = tmp_path / "broken.answers.toml"
    path.write_text('schema_version = 1\nstudent = "x"\n[answers]\nq = (2, 3)\n', encoding="utf-8")
    with pytest.raises(UsageError, match="broken.answers.toml"):
        read_answers(path)
    path.write_text('schema_version = 9\nstudent = "x"\n', encoding="utf-8")
    with pytest.raises(UsageError, match="schema_version"):
        read_answers(path)


def test_quiz_sheet_command_writes_the_sheet_and_answers(tmp_path):
    out = tmp_path / "sheets" / "alice.md"
    result = CliRunner().invoke(root, ["quiz", "--sheet", "alice", "--out", str(out), "--count", "4",
                                       "--lang", "zh"])
    assert result.exit_code == 0, result.output
    answers = tmp_path / "sheets" / "alice.answers.toml"
    assert out.is_file() and answers.is_file()
    markdown = out.read_text(encoding="utf-8")
    sheet = make_sheet(student="alice", count=4)
    assert "alice 的题目单" in markdown and "alice.answers.toml" in markdown
    assert all(posed.prompt["zh"] in markdown for posed in sheet.questions)
    assert [f"## {answer_key(n)} ·" in markdown for n in range(1, 5)] == [True] * 4
    assert not any(posed.id in markdown or posed.id in answers.read_text(encoding="utf-8")
                   for posed in sheet.questions)  # the ids stay with the instructor
    assert read_answers(answers)["student"] == "alice"


def test_a_chinese_sheet_has_a_chinese_answers_file(tmp_path):
    from grader.practice.sheets import write_sheet

    _, answers = write_sheet(student="wang", out=tmp_path / "wang.md", lang="zh", count=4)
    comments = [line for line in answers.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    assert comments[0].startswith("# wang 的题目单的答案")
    assert not any("Answers for" in line or "single-choice" in line for line in comments)
    assert read_answers(answers)["student"] == "wang"
