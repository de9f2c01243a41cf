"""The fixed (non-template) answers of the bank, checked by running code.

Templates are measured in tests/test_quiz_templates.py. Here each fixed
numeric answer is recomputed from the shapes the prompt gives, and each
true/false or single-choice claim that a computation can settle is settled
by one: a finite-difference Jacobian, a rotated vector, a masked softmax, a
gradient step on two identical heads.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from grader.grading.reference import load_reference
from grader.practice.bank import default_bank


def answer(question_id):
    return default_bank().get(question_id).answer


def right_choice(question_id, lang="en"):
    return next(choice.text[lang] for choice in default_bank().get(question_id).choices if choice.correct)


def softmax(x):
    return load_reference().softmax(np.asarray(x, dtype=float))


RNG = np.random.default_rng(12)


# --- fixed numeric answers -----------------------------------------------------------------

def gpt2_small_parameters():
    """Count GPT-2 small's parameters from its array shapes (nothing is allocated)."""
    vocabulary, positions, width, blocks = 50257, 1024, 768, 12
    block = [(width, width)] * 4 + [(width,)] * 4  # attention: W_Q, W_K, W_V, W_O and biases
    block += [(width, 4 * width), (4 * width,), (4 * width, width), (width,)]  # the MLP
    block += [(width,)] * 4  # two LayerNorms, gain and bias each
    model = [(vocabulary, width), (positions, width)] + block * blocks + [(width,)] * 2
    return sum(math.prod(shape) for shape in model)  # the output layer is the tied embedding


def kib_per_token(layers, kv_heads, d_k):
    return np.zeros((2, layers, kv_heads, d_k), dtype=np.float16).nbytes / 1024


FIXED_NUMERIC = {
    "sizing-gpt2-small": gpt2_small_parameters,
    "serving-llama2-7b-per-token": lambda: kib_per_token(32, 32, 128),
    "serving-llama2-70b-per-token": lambda: kib_per_token(80, 8, 128),
    "serving-latent-cache": lambda: np.zeros((60, 512 + 64), dtype=np.float16).nbytes,
}


def test_every_fixed_numeric_question_is_recomputed():
    fixed = {q.id for q in default_bank().questions if q.kind == "numeric" and not q.is_template}
    assert fixed == set(FIXED_NUMERIC)


@pytest.mark.parametrize("question_id", sorted(FIXED_NUMERIC))
def test_fixed_numeric_answer(question_id):
    assert math.isclose(answer(question_id), FIXED_NUMERIC[question_id](), rel_tol=1e-12)


def test_gpt2_small_is_the_124m_model_and_attention_is_a_third_of_a_block():
    assert round(gpt2_small_parameters() / 1e6) == 124
    width = 768
    attention, mlp = 4 * width * width, 8 * width * width
    assert attention / (attention + mlp) == pytest.approx(1 / 3)


def test_more_heads_do_not_change_the_parameter_count():
    def count(heads):
        layer = load_reference().MultiHeadAttention(512, heads)
        return sum(w.size for w in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O))

    assert count(8) == count(16) == 1_048_576
    assert "1,048,576" in right_choice("heads-more-parameters")


# --- what attention computes ---------------------------------------------------------------

def test_a_margin_of_20_copies_one_value():
    scores = RNG.normal(size=6)
    scores[3] = scores.max() + 20
    values = RNG.normal(size=(6, 4))
    assert np.allclose(softmax(scores) @ values, values[3], atol=1e-7)
    assert "v_3" in right_choice("math-copy-one-value")


def test_a_query_between_two_orthonormal_keys_averages_their_values():
    keys = np.linalg.qr(RNG.normal(size=(5, 5)))[0]  # orthonormal rows
    values = RNG.normal(size=(5, 3))
    query = 40.0 * (keys[1] + keys[3])
    assert np.allclose(softmax(keys @ query) @ values, (values[1] + values[3]) / 2, atol=1e-9)


def test_an_average_of_values_in_orthogonal_subspaces_gives_one_back():
    basis = np.linalg.qr(RNG.normal(size=(6, 6)))[0]
    first, second = basis[:, :3], basis[:, 3:]  # orthogonal subspaces A and B
    value_a, value_b = first @ RNG.normal(size=3), second @ RNG.normal(size=3)
    projection = first @ first.T  # P_A
    assert np.allclose(2 * projection @ ((value_a + value_b) / 2), value_a)
    assert right_choice("math-recover-from-average") == "Compute 2 * P_A o"


def test_the_gradient_with_respect_to_the_query_is_the_keys_covariance():
    keys = RNG.normal(size=(5, 4))
    query = RNG.normal(size=4)

    def f(q):
        return softmax(keys @ q) @ keys

    step = 1e-6
    numeric = np.stack([(f(query + step * e) - f(query - step * e)) / (2 * step) for e in np.eye(4)], axis=1)
    weights, mean = softmax(keys @ query), f(query)
    covariance = (keys * weights[:, None]).T @ keys - np.outer(mean, mean)
    assert np.allclose(numeric, covariance, atol=1e-7)
    assert right_choice("math-gradient-covariance") == "sum_i a_i k_i k_i^T - f f^T"


def test_a_shared_query_key_matrix_gives_symmetric_scores_that_favour_the_token_itself():
    x, w = RNG.normal(size=(6, 8)), RNG.normal(size=(8, 8))
    scores = (x @ w) @ (x @ w).T
    assert np.allclose(scores, scores.T)
    norms = np.linalg.norm(x @ w, axis=1)
    for i in range(6):
        for j in range(6):
            if norms[j] <= norms[i]:
                assert scores[i, i] >= scores[i, j] - 1e-12


def test_scaling_the_queries_first_gives_the_same_weights():
    q, k = RNG.normal(size=(5, 16)), RNG.normal(size=(7, 16))
    assert np.allclose(softmax((q / 4.0) @ k.T), softmax(q @ k.T / 4.0))
    assert answer("math-scale-queries-first") is True


# --- heads -----------------------------------------------------------------------------------

def test_two_identical_heads_get_identical_gradients():
    layer = load_reference("attention_backward").MultiHeadAttention(8, 2)
    for name in ("W_Q", "W_K", "W_V"):
        matrix = getattr(layer, name)
        matrix[:, 4:] = matrix[:, :4]  # head 1's columns equal head 0's
    layer.W_O[4:] = layer.W_O[:4]  # and so do the rows of W_O that read them
    x = RNG.normal(size=(2, 5, 8))
    layer.forward(x, x, x)
    layer.backward(RNG.normal(size=(2, 5, 8)))
    for name in ("dW_Q", "dW_K", "dW_V"):
        gradient = getattr(layer, name)
        assert np.allclose(gradient[:, 4:], gradient[:, :4])
    assert np.allclose(layer.dW_O[4:], layer.dW_O[:4])
    assert right_choice("heads-identical-stay-identical").startswith("They stay identical")


def test_each_head_reads_every_input_feature():
    layer = load_reference().MultiHeadAttention(12, 3)
    x = RNG.normal(size=(1, 4, 12))
    changed = x.copy()
    changed[..., 0] += 1.0  # a feature outside head 2's block 8:12
    head_2 = lambda inputs: layer.split_heads(inputs @ layer.W_Q)[:, 2]  # noqa: E731
    assert not np.allclose(head_2(x), head_2(changed))


# --- positions ------------------------------------------------------------------------------

def rotate(vector, position, base=10000.0):
    pairs = vector[0::2] + 1j * vector[1::2]
    turned = pairs * np.exp(1j * position * base ** (-np.arange(0, vector.size, 2) / vector.size))
    out = np.empty_like(vector)
    out[0::2], out[1::2] = turned.real, turned.imag
    return out


def test_rotary_scores_depend_only_on_the_offset():
    q, k = RNG.normal(size=16), RNG.normal(size=16)
    score = lambda m, n: rotate(q, m) @ rotate(k, n)  # noqa: E731
    assert math.isclose(score(7, 3), score(107, 103), rel_tol=1e-9)
    assert not math.isclose(score(7, 3), score(7, 4), rel_tol=1e-3)
    assert answer("rope-relative") is False  # the statement says a common shift changes the score


def test_the_softmax_is_about_one_percent_of_the_flops_of_a_head():
    length, d_k = 4096, 128
    products = 2 * (2 * length * length * d_k)  # Q K^T and weights @ V
    softmax_flops = 5 * length * length
    assert softmax_flops / products < 0.02
    assert answer("complexity-softmax-flops") is False


def test_a_sinusoidal_shift_is_one_linear_map_for_every_position():
    import quiz_measures

    table = quiz_measures.sinusoidal_table(80, 8)
    shift = 5
    start, later = table[:70], table[shift:75]
    linear_map = np.linalg.lstsq(start, later, rcond=None)[0]
    assert np.allclose(start @ linear_map, later, atol=1e-9)
    assert answer("positions-sinusoidal-shift") is True


def test_without_positions_self_attention_is_permutation_equivariant_and_a_mask_breaks_it():
    layer = load_reference().MultiHeadAttention(8, 2)
    x = RNG.normal(size=(1, 6, 8))
    order = RNG.permutation(6)
    assert np.allclose(layer.forward(x, x, x)[:, order], layer.forward(x[:, order], x[:, order], x[:, order]))
    masks = load_reference("masked_attention")
    queries = layer.split_heads(x @ layer.W_Q)
    keys, values = layer.split_heads(x @ layer.W_K), layer.split_heads(x @ layer.W_V)
    causal = lambda q, k, v: masks.masked_attention(q, k, v, masks.causal_mask(6))[0]  # noqa: E731
    permuted = causal(queries[:, :, order], keys[:, :, order], values[:, :, order])
    assert not np.allclose(causal(queries, keys, values)[:, :, order], permuted)
    assert answer("positions-permutation") is True and answer("positions-causal-mask-order") is True


# --- masks and logits -------------------------------------------------------------------------

def test_renormalising_after_the_softmax_equals_masking_first_and_zeroing_alone_does_not():
    scores = RNG.normal(size=(4, 6))
    keep = RNG.random((4, 6)) > 0.4
    keep[:, 0] = True
    masked_first = softmax(np.where(keep, scores, -np.inf))
    zeroed = np.where(keep, softmax(scores), 0.0)
    assert np.allclose(zeroed / zeroed.sum(axis=-1, keepdims=True), masked_first)
    assert not np.allclose(zeroed, masked_first)
    assert answer("mask-renormalised-after-softmax") is True and answer("mask-after-softmax") is False


def test_a_finite_mask_value_leaks_when_the_real_scores_are_as_low():
    scores = np.array([-2e4, -2e4 + 1.0, 5.0])
    keep = np.array([True, True, False])
    with_infinity = softmax(np.where(keep, scores, -np.inf))
    with_finite = softmax(np.where(keep, scores, -1e4))
    assert with_infinity[2] == 0.0 and with_finite[2] > 0.99
    assert answer("logits-finite-mask-value") is False


def test_minus_1e9_is_minus_infinity_in_float16_and_a_masked_row_gives_nan():
    with np.errstate(over="ignore", invalid="ignore"):
        fill = np.float16(-1e9)
        row = np.full(4, fill, dtype=np.float16)
        assert np.isneginf(fill)
        assert np.all(np.isnan(np.exp(row - row.max())))
    assert right_choice("logits-mask-value-in-float16").startswith("It becomes -inf")


def test_one_new_token_against_a_cache_needs_no_mask():
    mask = load_reference("masked_attention").causal_mask(1, 9)
    assert mask.all() and answer("decoding-newest-token-needs-no-mask") is True


def test_the_additive_mask_equals_the_boolean_one():
    scores = RNG.normal(size=(3, 5))
    keep = RNG.random((3, 5)) > 0.3
    keep[:, 0] = True
    additive = np.where(keep, 0.0, -np.inf)
    assert np.allclose(softmax(scores + additive), softmax(np.where(keep, scores, -np.inf)))


# --- maps and sinks ---------------------------------------------------------------------------

def test_two_different_maps_can_give_the_same_output():
    values = RNG.normal(size=(4, 3))
    values[2] = values[1]  # two keys carry the same value
    first, second = np.array([0.1, 0.6, 0.2, 0.1]), np.array([0.1, 0.2, 0.6, 0.1])
    assert np.allclose(first @ values, second @ values)
    assert answer("maps-different-same-output") is True


def test_the_sink_statistic_leaves_out_the_first_query():
    masks = load_reference("masked_attention")
    weights = masks.masked_softmax(RNG.normal(size=(3, 6, 6)), masks.causal_mask(6))  # (H, T, S)
    assert np.allclose(weights[:, 0, 0], 1.0)  # query 0 can only see key 0, whatever the head does
    assert right_choice("sink-detect") == "weights[:, 1:, 0].mean(axis=-1)"


# --- online softmax ---------------------------------------------------------------------------

def test_the_online_softmax_ends_with_acc_over_l():
    scores, values = RNG.normal(size=8) * 3, RNG.normal(size=(8, 2))
    m, l, acc = -np.inf, 0.0, np.zeros(2)
    for tile in (slice(0, 3), slice(3, 8)):
        m_new = max(m, scores[tile].max())
        correction = math.exp(m - m_new) if np.isfinite(m) else 0.0
        p = np.exp(scores[tile] - m_new)
        l, acc, m = l * correction + p.sum(), acc * correction + p @ values[tile], m_new
    assert np.allclose(acc / l, softmax(scores) @ values)
    assert right_choice("flash-final-division") == "acc / l"


def test_no_text_says_llama_2_uses_gqa_without_naming_the_70b_model():
    """Llama 2 7B and 13B use multi-head attention; only the 70B model shares key/value heads (8 for 64 query
    heads). A sentence of the bank or the syllabus that puts Llama 2 and GQA together names the 70B model."""
    import re

    from grader.paths import CONTENT_DIR

    sentences = []
    for path in [*CONTENT_DIR.glob("questions/*.toml"), CONTENT_DIR / "syllabus.toml"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.split("=", 1)[0].strip().endswith(".en"):
                continue
            sentences.extend(re.split(r"(?<=[.;:?!])\s", line))
    def wrong(sentence: str) -> bool:
        return bool(re.search(r"Llama[- ]?2", sentence) and re.search(r"\bGQA\b|grouped-query", sentence, re.I)
                    and re.search(r"\buses?\b|\bhas\b|\bwith\b", sentence) and "70B" not in sentence)

    assert wrong("Llama 2 uses GQA, so its cache is small.") and not wrong("Llama 2 70B uses GQA with 8 KV heads.")
    assert [sentence for sentence in sentences if wrong(sentence)] == []
    # and the 7B model is said to use plain multi-head attention where its cache is computed
    prompt = default_bank().get("serving-llama2-7b-per-token").prompt["en"]
    assert "32 heads" in prompt or "n_kv_heads = 32" in prompt or "MHA" in prompt or "multi-head" in prompt, prompt
