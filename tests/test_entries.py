"""Which file of a student's entry is graded, and that it is the file discovery found (through the real CLI)."""

import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from conftest import PROJECT
from grader.cli import root

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"
STUB = PROJECT / "exercises" / "multihead_attention.py"
STUB_NOTEBOOK = PROJECT / "exercises" / "notebooks" / "multihead_attention.ipynb"


def notebook_of(code: str) -> str:
    """A notebook whose one code cell holds ``code``."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("My work"), nbformat.v4.new_code_cell(code)]
    return nbformat.writes(notebook)


def partial_code() -> str:
    """The reference with every function but softmax put back to the stub's raise."""
    import re

    text = REFERENCE.read_text(encoding="utf-8")
    return re.sub(r"(def (?!softmax)\w+\(.*\):\n(?:\s+\"\"\"[\s\S]*?\"\"\"\n)?)", r"\1        raise NotImplementedError\n",
                  text)


def grade(tmp_path, submissions, *options, out="out"):
    done = CliRunner().invoke(root, ["grade", str(submissions), "--out", str(tmp_path / out), "--jobs", "1", *options])
    assert done.exit_code == 0, done.output
    results = {r["student"]: r for r in json.loads((tmp_path / out / "results.json").read_text(encoding="utf-8"))}
    return results, done.output


def full(result) -> bool:
    return result["status"] == "graded" and result["score"] == result["max_score"]


def test_a_file_planted_beside_an_honest_entry_is_set_aside_and_named(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(REFERENCE, submissions / "alice.py")
    (submissions / "alice.ipynb").write_text("", encoding="utf-8")  # planted: empty
    shutil.copy(REFERENCE, submissions / "bob.py")
    shutil.copy(STUB_NOTEBOOK, submissions / "bob.ipynb")  # planted: the untouched hand-out
    (submissions / "carol.ipynb").write_text(notebook_of(REFERENCE.read_text(encoding="utf-8")), encoding="utf-8")
    shutil.copy(STUB, submissions / "carol.py")
    results, output = grade(tmp_path, submissions)
    assert "[1/3] alice (alice.py)" in output  # the terminal names the file graded
    assert "graded  carol: carol.ipynb (set aside: carol.py)" in output
    for student, graded, other in (("alice", "alice.py", "alice.ipynb"), ("bob", "bob.py", "bob.ipynb"),
                                   ("carol", "carol.ipynb", "carol.py")):
        result = results[student]
        assert full(result), (student, result["error"])
        assert result["file"] == graded and result["set_aside"] == [other]
        for page in ("md", "html"):
            text = (tmp_path / "out" / "feedback" / f"{student}.{page}").read_text(encoding="utf-8")
            assert f"Graded file: {graded}" in text and other in text, (student, page)


def test_a_clone_of_the_hand_out_is_graded_on_the_file_the_student_worked_on(tmp_path):
    submissions = tmp_path / "class"
    worked_in_notebook = submissions / "dana" / "exercises"
    (worked_in_notebook / "notebooks").mkdir(parents=True)
    shutil.copy(STUB, worked_in_notebook / "multihead_attention.py")  # untouched
    (worked_in_notebook / "notebooks" / "multihead_attention.ipynb").write_text(
        notebook_of(REFERENCE.read_text(encoding="utf-8")), encoding="utf-8")
    both = submissions / "eli" / "exercises"
    (both / "notebooks").mkdir(parents=True)
    (both / "multihead_attention.py").write_text(partial_code(), encoding="utf-8")  # one function done
    (both / "notebooks" / "multihead_attention.ipynb").write_text(notebook_of(REFERENCE.read_text(encoding="utf-8")),
                                                                  encoding="utf-8")
    newer = submissions / "fay"  # both complete: the one saved last
    newer.mkdir()
    shutil.copy(REFERENCE, newer / "multihead_attention.py")
    (newer / "multihead_attention.ipynb").write_text(notebook_of(partial_code()), encoding="utf-8")
    past = time.time() - 3600
    os.utime(newer / "multihead_attention.ipynb", (past, past))
    (newer / "multihead_attention.ipynb").write_text(notebook_of(REFERENCE.read_text(encoding="utf-8")),
                                                     encoding="utf-8")
    os.utime(newer / "multihead_attention.py", (past, past))
    results, _ = grade(tmp_path, submissions)
    assert full(results["dana"]) and results["dana"]["file"] == "dana/exercises/notebooks/multihead_attention.ipynb"
    assert results["dana"]["set_aside"] == ["dana/exercises/multihead_attention.py"]
    assert full(results["eli"]) and results["eli"]["file"].endswith(".ipynb")
    assert any("implements more" in note for note in results["eli"]["notes"])
    assert full(results["fay"]) and results["fay"]["file"] == "fay/multihead_attention.ipynb"
    assert any("saved last" in note for note in results["fay"]["notes"])
    # mha check on the folder: the same choice, named in its output
    done = CliRunner().invoke(root, ["check", str(submissions / "dana"), "--assignment", "multihead_attention"])
    assert done.exit_code == 0, done.output
    assert "notebooks/multihead_attention.ipynb" in done.output and "multihead_attention.py" in done.output


def test_entries_that_are_not_regular_files_or_too_large_fail_alone_and_never_block(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    os.mkfifo(submissions / "zoe.py")  # a FIFO: opening it for reading would wait for a writer
    os.mkfifo(submissions / "yan.py")
    (submissions / "yan.ipynb").write_text(notebook_of(REFERENCE.read_text(encoding="utf-8")), encoding="utf-8")
    (submissions / "big.py").write_text(REFERENCE.read_text(encoding="utf-8") + "#" * (3 << 20) + "\n",
                                        encoding="utf-8")
    crowded = submissions / "max"
    crowded.mkdir()
    shutil.copy(REFERENCE, crowded / "multihead_attention.py")
    for index in range(20_000):  # an entry-count cap: a folder of 150,000 files costs the cap, not its size
        (crowded / f"f{index}").touch()
    shutil.copy(REFERENCE, submissions / "ok.py")
    results, _ = grade(tmp_path, submissions)
    assert results["zoe"]["status"] == "error" and "not a regular file" in results["zoe"]["error"]
    assert full(results["yan"]) and results["yan"]["file"] == "yan.ipynb"
    assert results["big"]["status"] == "error" and "2,097,152" in results["big"]["error"]
    assert results["max"]["status"] == "error" and "more than 5,000" in results["max"]["error"]
    assert full(results["ok"])


def after_discovery(monkeypatch, change) -> None:
    """Make ``change`` to the class folder once `mha grade` has found its entries, before any lane reads one."""
    import grader.batch.run as run

    found = run.discover_submissions

    def discover_then_change(folder, **options):
        entries = found(folder, **options)
        change()
        return entries

    monkeypatch.setattr(run, "discover_submissions", discover_then_change)


@pytest.mark.parametrize("target", ["solutions", "classmate"])
def test_a_folder_swapped_for_a_link_after_discovery_is_not_graded_as_the_student(tmp_path, monkeypatch, target):
    submissions = tmp_path / "class"
    (submissions / "amy").mkdir(parents=True)
    shutil.copy(STUB, submissions / "amy" / "multihead_attention.py")
    (submissions / "ben").mkdir()
    shutil.copy(REFERENCE, submissions / "ben" / "multihead_attention.py")
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(REFERENCE, solutions / "multihead_attention.py")
    def swap():
        os.rename(submissions / "amy", tmp_path / "amy-was")
        os.symlink(solutions if target == "solutions" else submissions / "ben", submissions / "amy")

    after_discovery(monkeypatch, swap)
    results, _ = grade(tmp_path, submissions)
    assert results["amy"]["status"] == "error" and results["amy"]["score"] == 0
    assert "changed after the grader found it" in results["amy"]["error"]
    assert full(results["ben"])


def test_a_file_replaced_in_place_after_discovery_is_not_graded(tmp_path, monkeypatch):
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(STUB, submissions / "amy.py")
    def replace():
        shutil.copy(REFERENCE, tmp_path / "new.py")
        os.replace(tmp_path / "new.py", submissions / "amy.py")  # another inode under the same name

    after_discovery(monkeypatch, replace)
    results, _ = grade(tmp_path, submissions)
    assert results["amy"]["status"] == "error" and "changed after" in results["amy"]["error"]


def deep_notebook(path: Path) -> None:
    path.write_text('{"cells": [{"cell_type": "code", "source": "x = 1"}], "metadata": '
                    + "[" * 200_000 + "]" * 200_000 + "}", encoding="utf-8")


def test_a_deeply_nested_notebook_is_a_clear_error_in_grade_and_check(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    deep_notebook(submissions / "deep.ipynb")
    shutil.copy(REFERENCE, submissions / "ok.py")
    results, _ = grade(tmp_path, submissions)
    assert results["deep"]["status"] == "error" and "nests its JSON too deeply" in results["deep"]["error"]
    assert "grader failed" not in results["deep"]["error"] and full(results["ok"])
    done = CliRunner().invoke(root, ["check", str(submissions / "deep.ipynb")])
    assert done.exit_code == 1, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), repr(done.exception)
    assert "nests its JSON too deeply" in done.output and "Traceback" not in done.output


def test_ids_differing_only_in_case_get_feedback_files_distinct_on_any_file_system(tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(REFERENCE, submissions / "Mary.py")
    shutil.copy(STUB, submissions / "mary.py")
    results, _ = grade(tmp_path, submissions)
    pages = sorted(path.name for path in (tmp_path / "out" / "feedback").glob("*.md"))
    assert len(pages) == 2 and len({page.casefold() for page in pages}) == 2, pages
    scores = {}
    for page in pages:
        text = (tmp_path / "out" / "feedback" / page).read_text(encoding="utf-8")
        scores["Mary" if "Mary" in text.split("\n")[0] else "mary"] = text
    assert "Score: 60" in scores["Mary"] or full(results["Mary"])
    assert results["Mary"]["score"] > results["mary"]["score"]


def test_a_class_folder_reached_through_the_instructors_own_link_is_graded(tmp_path):
    """Only the components below SUBMISSIONS are the students': a link to a mounted share is fine."""
    share = tmp_path / "share" / "class"
    (share / "ann").mkdir(parents=True)
    shutil.copy(REFERENCE, share / "ann" / "multihead_attention.py")
    shutil.copy(REFERENCE, share / "bo.py")
    os.symlink(share, tmp_path / "class")
    results, _ = grade(tmp_path, tmp_path / "class")
    assert full(results["ann"]) and full(results["bo"])


def test_the_student_release_checks_the_file_worked_on_in_its_exercises_folder(tmp_path):
    """`mha check exercises` in the release alone (its own grader package, no instructor layers) picks the notebook."""
    import subprocess
    import sys

    release = tmp_path / "release"
    done = CliRunner().invoke(root, ["release", "--student", str(release)])
    assert done.exit_code == 0, done.output
    assert not (release / "grader" / "batch").exists()
    notebook = release / "exercises" / "notebooks" / "multihead_attention.ipynb"
    worked = nbformat.read(notebook, as_version=4)
    worked.cells.append(nbformat.v4.new_code_cell(REFERENCE.read_text(encoding="utf-8")))
    nbformat.write(worked, notebook)
    environment = dict(os.environ, PYTHONPATH=str(release))
    located = subprocess.run([sys.executable, "-c", "import grader; print(grader.__file__)"], cwd=release,
                             env=environment, capture_output=True, text=True, check=True)
    assert located.stdout.strip() == str(release / "grader" / "__init__.py")
    checked = subprocess.run([sys.executable, "-m", "grader.cli", "check", "exercises"], cwd=release,
                             env=environment, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "notebooks/multihead_attention.ipynb" in checked.stdout.split("\n")[0]
    assert "Every check passed" in checked.stdout


def test_a_notebook_whose_cells_hold_values_of_the_wrong_types_is_refused_with_a_message(tmp_path):
    """Found by tests/test_fuzz_cli.py: a cell whose metadata is `true` made the notebook reader fail."""
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "odd.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "code", "source": "", "metadata": True}]}), encoding="utf-8")
    shutil.copy(REFERENCE, submissions / "ok.py")
    results, _ = grade(tmp_path, submissions)
    assert results["odd"]["status"] == "error" and "wrong type" in results["odd"]["error"]
    assert full(results["ok"])
    done = CliRunner().invoke(root, ["check", str(submissions / "odd.ipynb"), "--assignment", "multihead_attention"])
    assert done.exit_code == 1 and "wrong type" in done.output, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), repr(done.exception)


def test_the_size_limit_of_discovery_is_the_one_of_the_reader():
    from grader.files import MAX_SOURCE_BYTES
    from grader.sandbox.source import MAX_SOURCE_BYTES as READER_LIMIT

    assert MAX_SOURCE_BYTES == READER_LIMIT == 2 << 20  # docs/grading-rules.md: 2 MiB


def test_a_second_name_of_a_classmates_file_never_makes_either_an_error(tmp_path):
    """Whoever may write to a shared hand-in folder can give a classmate's file a second name (a hard link):
    every name of it is in the class, so it is a file a student handed in, graded under each name. A file
    with a name outside the class (it may be the solutions, the course key) is never read; beside a
    student's own work it is set aside, alone it is refused."""
    submissions = tmp_path / "class"
    submissions.mkdir()
    reference = REFERENCE.read_text(encoding="utf-8")
    secret = tmp_path / "not-handed-in.py"  # outside the class: later and as complete as the student's work
    secret.write_text(reference.replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    shutil.copy(REFERENCE, submissions / "alice.py")
    os.link(submissions / "alice.py", submissions / "mallory.py")  # planted beside: alice's file, second name
    (submissions / "bob").mkdir()
    shutil.copy(REFERENCE, submissions / "bob" / "multihead_attention.py")
    (submissions / "eve").mkdir()
    os.link(submissions / "bob" / "multihead_attention.py", submissions / "eve" / "multihead_attention.py")
    (tmp_path / "notes.txt").write_text("notes", encoding="utf-8")
    os.link(tmp_path / "notes.txt", submissions / "bob" / "notes.txt")  # never read: costs nothing
    shutil.copy(REFERENCE, submissions / "carol.py")
    os.link(secret, submissions / "carol.ipynb")
    (submissions / "dan" / "exercises").mkdir(parents=True)
    shutil.copy(REFERENCE, submissions / "dan" / "multihead_attention.py")
    os.link(secret, submissions / "dan" / "exercises" / "multihead_attention.py")
    os.link(secret, submissions / "trent.py")
    shutil.copy(REFERENCE, submissions / "kim.py")
    (submissions / ".stash").mkdir()
    os.link(submissions / "kim.py", submissions / ".stash" / "kept")  # second names where nothing is graded
    os.link(submissions / "kim.py", submissions / "bob" / "kim.txt")
    os.link(submissions / "kim.py", submissions / "kim-copy.txt")
    later = time.time() + 60
    os.utime(secret, (later, later))  # were it a candidate, the file saved last would be graded
    results, output = grade(tmp_path, submissions)
    for student in ("alice", "mallory", "bob", "eve", "carol", "dan", "kim"):
        assert full(results[student]), (student, results[student], output)
    for student in ("alice", "mallory"):
        assert any("hard link" in note for note in results[student]["notes"]), results[student]["notes"]
    assert results["carol"]["file"] == "carol.py" and results["dan"]["file"] == "dan/multihead_attention.py"
    assert any("hard link" in note for note in results["dan"]["notes"]), results["dan"]["notes"]
    assert results["trent"]["status"] == "error" and "hard links" in results["trent"]["error"]


def test_a_folder_or_a_second_name_as_an_answers_file_costs_at_most_the_quiz(tmp_path):
    from test_hostile_outputs import QUIZ_COUNT, answers_file

    submissions = tmp_path / "class"
    submissions.mkdir()
    for student in ("alice", "bob", "fay"):
        shutil.copy(REFERENCE, submissions / f"{student}.py")
    (submissions / "alice.answers.toml").write_text(answers_file("alice"), encoding="utf-8")
    os.link(submissions / "alice.answers.toml", submissions / "bob.answers.toml")  # both names in the class
    (submissions / "fay.answers.toml").mkdir()  # a folder: not a student, and no answers file either
    for student in ("gus", "hal"):
        (submissions / student).mkdir()
        shutil.copy(REFERENCE, submissions / student / "multihead_attention.py")
    os.mkfifo(submissions / "gus" / "gus.answers.toml")  # in a student's folder: said so, never opened
    for name in ("hal.answers.toml", "answers.toml"):
        (submissions / "hal" / name).write_text(answers_file("hal"), encoding="utf-8")
    results, output = grade(tmp_path, submissions, "--quiz-count", str(QUIZ_COUNT))
    assert sorted(results) == ["alice", "bob", "fay", "gus", "hal"], output
    for student, reason in (("gus", "not a regular file"), ("hal", "keep exactly one")):
        quiz = [test for test in results[student]["tests"] if test["name"] == "quiz:answers-file"]
        assert quiz and reason in quiz[0]["message"], (student, results[student])
        assert results[student]["score"] == results["alice"]["max_score"] - QUIZ_COUNT  # the code in full
    for student in results:
        assert results[student]["max_score"] == results["alice"]["max_score"], results[student]
    assert full(results["alice"])  # the code and the quiz: the answers were read
    assert "hard link" not in json.dumps(results["bob"])  # read too (alice's answers: bob's sheet differs)
    fay = json.dumps(results["fay"], ensure_ascii=False)
    assert results["fay"]["status"] == "graded" and "not a regular file" in fay, fay


def test_an_answers_file_planted_beside_a_students_folder_does_not_replace_the_one_inside(tmp_path):
    from test_hostile_outputs import QUIZ_COUNT, answers_file

    submissions = tmp_path / "class"
    (submissions / "ida").mkdir(parents=True)
    shutil.copy(REFERENCE, submissions / "ida" / "multihead_attention.py")
    (submissions / "ida" / "ida.answers.toml").write_text(answers_file("ida"), encoding="utf-8")
    (submissions / "ida.answers.toml").write_text(answers_file("ida", right=0), encoding="utf-8")  # planted
    shutil.copy(REFERENCE, submissions / "jo.py")
    (submissions / "jo.answers.toml").write_text(answers_file("jo"), encoding="utf-8")
    results, output = grade(tmp_path, submissions, "--quiz-count", str(QUIZ_COUNT))
    assert full(results["ida"]) and full(results["jo"]), output
    assert any("ida.answers.toml" in note and "ida/ida.answers.toml" in note for note in results["ida"]["notes"])
