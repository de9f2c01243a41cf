# expect: correct
"""A correct solution in another style: float32, the bias applied as a factor exp(bias) before normalising."""

import numpy as np


def alibi_slopes(num_heads):
    def ladder(n):
        return np.logspace(-8.0 / n, -8.0, num=n, base=2.0)

    n = 1 << (num_heads.bit_length() - 1)
    return np.concatenate([ladder(n), ladder(2 * n)[::2][: num_heads - n]])


def alibi_bias(num_heads, T, S):
    rows = np.arange(S - T, S)
    distance = np.abs(rows[:, None] - np.arange(S)).astype(np.float32)  # (T, S)
    table = distance[..., None] * -alibi_slopes(num_heads).astype(np.float32)  # (T, S, H)
    return np.moveaxis(table, -1, 0)  # (H, T, S)


def sliding_window_mask(T, S, window):
    lag = np.arange(S - T, S)[:, None] - np.arange(S)
    return (0 <= lag) & (lag <= window - 1)


def biased_attention(Q, K, V, bias=None, mask=None):
    q, k, v = (x.astype(np.float32) for x in (Q, K, V))
    scores = np.einsum("bhtd,bhsd->bhts", q, k) / np.float32(np.sqrt(q.shape[-1]))
    b = np.zeros(1, np.float32) if bias is None else np.asarray(bias, np.float32)
    total = scores + b
    if mask is not None:
        total = np.where(mask, total, -np.inf)
    shift = total.max(axis=-1, keepdims=True)
    # exp(score) * exp(bias), shifted by the row's largest visible logit; a hidden key may lie above it
    factor = np.exp(np.minimum(scores - shift + b, 0.0))
    if mask is not None:
        factor = factor * mask
    return np.einsum("bhts,bhsd->bhtd", factor / factor.sum(axis=-1, keepdims=True), v)


def alibi_attention(Q, K, V, window=None):
    H, T, S = Q.shape[1], Q.shape[2], K.shape[2]
    mask = sliding_window_mask(T, S, S if window is None else window)
    return biased_attention(Q, K, V, alibi_bias(H, T, S), mask)
