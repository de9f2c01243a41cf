"""Bulk grading core: finding submissions, the journal, grading processes that die or hang."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from grader.batch import run as batch
from grader.batch.discovery import discover_submissions, parse_shard, select_shard
from grader.batch.journal import MAX_ATTEMPTS, Journal
from grader.batch.lanes import grade_task
from grader.batch.run import grade_class
from grader.batch.settings import GradingRun, Task
from grader.errors import UsageError
from grader.files import atomic_writer, file_key
from grader.paths import solution_path
from grader.results import SubmissionResult, load_failure
from grader.sandbox.client import Limits

ASSIGNMENT = "multihead_attention"
FAST = Limits(call_timeout=2.0, submission_timeout=10.0)


@pytest.fixture(autouse=True)
def course_key(monkeypatch):
    monkeypatch.setenv("MHA_COURSE_KEY", "test-batch-key")


def reference_text() -> str:
    return solution_path(ASSIGNMENT).read_text(encoding="utf-8")


def write(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def by_student(submissions):
    return {entry.student: entry for entry in submissions}


# ---- discovery -------------------------------------------------------------------------
def test_every_layout_of_the_contract_gives_one_submission_per_student(tmp_path):
    root = tmp_path / "class"
    write(root / "alice.py")
    write(root / "bob.ipynb", "{}")
    write(root / "carol" / "deep" / "er" / "multihead_attention.py")
    write(root / "dave" / "multihead_attention" / "my work.ipynb", "{}")  # nbgrader submitted/<student>/<assignment>/
    write(root / "erin" / "only_file.py")
    write(root / "notes.txt", "not a submission")
    write(root / ".DS_Store", "hidden")
    write(root / "alice.answers.toml", "")
    write(root / "alice_quiz.answers.toml", "")  # named after no student
    found, ignored = discover_submissions(root, assignment=ASSIGNMENT)
    entries = by_student(found)
    assert list(entries) == ["alice", "bob", "carol", "dave", "erin"]
    assert all(entry.refusal is None for entry in found)
    assert entries["carol"].path == root / "carol" / "deep" / "er" / "multihead_attention.py"
    assert entries["dave"].path.name == "my work.ipynb"
    assert entries["erin"].path.name == "only_file.py"
    assert ignored == ["notes.txt", "alice_quiz.answers.toml"]
    assert entries["alice"].answers.path == root / "alice.answers.toml"


def test_in_a_folder_the_assignment_file_wins_and_checkpoints_are_skipped(tmp_path):
    root = tmp_path / "class"
    write(root / "frank" / "helpers.py")
    write(root / "frank" / "multihead_attention.py")
    write(root / "frank" / ".ipynb_checkpoints" / "multihead_attention-checkpoint.ipynb", "{}")
    write(root / "gina" / "a.py")
    write(root / "gina" / "b.py")
    write(root / "hugo" / "README.md", "no code here")
    entries = by_student(discover_submissions(root, assignment=ASSIGNMENT)[0])
    assert entries["frank"].path.name == "multihead_attention.py" and entries["frank"].refusal is None
    assert entries["gina"].path is None and "several candidate files" in entries["gina"].refusal.render("en")
    assert "a.py" in entries["gina"].refusal.render("en")
    assert "候选文件" in entries["gina"].refusal.render("zh")
    assert entries["hugo"].path is None and "no .py or .ipynb" in entries["hugo"].refusal.render("en")


def test_symlinks_and_paths_leading_outside_are_refused_not_followed(tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    reference = solution_path(ASSIGNMENT)
    (root / "ivan.py").symlink_to(reference)
    write(root / "judy" / "notes.md", "")
    (root / "judy" / "multihead_attention.py").symlink_to(reference)
    outside = tmp_path / "elsewhere"
    write(outside / "multihead_attention.py", reference_text())
    (root / "kim").mkdir()
    (root / "kim" / "linked").symlink_to(outside, target_is_directory=True)
    (root / "leo").symlink_to(outside, target_is_directory=True)
    entries = by_student(discover_submissions(root, assignment=ASSIGNMENT)[0])
    assert set(entries) == {"ivan", "judy", "kim", "leo"}
    assert all(entry.path is None for entry in entries.values())
    assert "symbolic link" in entries["ivan"].refusal.render("en")
    assert "symbolic link" in entries["judy"].refusal.render("en")
    assert "not followed" in entries["kim"].refusal.render("en")
    assert "symbolic link" in entries["leo"].refusal.render("en")


def test_two_entries_for_one_student_grade_the_one_that_can_be_graded_and_name_the_other(tmp_path):
    root = tmp_path / "class"
    write(root / "mia.py")
    write(root / "mia.ipynb", "{}")  # not a notebook: never chosen over code
    entries = by_student(discover_submissions(root, assignment=ASSIGNMENT)[0])
    assert entries["mia"].refusal is None and entries["mia"].path == root / "mia.py"
    assert entries["mia"].set_aside == ("mia.ipynb",)
    assert "mia.ipynb" in entries["mia"].notes[-1].render("en")


def test_shards_split_the_sorted_class_without_overlap():
    students = [batch.Submission(f"s{i:02d}", Path(f"s{i:02d}.py")) for i in range(10)]
    shards = [select_shard(students, (index, 3)) for index in (1, 2, 3)]
    names = [entry.student for shard in shards for entry in shard]
    assert sorted(names) == [entry.student for entry in students]
    assert [entry.student for entry in shards[1]] == ["s01", "s04", "s07"]
    assert parse_shard("2/3") == (2, 3) and parse_shard(None) is None
    for bad in ("0/3", "4/3", "two/3", "1-3"):
        with pytest.raises(UsageError) as refused:
            parse_shard(bad)
        assert "--shard" in refused.value.in_language("en") and "--shard" in refused.value.in_language("zh")


# ---- journal ----------------------------------------------------------------------------
def test_journal_records_results_and_counts_attempts(tmp_path):
    journal = Journal(tmp_path / "out")
    journal.open({"visibility": "all"}, resume=False)
    assert journal.start("ann") == 1 and journal.start("ann") == 2
    assert journal.attempts("ann") == 2 and journal.in_flight() == ["ann"]
    ann = load_failure(student="ann", error="could not load", max_score=1.0, assignment="multihead_attention")
    journal.record("ann", ann)
    assert journal.is_done("ann") and journal.read("ann") == ann
    assert journal.in_flight() == [] and journal.attempts("ann") == 0
    journal.start("ben")
    journal.abandon("ben", 1)
    assert journal.in_flight() == []
    journal.close()


def test_a_second_run_on_the_same_folder_is_refused_while_the_first_holds_it(tmp_path):
    first = Journal(tmp_path / "out")
    first.open({"visibility": "all"}, resume=False)
    with pytest.raises(UsageError, match="another `mha grade`"):
        Journal(tmp_path / "out").open({"visibility": "all"}, resume=True)
    first.close()
    second = Journal(tmp_path / "out")
    second.open({"visibility": "all"}, resume=True)
    second.close()


def test_resume_refuses_a_folder_of_another_kind_of_run_and_a_fresh_run_starts_empty(tmp_path):
    journal = Journal(tmp_path / "out")
    journal.open({"visibility": "all"}, resume=False)
    journal.record("ann", load_failure(student="ann", error="", max_score=1.0, assignment="multihead_attention"))
    journal.close()
    with pytest.raises(UsageError, match="visibility"):
        Journal(tmp_path / "out").open({"visibility": "public"}, resume=True)
    with pytest.raises(UsageError, match="--resume.*--overwrite"):
        Journal(tmp_path / "out").open({"visibility": "public"}, resume=False)
    fresh = Journal(tmp_path / "out")
    moved = fresh.open({"visibility": "public"}, resume=False, overwrite=True)
    assert not fresh.is_done("ann")
    fresh.close()
    assert moved.parent == tmp_path / "out" / "previous"
    assert json.loads((moved / "journal" / "done" / "ann.json").read_text())["student"] == "ann"


def test_an_interrupted_atomic_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "grades.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_writer(target) as handle:
            handle.write("half of the new")
            raise RuntimeError("stopped")
    assert target.read_text() == "old\n"
    assert [path.name for path in tmp_path.iterdir()] == ["grades.csv"]


def test_file_keys_are_safe_and_distinct():
    assert file_key("alice") == "alice"
    assert file_key("li.wei-2") == "li.wei-2"
    unsafe = [file_key(name) for name in ("a b", "a_b", "../etc", "x/y", ".hidden", "jos\ufffd", "a\nb")]
    assert len(set(unsafe)) == len(unsafe)
    assert all("/" not in key and not key.startswith(".") and "\n" not in key for key in unsafe)


def test_an_id_used_as_it_is_never_equals_the_key_of_another_id():
    hashed = file_key("mary@uni.edu")
    assert hashed != "mary@uni.edu" and file_key(hashed) != hashed  # a student named like that key gets another
    assert file_key(hashed.replace("+", "-")) == hashed.replace("+", "-") != hashed


# ---- grading processes that die or hang ---------------------------------------------------
def crash_for_poison(task: Task) -> SubmissionResult:
    """A lane runner that dies like a grading process killed by its submission."""
    if task.student.startswith("poison"):
        os.kill(os.getpid(), signal.SIGKILL)
    return grade_task(task)


def hang_for_stuck(task: Task) -> SubmissionResult:
    if task.student.startswith("stuck"):
        time.sleep(3600)
    return grade_task(task)


def fail_for_broken(task: Task) -> SubmissionResult:
    """A lane runner with a defect on one input: grading raises instead of returning a result."""
    if task.student.startswith("broken"):
        raise RuntimeError("no case for this input")
    return grade_task(task)


def small_class(root: Path, names: list[str]) -> Path:
    for name in names:
        write(root / f"{name}.py", reference_text())
    return root


def test_a_submission_that_kills_its_grading_process_is_tried_twice_then_an_error(tmp_path):
    root = small_class(tmp_path / "class", ["ada", "poison", "zoe"])
    summary = grade_class(run=GradingRun(submissions=root, out=tmp_path / "out", jobs=2, limits=FAST),
                          runner=crash_for_poison)
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert results["ada"]["score"] == results["zoe"]["score"] == results["ada"]["max_score"]
    assert results["poison"]["status"] == "error"
    assert "SIGKILL" in results["poison"]["error"] and f"{MAX_ATTEMPTS} times" in results["poison"]["error"]
    assert summary.students == 3 and summary.graded_now == 3


def test_a_grading_process_that_hangs_is_ended_and_the_batch_finishes(tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "LANE_GRACE_SECONDS", 0.5)
    root = small_class(tmp_path / "class", ["ada", "stuck"])
    started = time.monotonic()
    slow = Limits(call_timeout=0.5, submission_timeout=1.0)
    grade_class(run=GradingRun(submissions=root, out=tmp_path / "out", jobs=2, limits=slow), runner=hang_for_stuck)
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert results["ada"]["status"] == "graded"
    assert results["stuck"]["status"] == "error" and "longer than the time allowed" in results["stuck"]["error"]
    assert time.monotonic() - started < 20


def test_refused_submissions_get_an_error_result_with_full_marks_as_maximum(tmp_path):
    root = small_class(tmp_path / "class", ["ada"])
    (root / "eve.py").symlink_to(solution_path(ASSIGNMENT))
    summary = grade_class(run=GradingRun(submissions=root, out=tmp_path / "out", jobs=1, limits=FAST))
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert results["eve"] == results["eve"] | {"status": "error", "score": 0.0, "tests": [],
                                               "max_score": results["ada"]["max_score"]}
    assert "symbolic link" in results["eve"]["error"]
    assert summary.tally.graded == 1 and len(summary.tally.errored) == 1
    from grader.content.messages import error_text
    from grader.results import SubmissionResult

    assert "符号链接" in error_text(SubmissionResult.from_dict(results["eve"]), "zh")  # re-rendered in any language


def test_the_output_folder_may_not_lie_inside_the_submissions(tmp_path):
    root = small_class(tmp_path / "class", ["ada"])
    with pytest.raises(UsageError, match="inside"):
        grade_class(run=GradingRun(submissions=root, out=root / "out", jobs=1, limits=FAST))


def test_unreadable_files_each_get_an_error_with_a_clear_reason(tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    (root / "empty.py").write_bytes(b"")
    (root / "binary.py").write_bytes(b"\x00\x01\x02numpy")
    (root / "latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (root / "huge.py").write_bytes(b"# padding\n" * 400_000)
    (root / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    grade_class(run=GradingRun(submissions=root, out=tmp_path / "out", jobs=2, limits=FAST))
    errors = {r["student"]: r["error"] for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert all(r is not None for r in errors.values())
    assert "empty" in errors["empty"]
    assert "binary" in errors["binary"]
    assert "UTF-8" in errors["latin"]
    assert "at most" in errors["huge"]
    assert "not a valid notebook" in errors["broken"]


def test_an_empty_class_is_a_usage_error(tmp_path):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "notes.txt").write_text("no code")
    with pytest.raises(UsageError, match="holds no submissions.*notes.txt"):
        grade_class(run=GradingRun(submissions=tmp_path / "class", out=tmp_path / "out", jobs=1, limits=FAST))
    assert not (tmp_path / "out" / "results.json").exists()


def test_an_empty_shard_of_a_class_still_writes_every_output(tmp_path):
    root = small_class(tmp_path / "class", ["ada"])
    summary = grade_class(run=GradingRun(submissions=root, out=tmp_path / "out", jobs=1, limits=FAST, shard=(2, 2)))
    assert summary.students == 0
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == []
    assert (tmp_path / "out" / "grades.csv").read_text() == \
        "student,score,max_score,status,misconceptions,raw_score,adjustments\n"
    assert "None" in (tmp_path / "out" / "report.html").read_text()


# ---- names a student controls ------------------------------------------------------------
ADVERSARIAL = ["Zoë Müller", "Zoe\u0308 Mu\u0308ller", "李雷", "ann smith", "a..b", "new\nline", "new\rline",
               "=1+1", "@home", "mary@uni.edu", "tab\tname", "jos\ufffd", "\x1b[2Jclear", "ünï"]


def test_adversarial_names_each_keep_one_entry_with_a_distinct_stable_id(tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    names = [name + ".py" for name in ADVERSARIAL]
    names.append(file_key("mary@uni.edu") + ".py")  # a student named like another's journal key
    for name in names:
        write(root / name)
    with open(os.path.join(os.fsencode(root), b"jos\xe9.py"), "w") as handle:  # not UTF-8
        handle.write("x = 1\n")
    found, ignored = discover_submissions(root, assignment=ASSIGNMENT)
    assert ignored == [] and len(found) == len(names) + 1
    students = [entry.student for entry in found]
    assert len(set(students)) == len(students)
    assert len({file_key(student) for student in students}) == len(students)  # no two share a journal file
    assert all("\n" not in student and "\x1b" not in student and "\r" not in student for student in students)
    again = [entry.student for entry in discover_submissions(root, assignment=ASSIGNMENT)[0]]
    assert again == students  # stable
    look_alike = [entry for entry in found if entry.student.startswith(("jos\ufffd", "Zoë Müller", "new\ufffdline"))]
    assert len(look_alike) == 6 and all("~" in entry.student for entry in look_alike)
    assert all(any(note.key == "note_id_distinct" for note in entry.notes) for entry in look_alike)
    by_name = {entry.entry: entry for entry in found}
    assert by_name["李雷.py"].student == "李雷" and by_name["ann smith.py"].student == "ann smith"
    assert by_name["mary@uni.edu.py"].student == "mary@uni.edu" and not by_name["mary@uni.edu.py"].notes


def test_hidden_editor_and_tool_entries_are_not_students(tmp_path):
    root = tmp_path / "class"
    write(root / "ann.py")
    for name in (".ann.py.swp", "ann.py~", "#ann.py#", "~$notes.py", ".hidden.py", "Thumbs.db"):
        write(root / name)
    write(root / "__pycache__" / "ann.cpython-311.pyc")
    write(root / "__MACOSX" / "ann.py")
    write(root / ".ipynb_checkpoints" / "ann-checkpoint.ipynb", "{}")
    write(root / "bob" / "__pycache__" / "multihead_attention.py")
    write(root / "bob" / "multihead_attention.py~")
    write(root / "bob" / "multihead_attention.py")
    found, ignored = discover_submissions(root, assignment=ASSIGNMENT)
    assert [entry.student for entry in found] == ["ann", "bob"] and ignored == []
    assert by_student(found)["bob"].path == root / "bob" / "multihead_attention.py"


def test_a_file_with_a_name_outside_the_class_is_never_read_and_one_named_only_inside_is(tmp_path):
    root = tmp_path / "class"
    secret = write(tmp_path / "secret.txt", "the course key")
    write(root / "ann.py")
    os.link(secret, root / "eve.py")
    write(root / "mallory" / "multihead_attention.py")  # never read: a second name of it is not in the class
    os.link(root / "mallory" / "multihead_attention.py", tmp_path / "elsewhere.py")
    (root / "mallory" / "data").mkdir()
    os.link(secret, root / "mallory" / "data" / "notes.txt")  # not a candidate: never read, costs nothing
    write(root / "nina" / "multihead_attention.py")
    os.link(secret, root / "nina" / "data.txt")
    write(root / "quinn.py")
    os.link(secret, root / "quinn.answers.toml")
    write(root / "rob.py")
    (root / "sam").mkdir()
    os.link(root / "rob.py", root / "sam" / "work.py")
    entries = by_student(discover_submissions(root, assignment=ASSIGNMENT)[0])
    assert entries["ann"].refusal is None and entries["nina"].refusal is None
    for student, name in (("eve", "eve.py"), ("mallory", "multihead_attention.py")):
        assert entries[student].path is None, student
        text = entries[student].refusal.render("en")
        assert "hard links" in text and name in text, text
    # a hard-linked answers file costs the quiz (graded as an error), never the code
    assert entries["quinn"].refusal is None and "hard links" in entries["quinn"].answers.render("en")
    for student in ("rob", "sam"):  # every name in the class: one file handed in, read under each name
        assert entries[student].refusal is None and entries[student].found is not None, student
        assert any("hard links" in note.render("en") for note in entries[student].notes), student


def test_a_folder_deeper_than_the_cap_is_refused_without_recursion(tmp_path):
    from grader.entries.entry import MAX_DEPTH

    root = tmp_path / "class"
    here = str(root / "deep")
    os.makedirs(here)
    for _ in range(MAX_DEPTH + 2):
        here = os.path.join(here, "d")
        os.mkdir(here)
    write(Path(here) / "multihead_attention.py")
    write(root / "ok" / ("d/" * (MAX_DEPTH - 1)) / "multihead_attention.py")
    entries = by_student(discover_submissions(root, assignment=ASSIGNMENT)[0])
    assert entries["ok"].refusal is None
    assert entries["deep"].path is None and f"more than {MAX_DEPTH} levels" in entries["deep"].refusal.render("en")


# ---- the grader's own defects: one student's error, the batch goes on ---------------------------
def test_a_grader_defect_on_one_submission_is_that_students_error_and_the_others_are_graded(tmp_path):
    root = small_class(tmp_path / "class", ["ada", "broken", "zoe"])
    summary = grade_class(run=GradingRun(submissions=root, out=tmp_path / "out", jobs=2, limits=FAST),
                          runner=fail_for_broken)
    results = {r["student"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert results["ada"]["score"] == results["zoe"]["score"] == results["ada"]["max_score"] > 0
    assert results["broken"]["status"] == "error" and results["broken"]["score"] == 0
    assert results["broken"]["error"] == "the grader failed on this submission (RuntimeError: no case for this input)"
    assert results["broken"]["submission"] == "broken.py"  # recorded with what the batch knows of the entry
    assert summary.graded_now == 3 and summary.tally.graded == 2 and len(summary.tally.errored) == 1


def test_a_result_the_outputs_cannot_read_becomes_an_error_naming_the_defect_and_the_others_are_written(tmp_path):
    from grader.batch.outputs import write_outputs

    out = tmp_path / "out"
    journal = Journal(out)
    journal.open({"visibility": "all"}, resume=False)
    ann = load_failure(student="ann", error="did not parse", max_score=4.0, assignment="multihead_attention")
    journal.record("ann", ann)
    journal.record("ben", ann)
    (out / "journal" / "done" / f"{file_key('ben')}.json").write_text("{not json", encoding="utf-8")
    tally = write_outputs(out=out, journal=journal, students=["ann", "ben"], lang="en", formats=("junit",),
                          title="t", assignment="multihead_attention")
    journal.close()
    results = {r["student"]: r for r in json.loads((out / "results.json").read_text())}
    assert results["ann"] == ann.to_dict() | {"adjustments": [], "final_score": 0.0}
    assert results["ben"]["status"] == "error" and "the grader could not write this result (JSONDecodeError" \
        in results["ben"]["error"] and results["ben"]["max_score"] == 4.0
    assert (out / "feedback" / "ben.md").is_file() and tally.students == 2
    assert 'name="ben"' in (out / "junit.xml").read_text()
