"""Timed drills: the workspace stub, the clock, submitting through the checks, history."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

from grader.cli import root
from grader.errors import UsageError
from grader.grading.reference import load_reference
from grader.paths import exercise_path, solution_path
from grader.practice.drill import (DRILLS, best_times, current_drill, drill_source, load_history, start_drill,
                                   submit_drill)
from grader.stubs import BEGIN, strip_markers

SPLIT_HEADS_STUB = 'raise NotImplementedError("split_heads: not implemented yet / 尚未实现")'
SPLIT_HEADS_BODY = ("batch, length, _ = x.shape\n"
                    "        x = x.reshape(batch, length, self.num_heads, self.d_k)  # (B, T, H, d_k)\n"
                    "        return x.transpose(0, 2, 1, 3)  # (B, H, T, d_k)")


def definitions(source: str) -> dict[str, str]:
    """Every function and method of ``source`` by name, as written."""
    import ast

    tree = ast.parse(source)
    return {node.name: ast.get_source_segment(source, node) for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)}


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MHA_COURSE_KEY", "test-course-key")
    return tmp_path / "data"


def test_help():
    result = CliRunner().invoke(root, ["drill", "--help"])
    assert result.exit_code == 0
    assert all(option in result.output for option in ("--time-limit", "--submit", "--history", "FUNCTION"))


@pytest.mark.parametrize("function", [name for name in DRILLS if name != "all"])
def test_only_the_drilled_function_is_stubbed(function):
    source, graded = drill_source(function)
    assert graded == (function,)
    assert source.count("NotImplementedError(") == 1
    assert f'raise NotImplementedError("{function}:' in source
    assert BEGIN not in source and "HINT(" not in source
    namespace: dict = {}
    exec(compile(source, "workspace", "exec"), namespace)
    layer = namespace["MultiHeadAttention"](8, 2)
    if function != "softmax":
        assert namespace["softmax"]([[0.0, 0.0]]).tolist() == [[0.5, 0.5]]
    if function not in ("split_heads", "forward"):
        assert layer.split_heads(np.zeros((2, 3, 8))).shape == (2, 2, 3, 4)


@pytest.mark.parametrize("function,inverse", [("split_heads", "combine_heads"), ("combine_heads", "split_heads")])
def test_the_workspace_gives_nothing_away_unless_asked(function, inverse):
    reference = strip_markers(solution_path().read_text(encoding="utf-8"))
    inverse_body = definitions(reference)[inverse].split('"""')[-1]  # the reference code after the docstring
    source, _ = drill_source(function)
    assert "# Hint:" not in source and "# 提示：" not in source
    assert inverse_body not in source and "written another way on purpose" in source
    namespace: dict = {}
    exec(compile(source, "workspace", "exec"), namespace)
    layer, x = namespace["MultiHeadAttention"](12, 3), np.random.default_rng(0).normal(size=(2, 5, 12))
    reference_layer = load_reference().MultiHeadAttention(12, 3)
    stand_in = getattr(layer, inverse)
    given = reference_layer.split_heads(x) if inverse == "combine_heads" else x
    assert np.array_equal(stand_in(given), getattr(reference_layer, inverse)(given))  # the stand-in is right
    with_hints, _ = drill_source(function, hints=True)
    assert "# Hint:" in with_hints and inverse_body in with_hints


def test_all_stubs_every_function():
    source, graded = drill_source("all")
    assert graded is None
    assert source.count("NotImplementedError(") == 5


def test_a_student_release_falls_back_to_the_whole_stub(monkeypatch, tmp_path):
    monkeypatch.setenv("MHA_SOLUTIONS", str(tmp_path / "no-solutions"))
    assert solution_path() is None
    source, graded = drill_source("forward")
    stub = exercise_path().read_text(encoding="utf-8")
    assert graded is None and source == "".join(line for line in stub.splitlines(keepends=True)
                                                if "# Hint: " not in line and "# 提示：" not in line)
    assert drill_source("forward", hints=True)[0] == stub


def test_unknown_drill_is_a_usage_error():
    with pytest.raises(UsageError, match="choose from"):
        drill_source("backward")


def test_start_writes_the_workspace_and_remembers_the_clock(tmp_path):
    drill = start_drill(function="split_heads", workspace=tmp_path / "ws", time_limit_minutes=5, now=100.0)
    assert current_drill() == drill
    assert SPLIT_HEADS_STUB in (tmp_path / "ws" / "multihead_attention.py").read_text(encoding="utf-8")
    drawn = {start_drill(function=None, workspace=tmp_path / "ws", seed=seed).function for seed in range(12)}
    assert drawn <= set(DRILLS) - {"all"} and len(drawn) > 2
    again = start_drill(function=None, workspace=tmp_path / "ws", seed=3).function
    assert again == start_drill(function=None, workspace=tmp_path / "ws", seed=3).function


def test_submits_repeat_until_full_marks_and_each_is_recorded(tmp_path):
    drill = start_drill(function="split_heads", workspace=tmp_path / "ws", time_limit_minutes=2, now=1000.0)
    record, result = submit_drill(now=1030.0)
    assert (record.score, record.status, record.seconds, record.overtime) == (0.0, "graded", 30.0, False)
    assert record.max_score > 0 and {test.function for test in result.tests} == {"split_heads"}
    assert (record.attempt, record.ended) == (1, False)
    assert current_drill().attempts == 1  # still running: the clock has time left
    record, _ = submit_drill(now=1040.0)
    assert (record.attempt, record.ended) == (2, False)

    path = tmp_path / "ws" / "multihead_attention.py"
    path.write_text(path.read_text(encoding="utf-8").replace(SPLIT_HEADS_STUB, SPLIT_HEADS_BODY), encoding="utf-8")
    record, result = submit_drill(now=1090.0)
    assert record.score == record.max_score and result.passed and not record.overtime
    assert (record.attempt, record.ended) == (3, True)
    assert current_drill() is None
    with pytest.raises(UsageError, match="(?i)no drill is running"):
        submit_drill()
    history = load_history()
    assert [(entry.attempt, entry.score) for entry in history] == [(1, 0.0), (2, 0.0), (3, record.max_score)]
    assert best_times(history) == {"split_heads": 90.0}
    assert drill.path == str(path.resolve())


def test_a_submit_after_the_time_limit_is_overtime_and_ends_the_drill(tmp_path):
    start_drill(function="softmax", workspace=tmp_path / "ws", time_limit_minutes=1, now=0.0)
    record, _ = submit_drill(now=61.0)
    assert record.overtime and record.ended and record.score < record.max_score
    assert current_drill() is None


def test_a_mistake_is_diagnosed_and_kept_in_the_history(tmp_path):
    start_drill(function="split_heads", workspace=tmp_path / "ws")
    path = tmp_path / "ws" / "multihead_attention.py"
    no_transpose = "batch, length, _ = x.shape\n        return x.reshape(batch, self.num_heads, length, self.d_k)"
    path.write_text(path.read_text(encoding="utf-8").replace(SPLIT_HEADS_STUB, no_transpose), encoding="utf-8")
    record, _ = submit_drill()
    assert "split-heads-no-transpose" in record.misconceptions
    assert load_history()[-1].misconceptions == record.misconceptions


def test_drill_commands(tmp_path):
    runner = CliRunner()
    workspace = tmp_path / "ws"
    assert "No drill is running" in runner.invoke(root, ["drill", "--status", "--lang", "en"]).output
    started = runner.invoke(root, ["drill", "combine_heads", "--workspace", str(workspace), "--time-limit", "15",
                                   "--lang", "en"])
    assert started.exit_code == 0 and "combine_heads" in started.output and "15 minutes" in started.output
    assert "left" in runner.invoke(root, ["drill", "--status", "--lang", "en"]).output
    solved = strip_markers(solution_path().read_text(encoding="utf-8"))
    (workspace / "multihead_attention.py").write_text(solved, encoding="utf-8")
    submitted = runner.invoke(root, ["drill", "--submit", "--json"])
    assert submitted.exit_code == 0, submitted.output
    data = json.loads(submitted.output)
    assert data["drill"]["score"] == data["drill"]["max_score"] > 0
    assert data["result"]["status"] == "graded"
    listed = runner.invoke(root, ["drill", "--history", "--lang", "en"]).output
    assert "combine_heads" in listed and "best combine_heads" in listed
    assert runner.invoke(root, ["drill", "--submit"]).exit_code == 2
    assert runner.invoke(root, ["drill", "softmax", "--history"]).exit_code == 2


@pytest.mark.slow
def test_installed_command_shows_the_history(private_data_dir):
    command = shutil.which("mha")
    assert command, "the mha command is not installed"
    run = subprocess.run([command, "drill", "--history", "--json"], capture_output=True, text=True,
                         env={**os.environ, "MHA_DATA_DIR": str(private_data_dir)})
    assert run.returncode == 0 and json.loads(run.stdout) == []


def test_the_submit_command_says_the_drill_goes_on(tmp_path):
    runner = CliRunner()
    runner.invoke(root, ["drill", "softmax", "--workspace", str(tmp_path / "ws"), "--time-limit", "10"])
    submitted = runner.invoke(root, ["drill", "--submit", "--lang", "en"])
    assert "Attempt 1 recorded; the drill is still running" in submitted.output
    assert "mha drill --submit" in submitted.output and "left" in submitted.output
    assert current_drill().attempts == 1
    hinted = runner.invoke(root, ["drill", "split_heads", "--hint", "--workspace", str(tmp_path / "ws"), "--json"])
    assert json.loads(hinted.output)["hints"] is True
    assert "# Hint:" in (tmp_path / "ws" / "multihead_attention.py").read_text(encoding="utf-8")
    assert runner.invoke(root, ["drill", "--submit", "--hint"]).exit_code == 2


def test_another_exercise_is_drilled_with_its_own_checks(tmp_path):
    """`--assignment` drills any exercise: its stub in the workspace, its checks at submit, its own drills."""
    runner = CliRunner()
    unknown = runner.invoke(root, ["drill", "softmax", "--assignment", "kv_cache", "--workspace", str(tmp_path)])
    assert unknown.exit_code != 0 and "choose from: all" in unknown.output  # kv_cache lists no single drills
    started = runner.invoke(root, ["drill", "all", "--assignment", "kv_cache", "--workspace", str(tmp_path),
                                   "--json"])
    assert started.exit_code == 0, started.output
    path = tmp_path / "kv_cache.py"
    assert json.loads(started.output)["path"] == str(path.resolve()) and "class KVCache" in path.read_text()
    shutil.copy(solution_path("kv_cache"), path)  # solved at once
    record, result = submit_drill(lang="en")
    assert result.assignment == "kv_cache" and result.score == result.max_score > 0
    assert {test.function for test in result.tests} == {"update", "forward"} and record.ended
