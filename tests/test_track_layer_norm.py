"""The normalisation exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import advanced_track as track
from conftest import PROJECT, mutants
from grader.cli import root

ASSIGNMENT = "layer_norm"
EPS_CHECK = "test_layer_norm_keeps_eps_inside_the_root"


def _test(result: dict, name: str) -> dict:
    return next(test for test in result["tests"] if test["name"].endswith(name))


def _failed(result: dict) -> dict[str, str]:
    return {test["name"].rpartition("::")[2]: test["misconception"] for test in result["tests"]
            if test["outcome"] != "passed"}


def test_reference_obeys_what_the_checks_assume():
    """The inputs show each mistake: tokens far from standard, a variance below eps, scores beyond 709."""
    from grader.assignments.layer_norm import cases as norm
    from grader.grading.reference import load_reference

    reference = load_reference(ASSIGNMENT)
    cases = norm.public_cases()
    x, gamma, beta = cases["layer/tokens"].args
    assert np.ptp(x.mean(axis=-1)) > 1 and np.ptp(x.std(axis=-1)) > 1  # centring and scaling both matter
    standard = (cases["layer/tokens"].expected - beta) / gamma  # (B, T, D): x_hat
    variance = x.var(axis=-1)
    assert np.allclose(standard.mean(axis=-1), 0) and np.allclose(standard.var(axis=-1), variance / (variance + 1e-5))
    quiet = cases["layer/nearly-constant"].args[0]
    assert np.all(quiet.var(axis=-1) < 1e-5)  # below the default eps: where it stands decides the value
    tiny = cases["rms/tiny"].args[0]
    assert np.all(np.mean(tiny * tiny, axis=-1) < 1e-5)
    rms, gain = cases["rms/tokens"].expected, cases["rms/tokens"].args[1]
    assert np.allclose(np.mean((rms / gain) ** 2, axis=-1), 1, atol=1e-4)
    block = cases["block/tokens"]
    x, gamma, beta, W_qkv, W_o, heads = block.args
    assert np.allclose(block.expected - x, reference.self_attention(reference.layer_norm(x, gamma, beta),
                                                                    W_qkv, W_o, heads))
    x, gamma, beta, W_qkv, _, heads = cases["block/large-logits"].args
    assert norm._clear_winners(x, gamma, beta, W_qkv, heads)  # some score beyond 709, no near ties


def test_hidden_sizes_are_distinct_and_wide_enough_for_d_minus_one_to_show():
    from grader.assignments.layer_norm.cases import draw_sizes, hidden_cases

    for seed in range(40):
        sizes = draw_sizes(np.random.default_rng(seed))
        assert len({sizes.B, sizes.T, sizes.H, sizes.d_k, sizes.D}) == 5 and sizes.D >= 6
    one, other = hidden_cases(1), hidden_cases(2)
    assert not np.array_equal(one["layer/tokens"].args[0], other["layer/tokens"].args[0])


def test_a_layer_norm_mistake_is_named_in_the_block_too_as_its_root_cause():
    code, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "norm_sample_variance_ddof.py", ASSIGNMENT)
    failed = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert code == 1 and failed == {"layer_norm", "pre_norm_block"}
    assert result["misconceptions"] == ["norm-sample-variance"]


def test_an_in_place_layer_norm_is_named_where_it_spoils_the_block():
    """Writing into x makes the block add the normalised input back: named as the in-place write, not as
    a residual of the wrong source, since layer_norm's own check shows the write."""
    code, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "norm_in_place_layer.py", ASSIGNMENT)
    failed = _failed(result)
    assert code == 1 and failed["test_layer_norm_leaves_its_input_alone"] == "norm-in-place"
    assert failed["test_pre_norm_block_adds_the_sublayer_of_the_normalised_input_to_x"] == "norm-in-place"
    assert "test_layer_norm_normalises_each_token_over_its_features" not in failed  # its values are right


def test_only_the_eps_checks_see_eps_outside_the_root():
    """With ordinary tokens eps outside the root is off by less than the tolerance: the quiet tokens catch it."""
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "norm_epsilon_added_to_std.py", ASSIGNMENT)
    failed = _failed(result)
    assert failed[EPS_CHECK] == "norm-epsilon"
    assert "test_layer_norm_normalises_each_token_over_its_features" not in failed
    assert not any("rms_norm" in name for name in failed)


def test_post_norm_is_told_apart_from_normalising_the_branch():
    for name, expected in (("norm_post_norm.py", "norm-post-norm"), ("norm_branch_output.py", "norm-branch-output"),
                           ("norm_residual_reassigned.py", "norm-residual-source")):
        _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / name, ASSIGNMENT)
        failed = _failed(result)
        assert set(failed) == {"test_pre_norm_block_adds_the_sublayer_of_the_normalised_input_to_x",
                               "test_pre_norm_block_with_another_number_of_heads",
                               "test_pre_norm_block_with_large_logits", "test_pre_norm_block_on_drawn_inputs"}, name
        assert set(failed.values()) == {expected}, name


def test_feedback_in_chinese_names_the_mistake_without_english_prose():
    result = CliRunner().invoke(root, ["check", str(mutants(ASSIGNMENT) / "mistakes" / "norm_rms_centred.py"),
                                       "--assignment", ASSIGNMENT, "--lang", "zh"])
    assert result.exit_code == 1
    assert "RMSNorm 减去了均值" in result.output and "RMSNorm subtracts the mean" not in result.output


def test_a_drill_of_one_function_keeps_the_others_working(tmp_path, monkeypatch):
    from grader.practice.drill import drills, start_drill

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert drills(ASSIGNMENT) == ("layer_norm", "rms_norm", "pre_norm_block", "all")
    drill = start_drill(function="layer_norm", workspace=tmp_path / "drill", assignment=ASSIGNMENT)
    source = open(drill.path, encoding="utf-8").read()
    assert source.count("raise NotImplementedError") == 1 and "# Hint:" not in source
    code, result = track.check(drill.path, ASSIGNMENT)
    outcomes = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert code == 1 and outcomes == {"layer_norm", "pre_norm_block"}  # the block normalises with the stub


def test_the_quiz_topic_lists_and_poses_normalisation_questions(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    listed = CliRunner().invoke(root, ["quiz", "--list", "--topic", "normalisation", "--json"])
    assert listed.exit_code == 0, listed.output
    questions = json.loads(listed.output)
    assert {"norm-statistics-axis", "norm-rms-definition", "norm-pre-norm-formula"} <= {q["id"] for q in questions}
    assert all(q["topic"] == "normalisation" and q["languages"] == ["en", "zh"] for q in questions)
    linked = {misconception for q in questions for misconception in q["misconceptions"]}
    assert linked == track.catalog_ids("norm-")  # every catalogued mistake has a question that teaches it
    posed = CliRunner().invoke(root, ["quiz", "--topic", "normalisation", "--count", "3", "--seed", "3",
                                      "--lang", "zh"], input="1\n" * 3)
    assert posed.exit_code == 0, posed.output
    assert "LayerNorm、RMSNorm 以及归一化在模块中的位置" in posed.output and "3" in posed.output


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return track.release_alone(tmp_path_factory.mktemp("release") / "norm-student", ASSIGNMENT)


def test_released_alone_it_gives_nothing_away(release):
    track.assert_released_alone_gives_nothing_away(release, ASSIGNMENT)


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    return track.install_alone(release, tmp_path_factory.mktemp("installed"))


def test_released_alone_it_installs_and_grades_the_stub_the_reference_and_a_mistake(installed):
    arguments = (ASSIGNMENT, f"exercises/{ASSIGNMENT}.py", "--assignment", ASSIGNMENT)
    code, stub = track.check_in_release(installed, PROJECT / "exercises" / f"{ASSIGNMENT}.py", *arguments)
    assert code == 1 and stub["score"] == 0 < stub["max_score"]
    code, reference = track.check_in_release(installed, PROJECT / "solutions" / f"{ASSIGNMENT}.py", *arguments)
    assert code == 0 and reference["score"] == reference["max_score"] == stub["max_score"]
    code, post_norm = track.check_in_release(installed, mutants(ASSIGNMENT) / "mistakes" / "norm_post_norm.py",
                                             *arguments)
    assert code == 1 and post_norm["misconceptions"] == ["norm-post-norm"]  # the public checks name it there


def test_released_alone_the_readme_command_grades_it(installed):
    """The README's bare `mha check` checks the release's own exercise."""
    copy, _, _ = installed
    assert "run `mha check`" in (copy / "README.md").read_text(encoding="utf-8")
    code, result = track.check_in_release(installed, PROJECT / "solutions" / f"{ASSIGNMENT}.py", ASSIGNMENT)
    assert code == 0 and result["score"] == result["max_score"] > 0 and result["assignment"] == ASSIGNMENT


def test_unlocking_asks_about_each_function_before_its_checks(tmp_path, monkeypatch):
    """`mha check --unlock`: a right answer, or two misses that show it, unlock the function's checks."""
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(root, ["check", str(track.reference(ASSIGNMENT)), "--assignment", ASSIGNMENT,
                                       "--unlock"], input="A\nB\nC\nD\n" * 3)
    assert result.exit_code == 0, result.output
    for function in ("layer_norm", "rms_norm", "pre_norm_block"):
        assert f"Before the checks of {function} run" in result.output
    assert "layer_norm normalises each token over its own features" in result.output
