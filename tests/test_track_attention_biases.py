"""The attention-biases exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

import advanced_track as track
from conftest import PROJECT, mutants
from grader.cli import root

ASSIGNMENT = "attention_biases"


def _failed_functions(result: dict) -> set[str]:
    return {test["function"] for test in result["tests"] if test["outcome"] != "passed"}


def test_reference_obeys_what_the_checks_assume():
    """The slopes follow the published ladders; decoding rows are the full pass's rows; a window holds w keys."""
    from grader.assignments.attention_biases import cases as biases

    cases = biases.public_cases()
    assert np.allclose(cases["slopes/eight"].expected, 2.0 ** -np.arange(1.0, 9.0))  # 1/2 .. 1/256
    assert np.allclose(cases["slopes/heads"].expected, [1 / 16, 1 / 256, 1 / 4])  # H = 3: two, then one between
    full, T = cases["bias/self"].expected, biases.PUBLIC_SIZES.T
    assert np.allclose(cases["bias/decode"].expected, full[:, -T:])
    assert np.all(np.diagonal(full, axis1=1, axis2=2) == 0) and np.all(full <= 0)
    window, S = cases["window/self"].expected, biases.PUBLIC_SIZES.S
    assert window.sum(axis=1).tolist() == [min(p + 1, biases.PUBLIC_WINDOW) for p in range(S)]
    assert np.array_equal(cases["window/decode"].expected, window[-T:])
    assert np.array_equal(cases["window/wide"].expected, np.tril(np.ones((T, S), dtype=bool), k=S - T))
    assert np.allclose(cases["alibi/decode"].expected, cases["alibi/prefill"].expected[:, :, -T:])


def test_a_mask_is_a_bias_of_minus_infinity():
    from grader.grading.reference import load_reference

    reference = load_reference(ASSIGNMENT)
    rng = np.random.default_rng(5)
    Q, K, V = (rng.normal(size=(2, 3, 4, 5)) for _ in range(3))
    mask = reference.sliding_window_mask(4, 4, 2)
    as_bias = np.where(mask, 0.0, -np.inf)
    assert np.allclose(reference.biased_attention(Q, K, V, mask=mask), reference.biased_attention(Q, K, V, as_bias))


def test_hidden_sizes_keep_fewer_queries_than_keys_and_distinct_sizes():
    from grader.assignments.attention_biases.cases import draw_sizes

    for seed in range(40):
        sizes = draw_sizes(np.random.default_rng(seed))
        assert 2 <= sizes.T < sizes.S - 1 and sizes.H >= 3
        assert len({sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k}) == 5


def test_hidden_cases_differ_between_students():
    from grader.assignments.attention_biases.cases import hidden_cases

    first, second = hidden_cases(1), hidden_cases(2)
    assert first.keys() == second.keys()
    assert not np.allclose(first["attention/plain"].args[0].ravel()[:4], second["attention/plain"].args[0].ravel()[:4])


def test_a_slope_mistake_is_named_where_it_is_written_in_every_function_that_uses_it():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "alibi_slopes_plain_formula.py", ASSIGNMENT)
    assert _failed_functions(result) == {"alibi_slopes", "alibi_bias", "alibi_attention"}
    assert result["misconceptions"] == ["bias-alibi-non-power-of-two"]


def test_a_signed_distance_is_right_under_a_causal_mask_and_named_where_it_shows():
    """m (j - i) equals -m |i - j| on every key a causal query sees: only alibi_bias itself can tell."""
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "alibi_bias_signed.py", ASSIGNMENT)
    assert _failed_functions(result) == {"alibi_bias"}
    assert result["misconceptions"] == ["bias-alibi-orientation"]


def test_a_window_mistake_also_fails_the_windowed_attention():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "window_plus_one.py", ASSIGNMENT)
    assert _failed_functions(result) == {"sliding_window_mask", "alibi_attention"}
    assert result["misconceptions"] == ["bias-window-off-by-one"]


def test_feedback_in_chinese_names_the_mistake_without_english_prose():
    result = CliRunner().invoke(root, ["check", str(mutants(ASSIGNMENT) / "mistakes" / "bias_after_softmax.py"),
                                       "--assignment", ASSIGNMENT, "--lang", "zh"])
    assert result.exit_code == 1
    assert "偏置加在了 softmax 之后" in result.output and "The bias is added after the softmax" not in result.output


def test_a_drill_of_one_function_keeps_the_others_working(tmp_path, monkeypatch):
    from grader.practice.drill import drills, start_drill

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert drills(ASSIGNMENT) == ("alibi_slopes", "alibi_bias", "sliding_window_mask", "biased_attention",
                                  "alibi_attention", "all")
    drill = start_drill(function="sliding_window_mask", workspace=tmp_path / "drill", assignment=ASSIGNMENT)
    source = open(drill.path, encoding="utf-8").read()
    assert source.count("raise NotImplementedError") == 1 and "# Hint:" not in source
    code, result = track.check(drill.path, ASSIGNMENT)
    assert code == 1 and _failed_functions(result) == {"sliding_window_mask", "alibi_attention"}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return track.release_alone(tmp_path_factory.mktemp("release") / "biases-student", ASSIGNMENT)


def test_released_alone_it_gives_nothing_away(release):
    track.assert_released_alone_gives_nothing_away(release, ASSIGNMENT)


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    return track.install_alone(release, tmp_path_factory.mktemp("installed"))


def _graded(installed, *arguments: str, source) -> tuple[int, dict]:
    copy, mha, env = installed
    shutil.copy(source, copy / "exercises" / f"{ASSIGNMENT}.py")
    done = subprocess.run([str(mha), "check", *arguments, "--json"], cwd=copy, env=env, capture_output=True,
                          text=True)
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def test_released_alone_it_installs_and_grades_the_stub_the_reference_and_a_mistake(installed):
    arguments = (f"exercises/{ASSIGNMENT}.py", "--assignment", ASSIGNMENT)
    code, stub = _graded(installed, *arguments, source=PROJECT / "exercises" / f"{ASSIGNMENT}.py")
    assert code == 1 and stub["score"] == 0 < stub["max_score"]
    code, reference = _graded(installed, *arguments, source=PROJECT / "solutions" / f"{ASSIGNMENT}.py")
    assert code == 0 and reference["score"] == reference["max_score"] == stub["max_score"]
    code, mistaken = _graded(installed, *arguments, source=mutants(ASSIGNMENT) / "mistakes" / "window_centred.py")
    assert code == 1 and 0 < mistaken["score"] < mistaken["max_score"]
    assert mistaken["misconceptions"] == ["bias-window-not-causal"]  # named from the shipped cases alone


def test_released_alone_the_readme_command_grades_it(installed):
    """The README's bare `mha check` checks the release's own exercise."""
    copy, _, _ = installed
    assert "run `mha check`" in (copy / "README.md").read_text(encoding="utf-8")
    code, result = _graded(installed, source=PROJECT / "solutions" / f"{ASSIGNMENT}.py")
    assert code == 0 and result["score"] == result["max_score"] > 0 and result["assignment"] == ASSIGNMENT


def test_unlocking_asks_about_each_function_before_its_checks(tmp_path, monkeypatch):
    """`mha check --unlock`: two misses show the answer and unlock; the last two functions wait for the next run."""
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(root, ["check", str(track.reference(ASSIGNMENT)), "--assignment", ASSIGNMENT,
                                       "--unlock"], input="0\n0\n0\n0\nB\nB\n")
    assert result.exit_code == 0, result.output
    for function in ("alibi_slopes", "alibi_bias", "sliding_window_mask"):
        assert f"Before the checks of {function} run" in result.output
    assert "biased_attention, alibi_attention: a question comes first for these, next time" in result.output
    assert "A sliding window sees the query itself" in result.output
    assert "biased_attention adds the bias to the logits" not in result.output
