"""The linear-attention exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

import advanced_track as track
from conftest import PROJECT, mutants
from grader.cli import root

ASSIGNMENT = "linear_attention"
FUNCTIONS = ("feature_map", "linear_attention", "causal_linear_attention", "linear_attention_step")


def _test(result: dict, name: str) -> dict:
    return next(test for test in result["tests"] if test["name"].endswith(name))


def _failed(result: dict) -> dict[str, str]:
    return {test["name"].rpartition("::")[2]: test.get("misconception")
            for test in result["tests"] if test["outcome"] != "passed"}


def test_reference_obeys_what_the_checks_assume():
    """The causal last row is the full form's; a step from the true prefix gives that causal row and the next
    prefix's sums; later tokens leave earlier rows alone; equal values average to themselves; phi > 0."""
    from grader.assignments.linear_attention import cases as linear

    cases = linear.public_cases()
    reference = track.reference(ASSIGNMENT)
    spec = importlib.util.spec_from_file_location("linear_reference", reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    Q, K, V = cases["causal/long"].args
    causal = cases["causal/long"].expected
    assert np.allclose(causal[:, :, -1], module.linear_attention(Q, K, V)[:, :, -1])
    assert not np.allclose(causal[:, :, 0], module.linear_attention(Q, K, V)[:, :, 0])

    q, k, v, state, normaliser = cases["step/middle"].args
    middle = next(t for t in range(Q.shape[2]) if np.array_equal(Q[:, :, t], q))
    out, new_state, new_normaliser = cases["step/middle"].expected
    assert np.allclose(out, causal[:, :, middle])
    after = linear.sums_before(K, V, middle + 1)
    assert np.allclose(new_state, after[0]) and np.allclose(new_normaliser, after[1])
    assert np.allclose(cases["step/first"].expected[0], cases["step/first"].args[2])  # alone, it reads its own value

    keep = linear.PUBLIC_SIZES.T // 2 + 1
    same, changed = cases["causal/self"].expected, cases["causal/later-changed"].expected
    assert np.allclose(same[:, :, :keep], changed[:, :, :keep]) and not np.allclose(same, changed)

    one_value = cases["full/one-value"]
    assert np.allclose(one_value.expected, np.broadcast_to(one_value.args[2][:, :, :1], one_value.expected.shape))
    far = cases["feature/far"].expected
    assert np.all(np.isfinite(far)) and np.all(far >= 0) and np.all(cases["feature/grid"].expected > 0)


def test_hidden_sizes_are_distinct_with_several_positions():
    from grader.assignments.linear_attention.cases import draw_sizes

    for seed in range(40):
        sizes = draw_sizes(np.random.default_rng(seed))
        assert min(sizes.T, sizes.S) >= 3
        assert len({sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.d_v}) == 6


def test_hidden_cases_differ_by_seed_and_are_named_apart():
    from grader.assignments.linear_attention.cases import hidden_cases

    first, second = hidden_cases(11), hidden_cases(12)
    assert all(case.id.startswith("hidden:") for case in first.values())
    assert not np.array_equal(first["causal/long"].args[0], second["causal/long"].args[0]) \
        or first["causal/long"].args[0].shape != second["causal/long"].args[0].shape


def test_a_feature_map_mistake_is_named_where_it_is_written_in_every_function_that_uses_it():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "elu_without_one.py", ASSIGNMENT)
    failed = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert failed == set(FUNCTIONS)
    assert result["misconceptions"] == ["linear-attention-elu-without-one"]


def test_a_normaliser_over_every_position_fails_the_later_tokens_check_as_a_leak():
    code, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "normaliser_over_all_positions.py", ASSIGNMENT)
    later = _test(result, "test_causal_rows_ignore_later_tokens")
    assert code == 1 and later["outcome"] == "failed" and later["misconception"] == "linear-attention-future-leak"
    assert {test["function"] for test in result["tests"] if test["outcome"] != "passed"} == {"causal_linear_attention"}


def test_a_step_that_adds_in_place_keeps_its_values_and_loses_only_the_state_checks():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "step_adds_in_place.py", ASSIGNMENT)
    assert _failed(result) == {"test_step_leaves_the_callers_state_alone": "linear-attention-step-in-place",
                               "test_step_on_drawn_inputs": "linear-attention-step-in-place"}


def test_reading_before_the_update_is_told_apart_from_an_exclusive_prefix():
    """The same idea in two places: the step's id in the step, the prefix sum's id in the causal form."""
    _, step = track.check(mutants(ASSIGNMENT) / "mistakes" / "step_reads_then_updates.py", ASSIGNMENT)
    _, causal = track.check(mutants(ASSIGNMENT) / "mistakes" / "exclusive_loop_reads_first.py", ASSIGNMENT)
    assert step["misconceptions"] == ["linear-attention-step-reads-before-update"]
    assert causal["misconceptions"] == ["linear-attention-exclusive-prefix"]


def test_feedback_in_chinese_names_the_mistake_without_english_prose():
    result = CliRunner().invoke(root, ["check", str(mutants(ASSIGNMENT) / "mistakes" / "exclusive_shifted_cumsum.py"),
                                       "--assignment", ASSIGNMENT, "--lang", "zh"])
    assert result.exit_code == 1
    assert "累计和在词元自己之前就停了" in result.output
    assert "The running sums stop before the token itself" not in result.output


def test_a_drill_of_one_function_keeps_the_others_working(tmp_path, monkeypatch):
    from grader.practice.drill import drills, start_drill

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert drills(ASSIGNMENT) == (*FUNCTIONS, "all")
    drill = start_drill(function="causal_linear_attention", workspace=tmp_path / "drill", assignment=ASSIGNMENT)
    source = open(drill.path, encoding="utf-8").read()
    assert source.count("raise NotImplementedError") == 1 and "# Hint:" not in source
    code, result = track.check(drill.path, ASSIGNMENT)
    failed = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert code == 1 and failed == {"causal_linear_attention"}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return track.release_alone(tmp_path_factory.mktemp("release") / "linear-student", ASSIGNMENT)


def test_released_alone_it_gives_nothing_away(release):
    track.assert_released_alone_gives_nothing_away(release, ASSIGNMENT)


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    """The release copied, installed alone in a fresh venv: (its folder, its `mha`, a clean environment)."""
    return track.install_alone(release, tmp_path_factory.mktemp("installed"))


def _graded(installed, source, *arguments: str) -> tuple[int, dict]:
    copy, mha, env = installed
    shutil.copy(source, copy / "exercises" / f"{ASSIGNMENT}.py")
    done = subprocess.run([str(mha), "check", f"exercises/{ASSIGNMENT}.py", "--assignment", ASSIGNMENT, *arguments,
                           "--json"], cwd=copy, env=env, capture_output=True, text=True)
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def test_released_alone_it_installs_and_grades_the_stub_the_reference_and_a_mistake(installed):
    code, stub = _graded(installed, PROJECT / "exercises" / f"{ASSIGNMENT}.py")
    assert code == 1 and stub["score"] == 0 < stub["max_score"]
    code, reference = _graded(installed, PROJECT / "solutions" / f"{ASSIGNMENT}.py")
    assert code == 0 and reference["score"] == reference["max_score"] == stub["max_score"]
    code, mistaken = _graded(installed, mutants(ASSIGNMENT) / "mistakes" / "cumsum_last_axis.py")
    assert code == 1 and "linear-attention-cumsum-axis" in mistaken["misconceptions"]


def test_unlocking_asks_about_each_function_before_its_checks(tmp_path, monkeypatch):
    """`mha check --unlock`: two misses show the answer and unlock; the fourth function waits for the next run."""
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(root, ["check", str(track.reference(ASSIGNMENT)), "--assignment", ASSIGNMENT,
                                       "--unlock"], input="0\n" * 6)
    assert result.exit_code == 0, result.output
    for function in FUNCTIONS[:3]:
        assert f"Before the checks of {function} run" in result.output
    assert "linear_attention_step: a question comes first for these, next time" in result.output
    assert "feature_map is elu(x) + 1" in result.output
    assert "A step after earlier tokens gives the row" not in result.output
