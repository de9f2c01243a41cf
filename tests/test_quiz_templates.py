"""Every computed answer of the question bank, checked by running the reference.

Each template gets a measurement: build a real MultiHeadAttention, run it and
read the shape it returns, count its parameters, count the FLOPs of its matrix
products, measure the bytes of the arrays it makes. Templates whose drawn sizes
would allocate gigabytes are measured on small sizes of the same formula
(``SMALL``); the rest on the very numbers the template draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import quiz_measures as measure
from grader.grading.reference import load_reference
from grader.practice.bank import default_bank

SEEDS = range(6)
DTYPES = {2: np.float16, 4: np.float32}


class CountingArray(np.ndarray):
    """An array that records every matrix product it takes part in."""

    products: list[tuple[tuple[int, ...], tuple[int, ...], int]] = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(item) if isinstance(item, CountingArray) else item for item in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(item) for item in kwargs["out"])
        if ufunc is np.matmul and method == "__call__":
            left, right = plain
            batch = math.prod(np.broadcast_shapes(left.shape[:-2], right.shape[:-2]))
            flops = 2 * batch * left.shape[-2] * left.shape[-1] * right.shape[-1]
            CountingArray.products.append((left.shape, right.shape, flops))
        result = getattr(ufunc, method)(*plain, **kwargs)
        return result.view(CountingArray) if isinstance(result, np.ndarray) else result


def counted(array: np.ndarray) -> CountingArray:
    CountingArray.products = []
    return np.asarray(array, dtype=float).view(CountingArray)


def random(*shape, seed=0):
    return np.random.default_rng(seed).normal(0.0, 0.5, shape)


def model(d_model, num_heads=1):
    return load_reference().MultiHeadAttention(d_model, num_heads)


def weights_of(layer):
    return (layer.W_Q, layer.W_K, layer.W_V, layer.W_O)


def forward_weights(batch, heads, seq_q, seq_k, d_k):
    layer = model(heads * d_k, heads)
    q, kv = random(batch, seq_q, heads * d_k), random(batch, seq_k, heads * d_k, seed=1)
    return layer.forward(q, kv, kv, return_weights=True)[1]


def constructs(d_model, num_heads):
    try:
        model(d_model, num_heads)
    except Exception:  # "rejects" means any exception, as in DESIGN.md
        return False
    return True


def measured_scale(d_k):
    """The divisor the reference applies: a score of 1 against 0 gives log(w0/w1) = 1/scale."""
    query = np.zeros((1, 1, 1, d_k))
    query[..., 0] = 1.0
    keys = np.zeros((1, 1, 2, d_k))
    keys[0, 0, 0, 0] = 1.0
    _, weights = load_reference().scaled_dot_product_attention(query, keys, keys)
    return 1.0 / math.log(weights[0, 0, 0, 0] / weights[0, 0, 0, 1])


def forward_flops(batch, seq, d_model, num_heads):
    layer = model(d_model, num_heads)
    x = counted(random(batch, seq, d_model))
    layer.forward(x, x, x)
    return [flops for _, _, flops in CountingArray.products]


def score_flops(v):
    q = counted(random(v["batch"], v["num_heads"], v["seq_q"], v["d_k"]))
    k = counted(random(v["batch"], v["num_heads"], v["seq_k"], v["d_k"]))
    load_reference().scaled_dot_product_attention(q, k, k)
    return CountingArray.products[0][2]  # the first product is Q @ K^T


def crossover_length(d_model):
    """T where projections and attention products cost the same, from counts at T = 3."""
    flops = forward_flops(1, 3, d_model, 1)
    projections, attention = sum(flops[:3]) + flops[-1], flops[3] + flops[4]
    return projections * 3 / attention


def transposed_keys_shape(v):
    q = counted(random(v["batch"], v["heads"], 4, v["d_k"]))
    k = counted(random(v["batch"], v["heads"], v["seq_k"], v["d_k"]))
    load_reference().scaled_dot_product_attention(q, k, k)
    return CountingArray.products[0][1]


def causal_zeros(seq):
    scores = np.where(np.triu(np.ones((seq, seq), dtype=bool), k=1), -np.inf, random(seq, seq))
    return int(np.sum(load_reference().softmax(scores) == 0.0))


def denominator(*row):
    return 1.0 / float(np.max(load_reference().softmax(np.array(row, dtype=float))))


def cached_bytes(v, kv_heads=None):
    """Bytes of the keys and values one layer caches, measured on projected arrays."""
    heads = v.get("num_heads", 1)
    d_model = v.get("d_model") or heads * v["d_k"]
    layer = model(d_model, heads)
    tokens = random(v.get("batch", 1), v.get("seq", 1), d_model)
    keys = layer.split_heads(tokens @ layer.W_K)  # (B, H, S, d_k)
    values = layer.split_heads(tokens @ layer.W_V)  # (B, H, S, d_k)
    if kv_heads is not None:
        keys, values = keys[:, :kv_heads], values[:, :kv_heads]
    dtype = DTYPES[v.get("bytes_per_value", 2)]
    return keys.astype(dtype).nbytes + values.astype(dtype).nbytes


def parameter_count(d_model, num_heads):
    return sum(matrix.size for matrix in weights_of(model(d_model, num_heads)))


def head_block(matrix, num_heads, heads_kept):
    """The entries of a projection matrix that feed the first ``heads_kept`` heads."""
    layer = model(matrix.shape[0], num_heads)
    return layer.split_heads(matrix[None])[:, :heads_kept]  # (1, kept, D, d_k)


MIB = 2 ** 20
MEASURE = {
    "qkv-projection-shape": lambda v: (random(v["batch"], v["seq"], v["d_model"])
                                       @ model(v["d_model"]).W_Q).shape,
    "attention-scores-shape": lambda v: load_reference().scaled_dot_product_attention(
        random(v["batch"], v["heads"], v["seq_q"], v["d_k"]),
        random(v["batch"], v["heads"], v["seq_k"], v["d_k"]),
        random(v["batch"], v["heads"], v["seq_k"], v["d_k"]))[1].shape,
    "attention-output-shape": lambda v: load_reference().scaled_dot_product_attention(
        random(v["batch"], v["heads"], v["seq_q"], v["d_k"]),
        random(v["batch"], v["heads"], v["seq_k"], v["d_k"]),
        random(v["batch"], v["heads"], v["seq_k"], v["d_k"]))[0].shape,
    "attention-transposed-keys-shape": transposed_keys_shape,
    "scaling-factor-value": lambda v: measured_scale(v["d_model"] // v["num_heads"]),
    "scaling-score-variance": lambda v: float(np.var(np.sum(
        random(20000, v["d_k"], seed=2) / 0.5 * random(20000, v["d_k"], seed=3) / 0.5, axis=-1))),
    "softmax-denominator": lambda v: denominator(v["first"], v["second"], v["third"]),
    "heads-d-k": lambda v: model(v["d_model"], v["num_heads"]).split_heads(
        random(1, 1, v["d_model"])).shape[-1],
    "heads-divisibility": lambda v: constructs(v["d_model"], v["num_heads"]),
    "heads-same-parameters": lambda v: parameter_count(v["d_model"], v["num_heads"])
    == parameter_count(v["other_width"], v["other_heads"]),
    "split-heads-shape": lambda v: model(v["d_model"], v["num_heads"]).split_heads(
        random(v["batch"], v["seq"], v["d_model"])).shape,
    "combine-heads-shape": lambda v: model(v["d_model"], v["num_heads"]).combine_heads(
        random(v["batch"], v["num_heads"], v["seq"], v["d_k"])).shape,
    "forward-output-shape": lambda v: model(v["d_model"], v["num_heads"]).forward(
        random(v["batch"], v["seq_q"], v["d_model"]), random(v["batch"], v["seq_k"], v["d_model"]),
        random(v["batch"], v["seq_k"], v["d_model"])).shape,
    "forward-weights-shape": lambda v: forward_weights(
        v["batch"], v["num_heads"], v["seq_q"], v["seq_k"], v["d_model"] // v["num_heads"]).shape,
    "parameters-no-bias": lambda v: parameter_count(v["d_model"], v["num_heads"]),
    # Biases built by hand: one vector per projection, as long as its output.
    "parameters-with-bias": lambda v: sum(
        matrix.size + np.zeros(matrix.shape[1]).size
        for matrix in weights_of(model(v["d_model"], v["num_heads"]))),
    "parameters-per-head-query": lambda v: head_block(
        model(v["d_model"]).W_Q, v["num_heads"], 1).size,
    "parameters-weight-memory": lambda v: sum(
        matrix.astype(DTYPES[v["bytes_per_value"]]).nbytes
        for matrix in weights_of(model(v["d_model"], v["num_heads"]))) / MIB,
    "flops-forward": lambda v: sum(forward_flops(v["batch"], v["seq"], v["d_model"], v["num_heads"])),
    "flops-scores": score_flops,
    "complexity-weights-bytes": lambda v: forward_weights(
        v["batch"], v["num_heads"], v["seq"], v["seq"], 2).astype(np.float32).nbytes,
    "complexity-growth-factor": lambda v: forward_weights(1, 1, v["longer"], v["longer"], 2).nbytes
    / forward_weights(1, 1, v["seq"], v["seq"], 2).nbytes,
    "complexity-crossover": lambda v: crossover_length(v["d_model"]),
    "cross-attention-weights-shape": lambda v: forward_weights(
        v["batch"], v["num_heads"], v["target_length"], v["source_length"], v["d_k"]).shape,
    "mask-causal-count": lambda v: causal_zeros(v["seq"]),
    "kv-cache-decode-weights-shape": lambda v: forward_weights(
        v["batch"], v["num_heads"], 1, v["total"], v["d_k"]).shape,
    "kv-cache-size": lambda v: v["layers"] * cached_bytes(v) / MIB,
    "kv-cache-per-token": lambda v: cached_bytes(dict(v, batch=1, seq=1)),
    "gqa-cache-size": lambda v: v["layers"] * cached_bytes(v, kv_heads=v["kv_heads"]) / MIB,
    "gqa-saving-factor": lambda v: cached_bytes(dict(v, d_k=2))
    / cached_bytes(dict(v, d_k=2), kv_heads=v["kv_heads"]),
    "gqa-projection-parameters": lambda v: head_block(
        model(v["d_model"]).W_K, v["num_heads"], v["kv_heads"]).size,
    "online-softmax-sum": lambda v: denominator(v["first"], v["second"], v["third"], v["fourth"]),
    "flash-memory-saved": lambda v: forward_weights(
        1, v["num_heads"], v["seq"], v["seq"], 2).astype(np.float32).nbytes / MIB,
    "positions-sinusoidal-value": measure.sinusoidal_value,
    "positions-alibi-bias": measure.alibi_bias,
    "rope-angle": measure.rotary_angle,
    "norm-epsilon-tiny-variance": measure.layer_norm_of_a_quiet_token,
    "norm-rms-value": measure.rms_norm_first_output,
    "norm-parameters": measure.layer_norm_parameters,
    "rope-wavelength": measure.rotary_wavelength,
    "rope-frequency-value": measure.rotary_frequency_value,
    "rope-decoding-query-position": measure.decoding_query_position,
    "rope-ntk-base": measure.ntk_base,
    "sizing-fused-projection-shape": measure.fused_projection_shape,
    "sizing-block-weights": measure.block_weights,
    "sizing-tied-embeddings": measure.tied_saving,
    "sizing-training-flops": measure.training_flops,
    "sizing-flops-per-token": measure.flops_per_token,
    "sizing-model-flops-utilisation": measure.model_flops_utilisation,
    "sizing-weights-memory-long-context": measure.long_context_gigabytes,
    "decoding-arithmetic-intensity": measure.arithmetic_intensity,
    "decoding-prefill-mask-shape": measure.prefill_mask_shape,
    "mask-padding-shape": measure.padding_mask_shape,
    "mask-padding-and-causal": measure.padding_and_causal_shape,
    "gqa-weights-shape": measure.gqa_weights_shape,
    "window-keys-seen": measure.window_keys_seen,
    "window-first-key": measure.window_first_key,
    "window-allowed-entries": measure.window_allowed,
    "window-reach": measure.window_reach,
    "window-mixed-cache": measure.mixed_cache_fraction,
    "biases-alibi-slope": measure.alibi_slope,
    "biases-decode-distance": measure.alibi_decode_distance,
    "biases-logit-with-bias": measure.logit_with_bias,
    "linear-attention-state": measure.linear_attention_state,
    "linear-attention-elu-value": measure.linear_elu_value,
    "linear-attention-cost-ratio": measure.linear_attention_cost_ratio,
    "serving-llama2-7b-context": measure.llama2_7b_context,
    "serving-bytes-per-token": measure.bytes_per_token,
    "serving-cache-grows-per-token": lambda v: np.zeros((2, v["layers"], v["heads"], v["d_k"]), np.float32).nbytes,
    "math-equal-scores-weight": lambda v: float(load_reference().softmax(np.zeros((1, v["keys"])))[0, 0]),
    "variants-causal-visible-keys": lambda v: int(np.sum(load_reference().softmax(
        np.where(np.tril(np.ones((v["length"], v["length"]), bool)), 0.0, -np.inf))[v["query"]] > 0)),
    "serving-paged-waste": measure.paged_waste,
    "serving-prefix-sharing": measure.prefix_saving,
    "serving-quantised-cache": measure.quantised_factor,
    "serving-rolling-buffer": measure.rolling_slot,
    "logits-temperature-weight": measure.temperature_weight,
    "logits-soft-cap-value": measure.soft_cap,
    "logits-qk-norm-bound": measure.qk_norm_bound,
    "logits-qk-clip": measure.qk_clip_factor,
    "parallel-heads-per-device": measure.columns_per_device,
    "parallel-ring-block-scores": measure.ring_block_scores,
    "complexity-naive-intensity": measure.naive_intensity,
    "heads-weights-memory-growth": measure.weights_memory_growth,
    "serving-cache-rivals-weights": measure.context_where_cache_equals_weights,
    "decoding-new-token-last-key": measure.last_key_seen,
    "sampling-renormalised-share": measure.renormalised_share,
    "paged-slot-of-position": measure.paged_slot,
    "paged-blocks-after-appends": measure.paged_blocks_held,
}

# Sizes that keep a measurement to a few megabytes, for templates whose own
# draws would allocate gigabytes; the formula under test is the same.
SMALL = {
    "linear-attention-cost-ratio": {"length": (256, 512)},
    "parameters-weight-memory": {"d_model": (16, 32, 64), "num_heads": (2, 4)},
    "complexity-weights-bytes": {"seq": (5, 8, 12)},
    "complexity-growth-factor": {"seq": (3, 4, 5)},
    "complexity-crossover": {"d_model": (4, 8, 16)},
    "kv-cache-size": {"seq": (3, 5), "d_model": (8, 16), "batch": (1, 2)},
    "kv-cache-per-token": {"d_model": (8, 16, 24)},
    "gqa-cache-size": {"seq": (3, 5), "batch": (1, 2), "num_heads": (16,), "d_k": (2, 3)},
    "flash-memory-saved": {"seq": (6, 9, 16)},
    "sizing-block-weights": {"d_model": (16, 32)},
    "sizing-tied-embeddings": {"vocabulary": (10, 50), "d_model": (4, 8)},
    "sizing-flops-per-token": {"num_heads": (2, 4), "d_k": (8, 16), "seq": (8, 16), "layers": (1,)},
    "sizing-weights-memory-long-context": {"seq": (64, 128)},
    "decoding-arithmetic-intensity": {"d_model": (8, 16, 32)},
    "window-reach": {"window": (3, 5), "layers": (2, 4)},
    "serving-rolling-buffer": {"window": (4, 8), "pos": (9, 17, 23)},
    "parallel-heads-per-device": {"num_heads": (4, 8), "devices": (2, 4), "d_k": (2, 4)},
    "complexity-naive-intensity": {"seq": (8, 16)},
    "heads-weights-memory-growth": {"seq": (8, 16)},
}


def templates():
    return [question for question in default_bank().questions if question.is_template]


def test_every_template_has_a_measurement():
    ids = {question.id for question in templates()}
    assert ids == set(MEASURE), "add a measurement for each new template (and drop stale ones)"


@pytest.mark.parametrize("question", templates(), ids=lambda question: question.id)
def test_computed_answer_matches_the_reference(question):
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        values = None
        while values is None:  # draw again until the template's 'require' rules hold
            chosen = {name: options[int(rng.integers(len(options)))]
                      for name, options in question.variables.items()}
            for name, options in SMALL.get(question.id, {}).items():
                chosen[name] = options[int(rng.integers(len(options)))]
            values = question.complete_values(chosen)
        posed = question.pose(rng, values=values)
        measured = MEASURE[question.id](values)
        if question.kind == "numeric":
            tolerance = 0.05 if question.id == "scaling-score-variance" else 1e-9
            assert math.isclose(float(posed.expected), float(measured), rel_tol=tolerance), (values, measured)
        else:
            assert posed.expected == measured, (values, measured)
