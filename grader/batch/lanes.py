"""A pool of trusted grading processes, one submission at a time each.

Each lane is a process (started from a fork server that has already imported
the grader, so a new lane costs milliseconds) that receives one task, calls
``grade_submission`` and sends the result back (a ``SubmissionResult``). These
processes only talk to the sandboxed workers; student code never runs in them.

One task per lane means a lane that dies (a submission that found a way to
kill its grading process, a crash in NumPy) names exactly one culprit, and a
lane that overruns its deadline is ended the same way. A lane ends itself
when the process that started it goes away (``PR_SET_PDEATHSIG``), closing
its sandbox on the way out, so a grader killed with ``kill -9`` leaves no
grading processes or workers behind.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from grader.batch.settings import Task
from grader.content.messages import Message, parts_of
from grader.paths import DEFAULT_ASSIGNMENT
from grader.results import SubmissionResult, load_failure

_PR_SET_PDEATHSIG = 1


@dataclass
class Lane:
    process: multiprocessing.Process
    connection: multiprocessing.connection.Connection
    task: Task | None = None
    deadline: float = 0.0


@dataclass(frozen=True)
class GraderFailure:
    """What a lane sends back instead of a result when grading raised: a defect of the grader on this input."""

    reason: str


@dataclass(frozen=True)
class Finished:
    """What came back for one task: its result, the grader's failure on it, or why the lane was lost."""

    task: Task
    result: SubmissionResult | None = None
    failure: str | None = None
    lost: str | None = None


def grade_task(task: Task) -> SubmissionResult:
    """What a lane does with one task: grade the submission and return its result.

    The file is read once, from what discovery found (``grader.files.read_found``): a file replaced,
    or a folder swapped for a link since, is refused the same way as at discovery, never graded.
    """
    from grader.grading.calibration import Calibration
    from grader.grading.grade import grade_submission
    from grader.seeding import student_seed

    run = task.run
    source = _source_of(task)
    if isinstance(source, Message):
        result = load_failure(student=task.student, error=source.render(run.lang), assignment=run.assignment,
                              max_score=full_marks(run.assignment, run.visibility), error_messages=parts_of(source))
    else:
        # The key comes from the process that started the run, not from this
        # lane's environment, which may be older than the run.
        seed = student_seed(task.student, key=task.course_key) if task.course_key is not None else None
        result = grade_submission(source=source, student=task.student, assignment=run.assignment,
                                  visibility=run.visibility, limits=run.limits, lang=run.lang, server=task.server,
                                  seed=seed, timeout_scale=run.timeout_scale, isolation=run.isolation,
                                  calibration=Calibration.from_dict(task.calibration) if task.calibration else None)
    if run.quiz.required:
        from grader.practice.homework import with_quiz

        result = with_quiz(result, answers=_answers_of(task.answers), policy=run.quiz, key=task.course_key)
    return result


def _source_of(task: Task):
    """The submission's cells, read from what discovery found; or the Message saying why there are none."""
    from grader.grading.submitted import entry_source
    from grader.render.text_safety import clean_name

    return entry_source(path=task.path, found=task.found, name=clean_name(os.path.basename(task.path)))


def _answers_of(answers):
    """The quiz answers handed in (``grader.practice.homework.HandedAnswers``), read like a submission."""
    from grader.files import MAX_ANSWERS_BYTES, EntryError, Found, read_found
    from grader.practice.homework import HandedAnswers
    from grader.render.text_safety import clean_name

    if answers is None:
        return None
    if isinstance(answers, Message):
        return HandedAnswers(name=str(answers.params.get("name", "?")), problem=answers)
    name = clean_name(answers.parts[-1]) if isinstance(answers, Found) else "?"
    try:
        return HandedAnswers(name=name, text=read_found(answers, limit=MAX_ANSWERS_BYTES).decode("utf-8"))
    except EntryError as bad:
        return HandedAnswers(name=name, problem=Message(bad.key, bad.params))
    except UnicodeDecodeError as bad:
        return HandedAnswers(name=name, problem=Message("file_not_utf8", {"name": name, "position": bad.start}))


def full_marks(assignment: str, visibility: str) -> float:
    """The points of every check a run grades (the maximum of a result that could not be graded)."""
    from grader.grading.grade import plan_checks

    return plan_checks(assignment=assignment, visibility=visibility).max_score


def preload(assignment: str) -> list[str]:
    """What every lane imports once, in the fork server: the grading core and the exercise's hidden checks."""
    from grader.grading.assignment import get_assignment

    hidden = sorted((get_assignment(assignment).folder / "hidden").glob("test_*.py"))
    return ["grader.grading.grade", *(f"grader.assignments.{assignment}.hidden.{path.stem}" for path in hidden)]


@dataclass
class LanePool:
    """``size`` grading processes; ``submit`` a task to a free lane, ``collect`` what finished.

    ``runner`` is the module-level function a lane applies to each task.
    """

    size: int
    runner: Callable[[Task], SubmissionResult] = grade_task
    lanes: list[Lane] = field(default_factory=list)
    assignment: str = DEFAULT_ASSIGNMENT  # whose cases and hidden checks the lanes import before forking

    def __post_init__(self):
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(preload(self.assignment))
        self.lanes = [self._start() for _ in range(self.size)]

    def _start(self) -> Lane:
        ours, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(target=_lane_main, args=(theirs, self.runner), daemon=True, name="mha-grading-lane")
        process.start()
        theirs.close()
        return Lane(process, ours)

    @property
    def free(self) -> int:
        return sum(lane.task is None for lane in self.lanes)

    @property
    def busy(self) -> int:
        return self.size - self.free

    def submit(self, task: Task, *, time_limit: float) -> None:
        lane = next(lane for lane in self.lanes if lane.task is None)
        lane.task, lane.deadline = task, time.monotonic() + time_limit
        try:
            lane.connection.send(task)
        except OSError:
            pass  # the lane is already gone; collect() reports it as lost

    def collect(self, timeout: float = 1.0) -> list[Finished]:
        """Wait up to ``timeout`` for results; lanes that died or overran are replaced."""
        busy = [lane for lane in self.lanes if lane.task is not None]
        if not busy:
            return []
        waitables = [lane.connection for lane in busy] + [lane.process.sentinel for lane in busy]
        ready = set(multiprocessing.connection.wait(waitables, timeout=timeout))
        finished = []
        now = time.monotonic()
        for lane in busy:
            if lane.connection in ready:
                try:
                    sent = lane.connection.recv()
                except (EOFError, OSError):
                    pass
                else:
                    finished.append(Finished(lane.task, failure=sent.reason) if isinstance(sent, GraderFailure)
                                    else Finished(lane.task, result=sent))
                    lane.task = None
                    continue
            if lane.connection in ready or lane.process.sentinel in ready:
                finished.append(Finished(lane.task, lost=_death(lane.process)))
                self._replace(lane)
            elif now > lane.deadline:
                finished.append(Finished(lane.task, lost="grading it took longer than the time allowed"))
                self._replace(lane)
        return finished

    def _replace(self, lane: Lane) -> None:
        _end(lane)
        index = self.lanes.index(lane)
        self.lanes[index] = self._start()

    def close(self) -> None:
        for lane in self.lanes:
            if lane.task is None:
                try:
                    lane.connection.send(None)  # a polite "stop"
                except OSError:
                    pass
        for lane in self.lanes:
            if lane.task is not None:
                _end(lane)
            else:
                lane.process.join(timeout=2)
                if lane.process.is_alive():
                    _end(lane)
            lane.connection.close()


def _end(lane: Lane) -> None:
    """Ask a lane to stop (it closes its sandbox), then make sure it has."""
    if lane.process.is_alive():
        lane.process.terminate()
        lane.process.join(timeout=3)
    if lane.process.is_alive():
        lane.process.kill()
        lane.process.join()


def _death(process: multiprocessing.Process) -> str:
    process.join(timeout=1)
    code = process.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the grading process was ended by {name} while grading it"
    return f"the grading process stopped (status {code}) while grading it"


# ---- inside a lane ---------------------------------------------------------------------
def _lane_main(connection, runner: Callable[[Task], SubmissionResult]) -> None:
    _follow_parent()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    servers: dict[str, object] = {}  # the lane's handle on each server its tasks name, by address
    try:
        _serve_tasks(connection, runner, servers)
    finally:  # a lane ends without running atexit hooks: the workers of its last submissions end here
        for server in servers.values():
            server.pool.settle()


def _serve_tasks(connection, runner: Callable[[Task], SubmissionResult], servers: dict[str, object]) -> None:
    """Grade the tasks the connection brings until it ends. A task's server address becomes the lane's one
    handle on that server, so the worker made ahead while one submission is graded serves the next."""
    from grader.sandbox.servers import attach_server

    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        if isinstance(task.server, str):
            if task.server not in servers:
                servers[task.server] = attach_server(task.server)
            task = replace(task, server=servers[task.server])
        try:
            result = runner(task)
        except Exception as failure:  # a defect of the grader on this input: report it, keep the lane
            result = GraderFailure(f"{type(failure).__name__}: {failure}"[:500])
        try:
            connection.send(result)
        except OSError:  # the grader is gone; the result will be graded again on --resume
            return


def _stop(signum, frame) -> None:
    sys.exit(1)  # unwinds through grade_submission, so its sandbox is closed


def _follow_parent() -> None:
    """End this lane (with SIGTERM, so it cleans up) when the fork server that made it ends.

    The fork server lives while any process holds its "alive" pipe, and every
    child it forks inherits that pipe; a lane gives it up, so the server (and
    with it every lane) ends as soon as the grader does, even mid-task.
    """
    from multiprocessing import forkserver

    alive = getattr(forkserver._forkserver, "_forkserver_alive_fd", None)
    if alive is not None:
        try:
            os.close(alive)
        except OSError:
            pass
        forkserver._forkserver._forkserver_alive_fd = None
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() == 1:
        sys.exit(0)
