"""Run a suite's checks against one submission, fast.

Suites are plain pytest files whose tests carry one ``mha`` marker (points,
function, visibility, probes); ``grader.pytest_plugin`` runs them under pytest
too. For bulk grading this runner calls the collected test functions itself,
with the few fixtures the suites use (``student``, ``cases``, ``seed``):
starting a pytest session costs more per submission than grading it does.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Callable

from grader.grading.assignment import Assignment
from grader.grading.checks import CheckFailure
from grader.grading.marker import read_marker
from grader.content.messages import Message, parts_of, render_parts
from grader.results import UNEXPLAINED, TestResult


@dataclass(frozen=True)
class SuiteTest:
    name: str
    function: str
    points: float
    visibility: str
    probes: tuple[str, ...]
    run: Callable


def collect(assignment: Assignment, visibilities: tuple[str, ...]) -> list[SuiteTest]:
    """The checks of ``assignment`` in these visibilities, in the order of its functions."""
    tests = []
    for visibility in visibilities:
        folder = assignment.suites_dir / visibility
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("test_*.py")):
            module = importlib.import_module(f"grader.suites.{assignment.name}.{visibility}.{path.stem}")
            module_marks = getattr(module, "pytestmark", [])
            module_marks = module_marks if isinstance(module_marks, list) else [module_marks]
            for name, function in inspect.getmembers(module, inspect.isfunction):
                if not name.startswith("test_") or function.__module__ != module.__name__:
                    continue
                marker = read_marker(module_marks + list(getattr(function, "pytestmark", [])), visibility=visibility)
                tests.append(SuiteTest(name=name, function=marker.function, points=marker.points,
                                       visibility=marker.visibility, probes=marker.probes, run=function))
    order = {name: position for position, name in enumerate(assignment.functions)}
    return sorted(tests, key=lambda t: (t.visibility != "public", order.get(t.function, 99),
                                        t.run.__module__, t.run.__code__.co_firstlineno))


def run_tests(tests: list[SuiteTest], *, fixtures: dict[str, dict], assignment: Assignment,
              lang: str) -> list[TestResult]:
    """Run each check; ``fixtures[visibility]`` maps fixture names to values."""
    outcomes: list[tuple[SuiteTest, CheckFailure | None]] = []
    for test in tests:
        available = fixtures[test.visibility]
        wanted = {name: available[name] for name in inspect.signature(test.run).parameters}
        try:
            test.run(**wanted)
            outcomes.append((test, None))
        except CheckFailure as failure:
            outcomes.append((test, failure))
        except Exception as bug:  # a defect of the suite, not of the student: say so plainly
            outcomes.append((test, CheckFailure(
                Message("worker_gone", {"function": test.function, "reason": f"the check itself failed: {bug!r}"}),
                misconception="error", outcome="error")))
    failed = {test.function for test, failure in outcomes if failure is not None}
    return [_result(test, failure, failed, assignment, lang) for test, failure in outcomes]


def _confirmed(failure: CheckFailure, failed: set[str]) -> CheckFailure:
    """Among mistakes that explain the same value, prefer one whose function fails its own checks."""
    for alternative in failure.alternatives:
        if alternative.root_cause in failed:
            return alternative
    return failure


def _result(test: SuiteTest, failure: CheckFailure | None, failed: set[str], assignment: Assignment,
            lang: str) -> TestResult:
    if failure is None:
        return TestResult(name=test.name, function=test.function, outcome="passed", score=test.points,
                          max_score=test.points, visibility=test.visibility)
    failure = _confirmed(failure, failed - {test.function})
    messages = list(failure.messages)
    root = failure.root_cause
    if failure.misconception in UNEXPLAINED:
        broken = [name for name in assignment.upstream.get(test.function, ()) if name in failed]
        if broken:
            root = broken[0]
            messages.append(Message("upstream_failed", {"function": test.function, "root": root}))
    spaced = [part for position, message in enumerate(messages) for part in ((" ", message) if position else (message,))]
    parts = parts_of(*spaced)
    return TestResult(
        name=test.name, function=test.function, outcome=failure.outcome, score=0.0, max_score=test.points,
        misconception=failure.misconception, message=render_parts(parts, lang), messages=parts,
        visibility=test.visibility, root_cause=root if root != test.function else None,
    )
