"""Nothing lost: `kill -9` of the grader then `--resume`, and a submission that kills the grader."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.batch.journal import Journal
from grader.batch.lanes import grade_task
from grader.batch.run import grade_class
from grader.batch.settings import GradingRun
from grader.paths import solution_path
from grader.sandbox.client import Limits
from grader.seeding import student_seed

KEY = "test-resume-key"
TESTS_DIR = Path(__file__).resolve().parent
FAST = Limits(call_timeout=2.0, submission_timeout=20.0)


@pytest.fixture(autouse=True)
def course_key(monkeypatch):
    monkeypatch.setenv("MHA_COURSE_KEY", KEY)


def reference_text() -> str:
    return solution_path("multihead_attention").read_text(encoding="utf-8")


def slow_reference() -> str:
    """The reference with a pause in softmax, so grading one takes about a second."""
    return reference_text().replace("def softmax(x):\n", "def softmax(x):\n    __import__('time').sleep(0.02)\n", 1)


def results_of(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.slow
def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    slow = [f"s{index}" for index in range(1, 7)]
    for student in slow:
        (folder / f"{student}.py").write_text(slow_reference(), encoding="utf-8")
    (folder / "t_noscale.py").write_text(reference_text().replace("/ np.sqrt(d_k)", ""), encoding="utf-8")
    out = tmp_path / "out"
    environment = dict(os.environ, MHA_COURSE_KEY=KEY)
    command = ["mha", "grade", str(folder), "--out", str(out), "--jobs", "2"]
    grader = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
                              start_new_session=True)
    done, running = out / "journal" / "done", out / "journal" / "running"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if done.is_dir() and len(list(done.glob("*.json"))) >= 2 and list(running.glob("*.json")):
            break
        time.sleep(0.05)
    else:
        grader.kill()
        pytest.fail("the grader never had two results and one in flight")
    os.kill(grader.pid, signal.SIGKILL)
    grader.wait()
    kept = {path.stem for path in done.glob("*.json")}
    in_flight = {path.stem for path in running.glob("*.json")}
    assert kept and in_flight and not kept & in_flight
    for path in done.glob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))  # whole, never half-written
    assert not (out / "results.json").exists()
    deadline = time.monotonic() + 10
    while group_alive(grader.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_alive(grader.pid), "grading processes outlived the killed grader"

    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, env=environment, timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({len(kept)} already graded)" in resumed.stdout
    results = results_of(out)
    assert sorted(result["student"] for result in results) == sorted(slow + ["t_noscale"])
    by_student = {result["student"]: result for result in results}
    for student in slow:
        assert by_student[student]["score"] == by_student[student]["max_score"], student
        assert by_student[student]["seed"] == student_seed(student, key=KEY)
    assert by_student["t_noscale"]["misconceptions"] == ["attention-no-scale"]
    assert not list(running.glob("*.json"))


def kill_the_grader(task):
    """A lane runner for the student `poison` that kills the whole grader, as a hostile submission might."""
    if task.student == "poison":
        fork_server = os.getppid()
        with open(f"/proc/{fork_server}/stat", encoding="ascii") as handle:
            grader = int(handle.read().rsplit(")", 1)[1].split()[1])
        os.kill(grader, signal.SIGKILL)
        time.sleep(30)
    return grade_task(task)


def slowly_stored(record):
    """Journal.record taking a second first: a finished result still waits to be stored when the next
    submission, started meanwhile, kills the grader (the race a fast disk only sometimes loses)."""
    def slow(self, student, result):
        time.sleep(1.0)
        return record(self, student, result)
    return slow


def run_grader(folder: Path, out: Path, *, resume: bool) -> int:
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
              "from test_resume import kill_the_grader, slowly_stored, FAST; from grader.batch.run import grade_class; "
              "from grader.batch.settings import GradingRun; from grader.batch.journal import Journal; "
              "Journal.record = slowly_stored(Journal.record); "
              "grade_class(run=GradingRun(submissions=Path(sys.argv[2]), out=Path(sys.argv[3]), jobs=2, limits=FAST, "
              "resume=sys.argv[4] == 'resume'), runner=kill_the_grader)")
    completed = subprocess.run([sys.executable, "-c", script, str(TESTS_DIR), str(folder), str(out),
                                "resume" if resume else "fresh"], env=dict(os.environ, MHA_COURSE_KEY=KEY),
                               capture_output=True, text=True, timeout=120)
    return completed.returncode


@pytest.mark.slow
def test_a_submission_that_kills_the_grader_twice_is_marked_error_and_the_rest_are_graded(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    students = ["ann", "bea", "poison", "zed"]
    for student in students:
        (folder / f"{student}.py").write_text(reference_text(), encoding="utf-8")
    out = tmp_path / "out"
    assert run_grader(folder, out, resume=False) == -signal.SIGKILL
    journal = Journal(out)
    assert journal.attempts("poison") == 1 and not journal.is_done("poison")
    assert run_grader(folder, out, resume=True) == -signal.SIGKILL
    assert journal.attempts("poison") == 2
    # only the culprit reached a second attempt; a bystander in flight during the first crash waits at one, and
    # one that finished before the crash but was not stored yet is not in flight at all
    assert [student for student in students if journal.attempts(student) > 1] == ["poison"]
    assert run_grader(folder, out, resume=True) == 0
    by_student = {result["student"]: result for result in results_of(out)}
    assert sorted(by_student) == students
    assert by_student["poison"]["status"] == "error" and "stopped the grader 2 times" in by_student["poison"]["error"]
    for student in ("ann", "bea", "zed"):
        assert by_student[student]["score"] == by_student[student]["max_score"]


def test_a_submission_in_flight_once_is_graded_again_and_twice_is_skipped(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for student in ("ann", "bea", "cid"):
        (folder / f"{student}.py").write_text(reference_text(), encoding="utf-8")
    out = tmp_path / "out"
    grade_class(run=GradingRun(submissions=folder, out=out, jobs=2, limits=FAST))
    journal = Journal(out)
    for student, attempts in (("bea", 1), ("cid", 2)):
        (journal.done_dir / f"{student}.json").unlink()
        (journal.running_dir / f"{student}.json").write_text(json.dumps({"student": student, "attempts": attempts}))
    summary = grade_class(run=GradingRun(submissions=folder, out=out, jobs=2, limits=FAST, resume=True))
    by_student = {result["student"]: result for result in results_of(out)}
    assert summary.graded_now == 2 and summary.students == 3
    assert by_student["bea"]["status"] == "graded" and by_student["bea"]["score"] == by_student["bea"]["max_score"]
    assert by_student["cid"]["status"] == "error" and "2 times" in by_student["cid"]["error"]
    assert by_student["ann"]["status"] == "graded"
    assert not list(journal.running_dir.glob("*.json"))
