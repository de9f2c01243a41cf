"""pytest plugin: run mha-lab suites under plain pytest.

Registered through the ``pytest11`` entry point. It declares the ``mha``
marker (points, function, visibility, probes) and, when pytest is given
``--submission FILE``, the fixtures the suites use: ``student`` (the file
loaded in a sandboxed worker), ``cases`` and ``seed``. For example::

    pytest grader/assignments/<assignment>/public --submission alice.py

The grader's own runner (``grader.grading.runner``) calls the same test functions
without a pytest session, which is faster per submission.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("mha", "mha-lab suites")
    group.addoption("--submission", default=None, help="The student file the mha-lab suites check.")
    group.addoption("--mha-student", default=None, help="Student id for hidden inputs (default: the file's stem).")
    group.addoption("--mha-unsandboxed", action="store_true",
                    help="Import the submission into pytest's own process (trusted code and benchmarks only).")


def pytest_configure(config):
    from grader.grading.marker import MARKER_HELP

    config.addinivalue_line("markers", MARKER_HELP)
    config._mha_points = {}  # nodeid -> (points earned, points possible)


def _marker(node):
    from grader.grading.marker import MARKER, read_marker

    return read_marker(reversed(list(node.iter_markers(MARKER))))  # module marks first, the test's own last


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Score each graded check as the grader does: its points when it passes, none otherwise."""
    outcome = yield
    report = outcome.get_result()
    if not any(True for _ in item.iter_markers("mha")) or not item.config.getoption("--submission"):
        return
    points = _marker(item).points
    if report.when == "call" or (report.when == "setup" and not report.passed):
        item.config._mha_points[item.nodeid] = (points if report.passed else 0.0, points)


def pytest_terminal_summary(terminalreporter, config):
    scored = getattr(config, "_mha_points", {})
    if scored:
        earned, possible = (sum(values) for values in zip(*scored.values()))
        terminalreporter.write_line(f"mha-lab: {earned:g} / {possible:g} points from {len(scored)} checks")


@pytest.fixture(scope="session")
def _mha_sandbox(request):
    from pathlib import Path

    from grader.sandbox.client import Sandbox

    path = request.config.getoption("--submission")
    if not path:
        pytest.skip("mha-lab suites need --submission FILE")
    if request.config.getoption("--mha-unsandboxed"):
        from grader.sandbox.in_process import InProcessBox

        yield InProcessBox.load(Path(path))
        return
    from grader.sandbox.servers import chosen_isolation

    with Sandbox.open(path=Path(path), isolation=chosen_isolation()) as box:  # where the Linux sandbox cannot run too
        if not box.load_report.ok:
            pytest.fail(f"{path} could not be loaded: {box.load_report.error.message}", pytrace=False)
        yield box


@pytest.fixture(scope="session")
def student(_mha_sandbox):
    from grader.grading.student import StudentCode

    return StudentCode(_mha_sandbox)


@pytest.fixture(scope="session")
def seed(request):
    from pathlib import Path

    from grader.seeding import student_seed

    name = request.config.getoption("--mha-student") or Path(request.config.getoption("--submission") or "x").stem
    return student_seed(name)


@pytest.fixture
def cases(request):
    from grader.grading.assignment import get_assignment

    assignment = get_assignment(request.module.__name__.split(".")[2])
    if _marker(request.node).visibility == "hidden":
        return assignment.build_hidden_cases(request.getfixturevalue("seed"))
    return assignment.public_cases()
