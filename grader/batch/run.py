"""Grade a whole class: find the submissions, grade them in parallel, keep every result.

``grade_class`` is the core of ``mha grade``. Submissions are found by
``grader.batch.discovery``, graded by a pool of trusted grading processes
(``grader.batch.lanes``), each result is stored on disk the moment it arrives
(``grader.batch.journal``), and the class outputs are written at the end by
``grader.batch.outputs`` from those files, one student at a time, so memory does
not grow with the class.

A submission in flight when the grader died (in an earlier run, or a grading
process lost in this one) is graded again alone, so that if it is the one
that kills the grader, no other student is blamed; after a second such death
it is recorded as an error and skipped.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Protocol

from grader import seeding
from grader.grading.assignment import get_assignment
from grader.render.class_report import ClassTally
from grader.batch.discovery import Submission, discover_submissions, select_shard
from grader.errors import UsageError
from grader.batch.journal import MAX_ATTEMPTS, Journal
from grader.batch.lanes import LanePool, grade_task
from grader.content.messages import Message
from grader.batch.outputs import write_outputs
from grader.paths import DEFAULT_ASSIGNMENT
from grader.results import load_failure
from grader.sandbox.client import Limits

LANE_GRACE_SECONDS = 60.0  # beyond the sandbox's own limits, before a grading process is presumed stuck


class Progress(Protocol):
    """Told about the run as it goes; ``grader.verbs.grade`` draws a bar or prints lines."""

    def begin(self, total: int, done: int) -> None: ...

    def advance(self, result: dict) -> None: ...

    def end(self) -> None: ...


class _Silent:
    def begin(self, total: int, done: int) -> None:
        pass

    def advance(self, result: dict) -> None:
        pass

    def end(self) -> None:
        pass


@dataclass(frozen=True)
class BatchSummary:
    out: Path
    students: int  # in this run (this shard)
    graded_now: int  # graded by this run; the rest came from an earlier, resumed one
    ignored: tuple[str, ...]  # entries of SUBMISSIONS that are not submissions
    tally: ClassTally
    elapsed: float


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def full_marks(assignment: str, visibility: str) -> float:
    from grader.grading.grade import VISIBILITIES
    from grader.grading.runner import collect

    return float(sum(test.points for test in collect(get_assignment(assignment), VISIBILITIES[visibility])))


def grade_class(*, submissions: Path, out: Path, jobs: int | None = None, limits: Limits | None = None,
                resume: bool = False, lang: str = "en", formats: tuple[str, ...] = (),
                shard: tuple[int, int] | None = None, assignment: str = DEFAULT_ASSIGNMENT,
                visibility: str = "all", progress: Progress | None = None,
                runner: Callable[[dict], dict] = grade_task, quiz_points: float | dict = 1.0) -> BatchSummary:
    """Grade every submission under ``submissions`` (or one shard of them) into ``out``.

    ``runner`` is what a grading process applies to each task (a module-level
    function; by default ``grade_task``, which calls ``grade_submission``).
    Quiz answers files beside the code are graded too, ``quiz_points`` each
    (a number, or points per level; see ``grader.practice.homework``).
    """
    started = time.monotonic()
    submissions, out = Path(submissions), Path(out)
    if not submissions.is_dir():
        raise UsageError(f"{submissions} is not a folder; pass the folder that holds one entry per student")
    if out.resolve().is_relative_to(submissions.resolve()):
        raise UsageError(f"--out {out} lies inside {submissions}; choose an output folder outside the submissions")
    limits = limits or Limits()
    progress = progress or _Silent()
    everyone, ignored = discover_submissions(submissions, assignment=assignment)
    chosen = select_shard(everyone, shard)
    run = {"submissions": str(submissions.resolve()), "assignment": assignment, "visibility": visibility,
           "shard": f"{shard[0]}/{shard[1]}" if shard else None, "lang": lang}
    journal = Journal(out)
    journal.open(run, resume=resume)
    try:
        graded_now = _grade_pending(chosen, journal, root=submissions, jobs=jobs or default_jobs(), limits=limits,
                                    lang=lang, assignment=assignment, visibility=visibility, progress=progress,
                                    runner=runner, quiz_points=quiz_points)
        tally = write_outputs(out=out, journal=journal, students=[entry.student for entry in chosen], lang=lang,
                              formats=formats, run=run)
    finally:
        journal.close()
    return BatchSummary(out=out, students=len(chosen), graded_now=graded_now, ignored=tuple(ignored), tally=tally,
                        elapsed=time.monotonic() - started)


def _grade_pending(chosen: list[Submission], journal: Journal, *, root: Path, jobs: int, limits: Limits, lang: str,
                   assignment: str, visibility: str, progress: Progress, runner: Callable[[dict], dict],
                   quiz_points=1.0) -> int:
    """Grade what the journal does not hold yet; returns how many results this run added."""
    max_score = full_marks(assignment, visibility)

    def record(student: str, result: dict) -> None:
        journal.record(student, result)
        progress.advance(result)

    def refuse(student: str, reason) -> None:
        text = reason.render(lang) if isinstance(reason, Message) else reason
        record(student, load_failure(student=student, error=text, max_score=max_score,
                                     assignment=assignment).to_dict())

    returning = set(journal.in_flight())
    already = sum(journal.is_done(entry.student) for entry in chosen)
    progress.begin(len(chosen), already)
    todo: deque[Submission] = deque()
    suspects: deque[Submission] = deque()
    added = 0
    for entry in chosen:
        if journal.is_done(entry.student):
            continue
        added += 1
        if entry.refusal is not None:
            refuse(entry.student, entry.refusal)
        elif entry.student not in returning:
            todo.append(entry)
        elif journal.attempts(entry.student) >= MAX_ATTEMPTS:
            refuse(entry.student, _twice_message(journal.attempts(entry.student)))
        else:
            suspects.append(entry)
    if todo or suspects:
        _run_lanes(todo, suspects, journal, root=root, jobs=jobs, limits=limits, lang=lang, assignment=assignment,
                   visibility=visibility, record=record, refuse=refuse, runner=runner, quiz_points=quiz_points)
    progress.end()
    return added


def _run_lanes(todo: deque, suspects: deque, journal: Journal, *, root: Path, jobs: int, limits: Limits, lang: str,
               assignment: str, visibility: str, record, refuse, runner, quiz_points=1.0) -> None:
    time_limit = limits.submission_timeout + 2 * limits.call_timeout + LANE_GRACE_SECONDS
    server = _start_server(hidden=(root, journal.root.parent))
    course_key = seeding.course_key()  # read once here; lanes get it with each task (never written to disk)
    pool = LanePool(max(1, min(jobs, len(todo) + len(suspects))), runner)
    attempts: dict[str, int] = {}
    alone: str | None = None  # a suspect is graded with nothing else in flight
    try:
        while todo or suspects or pool.busy:
            while pool.free and alone is None and (todo or suspects):
                if suspects and pool.busy:
                    break  # wait until the lanes are empty, then grade the suspect alone
                entry = suspects.popleft() if suspects else todo.popleft()
                if journal.is_done(entry.student):
                    continue
                attempts[entry.student] = journal.start(entry.student)
                if attempts[entry.student] > 1:
                    alone = entry.student
                task = {"student": entry.student, "path": str(entry.path), "assignment": assignment,
                        "visibility": visibility, "limits": asdict(limits), "lang": lang,
                        "submission": str(entry.path.relative_to(root)),
                        "server": server.address if server is not None else None,
                        "answers": str(entry.answers) if entry.answers is not None else None,
                        "quiz_points": quiz_points, "course_key": course_key}
                pool.submit(task, time_limit=time_limit)
            for finished in pool.collect(timeout=0.5):
                student = finished.task["student"]
                if student == alone:
                    alone = None
                attempts.pop(student, None)
                if finished.lost is None and "grader_failure" not in finished.result:
                    record(student, dict(finished.result, submission=finished.task["submission"]))
                elif finished.lost is None:
                    refuse(student, f"the grader failed on this submission ({finished.result['grader_failure']})")
                elif journal.attempts(student) >= MAX_ATTEMPTS:
                    refuse(student, f"{finished.lost}; {_twice_message(journal.attempts(student))}")
                else:
                    suspects.append(Submission(student, root / finished.task["submission"]))
    except BaseException:
        for student, attempt in attempts.items():  # stopped on purpose: not the submission's fault
            journal.abandon(student, attempt)
        raise
    finally:
        pool.close()
        if server is not None:
            server.stop()


def _start_server(*, hidden: tuple[Path, ...]):
    """One fork server for the whole run (NumPy imported once), hiding SUBMISSIONS and --out from workers.

    Where it cannot start, each submission gets a private one (slower, same isolation).
    """
    from grader.sandbox.client import ForkServerError, start_server

    try:
        return start_server(hidden=tuple(str(Path(folder).resolve()) for folder in hidden))
    except ForkServerError:
        return None


def _twice_message(attempts: int) -> str:
    return (f"grading this submission stopped the grader {attempts} times; it was skipped "
            "(look for code that kills processes or exhausts the machine)")
