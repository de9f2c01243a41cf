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

import json
import os
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Callable, Protocol

from grader import seeding
from grader.batch.adjustments import read_adjustments
from grader.batch.discovery import SUFFIXES, Submission, discover_file, discover_submissions, select_shard
from grader.batch.journal import MAX_ATTEMPTS, Journal, content_hash
from grader.batch.lanes import LanePool, full_marks, grade_task
from grader.batch.outputs import write_outputs
from grader.batch.settings import GradingRun, Task
from grader.batch.signing import SignedRun, sign_outputs
from grader.content.messages import Message, parts_of
from grader.content.usage import usage_error
from grader.files import atomic_write_text
from grader.practice.homework import quiz_worth
from grader.render.text_safety import clean_name, clean_strings
from grader.results import SubmissionResult, load_failure
from grader.sandbox.client import hideable
from grader.tally import BatchSummary

ADJUSTMENTS_COPY = "adjustments.csv"  # in the journal: the file --adjust gave, for a later --resume
LANE_GRACE_SECONDS = 60.0  # beyond the sandbox's own limits, before a grading process is presumed stuck


class Progress(Protocol):
    """Told about the run as it goes; ``grader.verbs.grade`` draws a bar or prints lines."""

    def begin(self, total: int, done: int) -> None: ...

    def start(self, student: str) -> None: ...

    def advance(self, result: SubmissionResult) -> None: ...

    def end(self) -> None: ...


class _Silent:
    def begin(self, total: int, done: int) -> None:
        pass

    def start(self, student: str) -> None:
        pass

    def advance(self, result: SubmissionResult) -> None:
        pass

    def end(self) -> None:
        pass


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def grade_class(*, run: GradingRun, progress: Progress | None = None,
                runner: Callable[[Task], SubmissionResult] = grade_task) -> BatchSummary:
    """Grade every submission of ``run.submissions`` (or one shard of them) into ``run.out``.

    ``runner`` is what a grading process applies to each task (a module-level
    function; by default ``grade_task``, which calls ``grade_submission``).
    Quiz answers files beside the code are graded too (``run.quiz``; see
    ``grader.practice.homework``).
    """
    started = time.monotonic()
    submissions, out = Path(run.submissions), Path(run.out)
    if submissions.is_file():
        if submissions.suffix not in SUFFIXES:
            raise usage_error("not_a_submission_file", submissions=submissions)
    elif not submissions.is_dir():
        raise usage_error("neither_file_nor_folder", submissions=submissions)
    elif out.resolve().is_relative_to(submissions.resolve()):
        raise usage_error("out_inside_submissions", out=out, submissions=submissions)
    progress = progress or _Silent()
    try:
        if submissions.is_file():  # one file alone: a class of one
            everyone, ignored = discover_file(submissions, assignment=run.assignment)
        else:
            everyone, ignored = discover_submissions(submissions, assignment=run.assignment)
    except OSError as bad:
        raise usage_error("cannot_read_submissions", submissions=submissions, reason=bad.strerror or bad) from None
    if not everyone:
        if ignored:
            raise usage_error("no_submissions_found_only", submissions=submissions, found=", ".join(ignored[:5]))
        raise usage_error("no_submissions", submissions=submissions)
    # the quiz is the instructor's (a --quiz-* option): without one, an answers file is only noted, for its student
    chosen = [entry if run.quiz.required else _without_quiz(entry) for entry in select_shard(everyone, run.shard)]
    table = read_adjustments(run.adjustments) if run.adjustments is not None else None
    journal = Journal(out)
    moved = journal.open(run.identity(), resume=run.resume, overwrite=run.overwrite)
    try:
        table = _kept_adjustments(journal, run, table)
        digests = {entry.student: _digest(entry) for entry in chosen}  # read before grading starts
        regraded = _forget_changed(chosen, journal, digests) if run.resume else 0
        graded_now = _grade_pending(chosen, journal, digests, run=run, progress=progress, runner=runner)
        tally = write_outputs(out=out, journal=journal, students=[entry.student for entry in chosen], lang=run.lang,
                              formats=run.formats, title=run.title, assignment=run.assignment, adjustments=table or {})
        # signed with the course key, so `mha merge` can tell this run's shard from one forged or edited
        sign_outputs(out=out, key=seeding.course_key(), run=SignedRun(
            assignment=run.assignment, visibility=run.visibility, shard=run.shard_text,
            students=tuple(sorted(entry.student for entry in everyone))))
    finally:
        journal.close()
    unmatched = tuple(sorted(set(table or ()) - {entry.student for entry in everyone}))
    return BatchSummary(out=out, students=len(chosen), graded_now=graded_now, ignored=tuple(ignored), tally=tally,
                        elapsed=time.monotonic() - started, previous=moved, unmatched_adjustments=unmatched,
                        regraded=regraded)


def _without_quiz(entry: Submission) -> Submission:
    """``entry`` in a run that grades no quiz: its answers file changes no score, and its feedback says so."""
    from grader.files import Found
    from grader.practice.homework import unassigned_note

    if entry.answers is None:
        return entry
    name = entry.answers.parts[-1] if isinstance(entry.answers, Found) else entry.answers.params.get("name", "?")
    return replace(entry, answers=None, notes=entry.notes + (unassigned_note(clean_name(str(name))),))


def _kept_adjustments(journal: Journal, run: GradingRun, table: dict | None) -> dict | None:
    """The run's adjustments: the file given now (a copy is kept with the journal), else, on --resume, the kept one."""
    kept = journal.root / ADJUSTMENTS_COPY
    if run.adjustments is not None:
        atomic_write_text(kept, Path(run.adjustments).read_text(encoding="utf-8-sig"))
        return table
    if run.resume and kept.is_file():
        return read_adjustments(kept)
    return None


def _digest(entry: Submission) -> str:
    refusal = json.dumps(entry.refusal.to_data(), sort_keys=True) if entry.refusal is not None else ""
    return content_hash(path=entry.path, answers=entry.answers, refusal=refusal)


def _forget_changed(chosen: list[Submission], journal: Journal, digests: dict[str, str]) -> int:
    """On --resume: drop the results of submissions whose content changed since they were graded (or whose
    hash the journal lacks), so they are graded again; returns how many."""
    changed = 0
    for entry in chosen:
        if journal.is_done(entry.student) and journal.graded_hash(entry.student) != digests[entry.student]:
            journal.forget(entry.student)
            changed += 1
    return changed


def _grade_pending(chosen: list[Submission], journal: Journal, digests: dict[str, str], *, run: GradingRun, progress: Progress,
                   runner: Callable[[Task], SubmissionResult]) -> int:
    """Grade what the journal does not hold yet; returns how many results this run added."""
    max_score = full_marks(run.assignment, run.visibility)
    root = run.root
    entries = {entry.student: entry for entry in chosen}

    def record(student: str, result: SubmissionResult) -> None:
        """Store ``result`` with what the batch knows of the entry; every string cleaned first."""
        entry = entries[student]
        note_messages = result.note_messages
        if len(note_messages) != len(result.notes):
            note_messages = tuple(parts_of(note) for note in result.notes)
        result = replace(result, student=student, submission=entry.shown_path(root),
                         file=entry.shown_path(root) if entry.path is not None else None,
                         set_aside=tuple(entry.set_aside),
                         notes=tuple(note.render(run.lang) for note in entry.notes) + result.notes,
                         note_messages=tuple(parts_of(note) for note in entry.notes) + tuple(note_messages))
        result = clean_strings(result)
        journal.record(student, result)
        journal.remember(student, digests[student])
        progress.advance(result)

    def refuse(student: str, reason: Message | str) -> None:
        text = reason.render(run.lang) if isinstance(reason, Message) else reason
        worth = quiz_worth(student, run.quiz, key=seeding.course_key()) if run.quiz.required else 0.0
        record(student, load_failure(student=student, error=text, max_score=max_score + worth,
                                     assignment=run.assignment, error_messages=parts_of(reason)))

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
        _run_lanes(todo, suspects, journal, run=run, record=record, refuse=refuse, runner=runner,
                   started=getattr(progress, "start", None))
    progress.end()
    return added


def _run_lanes(todo: deque, suspects: deque, journal: Journal, *, run: GradingRun, record, refuse, runner,
               started=None) -> None:
    from grader.grading.grade import run_calibration

    root = run.root
    limits = run.limits
    time_limit = limits.submission_timeout + 2 * limits.call_timeout + LANE_GRACE_SECONDS
    server = _start_server(hidden=tuple(folder for folder in (root, journal.root.parent) if hideable(folder)),
                           isolation=run.isolation)
    # the reference's own time on this machine, once for the run: every lane holds calls to the same limits
    calibration = run_calibration(assignment=run.assignment, server=server, limits=limits, scale=run.timeout_scale)
    course_key = seeding.course_key()  # read once here; lanes get it with each task (never written to disk)
    jobs = run.jobs or default_jobs()
    if server is not None and server.info.get("workers_apart") is False:
        jobs = 1  # nothing keeps workers graded at once from signalling each other (the isolation says so)
    pool = LanePool(max(1, min(jobs, len(todo) + len(suspects))), runner, assignment=run.assignment)
    attempts: dict[str, int] = {}
    waiting: dict[str, Submission] = {}  # in a lane now
    alone: str | None = None  # a suspect is graded with nothing else in flight

    def fill() -> None:
        """Give every free lane its next submission (a suspect only once the lanes are empty)."""
        nonlocal alone
        while pool.free and alone is None and (todo or suspects):
            if suspects and pool.busy:
                return  # wait until the lanes are empty, then grade the suspect alone
            entry = suspects.popleft() if suspects else todo.popleft()
            if journal.is_done(entry.student):
                continue
            attempts[entry.student] = journal.start(entry.student)
            if attempts[entry.student] > 1:
                alone = entry.student
            task = Task(student=entry.student, path=entry.path, submission=entry.shown_path(root),
                        run=run, answers=entry.answers, found=entry.found, course_key=course_key,
                        server=server.address if server is not None else None,
                        calibration=calibration.to_dict())
            waiting[entry.student] = entry
            pool.submit(task, time_limit=time_limit)
            if started is not None:
                started(entry.student)

    try:
        while todo or suspects or pool.busy:
            fill()
            to_store = []
            for done in pool.collect(timeout=0.5):
                student = done.task.student
                if student == alone:
                    alone = None
                entry = waiting.pop(student)
                if done.result is None and done.failure is None and journal.attempts(student) < MAX_ATTEMPTS:
                    attempts.pop(student, None)
                    suspects.append(entry)
                else:
                    if done.result is not None or done.failure is not None:
                        # finished: no longer in flight, so a crash while it waits to be stored (the next one
                        # started meanwhile) is never counted against it; it is graded again, nothing lost
                        attempts.pop(student, None)
                        journal.finished(student)
                    to_store.append(done)
            fill()  # the lanes go on with the next submissions while these results are stored
            for done in to_store:
                student = done.task.student
                attempts.pop(student, None)
                if done.result is not None:
                    record(student, done.result)
                elif done.failure is not None:
                    refuse(student, f"the grader failed on this submission ({done.failure})")
                elif journal.attempts(student) >= MAX_ATTEMPTS:
                    refuse(student, f"{done.lost}; {_twice_message(journal.attempts(student))}")
    except BaseException:
        for student, attempt in attempts.items():  # stopped on purpose: not the submission's fault
            journal.abandon(student, attempt)
        raise
    finally:
        pool.close()
        if server is not None:
            server.stop()


def _start_server(*, hidden: tuple[Path, ...], isolation: str = "linux"):
    """One fork server for the whole run (NumPy imported once), hiding SUBMISSIONS and --out from workers.

    Where it cannot start, each submission gets a private one (slower, same isolation).
    """
    from grader.sandbox.client import ForkServerError, start_server

    try:
        return start_server(hidden=tuple(str(Path(folder).resolve()) for folder in hidden), isolation=isolation)
    except ForkServerError:
        return None


def _twice_message(attempts: int) -> str:
    return (f"grading this submission stopped the grader {attempts} times; it was skipped "
            "(look for code that kills processes or exhausts the machine)")
