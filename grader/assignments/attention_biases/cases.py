"""Cases and buggy twins of the attention-biases exercise (``solutions/attention_biases.py``).

Graded: ``alibi_slopes`` (named in every function that uses it, as the root
cause), ``alibi_bias``, ``sliding_window_mask``, ``biased_attention`` and
``alibi_attention``, which combines the other four. The queries are always
fewer than the keys and sit at the last positions, so a table anchored at the
wrong corner shows; head counts that are not powers of two are in every set
of cases, since the ALiBi recipe changes there.
"""

from __future__ import annotations

import numpy as np

from grader.assignments.twinning import CaseSets, Twin, floats, with_expectations
from grader.grading.case import Case, ErrorRule, Sizes

ASSIGNMENT = "attention_biases"
PUBLIC_SEED = 20261201
PUBLIC_SIZES = Sizes(B=2, H=3, T=5, S=7, d_k=4)  # H = 3: not a power of two
PUBLIC_WINDOW = 3
LARGE_SCORE = 1200.0  # beyond 709, where an unshifted float64 exp overflows
CLEAR_GAP = 8.0  # the large-logit rows' winner leads the runner-up by at least this much


def draw_sizes(rng: np.random.Generator) -> Sizes:
    """Distinct sizes with fewer queries than keys and at least three heads."""
    while True:
        B, H = int(rng.integers(2, 4)), int(rng.integers(3, 8))
        T, d_k = int(rng.integers(2, 6)), int(rng.integers(2, 7))
        S = T + int(rng.integers(2, 6))
        values = [B, H, T, S, d_k]
        if len(set(values)) == len(values):
            return Sizes(B, H, T, S, d_k)


# ---- twins ------------------------------------------------------------------------------
def _powers(exponent):
    """A ladder of n slopes ``2 ** exponent(h, n)`` for h = 0 .. n - 1."""
    return lambda n: 2.0 ** exponent(np.arange(n), n)


RIGHT_LADDER = _powers(lambda h, n: -8.0 * (h + 1) / n)


def _slopes(ladder=RIGHT_LADDER, fill=None):
    """alibi_slopes from ``ladder(n)``; ``fill(ladder, H)`` builds a head count that is not a power of two."""
    def paper_fill(ladder, H):
        largest = 2 ** int(np.floor(np.log2(H)))
        return np.concatenate([ladder(largest), ladder(2 * largest)[0::2][:H - largest]])

    def make(module):
        def alibi_slopes(num_heads):
            return (fill or paper_fill)(ladder, num_heads)
        return alibi_slopes
    return make


def _next_power_cut(ladder, H):
    return ladder(2 ** int(np.ceil(np.log2(H))))[:H]


def _odd_extras(ladder, H):
    largest = 2 ** int(np.floor(np.log2(H)))
    return np.concatenate([ladder(largest), ladder(2 * largest)[1::2][:H - largest]])


def _bias(signed_distance, query_start=lambda T, S: S - T):
    """alibi_bias as ``slopes (H, 1, 1) * signed_distance(query_positions (T, 1), key_positions (1, S))``."""
    def make(module):
        def alibi_bias(num_heads, T, S):
            start = query_start(T, S)
            queries, keys = np.arange(start, start + T)[:, None], np.arange(S)[None, :]  # (T, 1), (1, S)
            return module.alibi_slopes(num_heads)[:, None, None] * signed_distance(queries, keys)  # (H, T, S)
        return alibi_bias
    return make


def _bias_reshaped(module):
    def alibi_bias(num_heads, T, S):
        distance = np.abs(np.arange(S - T, S)[:, None] - np.arange(S)[None, :])  # (T, S)
        table = -distance[:, :, None] * module.alibi_slopes(num_heads)  # (T, S, H)
        return table.reshape(num_heads, T, S)  # reshaped, not transposed: the heads' values are scrambled
    return alibi_bias


def _bias_one_slope(module):
    def alibi_bias(num_heads, T, S):
        distance = np.abs(np.arange(S - T, S)[:, None] - np.arange(S)[None, :])  # (T, S)
        return np.broadcast_to(-module.alibi_slopes(num_heads)[0] * distance, (num_heads, T, S)).copy()
    return alibi_bias


def _window(visible):
    """sliding_window_mask as ``visible(behind, window)`` with ``behind = query position - key position``."""
    def make(module):
        def sliding_window_mask(T, S, window):
            behind = np.arange(S - T, S)[:, None] - np.arange(S)[None, :]  # (T, S)
            return visible(behind, window)
        return sliding_window_mask
    return make


def _after_softmax(renormalise, combine=np.add):
    """biased_attention that combines the softmax weights with the bias by ``combine`` (then rescales the rows, or
    not)."""
    def make(module):
        def biased_attention(Q, K, V, bias=None, mask=None):
            logits = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (B, H, T, S)
            if mask is not None:
                logits = np.where(mask, logits, -np.inf)
            weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
            weights = weights / weights.sum(axis=-1, keepdims=True)
            if bias is not None:
                weights = combine(weights, bias)
                if mask is not None:
                    weights = np.where(mask, weights, 0.0)
                if renormalise:
                    weights = weights / weights.sum(axis=-1, keepdims=True)
            return weights @ V
        return biased_attention
    return make


def _bias_scaled(module):
    def biased_attention(Q, K, V, bias=None, mask=None):
        logits = Q @ np.swapaxes(K, -1, -2)  # (B, H, T, S), not yet scaled
        if bias is not None:
            logits = logits + bias
        logits = logits / np.sqrt(Q.shape[-1])  # the bias shrinks with the scores
        if mask is not None:
            logits = np.where(mask, logits, -np.inf)
        weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return weights / weights.sum(axis=-1, keepdims=True) @ V
    return biased_attention


TWINS: tuple[Twin, ...] = (
    Twin("bias-alibi-slope-base", "2^(-8h/H) from h = 0: the first head's slope is 1", "alibi_slopes",
         _slopes(_powers(lambda h, n: -8.0 * h / n))),
    Twin("bias-alibi-slope-base", "2^(-(h+1)/H): the factor 8 lost", "alibi_slopes",
         _slopes(_powers(lambda h, n: -(h + 1.0) / n))),
    Twin("bias-alibi-slope-base", "1/2^(h+1) whatever the number of heads", "alibi_slopes",
         _slopes(_powers(lambda h, n: -(h + 1.0)))),
    Twin("bias-alibi-non-power-of-two", "2^(-8(h+1)/H) for every H, as if it were a power of two",
         "alibi_slopes", _slopes(fill=lambda ladder, H: ladder(H))),
    Twin("bias-alibi-non-power-of-two", "the first H slopes of the next power of two", "alibi_slopes",
         _slopes(fill=_next_power_cut)),
    Twin("bias-alibi-non-power-of-two", "the extra slopes from the odd places of the 2n ladder (repeats)",
         "alibi_slopes", _slopes(fill=_odd_extras)),
    Twin("bias-alibi-sign", "+m |i - j|: distance rewarded", "alibi_bias", _bias(lambda i, j: np.abs(i - j))),
    Twin("bias-alibi-sign", "m (i - j): earlier keys rewarded", "alibi_bias", _bias(lambda i, j: i - j)),
    Twin("bias-alibi-orientation", "m (j - i): signed, so later keys are rewarded", "alibi_bias",
         _bias(lambda i, j: j - i)),
    Twin("bias-alibi-orientation", "queries placed at positions 0 .. T - 1, not the last T", "alibi_bias",
         _bias(lambda i, j: -np.abs(i - j), query_start=lambda T, S: 0)),
    Twin("bias-alibi-orientation", "m s: the key's position alone, not the distance", "alibi_bias",
         _bias(lambda i, j: np.broadcast_to(j, (i.size, j.size)))),  # (T, S)
    Twin("bias-alibi-per-head", "(T, S, H) reshaped to (H, T, S), not transposed", "alibi_bias", _bias_reshaped),
    Twin("bias-alibi-per-head", "every head given the first head's slope", "alibi_bias", _bias_one_slope),
    Twin("bias-window-off-by-one", "window + 1 keys: p - window <= s <= p", "sliding_window_mask",
         _window(lambda behind, w: (behind >= 0) & (behind <= w))),
    Twin("bias-window-off-by-one", "window - 1 keys: p - window + 1 < s <= p", "sliding_window_mask",
         _window(lambda behind, w: (behind >= 0) & (behind < w - 1))),
    Twin("bias-window-off-by-one", "the query's own key left out", "sliding_window_mask",
         _window(lambda behind, w: (behind > 0) & (behind < w))),
    Twin("bias-window-not-causal", "|p - s| < window: keys after the query let in", "sliding_window_mask",
         _window(lambda behind, w: np.abs(behind) < w)),
    Twin("bias-window-not-causal", "only the far edge: every later key visible", "sliding_window_mask",
         _window(lambda behind, w: behind < w)),
    Twin("bias-after-softmax", "the bias added to the softmax weights", "biased_attention", _after_softmax(False)),
    Twin("bias-after-softmax", "the bias added to the weights, rows rescaled to sum to 1", "biased_attention",
         _after_softmax(True)),
    Twin("bias-after-softmax", "the weights multiplied by exp(bias), rows not rescaled", "biased_attention",
         _after_softmax(False, combine=lambda weights, bias: weights * np.exp(bias))),
    Twin("bias-scaled-with-scores", "(Q K^T + bias) / sqrt(d_k): the bias scaled with the scores",
         "biased_attention", _bias_scaled),
)

# (H,) slopes times (T, S) distances, with no axes added for the heads: NumPy cannot broadcast them (sizes are
# distinct, so H never matches S by chance). No twin raises exactly this, so the message names it.
UNBROADCAST_SLOPES = (ErrorRule("bias-alibi-per-head", message_any=("could not be broadcast",),
                                reached_any=("alibi_bias",)),)
ERROR_RULES = {"alibi_bias": UNBROADCAST_SLOPES, "alibi_attention": UNBROADCAST_SLOPES}

CALL_TEXT = {
    "alibi_slopes": "alibi_slopes(num_heads={H})",
    "alibi_bias": "alibi_bias(num_heads={H}, T={T}, S={S})",
    "sliding_window_mask": "sliding_window_mask(T={T}, S={S}, window={window})",
    "biased_attention": "biased_attention(Q, K, V{keywords})",
    "alibi_attention": "alibi_attention(Q, K, V{keywords})",
}
LEGENDS = {
    "alibi_slopes": "(H,)",
    "alibi_bias": "(H, T, S)",
    "sliding_window_mask": "(T, S)",
    "biased_attention": "(B, H, T, d_k)",
    "alibi_attention": "(B, H, T, d_k)",
}
ARGUMENT_NAMES = {
    "alibi_slopes": ("num_heads",), "alibi_bias": ("num_heads", "T", "S"),
    "sliding_window_mask": ("T", "S", "window"), "biased_attention": ("Q", "K", "V"),
    "alibi_attention": ("Q", "K", "V"),
}


# ---- cases --------------------------------------------------------------------------------
def _case(name: str, prefix: str, function: str, args: tuple, kwargs: dict | None = None) -> Case:
    kwargs = kwargs or {}
    keywords = "".join(f", {key}={value}" if not isinstance(value, np.ndarray) else f", {key}={key}"
                       for key, value in kwargs.items())  # e.g. ", bias=bias, mask=mask" or ", window=3"
    numbers = dict(zip(ARGUMENT_NAMES[function], args)) if function in ("alibi_slopes", "alibi_bias",
                                                                         "sliding_window_mask") else {}
    call_text = CALL_TEXT[function].format(keywords=keywords, H=numbers.get("num_heads"), T=numbers.get("T"),
                                           S=numbers.get("S"), window=numbers.get("window"))
    case = Case(id=f"{prefix}{name}", function=function, args=args, kwargs=kwargs, call_text=call_text,
                legend=LEGENDS[function], argument_names=ARGUMENT_NAMES[function],
                error_rules=ERROR_RULES.get(function, ()))
    return with_expectations(case, ASSIGNMENT, TWINS)


def _large_logit_queries(rng: np.random.Generator, keys: np.ndarray, bias: np.ndarray, T: int) -> np.ndarray:
    """Queries whose biased score with one visible key (at or before them) is near LARGE_SCORE and at least
    CLEAR_GAP above every other visible key's: large logits with one clear winner per row, so no near tie makes
    float32 rounding count."""
    B, H, S, d_k = keys.shape
    queries = np.empty((B, H, T, d_k))
    lengths = np.sum(keys * keys, axis=-1)  # (B, H, S)
    for b, h, t in np.ndindex(B, H, T):
        visible = np.arange(S - T + t + 1)  # causal: keys 0 .. the query's position
        by_length = visible[np.argsort(-lengths[b, h, visible])]  # the longest visible key wins most easily
        for attempt in range(24):
            chosen = int(rng.choice(visible)) if attempt < 23 else int(by_length[0])
            query = keys[b, h, chosen] * (LARGE_SCORE * np.sqrt(d_k) / lengths[b, h, chosen])  # score LARGE_SCORE
            logits = keys[b, h, visible] @ query / np.sqrt(d_k) + bias[h, t, visible]  # (visible,)
            ranked = np.sort(logits)[::-1]
            if ranked.size == 1 or ranked[0] - ranked[1] >= CLEAR_GAP and logits.argmax() == chosen:
                break
        queries[b, h, t] = query
    return queries


def _random_mask(rng: np.random.Generator, T: int, S: int) -> np.ndarray:
    """A (T, S) boolean mask with a few keys of each row blocked, never all of them."""
    mask = rng.random((T, S)) < 0.7
    mask[np.arange(T), rng.integers(0, S, T)] = True  # every row keeps a key
    return mask


def build_cases(rng: np.random.Generator, sizes: Sizes, prefix: str) -> dict[str, Case]:
    """Every case of the attention-biases exercise for these sizes, keyed by name."""
    B, H, T, S, d_k = sizes.B, sizes.H, sizes.T, sizes.S, sizes.d_k
    power_of_two = 2 ** int(rng.integers(2, 6))  # 4 .. 32 heads
    other_heads = int(rng.choice([5, 6, 7, 10, 12, 20, 24]))  # not powers of two
    window = PUBLIC_WINDOW if not prefix else int(rng.integers(2, S - 1))  # 2 .. S - 2: rows near the start differ
    Q, K, V = (floats(rng, B, H, S, d_k) for _ in range(3))
    random_bias = floats(rng, H, T, S, scale=2.0)  # (H, T, S): a learned bias, one table per head
    batch_bias = floats(rng, B, 1, T, S)  # (B, 1, T, S): one table per sequence, shared by the heads
    alibi = -np.abs(np.arange(S - T, S)[:, None] - np.arange(S)[None, :]) * (
        2.0 ** (-8.0 * np.arange(1, H + 1) / H))[:, None, None]  # (H, T, S): a linear bias of the ALiBi kind (the plain formula: any bias serves this case)
    causal = np.arange(S)[None, :] <= np.arange(S - T, S)[:, None]  # (T, S)
    specs = [
        ("slopes/power-of-two", "alibi_slopes", (power_of_two,), None),
        ("slopes/eight", "alibi_slopes", (8,), None),
        ("slopes/other", "alibi_slopes", (other_heads,), None),
        ("slopes/heads", "alibi_slopes", (H,), None),
        ("bias/self", "alibi_bias", (H, S, S), None),
        ("bias/decode", "alibi_bias", (H, T, S), None),
        ("bias/one-step", "alibi_bias", (power_of_two, 1, S), None),
        ("window/self", "sliding_window_mask", (S, S, window), None),
        ("window/decode", "sliding_window_mask", (T, S, window), None),
        ("window/one", "sliding_window_mask", (T, S, 1), None),
        ("window/wide", "sliding_window_mask", (T, S, S + 2), None),
        ("attention/plain", "biased_attention", (Q[:, :, -T:], K, V), None),
        ("attention/head-bias", "biased_attention", (Q[:, :, -T:], K, V), {"bias": random_bias}),
        ("attention/batch-bias", "biased_attention", (Q[:, :, -T:], K, V), {"bias": batch_bias}),
        ("attention/bias-and-mask", "biased_attention", (Q[:, :, -T:], K, V),
         {"bias": random_bias, "mask": _random_mask(rng, T, S)}),
        ("attention/large-logits", "biased_attention", (_large_logit_queries(rng, K, alibi, T), K, V),
         {"bias": alibi, "mask": causal}),
        ("alibi/prefill", "alibi_attention", (Q, K, V), None),
        ("alibi/decode", "alibi_attention", (Q[:, :, -T:], K, V), None),
        ("alibi/window", "alibi_attention", (Q[:, :, -T:], K, V), {"window": window}),
    ]
    return {name: _case(name, prefix, function, args, kwargs) for name, function, args, kwargs in specs}


CASES = CaseSets(build_cases, PUBLIC_SEED, public_sizes=PUBLIC_SIZES, draw=draw_sizes)
public_cases, hidden_cases = CASES.public, CASES.hidden
