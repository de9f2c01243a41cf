"""Measurements for the question templates beyond the core layer.

Each function computes a template's answer a second way, by running code:
the reference solutions where the question is about them (masks, GQA), and
otherwise a small independent NumPy model of what the question describes (a
rotary embedding, a sliding-window mask, a block allocator, a rolling cache),
never the template's own formula. ``v`` is a template's drawn values.
"""

from __future__ import annotations

import math

import numpy as np

from grader.grading.reference import load_reference


def random(*shape, seed=0):
    return np.random.default_rng(seed).normal(0.0, 0.5, shape)


# --- positions ------------------------------------------------------------------

def sinusoidal_table(length, d_model):
    """The encoding table built as in the usual implementations: even columns sin, odd cos."""
    positions = np.arange(length)[:, None]  # (L, 1)
    frequencies = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (D/2,)
    table = np.zeros((length, d_model))
    table[:, 0::2] = np.sin(positions * frequencies)
    table[:, 1::2] = np.cos(positions * frequencies)
    return table


def sinusoidal_value(v):
    return sinusoidal_table(v["pos"] + 1, v["d_model"])[v["pos"], v["dim"]]


def alibi_bias(v):
    """Bias of one head for a key ``distance`` positions back, from a built bias tensor."""
    heads, length = v["num_heads"], v["distance"] + 1
    start = 2.0 ** (-8.0 / heads)
    slopes = start ** np.arange(1, heads + 1)  # geometric: start, start^2, ...
    offsets = np.arange(length)[:, None] - np.arange(length)[None, :]  # (T, S): i - j
    bias = -slopes[:, None, None] * offsets  # (H, T, S)
    return float(bias[v["head"], length - 1, 0])


def rotate(x, position, base):
    """Rotary embedding of one vector: pair j turns by position * base^(-2j/d)."""
    pairs = x[0::2] + 1j * x[1::2]
    frequencies = base ** (-np.arange(0, x.size, 2) / x.size)
    turned = pairs * np.exp(1j * position * frequencies)
    out = np.empty_like(x)
    out[0::2], out[1::2] = turned.real, turned.imag
    return out


def rotary_frequency(d_k, base, pair):
    """Radians per position of one pair, read off a rotated unit vector."""
    unit = np.zeros(d_k)
    unit[2 * pair] = 1.0
    turned = rotate(unit, 1, base)
    return math.atan2(turned[2 * pair + 1], turned[2 * pair])


def rotary_angle(v):
    step = rotary_frequency(v["d_k"], v["base"], v["pair"])
    angle = step * v["pos"]
    unit = np.zeros(v["d_k"])
    unit[2 * v["pair"]] = 1.0
    turned = rotate(unit, v["pos"], v["base"])
    assert np.allclose(turned[2 * v["pair"]: 2 * v["pair"] + 2], [math.cos(angle), math.sin(angle)])
    return angle


def rotary_wavelength(v):
    return 2 * math.pi / rotary_frequency(v["d_k"], v["base"], v["pair"])


def rotary_frequency_value(v):
    return rotary_frequency(v["d_k"], v["base"], v["pair"])


def decoding_query_position(v):
    """Where a new token's query turns: its index in the whole sequence, cache first, as a full pass sees it."""
    sequence = np.arange(v["cached"] + v["new"])  # every token's position in one full pass
    return int(sequence[v["cached"]:][v["index"]])


def ntk_base(v):
    """The base whose slowest pair turns ``scale`` times more slowly, found by bisection."""
    d_k, slowest = v["d_k"], v["d_k"] // 2 - 1
    target = rotary_frequency(d_k, v["base"], slowest) / v["scale"]
    low, high = math.log(v["base"]), math.log(v["base"] * v["scale"] ** 3)
    for _ in range(200):
        middle = (low + high) / 2
        if rotary_frequency(d_k, math.exp(middle), slowest) > target:
            low = middle
        else:
            high = middle
    assert math.isclose(rotary_frequency(d_k, math.exp(low), 0), 1.0)  # pair 0 keeps its speed
    return math.exp(low)


# --- sizes and FLOPs --------------------------------------------------------------

class CountingArray(np.ndarray):
    """An array that records the FLOPs of every matrix product it takes part in."""

    flops: list[int] = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(item) if isinstance(item, CountingArray) else item for item in inputs]
        if ufunc is np.matmul and method == "__call__":
            left, right = plain
            batch = math.prod(np.broadcast_shapes(left.shape[:-2], right.shape[:-2]))
            CountingArray.flops.append(2 * batch * left.shape[-2] * left.shape[-1] * right.shape[-1])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return result.view(CountingArray) if isinstance(result, np.ndarray) else result


def counted(array):
    CountingArray.flops = []
    return np.asarray(array, dtype=float).view(CountingArray)


def core_model(d_model, num_heads=1):
    return load_reference().MultiHeadAttention(d_model, num_heads)


def fused_projection_shape(v):
    layer = core_model(v["d_model"])
    fused = np.concatenate([layer.W_Q, layer.W_K, layer.W_V], axis=1)  # (D, 3D)
    x = random(v["batch"], v["seq"], v["d_model"])
    out = x @ fused
    queries, keys, values = np.split(out, 3, axis=-1)
    assert np.allclose(queries, x @ layer.W_Q) and np.allclose(values, x @ layer.W_V)
    return out.shape


def block_weights(v):
    layer = core_model(v["d_model"])
    width = v["expansion"] * v["d_model"]
    mlp = (np.zeros((v["d_model"], width)), np.zeros((width, v["d_model"])))
    return sum(w.size for w in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O, *mlp))


def tied_saving(v):
    embedding = np.zeros((v["vocabulary"], v["d_model"]))
    untied_output = np.zeros((v["d_model"], v["vocabulary"]))
    return embedding.size + untied_output.size - embedding.size


def projection_flops_per_parameter_token(d_model=8, seq=3):
    """Forward FLOPs of the four projections per parameter and token: the '2' of 2N."""
    layer = core_model(d_model)
    x = counted(random(1, seq, d_model))
    layer.forward(x, x, x)
    projections = sum(CountingArray.flops[:3]) + CountingArray.flops[-1]
    parameters = sum(w.size for w in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O))
    return projections / (parameters * seq)


def training_flops(v):
    per_parameter_token = 3 * projection_flops_per_parameter_token()  # forward 2, backward 4
    return per_parameter_token * v["billions_of_parameters"] * 1e9 * v["billions_of_tokens"] * 1e9


def flops_per_token(v):
    d_model = v["num_heads"] * v["d_k"]
    layer = core_model(d_model, v["num_heads"])
    x = counted(random(1, v["seq"], d_model))
    layer.forward(x, x, x)
    attention_per_token = (CountingArray.flops[3] + CountingArray.flops[4]) / v["seq"]
    parameters = 12 * v["layers"] * d_model**2 + 50257 * d_model  # the blocks and the embedding
    assert abs(v["millions_of_parameters"] * 1e6 - parameters) <= 0.5e6  # the stated N is this model's
    weights = 3 * projection_flops_per_parameter_token() * v["millions_of_parameters"] * 1e6
    return weights + 3 * attention_per_token * v["layers"]


def model_flops_utilisation(v):
    tokens_per_second = v["thousands_of_tokens_per_second"] * 1000
    needed = 3 * projection_flops_per_parameter_token() * v["billions_of_parameters"] * 1e9
    return needed * tokens_per_second / (v["gpus"] * v["peak_teraflops"] * 1e12) * 100


def one_head_weights(seq):
    layer = core_model(2)
    x = random(1, seq, 2)
    return layer.forward(x, x, x, return_weights=True)[1][0, 0]  # (T, T)


def long_context_gigabytes(v):
    dtype = {2: np.float16, 4: np.float32}[v["bytes_per_value"]]
    return one_head_weights(v["seq"]).astype(dtype).nbytes / 1e9


# --- decoding and masks --------------------------------------------------------------

def arithmetic_intensity(v):
    layer = core_model(v["d_model"])
    tokens = counted(random(v["batch"], 1, v["d_model"]))
    tokens @ layer.W_Q
    return CountingArray.flops[0] / layer.W_Q.astype(np.float16).nbytes


def masks():
    return load_reference("masked_attention")


def prefill_mask_shape(v):
    return masks().causal_mask(v["new"], v["total"]).shape


def padding_mask_shape(v):
    lengths = np.minimum(np.arange(1, v["batch"] + 1), v["seq_k"])
    mask = masks().padding_mask(lengths, v["seq_k"])
    scores = random(v["batch"], v["num_heads"], v["seq_q"], v["seq_k"])
    np.broadcast_shapes(mask.shape, scores.shape)  # it must broadcast
    return mask.shape


def padding_and_causal_shape(v):
    lengths = np.minimum(np.arange(1, v["batch"] + 1), v["seq"])
    return (masks().padding_mask(lengths, v["seq"]) & masks().causal_mask(v["seq"])).shape


def gqa_weights_shape(v):
    layer = load_reference("grouped_query_attention").GroupedQueryAttention(
        v["d_model"], v["num_heads"], v["kv_heads"])
    return layer.forward(random(v["batch"], v["seq"], v["d_model"]), return_weights=True)[1].shape


# --- long contexts ----------------------------------------------------------------

def window_mask(length, window):
    """Causal sliding window: key j visible to query i when i - window < j <= i."""
    queries, keys = np.arange(length)[:, None], np.arange(length)[None, :]
    return (keys <= queries) & (keys > queries - window)


def window_row(pos, window):
    keys = np.arange(pos + 1)
    return (keys <= pos) & (keys > pos - window)


def window_keys_seen(v):
    return int(window_row(v["pos"], v["window"]).sum())


def window_first_key(v):
    return int(np.flatnonzero(window_row(v["pos"], v["window"]))[0])


def window_allowed(v):
    return int(window_mask(v["seq"], v["window"]).sum())


def window_reach(v):
    """How far back the last token's inputs reach after L layers, by composing the masks."""
    length = v["layers"] * v["window"] + 3
    step = window_mask(length, v["window"]).astype(int)
    reach = np.eye(length, dtype=int)
    for _ in range(v["layers"]):
        reach = np.minimum(step @ reach, 1)
    last = length - 1
    return last - int(np.flatnonzero(reach[last])[0])


def mixed_cache_fraction(v):
    """Keys the final token can ever need, per layer kind, against all-global layers."""
    seq = v["seq"]
    full_row = np.arange(seq) <= seq - 1
    local_row = window_row(seq - 1, v["window"])
    kept = v["global_layers"] * full_row.sum() + v["local_layers"] * local_row.sum()
    return kept / ((v["global_layers"] + v["local_layers"]) * full_row.sum())


def linear_attention_state(v):
    """Numbers kept by causal linear attention, checked against its parallel form."""
    heads, d_k, length = v["num_heads"], v["d_k"], 6
    rng = np.random.default_rng(1)
    q, k, val = (rng.normal(size=(heads, length, d_k)) for _ in range(3))
    feature = lambda x: np.where(x > 0, x + 1.0, np.exp(x))  # noqa: E731 - elu(x) + 1
    phi_q, phi_k = feature(q), feature(k)
    state, normaliser = np.zeros((heads, d_k, d_k)), np.zeros((heads, d_k))
    recurrent = []
    for t in range(length):
        state = state + np.einsum("hi,hj->hij", phi_k[:, t], val[:, t])
        normaliser = normaliser + phi_k[:, t]
        recurrent.append(np.einsum("hi,hij->hj", phi_q[:, t], state)
                         / np.einsum("hi,hi->h", phi_q[:, t], normaliser)[:, None])
    scores = np.tril(phi_q @ np.swapaxes(phi_k, -1, -2))  # (H, T, T), causal
    parallel = scores @ val / scores.sum(axis=-1, keepdims=True)
    assert np.allclose(np.stack(recurrent, axis=1), parallel)
    return state.size + normaliser.size



def linear_elu_value(v):
    """phi(x) = elu(x) + 1 by its two branches, for a negative x."""
    x = np.array([v["x"]], dtype=float)
    elu = np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))
    return float(elu[0] + 1.0)


def linear_attention_cost_ratio(v):
    """Multiply-adds of softmax-style (T, S) products over those of the summed state, counted from the
    operands' shapes, with both orders checked to give the same unnormalised rows."""
    length, d_k = v["length"], v["d_k"]
    rng = np.random.default_rng(2)
    phi_q, phi_k = (np.exp(rng.normal(size=(length, d_k)) * 0.1) for _ in range(2))
    val = rng.normal(size=(length, d_k))
    scores = phi_q @ phi_k.T  # (N, N)
    state = phi_k.T @ val  # (d_k, d_k)
    assert np.allclose(scores @ val, phi_q @ state)
    quadratic = phi_q.shape[0] * phi_k.shape[0] * d_k + scores.shape[0] * scores.shape[1] * val.shape[1]
    linear = phi_k.shape[1] * phi_k.shape[0] * val.shape[1] + phi_q.shape[0] * state.shape[0] * state.shape[1]
    return quadratic / linear

def alibi_slope(v):
    """Head ``head``'s slope, by walking the geometric ladder from its first term."""
    first = 2.0 ** (-8.0 / v["num_heads"])
    slopes = [first]
    while len(slopes) < v["num_heads"]:
        slopes.append(slopes[-1] * first)
    assert np.isclose(slopes[-1], 1 / 256)
    return slopes[v["head"]]


def alibi_decode_distance(v):
    """|p - s| between a new query and a key, with the queries placed after the cache."""
    keys = np.arange(v["cached"] + v["new"])
    queries = keys[-v["new"]:]
    return int(abs(queries[v["query"]] - keys[v["key"]]))


def logit_with_bias(v):
    """One entry of scaled scores plus the bias, from a query and key whose dot product is ``dot``."""
    q = np.zeros((1, v["d_k"]))
    k = np.zeros((1, v["d_k"]))
    q[0, 0], k[0, 0] = v["dot"], 1.0
    return float((q @ k.T / np.sqrt(v["d_k"]) + v["bias"])[0, 0])


# --- serving memory ------------------------------------------------------------------

def cache_bytes_per_token(layers, kv_heads, d_k, bytes_per_value):
    dtype = {1: np.int8, 2: np.float16}[bytes_per_value]
    one_token = np.zeros((2, layers, kv_heads, d_k), dtype=dtype)  # key and value, every layer
    return one_token.nbytes


def llama2_7b_context(v):
    return v["batch"] * v["seq"] * cache_bytes_per_token(32, 32, 128, 2) / 2 ** 30


def bytes_per_token(v):
    return cache_bytes_per_token(v["layers"], v["kv_heads"], v["d_k"], v["bytes_per_value"])


def paged_waste(v):
    """Run a block allocator token by token and count the empty slots at the end."""
    blocks = 0
    for used in range(v["seq"]):
        if used == blocks * v["block"]:
            blocks += 1
    return blocks * v["block"] - v["seq"]


def prefix_saving(v):
    stored_apart = v["requests"] * v["prefix"]
    stored_shared = len({position for _ in range(v["requests"]) for position in range(v["prefix"])})
    return (stored_apart - stored_shared) * v["kib_per_token"] / 1024


def quantised_factor(v):
    values = v["group"] * 8
    quantised = np.zeros(values, dtype=np.int8).nbytes + (values // v["group"]) * v["scale_bytes"]
    return np.zeros(values, dtype=np.float16).nbytes / quantised


def rolling_slot(v):
    slots = [None] * v["window"]
    for position in range(v["pos"] + 1):
        oldest = min(range(v["window"]), key=lambda s: -1 if slots[s] is None else slots[s])
        slots[oldest] = position
    return slots.index(v["pos"])


# --- logits ---------------------------------------------------------------------------

def temperature_weight(v):
    scores = np.array([v["gap"], 0.0]) / v["temperature"]
    return float(load_reference().softmax(scores)[0])


def soft_cap(v):
    return float(v["cap"] * np.tanh(np.float64(v["score"]) / v["cap"]))


def rms_normalised(x):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True))


def qk_norm_bound(v):
    d_k = v["d_k"]
    rng = np.random.default_rng(3)
    q = rms_normalised(rng.normal(size=(1000, d_k)))
    k = rms_normalised(rng.normal(size=(1000, d_k)))
    best = float(np.max(np.sum(q * q, axis=-1) / np.sqrt(d_k)))  # k along q: the bound is reached
    assert np.max(q @ k.T / np.sqrt(d_k)) <= best + 1e-9
    return best


def qk_clip_factor(v):
    """Scale W_Q and W_K by gamma until the largest measured score equals the threshold."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(6, 8))
    w_q, w_k = rng.normal(size=(8, 8)), rng.normal(size=(8, 8))
    largest = np.max((x @ w_q) @ (x @ w_k).T)
    w_q = w_q * (v["largest"] / largest)  # now the head's largest score is m
    low, high = 0.0, 1.0
    for _ in range(200):
        gamma = (low + high) / 2
        if np.max((x @ (gamma * w_q)) @ (x @ (gamma * w_k)).T) > v["threshold"]:
            high = gamma
        else:
            low = gamma
    return low


# --- parallelism -------------------------------------------------------------------------

def columns_per_device(v):
    layer = core_model(v["num_heads"] * v["d_k"], v["num_heads"])
    per_device = v["num_heads"] // v["devices"]
    columns = layer.split_heads(layer.W_Q[None])[:, :per_device]  # (1, heads on device 0, D, d_k)
    return columns.shape[1] * columns.shape[3]


def ring_block_scores(v):
    queries = np.array_split(np.arange(v["seq"]), v["devices"])
    keys = np.array_split(np.arange(v["seq"]), v["devices"])
    return queries[0].size * keys[1].size


# --- memory traffic, heads' memory, cache against weights, cache offsets ------------------

def naive_intensity(v):
    """FLOPs of the two products over the bytes of the (T, S) arrays written and read back."""
    seq, d_k = v["seq"], v["d_k"]
    q, k, val = (np.ones((seq, d_k), dtype=np.float16) for _ in range(3))
    scores = q @ k.T  # (T, S), written, then read by the softmax
    weights = np.ones_like(scores)  # (T, S), written, then read by weights @ V
    flops = 2 * q.shape[0] * k.shape[0] * q.shape[1] + 2 * weights.shape[0] * weights.shape[1] * val.shape[1]
    moved = 2 * scores.nbytes + 2 * weights.nbytes
    return flops / moved


def weights_memory_growth(v):
    def weights_bytes(heads):
        return np.zeros((v["batch"], heads, v["seq"], v["seq"]), dtype=np.float32).nbytes

    return (weights_bytes(v["num_heads"] * v["factor"]) - weights_bytes(v["num_heads"])) / 2**20


def context_where_cache_equals_weights(v):
    per_token = np.zeros((2, 32, 32, 128), dtype=np.float16).nbytes  # K and V, 32 layers, 32 heads
    return 13.5e9 / (per_token * v["batch"])


def last_key_seen(v):
    cached, new = v["cached"], v["new"]
    mask = np.tril(np.ones((new, cached + new), dtype=bool), k=cached)  # (T, S), queries after the cache
    return int(np.flatnonzero(mask[v["index"]])[-1])


# --- sampling ----------------------------------------------------------------------------

def renormalised_share(v):
    """Top-k with k = 2 through the decoding-step reference, on a row holding the two given probabilities."""
    rest = 1.0 - v["first"] - v["second"]
    others = math.floor(rest / v["second"]) + 1  # enough tokens that each of the rest is below the second
    probabilities = np.array([[v["first"], v["second"], *[rest / others] * others]])  # (1, 2 + others)
    distribution = load_reference("decoding_step").next_token_distribution(np.log(probabilities), top_k=2)
    return float(distribution[0, 0])


# --- normalisation ----------------------------------------------------------------

def layer_norm_of_a_quiet_token(v):
    """LayerNorm (the reference) of a 201-feature token of the stated variance, read at the feature
    ``deviation`` above the mean (the others share the rest of the variance, around a zero mean)."""
    deviation, variance, eps = v["deviation"] * 1e-3, v["variance"] * 1e-6, v["eps"] * 1e-6
    n = 200
    spread = math.sqrt(((n + 1) * variance - deviation ** 2 * (1 + 1 / n)) / n)
    others = -deviation / n + spread * np.tile([1.0, -1.0], n // 2)  # (n,)
    token = np.concatenate([[deviation], others])  # (n + 1,): mean 0, the stated variance
    assert abs(token.mean()) < 1e-12 and math.isclose(token.var(), variance, rel_tol=1e-9)
    ones, zeros = np.ones(n + 1), np.zeros(n + 1)
    return load_reference("layer_norm").layer_norm(token[None, :], ones, zeros, eps=eps)[0, 0]


def rms_norm_first_output(v):
    return load_reference("layer_norm").rms_norm(np.array([[v["a"], v["b"]]], dtype=float), np.ones(2), eps=0.0)[0, 0]


def layer_norm_parameters(v):
    """The entries of the weights the reference's layer_norm takes, checked to be per feature."""
    width = v["width"]
    gamma, beta = np.ones(width), np.zeros(width)
    out = load_reference("layer_norm").layer_norm(random(3, width), gamma, beta)
    assert out.shape == (3, width)
    return gamma.size + beta.size


# --- paged cache ---------------------------------------------------------------------------

def paged_slot(v):
    """The flat slot of the position through the paged-cache reference's slot_mapping."""
    table = [v["first"], v["second"], v["third"]]
    return int(load_reference("paged_kv_cache").slot_mapping(table, [v["position"]], v["block"])[0])


def paged_blocks_held(v):
    """Blocks a sequence holds after its tokens are appended one at a time to the paged-cache reference."""
    cache = load_reference("paged_kv_cache").PagedKVCache(v["tokens"] + 1, v["block"], 1, 2)
    for _ in range(v["tokens"]):
        cache.append("s", np.zeros((1, 1, 2)), np.zeros((1, 1, 2)))
    return len(cache.block_tables["s"])
