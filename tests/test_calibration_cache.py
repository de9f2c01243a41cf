"""`mha check` keeps the reference's timings per machine and interpreter, and times it again when they may be wrong.

Through the real CLI (click's runner, in this process, with the run's own
in-process calibration cleared between invocations as a new process would
have it): the first check measures and writes the entry, the next reads it;
a changed key, a stale or unreadable entry, and a check that ran into a call
limit each lead to a fresh measurement. ``mha grade``'s calibration never
touches the cache.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, PROJECT
from grader.cli import root
from grader.grading import calibration, calibration_cache
from grader.grading import grade as grade_module

REFERENCE = PROJECT / "solutions" / "multihead_attention.py"


@pytest.fixture
def timed(monkeypatch, tmp_path):
    """Count the reference's timings, each check starting with no calibration in the process."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(calibration, "_RUN", {})
    calls = []
    measure = grade_module.time_reference

    def counting(**options):
        calls.append(options["assignment"])
        return measure(**options)
    monkeypatch.setattr(grade_module, "time_reference", counting)

    def check(*args) -> dict:
        monkeypatch.setattr(calibration, "_RUN", {})  # as a new process
        done = CliRunner().invoke(root, ["check", *map(str, args), "--json"])
        assert done.exit_code in (0, 1), done.output
        return json.loads(done.output)
    return check, calls, tmp_path / "cache"


def entries(cache):
    return sorted(cache.glob("calibration-*.json"))


def test_the_second_check_reads_the_timings_the_first_measured(timed):
    check, calls, cache = timed
    first = check(REFERENCE)
    assert calls == ["multihead_attention"] and len(entries(cache)) == 1
    second = check(REFERENCE)
    assert calls == ["multihead_attention"]  # not timed again
    assert second["isolation"] == first["isolation"] and "calibrated" in second["isolation"]
    assert [test["outcome"] for test in second["tests"]] == [test["outcome"] for test in first["tests"]]
    entry = json.loads(entries(cache)[0].read_text(encoding="utf-8"))
    assert entry["key"]["numpy"] and entry["key"]["machine"]["cores"] and entry["key"]["files"]["multihead_attention.py"]
    assert set(entry["value"]["times"]) >= {"softmax", "forward"}


def test_a_changed_key_a_stale_or_unreadable_entry_is_measured_again(timed, monkeypatch):
    check, calls, cache = timed
    check(REFERENCE)
    [path] = entries(cache)
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["written_at"] -= calibration_cache.MAX_AGE + 60
    path.write_text(json.dumps(entry), encoding="utf-8")
    check(REFERENCE)
    assert len(calls) == 2  # stale
    entries(cache)[0].write_text("{not json", encoding="utf-8")
    check(REFERENCE)
    assert len(calls) == 3  # unreadable: measured again, no error
    key = calibration_cache.cache_key
    monkeypatch.setattr(calibration_cache, "cache_key",
                        lambda **options: {**key(**options), "numpy": "0.0-another"})
    check(REFERENCE)
    assert len(calls) == 4 and len(entries(cache)) == 2  # another NumPy: another entry


def test_a_check_that_ran_into_a_call_limit_forgets_the_entry(timed):
    check, calls, cache = timed
    check(REFERENCE)
    hung = check(FIXTURES / "hangs" / "softmax_while_true.py", "--assignment", "multihead_attention")
    assert "timeout" in {test["outcome"] for test in hung["tests"]}
    assert entries(cache) == []  # the machine may be slower than when it was measured
    check(REFERENCE)
    assert len(calls) == 2 and len(entries(cache)) == 1


def test_an_unwritable_cache_folder_costs_only_the_measurement(timed, monkeypatch, tmp_path):
    check, calls, _ = timed
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("MHA_CACHE_DIR", str(blocked / "cache"))
    assert check(REFERENCE)["score"] > 0
    assert check(REFERENCE)["score"] > 0 and len(calls) == 2


def test_a_class_run_measures_its_own_and_leaves_the_cache_alone(timed):
    _, calls, cache = timed
    grade_module.run_calibration(assignment="multihead_attention", server=None, scale=7.0)
    grade_module.run_calibration(assignment="multihead_attention", server=None, scale=7.0, keep=False)
    assert calls == ["multihead_attention"] and not cache.exists()
