"""Grade one submission: load it in a worker, run the checks, build the result."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from grader.content.catalog import misconception_ids
from grader.content.messages import Message, cell_label, parts_of, render_parts
from grader.grading import calibration as calibrating
from grader.grading import calibration_cache
from grader.grading import case as case_module
from grader.grading.assignment import Assignment, get_assignment
from grader.grading.calibration import Calibration
from grader.grading.imports import with_early_imports
from grader.grading.runner import SuiteTest, collect, run_tests
from grader.grading.settling import CONSTRUCTOR
from grader.grading.student import StudentCode, construction_of, construction_request, request_of
from grader.grading.submitted import read_submission_file
from grader.paths import DEFAULT_ASSIGNMENT, solution_path
from grader.results import SubmissionResult, load_failure, summarize
from grader.sandbox.client import LOAD_TIMED_OUT, CallError, ForkServer, ForkServerError, Limits, Sandbox, start_server
from grader.sandbox.source import SubmissionError, SubmissionSource, read_submission
from grader.seeding import derived_seed, student_seed

VISIBILITIES = {"public": ("public",), "all": ("public", "hidden"), "hidden": ("hidden",)}


def grade_submission(*, path: Path | None = None, source: SubmissionSource | None = None,
                     assignment: str = DEFAULT_ASSIGNMENT, visibility: str = "public",
                     functions: tuple[str, ...] | None = None, student: str | None = None,
                     seed: int | None = None, limits: Limits | None = None, lang: str = "en",
                     server: ForkServer | str | None = None, calibration: Calibration | None = None,
                     timeout_scale: float = 1.0, on_function: Callable[[str], None] | None = None,
                     isolation: str = "linux", keep_calibration: bool = False) -> SubmissionResult:
    """Grade the submission at ``path`` (or an already read ``source``).

    ``visibility`` is ``public`` (the student's own check), ``hidden`` or
    ``all``; hidden checks draw their inputs from ``seed``, by default derived
    from the course key and ``student``. ``server``: a shared fork server
    (``grader.sandbox.client.start_server()``, or its address) for bulk grading.
    ``calibration``: the run's call limits (``grader.grading.calibration``);
    by default measured once per process, scaled by ``timeout_scale``; with
    ``keep_calibration`` (a student's check) the reference's timings are kept
    between runs in the user's cache (``grader.grading.calibration_cache``).
    ``on_function(name)`` is told which function is being checked or called.
    ``isolation`` (``grader.sandbox.servers.ISOLATIONS``) chooses the private
    server's worker when no ``server`` is given: ``auto`` for a student's check.
    """
    started = time.monotonic()
    student = student or (Path(path).stem if path is not None else "student")
    plan = plan_checks(assignment=assignment, visibility=visibility, functions=functions, student=student, seed=seed)
    common = dict(student=student, max_score=plan.max_score, assignment=assignment)
    try:
        source = source if source is not None else read_submission_file(Path(path))
    except SubmissionError as bad:
        parts = parts_of(bad.message)
        return load_failure(error=render_parts(parts, lang), error_messages=parts, **common)
    own_server = None
    if server is None:  # one private fork server for the calibration and the submission
        calibrating_here = (calibration is None and solution_path(assignment) is not None
                            and not calibrating.measured((assignment, timeout_scale)))
        try:  # a worker made ahead for each: the portable one takes a NumPy import to make
            server = own_server = start_server(isolation=isolation, spares=2 if calibrating_here else 1)
        except ForkServerError:
            pass  # Sandbox.open says why, as the submission's error
    try:
        kept = calibration is None and keep_calibration
        if calibration is None:
            calibration = run_calibration(assignment=assignment, server=server, limits=limits, scale=timeout_scale,
                                          keep=keep_calibration) \
                if server is not None else _uncalibrated(limits or Limits(), timeout_scale)
        result = _grade_loaded(source, plan=plan, visibility=visibility,
                               limits=_with_load_limit(limits or Limits(), calibration), lang=lang, server=server,
                               calibration=calibration, on_function=on_function, started=started, common=common,
                               isolation=isolation)
        if kept and calibration.calibrated and any(test.outcome == "timeout" for test in result.tests):
            forget_calibration(assignment=assignment, scale=timeout_scale)  # the machine may be slower now
        return result
    finally:
        if own_server is not None:
            own_server.stop()


def _grade_loaded(source: SubmissionSource, *, plan: CheckPlan, visibility: str, limits: Limits, lang: str,
                  server, calibration: Calibration, on_function, started: float, common: dict,
                  isolation: str = "linux") -> SubmissionResult:
    # a module imported inside a function is imported while loading, under the load limit, not on the first call
    with Sandbox.open(source=with_early_imports(source), limits=limits, server=server, isolation=isolation) as box:
        report = box.load_report
        isolation = f"{box.isolation_in(lang)}{'；' if lang == 'zh' else '; '}{calibration.note(lang)}"
        if not report.ok:
            error, notes = _load_message(report.error), _notes(source.notes)
            return load_failure(error=render_parts(error, lang), error_messages=error,
                                notes=tuple(render_parts(note, lang) for note in notes), note_messages=notes,
                                isolation=isolation, duration=time.monotonic() - started, **common)
        results = run_checks(box, plan=plan, visibility=visibility, lang=lang, limit=calibration.limit,
                             on_function=on_function)
        notes = _notes(source.notes) + tuple(_cell_note(error) for error in report.cell_errors)
        return summarize(tests=results, catalog_ids=misconception_ids(), notes=tuple(render_parts(note, lang)
                         for note in notes), note_messages=notes, isolation=isolation,
                         seed=plan.seed, duration=round(time.monotonic() - started, 3), **common)


@dataclass(frozen=True)
class CheckPlan:
    """What a run grades: the exercise, the checks chosen, their points, and the seed hidden checks draw from."""

    exercise: Assignment
    tests: tuple[SuiteTest, ...]
    max_score: float  # full marks: a result that could not be graded has this maximum too
    seed: int | None  # None where no hidden check runs, or where the plan only counts points


def plan_checks(*, assignment: str, visibility: str, functions: tuple[str, ...] | None = None,
                student: str | None = None, seed: int | None = None) -> CheckPlan:
    """The checks ``visibility`` and ``functions`` select, and the seed hidden checks draw from (by default
    derived from the course key and ``student``; with no ``student`` the plan only counts points)."""
    exercise = get_assignment(assignment)
    tests = tuple(test for test in collect(exercise, VISIBILITIES[visibility])
                  if not functions or test.function in functions)
    if seed is None and student is not None and any(test.visibility == "hidden" for test in tests):
        seed = student_seed(student)
    return CheckPlan(exercise=exercise, tests=tests, max_score=float(sum(test.points for test in tests)), seed=seed)


def run_checks(box, *, plan: CheckPlan, visibility: str, lang: str = "en",
               limit: Callable[[str], float] | None = None,
               on_function: Callable[[str], None] | None = None) -> list:
    """Run the checks of ``plan`` against the submission loaded in ``box`` (a ``Sandbox``; in benchmarks, the
    in-process stand-in): their cases built, most calls asked for in one exchange, each check's result."""
    exercise, tests, seed = plan.exercise, plan.tests, plan.seed
    uses_hidden = any(test.visibility == "hidden" for test in tests)
    student = StudentCode(box, limit=limit, on_call=on_function)
    fixtures = {"public": {"student": student, "cases": None, "seed": None}}
    if "public" in VISIBILITIES[visibility]:
        # In a graded run nothing shipped to students is worth a point: public checks get drawn inputs too.
        fixtures["public"]["cases"] = (exercise.drawn_public_cases(derived_seed(seed, "public")) if uses_hidden
                                       else exercise.public_cases())
        if uses_hidden:  # what a failing public check shows: the rows of the fixture the student's check shows
            fixtures["public"]["shipped"] = exercise.public_cases()
    if uses_hidden:
        fixtures["hidden"] = {"student": student, "cases": exercise.build_hidden_cases(seed), "seed": seed}
    graded = {test.function for test in tests}
    order = {name: position for position, name in enumerate(exercise.functions)}
    wanted = [case for chosen in fixtures.values() for case in (chosen["cases"] or {}).values()
              if case.function in graded]
    # one exchange for most calls instead of one each; a function's callees first, so that
    # a hang is met in the function that has it before the functions that call it
    student.prefetch(sorted(wanted, key=lambda case: order.get(case.function, len(order))))
    on_check = (lambda test: on_function(test.function)) if on_function is not None else None
    return run_tests(tests, fixtures=fixtures, assignment=exercise, lang=lang, on_check=on_check)


def run_calibration(*, assignment: str, server: ForkServer | str | None, limits: Limits | None = None,
                    scale: float = 1.0, keep: bool = False) -> Calibration:
    """This run's call limits for ``assignment``: the reference timed on first use, then kept for the process.

    With ``keep`` the timings come from the user's cache where this machine and interpreter have fresh ones,
    and a fresh measurement is kept there (``grader.grading.calibration_cache``)."""
    limits = limits or Limits()

    def measure() -> Calibration:
        key = _cache_key(assignment) if keep else None
        measured = calibration_cache.read(key) if key is not None else None
        if measured is None:
            measured = time_reference(assignment=assignment, server=server, limits=limits)
            if measured is not None and key is not None:
                calibration_cache.write(key, measured)
        return _uncalibrated(limits, scale) if measured is None else calibrating.from_times(*measured, scale=scale)
    return calibrating.for_run((assignment, scale), measure)


def forget_calibration(*, assignment: str, scale: float = 1.0) -> None:
    """Drop ``assignment``'s kept calibration, in this process and in the user's cache: the next check times
    the reference again."""
    calibrating.forget_run((assignment, scale))
    key = _cache_key(assignment)
    if key is not None:
        calibration_cache.forget(key)


def _cache_key(assignment: str) -> dict | None:
    """The cache key of ``assignment``'s timings (None where the reference is not installed: nothing to time)."""
    reference = solution_path(assignment)
    if reference is None:
        return None
    folder = get_assignment(assignment).folder
    files = (reference, folder / "cases.py", folder / "public_cases.npz", Path(case_module.__file__))
    return calibration_cache.cache_key(assignment=assignment, files=files)


def time_reference(*, assignment: str, server: ForkServer | str | None,
                   limits: Limits) -> tuple[dict[str, list[list[float]]], float] | None:
    """The reference's own seconds for every public and hidden case's call, and for building each instance,
    through a worker as a submission's are (``calibration.ROUNDS`` rounds); None where it is not installed."""
    reference = solution_path(assignment)
    if reference is None:
        return None
    exercise = get_assignment(assignment)
    cases = [*exercise.public_cases().values(), *exercise.build_hidden_cases(calibrating.CALIBRATION_SEED).values()]
    calls = [(case.function, request_of(case)) for case in cases]
    calls += [(CONSTRUCTOR, construction_request(*built))
              for built in dict.fromkeys(construction_of(case) for case in cases if case.class_name is not None)]
    rounds: list[list[float]] = [[] for _ in calls]
    with Sandbox.open(source=read_submission(reference), limits=limits, server=server) as box:
        if not box.load_report.ok:
            return None
        for _ in range(calibrating.ROUNDS):
            outcomes = box.call_batch([request for _, request in calls])
            if outcomes is None or any(outcome is None or outcome.seconds is None for outcome in outcomes):
                return None
            for spent, outcome in zip(rounds, outcomes):
                spent.append(outcome.seconds)
        load_seconds = box.timings.load_seconds
    times: dict[str, list[list[float]]] = {}
    for (function, _), spent in zip(calls, rounds):
        times.setdefault(function, []).append(spent)
    return times, load_seconds


def _uncalibrated(limits: Limits, scale: float) -> Calibration:
    return calibrating.uncalibrated(call_timeout=limits.call_timeout, load_timeout=limits.load_timeout, scale=scale)


def _with_load_limit(limits: Limits, calibration: Calibration) -> Limits:
    """Loading gets the calibrated limit unless the caller set one."""
    if calibration.calibrated and not limits.load_timeout:
        return replace(limits, load_timeout=calibration.load_limit)
    return limits


def _notes(notes) -> tuple[tuple[dict, ...], ...]:
    return tuple(parts_of(note) for note in notes)


def _load_message(error: CallError | None) -> tuple[dict, ...]:
    if error is None:
        return parts_of(Message("load_failed"))
    if error.type == "Timeout" and error.message == LOAD_TIMED_OUT:
        return parts_of(Message("load_timed_out"))
    location = (list(parts_of(" [", cell_label(error.cell), "]")) if error.cell else []) + (
        [Message("line", {"line": error.line}).to_data()] if error.line else [])
    message = {"key": "load_error", "params": {"type": error.type, "message": error.message,
                                               "location": {"parts": location}}}
    return (message,) + ((({"plain": f"\n    {error.source_line}"}),) if error.source_line else ())


def _cell_note(error: CallError) -> tuple[dict, ...]:
    return parts_of(Message("cell_skipped", {"cell": cell_label(error.cell or "?"), "type": error.type,
                                             "message": error.message}))
