"""Hangs and crashes cost one short timeout, and only the checks that depend on them.

The class test grades the hang fixtures (``tests/fixtures/hangs/``, one style
each: ``# hangs:`` or ``# crashes:`` names the function, ``# costs:`` every
function whose checks it may cost) beside correct submissions through the
installed command. The rest check the parts on their own: the ledger with
made-up outcomes, the sandbox's streamed batch, the calibration, the ETA and
the spinner. No test here times anything against a fixed number: the one bound
on the class comes from the limits the run calibrated, with a wide margin.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import textwrap
import time

import numpy as np
import pytest
from rich.console import Console

from conftest import FIXTURES, PROJECT, mutants
from grader.batch.eta import Estimate
from grader.content.messages import check_title, parts_of, render_parts
from grader.grading import grade as grade_module
from grader.grading.calibration import FLOOR, Calibration, from_times, uncalibrated
from grader.grading.settling import Ledger
from grader.grading.student import settled_outcome
from grader.render.terminal import CheckSpinner
from grader.sandbox.client import CallError, CallOutcome, Limits, Sandbox, start_server
from grader.sandbox.endings import CRASH, STOPPED, TIMEOUT
from grader.sandbox.source import Cell, SubmissionSource

HANGS = FIXTURES / "hangs"
CORRECT = ("elementwise_loops_style", "loops_style", "lazy_import_style")


def declared(path) -> dict[str, str]:
    return dict(re.findall(r"^# (hangs|crashes|costs): (.*)$", path.read_text(), flags=re.M))


# ---- a class with a hang in each function, through the installed command -------------------------
@pytest.fixture(scope="module")
def hanging_class(tmp_path_factory):
    if shutil.which("mha") is None:
        pytest.skip("the mha command is not installed (pip install -e .)")
    root = tmp_path_factory.mktemp("hanging")
    folder = root / "class"
    folder.mkdir()
    for path in HANGS.glob("*.py"):
        shutil.copy(path, folder / path.name)
    for name in CORRECT:
        shutil.copy(mutants("multihead_attention") / "correct" / f"{name}.py", folder / f"{name}.py")
    shutil.copy(PROJECT / "solutions" / "multihead_attention.py", folder / "reference.py")
    started = time.monotonic()
    completed = subprocess.run(["mha", "grade", str(folder), "--out", str(root / "out"), "--jobs", "2"],
                               capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, MHA_COURSE_KEY="test-course-key"))
    elapsed = time.monotonic() - started
    assert completed.returncode == 0, completed.stderr
    results = {r["student"]: r for r in json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))}
    return results, elapsed


def run_limits(results: dict) -> tuple[dict[str, float], float]:
    """The call limit of each function and the load limit the run calibrated, from a result's isolation note.

    The note reads "call limits 0.5 s (...)" when every function has the same, else "call limits
    softmax 0.5, forward 0.62 s (...)".
    """
    isolation = results["reference"]["isolation"]
    calls = re.search(r"call limits (.*?) s \(", isolation).group(1)
    load = float(re.search(r"loading ([\d.]+) s", isolation).group(1))
    named = dict(re.findall(r"(\w+) ([\d.]+)", calls))
    functions = ("softmax", "scaled_dot_product_attention", "split_heads", "combine_heads", "__init__", "forward")
    if not named:
        return {function: float(calls) for function in functions}, load
    return {function: float(seconds) for function, seconds in named.items()}, load


@pytest.mark.slow
def test_correct_functions_of_a_hanging_submission_keep_their_points(hanging_class):
    results, _ = hanging_class
    for path in sorted(HANGS.glob("*.py")):
        result, header = results[path.stem], declared(path)
        if header["costs"] == "everything":
            assert result["status"] == "error" and "took too long" in result["error"], result["error"]
            continue
        costs = set(header["costs"].split())
        assert result["status"] == "graded", (path.stem, result["error"])
        for test in result["tests"]:
            if test["function"] in costs:
                assert test["outcome"] == ("error" if "crashes" in header else "timeout"), (path.stem, test)
            else:
                assert test["outcome"] == "passed", (path.stem, test["name"], test["message"])
        kept = sum(test["max_score"] for test in result["tests"] if test["function"] not in costs)
        assert result["score"] == kept, path.stem
        assert {test["visibility"] for test in result["tests"] if test["function"] not in costs} == {"public", "hidden"}


@pytest.mark.slow
def test_each_hanging_function_is_reported_once_with_its_limit(hanging_class):
    results, _ = hanging_class
    limits, _ = run_limits(results)
    for path in sorted(HANGS.glob("*.py")):
        header = declared(path)
        if "hangs" not in header or header["costs"] == "everything":
            continue
        hung = header["hangs"]
        tests = results[path.stem]["tests"]
        with_limit = [test for test in tests if f"within {limits[hung]:g} s" in test["message"]]
        assert len(with_limit) == 1, (path.stem, [test["message"] for test in with_limit])
        assert hung in with_limit[0]["message"]
        for test in tests:
            if test["outcome"] == "timeout":
                assert test["root_cause"] == (None if test["function"] == hung else hung), (path.stem, test)


@pytest.mark.slow
def test_the_class_finishes_within_what_its_hangs_allow(hanging_class):
    results, elapsed = hanging_class
    limits, load = run_limits(results)
    limit = max(limits.values())
    loads = sum(declared(path)["costs"] == "everything" for path in HANGS.glob("*.py"))
    stops = len(list(HANGS.glob("*.py"))) - loads
    # One short timeout per hanging submission (its callers are stopped on entry), one load limit for a hang
    # at import, twice over for a loaded machine, plus start-up, calibration and the class report. The old
    # fixed limits cost five 5-second timeouts per hang here: well over 100 s.
    bound = 2 * (stops * limit + loads * load) + 30
    assert elapsed < bound, (elapsed, bound)


@pytest.mark.slow
def test_correct_styles_with_python_loops_get_full_marks_beside_the_hangs(hanging_class):
    results, _ = hanging_class
    for name in (*CORRECT, "reference"):
        assert results[name]["score"] == results[name]["max_score"], (name, results[name]["misconceptions"])


# ---- the ledger, from made-up outcomes ------------------------------------------------------------
def ran(*reached, value=1.0):
    return CallOutcome(value=value, reached=reached, seconds=0.01)


def hung(*reached, limit=0.5):
    return CallOutcome(error=CallError("Timeout", f"{limit:g}"), ended=TIMEOUT, reached=reached, seconds=limit)


def test_a_function_that_hung_is_settled_without_another_call():
    ledger = Ledger()
    ledger.begin("test_softmax_values")
    outcome, stop = ledger.record("softmax", hung("softmax"), limit=0.5)
    ledger.meet(stop)
    assert outcome.timed_out and ledger.settled("softmax") is stop  # the hang's own outcome, as it came
    assert ledger.stop_on() == {"softmax"}  # it never came back: callers are stopped when they enter it
    messages, root = ledger.explain("softmax")
    assert [m.key for m in messages] == ["timeout", "settled_rest"] and messages[0].params["limit"] == "0.5"
    assert root is None
    ledger.begin("test_softmax_rows_sum_to_one")
    ledger.meet(ledger.settled("softmax"))
    messages, _ = ledger.explain("softmax")
    assert [m.key for m in messages] == ["hung_settled"] and messages[0].params["check"].name == "test_softmax_values"
    parts = parts_of(*messages)
    assert check_title("test_softmax_values", "zh") in render_parts(parts, "zh")  # results re-render in any language


def test_a_caller_stopped_on_entering_a_hung_function_is_settled_with_it_as_root():
    ledger = Ledger()
    ledger.record("softmax", hung("softmax"), limit=0.5)
    stopped = CallOutcome(error=CallError("Stopped", "softmax"), ended=STOPPED, stopped_at="softmax",
                          reached=("scaled_dot_product_attention", "softmax"), seconds=0.001)
    outcome, stop = ledger.record("scaled_dot_product_attention", stopped, limit=0.5)
    assert outcome is None and stop.function == "softmax"  # settled with softmax's timeout
    assert settled_outcome(stop).timed_out and settled_outcome(stop).error.message == "0.5"
    assert ledger.settled("scaled_dot_product_attention") is stop
    ledger.begin("test_attention_values")
    ledger.meet(stop)
    messages, root = ledger.explain("scaled_dot_product_attention")
    assert root == "softmax" and messages[0].key == "hung_upstream_first"


def test_a_function_that_hangs_only_for_some_inputs_does_not_stop_its_callers_on_entry():
    ledger = Ledger()
    ledger.record("softmax", ran("softmax"))
    ledger.record("softmax", hung("softmax"), limit=0.5)
    assert ledger.settled("softmax") is not None and ledger.stop_on() == frozenset()
    ledger.record("scaled_dot_product_attention", ran("scaled_dot_product_attention", "softmax"))
    assert ledger.settled("scaled_dot_product_attention") is None  # it ran through softmax and came back


def test_a_constructor_that_hangs_settles_the_methods_that_need_that_instance():
    ledger = Ledger()
    built = ("MultiHeadAttention", (12, 3))
    ledger.record("__init__", hung("__init__"), construction=built, limit=0.5)
    stop = ledger.settled("split_heads", built)
    assert stop is not None and stop.function == "__init__"
    assert ledger.settled("softmax") is None


def test_a_hang_far_into_a_call_is_not_blamed_on_a_constructor_that_builds():
    ledger = Ledger()
    built = ("MultiHeadAttention", (12, 3))
    ledger.record("__init__", ran("__init__"), construction=built)
    ledger.record("__init__", hung("__init__"), construction=("MultiHeadAttention", (10, 3)), limit=0.5)
    _, stop = ledger.record("forward", hung("__init__", "forward"), construction=built, limit=0.5)
    assert stop.function == "forward"


def test_running_out_of_the_submission_budget_stops_no_function():
    ledger = Ledger()
    outcome, stop = ledger.record("softmax", hung("softmax", limit=60), limit=0.5, budget_left=0.0)
    assert stop is None and ledger.settled("softmax") is None and outcome.timed_out


def test_a_crash_settles_like_a_hang_with_its_reason():
    ledger = Ledger()
    died = CallOutcome(error=CallError("WorkerGone", "the worker exited with status 3"), ended=CRASH,
                       reached=("split_heads",), seconds=0.01)
    _, stop = ledger.record("split_heads", died)
    assert stop.kind == "crash" and settled_outcome(ledger.settled("split_heads")).error.type == "WorkerGone"
    assert ledger.stop_on() == {"split_heads"}  # a caller is stopped before it takes the worker down again


# ---- the sandbox's streamed batch ------------------------------------------------------------------
STREAMED = """
import time

def double(x):
    return x * 2

def spin(x):
    while True:
        pass

def caller(x):
    return spin(x)
"""


def test_a_streamed_batch_keeps_the_calls_before_a_hang_and_stops_a_call_on_entry():
    server = start_server()
    source = SubmissionSource(cells=(Cell(textwrap.dedent(STREAMED), "s.py", "s.py"),), mode="module")
    x = np.ones(3)
    try:
        with Sandbox.open(source=source, limits=Limits(call_timeout=30.0), server=server) as box:
            calls = [({"function": name}, (x,), {}) for name in ("double", "spin", "double")]
            first = box.call_batch(calls, timeouts=[0.3, 0.3, 0.3])
            second = box.call_batch([calls[0], ({"function": "caller"}, (x,), {})], stop_on=frozenset({"spin"}))
            after = box.run({"function": "double"}, (x,), {})
    finally:
        server.stop()
    assert np.array_equal(first[0].value, 2 * x) and first[0].reached == ("double",)
    assert first[1].timed_out and first[1].error.message == "0.3" and first[2] is None
    assert second[0].ok and second[1].stopped_at == "spin" and second[1].reached == ("caller", "spin")
    assert after.ok  # a fresh worker answers the next call


# ---- calibration -----------------------------------------------------------------------------------
def test_calibrated_limits_come_from_the_reference_and_keep_the_floor():
    server = start_server()
    try:
        times, load_seconds = grade_module.time_reference(assignment="multihead_attention", server=server,
                                                          limits=Limits())
    finally:
        server.stop()
    measured, doubled = from_times(times, load_seconds), from_times(times, load_seconds, scale=2.0)
    assert measured.calibrated
    assert set(measured.limits) == {"softmax", "scaled_dot_product_attention", "split_heads", "combine_heads",
                                    "__init__", "forward"}
    assert all(limit >= FLOOR for limit in measured.limits.values())
    assert all(doubled.limits[name] >= 2 * FLOOR for name in doubled.limits)
    assert all(0 < seconds < measured.limits[name] for name, seconds in measured.reference.items())
    assert "calibrated" in measured.note("en") and "校准" in measured.note("zh")
    assert Calibration.from_dict(json.loads(json.dumps(measured.to_dict()))) == measured


def test_without_the_reference_the_limits_are_a_fixed_default(monkeypatch):
    monkeypatch.setattr(grade_module, "solution_path", lambda assignment: None)
    assert grade_module.time_reference(assignment="multihead_attention", server=None, limits=Limits()) is None
    fixed = uncalibrated()
    assert not fixed.calibrated and fixed.limit("softmax") == 2.0 and fixed.load_limit == 10.0
    assert "not calibrated" in fixed.note("en")


# ---- honest progress ------------------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_counts_a_submission_that_is_still_running():
    clock = Clock()
    estimate = Estimate(4, limit=60.0, clock=clock)
    assert estimate.remaining() is None
    for student in ("a", "b"):
        estimate.start(student)
    clock.now = 1.0
    estimate.finish("a")
    estimate.start("c")
    clock.now = 2.0
    estimate.finish("c")
    clock.now = 10.0  # b has run ten times as long as the others: a rate alone would say one second is left
    assert estimate.remaining() >= 10.0
    estimate.finish("b")
    assert estimate.remaining() < 10.0


def test_the_progress_bar_hears_when_each_submission_starts():
    from grader.render.summary import BarProgress
    from grader.results import SubmissionResult

    bar = BarProgress(estimate=Estimate)
    bar.begin(2, 0)
    bar.start("ann")
    bar.advance(SubmissionResult(student="ann", status="graded", error=None, score=60.0, max_score=60.0,
                                 assignment="multihead_attention"))
    bar.end()
    assert bar.estimate.done == 1 and bar.estimate.durations and not bar.estimate.running


def test_the_spinner_names_the_function_being_checked():
    written = io.StringIO()
    console = Console(file=written, force_terminal=True, width=80)
    with CheckSpinner(file="alice.py", lang="en", console=console, delay=60.0) as spinner:
        spinner.show()  # as the timer would, once checking has taken longer than the delay
        spinner.update("softmax")
    assert "checking softmax" in written.getvalue()
    quiet = io.StringIO()
    with CheckSpinner(file="alice.py", lang="zh", console=Console(file=quiet, force_terminal=True), delay=60.0) as s:
        s.update("forward")  # a quick check: the delay never passes, nothing is drawn
    assert quiet.getvalue() == ""


def test_imports_inside_functions_are_made_while_loading_without_binding_a_name():
    from grader.grading.imports import nested_imports, with_early_imports

    text = textwrap.dedent("""
        import numpy as np
        def softmax(x):
            from scipy.special import softmax as s
            import math, numpy.linalg
            from . import nothing
            return s(x)
    """)
    assert nested_imports(text) == [("scipy.special", ("softmax",)), ("math", ()), ("numpy.linalg", ())]
    assert nested_imports("def broken(:\n") == []
    source = SubmissionSource(cells=(Cell(text, "s.py", "s.py"),), mode="module")
    early = with_early_imports(source)
    assert early.cells[:1] == source.cells and len(early.cells) == 2
    namespace: dict = {}
    exec(compile(early.cells[1].source, "early", "exec"), namespace)  # the standard library only here
    assert set(namespace) == {"__builtins__"}
    assert with_early_imports(SubmissionSource(cells=(Cell("x = 1\n", "s.py", "s.py"),), mode="module")).cells == (
        Cell("x = 1\n", "s.py", "s.py"),)


@pytest.mark.parametrize("text, found", [
    ("import numpy as np\nfrom numpy import linalg\n\ndef f(x):\n    return x\n", []),  # no parse: nothing nested
    ("import numpy as np\n\n\ndef f(x):\n    '''Uses the important parts.'''\n    return x\n", []),
    ("def f(): import math\n", [("math", ())]),  # on the line of its def
    ("def f():\n    x = 1; \\\nimport math\n", [("math", ())]),  # a continued line starting at column 0
    ("def f():\r\n    x = 1; \\\r\nimport math\r\n", [("math", ())]),
    ("def f():\n    x = (yield\nfrom g()); import math\n", [("math", ())]),  # a joined line that starts with from
    ("import os\r\ndef f():\r\n    import math\r\n", [("math", ())]),
    ("class A:\n    def f(self):\n        from numpy import linalg\n", [("numpy", ("linalg",))]),
    ("if True:\n    import math\n", []),  # at module level, only indented
])
def test_imports_inside_functions_are_found_whether_or_not_the_source_needs_parsing(text, found):
    from grader.grading.imports import nested_imports

    assert nested_imports(text) == found
