# expect: bias-window-off-by-one
"""Cuts the window with two triangles, one diagonal too far."""

import numpy as np


def alibi_slopes(num_heads):
    def ladder(n):
        start = 2 ** (-8 / n)
        return np.array([start ** (i + 1) for i in range(n)])

    n = 2 ** int(np.log2(num_heads))
    slopes = ladder(n)
    if n < num_heads:
        slopes = np.concatenate([slopes, ladder(2 * n)[::2][: num_heads - n]])
    return slopes


def alibi_bias(num_heads, T, S):
    i = np.arange(S - T, S)[:, None]
    j = np.arange(S)[None, :]
    return -alibi_slopes(num_heads)[:, None, None] * np.abs(i - j)


def sliding_window_mask(T, S, window):
    ones = np.ones((T, S), dtype=bool)
    return np.tril(ones, k=S - T) & ~np.tril(ones, k=S - T - window + 1)


def biased_attention(Q, K, V, bias=None, mask=None):
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V


def alibi_attention(Q, K, V, window=None):
    H, T, S = Q.shape[1], Q.shape[2], K.shape[2]
    mask = sliding_window_mask(T, S, S if window is None else window)
    return biased_attention(Q, K, V, alibi_bias(H, T, S), mask)
