"""Shared test set-up: a fixed course key, paths to the project's fixtures, and what CI must not skip."""

import os
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "tests" / "fixtures"
ASSIGNMENTS = PROJECT / "grader" / "assignments"  # one folder per exercise


def mutants(assignment: str) -> Path:
    """The audit's library of ``assignment``: ``mistakes/`` and ``correct/`` in its folder."""
    return ASSIGNMENTS / assignment / "mutants"


IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(available: bool, what: str) -> None:
    """Skip the test, saying ``what`` is missing, unless it is ``available``; in CI (CI=true) fail instead.

    For tests that need something of the machine (a font, a browser, root,
    the installed command): a developer without it sees why the test did not
    run (``-rs`` is on), and CI, which installs all of it, never skips.
    """
    if available:
        return
    if IN_CI:
        pytest.fail(f"CI must run this test, but {what}")
    pytest.skip(what)


@pytest.fixture(scope="session")
def _recordings(tmp_path_factory):
    """One folder of recorded training runs for the session: each release build would record its own."""
    return tmp_path_factory.mktemp("recordings")


@pytest.fixture(autouse=True)
def _course_key(monkeypatch, tmp_path_factory, _recordings):
    """Hidden inputs come from a known key; nothing is written to the user's config or cache."""
    monkeypatch.setenv("MHA_COURSE_KEY", "test-course-key")
    monkeypatch.setenv("MHA_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))  # calibrations of `mha check`
    monkeypatch.setenv("MHA_CHECK_SERVER", "off")  # no `mha check` of a test leaves a warm server behind
    monkeypatch.setenv("MHA_RECORDING_CACHE", str(_recordings))  # the release's recorded run, made once
