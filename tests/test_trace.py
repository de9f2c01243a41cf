"""The trace of the reference forward pass, and the embedding it starts from."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from grader.errors import ConfigError, UsageError
from grader.grading.reference import fresh_reference, load_reference
from grader.viz.embedding import embed, init_weights, positional_code, token_vector, tokenize
from grader.viz.trace import STAGES, Trace, check_heads, divisors, trace_reference, trace_sentence

SENTENCE = "the cat chases the mouse"


@pytest.fixture(scope="module")
def trace() -> Trace:
    return trace_sentence(sentence=SENTENCE, d_model=16, num_heads=4, seed=0)


def test_every_stage_is_recorded_in_order_with_its_shape(trace):
    assert list(trace.stages) == list(STAGES)
    sizes = trace.sizes
    assert sizes == {"B": 1, "H": 4, "T": 5, "S": 5, "D": 16, "d_k": 4}
    for name, axes in STAGES.items():
        assert trace.stages[name].shape == tuple(sizes[axis] for axis in axes), name


def test_stages_follow_from_each_other(trace):
    stages = trace.stages
    x = stages["inputs"][0]  # (T, D)
    np.testing.assert_allclose(stages["queries"][0], x @ trace.parameters["W_Q"])
    # head 2 owns the contiguous feature block 8:12 of every position
    np.testing.assert_allclose(stages["queries_split"][0, 2], stages["queries"][0, :, 8:12])
    np.testing.assert_allclose(stages["scaled_scores"], stages["scores"] / 2.0)  # sqrt(d_k) = 2
    weights = stages["weights"]
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    assert (weights > 0).all()
    np.testing.assert_allclose(stages["head_outputs"][0, 1], weights[0, 1] @ stages["values_split"][0, 1])
    np.testing.assert_allclose(stages["concatenated"][0, :, 4:8], stages["head_outputs"][0, 1])
    np.testing.assert_allclose(stages["output"], stages["concatenated"] @ trace.parameters["W_O"])


def test_trace_matches_the_reference_forward(trace):
    attention = load_reference().MultiHeadAttention(16, 4)
    for name, value in trace.parameters.items():
        setattr(attention, name, value)
    x = trace.stages["inputs"]
    output, weights = attention.forward(x, x, x, return_weights=True)
    np.testing.assert_allclose(trace.stages["output"], output)
    np.testing.assert_allclose(trace.stages["weights"], weights)


def test_trace_is_reproducible_and_heads_split_the_same_projections(trace):
    again = trace_sentence(sentence=SENTENCE, d_model=16, num_heads=4, seed=0)
    for name in STAGES:
        np.testing.assert_array_equal(again.stages[name], trace.stages[name])
    two_heads = trace_sentence(sentence=SENTENCE, d_model=16, num_heads=2, seed=0)
    np.testing.assert_array_equal(two_heads.stages["queries"], trace.stages["queries"])
    assert two_heads.stages["weights"].shape == (1, 2, 5, 5)
    other_seed = trace_sentence(sentence=SENTENCE, d_model=16, num_heads=4, seed=1)
    assert not np.allclose(other_seed.stages["queries"], trace.stages["queries"])


def test_a_disagreeing_reference_is_refused():
    reference = fresh_reference()
    original = reference.scaled_dot_product_attention

    def drifted(Q, K, V):
        out, weights = original(Q, K, V)
        return out * 1.01, weights

    reference.scaled_dot_product_attention = drifted
    with pytest.raises(ConfigError, match="head_outputs"):
        trace_sentence(sentence=SENTENCE, reference=reference)


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_export_round_trips(trace, tmp_path, suffix):
    path = trace.save(tmp_path / f"trace{suffix}")
    loaded = Trace.load(path)
    assert loaded.query_tokens == trace.query_tokens
    assert (loaded.d_model, loaded.num_heads, loaded.seed) == (16, 4, 0)
    for name in STAGES:
        np.testing.assert_array_equal(loaded.stages[name], trace.stages[name])
    np.testing.assert_array_equal(loaded.parameters["W_V"], trace.parameters["W_V"])


def test_export_refuses_an_unknown_format(trace, tmp_path):
    with pytest.raises(UsageError, match=r"\.json or \.npz"):
        trace.save(tmp_path / "trace.csv")


def test_json_export_names_axes_and_shapes(trace):
    data = trace.to_dict(decimals=3)
    weights = next(stage for stage in data["stages"] if stage["name"] == "weights")
    assert weights["axes"] == ["B", "H", "T", "S"]
    assert weights["shape"] == [1, 4, 5, 5]
    assert weights["data"][0][0][0][0] == round(float(trace.stages["weights"][0, 0, 0, 0]), 3)


def test_heads_must_divide_d_model():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    check_heads(16, 8)
    with pytest.raises(UsageError, match="Valid head counts for D = 16: 1, 2, 4, 8, 16"):
        check_heads(16, 3)
    with pytest.raises(UsageError):
        trace_sentence(sentence=SENTENCE, d_model=16, num_heads=0)


def test_a_token_vector_depends_only_on_the_token():
    seed = int.from_bytes(hashlib.sha256("cat".encode()).digest()[:8], "big")
    np.testing.assert_array_equal(token_vector("cat", 8), np.random.default_rng(seed).standard_normal(8))
    first = embed(["the", "cat"], 8)
    second = embed(["a", "cat"], 8)
    np.testing.assert_array_equal(first[1], second[1])  # same token, same position
    repeated = embed(["the", "dog", "the"], 8)
    assert not np.allclose(repeated[0], repeated[2])  # positions tell the two "the" apart
    np.testing.assert_allclose(repeated[0] - repeated[2], positional_code(3, 8)[0] - positional_code(3, 8)[2])


def test_weights_depend_on_seed_and_width_only():
    first, second = init_weights(8, seed=3), init_weights(8, seed=3)
    assert sorted(first) == ["W_K", "W_O", "W_Q", "W_V"]
    for name in first:
        assert first[name].shape == (8, 8)
        np.testing.assert_array_equal(first[name], second[name])
    assert not np.allclose(init_weights(8, seed=4)["W_Q"], first["W_Q"])


def test_tokenize_keeps_spaced_words_and_splits_unspaced_cjk():
    assert tokenize("  the cat  sat ") == ["the", "cat", "sat"]
    assert tokenize("猫 追 老鼠") == ["猫", "追", "老鼠"]
    assert tokenize("猫追老鼠") == ["猫", "追", "老", "鼠"]
    assert tokenize("") == []


def test_trace_reference_accepts_given_inputs():
    reference = load_reference()
    inputs = np.linspace(-1, 1, 2 * 3 * 8).reshape(2, 3, 8)  # (B, T, D)
    trace = trace_reference(reference=reference, inputs=inputs, tokens=["a", "b", "c"],
                            num_heads=2, weights=init_weights(8, seed=5))
    assert trace.sizes == {"B": 2, "H": 2, "T": 3, "S": 3, "D": 8, "d_k": 4}
    assert trace.head_weights(1).shape == (2, 3, 3)
