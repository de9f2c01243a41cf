"""The same checks with no sandbox: import each submission and call it in this process.

This is the floor the sandbox is measured against: the suites, cases, twins
and diagnosis are exactly those of ``grade_submission``; only the calls go
straight to the imported module instead of through a confined worker. Never
do this with real student code.
"""

from __future__ import annotations

import copy
import importlib.util
import time
from pathlib import Path

import numpy as np

from grader.assignments import get_assignment
from grader.catalog import misconception_ids
from grader.grading import VISIBILITIES
from grader.results import SubmissionResult, load_failure, summarize
from grader.runner import collect, run_tests
from grader.sandbox import CallError, CallOutcome
from grader.seeding import student_seed
from grader.student import StudentCode


class InProcessBox:
    """What ``StudentCode`` needs of a sandbox (``call``, ``call_method``), answered by direct calls."""

    def __init__(self, module):
        self.module = module

    def call(self, function: str, *args, **kwargs) -> CallOutcome:
        copies = copy.deepcopy(args)
        return self._run(lambda: getattr(self.module, function)(*copies, **kwargs), copies)

    def call_method(self, class_name: str, *, init: tuple = (), attributes: dict | None = None,
                    method: str | None = None, args: tuple = (), kwargs: dict | None = None) -> CallOutcome:
        copies = copy.deepcopy(args)

        def run():
            instance = getattr(self.module, class_name)(*init)
            for name, value in (attributes or {}).items():
                setattr(instance, name, np.array(value, copy=True))
            return getattr(instance, method)(*copies, **(kwargs or {})) if method else None

        return self._run(run, copies)

    @staticmethod
    def _run(action, copies: tuple) -> CallOutcome:
        try:
            with np.errstate(all="ignore"):
                value = action()
        except Exception as error:  # the student's exception, as the worker would report it
            return CallOutcome(error=CallError(type(error).__name__, str(error)))
        return CallOutcome(value=value, args_after=copies)


def grade_in_process(path: Path, *, student: str, assignment: str = "multihead_attention",
                     visibility: str = "all") -> SubmissionResult:
    exercise = get_assignment(assignment)
    tests = collect(exercise, VISIBILITIES[visibility])
    max_score = float(sum(test.points for test in tests))
    seed = student_seed(student)
    spec = importlib.util.spec_from_file_location(f"bench_submission_{student}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        return load_failure(student=student, error=f"{type(error).__name__}: {error}", max_score=max_score,
                            assignment=assignment)
    code = StudentCode(InProcessBox(module))
    fixtures = {"public": {"student": code, "cases": exercise.public_cases(), "seed": None},
                "hidden": {"student": code, "cases": exercise.build_hidden_cases(seed), "seed": seed}}
    results = run_tests(tests, fixtures=fixtures, assignment=exercise, lang="en")
    return summarize(student=student, tests=results, max_score=max_score, assignment=assignment,
                     catalog_ids=misconception_ids(), seed=seed)


def grade_folder_in_process(folder: Path) -> tuple[float, dict[str, float]]:
    """Seconds to grade every ``*.py`` of ``folder`` one after another; and the scores."""
    paths = sorted(Path(folder).glob("*.py"))
    started = time.perf_counter()
    scores = {path.stem: grade_in_process(path, student=path.stem).score for path in paths}
    return time.perf_counter() - started, scores
