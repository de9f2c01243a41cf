# expect: bias-alibi-non-power-of-two
"""Fills the extra heads from the wrong places of the doubled ladder."""

import numpy as np


def alibi_slopes(num_heads):
    def ladder(n):
        return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)

    n = 2 ** int(np.floor(np.log2(num_heads)))
    if n == num_heads:
        return ladder(n)
    return np.concatenate([ladder(n), ladder(2 * n)[1::2][: num_heads - n]])


def alibi_bias(num_heads, T, S):
    i = np.arange(S - T, S)[:, None]
    j = np.arange(S)[None, :]
    return -alibi_slopes(num_heads)[:, None, None] * np.abs(i - j)


def sliding_window_mask(T, S, window):
    i = np.arange(S - T, S)[:, None]
    j = np.arange(S)[None, :]
    return (j <= i) & (j > i - window)


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
