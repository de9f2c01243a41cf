"""The rotary-embedding exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import advanced_track as track
from conftest import PROJECT, mutants
from grader.cli import root

ASSIGNMENT = "rotary_embedding"
RELATIVE_CHECK = "test_scores_depend_only_on_how_far_apart_tokens_are"


def _test(result: dict, name: str) -> dict:
    return next(test for test in result["tests"] if test["name"].endswith(name))


def test_reference_obeys_what_the_checks_assume():
    """Rows decoded from an offset are the full pass's rows; rotations keep lengths and see only distance."""
    from grader.assignments.rotary_embedding import cases as rotary

    cases = rotary.public_cases()
    full, S = cases["attention/prefill"].expected, cases["attention/decode"].kwargs["offset"]
    assert np.allclose(cases["attention/decode"].expected, full[:, :, S:])
    assert np.allclose(cases["attention/one-step"].expected, full[:, :, -1:])
    assert np.allclose(cases["attention/middle"].expected, full[:, :, 1:rotary.PUBLIC_SIZES.T])
    scattered = cases["rotary/scattered"]
    assert np.allclose(np.linalg.norm(scattered.expected, axis=-1), np.linalg.norm(scattered.args[0], axis=-1))
    near, shifted = (cases[name].expected for name in ("relative/near", "relative/shifted"))
    assert np.allclose(near[0, 0] @ near[1, 0].T, shifted[0, 0] @ shifted[1, 0].T)
    assert not np.allclose(near, shifted)  # the values move; only the scores stay


def test_hidden_sizes_keep_an_even_head_width_with_several_pairs():
    from grader.assignments.rotary_embedding.cases import draw_sizes

    for seed in range(40):
        sizes = draw_sizes(np.random.default_rng(seed))
        assert sizes.d_k % 2 == 0 and sizes.d_k >= 4
        assert len({sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k, sizes.D}) == 6


def test_the_relative_check_catches_a_non_rotation_and_says_so():
    """Mixed layouts are no rotation: the property check fails, with its message and the twin's name."""
    code, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "rope_pairs_mixed_layouts.py", ASSIGNMENT)
    relative = _test(result, RELATIVE_CHECK)
    assert code == 1 and relative["outcome"] == "failed"
    assert relative["misconception"] == "rope-pairs-halves"
    assert "Moving every position by 37" in relative["message"]


def test_the_relative_check_passes_every_true_rotation():
    """Split halves and a reversed turn are still rotations: only the value checks name them."""
    for name in ("rope_pairs_halves_split.py", "rope_rotation_reversed.py", "rope_frequency_per_pair.py"):
        _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / name, ASSIGNMENT)
        assert _test(result, RELATIVE_CHECK)["outcome"] == "passed", name
        assert _test(result, "test_rotary_turns_adjacent_pairs_by_position_times_frequency")["outcome"] == "failed"


def test_a_frequency_mistake_is_named_where_it_is_written_in_every_function_that_uses_it():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "rope_frequency_positive_exponent.py", ASSIGNMENT)
    failed = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert failed == {"rope_frequencies", "sinusoidal_positions", "apply_rotary", "rotary_attention"}
    assert result["misconceptions"] == ["rope-frequency-exponent"]


def test_feedback_in_chinese_names_the_mistake_without_english_prose():
    result = CliRunner().invoke(root, ["check", str(mutants(ASSIGNMENT) / "mistakes" / "rope_rotates_values.py"),
                                       "--assignment", ASSIGNMENT, "--lang", "zh"])
    assert result.exit_code == 1
    assert "连值也被旋转了" in result.output and "The values are rotated too" not in result.output


def test_a_drill_of_one_function_keeps_the_others_working(tmp_path, monkeypatch):
    from grader.practice.drill import drills

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert drills(ASSIGNMENT) == ("rope_frequencies", "sinusoidal_positions", "apply_rotary", "rotary_attention",
                                  "all")
    failing = track.drill_failures(ASSIGNMENT, "apply_rotary", tmp_path / "drill")
    assert failing == {"apply_rotary", "rotary_attention"}  # attention uses the stub


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return track.release_alone(tmp_path_factory.mktemp("release") / "rotary-student", ASSIGNMENT)


def test_released_alone_it_gives_nothing_away(release):
    track.assert_released_alone_gives_nothing_away(release, ASSIGNMENT)


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    """The release copied, installed alone in a fresh venv: (its folder, its `mha`, a clean environment)."""
    return track.install_alone(release, tmp_path_factory.mktemp("installed"))


def _graded(installed, *arguments: str, reference: bool) -> tuple[int, dict]:
    source = PROJECT / ("solutions" if reference else "exercises") / f"{ASSIGNMENT}.py"
    return track.check_in_release(installed, source, ASSIGNMENT, *arguments)


def test_released_alone_it_installs_and_grades_the_stub_and_the_reference(installed):
    arguments = (f"exercises/{ASSIGNMENT}.py", "--assignment", ASSIGNMENT)
    code, stub = _graded(installed, *arguments, reference=False)
    assert code == 1 and stub["score"] == 0 < stub["max_score"]
    code, reference = _graded(installed, *arguments, reference=True)
    assert code == 0 and reference["score"] == reference["max_score"] == stub["max_score"]


def test_released_alone_the_readme_command_grades_it(installed):
    """The README's bare `mha check` checks the release's own exercise (every README command of every release:
    tests/test_release_readmes.py)."""
    copy, _, _ = installed
    assert "run `mha check`" in (copy / "README.md").read_text(encoding="utf-8")
    code, result = _graded(installed, reference=True)
    assert code == 0 and result["score"] == result["max_score"] > 0
    assert result["assignment"] == ASSIGNMENT
    code, stub = _graded(installed, reference=False)
    assert code == 1 and stub["score"] == 0 < stub["max_score"]


def test_unlocking_asks_about_each_function_before_its_checks(tmp_path, monkeypatch):
    """`mha check --unlock`: two misses show the answer and unlock; the fourth function waits for the next run."""
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(root, ["check", str(track.reference(ASSIGNMENT)), "--assignment", ASSIGNMENT,
                                       "--unlock"], input="0\n" * 6)
    assert result.exit_code == 0, result.output
    for function in ("rope_frequencies", "sinusoidal_positions", "apply_rotary"):
        assert f"Before the checks of {function} run" in result.output
    assert "rotary_attention: a question comes first for these, next time" in result.output
    assert "The frequencies start at one radian per position" in result.output
    assert "rotary_attention turns the queries and keys" not in result.output
