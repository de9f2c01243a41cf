"""The decoding-step exercise beyond what every exercise is checked for (tests/test_advanced_tracks.py)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import advanced_track as track
from conftest import PROJECT, mutants
from grader.cli import root

ASSIGNMENT = "decoding_step"


def _cases():
    from grader.assignments.decoding_step import cases as decoding

    return decoding.public_cases()


def test_reference_obeys_what_the_checks_assume():
    """Rows sum to 1 with every filter, greedy is one-hot at the first maximum, ties and the crossing token stay."""
    cases = _cases()
    for name in (name for name in cases if name.startswith(("distribution/", "softmax/"))):
        expected = cases[name].expected
        assert np.all(np.isfinite(expected)) and np.allclose(expected.sum(axis=-1), 1.0), name
    tied = cases["top-k/ties"]
    assert np.all(np.isfinite(tied.expected).sum(axis=-1) == tied.args[1] + 1)  # the k-th value twice in each row
    greedy = cases["distribution/greedy"]
    first = greedy.args[0].argmax(axis=-1)
    assert np.array_equal(greedy.expected, np.eye(greedy.args[0].shape[-1])[first])
    assert (greedy.args[0][0] == greedy.args[0][0].max()).sum() == 2  # row 0 has two maxima; the first wins
    for name in ("top-p/half", "top-p/most", "top-p/large-logits"):
        logits, p = cases[name].args
        probabilities = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities /= probabilities.sum(axis=-1, keepdims=True)
        kept = np.isfinite(cases[name].expected)
        mass = np.where(kept, probabilities, 0.0).sum(axis=-1)
        smallest_kept = np.where(kept, probabilities, np.inf).min(axis=-1)
        assert np.all(mass >= p) and np.all(mass - smallest_kept < p), name  # reaches p, and no token too many
    boundaries = cases["sample/boundaries"]
    drawn = boundaries.expected
    assert np.all(boundaries.args[0][np.arange(len(drawn)), drawn] > 0)


def test_sampling_with_a_seeded_generator_follows_the_distribution():
    """The documented use, uniforms = rng.random(B), reproduces per seed and draws each token at its rate."""
    from grader.grading.reference import load_reference

    reference = load_reference(ASSIGNMENT)
    probs = np.tile(np.array([[0.0, 0.5, 0.2, 0.0, 0.3]]), (20000, 1))  # (20000, 5)
    first = reference.sample(probs, np.random.default_rng(7).random(len(probs)))
    again = reference.sample(probs, np.random.default_rng(7).random(len(probs)))
    assert np.array_equal(first, again) and first.dtype.kind == "i"
    rates = np.bincount(first, minlength=5) / len(first)
    assert rates[0] == rates[3] == 0.0
    assert np.allclose(rates, probs[0], atol=0.015)


def test_hidden_sizes_are_never_square_and_vary_by_seed():
    from grader.assignments.decoding_step.cases import draw_sizes

    sizes = [draw_sizes(np.random.default_rng(seed)) for seed in range(40)]
    assert all(size.B != size.V and size.V >= 8 for size in sizes)
    assert len(set(sizes)) > 10


def test_a_division_by_zero_in_plain_python_is_named_greedy():
    """1.0 / temperature raises rather than returning inf: the exception itself names the mistake."""
    code, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "decode_greedy_reciprocal.py", ASSIGNMENT)
    greedy = next(test for test in result["tests"]
                  if test["name"].endswith("test_temperature_zero_keeps_only_the_first_largest_logit"))
    assert code == 1 and greedy["outcome"] != "passed"
    assert greedy["misconception"] == "decode-greedy-divides-by-zero"
    divided = next(test for test in result["tests"] if test["name"].endswith("test_temperature_divides_the_logits"))
    assert divided["outcome"] == "passed"  # only temperature 0 is wrong


def test_a_softmax_axis_mistake_is_named_in_every_function_that_uses_the_softmax():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "decode_softmax_batch_axis.py", ASSIGNMENT)
    failed = {test["function"] for test in result["tests"] if test["outcome"] != "passed"}
    assert failed == {"softmax", "top_p_filter", "next_token_distribution"}
    assert result["misconceptions"] == ["decode-softmax-wrong-axis"]


def test_a_top_p_that_drops_the_crossing_token_passes_the_one_token_check_only():
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "decode_top_p_inclusive_cumsum.py", ASSIGNMENT)
    outcomes = {test["name"].rpartition("::")[2]: test["outcome"] for test in result["tests"]
                if test["function"] == "top_p_filter"}
    assert outcomes["test_nucleus_always_keeps_one_token"] == "passed"
    assert outcomes["test_nucleus_is_the_smallest_set_of_likeliest_tokens_reaching_p"] == "failed"


def test_a_setting_out_of_range_must_be_refused_with_value_error():
    """A top-p that accepts p = 0 loses the refusal check, told what it gave; its other validations still pass."""
    _, result = track.check(mutants(ASSIGNMENT) / "mistakes" / "decode_top_p_unsorted.py", ASSIGNMENT)
    p_range = next(test for test in result["tests"] if test["name"].endswith("test_a_p_outside_zero_to_one_is_refused"))
    assert p_range["outcome"] == "failed"
    assert "should raise ValueError for the setting 0.0" in p_range["message"] and "a value" in p_range["message"]
    for name in ("test_a_k_below_one_is_refused", "test_a_negative_temperature_is_refused"):
        assert next(test for test in result["tests"] if test["name"].endswith(name))["outcome"] == "passed"


def test_an_input_changed_in_place_is_caught_while_the_numbers_beside_it_are_not_compared(tmp_path):
    """Greedy written into the caller's logits fails the input check on logits; the reference, whose
    temperature and k are plain numbers, passes the same checks."""
    source = (PROJECT / "solutions" / f"{ASSIGNMENT}.py").read_text(encoding="utf-8")
    greedy = "    greedy = np.full(logits.shape, -np.inf)  # (B, V)\n"
    assert greedy in source
    in_place = source.replace(greedy, "    greedy = logits  # the caller's array\n    kept = logits[np.arange(logits.shape[0]), "
                              "logits.argmax(axis=-1)].copy()\n    greedy[...] = -np.inf\n"
                              "    greedy[rows, best] = kept\n    return greedy\n")
    path = tmp_path / f"{ASSIGNMENT}.py"
    path.write_text(in_place, encoding="utf-8")
    _, result = track.check(path, ASSIGNMENT)
    greedy_check = next(test for test in result["tests"]
                        if test["name"].endswith("test_temperature_zero_keeps_only_the_first_largest_logit"))
    assert greedy_check["outcome"] == "failed" and "changed its input logits in place" in greedy_check["message"]
    _, reference = track.check(PROJECT / "solutions" / f"{ASSIGNMENT}.py", ASSIGNMENT)
    assert all(test["outcome"] == "passed" for test in reference["tests"])


def test_feedback_in_chinese_names_the_mistake_without_english_prose():
    result = CliRunner().invoke(root, ["check", str(mutants(ASSIGNMENT) / "mistakes" / "decode_filter_zero_where.py"),
                                       "--assignment", ASSIGNMENT, "--lang", "zh"])
    assert result.exit_code == 1
    assert "被排除的词元的 logit 被设成 0" in result.output
    assert "Dropped tokens get the logit 0" not in result.output


def test_a_drill_of_one_function_keeps_the_others_working(tmp_path, monkeypatch):
    from grader.practice.drill import drills

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert drills(ASSIGNMENT) == ("softmax", "apply_temperature", "top_k_filter", "top_p_filter",
                                  "next_token_distribution", "sample", "all")
    failing = track.drill_failures(ASSIGNMENT, "top_p_filter", tmp_path / "drill")
    assert failing == {"top_p_filter", "next_token_distribution"}  # the distribution uses the stub


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return track.release_alone(tmp_path_factory.mktemp("release") / "decoding-student", ASSIGNMENT)


def test_released_alone_it_gives_nothing_away(release):
    track.assert_released_alone_gives_nothing_away(release, ASSIGNMENT)


def test_released_alone_it_installs_and_grades_the_stub_and_the_reference(release, tmp_path):
    track.assert_installed_release_grades_stub_and_reference(track.install_alone(release, tmp_path), ASSIGNMENT)
