"""Run a suite's checks against one submission, fast.

Suites are plain pytest files whose tests carry one ``mha`` marker (points,
function, visibility, probes); ``grader.pytest_plugin`` runs them under pytest
too. For bulk grading this runner calls the collected test functions itself,
with the few fixtures the suites use (``student``, ``cases``, ``seed``):
starting a pytest session costs more per submission than grading it does.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass
from typing import Callable

from grader.content.messages import Message, parts_of, render_parts
from grader.grading import showing
from grader.grading.assignment import Assignment
from grader.grading.checks import CheckFailure
from grader.grading.marker import read_marker
from grader.results import UNEXPLAINED, TestResult

OUTPUT_SHOWN = 600  # characters of a check's printed output kept in its result


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
        folder = assignment.folder / visibility
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("test_*.py")):
            module = importlib.import_module(f"grader.assignments.{assignment.name}.{visibility}.{path.stem}")
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
              lang: str, on_check: Callable[[SuiteTest], None] | None = None) -> list[TestResult]:
    """Run each check; ``fixtures[visibility]`` maps fixture names to values.

    A check that ends on a function that hung or crashed (now or in an earlier
    check) is settled by the student proxy's ledger, which words its message.
    ``on_check(test)`` is told as each check begins.
    """
    outcomes: list[tuple[SuiteTest, CheckFailure | None]] = []
    printed: dict[int, str] = {}
    for test in tests:
        available = fixtures[test.visibility]
        wanted = {name: available[name] for name in inspect.signature(test.run).parameters}
        student = available.get("student")
        listening = hasattr(student, "begin_check")
        if on_check is not None:
            on_check(test)
        if listening:
            student.begin_check(test.name)
        try:
            test.run(**wanted)
            outcomes.append((test, None))
        except CheckFailure as failure:
            outcomes.append((test, _settled(failure, test, student)))
        except Exception as bug:  # a defect of the suite, not of the student: say so plainly
            outcomes.append((test, CheckFailure(
                Message("worker_gone", {"function": test.function, "reason": f"the check itself failed: {bug!r}"}),
                misconception="error", outcome="error")))
        if listening:
            printed[len(outcomes) - 1] = student.end_check()
    shipped = fixtures.get("public", {}).get("shipped")
    if shipped:
        _show_shipped_values(outcomes, shipped, student)
    failed = {test.function for test, failure in outcomes if failure is not None}
    order = {name: position for position, name in enumerate(assignment.functions)}
    found_own = _own_findings(outcomes, {id(failure): failure for _, failure in outcomes if failure is not None})
    chosen = {id(failure): _confirmed(failure, failed - {test.function, "__init__"}, order, found_own)
              for test, failure in outcomes if failure is not None}
    own = _own_findings(outcomes, chosen)
    return [dataclasses.replace(_result(test, failure, chosen.get(id(failure)), failed, own, order, lang),
                                output=_truncated(printed.get(position, "")))
            for position, (test, failure) in enumerate(outcomes)]


def _show_shipped_values(outcomes, shipped: dict, student) -> None:
    """A failing public check of a graded run shows the expected-against-returned rows of the public fixture
    its case stands for, the ones ``mha check`` shows the student (those values are shipped to students
    already), when the student's code fails there too; the drawn inputs' values stay unseen. The fixtures'
    calls are made in one exchange, for the failing checks only."""
    pending = []
    for test, failure in outcomes:
        case = getattr(failure, "case", None) if test.visibility == "public" else None
        if case is not None and not case.shows_values and case.id in shipped:
            pending.append((failure, dataclasses.replace(shipped[case.id], id=f"shipped:{case.id}")))
    if not pending:
        return
    with student.showing():  # rows shown, never graded
        student.prefetch([fixture for _, fixture in pending])
        for failure, fixture in pending:
            outcome = student.invoke(fixture)
            if outcome.error is not None:
                continue
            detail = showing.value_detail(fixture, outcome.value)
            if any(key == "case_first_difference" for key, _ in detail):
                failure.detail = tuple(Message(*text) for text in detail)


def _settled(failure: CheckFailure, test: SuiteTest, student) -> CheckFailure:
    """A failure that a hang or a crash caused, worded by the ledger (once with the limit, then by reference)."""
    stopped = failure.outcome == "timeout" or (failure.messages and failure.messages[0].key == "worker_gone")
    ledger = getattr(student, "ledger", None)
    explained = ledger.explain(test.function) if stopped and ledger is not None else None
    if explained is None:
        return failure
    messages, root = explained
    return CheckFailure(*messages, misconception="timeout" if failure.outcome == "timeout" else "error",
                        root_cause=root, outcome=failure.outcome, function=test.function)


def _truncated(text: str, limit: int = OUTPUT_SHOWN) -> str:
    """A check's printed output as feedback shows it: its start, and how much more there was (every
    renderer and the batch make student text safe, as they do exception messages)."""
    return text if len(text) <= limit else f"{text[:limit]}\n[... {len(text) - limit} more characters]"


def _confirmed(failure: CheckFailure, elsewhere: set[str], order: dict, own: dict | None = None) -> CheckFailure:
    """Among mistakes that explain the same evidence, prefer one in a function that fails its own checks
    and that the call entered (when the worker recorded it), the furthest upstream first: a softmax that
    fails its checks explains attention's weights better than attention itself does. With ``own`` (each
    function's own findings), only a mistake its function's own checks find counts."""
    candidates = [alternative for alternative in failure.alternatives if alternative.root_cause in elsewhere
                  and (not failure.reached or alternative.root_cause in failure.reached)
                  and (own is None or alternative.misconception in own.get(alternative.root_cause, ()))]
    return min(candidates, key=lambda alternative: order.get(alternative.root_cause, 99)) if candidates else failure


def _own_findings(outcomes, chosen: dict) -> dict[str, set[str]]:
    """Per function, the catalogued mistakes its own checks found in its own code."""
    found: dict[str, set[str]] = {}
    for test, failure in outcomes:
        if failure is None:
            continue
        for part in (chosen[id(failure)], *failure.others):
            if part.misconception not in UNEXPLAINED and part.root_cause in (None, test.function):
                found.setdefault(test.function, set()).add(part.misconception)
    return found


def _result(test: SuiteTest, failure: CheckFailure | None, chosen: CheckFailure | None, failed: set[str],
            own: dict[str, set[str]], order: dict, lang: str) -> TestResult:
    if failure is None:
        return TestResult(name=test.name, function=test.function, outcome="passed", score=test.points,
                          max_score=test.points, visibility=test.visibility)
    # a failing constructor check (no divisibility check) changes no value another function computes
    elsewhere = failed - {test.function, "__init__"}
    parts_of_finding = [chosen, *(_confirmed(other, elsewhere, order) for other in failure.others)]
    kept, messages, root, upstream = [], [], None, None
    for part in parts_of_finding:
        cause = part.root_cause if part.root_cause and part.root_cause != test.function else None
        cause = cause or _home(part, own, order)
        if cause and (own.get(cause) or cause in elsewhere) and part.misconception not in own.get(cause, ()):
            # the values point at a mistake in ``cause`` that its own checks do not find: trust those (also
            # when they fail for a mistake found upstream of it, or for none they can name)
            upstream = upstream or cause
            continue
        if not kept:
            root = cause  # the check's root cause is its first finding's
        kept.append(part)
        messages += part.messages
        if cause:
            messages.append(Message("root_cause", {"root": cause, "function": test.function}))
    misconception = kept[0].misconception if kept else ("error" if chosen.outcome == "error" else "numeric-mismatch")
    if misconception in UNEXPLAINED:
        # "fix Y first" only for a Y this very call entered and that fails its own checks
        broken = [name for name in failure.reached if name in elsewhere] or ([upstream] if upstream else [])
        if broken:
            root = broken[0]
            messages.append(Message("upstream_failed", {"function": test.function, "root": root}))
    if not messages:
        messages = list(chosen.messages)
    parts = parts_of(*_joined(messages, " "))
    case = parts_of(*_joined(failure.detail, "\n"))
    additional = tuple(dict.fromkeys(part.misconception for part in kept[1:] if part.misconception != misconception))
    return TestResult(
        name=test.name, function=test.function, outcome=chosen.outcome, score=0.0, max_score=test.points,
        misconception=misconception, message=render_parts(parts, lang), messages=parts,
        visibility=test.visibility, root_cause=root if root and root != test.function else None,
        additional_misconceptions=additional, case=render_parts(case, lang), case_messages=case,
    )


def _home(part: CheckFailure, own: dict[str, set[str]], order: dict) -> str | None:
    """The function, among those the failing call entered, whose own checks find this very mistake in its own
    code: where a mistake charged to the checked function really is (attention that exponentiates its scores
    unshifted, seen through forward). The furthest upstream first; None when there is none."""
    homes = [name for name in getattr(part, "homes", ()) if part.misconception in own.get(name, ())]
    return min(homes, key=lambda name: order.get(name, 99)) if homes else None


def _joined(messages, separator: str) -> list:
    return [part for position, message in enumerate(messages) for part in ((separator, message) if position else (message,))]
