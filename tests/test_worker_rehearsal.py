"""Each fresh worker serves a few calls of trusted code before its request (``worker_main.rehearse``): the first
touches of the memory it shares with the fork server are taken while it waits as a spare. Nothing of it may
reach the submission, and a submission must be served as if it had never happened."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from conftest import PROJECT
from grader.sandbox.client import SandboxWarning, start_server
from test_worker_pool import opened  # a box of the code given, on a shared server

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")

SNOOP = """
import linecache, sys

def traces():
    cached = sorted(name for name in linecache.cache if not name.endswith(".py") or "rehearsal" in name)
    rehearsed = [name for name in ("normalise", "heads", "attend", "Layer") if name in globals()]
    modules = sorted(name for name in sys.modules if "rehears" in name)
    return cached, rehearsed, modules

def first(x):
    return x * 2
"""


@pytest.fixture(scope="module")
def server():
    shared = start_server()
    yield shared
    shared.stop()


def test_a_worker_rehearses_before_it_is_ready_and_the_submission_finds_nothing_of_it(server):
    with opened(server, SNOOP) as box:
        steps = dict(box.timings.phases)
        # the rehearsal's functions are not the submission's
        assert box.load_report.names == ("first", "linecache", "sys", "traces")
        cached, rehearsed, modules = box.call("traces").value
        doubled = box.call("first", np.arange(3.0)).value
    assert steps["worker forked"] < steps["rehearsed"] <= steps["ready"] < steps["hello"], steps
    assert "<rehearsal>" not in cached and rehearsed == [] and modules == [], (cached, rehearsed, modules)
    np.testing.assert_array_equal(doubled, [0.0, 2.0, 4.0])


def test_the_reference_scores_the_same_through_a_rehearsed_worker_and_without_spares(server):
    """A spare worker rehearses while it waits; one made on request rehearses before it reads its request:
    both grade the reference to full marks, every check the same."""
    from grader.grading.grade import grade_submission

    reference = PROJECT / "solutions" / "multihead_attention.py"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SandboxWarning)
        bare = start_server(without=("spares",))
        try:
            made_ahead = grade_submission(path=reference, visibility="all", server=server)
            on_request = grade_submission(path=reference, visibility="all", server=bare)
        finally:
            bare.stop()
    assert made_ahead.score == made_ahead.max_score == on_request.score
    assert [(t.name, t.outcome, t.message) for t in made_ahead.tests] == [
        (t.name, t.outcome, t.message) for t in on_request.tests]


def test_a_server_told_to_leave_the_rehearsal_out_serves_the_same_without_it():
    bare = start_server(without=("rehearsal",))
    try:
        with opened(bare, SNOOP) as box:
            steps = dict(box.timings.phases)
            doubled = box.call("first", np.arange(3.0)).value
    finally:
        bare.stop()
    assert "rehearsed" not in steps and steps["ready"] < steps["hello"], steps
    np.testing.assert_array_equal(doubled, [0.0, 2.0, 4.0])


def test_every_call_of_the_rehearsal_succeeds_through_the_whole_path():
    """A rehearsal whose calls failed would take none of the faults a submission's calls meet (its errors are
    swallowed: it only saves time), so each of its calls must come back with a value."""
    import linecache

    from grader.sandbox.worker import worker_main

    reply = worker_main.rehearse(np)
    assert [item["ok"] for item in reply["replies"]] == [True] * 4, reply
    assert reply["replies"][0]["args_after"] == [{"__unchanged__": True}]
    assert worker_main.REHEARSAL_FILE not in linecache.cache
